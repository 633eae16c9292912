"""Judging plan cases: send them to the IUT, apply the planner checks, and in the pipeline role run each
valid plan's ``js`` in V8 under the JS clauses.

A PL-INVARIANT case carries its untransformed request; both are sent in the same batch, and the pair is
judged once both answers are in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conformance.adapters import Adapter, Errored
from conformance.cases import CompileCase
from conformance.checks.planner import at_limit_twin, invariant_check, judge_answer
from conformance.engine import CaseResult, CompilerJudge
from conformance.plan_cases import PlanCase, catalog_of
from conformance.v8host import V8Host
from reference import jsonio
from strategies import Behaviour


PlanResult = CaseResult  # a judged plan case


class _Recorded:
    """An adapter that answers the compile requests of a pipeline's own plans with the ``js`` the IUT
    already gave, and sends anything else (the JS probes' extra requests) to the IUT."""

    def __init__(self, adapter: Adapter, answers: dict[str, dict[str, Any]]) -> None:
        self.adapter = adapter
        self.answers = answers
        self.description = adapter.description

    def exchange(self, requests: Sequence[dict[str, Any]]) -> list[Any]:
        out: list[Any] = [self.answers.get(jsonio.dumps(r)) for r in requests]
        todo = [k for k, a in enumerate(out) if a is None]
        if todo:
            for k, answer in zip(todo, self.adapter.exchange([requests[k] for k in todo])):
                out[k] = answer
        return out

    def close(self) -> None:  # pragma: no cover - the real adapter is closed by its owner
        pass


class PlannerJudge:
    def __init__(self, adapter: Adapter, host: V8Host | None, *, role: str, tokenizer: str = "reference") -> None:
        self.adapter = adapter
        self.host = host
        self.role = role
        self.tokenizer = tokenizer

    def evaluate(self, cases: Sequence[PlanCase]) -> list[PlanResult]:
        if not cases:
            return []
        # each case's request, then its companions: a PL-INVARIANT pair's untransformed request, and an
        # at-limit case's 127-token twin (IN-LENGTH)
        requests: list[dict[str, Any]] = []
        companions: list[tuple[bool, bool]] = []
        for case in cases:
            requests.append(case.request())
            twin = at_limit_twin(case) if self.tokenizer == "reference" else None
            companions.append((case.pair is not None, twin is not None))
            if case.pair is not None:
                requests.append(case.pair["request"])
            if twin is not None:
                requests.append(twin)
        answers = self.adapter.exchange(requests)
        results: list[PlanResult] = []
        js_jobs: list[tuple[int, CompileCase, dict[str, Any]]] = []
        at = 0
        for case, (paired, twinned) in zip(cases, companions):
            answer = answers[at]
            at += 1
            base = answers[at] if paired else None
            at += paired
            twin_answer = answers[at] if twinned else None
            at += twinned
            results.append(self._judge(case, answer, base, twin_answer))
            if self.role == "pipeline" and isinstance(answer, dict):
                job = _js_case(case, answer)
                if job is not None:
                    js_jobs.append((len(results) - 1, job, answer))
        if js_jobs and self.host is not None:
            recorded = _Recorded(self.adapter, {job.request_line(): {"js": a["js"]} for _, job, a in js_jobs})
            judged = CompilerJudge(recorded, self.host).evaluate([job for _, job, _ in js_jobs])
            for (k, _, _), js_result in zip(js_jobs, judged):
                r = results[k]
                js_clauses = tuple(c for c in js_result.exercised if c.startswith("JS-"))
                js_violations = tuple(v for v in js_result.violations if v.clause.startswith("JS-"))
                results[k] = PlanResult(
                    case=r.case, exercised=r.exercised + js_clauses, violations=r.violations + js_violations,
                    scores=r.scores, errored=r.errored, answer=r.answer,
                )
        return results

    def _judge(self, case: PlanCase, answer: Any, base: Any, twin: Any = None) -> PlanResult:
        if isinstance(answer, Errored):
            exercised = ["PL-RESPONSE"]
            if case.expected_clause:
                exercised.append(case.expected_clause)
            return PlanResult(case=case, exercised=tuple(exercised), errored=answer)
        violations, scores, exercised = judge_answer(case, answer, role=self.role, tokenizer=self.tokenizer, twin=twin)
        if case.pair is not None and isinstance(base, dict):
            exercised.append("PL-INVARIANT")
            violations += invariant_check(case, answer, base)
        return PlanResult(case=case, exercised=tuple(exercised), violations=tuple(violations), scores=tuple(scores), answer=answer)


def _js_case(case: PlanCase, answer: dict[str, Any]) -> CompileCase | None:
    """The compile case whose ``js`` is the pipeline's answer: the answered plan (when valid) with the
    case's behaviours, or with every call resolving ``null`` at once."""
    if set(answer) != {"plan", "js"} or not isinstance(answer["js"], str):
        return None
    catalog = catalog_of(case)
    if catalog is None:
        return None
    from reference.plan import Plan, validate_plan

    if validate_plan(answer["plan"], catalog):
        return None
    plan = Plan.from_json(answer["plan"], catalog)
    return CompileCase(tools=case.tools, plan=answer["plan"], behaviours=_behaviours(case, plan, catalog))


def _behaviours(case: PlanCase, plan: Any, catalog: Any) -> tuple[Behaviour, ...]:
    """What the mocked tools do, drawn from the case's id (so a replay sees the same): fulfilments after
    a few microtask turns, synchronous returns, rejections and throws; rows for a shaped call."""
    import random

    from strategies import Failure

    rng = random.Random(case.id)
    tool = catalog.tool(plan.calls[0].tool)
    shaped = plan.mode == "single" and tool is not None and tool.returns.kind == "array"
    props = tuple(plan.output.fields or (tool.returns.properties or () if tool else ()))
    out = []
    for k, _ in enumerate(plan.calls):
        kind = rng.choice(("resolve", "resolve", "resolve", "return", "reject", "throw"))
        delay = rng.randrange(4)
        if kind in ("reject", "throw"):
            out.append(Behaviour(kind=kind, delay=delay if kind == "reject" else 0, failure=Failure(message=f"failure {k}")))
            continue
        if shaped:
            value: Any = [{p: f"{p}{r}" for p in props} for r in range(rng.randrange(5))]
        else:
            value = rng.choice((None, k, f"value {k}", {"id": k}, [k, k + 1]))
        out.append(Behaviour(kind=kind, value=value, delay=delay if kind == "resolve" else 0))
    return tuple(out)
