"""Implementations that misbehave as processes: the kit must report them as errored (or failed under the
stream clauses), never as a pass and never by crashing, hanging or growing itself, and must leave none of
their processes behind. ``python -m tests.faulty.broken HOW``: the reference compiler, misbehaving as HOW
says (``crash``, ``hang``, ``extra-line``, ... see ``HOWS``). The request count starts at 1 and counts the
kit's own closing requests too; the misbehaviour starts after the first ``START`` requests, past the
kit's smoke stage (5 requests), so that it is met while certifying."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from reference import jsonio
from reference.cli import compile_handler
from reference.protocol import respond

START = 8
#: a request no stream probe reaches (each probe starts the implementation afresh and sends fewer)
LATE = 50

#: each way this module misbehaves (n is the request count)
HOWS = {
    "none": "a good compiler",
    "crash": "exits with status 3 at request START + 1",
    "killed": "is killed by SIGKILL at request START + 1 (as by the kernel's out-of-memory killer)",
    "hang": "stops answering at request START + 1 and sleeps",
    "garbage": "every 4th answer after START is not JSON",
    "array": "every 3rd answer after START is a JSON array",
    "extra-line": "answers request START + 1 with two lines",
    "two-lines": "answers every 7th request after START with two lines",
    "dead": "exits with status 1 before answering anything",
    "exit-early": "exits with status 0 after START answers",
    "exit-late": "exits with status 0 after LATE - 1 answers: past every stream probe, while certifying",
    "huge-stderr": "answers correctly, and writes 64 MiB to stderr for every 50 requests",
    "endless": "from request START + 1 on writes bytes without a newline, forever",
    "huge-line": "answers every 10th request after START with a 20 MB line",
    "child": "starts a child that keeps stdout open for an hour, then answers correctly",
    "daemon": "starts a child in a session of its own that keeps stdout open, then answers correctly",
    "env-clean-daemon": "starts a child in a session of its own with an empty environment and no stdio, then answers",
    "close-stdout": "closes its stdout at request START + 1 and keeps running",
    "ignore-eof": "answers correctly but keeps running after stdin closes",
    "late-extra": "answers correctly, then, 0.3 s after answer START + 2, writes one line more",
    "shift": "after START, answers one request twice and leaves the kit's closing request unanswered, so that"
             " every batch has as many lines as requests but they are out of step",
    "swap-crash": "after START, answers requests in pairs with the two answers swapped, and exits with status 3"
                  " at the kit's closing request: every answer it wrote in that exchange is out of step",
}


def _spawn_clean_daemon() -> None:
    """A process that left everything of the implementation's behind: its session, its environment (the
    kit's token with it) and its stdio; only its command line carries the test's mark."""
    mark = os.environ.get("CODEMODE_HOSTILE_MARK", "none")
    code = "import time; time.sleep(300)"
    subprocess.Popen(["env", "-i", sys.executable, "-c", code, f"codemode-orphan-{mark}"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)


def _spawn_child(daemon: bool) -> None:
    code = "import time; time.sleep(3600)"
    if daemon:  # double fork and setsid: a process outside the implementation's process group
        subprocess.Popen([sys.executable, "-c", f"import os, subprocess, sys; os.setsid(); subprocess.Popen([sys.executable, '-c', {code!r}]); sys.exit(0)"],
                         stdout=sys.stdout, stderr=subprocess.DEVNULL)
    else:
        subprocess.Popen([sys.executable, "-c", code], stdout=sys.stdout, stderr=subprocess.DEVNULL)


def main(how: str) -> int:
    if how not in HOWS and not how.startswith("counting="):
        print(f"unknown way to misbehave {how!r}: one of {', '.join(HOWS)}", file=sys.stderr)
        return 2
    if how in ("child", "daemon"):
        _spawn_child(how == "daemon")
    if how == "env-clean-daemon":
        _spawn_clean_daemon()
    out = sys.stdout.buffer
    count = 0
    held = b""  # swap-crash: the answer of the first of a pair, written after the second's
    for raw in sys.stdin.buffer:
        count += 1
        answer = jsonio.dumps(respond(raw.rstrip(b"\n"), compile_handler))
        if how == "dead":
            print("cannot load model", file=sys.stderr)
            return 1
        late = count > START
        if how == "crash" and count == START + 1:
            print("boom: the compiler fell over", file=sys.stderr)
            return 3
        if how == "killed" and count == START + 1:
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "hang" and count == START + 1:
            time.sleep(3600)
        if how == "exit-early" and count == START + 1:
            return 0
        if how == "exit-late" and count == LATE:
            return 0
        if how == "garbage" and late and count % 4 == 0:
            answer = "this is not json"
        if how == "array" and late and count % 3 == 0:
            answer = "[]"
        if (how == "extra-line" and count == START + 1) or (how == "two-lines" and late and count % 7 == 0):
            answer += "\n" + answer
        if how == "huge-stderr" and count % 50 == 1:
            for _ in range(64):
                sys.stderr.write("x" * (1 << 20))
            sys.stderr.flush()
        if how == "endless" and late:
            chunk = b"y" * (1 << 20)
            while True:
                out.write(chunk)
        if how == "huge-line" and late and count % 10 == 0:
            answer = '{"js": "' + "z" * (20 << 20) + '"}'
        if how == "close-stdout" and count == START + 1:
            out.close()
            os.close(1)
            time.sleep(3600)
        if how == "shift" and late:
            if b"codemode_fence" in raw:
                continue  # never answers the kit's closing request...
            if count % 5 == 0:
                answer += "\n" + answer  # ...and answers another one twice
        if how == "swap-crash" and late:
            if b"codemode_fence" in raw:
                print("boom: the compiler fell over at the closing request", file=sys.stderr)
                return 3
            if not held:
                held = answer.encode("ascii") + b"\n"
                continue
            out.write(answer.encode("ascii") + b"\n" + held)
            out.flush()
            held = b""
            continue
        if how.startswith("counting="):  # a good compiler that logs one line per request to a file
            with open(how.removeprefix("counting="), "a", encoding="utf-8") as log:
                log.write("request\n")
        out.write(answer.encode("ascii") + b"\n")
        out.flush()
        if how == "late-extra" and count == START + 2:
            time.sleep(0.3)
            out.write(answer.encode("ascii") + b"\n")
            out.flush()
    if how == "ignore-eof":
        time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
