"""The Input clauses: ``IN-LENGTH``, ``IN-STRING``, ``IN-NUMBER``, judged on plan requests with valid catalogs."""

from __future__ import annotations

from collections.abc import Iterator

from conformance.checks.catalog import refused
from conformance.observations import PlanObservation
from conformance.registry import Family
from reference import jsonio
from reference.violations import Violation

FAMILY = Family("input", order=30, subject="plan", roles=("planner", "pipeline"))
OWN_TOKENIZER_LIMIT = 256


def _length_applies(obs: PlanObservation) -> bool:
    if obs.catalog is None:
        return False
    if obs.tokenizer == "own":  # only instructions over 256 reference tokens are judged
        return obs.case.expected_clause == "IN-LENGTH" and (obs.tokens or 0) > OWN_TOKENIZER_LIMIT
    return obs.case.expected_clause == "IN-LENGTH" or obs.case.family == "at-limit"


@FAMILY.clause("IN-LENGTH", applies=_length_applies,
               summary="over 128 tokens diagnosed, never truncated; exactly 128 not diagnosed for its length")
def in_length(obs: PlanObservation) -> Iterator[Violation]:
    """"The frontend diagnoses inputs over 128 tokens rather than truncating them." Over the limit: a
    diagnostic, whatever the first 128 tokens ask. At exactly 128 tokens: a diagnostic that its 127-token
    twin (the answer to :func:`conformance.plan_cases.at_limit_twin`) does not get, since only the length
    told them apart; a request diagnosed at 127 tokens too was refused for its content, which PL-REJECT's
    false-diagnosis rate counts."""
    answer = obs.answer
    if obs.case.expected_clause == "IN-LENGTH":
        yield from refused("IN-LENGTH", "an instruction over the token limit was not diagnosed (was it truncated?)",
                           answer, kind="over-limit-planned")
    elif answer is not None and "diagnostic" in answer and obs.twin is not None and "diagnostic" not in obs.twin:
        yield Violation(clause="IN-LENGTH", kind="at-limit-diagnosed",
                        message="an instruction of exactly 128 tokens was diagnosed, and the same instruction less its"
                        " last token (127 tokens) was not; 128 is within the limit",
                        expected='{"plan": ...}', actual=jsonio.dumps(answer)[:300])


@FAMILY.clause("IN-STRING", applies=lambda obs: obs.catalog is not None and obs.case.expected_clause == "IN-STRING",
               summary="quoted values that are not valid JSON strings are diagnosed")
def in_string(obs: PlanObservation) -> Iterator[Violation]:
    """"Quoted values use JSON string syntax and remain opaque." A malformed quoted string gets a
    diagnostic."""
    return refused("IN-STRING", "an instruction holding a malformed quoted string was not diagnosed", obs.answer)


@FAMILY.clause("IN-NUMBER", applies=lambda obs: obs.catalog is not None and obs.case.expected_clause == "IN-NUMBER",
               summary="numbers that are not finite and exact are diagnosed")
def in_number(obs: PlanObservation) -> Iterator[Violation]:
    """"Numbers must be finite and compatible with exact JavaScript numeric handling." A number token
    that is not finite and exact gets a diagnostic."""
    return refused("IN-NUMBER", "an instruction holding a number that is not finite and exact was not diagnosed",
                   obs.answer)
