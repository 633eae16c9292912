"""The JSONL protocol an implementation speaks (DESIGN §3), as the reference speaks it.

One request per line in, one response per line out, in order, flushed; a bad record gets a diagnostic
and the stream goes on. ``serve`` never raises for anything a client sends.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

from reference import jsonio

Handler = Callable[[dict[str, Any]], dict[str, Any]]

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


def respond(line: bytes, handler: Handler) -> dict[str, Any]:
    """The response to one raw request line; never raises."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as err:
        return {"diagnostic": f"byte {err.start} of the request is not UTF-8"}
    if not text.strip():
        return {"diagnostic": "an empty line is not a JSON request"}
    try:
        request = jsonio.loads(text)
    except (ValueError, RecursionError) as err:
        return {"diagnostic": f"the request is not valid JSON: {err}"}
    try:
        return handler(request)
    except Exception as err:  # a bug in the handler must still answer this line
        return {"diagnostic": f"internal error while answering: {type(err).__name__}: {err}"}


def serve(handler: Handler, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """Answer every line of ``stdin`` on ``stdout``, one flushed line each, until EOF; returns 0."""
    src = stdin if stdin is not None else sys.stdin.buffer
    dst = stdout if stdout is not None else sys.stdout.buffer
    for line in _lines(src):
        dst.write(jsonio.dumps(respond(line, handler)).encode("ascii") + b"\n")
        dst.flush()
    return 0


def _lines(src: BinaryIO) -> Iterable[bytes]:
    for line in src:
        if line.endswith(b"\n"):
            line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
        yield line
