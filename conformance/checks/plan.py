"""The Plan clauses: a plan response is exactly a plan (with ``js`` in the pipeline role) or a diagnostic
(``PL-RESPONSE``), and every plan answered is valid for the request's catalog (``PL-SCHEMA`` to
``PL-SHAPE``, judged by ``reference.plan.validate_plan``, once per answer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.observations import PlanObservation
from conformance.registry import Family
from reference import jsonio
from reference.plan import validate_plan
from reference.violations import Violation

FAMILY = Family("plan", order=40, subject="plan", roles=("planner", "pipeline"))


def response_form(answer: dict[str, Any], *, role: str) -> list[Violation]:
    """Exactly ``{"plan"}`` (``{"plan", "js"}`` in the pipeline role) or ``{"diagnostic"}``."""
    keys = set(answer)
    if keys == {"diagnostic"}:
        d = answer["diagnostic"]
        if isinstance(d, str) and d:
            return []
        return [Violation(clause="PL-RESPONSE", message=f"the diagnostic is {'empty' if d == '' else 'not a string'}",
                          expected="a non-empty string", actual=jsonio.dumps(d)[:200], kind="diagnostic")]
    want = {"plan", "js"} if role == "pipeline" else {"plan"}
    if keys == want and (role != "pipeline" or isinstance(answer["js"], str)):
        return []
    if role == "pipeline" and keys == want:
        return [Violation(clause="PL-RESPONSE", message="js is not a string", actual=jsonio.dumps(answer["js"])[:200],
                          kind="js")]
    return [Violation(
        clause="PL-RESPONSE",
        message=f"the answer has members {sorted(keys)}",
        expected=f"exactly {sorted(want)} or ['diagnostic']",
        actual=jsonio.dumps(answer)[:300],
        kind="members",
    )]


@FAMILY.clause("PL-RESPONSE", summary="a plan request gets exactly a plan (with `js` in the pipeline role) or a diagnostic")
def pl_response(obs: PlanObservation) -> Iterator[Violation]:
    """"Rejected requests return a `diagnostic` string instead of a plan." Exactly a plan (with js in the
    pipeline role) or a non-empty diagnostic."""
    if obs.answer is not None:
        yield from response_form(obs.answer, role=obs.role)


def answered_plan(obs: PlanObservation) -> bool:
    """A plan answered to a request with a valid catalog (what PL-SCHEMA to PL-OPAQUE judge)."""
    return obs.catalog is not None and obs.answer is not None and "plan" in obs.answer


def plan_violations(obs: PlanObservation) -> list[Violation]:
    """The answered plan's violations of PL-SCHEMA to PL-SHAPE (one validation, memoized)."""
    found = obs.memo.get("plan")
    if found is None:
        assert obs.answer is not None
        found = obs.memo["plan"] = validate_plan(obs.answer["plan"], obs.catalog)
    return found


def _plan_clause(clause: str, summary: str, contract: str) -> None:
    def check(obs: PlanObservation) -> Iterator[Violation]:
        return (v for v in plan_violations(obs) if v.clause == clause)

    check.__name__ = clause.lower().replace("-", "_")
    check.__doc__ = f"{contract} Judged on every plan answered, against the request's catalog."
    FAMILY.clause(clause, applies=answered_plan, summary=summary)(check)


_plan_clause("PL-SCHEMA", "a plan has exactly the plan schema",
             '"A successful response contains a `plan`"; its schema is reference/plan.schema.json.')
_plan_clause("PL-MODE", "single has 1 call, sequential and parallel 2-3",
             '"Supported schedules are one call, or 2-3 independent calls sequentially or in parallel."')
_plan_clause("PL-TOOL", "every call names a catalog tool",
             '"The model does not discover tools or interpret free-form tool descriptions."')
_plan_clause("PL-ARGS", "args declared, required present, types match, numbers exact",
             '"Required argument names must exist in the schema."; args are declared, typed, exact.')
_plan_clause("PL-SHAPE", "`fields` and `limit` only for a single array call, within bounds",
             '"For one array-returning call only, optional `fields` projects 1-3 declared properties"')
