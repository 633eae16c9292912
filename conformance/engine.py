"""Judging compile cases: send them to the IUT, run the JS in V8, apply every check.

The engine knows nothing of Hypothesis or reports: it turns cases into :class:`CaseResult` records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from conformance.adapters import Adapter, Errored
from conformance.cases import CompileCase, Expectation, exercised, expect
from conformance.checks.compiler import co_validate, judge_js, response_form
from conformance.v8host import V8Host
from reference.violations import Violation


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    case: CompileCase
    exercised: tuple[str, ...]
    violations: tuple[Violation, ...] = ()
    errored: Errored | None = None
    answer: dict[str, Any] | None = None

    @property
    def outcome(self) -> str:
        if self.errored is not None:
            return "errored"
        return "failed" if self.violations else "passed"


class CompilerJudge:
    """Certifies compile answers: ``CO-VALIDATE`` on the response, the ``JS-*`` clauses in V8."""

    def __init__(self, adapter: Adapter, host: V8Host) -> None:
        self.adapter = adapter
        self.host = host

    def evaluate(self, cases: Sequence[CompileCase], *, sample_alone: bool = False) -> list[CaseResult]:
        """Judge ``cases`` as one batch. A case that fails in the hardened batch is judged again alone
        in a fresh context, whose verdict counts; with ``sample_alone`` the first case is too, so an
        impure body that swallows its own errors is still caught."""
        if not cases:
            return []
        answers = self.adapter.exchange([c.request() for c in cases])
        results: list[CaseResult | None] = [None] * len(cases)
        jobs: list[tuple[int, Expectation, list[Violation]]] = []
        for i, (case, answer) in enumerate(zip(cases, answers)):
            if isinstance(answer, Errored):
                exp = expect(case, "") if case.breaks is None else None
                results[i] = CaseResult(case=case, exercised=exercised(case, exp), errored=answer)
                continue
            found = [*co_validate(case, answer), *response_form(case, answer)]
            js = answer.get("js")
            if case.breaks is None and not found and isinstance(js, str):
                jobs.append((i, expect(case, js), found))
            else:
                results[i] = CaseResult(
                    case=case, exercised=exercised(case, None), violations=tuple(found), answer=answer
                )
        observations = self.host.run_batch([exp.spec for _, exp, _ in jobs])
        for k, ((i, exp, found), obs) in enumerate(zip(jobs, observations)):
            violations = judge_js(exp, obs)
            if not obs.get("alone") and (violations or (sample_alone and k == 0)):
                obs = self.host.run_alone(exp.spec)
                violations = judge_js(exp, obs)
            results[i] = CaseResult(
                case=cases[i],
                exercised=exercised(cases[i], exp),
                violations=tuple(found + violations),
                answer=answers[i] if isinstance(answers[i], dict) else None,
            )
        return [r for r in results if r is not None]
