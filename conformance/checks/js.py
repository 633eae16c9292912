"""The JS clauses: what the emitted ``js`` did when run in V8 against mocked tools.

Each check reads a :class:`~conformance.observations.CompileObservation`: the case's
:class:`~conformance.cases.Expectation` (``exp``) and what the harness saw in V8 (``run``: compile errors,
the event trace of starts and settlements, how the function settled, and per-record facts computed
inside V8 against the expectation), plus what the engine's probes found (the tame twin of an adversarial
plan, JS-LIMIT's raised-limit probe). Where one fault could be blamed on several clauses, one rule
decides, so each fault is reported once, under the clause it breaks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.cases import SYNC_FAILURES, Expectation
from conformance.observations import CompileObservation
from conformance.registry import Family
from reference.violations import Violation

FAMILY = Family("js", order=70, subject="compile", roles=("compiler", "pipeline"))
Obs = CompileObservation


def _has(obs: Obs) -> bool:
    """The case is a valid plan whose js was run (or would have been: an errored answer)."""
    return obs.exp is not None


def _exp(obs: Obs) -> Expectation:
    assert obs.exp is not None
    return obs.exp


def _run(obs: Obs) -> Any:
    return obs.run if obs.run is not None else {}


def _ran(obs: Obs) -> bool:
    """The js compiled and ran to a verdict the schedule and record checks can read."""
    run = obs.run
    return run is not None and run.get("compile") is None and "limit" not in run and "harness" not in run


@dataclass(frozen=True, slots=True)
class _Trace:
    starts: tuple[tuple[int, int, bool], ...]  # (event position, call index, started synchronously)
    settled: dict[int, int]  # call index -> position of its (first) settle event
    done: int | None  # position of the function's settlement


def _trace(obs: Obs) -> _Trace:
    """The event trace indexed once per observation (every schedule check reads it)."""
    cached = obs.memo.get("trace")
    if cached is None:
        starts, settled, done = [], {}, None
        for pos, e in enumerate(_run(obs).get("events", ())):
            if e[0] == "start":
                starts.append((pos, e[1], e[2]))
            elif e[0] == "settle":
                settled.setdefault(e[1], pos)
            elif done is None:
                done = pos
        cached = obs.memo["trace"] = _Trace(starts=tuple(starts), settled=settled, done=done)
    return cached


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


# --- records: one pass finds every record's problem and the clause that owns it ------------------------


def _record_problems(obs: Obs) -> list[tuple[str, str, str]]:
    """(clause, kind, message) for every record that differs from what its call must yield (computed once
    per observation: seven checks read it)."""
    cached = obs.memo.get("records")
    if cached is None:
        cached = obs.memo["records"] = list(_find_record_problems(obs))
    return cached


def _find_record_problems(obs: Obs) -> Iterator[tuple[str, str, str]]:
    exp = _exp(obs)
    run = _run(obs)
    if not _ran(obs) or run.get("done") != "resolved" or exp.pending:
        return
    result = run["result"]
    n = len(exp.records)
    if exp.output == "all":
        if not result.get("isArray"):
            yield "JS-ALL", "not-array", f"resolved to {result.get('text')}, not an array of {n} records"
            return
        if result["length"] != n:
            yield "JS-ALL", "length", f"resolved to {result['length']} records for {n} calls: {result.get('text')}"
        pairs = list(enumerate(result["records"]))
    else:
        record = result["record"]
        if result.get("isArray"):
            yield "JS-LAST", "array", f"resolved to {result.get('text')}, not the final call's record"
            return
        pairs = [(n - 1, record)]
    for i, facts in pairs:
        want = exp.records[i]
        if want is None or facts.get("why") is None:
            if want is not None and facts.get("why") is None and not _plain_record(facts):
                yield "JS-RECORD", "not-plain", f"record of {_call_label(exp, i)} is {facts.get('text')}: {_shape_of(facts)}"
            continue
        others = [j for j in facts.get("matches", ()) if j != i]
        if others and _swapped(exp, obs, pairs, i, others[0]):
            # two calls of one tool with the same args look alike to the tools; their records coming
            # back swapped although they settled in order means they were started out of order
            yield "JS-ORDER", "swapped", (
                f"calls {min(i, others[0])} and {max(i, others[0])} (both {exp.plan.calls[i].tool!r} with the same"
                f" args) came back swapped: they were started out of plan order"
            )
            continue
        if others:
            clause = "JS-ALL" if exp.output == "all" else "JS-LAST"
            what = "position" if exp.output == "all" else "result"
            yield clause, "other-record", (f"{what} {i} holds the record of call {others[0]}, not of"
                                           f" {_call_label(exp, i)}: {facts.get('text')}")
            continue
        if not _plain_record(facts):
            yield "JS-RECORD", "not-plain", f"record of {_call_label(exp, i)} is {facts.get('text')}: {_shape_of(facts)}"
            continue
        yield _record_clause(obs, i, facts), str(facts["why"]), _record_message(exp, i, facts)


def _swapped(exp: Expectation, obs: Obs, pairs: list[tuple[int, Any]], i: int, j: int) -> bool:
    """Records i and j hold each other's outcome, for two started calls of one tool with the same args
    that settled in order: indistinguishable to the tools, so they were started out of order."""
    a, b = exp.plan.calls[i], exp.plan.calls[j]
    if a.tool != b.tool or dict(a.args) != dict(b.args) or exp.output != "all":
        return False
    if i not in exp.starts or j not in exp.starts or _finished_out_of_order(obs, i, j):
        return False
    other = dict(pairs).get(j)
    return other is not None and i in other.get("matches", ())


def _finished_out_of_order(obs: Obs, i: int, j: int) -> bool:
    """Did the later of calls i and j settle first (so swapped records follow completion order)?"""
    settled = _trace(obs).settled
    a, b = settled.get(min(i, j)), settled.get(max(i, j))
    return a is not None and b is not None and b < a


def _plain_record(facts: Any) -> bool:
    if facts.get("why") in ("not-object", "unreadable") or not facts.get("plain"):
        return False
    keys = sorted(facts.get("keys", ()))
    ok = facts.get("ok")
    return (ok is True and keys == ["ok", "value"]) or (ok is False and keys == ["error", "ok"])


def _shape_of(facts: Any) -> str:
    if facts.get("why") == "not-object":
        return "not an object"
    if facts.get("why") == "unreadable":
        return "reading it threw (a Proxy or an accessor is not a plain record)"
    if not facts.get("plain"):
        return "its prototype is neither Object.prototype nor null"
    return f"own keys {list(facts.get('keys', ()))!r} with ok {facts.get('ok')!r} (expected ok/value or ok/error)"


def missed_past_limit(exp: Expectation, facts: Any) -> bool:
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


def first_record(obs: Obs) -> Any:
    """The facts of the first record the function resolved to (JS-LIMIT's probe reads them), or None."""
    result = _run(obs).get("result") or {}
    records = result.get("records") or ((result["record"],) if "record" in result else ())
    return records[0] if records else None


def _record_clause(obs: Obs, i: int, facts: Any) -> str:
    exp = _exp(obs)
    why = facts["why"]
    if exp.shaped and i == 0 and exp.behaviours[0].kind in ("resolve", "return"):
        if why in ("rows-length", "rows-order"):
            return "JS-LIMIT"
        if why.startswith("row-"):
            return "JS-PROJECT"
        if missed_past_limit(exp, facts):
            # the engine asked again with the limit raised over that row: a shape error then means the
            # limit came first (JS-LIMIT); none means the row check itself is wrong (JS-SHAPE)
            return "JS-SHAPE" if obs.caught_inside_limit is False else "JS-LIMIT"
        return "JS-SHAPE"
    if exp.behaviours[i].kind in SYNC_FAILURES:
        return "JS-SYNC-THROW"
    return "JS-RECORD"


_WHY = {
    "ok": "its ok is {ok}, expected {want_ok}",
    "value": "its value is not the tool's fulfilment value itself",
    "error": "its error is not {error_kind}",
    "error-message": "its error has an empty message",
    "error-message-accessor": "its error's message is an accessor, not a data property holding a non-empty string",
    "rows-not-array": "its value is not an array of rows",
    "rows-length": "it holds the wrong number of rows (limit {limit}, {rows} rows returned by the tool)",
    "rows-order": "its rows are not the tool's first rows, in order",
    "row-fresh": "a projected row is the tool's own row object, not a fresh one",
    "row-not-object": "a projected row is not an object",
    "row-proto": "a projected row's prototype is not Object.prototype",
    "row-keys": "a projected row's own keys are not exactly the fields {fields} in order",
    "row-descriptor": "a projected field is not an enumerable data property",
    "row-values": "a projected field does not hold the row's value",
    "row-unreadable": "reading a projected row threw (a Proxy or an accessor is not a plain row)",
    "unreadable": "reading it threw (a Proxy or an accessor is not a plain record)",
}


def _record_message(exp: Expectation, i: int, facts: Any) -> str:
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


def _record_violations(clause: str, obs: Obs) -> Iterator[Violation]:
    for owner, kind, message in _record_problems(obs):
        if owner == clause:
            yield Violation(clause=clause, message=message, kind=kind)


def _wrong_args(clause: str, obs: Obs) -> Iterator[Violation]:
    """The first invocation whose argument differs from its call's plan args."""
    exp = _exp(obs)
    for inv in _run(obs).get("invocations", ()):
        if inv["call"] >= 0 and inv["argc"] >= 1 and not inv["argsOk"]:
            call = exp.plan.calls[inv["call"]]
            yield Violation(
                clause=clause,
                message=f"{inv['args']} reached {call.tool!r} (call {inv['call']}) instead of its plan args",
                expected=dict(call.args),
                actual=inv["args"],
                kind="wrong-args",
            )
            return


# --- the clauses ---------------------------------------------------------------------------------------


def _valid(obs: Obs) -> bool:
    """A valid plan not answered with a diagnostic (that is CO-VALIDATE's)."""
    return obs.case.breaks is None and (obs.answer is None or "diagnostic" not in obs.answer)


@FAMILY.clause("JS-FORM", applies=_valid, summary="exactly `{\"js\": string}` that compiles and resolves")
def js_form(obs: Obs) -> Iterator[Violation]:
    """"an async-function body intended for a host exposing tools[name](args), top-level await and return"

    The response to a valid plan is exactly {"js": string}; the body compiles as an AsyncFunction body
    and, when every call settles, resolves."""
    answer = obs.answer
    if answer is None:
        return
    if obs.source == "compile" and "diagnostic" not in answer:
        if set(answer) != {"js"} or not isinstance(answer["js"], str):
            yield Violation(clause="JS-FORM", message=f'{_form_fault(answer)}: {_brief(answer)} is not exactly'
                            ' {"js": string}', expected={"js": "<string>"}, actual=dict(answer), kind="response")
            return
    if obs.exp is None or obs.run is None:
        return
    exp, run = obs.exp, obs.run
    if run.get("compile") is not None:
        twin = obs.twin
        if exp.tame:
            yield Violation(clause="JS-FORM", message=f"{run['compile']} compiling the js of a tame plan", kind="parse")
        elif twin is not None and not twin["parses"]:
            yield Violation(clause="JS-FORM", kind="parse", message=f"{run['compile']} compiling the js (its tame twin,"
                            " every name and value renamed, fails too)")
        return
    if "limit" in run:
        yield Violation(clause="JS-FORM", message=f"the function {run['limit']}", kind="limit")
        return
    if "harness" in run:
        return
    if run.get("invokeThrew") is not None:
        yield Violation(clause="JS-FORM", message=f"{run['invokeThrew']} thrown by invoking the function", kind="threw")
        return
    if run.get("done") == "rejected" and _rejection_clause(exp) == "JS-FORM":
        yield Violation(clause="JS-FORM", message=f"{run['result']['text']} rejects the function's promise", kind="rejects")
    if run.get("done") is None and not exp.pending:
        yield Violation(clause="JS-FORM", kind="pending",
                        message="the function is still pending although every call it started has settled")


def _form_fault(answer: Mapping[str, Any]) -> str:
    """What keeps ``answer`` from being exactly ``{"js": string}``, named first: a long ``js`` would hide
    an extra key past where the answer's repr is cut."""
    def keys(names: list[str]) -> str:
        return ", ".join(map(repr, names[:5])) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    extra = sorted(k for k in answer if k != "js")
    if "js" not in answer:
        return 'an answer without the key "js"' + (f" (its keys: {keys(extra)})" if extra else "")
    if extra:
        return f"an answer with the extra key{'s' if len(extra) > 1 else ''} {keys(extra)}"
    js = answer["js"]
    kind = ("null" if js is None else "a boolean" if isinstance(js, bool) else "a number" if isinstance(js, (int, float))
            else "an array" if isinstance(js, list) else "an object")
    return f'an answer whose "js" is {kind}, not a string'


def _brief(value: Any, limit: int = 120) -> str:
    text = repr(dict(value) if hasattr(value, "items") else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@FAMILY.clause("JS-CALLS", applies=_has, summary="each call invokes its tool once with one argument holding exactly its args")
def js_calls(obs: Obs) -> Iterator[Violation]:
    """"a host exposing tools[name](args)"

    Each call invokes its tool exactly once with exactly one argument holding the plan's args."""
    if not _ran(obs):
        return
    exp = _exp(obs)
    invs = _run(obs).get("invocations", ())
    for inv in invs:
        if inv["call"] < 0:
            yield Violation(clause="JS-CALLS", message=f"{inv['tool']!r} invoked more times than the plan calls it",
                            kind="extra-invocation")
            return
        if inv["argc"] != 1:
            yield Violation(clause="JS-CALLS", message=f"{inv['tool']!r} invoked with {inv['argc']} arguments, not 1",
                            kind="argc")
            return
    counts = [0] * len(exp.records)
    for inv in invs:
        counts[inv["call"]] += 1
    for i in exp.starts:
        if counts[i] == 0 and _failure_before(exp, i) in (None, "JS-CALLS"):
            if exp.mode == "sequential" and _run(obs).get("done") is None and not exp.pending:
                continue  # a wedged sequence is JS-FORM's to report
            yield Violation(clause="JS-CALLS", message=f"{_call_label(exp, i)} was never invoked", kind="never-invoked")
            return
    twin = obs.twin
    if exp.tame or (twin is not None and not twin["argsOk"]):
        yield from _wrong_args("JS-CALLS", obs)


@FAMILY.clause("JS-PARALLEL", applies=lambda obs: _has(obs) and _exp(obs).mode == "parallel",
               summary="parallel calls all start synchronously, in call order")
def js_parallel(obs: Obs) -> Iterator[Violation]:
    """"Parallel mode uses Promise.allSettled"

    Every call starts, in call order, before the body first awaits."""
    if not _ran(obs):
        return
    late = [call for _, call, sync in _trace(obs).starts if call >= 0 and not sync]
    if late:
        yield Violation(clause="JS-PARALLEL", kind="started-late",
                        message=f"{_call_label(_exp(obs), late[0])} started after the body first awaited, not with the others")


@FAMILY.clause("JS-SEQUENTIAL", applies=lambda obs: _has(obs) and _exp(obs).mode == "sequential",
               summary="each sequential call starts after the previous one settled; failures do not stop the rest")
def js_sequential(obs: Obs) -> Iterator[Violation]:
    """"serial mode catches each call's failure and continues in mention order"

    Call k+1 starts only after call k settled; a failure does not stop later calls."""
    if not _ran(obs):
        return
    exp = _exp(obs)
    trace = _trace(obs)
    started = {call for _, call, _ in trace.starts}
    for pos, call, _ in trace.starts:
        for earlier in range(call):
            if exp.behaviours[earlier].kind in ("absent", "notfn"):
                continue
            settled = trace.settled.get(earlier)
            if settled is None or settled > pos:
                yield Violation(clause="JS-SEQUENTIAL", kind="overlap",
                                message=f"{_call_label(exp, call)} started before {_call_label(exp, earlier)} settled")
                return
    for i in exp.starts:
        if i not in started and _failure_before(exp, i) == "JS-SEQUENTIAL":
            yield Violation(clause="JS-SEQUENTIAL", kind="stopped",
                            message=f"{_call_label(exp, i)} never started after an earlier call rejected")
            return


@FAMILY.clause("JS-AWAIT", applies=_has, summary="the function settles only after every started call settled")
def js_await(obs: Obs) -> Iterator[Violation]:
    """"Generated code awaits every started call."

    The function settles only after every started call settled; a never-settling call keeps it pending."""
    if not _ran(obs):
        return
    trace = _trace(obs)
    if trace.done is None:
        return
    for _, call, _ in trace.starts:
        if call < 0:
            continue
        settled = trace.settled.get(call)
        if settled is None:
            yield Violation(clause="JS-AWAIT", kind="settled-pending",
                            message=f"the function settled although {_call_label(_exp(obs), call)} never settles")
            return
        if settled > trace.done:
            yield Violation(clause="JS-AWAIT", kind="settled-early",
                            message=f"the function settled before {_call_label(_exp(obs), call)} settled")
            return


@FAMILY.clause("JS-SYNC-THROW", applies=lambda obs: _has(obs) and any(b.kind in SYNC_FAILURES for b in _exp(obs).behaviours),
               summary="synchronous throws and missing or non-function tools become failure records")
def js_sync_throw(obs: Obs) -> Iterator[Violation]:
    """"Generated code awaits every started call." (DESIGN §4: synchronous throws, missing tools)

    A tool that throws synchronously, is missing or is not a function yields {ok: false, error}, the
    other calls still run, and the function still resolves."""
    if not _ran(obs):
        return
    exp, run = _exp(obs), _run(obs)
    if run.get("done") == "rejected" and _rejection_clause(exp) == "JS-SYNC-THROW":
        yield Violation(clause="JS-SYNC-THROW", kind="escaped",
                        message=f"the function rejected with {run['result']['text']} after a call failed synchronously")
        return
    started = {call for _, call, _ in _trace(obs).starts}
    for i in exp.starts:
        if i not in started and _failure_before(exp, i) == "JS-SYNC-THROW":
            yield Violation(clause="JS-SYNC-THROW", kind="stopped",
                            message=f"{_call_label(exp, i)} never started after an earlier call failed synchronously")
            return
    yield from _record_violations("JS-SYNC-THROW", obs)


@FAMILY.clause("JS-RECORD", applies=_has, summary="records are plain objects with exactly `ok` and `value` or `error`")
def js_record(obs: Obs) -> Iterator[Violation]:
    """"Results are {ok: true, value: ...} or {ok: false, error: ...} records."

    Plain objects with exactly those own keys; value and error are the tool's own (identity)."""
    run = _run(obs)
    if run.get("done") == "rejected" and _ran(obs) and _rejection_clause(_exp(obs)) == "JS-RECORD":
        yield Violation(clause="JS-RECORD", kind="rejected",
                        message=f"the function rejected with {run['result']['text']} instead of recording the rejection")
        return
    yield from _record_violations("JS-RECORD", obs)


def _resolved(obs: Obs) -> bool:
    """The function resolved (or the case errored: what it would have exercised counts): only then is
    there a result for the record clauses to judge. A body that rejects or stays pending is JS-FORM's, and
    is not counted as a pass of the clauses of a result it never gave."""
    return obs.run is None or obs.run.get("done") == "resolved"


def _settles(obs: Obs, output: str) -> bool:
    return _has(obs) and not _exp(obs).pending and _exp(obs).output == output and _resolved(obs)


@FAMILY.clause("JS-ALL", applies=lambda obs: _settles(obs, "all"), summary="`all` gives every record in call order")
def js_all(obs: Obs) -> Iterator[Violation]:
    """"all returns records in call order"

    An array of one record per call, in call order, however the calls finish."""
    yield from _record_violations("JS-ALL", obs)


@FAMILY.clause("JS-LAST", applies=lambda obs: _settles(obs, "last"), summary="`last` gives the final call's record in call order")
def js_last(obs: Obs) -> Iterator[Violation]:
    """"last returns the final call's record, not the last call to finish" """
    yield from _record_violations("JS-LAST", obs)


def _shaped(obs: Obs) -> bool:
    exp = obs.exp
    return (exp is not None and exp.shaped and not exp.pending and exp.behaviours[0].kind in ("resolve", "return")
            and _resolved(obs))


def _projects(obs: Obs) -> bool:
    exp = _exp(obs) if _has(obs) else None
    if exp is None or not _shaped(obs) or exp.plan.output.fields is None:
        return False
    return (exp.records[0] or {}).get("rows") is not None or exp.first_bad_row is not None


@FAMILY.clause("JS-SHAPE", applies=_shaped, summary="non-array values and bad rows give an explicit shape error")
def js_shape(obs: Obs) -> Iterator[Violation]:
    """"Single-array shaping reports invalid result shapes explicitly." """
    yield from _record_violations("JS-SHAPE", obs)


@FAMILY.clause("JS-PROJECT", applies=_projects, summary="projected rows are fresh plain objects with exactly the fields, in order")
def js_project(obs: Obs) -> Iterator[Violation]:
    """"optional fields projects 1-3 declared properties" """
    yield from _record_violations("JS-PROJECT", obs)


@FAMILY.clause("JS-LIMIT", applies=lambda obs: _shaped(obs) and _exp(obs).plan.output.limit is not None,
               summary="`limit` takes the first N rows after projection")
def js_limit(obs: Obs) -> Iterator[Violation]:
    """"optional limit takes the first 0-100 rows. Projection precedes the limit." """
    yield from _record_violations("JS-LIMIT", obs)


@FAMILY.clause("JS-ORDER", applies=_has, summary="invocations start in call order")
def js_order(obs: Obs) -> Iterator[Violation]:
    """"serial mode catches each call's failure and continues in mention order"

    Calls start in plan order, in every mode."""
    order = [call for _, call, _ in _trace(obs).starts if call >= 0]
    if order != sorted(order):
        yield Violation(clause="JS-ORDER", message=f"calls started in the order {order}, not in plan order",
                        expected=sorted(order), actual=order, kind="start-order")
        return
    yield from _record_violations("JS-ORDER", obs)


@FAMILY.clause("JS-ESCAPE", applies=lambda obs: _has(obs) and not _exp(obs).tame,
               summary="adversarial names and values parse and reach tools exactly")
def js_escape(obs: Obs) -> Iterator[Violation]:
    """"The compiler escapes names and values mechanically."

    On an adversarial plan the js parses and every tool receives exactly the plan's names and values."""
    twin = obs.twin
    run = _run(obs)
    if run.get("compile") is not None:
        if twin is None or twin["parses"]:
            yield Violation(
                clause="JS-ESCAPE", kind="parse",
                message=f"{run['compile']} compiling the js of a plan with adversarial names or values"
                + (" (its tame twin parses)" if twin else ""),
            )
        return
    if twin is None or twin["argsOk"]:  # else the twin's args go wrong too: JS-CALLS reports it
        yield from _wrong_args("JS-ESCAPE", obs)


@FAMILY.clause("JS-PURE", applies=_has, summary="no global or built-in is added, removed or changed")
def js_pure(obs: Obs) -> Iterator[Violation]:
    """"an async-function body intended for a host exposing tools[name](args)" (DESIGN §4: the body may
    use only tools and standard built-ins; it must not write globals or touch built-in prototypes)"""
    run = _run(obs)
    if "harness" in run:
        yield Violation(clause="JS-PURE", kind="harness",
                        message=f"the body changed built-ins the kit relies on after it ran ({run['harness']})")
        return
    changes = run.get("purity") or ()
    if changes:
        more = f" and {len(changes) - 3} more" if len(changes) > 3 else ""
        yield Violation(clause="JS-PURE", message="; ".join(changes[:3]) + more, actual=list(changes), kind="changed")


def escape_suspect(obs: Obs) -> bool:
    """The js failed to parse or delivered wrong arguments: the tame twin tells whose fault it is."""
    run = _run(obs)
    return run.get("compile") is not None or any(not inv["argsOk"] for inv in run.get("invocations", ()))


def missed_a_bad_row_past_the_limit(obs: Obs) -> bool:
    """A shaped call's record says ok although a row past the limit breaks the shape (JS-LIMIT's probe)."""
    facts = first_record(obs)
    return obs.exp is not None and obs.exp.shaped and facts is not None and missed_past_limit(obs.exp, facts)
