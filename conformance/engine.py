"""Judging compile cases: send them to the IUT, run the JS in V8, apply every check.

The engine knows nothing of Hypothesis or reports: it turns cases into :class:`CaseResult` records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from conformance.adapters import Adapter, Errored
from conformance.cases import CompileCase, Expectation, limit_past_bad_row, exercised, expect, tame_twin
from conformance.checks.compiler import co_validate, judge_js, missed_past_limit, response_form
from conformance.v8host import V8Host
from reference.violations import Violation


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    """One judged case (compile, plan, stream or re-send): the clauses it exercised, what broke them,
    or why it errored; ``scores`` are its contributions to the scored clauses."""

    case: Any
    exercised: tuple[str, ...]
    violations: tuple[Violation, ...] = ()
    errored: Errored | None = None
    answer: dict[str, Any] | None = None
    scores: tuple[Any, ...] = ()

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

    def evaluate(
        self, cases: Sequence[CompileCase], *, purity: bool = True, confirm: bool = True
    ) -> list[CaseResult]:
        """Judge ``cases`` as one batch. A case that fails in the shared V8 context is judged again
        alone in a fresh one, whose verdict counts. ``purity=False`` skips the batch's built-in
        snapshot, and ``confirm=False`` the alone re-runs: verdicts are then provisional, which is
        what shrinking a known failure needs (its final case is confirmed by a normal judgement)."""
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
        observations = self.host.run_batch([exp.spec for _, exp, _ in jobs], purity=purity)
        for (i, exp, found), obs in zip(jobs, observations):
            violations = judge_js(exp, obs)
            if violations and confirm and not obs.get("alone"):
                obs = self.host.run_alone(exp.spec)
                violations = judge_js(exp, obs)
            if violations and not exp.tame and _escape_suspect(obs):
                _learn(obs, "twin", self._twin(cases[i]))
                violations = judge_js(exp, obs)
            if violations and _missed_past_limit(exp, obs):
                _learn(obs, "caught_inside_limit", self._caught_inside_limit(cases[i], exp))
                violations = judge_js(exp, obs)
            results[i] = CaseResult(
                case=cases[i],
                exercised=exercised(cases[i], exp),
                violations=tuple(found + violations),
                answer=answers[i] if isinstance(answers[i], dict) else None,
            )
        return [r for r in results if r is not None]

    def _twin(self, case: CompileCase) -> dict[str, bool] | None:
        """Whether the tame twin of ``case`` parses and gets its args through (None: no usable answer)."""
        twin = tame_twin(case)
        (answer,) = self.adapter.exchange([twin.request()])
        if isinstance(answer, Errored) or not isinstance(answer.get("js"), str):
            return None
        obs = self.host.run_alone(expect(twin, answer["js"]).spec)
        if "limit" in obs or "harness" in obs:
            return None
        return {
            "parses": obs.get("compile") is None,
            "argsOk": all(inv["argsOk"] and inv["argc"] >= 1 for inv in obs.get("invocations", ())),
        }


    def _caught_inside_limit(self, case: CompileCase, exp: Expectation) -> bool | None:
        """With the limit raised over the bad row, does the implementation's js report the shape
        error? (None: no usable answer.) Yes means the row was missed only because the limit came
        before projection (JS-LIMIT); no means the row check itself is wrong (JS-SHAPE)."""
        assert exp.first_bad_row is not None
        probe = limit_past_bad_row(case, exp.first_bad_row)
        (answer,) = self.adapter.exchange([probe.request()])
        if isinstance(answer, Errored) or not isinstance(answer.get("js"), str):
            return None
        probe_exp = expect(probe, answer["js"])
        obs = self.host.run_alone(probe_exp.spec)
        return not [v for v in judge_js(probe_exp, obs) if v.clause in ("JS-SHAPE", "JS-LIMIT")]


def _learn(obs: dict[str, Any], key: str, value: Any) -> None:
    """Add what a probe found to an observation, dropping what the checks derived from it before."""
    obs[key] = value
    for derived in [k for k in obs if k.startswith("_")]:
        del obs[derived]


def _missed_past_limit(exp: Expectation, obs: dict[str, Any]) -> bool:
    result = obs.get("result") or {}
    records = result.get("records") or ([result["record"]] if "record" in result else [])
    return exp.shaped and bool(records) and missed_past_limit(exp, records[0])


def _escape_suspect(obs: dict[str, Any]) -> bool:
    return obs.get("compile") is not None or any(not inv["argsOk"] for inv in obs.get("invocations", ()))
