"""The planner checks bite: every faulty planner is flagged under its clause, and the reference is not.

A fixed set of plan cases is drawn once (seeded) with enough of every kind, and each faulty planner is
judged on all of them in process, like ``certify`` does; PL-DETERMINISM re-sends a sample. The stream
faults run as subprocesses through the stream probe. One faulty planner goes through the whole CLI.
"""

from __future__ import annotations

import random
import shlex
import subprocess
import sys

import pytest
from hypothesis import strategies as st

from conformance.adapters import PythonAdapter
from conformance.certify import PROFILES, Run, determinism
from conformance.registry import role_clauses
from conformance.plan_cases import (
    PlanCase,
    adversarial_cases,
    invalid_catalog_cases,
    invariant_cases,
    sample_plan_cases,
    supported_cases,
    unsupported_cases,
)
from conformance.plan_engine import PlannerJudge
from conformance.stream import probe, stream_cases
from strategies import invalid_catalogs
from tests.conftest import ROOT
from tests.faulty.planners import CLAUSE_OF, FAULTY, STREAM_FAULTS

CATALOG_CLAUSES = ("IN-COUNT", "IN-KEYS", "IN-NAME", "IN-UNIQUE", "IN-ARGS", "IN-REQUIRED", "IN-RETURNS")


def _draw(strategy: st.SearchStrategy[PlanCase], n: int, key: int) -> list[PlanCase]:
    from conformance.search import drawn

    return drawn(strategy, n, seed_value=key)


@pytest.fixture(scope="module")
def cases() -> list[PlanCase]:
    # Hypothesis's draws depend on the constants of the modules a process has loaded (so on which tests
    # share this xdist worker): a sampled part, drawn from random.Random alone, keeps every kind of case
    # in the set whatever the process holds
    out = sample_plan_cases(random.Random(5), 300)
    out += _draw(supported_cases(), 220, 1) + _draw(unsupported_cases(), 120, 2)
    out += _draw(adversarial_cases(), 80, 3) + _draw(invariant_cases(), 90, 4)
    for k, clause in enumerate(CATALOG_CLAUSES):
        raw = _draw(invalid_catalogs(clause=clause), 4, 10 + k)
        out += [PlanCase(instruction="call list_users", tools=r, expect={"diagnostic": c}, family=c) for r, c in raw]
    return out


def _run(function: object, cases: list[PlanCase]) -> Run:
    adapter = PythonAdapter.of(function, "faulty")  # type: ignore[arg-type]
    judge = PlannerJudge(adapter, None, role="planner")
    run = Run(role="planner", profile=PROFILES["quick"], seed=0, clauses=role_clauses("planner"))
    answered = []
    for k in range(0, len(cases), 100):
        for result in judge.evaluate(cases[k : k + 100]):
            run.record(result)
            if result.answer is not None:
                answered.append(result)
    for result in determinism(adapter, None, [(r.case, r.answer) for r in answered], role="planner", seed_value=0):
        run.record(result)
    return run


def test_the_case_set_exercises_every_planner_clause(cases: list[PlanCase]) -> None:
    from reference.cli import plan_line

    run = _run(plan_line, cases)
    for cid in role_clauses("planner"):
        if cid.startswith("CLI-"):
            continue
        assert run.tallies[cid].cases > 0, cid


def test_the_reference_planner_passes_every_planner_clause(cases: list[PlanCase]) -> None:
    import time

    from conformance.certify import settle
    from reference.cli import plan_line

    run = _run(plan_line, cases)
    # as certify does: a scored rate this set leaves undecided (its 95% interval holds the threshold) is
    # judged on more cases of its kind, drawn independently (a planner at 0.997 misses 0.995 on some
    # fixed sets of a few hundred cases)
    judge = PlannerJudge(PythonAdapter.of(plan_line, "reference"), None, role="planner")  # type: ignore[arg-type]
    settle(run, judge.evaluate, profile=PROFILES["quick"], seed_value=0, deadline=time.monotonic() + 600)
    for cid in role_clauses("planner"):
        if cid.startswith("CLI-"):
            continue
        tally = run.tallies[cid]
        assert run.status(cid) == "passed", (cid, tally.first_failure, run.metrics(cid) if cid.startswith("PL-AC") else None)


@pytest.mark.parametrize("name", sorted(FAULTY))
def test_each_faulty_planner_is_caught_under_its_clause(name: str, cases: list[PlanCase]) -> None:
    run = _run(FAULTY[name], cases)
    clause = CLAUSE_OF[name]
    assert run.status(clause) == "failed", (name, clause, {c: run.status(c) for c in role_clauses("planner")})


def test_a_planner_that_refuses_everything_scores_badly(cases: list[PlanCase]) -> None:
    run = _run(FAULTY["refuses-everything"], cases)
    metrics = run.metrics("PL-REJECT")
    assert metrics["recall"][0] == 1.0  # it does refuse every unsupported request...
    assert metrics["false-diagnosis"][0] == 1.0 and not metrics["false-diagnosis"][2]  # ...and every supported one
    assert run.status("PL-ACCURACY") == "failed"


@pytest.mark.parametrize("name", STREAM_FAULTS)
def test_stream_faults_are_caught(name: str) -> None:
    command = f"{sys.executable} -m tests.faulty.planners {name}"
    results = [probe(command, case, timeout=8.0) for case in stream_cases("planner", seed=0, count=0)]
    if name == "crashes-on-bad-records":
        assert any(r.errored is not None for r in results)
        assert not any(r.violations for r in results)  # a crash is errored, never a pass or a failure
        return
    assert any(v.clause == CLAUSE_OF[name] for r in results for v in r.violations), results


def test_a_line_over_the_limit_in_a_stream_probe_is_errored_as_what_it_is() -> None:
    from conformance.process import MAX_LINE_BYTES

    # answers every request, the third with a line over the limit of a response: errored, and said so (the
    # line is not "not JSON", and it is no stream fault)
    code = ("import sys\nfor k, line in enumerate(sys.stdin):\n"
            f"    print('{{\"diagnostic\": \"' + ('x' * {MAX_LINE_BYTES + 10} if k == 2 else 'no') + '\"}}', flush=True)")
    command = f"{sys.executable} -c {shlex.quote(code)}"
    case = stream_cases("planner", seed=0, count=1)[0]
    result = probe(command, case, timeout=8.0)
    assert result.errored is not None and not result.violations, result
    assert result.errored.reason.startswith("response 3: a line of ") and "over the" in result.errored.reason, result


def test_the_reference_plan_command_passes_the_stream_probes() -> None:
    command = f"{ROOT / '.venv/bin/codemode'} plan"
    for case in stream_cases("planner", seed=1, count=2):
        result = probe(command, case, timeout=20.0)
        assert result.errored is None and not result.violations, result


def test_a_planner_weak_in_one_family_fails_by_that_family_though_its_overall_rate_meets_the_threshold(
        cases: list[PlanCase]) -> None:
    # under a threshold of 0.95 a planner that drops a call's shaping about three times in twenty meets the
    # rate overall (shaping is a fifth of supported requests) but not in its shaping family, judged again on
    # cases drawn apart; the reports say which family, and show one of its misses
    import time

    from conformance.certify import settle
    from conformance.registry import clause
    from conformance.report import json_report, text_report

    accuracy = clause("PL-ACCURACY").metrics[0]
    run = _run(FAULTY["weak-shaping"], cases)
    run.thresholds[accuracy.key] = 0.95
    judge = PlannerJudge(PythonAdapter.of(FAULTY["weak-shaping"], "weak"), None, role="planner")  # type: ignore[arg-type]
    settle(run, judge.evaluate, profile=PROFILES["quick"], seed_value=0, deadline=time.monotonic() + 600)
    assert run.status("PL-ACCURACY") == "failed" and run.failing_families(accuracy) == ["shaping"]
    assert run.metrics("PL-ACCURACY")["accuracy"][0] >= 0.95
    report = json_report(run, implementation="weak", target="python")
    record = next(r for r in report["clauses"] if r["clause"] == "PL-ACCURACY")["metrics"]["accuracy"]
    assert record["failing_families"] == ["shaping"] and record["example_miss"]["family"] == "shaping"
    assert "family shaping misses it on its own" in text_report(report)
