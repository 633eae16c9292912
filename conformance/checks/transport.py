"""The Transport clauses, ``TR-*``: a streaming collector (the seed ``tool-registry-and-transports.md``),
judged on what it did with one stream of fragments (``conformance.collect`` pushes them and watches)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.observations import CollectObservation, thaw
from conformance.registry import Family
from reference.jsonio import MAX_SAFE_INTEGER, json_equal
from reference.violations import Violation

FAMILY = Family("transport", order=90, subject="collect", roles=("collector",))


def _result(obs: CollectObservation) -> dict[str, Any]:
    assert obs.answer is not None
    return thaw(obs.answer["result"])


def _rejected(obs: CollectObservation) -> bool:
    return "rejected" in _result(obs)


def _must_reject(cid: str, obs: CollectObservation, what: str) -> Iterator[Violation]:
    result = _result(obs)
    if "rejected" not in result:
        yield Violation(clause=cid, kind="accepted", message=f"accepted a stream with {what}: it gave"
                        f" {str(result)[:200]} instead of rejecting it", expected="rejected", actual=str(result)[:200])


def _breaks(rule: str) -> Any:
    return lambda obs: obs.case.breaks == rule


@FAMILY.clause("TR-ASSEMBLE", applies=lambda obs: obs.case.breaks in (None, "empty"),
               summary="a valid stream, split anywhere, gives its call or its text; nothing at all is rejected")
def tr_assemble(obs: CollectObservation) -> Iterator[Violation]:
    """"finish returns the result after protocol and input validation." Fragments split at any code unit
    (inside escapes, between surrogate halves, empty, one at a time, all at once) give the same call; a
    valid stream under an output limit is rejected only under TR-LIMIT."""
    result = _result(obs)
    if obs.case.breaks == "empty":
        yield from _must_reject("TR-ASSEMBLE", obs, "neither text nor a call")
        return
    if "rejected" in result:
        if obs.case.max_output_chars is None:  # under a limit, rejecting is TR-LIMIT's to judge
            yield Violation(clause="TR-ASSEMBLE", kind="rejected", message=f"rejected a valid stream: {result['rejected']}",
                            expected=str(obs.case.expect)[:200], actual=result["rejected"][:200])
    elif not (json_equal(result.get("call"), obs.case.expect.get("call")) and result.get("text") == obs.case.expect.get("text")):
        yield Violation(clause="TR-ASSEMBLE", kind="wrong-result", message=f"assembled {str(result)[:200]}",
                        expected=str(obs.case.expect)[:200], actual=str(result)[:200])


@FAMILY.clause("TR-COUNT", summary="outputChars is a non-negative safe integer at every reading, and its peak counts"
               " the UTF-16 units of text, names and arguments")
def tr_count(obs: CollectObservation) -> Iterator[Violation]:
    """"the value must be a non-negative safe integer, and NaN, Infinity, negative numbers, and fractions
    are rejected as protocol errors." Read after creation, after every push and after finish; "Diagnostics
    keep the peak of each valid observation; finish may release or normalize internal buffers", so a
    reading may fall, and the peak is what is judged."""
    assert obs.answer is not None
    counts = list(obs.answer["counts"])
    for k, value in enumerate(counts):
        ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SAFE_INTEGER
        if not ok:
            yield Violation(clause="TR-COUNT", kind="not-safe-integer", message=f"outputChars read {k + 1} was"
                            f" {thaw(value)!r}, not a non-negative safe integer")
            return
    if obs.case.breaks is None and not _rejected(obs) and counts and max(counts) != obs.case.output_chars:
        yield Violation(clause="TR-COUNT", kind="miscounted", expected=str(obs.case.output_chars), actual=str(max(counts)),
                        message=f"outputChars peaked at {max(counts)}; the stream holds {obs.case.output_chars}"
                        " UTF-16 units of text, names and arguments")


@FAMILY.clause("TR-LIMIT", applies=lambda obs: obs.case.max_output_chars is not None and obs.case.breaks in (
                   None, "output_limit"), summary="output past maxOutputChars is rejected; output within it is not")
def tr_limit(obs: CollectObservation) -> Iterator[Violation]:
    """"maxOutputChars can be explicitly set to Infinity, but that does not relax the collector counting
    contract." A stream that passes the limit is rejected; a valid one that meets it, exactly or with room,
    is not (what it gives is TR-ASSEMBLE's to judge)."""
    if obs.case.breaks == "output_limit":
        yield from _must_reject("TR-LIMIT", obs, f"more output than maxOutputChars {obs.case.max_output_chars}")
        return
    result = _result(obs)
    if "rejected" in result:
        yield Violation(clause="TR-LIMIT", kind="early", message=f"rejected a valid stream of {obs.case.output_chars}"
                        f" units under maxOutputChars {obs.case.max_output_chars}: {result['rejected']}")


@FAMILY.clause("TR-FRAGMENT", applies=_breaks("fragment_invalid"),
               summary="a fragment that is neither a string nor a well-formed delta is rejected")
def tr_fragment(obs: CollectObservation) -> Iterator[Violation]:
    """"A function fragment must be a non-array object with index 0; id, when provided, must be a
    non-empty string, and name and arguments, when provided, must be strings.\""""
    yield from _must_reject("TR-FRAGMENT", obs, "a fragment that is neither a string nor a well-formed delta")


@FAMILY.clause("TR-SINGLE", applies=_breaks("multiple_calls"), summary="a delta of a second call is rejected")
def tr_single(obs: CollectObservation) -> Iterator[Violation]:
    """"Conflicting IDs, multiple calls, unregistered tools, mixed body text, or incomplete arguments are
    rejected and no tool is executed." A delta whose index is not 0 is a second call."""
    yield from _must_reject("TR-SINGLE", obs, "a delta of another call (index not 0)")


@FAMILY.clause("TR-ID", applies=_breaks("id_conflict"), summary="deltas with conflicting ids are rejected")
def tr_id(obs: CollectObservation) -> Iterator[Violation]:
    """"Conflicting IDs ... are rejected and no tool is executed.\""""
    yield from _must_reject("TR-ID", obs, "two different call ids")


@FAMILY.clause("TR-MIXED", applies=_breaks("mixed_body"), summary="body text and a call in one answer are rejected")
def tr_mixed(obs: CollectObservation) -> Iterator[Violation]:
    """"mixed body text ... [is] rejected and no tool is executed.\""""
    yield from _must_reject("TR-MIXED", obs, "body text beside a call")


@FAMILY.clause("TR-TOOL", applies=_breaks("unknown_tool"), summary="a call of a tool outside the stage is rejected")
def tr_tool(obs: CollectObservation) -> Iterator[Violation]:
    """"unregistered tools ... are rejected and no tool is executed.\""""
    yield from _must_reject("TR-TOOL", obs, "a call of a tool the stage does not hold")


@FAMILY.clause("TR-ARGS", applies=_breaks("arguments_invalid"),
               summary="arguments cut short, not JSON, or rejected by the tool's parse are rejected")
def tr_args(obs: CollectObservation) -> Iterator[Violation]:
    """"incomplete arguments are rejected"; "inputSchema.parse parses arguments, and resolve constructs a
    domain result from the complete, validated input.\""""
    yield from _must_reject("TR-ARGS", obs, "arguments that are incomplete or invalid for the tool")


@FAMILY.clause("TR-RESOLVE", applies=lambda obs: "text" not in obs.case.expect,
               summary="a tool is resolved once, and only after the whole stream is validated")
def tr_resolve(obs: CollectObservation) -> Iterator[Violation]:
    """"typed selection only after full validation": a rejected stream resolves no tool; a valid call
    resolves its tool exactly once."""
    assert obs.answer is not None
    resolved = obs.answer["resolved"]
    if _rejected(obs) and resolved:
        yield Violation(clause="TR-RESOLVE", kind="resolved-rejected", message=f"resolved a tool {resolved} time(s)"
                        f" for a stream it rejected ({_result(obs)['rejected'][:120]})")
    elif not _rejected(obs) and "call" in _result(obs) and resolved != 1:
        yield Violation(clause="TR-RESOLVE", kind="resolve-count", message=f"resolved the tool {resolved} times for"
                        " one call", expected="1", actual=str(resolved))
