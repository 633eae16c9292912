"""The JSONL protocol an implementation speaks (DESIGN §3), as the reference speaks it.

One request per line in, one response per line out, in order, flushed; a bad record gets a diagnostic
and the stream goes on. ``serve`` never raises for anything a client sends.

A request line holds at most :data:`MAX_LINE_BYTES` bytes (8 MiB, not counting its LF). A longer line
is answered with one diagnostic that gives its length and the limit: past the limit it is read to its
LF and discarded as it arrives (never held whole, never truncated into a request), and the stream goes
on with the next line. The same limit applies to a line handed whole to :func:`respond` and
:func:`respond_many`. Reading takes time linear in the bytes read, however long a line is.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from reference import jsonio

Handler = Callable[[dict[str, Any]], dict[str, Any]]
ManyHandler = Callable[[Sequence[Any]], list[dict[str, Any]]]

#: the longest request line answered as a request, in bytes (its LF not counted). Planning or compiling
#: holds several times a line in memory (the line, its text, the parsed request, the answer), so a cap
#: keeps one client line from taking the machine's memory; no kit case comes near it.
MAX_LINE_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class LongLine:
    """A request line over :data:`MAX_LINE_BYTES`, read and discarded: only its length is kept."""

    length: int  # bytes, its LF not counted


Line = bytes | LongLine

PLAN_KEYS = frozenset({"instruction", "tools"})
COMPILE_KEYS = frozenset({"plan", "tools"})


def request_kind(request: Any) -> str | None:
    """``"plan"`` or ``"compile"`` for a well-formed request object, else ``None``."""
    if not isinstance(request, dict):
        return None
    keys = set(request)
    if keys == PLAN_KEYS and isinstance(request["instruction"], str):
        return "plan"
    if keys == COMPILE_KEYS:
        return "compile"
    return None


def bad_record(request: Any) -> str:
    """Why ``request`` is not a plan or compile request, leading with what was sent."""
    if not isinstance(request, dict):
        return f"a request must be a JSON object, not {type_name(request)}"
    keys = sorted(request)
    if "instruction" in request and not isinstance(request["instruction"], str):
        return f"instruction {type_name(request['instruction'])} is not a string"
    return (
        f"a request with keys {keys!r} is neither a plan request (instruction, tools)"
        " nor a compile request (plan, tools)"
    )


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def long_line(length: int) -> dict[str, Any]:
    """The answer to a request line of ``length`` bytes, over :data:`MAX_LINE_BYTES`."""
    return {
        "diagnostic": f"a request line of {length} bytes is over the limit of {MAX_LINE_BYTES} bytes"
        " (it is discarded unparsed, never truncated)"
    }


def _parse(line: Line) -> tuple[Any, dict[str, Any] | None]:
    """The request on ``line``, or the diagnostic that answers it instead."""
    if isinstance(line, LongLine):
        return None, long_line(line.length)
    if len(line) > MAX_LINE_BYTES:  # a line handed over whole (in-process) is held to the same limit
        return None, long_line(len(line))
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as err:
        return None, {"diagnostic": f"byte {err.start} of the request is not UTF-8"}
    if not text.strip():
        return None, {"diagnostic": "an empty line is not a JSON request"}
    try:
        return jsonio.loads(text), None
    except (ValueError, RecursionError) as err:
        return None, {"diagnostic": f"the request is not valid JSON: {err}"}


def respond(line: Line, handler: Handler) -> dict[str, Any]:
    """The response to one raw request line; never raises."""
    request, answer = _parse(line)
    if answer is not None:
        return answer
    try:
        return handler(request)
    except Exception as err:  # a bug in the handler must still answer this line
        return {"diagnostic": f"internal error while answering: {type(err).__name__}: {err}"}


def respond_many(lines: Sequence[Line], many: ManyHandler) -> list[dict[str, Any]]:
    """The responses to raw request lines, in order, with the parsed requests handled as one batch;
    never raises (if the batch fails, each request is answered on its own)."""
    parsed = [_parse(line) for line in lines]
    todo = [k for k, (_, answer) in enumerate(parsed) if answer is None]
    out: list[dict[str, Any] | None] = [answer for _, answer in parsed]
    try:
        answers = many([parsed[k][0] for k in todo])
        if len(answers) != len(todo):
            raise RuntimeError(f"{len(answers)} answers to {len(todo)} requests")
    except Exception:
        answers = [respond(lines[k], lambda r: many([r])[0]) for k in todo]
    for k, answer in zip(todo, answers):
        out[k] = answer
    return [o if o is not None else {"diagnostic": "internal: no answer"} for o in out]


def serve(
    handler: Handler, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None, *, many: ManyHandler | None = None
) -> int:
    """Answer every line of ``stdin`` on ``stdout``, one line each, in order, until EOF; returns 0.

    With ``many``, the lines already waiting are answered as one batch; it never waits for more input
    than one line before answering, and flushes after every batch."""
    src = stdin if stdin is not None else sys.stdin.buffer
    dst = stdout if stdout is not None else sys.stdout.buffer
    if many is None:
        for line in _lines(src):
            dst.write(jsonio.dumps(respond(line, handler)).encode("ascii") + b"\n")
            dst.flush()
        return 0
    for lines in _line_batches(src):
        dst.write(b"".join(jsonio.dumps(a).encode("ascii") + b"\n" for a in respond_many(lines, many)))
        dst.flush()
    return 0


def _strip(line: bytes) -> bytes:
    if line.endswith(b"\n"):
        line = line[:-1]
    if line.endswith(b"\r"):
        line = line[:-1]
    return line


#: bytes asked for per read
CHUNK = 1 << 16


class _Splitter:
    """Cuts a byte stream into lines, fed chunk by chunk, in time linear in the bytes fed: only a new
    chunk is searched for LF, and the unfinished line grows in one ``bytearray`` (not by concatenating
    the line so far to each chunk, which copies it again and again). Past :data:`MAX_LINE_BYTES` the
    unfinished line is dropped and only its length counted, up to its LF: a :class:`LongLine`."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = MAX_LINE_BYTES if limit is None else limit
        self._part = bytearray()  # the unfinished line, while it is within the limit
        self._over = -1  # the length so far of an unfinished line over the limit; -1: none

    def feed(self, chunk: bytes) -> list[Line]:
        """The lines that ``chunk`` completes."""
        out: list[Line] = []
        start = 0
        end = chunk.find(b"\n")
        while end >= 0:
            if self._over < 0 and not self._part:  # the common case: a whole line inside the chunk
                n = end - start
                out.append(_strip(chunk[start:end]) if n <= self.limit else LongLine(n))
            else:
                self._take(chunk, start, end)
                out.append(self._finish())
            start = end + 1
            end = chunk.find(b"\n", start)
        self._take(chunk, start, len(chunk))
        return out

    def close(self) -> list[Line]:
        """The last line, when the stream ends without an LF after it."""
        return [self._finish()] if self._part or self._over >= 0 else []

    def _take(self, chunk: bytes, start: int, end: int) -> None:
        n = end - start
        if self._over >= 0:
            self._over += n
        elif len(self._part) + n > self.limit:
            self._over = len(self._part) + n
            self._part = bytearray()  # a new, empty buffer: the old one's memory goes back now
        elif n:
            self._part += memoryview(chunk)[start:end]

    def _finish(self) -> Line:
        if self._over >= 0:
            line: Line = LongLine(self._over)
            self._over = -1
            return line
        text = _strip(bytes(self._part))
        self._part = bytearray()
        return text


def _lines(src: BinaryIO) -> Iterator[Line]:
    """Each line of ``src`` as soon as it is complete (``readline`` returns at an LF and never waits
    for more)."""
    splitter = _Splitter()
    while True:
        chunk = src.readline(CHUNK)
        if not chunk:
            yield from splitter.close()
            return
        yield from splitter.feed(chunk)


MAX_BATCH = 1024
#: a batch stops taking lines once it holds this many bytes (so a batch is never many long lines)
MAX_BATCH_BYTES = MAX_LINE_BYTES


def _size(line: Line) -> int:
    return len(line) if isinstance(line, bytes) else 0


def _line_batches(src: BinaryIO) -> Iterable[list[Line]]:
    """Lists of complete lines: whatever is already readable, at least one line, at most MAX_BATCH lines
    and, past the first line, at most MAX_BATCH_BYTES bytes."""
    try:
        fd = src.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    pull: Callable[[], tuple[list[Line], bool]]  # the next lines, and whether the stream has ended
    readable: Callable[[], bool]
    if fd is None:  # an in-memory stream: everything is already there
        lines = _lines(src)

        def pull() -> tuple[list[Line], bool]:
            line = next(lines, None)
            return ([], True) if line is None else ([line], False)

        def readable() -> bool:
            return True

    else:
        splitter = _Splitter()

        def pull() -> tuple[list[Line], bool]:
            chunk = os.read(fd, CHUNK)
            return (splitter.feed(chunk), False) if chunk else (splitter.close(), True)

        def readable() -> bool:
            return bool(select.select([fd], [], [], 0)[0])

    ready: list[Line] = []
    size = 0  # the bytes of the lines in ``ready``
    eof = False
    while True:
        # block only while nothing is ready; otherwise take what is already readable
        while not eof and len(ready) < MAX_BATCH and size < MAX_BATCH_BYTES and (not ready or readable()):
            new, eof = pull()
            ready.extend(new)
            size += sum(_size(line) for line in new)
        if not ready:
            return
        n, taken = 1, _size(ready[0])
        while n < min(len(ready), MAX_BATCH) and taken + _size(ready[n]) <= MAX_BATCH_BYTES:
            taken += _size(ready[n])
            n += 1
        yield ready[:n]
        del ready[:n]
        size -= taken
