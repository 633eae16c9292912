"""The Meaning clauses: ``PL-OPAQUE``, ``PL-INVARIANT``, ``PL-DETERMINISM``, and the scored ``PL-ACCURACY``
and ``PL-REJECT``, which add :class:`~conformance.registry.Score` records instead of violations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.checks.plan import answered_plan
from conformance.observations import AgainObservation, PlanObservation
from conformance.plan_cases import transform_plan
from conformance.registry import Family, Metric, Score
from reference import jsonio
from reference.jsonio import json_equal
from reference.lexer import lex
from reference.violations import Violation

FAMILY = Family("meaning", order=50, subject="plan", roles=("planner", "pipeline"))


def string_values(instruction: str) -> set[str] | None:
    """The values of the instruction's string tokens (``None`` if it does not lex cleanly)."""
    lexed = lex(instruction, max_tokens=10**6)
    if not lexed.ok:
        return None
    return {str(t.value) for t in lexed.tokens if t.kind == "string"}


@FAMILY.clause("PL-OPAQUE", applies=answered_plan, summary="string values are quoted values, code unit for code unit")
def pl_opaque(obs: PlanObservation) -> Iterator[Violation]:
    """"Quoted values use JSON string syntax and remain opaque." Every string argument value is, code unit
    for code unit, the value of one of the instruction's string tokens."""
    assert obs.answer is not None
    plan = obs.answer["plan"]
    values = string_values(obs.case.instruction)
    if values is None or not isinstance(plan, dict) or not isinstance(plan.get("calls"), list):
        return
    for k, call in enumerate(plan["calls"]):
        args = call.get("args") if isinstance(call, dict) else None
        if not isinstance(args, dict):
            continue
        for name, value in args.items():
            if isinstance(value, str) and value not in values:
                yield Violation(
                    clause="PL-OPAQUE", kind="not-quoted",
                    message=f"calls[{k}].args.{name} is not the value of any quoted string of the instruction",
                    expected=f"one of {jsonio.dumps(sorted(values))[:300]}",
                    actual=jsonio.dumps(value)[:200],
                )
                return


@FAMILY.clause("PL-INVARIANT", applies=lambda obs: obs.case.pair is not None,
               summary="invariance under catalog permutation, value substitution and consistent renaming")
def pl_invariant(obs: PlanObservation) -> Iterator[Violation]:
    """"`instruction`: an English string explicitly naming catalog tools and arguments": the answer does
    not change with catalog order, quoted content, or a consistent renaming of tools and arguments (the
    transformed request's answer is the base answer transformed)."""
    answer, base = obs.answer, obs.base
    if answer is None or base is None:
        return
    transform = obs.case.pair["transform"]
    base_diag, diag = "diagnostic" in base, "diagnostic" in answer
    if base_diag and diag:
        return
    if base_diag != diag:
        yield Violation(
            clause="PL-INVARIANT", kind=f"{transform['kind']}-changes-verdict",
            message=f"after a {transform['kind']} transform one request got a plan and the other a diagnostic",
            expected=jsonio.dumps(base)[:300],
            actual=jsonio.dumps(answer)[:300],
        )
        return
    want = transform_plan(base.get("plan"), transform)
    if not json_equal(want, answer.get("plan")):
        yield Violation(
            clause="PL-INVARIANT", kind=f"{transform['kind']}-changes-plan",
            message=f"after a {transform['kind']} transform the plan is not the transformed plan",
            expected=jsonio.dumps(want)[:300],
            actual=jsonio.dumps(answer.get("plan"))[:300],
        )


@FAMILY.clause("PL-DETERMINISM", subject="again", roles=("compiler", "planner", "pipeline"),
               summary="the same request gets the same response")
def pl_determinism(obs: AgainObservation) -> Iterator[Violation]:
    """"This describes supported structures, not a guarantee that English intent will be recognized
    correctly." The same request gets the same answer, wherever it is sent."""
    first, again = obs.first, obs.answer
    if again is None:
        return
    same = True
    if "diagnostic" in first or "diagnostic" in again:
        same = ("diagnostic" in first) == ("diagnostic" in again)
    else:
        if "plan" in first or "plan" in again:
            same = json_equal(first.get("plan"), again.get("plan"))
        if same and ("js" in first or "js" in again):
            same = first.get("js") == again.get("js")
    if not same:
        yield Violation(clause="PL-DETERMINISM", message="the same request got a different answer when sent again",
                        expected=jsonio.dumps(first)[:300], actual=jsonio.dumps(again)[:300], kind="different")


def _scored(obs: PlanObservation) -> bool:
    """Scored clauses count supported and unsupported requests, except, under ``--tokenizer own``, those
    at or over 128 reference tokens (SPEC.md IN-LENGTH)."""
    return obs.catalog is not None and not (obs.tokenizer == "own" and (obs.tokens or 0) >= 128)


def plan_family(plan: Any) -> str:
    from strategies._internal.instructions import plan_family_json

    return plan_family_json(plan)


@FAMILY.clause("PL-ACCURACY", applies=lambda obs: obs.case.expected_plan is not None and _scored(obs),
               metrics=(Metric(name="accuracy", key="PL-ACCURACY", bound="at least", default=0.995, per_family=True,
                               draws="supported"),),
               summary="exact-match rate on generated supported instructions")
def pl_accuracy(obs: PlanObservation) -> Iterator[Score]:
    """"Valid plans can be semantically wrong even when schema checks pass." A supported instruction's
    answer is an exact match when it is a plan equal to the known plan."""
    answer = obs.answer
    if answer is None:
        return
    hit = "plan" in answer and "diagnostic" not in answer and json_equal(answer["plan"], obs.case.expected_plan)
    yield Score(clause="PL-ACCURACY", metric="accuracy", family=plan_family(obs.case.expected_plan), ok=hit,
                axes=getattr(obs.case, "axes", ()))


@FAMILY.clause("PL-REJECT", applies=lambda obs: (obs.case.expected_clause == "PL-REJECT" or obs.case.expected_plan is not None)
               and _scored(obs),
               metrics=(Metric(name="recall", key="PL-REJECT:recall", bound="at least", default=0.97, draws="unsupported"),
                        Metric(name="false-diagnosis", key="PL-REJECT:false-diagnosis", bound="at most", default=0.01,
                               draws="supported")),
               summary="unsupported requests diagnosed; supported ones rarely diagnosed")
def pl_reject(obs: PlanObservation) -> Iterator[Score]:
    """"Dependencies, mixed serial/parallel groups, conditions, retries, loops and arbitrary code generation
    are unsupported." Recall over unsupported requests; false diagnoses of supported ones."""
    answer = obs.answer
    if answer is None:
        return
    if obs.case.expected_clause == "PL-REJECT":
        d = answer.get("diagnostic")
        diagnosed = set(answer) == {"diagnostic"} and isinstance(d, str) and bool(d)
        yield Score(clause="PL-REJECT", metric="recall", family=obs.case.family, ok=diagnosed,
                    axes=getattr(obs.case, "axes", ()))
    else:
        yield Score(clause="PL-REJECT", metric="false-diagnosis", family=plan_family(obs.case.expected_plan),
                    ok="diagnostic" in answer, axes=getattr(obs.case, "axes", ()))
