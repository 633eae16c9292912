#!/usr/bin/env python3
"""chunky.py -- run another implementation and forward its stdout in odd chunks.

Usage: python chunky.py CMD [ARG...]

Written from SPEC.md alone, as an outside test of the kit's stream reader.
Stdin is forwarded to the child unchanged, as it arrives.  The child's stdout
is forwarded to the real stdout in random pieces, each written with its own
os.write call, with small sleeps (0-3 ms) between pieces: lines are split at
random byte offsets (multi-byte UTF-8 sequences included), and when two
answers are already available they are sometimes written in one os.write.
Nothing is ever withheld while waiting: the wrapper only blocks on the
child's stdout when it has nothing left to forward, so every complete answer
is fully written as soon as the child has produced it (plus the bounded
sleeps).  On EOF the wrapper closes the child's stdin, forwards the rest,
and exits with the child's status (re-raising the child's signal, if any).

The pseudo-random choices are seeded ($CHUNKY_SEED, default 7).  With
$CHUNKY_LOG set to a file name, every write is logged there (size, LF count).
"""

import os
import random
import select
import signal
import subprocess
import sys
import threading
import time


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def pump_stdin(child_stdin):
    fd = child_stdin.fileno()
    try:
        while True:
            data = os.read(0, 65536)
            if not data:
                break
            write_all(fd, data)
    except OSError:
        pass  # the child stopped reading; its exit status tells the rest
    finally:
        try:
            child_stdin.close()
        except OSError:
            pass


def available(fd):
    """Whatever the child has already written, without waiting; (data, eof)."""
    got = b""
    while select.select([fd], [], [], 0)[0]:
        data = os.read(fd, 65536)
        if not data:
            return got, True
        got += data
    return got, False


def next_piece(rng, buf):
    """How many bytes of buf the next os.write takes."""
    first_nl = buf.find(b"\n")
    r = rng.random()
    if r < 0.25 and first_nl >= 0:
        second_nl = buf.find(b"\n", first_nl + 1)
        if second_nl >= 0:
            return second_nl + 1  # two answers (or the rest of one and the next) in one write
    if r < 0.40 and first_nl >= 0:
        return first_nl + 1  # the rest of the current line
    if r < 0.55 and 0 <= first_nl < len(buf) - 1:
        # the rest of this line and the start of the next, in one write
        return rng.randint(first_nl + 2, len(buf))
    line_len = first_nl + 1 if first_nl >= 0 else len(buf)
    most = max(16, line_len // 6)
    return min(len(buf), rng.randint(1, most))


def main(argv):
    if not argv:
        sys.stderr.write("usage: python chunky.py CMD [ARG...]\n")
        return 2
    rng = random.Random(int(os.environ.get("CHUNKY_SEED", "7")))
    log = open(os.environ["CHUNKY_LOG"], "w", buffering=1) if os.environ.get("CHUNKY_LOG") else None
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    threading.Thread(target=pump_stdin, args=(child.stdin,), daemon=True).start()
    out = child.stdout.fileno()
    buf = b""
    eof = False
    stdout_open = True
    while True:
        if not buf:
            if eof:
                break
            data = os.read(out, 65536)  # blocks only when nothing is left to forward
            if not data:
                break
            buf = data
        more, ended = available(out)
        buf += more
        eof = eof or ended
        while buf:
            n = next_piece(rng, buf)
            piece, buf = buf[:n], buf[n:]
            if log:
                ends = piece.endswith(b"\n")
                log.write(f"write {len(piece)} bytes, {piece.count(10)} LF, ends with LF: {ends}\n")
            if stdout_open:
                try:
                    write_all(1, piece)
                except BrokenPipeError:
                    stdout_open = False
            if buf or rng.random() < 0.5:
                time.sleep(rng.uniform(0.0, 0.003))
            if not eof:
                more, ended = available(out)
                buf += more
                eof = eof or ended
    child.stdout.close()
    status = child.wait()
    if status < 0:
        sig = -status
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL and SIGSTOP keep their default action anyway
        os.kill(os.getpid(), sig)
        return 128 + sig
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
