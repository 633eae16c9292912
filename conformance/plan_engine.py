"""Judging plan cases: send them to the IUT, observe, let the registry judge, and in the pipeline role judge
each valid plan's ``js`` in V8 under the JS clauses.

A case may carry companion requests, sent in the same batch: a PL-INVARIANT case's untransformed request,
and an at-limit case's 127-token twin (IN-LENGTH). The case is judged once all its answers are in; if any
of them is unusable the case is errored.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from conformance.adapters import Adapter, Errored
from conformance.cases import CompileCase
from conformance.engine import CompilerJudge
from conformance.observations import PlanObservation
from conformance.plan_cases import PlanCase, at_limit_twin, catalog_of
from conformance.registry import judge
from conformance.results import CaseResult
from conformance.v8host import V8Host
from reference.lexer import lex
from strategies import Behaviour

PlanResult = CaseResult  # a judged plan case


class PlannerJudge:
    def __init__(self, adapter: Adapter, host: V8Host | None, *, role: str, tokenizer: str = "reference") -> None:
        self.adapter = adapter
        self.host = host
        self.role = role
        self.tokenizer = tokenizer

    def evaluate(self, cases: Sequence[PlanCase]) -> list[PlanResult]:
        if not cases:
            return []
        requests: list[dict[str, Any]] = []
        spans: list[tuple[int, bool, bool]] = []  # where each case's answers start; has a pair, has a twin
        for case in cases:
            twin = at_limit_twin(case) if self.tokenizer == "reference" else None
            spans.append((len(requests), case.pair is not None, twin is not None))
            requests.append(case.request())
            if case.pair is not None:
                requests.append(case.pair["request"])
            if twin is not None:
                requests.append(twin)
        answers = self.adapter.exchange(requests)
        results: list[PlanResult] = []
        js_jobs: list[tuple[int, CompileCase, dict[str, Any]]] = []
        for case, (at, paired, twinned) in zip(cases, spans):
            mine = answers[at : at + 1 + paired + twinned]
            answer = mine[0]
            base = mine[1] if paired else None
            twin = mine[-1] if twinned else None
            results.append(self._judge(case, answer, base, twin))
            if self.role == "pipeline" and isinstance(answer, dict) and results[-1].errored is None:
                job = _js_case(case, answer)
                if job is not None:
                    js_jobs.append((len(results) - 1, job, answer))
        if js_jobs and self.host is not None:
            judged = CompilerJudge(self.adapter, self.host).judge_answers(
                [job for _, job, _ in js_jobs], [{"js": a["js"]} for _, _, a in js_jobs], source="plan")
            for (k, _, _), js_result in zip(js_jobs, judged):
                if js_result is None:
                    continue  # its js was not run: past the run's time budget
                r = results[k]
                results[k] = PlanResult(
                    case=r.case, exercised=r.exercised + js_result.exercised, violations=r.violations + js_result.violations,
                    scores=r.scores, errored=r.errored, answer=r.answer,
                )
        return results

    def _judge(self, case: PlanCase, answer: Any, base: Any, twin: Any) -> PlanResult:
        errored = next((a for a in (answer, base, twin) if isinstance(a, Errored)), None)
        tokens = len(lex(case.instruction, max_tokens=10**9).tokens) if self.tokenizer == "own" else None
        obs = PlanObservation(
            case=case, answer=None if errored else answer, role=self.role, tokenizer=self.tokenizer,
            catalog=catalog_of(case), twin=None if errored else twin, base=None if errored else base, tokens=tokens,
        )
        verdict = judge("plan", obs, judged=errored is None)
        return PlanResult(case=case, exercised=verdict.exercised, violations=verdict.violations, scores=verdict.scores,
                          errored=errored, answer=obs.answer)


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
