"""Checks for the compile clauses: ``CO-VALIDATE`` on responses, every ``JS-*`` on V8 observations.

A JS check reads an *observation* (what the harness saw in V8: compile errors, the event trace of
starts and settlements, how the function settled, and per-record facts computed inside V8 against the
expectation) and the case's :class:`~conformance.cases.Expectation`. Where one fault could be blamed on
several clauses, one rule decides, so each fault is reported once, under the clause it breaks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from conformance.cases import SYNC_FAILURES, CompileCase, Expectation
from reference.violations import Violation

Observation = dict[str, Any]


# --- CO-VALIDATE and the response's form -----------------------------------------------------------


def co_validate(case: CompileCase, response: dict[str, Any]) -> Iterator[Violation]:
    """"The compiler escapes names and values mechanically and validates structural constraints."

    An invalid plan or catalog gets exactly ``{"diagnostic": non-empty string}``; a valid plan never
    gets a diagnostic."""
    if case.breaks is not None:
        if not _is_diagnostic(response):
            yield Violation(
                clause="CO-VALIDATE",
                message=f"{_brief(response)} answers a request whose plan or catalog breaks {case.breaks}"
                ' (expected exactly {"diagnostic": "..."})',
                expected={"diagnostic": "<non-empty string>"},
                actual=response,
            )
    elif "diagnostic" in response:
        yield Violation(
            clause="CO-VALIDATE",
            message=f"{_brief(response)} diagnoses a valid plan",
            expected={"js": "<string>"},
            actual=response,
        )


def response_form(case: CompileCase, response: dict[str, Any]) -> Iterator[Violation]:
    """The response to a valid plan is exactly ``{"js": string}`` (part of JS-FORM)."""
    if case.breaks is None and "diagnostic" not in response:
        if set(response) != {"js"} or not isinstance(response["js"], str):
            yield Violation(
                clause="JS-FORM",
                message=f'{_brief(response)} is not exactly {{"js": string}}',
                expected={"js": "<string>"},
                actual=response,
            )


def _is_diagnostic(response: dict[str, Any]) -> bool:
    return set(response) == {"diagnostic"} and isinstance(response["diagnostic"], str) and bool(response["diagnostic"])


def _brief(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- shared readings of an observation ---------------------------------------------------------------


def _ran(obs: Observation) -> bool:
    return obs.get("compile") is None and "limit" not in obs and "harness" not in obs


@dataclass(frozen=True, slots=True)
class _Trace:
    starts: tuple[tuple[int, int, bool], ...]  # (event position, call index, started synchronously)
    settled: dict[int, int]  # call index -> position of its (first) settle event
    done: int | None  # position of the function's settlement


def _trace(obs: Observation) -> _Trace:
    """The event trace indexed once per observation (every schedule check reads it)."""
    cached = obs.get("_trace")
    if cached is None:
        starts, settled, done = [], {}, None
        for pos, e in enumerate(obs.get("events", ())):
            if e[0] == "start":
                starts.append((pos, e[1], e[2]))
            elif e[0] == "settle":
                settled.setdefault(e[1], pos)
            elif done is None:
                done = pos
        cached = obs["_trace"] = _Trace(starts=tuple(starts), settled=settled, done=done)
    return cached


def _starts(obs: Observation) -> tuple[tuple[int, int, bool], ...]:
    return _trace(obs).starts


def _settle_position(obs: Observation, call: int) -> int | None:
    return _trace(obs).settled.get(call)


def _done_position(obs: Observation) -> int | None:
    return _trace(obs).done


def _failure_before(exp: Expectation, call: int) -> str | None:
    """The clause that owns a missing start of ``call``: the kind of the nearest earlier failure."""
    for b in reversed(exp.behaviours[:call]):
        if b.kind in SYNC_FAILURES:
            return "JS-SYNC-THROW"
        if b.kind == "reject":
            return "JS-SEQUENTIAL" if exp.mode == "sequential" else "JS-CALLS"
    return None


def _rejection_clause(exp: Expectation) -> str:
    """Who is to blame when the function rejects: a failure that escaped, else the form."""
    kinds = {b.kind for b in exp.behaviours}
    if kinds & set(SYNC_FAILURES):
        return "JS-SYNC-THROW"
    if "reject" in kinds:
        return "JS-RECORD"
    return "JS-FORM"


def _call_label(exp: Expectation, i: int) -> str:
    return f"call {i} ({exp.plan.calls[i].tool!r}, {exp.behaviours[i].kind})"


def _record_problems(exp: Expectation, obs: Observation) -> list[tuple[str, str]]:
    """(clause, message) for every record that differs from what its call must yield (computed once
    per observation: seven checks read it)."""
    cached = obs.get("_record_problems")
    if cached is None:
        cached = obs["_record_problems"] = list(_find_record_problems(exp, obs))
    return cached


def _find_record_problems(exp: Expectation, obs: Observation) -> Iterator[tuple[str, str]]:
    if not _ran(obs) or obs.get("done") != "resolved" or exp.pending:
        return
    result = obs["result"]
    n = len(exp.records)
    if exp.output == "all":
        if not result.get("isArray"):
            yield "JS-ALL", f"resolved to {result.get('text')}, not an array of {n} records"
            return
        if result["length"] != n:
            yield "JS-ALL", f"resolved to {result['length']} records for {n} calls: {result.get('text')}"
        pairs = list(enumerate(result["records"]))
    else:
        record = result["record"]
        if result.get("isArray"):
            yield "JS-LAST", f"resolved to {result.get('text')}, not the final call's record"
            return
        pairs = [(n - 1, record)]
    for i, facts in pairs:
        want = exp.records[i]
        if want is None or facts.get("why") is None:
            if want is not None and facts.get("why") is None and not _plain_record(facts):
                yield "JS-RECORD", f"record of {_call_label(exp, i)} is {facts.get('text')}: {_shape_of(facts)}"
            continue
        others = [j for j in facts.get("matches", ()) if j != i]
        if others and _swapped(exp, obs, pairs, i, others[0]):
            # two calls of one tool with the same args look alike to the tools; their records coming
            # back swapped although they settled in order means they were started out of order
            yield "JS-ORDER", (
                f"calls {min(i, others[0])} and {max(i, others[0])} (both {exp.plan.calls[i].tool!r} with the same"
                f" args) came back swapped: they were started out of plan order"
            )
            continue
        if others:
            clause = "JS-ALL" if exp.output == "all" else "JS-LAST"
            what = "position" if exp.output == "all" else "result"
            yield clause, f"{what} {i} holds the record of call {others[0]}, not of {_call_label(exp, i)}: {facts.get('text')}"
            continue
        if not _plain_record(facts):
            yield "JS-RECORD", f"record of {_call_label(exp, i)} is {facts.get('text')}: {_shape_of(facts)}"
            continue
        yield _record_clause(exp, obs, i, facts), _record_message(exp, i, facts)


def _swapped(exp: Expectation, obs: Observation, pairs: list[tuple[int, Any]], i: int, j: int) -> bool:
    """Records i and j hold each other's outcome, for two started calls of one tool with the same args
    that settled in order: indistinguishable to the tools, so they were started out of order."""
    a, b = exp.plan.calls[i], exp.plan.calls[j]
    if a.tool != b.tool or dict(a.args) != dict(b.args) or exp.output != "all":
        return False
    if i not in exp.starts or j not in exp.starts or _finished_out_of_order(obs, i, j):
        return False
    other = dict(pairs).get(j)
    return other is not None and i in other.get("matches", ())


def _finished_out_of_order(obs: Observation, i: int, j: int) -> bool:
    """Did the later of calls i and j settle first (so swapped records follow completion order)?"""
    a, b = _settle_position(obs, min(i, j)), _settle_position(obs, max(i, j))
    return a is not None and b is not None and b < a


def _plain_record(facts: dict[str, Any]) -> bool:
    if facts.get("why") == "not-object" or not facts.get("plain"):
        return False
    keys = sorted(facts.get("keys", ()))
    ok = facts.get("ok")
    return (ok is True and keys == ["ok", "value"]) or (ok is False and keys == ["error", "ok"])


def _shape_of(facts: dict[str, Any]) -> str:
    if facts.get("why") == "not-object":
        return "not an object"
    if not facts.get("plain"):
        return "its prototype is neither Object.prototype nor null"
    return f"own keys {facts.get('keys')!r} with ok {facts.get('ok')!r} (expected ok/value or ok/error)"


def missed_past_limit(exp: Expectation, facts: dict[str, Any]) -> bool:
    """A shape error was due only to a row the limit drops, and the record says ok instead."""
    limit = exp.plan.output.limit
    want = exp.records[0] or {}
    return (
        bool(want.get("shape"))
        and facts.get("why") == "ok"
        and exp.first_bad_row is not None
        and limit is not None
        and exp.first_bad_row >= limit
    )


def _record_clause(exp: Expectation, obs: Observation, i: int, facts: dict[str, Any]) -> str:
    why = facts["why"]
    if exp.shaped and i == 0 and exp.behaviours[0].kind in ("resolve", "return"):
        if why in ("rows-length", "rows-order"):
            return "JS-LIMIT"
        if why.startswith("row-"):
            return "JS-PROJECT"
        if missed_past_limit(exp, facts):
            # the engine asked again with the limit raised over that row: a shape error then means the
            # limit came first (JS-LIMIT); none means the row check itself is wrong (JS-SHAPE)
            return "JS-SHAPE" if obs.get("caught_inside_limit") is False else "JS-LIMIT"
        return "JS-SHAPE"
    if exp.behaviours[i].kind in SYNC_FAILURES:
        return "JS-SYNC-THROW"
    return "JS-RECORD"


_WHY = {
    "ok": "its ok is {ok}, expected {want_ok}",
    "value": "its value is not the tool's fulfilment value itself",
    "error": "its error is not {error_kind}",
    "error-message": "its error has an empty message",
    "rows-not-array": "its value is not an array of rows",
    "rows-length": "it holds the wrong number of rows (limit {limit}, {rows} rows returned by the tool)",
    "rows-order": "its rows are not the tool's first rows, in order",
    "row-fresh": "a projected row is the tool's own row object, not a fresh one",
    "row-not-object": "a projected row is not an object",
    "row-proto": "a projected row's prototype is not Object.prototype",
    "row-keys": "a projected row's own keys are not exactly the fields {fields} in order",
    "row-descriptor": "a projected field is not an enumerable data property",
    "row-values": "a projected field does not hold the row's value",
}


def _record_message(exp: Expectation, i: int, facts: dict[str, Any]) -> str:
    want = exp.records[i] or {}
    b = exp.behaviours[i]
    if "same" in want:
        error_kind = "the thrown value itself" if b.kind == "throw" else "the rejection reason itself"
    elif want.get("type"):
        error_kind = "a TypeError (the tool is missing or not a function)"
    else:
        error_kind = "an Error with a non-empty message (a shape error)"
    rows = b.value if isinstance(b.value, list) else None
    detail = _WHY.get(facts["why"], facts["why"]).format(
        ok=facts.get("ok"),
        want_ok=want.get("ok"),
        error_kind=error_kind,
        limit=exp.plan.output.limit,
        rows=len(rows) if rows is not None else "no",
        fields=list(exp.plan.output.fields or ()),
    )
    if want.get("shape") and facts["why"] == "ok" and exp.first_bad_row is not None:
        detail += f" (row {exp.first_bad_row} breaks the shape)"
    elif want.get("shape") and facts["why"] == "ok":
        detail += " (the value is not an array)"
    return f"record of {_call_label(exp, i)} is {facts.get('text')}: {detail}"


def _record_violations(clause: str, exp: Expectation, obs: Observation) -> Iterator[Violation]:
    for owner, message in _record_problems(exp, obs):
        if owner == clause:
            yield Violation(clause=clause, message=message)


# --- the JS clauses --------------------------------------------------------------------------------


def js_form(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"an async-function body intended for a host exposing tools[name](args), top-level await and return"

    The body compiles as an AsyncFunction body and, when every call settles, resolves."""
    if obs.get("compile") is not None:
        twin = obs.get("twin")
        if exp.tame:
            yield Violation(clause="JS-FORM", message=f"{obs['compile']} compiling the js of a tame plan")
        elif twin is not None and not twin["parses"]:
            yield Violation(
                clause="JS-FORM",
                message=f"{obs['compile']} compiling the js (its tame twin, every name and value renamed, fails too)",
            )
        return
    if "limit" in obs:
        yield Violation(clause="JS-FORM", message=f"the function {obs['limit']}")
        return
    if "harness" in obs:
        return
    if obs.get("invokeThrew") is not None:
        yield Violation(clause="JS-FORM", message=f"{obs['invokeThrew']} thrown by invoking the function")
        return
    if obs.get("done") == "rejected" and _rejection_clause(exp) == "JS-FORM":
        yield Violation(clause="JS-FORM", message=f"{obs['result']['text']} rejects the function's promise")
    if obs.get("done") is None and not exp.pending:
        yield Violation(
            clause="JS-FORM", message="the function is still pending although every call it started has settled"
        )


def js_escape(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"The compiler escapes names and values mechanically."

    On an adversarial plan the js parses and every tool receives exactly the plan's names and values."""
    twin = obs.get("twin")
    if exp.tame:
        return
    if obs.get("compile") is not None:
        if twin is None or twin["parses"]:
            yield Violation(
                clause="JS-ESCAPE",
                message=f"{obs['compile']} compiling the js of a plan with adversarial names or values"
                + (" (its tame twin parses)" if twin else ""),
            )
        return
    if twin is None or twin["argsOk"]:  # else the twin's args go wrong too: JS-CALLS reports it
        yield from _wrong_args("JS-ESCAPE", exp, obs)


def _wrong_args(clause: str, exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """The first invocation whose argument differs from its call's plan args."""
    for inv in obs.get("invocations", ()):
        if inv["call"] >= 0 and inv["argc"] >= 1 and not inv["argsOk"]:
            call = exp.plan.calls[inv["call"]]
            yield Violation(
                clause=clause,
                message=f"{inv['args']} reached {call.tool!r} (call {inv['call']}) instead of its plan args",
                expected=dict(call.args),
                actual=inv["args"],
            )
            return


def js_calls(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"a host exposing tools[name](args)"

    Each call invokes its tool exactly once with exactly one argument holding the plan's args."""
    if not _ran(obs):
        return
    invs = obs.get("invocations", ())
    for inv in invs:
        if inv["call"] < 0:
            yield Violation(clause="JS-CALLS", message=f"{inv['tool']!r} invoked more times than the plan calls it")
            return
        if inv["argc"] != 1:
            yield Violation(clause="JS-CALLS", message=f"{inv['tool']!r} invoked with {inv['argc']} arguments, not 1")
            return
    counts = [0] * len(exp.records)
    for inv in invs:
        counts[inv["call"]] += 1
    for i in exp.starts:
        if counts[i] == 0 and _failure_before(exp, i) in (None, "JS-CALLS"):
            if exp.mode == "sequential" and obs.get("done") is None and not exp.pending:
                continue  # a wedged sequence is JS-FORM's to report
            yield Violation(clause="JS-CALLS", message=f"{_call_label(exp, i)} was never invoked")
            return
    twin = obs.get("twin")
    if exp.tame or (twin is not None and not twin["argsOk"]):
        yield from _wrong_args("JS-CALLS", exp, obs)


def js_order(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"serial mode catches each call's failure and continues in mention order"

    Calls start in plan order, in every mode."""
    order = [call for _, call, _ in _starts(obs) if call >= 0]
    if order != sorted(order):
        yield Violation(
            clause="JS-ORDER", message=f"calls started in the order {order}, not in plan order", expected=sorted(order), actual=order
        )
        return
    yield from _record_violations("JS-ORDER", exp, obs)


def js_parallel(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"Parallel mode uses Promise.allSettled"

    Every call starts, in call order, before the body first awaits."""
    if exp.mode != "parallel" or not _ran(obs):
        return
    late = [call for _, call, sync in _starts(obs) if call >= 0 and not sync]
    if late:
        yield Violation(
            clause="JS-PARALLEL",
            message=f"{_call_label(exp, late[0])} started after the body first awaited, not with the others",
        )


def js_sequential(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"serial mode catches each call's failure and continues in mention order"

    Call k+1 starts only after call k settled; a failure does not stop later calls."""
    if exp.mode != "sequential" or not _ran(obs):
        return
    starts = _starts(obs)
    started = {call for _, call, _ in starts}
    for pos, call, _ in starts:
        for earlier in range(call):
            if exp.behaviours[earlier].kind in ("absent", "notfn"):
                continue
            settled = _settle_position(obs, earlier)
            if settled is None or settled > pos:
                yield Violation(
                    clause="JS-SEQUENTIAL",
                    message=f"{_call_label(exp, call)} started before {_call_label(exp, earlier)} settled",
                )
                return
    for i in exp.starts:
        if i not in started and _failure_before(exp, i) == "JS-SEQUENTIAL":
            yield Violation(
                clause="JS-SEQUENTIAL", message=f"{_call_label(exp, i)} never started after an earlier call rejected"
            )
            return


def js_await(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"Generated code awaits every started call."

    The function settles only after every started call settled; a never-settling call keeps it pending."""
    if not _ran(obs):
        return
    done = _done_position(obs)
    if done is None:
        return
    for _, call, _ in _starts(obs):
        if call < 0:
            continue
        settled = _settle_position(obs, call)
        if settled is None:
            yield Violation(
                clause="JS-AWAIT", message=f"the function settled although {_call_label(exp, call)} never settles"
            )
            return
        if settled > done:
            yield Violation(
                clause="JS-AWAIT", message=f"the function settled before {_call_label(exp, call)} settled"
            )
            return


def js_sync_throw(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"Generated code awaits every started call" (DESIGN §4: synchronous throws, missing tools)

    A tool that throws synchronously, is missing or is not a function yields {ok: false, error}, the
    other calls still run, and the function still resolves."""
    if not _ran(obs):
        return
    if obs.get("done") == "rejected" and _rejection_clause(exp) == "JS-SYNC-THROW":
        yield Violation(
            clause="JS-SYNC-THROW",
            message=f"the function rejected with {obs['result']['text']} after a call failed synchronously",
        )
        return
    started = {call for _, call, _ in _starts(obs)}
    for i in exp.starts:
        if i not in started and _failure_before(exp, i) == "JS-SYNC-THROW":
            yield Violation(
                clause="JS-SYNC-THROW", message=f"{_call_label(exp, i)} never started after an earlier call failed synchronously"
            )
            return
    yield from _record_violations("JS-SYNC-THROW", exp, obs)


def js_record(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"Results are {ok: true, value: ...} or {ok: false, error: ...} records."

    Plain objects with exactly those own keys; value and error are the tool's own (identity)."""
    if obs.get("done") == "rejected" and _ran(obs) and _rejection_clause(exp) == "JS-RECORD":
        yield Violation(
            clause="JS-RECORD", message=f"the function rejected with {obs['result']['text']} instead of recording the rejection"
        )
        return
    yield from _record_violations("JS-RECORD", exp, obs)


def js_all(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"all returns records in call order"

    An array of one record per call, in call order, however the calls finish."""
    if exp.output == "all":
        yield from _record_violations("JS-ALL", exp, obs)


def js_last(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"last returns the final call's record, not the last call to finish" """
    if exp.output == "last":
        yield from _record_violations("JS-LAST", exp, obs)


def js_shape(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"Single-array shaping reports invalid result shapes explicitly." """
    if exp.shaped:
        yield from _record_violations("JS-SHAPE", exp, obs)


def js_project(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"optional fields projects 1-3 declared properties" """
    if exp.shaped:
        yield from _record_violations("JS-PROJECT", exp, obs)


def js_limit(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"optional limit takes the first 0-100 rows. Projection precedes the limit." """
    if exp.shaped:
        yield from _record_violations("JS-LIMIT", exp, obs)


def js_pure(exp: Expectation, obs: Observation) -> Iterator[Violation]:
    """"an async-function body intended for a host exposing tools[name](args)" (DESIGN §4: the body may
    use only tools and standard built-ins; it must not write globals or touch built-in prototypes)"""
    if "harness" in obs:
        yield Violation(
            clause="JS-PURE",
            message=f"the body changed built-ins the kit relies on after it ran ({obs['harness']})",
        )
        return
    changes = obs.get("purity") or ()
    if changes:
        more = f" and {len(changes) - 3} more" if len(changes) > 3 else ""
        yield Violation(clause="JS-PURE", message="; ".join(changes[:3]) + more, actual=list(changes))


JS_CHECKS = {
    "JS-FORM": js_form,
    "JS-CALLS": js_calls,
    "JS-PARALLEL": js_parallel,
    "JS-SEQUENTIAL": js_sequential,
    "JS-AWAIT": js_await,
    "JS-SYNC-THROW": js_sync_throw,
    "JS-RECORD": js_record,
    "JS-ALL": js_all,
    "JS-LAST": js_last,
    "JS-SHAPE": js_shape,
    "JS-PROJECT": js_project,
    "JS-LIMIT": js_limit,
    "JS-ORDER": js_order,
    "JS-ESCAPE": js_escape,
    "JS-PURE": js_pure,
}


def judge_js(exp: Expectation, obs: Observation) -> list[Violation]:
    """Every JS violation in one observation, in clause order."""
    return [v for check in JS_CHECKS.values() for v in check(exp, obs)]
