"""Judging compile cases: send them to the IUT, run the JS in V8, observe, and let the registry judge.

The engine knows nothing of Hypothesis or reports: it turns cases into
:class:`~conformance.observations.CompileObservation` records, runs every registered clause of the
``compile`` subject on them (``conformance.registry.judge``) and returns one
:class:`~conformance.results.CaseResult` per case. When a failure could be blamed on more than one clause
it asks the IUT one more question (the tame twin of an adversarial plan; the same plan with its limit
raised over a bad row) and judges the observation again with the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from conformance.adapters import Adapter, Errored
from conformance.cases import CompileCase, expect, limit_past_bad_row, tame_twin
from conformance.checks.js import escape_suspect, missed_a_bad_row_past_the_limit
from conformance.observations import CompileObservation, freeze
from conformance.registry import judge
from conformance.results import CaseResult
from conformance.v8host import V8Host

__all__ = ["CaseResult", "CompilerJudge"]


class CompilerJudge:
    """Certifies compile answers: ``CO-VALIDATE`` on the response, the ``JS-*`` clauses in V8."""

    def __init__(self, adapter: Adapter, host: V8Host) -> None:
        self.adapter = adapter
        self.host = host
        if getattr(adapter, "fence_check", False) is None:
            adapter.fence_check = self.is_fence  # type: ignore[attr-defined]

    def is_fence(self, nonce: str, js: str) -> bool:
        """Whether ``js`` runs the adapter's fence plan: it calls ``codemode_fence`` once with exactly
        ``{"nonce": nonce}`` (for a compiler whose js never spells a string value as written)."""
        from conformance.adapters import FENCE_TOOLS, fence_plan
        from strategies import Behaviour

        case = CompileCase(tools=FENCE_TOOLS, plan=fence_plan(nonce), behaviours=(Behaviour(kind="resolve", value=None),))
        run = self.host.run_alone(expect(case, js).spec)
        invocations = run.get("invocations", ())
        return len(invocations) == 1 and invocations[0]["call"] == 0 and bool(invocations[0]["argsOk"])

    def evaluate(self, cases: Sequence[CompileCase], *, purity: bool = True, confirm: bool = True) -> list[CaseResult]:
        """Judge ``cases`` as one batch. A case that fails in the shared V8 context is judged again
        alone in a fresh one, whose verdict counts. ``purity=False`` skips the batch's built-in
        snapshot, and ``confirm=False`` the alone re-runs: verdicts are then provisional, which is
        what shrinking a known failure needs (its final case is confirmed by a normal judgement)."""
        if not cases:
            return []
        answers = self.adapter.exchange([c.request() for c in cases])
        return [r for r in self.judge_answers(cases, answers, purity=purity, confirm=confirm) if r is not None]

    def judge_answers(
        self, cases: Sequence[CompileCase], answers: Sequence[Any], *, source: str = "compile", purity: bool = True,
        confirm: bool = True,
    ) -> list[CaseResult | None]:
        """Judge answers already given: to the compile requests of ``cases`` (``source="compile"``), or a
        pipeline's plan answers, each as ``{"js": ...}`` for the compile case of its plan (``"plan"``).
        One result per case, in order; ``None`` for a case past the run's time budget (not judged)."""
        results: list[CaseResult | None] = [None] * len(cases)
        jobs: list[tuple[int, CompileObservation]] = []
        for i, (case, answer) in enumerate(zip(cases, answers)):
            if isinstance(answer, Errored):
                exp = expect(case, "") if case.breaks is None else None
                obs = CompileObservation(case=case, answer=None, source=source, exp=exp)
                results[i] = self._result(obs, errored=answer)
            elif case.breaks is None and set(answer) == {"js"} and isinstance(answer["js"], str):
                jobs.append((i, CompileObservation(case=case, answer=answer, source=source, exp=expect(case, answer["js"]))))
            else:
                results[i] = self._result(CompileObservation(case=case, answer=answer, source=source))
        runs = self.host.run_batch([obs.exp.spec for _, obs in jobs], purity=purity)
        for (i, obs), run in zip(jobs, runs):
            if "unjudged" in run:
                continue  # past the run's time budget: left out, neither passed nor failed
            obs = replace(obs, run=freeze(run))
            verdict = judge("compile", obs)
            if verdict.violations and confirm and not run.get("alone"):
                obs = replace(obs, run=freeze(self.host.run_alone(obs.exp.spec)), memo={})
                verdict = judge("compile", obs)
            if verdict.violations and not obs.exp.tame and escape_suspect(obs):
                obs = replace(obs, twin=self._twin(obs.case), memo={})
                verdict = judge("compile", obs)
            if verdict.violations and missed_a_bad_row_past_the_limit(obs):
                obs = replace(obs, caught_inside_limit=self._caught_inside_limit(obs), memo={})
                verdict = judge("compile", obs)
            results[i] = CaseResult(case=obs.case, exercised=verdict.exercised, violations=verdict.violations,
                                    answer=obs.answer)
        return results

    @staticmethod
    def _result(obs: CompileObservation, *, errored: Errored | None = None) -> CaseResult:
        verdict = judge("compile", obs, judged=errored is None)
        return CaseResult(case=obs.case, exercised=verdict.exercised, violations=verdict.violations,
                          errored=errored, answer=obs.answer)

    def _twin(self, case: CompileCase) -> Any:
        """Whether the tame twin of ``case`` parses and gets its args through (None: no usable answer)."""
        twin = tame_twin(case)
        (answer,) = self.adapter.exchange([twin.request()])
        if isinstance(answer, Errored) or not isinstance(answer.get("js"), str):
            return None
        run = self.host.run_alone(expect(twin, answer["js"]).spec)
        if "limit" in run or "harness" in run:
            return None
        return freeze({
            "parses": run.get("compile") is None,
            "argsOk": all(inv["argsOk"] and inv["argc"] >= 1 for inv in run.get("invocations", ())),
        })

    def _caught_inside_limit(self, obs: CompileObservation) -> bool | None:
        """With the limit raised over the bad row, does the implementation's js report the shape
        error? (None: no usable answer.) Yes means the row was missed only because the limit came
        before projection (JS-LIMIT); no means the row check itself is wrong (JS-SHAPE)."""
        assert obs.exp is not None and obs.exp.first_bad_row is not None
        probe = limit_past_bad_row(obs.case, obs.exp.first_bad_row)
        (answer,) = self.adapter.exchange([probe.request()])
        if isinstance(answer, Errored) or not isinstance(answer.get("js"), str):
            return None
        exp = expect(probe, answer["js"])
        seen = CompileObservation(case=probe, answer=answer, exp=exp, run=freeze(self.host.run_alone(exp.spec)))
        return not [v for v in judge("compile", seen).violations if v.clause in ("JS-SHAPE", "JS-LIMIT")]
