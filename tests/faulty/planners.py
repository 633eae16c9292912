"""Faulty planners: each breaks one clause the way real planners do, and the kit must flag it there.

Each is an in-process implementation (``line -> line``) built around the reference planner, changing
exactly one behaviour. ``CLAUSE_OF`` maps each to the clause it must be caught under. The stream faults
(lost and crashing records) are subprocess commands in ``STREAM_FAULTS``.
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections.abc import Callable
from typing import Any

from reference import jsonio
from reference.catalog import validate_catalog
from reference.cli import plan_many
from reference.lexer import lex
from reference.protocol import request_kind

Line = Callable[[str], str]


def _reference(request: Any) -> dict[str, Any]:
    return plan_many([request])[0]


def _wrap(change: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]) -> Line:
    """A planner answering ``change(request, reference answer)`` to plan requests."""

    def planner(line: str) -> str:
        try:
            request = jsonio.loads(line)
        except ValueError:
            return jsonio.dumps({"diagnostic": "not JSON"})
        answer = _reference(request)
        if request_kind(request) == "plan":
            answer = change(request, answer)
        return jsonio.dumps(answer)

    return planner


def _first_plan(request: dict[str, Any]) -> dict[str, Any]:
    """What a planner that skipped a check makes of a request: a call of the first tool it can name."""
    tools = request["tools"] if isinstance(request["tools"], list) else []
    name = next((t.get("name") for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)), "tool")
    return {"plan": {"mode": "single", "calls": [{"tool": name, "args": {}}], "output": {"kind": "last"}}}


def lenient(clause: str) -> Line:
    """Skips one catalog or input check: a request broken only there gets a plan instead of a diagnostic."""

    def change(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
        broken = {v.clause for v in validate_catalog(request["tools"])}
        if not broken:
            broken = {v.clause for v in lex(request["instruction"], max_tokens=10**9).violations}
        return _first_plan(request) if broken == {clause} else answer

    return _wrap(change)


def _truncating(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """Plans the first 128 tokens of a long instruction instead of diagnosing it."""
    lexed = lex(request["instruction"], max_tokens=10**9)
    if len(lexed.tokens) <= 128 or not lexed.tokens:
        return answer
    cut = request["instruction"][: lexed.tokens[127].end]
    return _reference({"instruction": cut, "tools": request["tools"]})


def _limit(tokens: int) -> Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]:
    """A token limit below 128: diagnoses every instruction longer than ``tokens``."""

    def change(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
        if len(lex(request["instruction"], max_tokens=10**9).tokens) > tokens:
            return {"diagnostic": f"the instruction is longer than {tokens} tokens"}
        return answer

    return change


def _on_plan(change: Callable[[dict[str, Any], dict[str, Any]], None]) -> Line:
    def wrapped(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
        if "plan" in answer:
            answer = jsonio.loads(jsonio.dumps(answer))
            change(request, answer["plan"])
        return answer

    return _wrap(wrapped)


def _extra_key(request: dict[str, Any], plan: dict[str, Any]) -> None:
    plan["explanation"] = "planned by a faulty planner"


def _wrong_mode(request: dict[str, Any], plan: dict[str, Any]) -> None:
    if len(plan["calls"]) > 1:
        plan["mode"] = "single"


def _renamed_tool(request: dict[str, Any], plan: dict[str, Any]) -> None:
    plan["calls"][-1]["tool"] = plan["calls"][-1]["tool"] + "_v2"


def _undeclared_arg(request: dict[str, Any], plan: dict[str, Any]) -> None:
    plan["calls"][0]["args"]["verbose_mode_flag"] = True


def _limit_everywhere(request: dict[str, Any], plan: dict[str, Any]) -> None:
    if plan["mode"] != "single":
        plan["output"]["limit"] = 10


def _trimmed_values(request: dict[str, Any], plan: dict[str, Any]) -> None:
    for call in plan["calls"]:
        call["args"] = {k: v.strip().lower() if isinstance(v, str) else v for k, v in call["args"].items()}


def _empty_diagnostic(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    return {"diagnostic": ""} if "diagnostic" in answer else answer


def _quoted_words_steer(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """Reads the quoted text too: how much of it there is (its parity) flips the schedule or output."""
    if "plan" in answer:
        quoted = "".join(str(t.value) for t in lex(request["instruction"], max_tokens=10**9).tokens if t.kind == "string")
        if len(quoted) % 2:
            answer = jsonio.loads(jsonio.dumps(answer))
            plan = answer["plan"]
            if plan["mode"] != "single":
                plan["mode"] = "parallel" if plan["mode"] == "sequential" else "sequential"
            else:
                plan["output"]["kind"] = "all" if plan["output"]["kind"] == "last" else "last"
    return answer


def _catalog_order(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """Reads the catalog in order: it plans only when the first tool's name sorts before the last's, so
    half of all reorderings of a catalog change its answer."""
    tools = request["tools"]
    if "plan" in answer and len(tools) > 1 and tools[0]["name"] > tools[-1]["name"]:
        return {"diagnostic": "refused"}
    return answer


_chance = random.Random()  # seeded from the system: a different run each time, as an LLM at temperature


def _flaky(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """Answers the same request differently from one time to the next."""
    if "plan" in answer and _chance.random() < 1 / 3:  # not a counter: its period could match a batch's
        return {"diagnostic": "not today"}
    return answer


def _sloppy_output(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """Gets the output kind wrong on about one request in eight (a plan that is valid but wrong)."""
    digest = hashlib.sha256(request["instruction"].encode("utf-8", "surrogatepass")).digest()[0]
    if "plan" in answer and digest % 8 == 0:
        answer = jsonio.loads(jsonio.dumps(answer))
        out = answer["plan"]["output"]
        out["kind"] = "all" if out["kind"] == "last" else "last"
    return answer


def _weak_shaping(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """Misreads about three in twenty requests to shape a call's result (its limit or fields dropped) and
    nothing else: a planner whose overall accuracy can meet a threshold its shaping family misses."""
    digest = hashlib.sha256(request["instruction"].encode("utf-8", "surrogatepass")).digest()[0]
    if "plan" in answer and answer["plan"]["mode"] == "single" and digest % 20 < 3:
        answer = jsonio.loads(jsonio.dumps(answer))
        out = answer["plan"]["output"]
        out.pop("limit" if "limit" in out else "fields", None)
    return answer


def _never_refuses(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """Plans what it should refuse: an unsupported request gets a plan of its first tool."""
    if "diagnostic" in answer and not validate_catalog(request["tools"]) and lex(request["instruction"]).ok:
        return _first_plan(request)
    return answer


def _refuses_everything(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    return {"diagnostic": "I cannot help with that"}


FAULTY: dict[str, Line] = {
    "nine-tools": lenient("IN-COUNT"),
    "extra-entry-keys": lenient("IN-KEYS"),
    "reserved-word-names": lenient("IN-NAME"),
    "duplicate-names": lenient("IN-UNIQUE"),
    "nested-arguments": lenient("IN-ARGS"),
    "undeclared-required": lenient("IN-REQUIRED"),
    "bad-returns": lenient("IN-RETURNS"),
    "truncates-long-inputs": _wrap(_truncating),
    "limit-127": _wrap(_limit(127)),  # off by one: IN-LENGTH (its 127-token twins get plans)
    "limit-100": _wrap(_limit(100)),  # far too low: the twins are refused too, so PL-REJECT's false diagnoses
    "bad-escapes": lenient("IN-STRING"),
    "unsafe-integers": lenient("IN-NUMBER"),
    "empty-diagnostic": _wrap(_empty_diagnostic),
    "extra-plan-key": _on_plan(_extra_key),
    "wrong-mode": _on_plan(_wrong_mode),
    "renamed-tool": _on_plan(_renamed_tool),
    "undeclared-argument": _on_plan(_undeclared_arg),
    "limit-on-many-calls": _on_plan(_limit_everywhere),
    "trimmed-values": _on_plan(_trimmed_values),
    "quoted-words-steer": _wrap(_quoted_words_steer),
    "catalog-order": _wrap(_catalog_order),
    "non-deterministic": _wrap(_flaky),
    "sloppy-output": _wrap(_sloppy_output),
    "weak-shaping": _wrap(_weak_shaping),
    "never-refuses": _wrap(_never_refuses),
    "refuses-everything": _wrap(_refuses_everything),
}

CLAUSE_OF = {
    "nine-tools": "IN-COUNT",
    "extra-entry-keys": "IN-KEYS",
    "reserved-word-names": "IN-NAME",
    "duplicate-names": "IN-UNIQUE",
    "nested-arguments": "IN-ARGS",
    "undeclared-required": "IN-REQUIRED",
    "bad-returns": "IN-RETURNS",
    "truncates-long-inputs": "IN-LENGTH",
    "limit-127": "IN-LENGTH",
    "limit-100": "PL-REJECT",
    "bad-escapes": "IN-STRING",
    "unsafe-integers": "IN-NUMBER",
    "empty-diagnostic": "PL-RESPONSE",
    "extra-plan-key": "PL-SCHEMA",
    "wrong-mode": "PL-MODE",
    "renamed-tool": "PL-TOOL",
    "undeclared-argument": "PL-ARGS",
    "limit-on-many-calls": "PL-SHAPE",
    "trimmed-values": "PL-OPAQUE",
    "quoted-words-steer": "PL-INVARIANT",
    "catalog-order": "PL-INVARIANT",
    "non-deterministic": "PL-DETERMINISM",
    "sloppy-output": "PL-ACCURACY",
    "weak-shaping": "PL-ACCURACY",
    "never-refuses": "PL-REJECT",
    "refuses-everything": "PL-REJECT",
    "lost-records": "CLI-STREAM",
    "unflushed": "CLI-STREAM",
    "plans-bad-records": "CLI-BAD-RECORD",
    "goes-wrong-after-bad-record": "CLI-BAD-RECORD",
}


# --- stream faults: run as ``python -m tests.faulty.planners NAME`` ----------------------------------------


def _serve(kind: str) -> int:
    # "unflushed" writes through its own large buffer, so PYTHONUNBUFFERED cannot flush it by accident
    out = open(sys.stdout.fileno(), "w", buffering=1 << 20, closefd=False, encoding="ascii") if kind == "unflushed" else sys.stdout
    n = 0
    seen_bad = False
    for raw in sys.stdin.buffer:
        n += 1
        line = raw.rstrip(b"\r\n")
        try:
            request = jsonio.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            request = None
        if kind == "crashes-on-bad-records" and request_kind(request) is None:
            raise SystemExit(3)
        answer = _reference(request) if request is not None else {"diagnostic": "bad"}
        if kind == "plans-bad-records" and request_kind(request) is None:
            answer = {"plan": None}
        if kind == "goes-wrong-after-bad-record":  # once it has met a bad record, it refuses everything
            seen_bad = seen_bad or request_kind(request) is None
            if seen_bad:
                answer = {"diagnostic": "the stream is broken"}
        if kind == "lost-records" and n % 5 == 0:
            continue
        out.write(jsonio.dumps(answer) + "\n")
        if kind != "unflushed":
            out.flush()
    out.flush()
    return 0


# each faulty planner is also a module attribute, for ``--python tests.faulty.planners:NAME``
globals().update({name.replace("-", "_"): line for name, line in FAULTY.items()})


STREAM_FAULTS = ("lost-records", "unflushed", "plans-bad-records", "crashes-on-bad-records", "goes-wrong-after-bad-record")

if __name__ == "__main__":
    sys.exit(_serve(sys.argv[1]))
