"""The reference implementation's own commands: ``codemode compile`` (and later ``plan``).

A thin layer: it reads JSONL on stdin and answers through ``reference.protocol``.
"""

from __future__ import annotations

from typing import Any

from reference import jsonio
from reference.compiler import compile_request
from reference.protocol import bad_record, request_kind, respond, serve


def compile_handler(request: Any) -> dict[str, Any]:
    """Answer a compile request; anything else gets a diagnostic."""
    kind = request_kind(request)
    if kind == "compile":
        return compile_request(request["plan"], request["tools"]).to_json()
    if kind == "plan":
        return {"diagnostic": "this is a plan request; `codemode compile` answers compile requests (plan, tools)"}
    return {"diagnostic": bad_record(request)}


def compile_line(line: str) -> str:
    """The in-process form of ``codemode compile``: one request line in, one response line out
    (``codemode certify --python reference.cli:compile_line``)."""
    return jsonio.dumps(respond(line.encode("utf-8", "surrogatepass"), compile_handler))


def compile_main() -> int:
    return serve(compile_handler)
