"""The JSONL protocol an implementation speaks (DESIGN §3), as the reference speaks it.

One request per line in, one response per line out, in order, flushed; a bad record gets a diagnostic
and the stream goes on. ``serve`` never raises for anything a client sends.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, BinaryIO

from reference import jsonio

Handler = Callable[[dict[str, Any]], dict[str, Any]]
ManyHandler = Callable[[Sequence[Any]], list[dict[str, Any]]]

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


def _parse(line: bytes) -> tuple[Any, dict[str, Any] | None]:
    """The request on ``line``, or the diagnostic that answers it instead."""
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


def respond(line: bytes, handler: Handler) -> dict[str, Any]:
    """The response to one raw request line; never raises."""
    request, answer = _parse(line)
    if answer is not None:
        return answer
    try:
        return handler(request)
    except Exception as err:  # a bug in the handler must still answer this line
        return {"diagnostic": f"internal error while answering: {type(err).__name__}: {err}"}


def respond_many(lines: Sequence[bytes], many: ManyHandler) -> list[dict[str, Any]]:
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


def _lines(src: BinaryIO) -> Iterable[bytes]:
    for line in src:
        yield _strip(line)


MAX_BATCH = 1024


def _line_batches(src: BinaryIO) -> Iterable[list[bytes]]:
    """Lists of complete lines: whatever is already readable, at least one line, at most MAX_BATCH."""
    try:
        fd = src.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    if fd is None:  # an in-memory stream: everything is already there
        lines = [_strip(line) for line in src]
        for start in range(0, len(lines), MAX_BATCH):
            yield lines[start : start + MAX_BATCH]
        return
    pending = b""
    ready: list[bytes] = []
    eof = False
    while True:
        # block only while nothing is ready; otherwise take what is already readable
        while not eof and len(ready) < MAX_BATCH and (not ready or select.select([fd], [], [], 0)[0]):
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                eof = True
                if pending:
                    ready.append(_strip(pending))
                    pending = b""
                break
            *complete, pending = (pending + chunk).split(b"\n")
            ready.extend(_strip(line) for line in complete)
        if not ready:
            return
        yield ready[:MAX_BATCH]
        ready = ready[MAX_BATCH:]
