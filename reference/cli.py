"""The reference implementation's own commands: ``codemode plan [--js]`` and ``codemode compile``.

A thin layer: it reads JSONL on stdin and answers through ``reference.protocol``. Both commands answer
both request kinds (the reference is a whole pipeline); ``plan --js`` adds the compiled ``js`` to every
plan. Plan requests that arrive together are planned as one batch, but nothing waits for later input:
each read takes the lines already there, answers them in order and flushes.

PyTorch is needed only to plan: this module imports it (through ``reference.planner``) only when a plan
request is answered, so ``compile_line``, ``compile_main`` and ``compile_handler`` work without it.
Without it, ``codemode plan`` exits with status 2 and says what to install, and the in-process
``plan_line`` and ``pipeline_line`` answer each plan request with a diagnostic that says so.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import cache
from typing import Any

from reference import jsonio
from reference.compiler import compile_request
from reference.protocol import bad_record, request_kind, respond, respond_many, serve


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


def collect_main() -> int:
    """``codemode collect``: the reference collector over the collector role's JSON Lines protocol."""
    from reference.transports import collect_request

    return serve(collect_request)


def compile_main() -> int:
    return serve(compile_handler)


#: why the reference planner cannot plan where PyTorch is not installed (torch is the ``planner`` extra)
NEEDS_TORCH = (
    "the reference planner needs PyTorch, which is not installed:"
    " pip install 'codemode-conformance-kit[planner]' (torch 2.13 or 2.14; the CPU build is enough)"
)


@cache
def torch_problem() -> str | None:
    """Why the reference planner cannot run in this process (PyTorch missing or broken), or ``None``."""
    try:
        import torch  # noqa: F401
    except (ImportError, OSError) as err:  # OSError: a torch whose shared libraries do not load
        if isinstance(err, ImportError) and err.name == "torch":
            return NEEDS_TORCH
        return f"the reference planner needs PyTorch, which is installed but does not import: {err}"
    return None


@cache
def planner(js: bool, workers: int = 1, threads: int | None = 1):  # type: ignore[no-untyped-def]
    from reference.planner import Planner

    return Planner(js=js, workers=workers, threads=threads)


def plan_many(
    requests: Sequence[Any], *, js: bool = False, workers: int = 1, threads: int | None = 1
) -> list[dict[str, Any]]:
    """Answers to parsed requests, in order: plan requests go to the planner as one batch (each is
    answered with a diagnostic that says so where PyTorch is missing)."""
    out: list[dict[str, Any] | None] = [None] * len(requests)
    batch: list[int] = []
    for k, request in enumerate(requests):
        kind = request_kind(request)
        if kind == "plan":
            batch.append(k)
        elif kind == "compile":
            out[k] = compile_request(request["plan"], request["tools"]).to_json()
        else:
            out[k] = {"diagnostic": bad_record(request)}
    if batch:
        problem = torch_problem()
        if problem is not None:
            answers = [{"diagnostic": problem}] * len(batch)
        else:
            pairs = [(requests[k]["instruction"], requests[k]["tools"]) for k in batch]
            answers = planner(js, workers, threads).respond_many(pairs)
        for k, answer in zip(batch, answers):
            out[k] = answer
    return [o if o is not None else {"diagnostic": "internal: no answer"} for o in out]


def plan_line(line: str) -> str:
    """The in-process planner: one request line in, one response line out
    (``codemode certify --role planner --python reference.cli:plan_line``)."""
    return jsonio.dumps(respond_many([line.encode("utf-8", "surrogatepass")], plan_many)[0])


def pipeline_line(line: str) -> str:
    """The in-process pipeline (plans come with ``js``): ``--role pipeline --python reference.cli:pipeline_line``."""
    return jsonio.dumps(respond_many([line.encode("utf-8", "surrogatepass")], lambda r: plan_many(r, js=True))[0])


def _lines(respond: Any) -> Any:
    """The batch form of a ``*_line`` function (its ``many``: see ``conformance.adapters.PythonAdapter``):
    request lines in, response lines out, the plan requests among them planned as one batch."""
    return lambda lines: [jsonio.dumps(a) for a in respond_many([x.encode("utf-8", "surrogatepass") for x in lines], respond)]


compile_line.many = _lines(lambda requests: [compile_handler(r) for r in requests])  # type: ignore[attr-defined]
plan_line.many = _lines(plan_many)  # type: ignore[attr-defined]
pipeline_line.many = _lines(lambda r: plan_many(r, js=True))  # type: ignore[attr-defined]


def plan_main(*, js: bool = False, workers: int = 1, threads: int | None = 1) -> int:
    """``codemode plan``; with ``workers`` above 1, large batches of waiting lines are shared out to that
    many worker processes, and the network runs on ``threads`` intra-op threads (see
    :class:`reference.planner.Planner`). Exits with status 2, saying what to install, where PyTorch is
    missing: before reading anything, so no request is left unanswered."""
    problem = torch_problem()
    if problem is not None:
        print(f"codemode plan: {problem}", file=sys.stderr)
        return 2
    try:
        return serve(
            lambda request: plan_many([request], js=js, workers=workers, threads=threads)[0],
            many=lambda requests: plan_many(requests, js=js, workers=workers, threads=threads),
        )
    finally:
        if workers > 1 and planner.cache_info().currsize:
            planner(js, workers, threads).close()
