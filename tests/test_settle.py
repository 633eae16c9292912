"""Settling: a scored rate whose 95% interval still holds its threshold after exploring is judged on more
cases of the kind it counts, until the interval is clear of the threshold or the rate has counted
``profile.settle`` times its cases; a rate already decided either way draws nothing.

The judge here is a stand-in that scores each case it is given with a seeded coin of a known bias, so a
test states exactly how good the "planner" is; one test certifies the reference in process, where the
cases are real.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from conformance.certify import PROFILES, certify_planner, settle
from conformance.plan_cases import sample_kinds
from conformance.registry import Score, clause, role_clauses
from conformance.report import json_report, text_report
from conformance.results import CaseResult, Run

ACCURACY = clause("PL-ACCURACY").metrics[0]
RECALL, FALSE = clause("PL-REJECT").metrics


class Coin:
    """Judges plan cases as a planner of known rates would be judged: a supported case is an exact match with
    probability ``accuracy`` (else wrongly diagnosed), an unsupported one is diagnosed with ``recall``."""

    def __init__(self, accuracy: float, recall: float = 1.0, seed: int = 0) -> None:
        self.accuracy, self.recall = accuracy, recall
        self.rng = random.Random(seed)
        self.kinds: list[str] = []

    def evaluate(self, cases: list[Any]) -> list[CaseResult]:
        out = []
        for case in cases:
            if case.expected_plan is not None:
                self.kinds.append("supported")
                hit = self.rng.random() < self.accuracy
                scores = (Score(clause="PL-ACCURACY", metric="accuracy", family="single", ok=hit),
                          Score(clause="PL-REJECT", metric="false-diagnosis", family="single", ok=not hit))
            else:
                self.kinds.append("unsupported")
                scores = (Score(clause="PL-REJECT", metric="recall", family="loop", ok=self.rng.random() < self.recall),)
            out.append(CaseResult(case=case, exercised=("PL-ACCURACY", "PL-REJECT"), scores=scores))
        return out


def explored(coin: Coin, supported: int, unsupported: int = 300) -> Run:
    """A run as exploring leaves it: ``supported`` and ``unsupported`` cases judged by ``coin``."""
    run = Run(role="planner", profile=PROFILES["standard"], seed=0, clauses=role_clauses("planner"))
    rng = random.Random(1)
    for result in coin.evaluate(sample_kinds(rng, ["supported"], supported) + sample_kinds(rng, ["unsupported"], unsupported)):
        run.record(result)
    coin.kinds.clear()
    return run


def scored(run: Run, metric: str, ok: int, total: int) -> None:
    for k in range(total):
        run.record(CaseResult(case=None, exercised=(), scores=(Score(clause="PL-ACCURACY", metric=metric,
                                                                      family="single", ok=k < ok),)))


def fresh() -> Run:
    return Run(role="planner", profile=PROFILES["standard"], seed=0, clauses=role_clauses("planner"))


@pytest.mark.parametrize(("ok", "total", "undecided"), [
    (688, 691, True),  # 0.9957: could be either side of 0.995
    (691, 691, True),  # a perfect 691 is not yet credibly at least 0.995 (its interval reaches 0.9945)
    (2000, 2000, False),  # now it is
    (650, 691, False),  # 0.94: credibly below
    (0, 0, False),  # nothing counted: nothing to settle
])
def test_an_at_least_rate_is_undecided_while_its_interval_holds_the_threshold(ok: int, total: int, undecided: bool) -> None:
    run = fresh()
    scored(run, "accuracy", ok, total)
    assert run.undecided(ACCURACY) is undecided


@pytest.mark.parametrize(("diagnosed", "total", "undecided"), [
    (1, 1591, False),  # 0.0006: credibly at most 0.01
    (9, 700, True),  # 0.0129: could be either side of 0.01
    (40, 700, False),  # 0.057: credibly above
])
def test_an_at_most_rate_is_undecided_while_its_interval_holds_the_threshold(diagnosed: int, total: int,
                                                                              undecided: bool) -> None:
    run = fresh()
    scored(run, "false-diagnosis", diagnosed, total)
    assert run.undecided(FALSE) is undecided


def test_a_threshold_no_number_of_cases_can_settle_is_never_settled() -> None:
    run = fresh()
    run.thresholds["PL-ACCURACY"] = 1.0
    scored(run, "accuracy", 500, 500)
    assert not run.undecided(ACCURACY)


def test_an_undecided_rate_draws_more_of_the_cases_it_counts_until_it_is_decided() -> None:
    coin = Coin(accuracy=0.999, seed=3)
    run = explored(coin, supported=700)
    misses = run.counted("accuracy") - sum(run.scores["accuracy"].ok.values())
    assert run.undecided(ACCURACY), misses
    settle(run, coin.evaluate, profile=PROFILES["standard"], seed_value=0, deadline=float("inf"))
    assert run.settled == {"accuracy": 700}  # recall (1.0 over 300) and false diagnoses were decided
    assert set(coin.kinds) == {"supported"}
    assert 700 < run.counted("accuracy") <= 4 * 700
    assert not run.undecided(ACCURACY)
    assert run.metrics("PL-ACCURACY")["accuracy"][2]
    # the report says so, in JSON and in text
    entry = json_report(run, implementation="coin", target="python")["clauses"]
    metric = next(r for r in entry if r["clause"] == "PL-ACCURACY")["metrics"]["accuracy"]
    assert metric["settled"] == {"explored": 700, "drawn": run.counted("accuracy") - 700, "undecided": False}
    text = text_report(json_report(run, implementation="coin", target="python"))
    assert f"over the 700 cases explored its 95% interval held the threshold, so {metric['settled']['drawn']} more" in text


def test_a_rate_still_undecided_stops_at_the_most_cases_and_is_judged_by_its_rate() -> None:
    coin = Coin(accuracy=0.995, seed=5)  # exactly at the threshold: never credibly either side
    run = explored(coin, supported=600)
    profile = dataclasses.replace(PROFILES["standard"], settle=2, chunk=100)
    settle(run, coin.evaluate, profile=profile, seed_value=0, deadline=float("inf"))
    assert run.settled["accuracy"] == 600 and run.counted("accuracy") == 2 * 600
    assert run.undecided(ACCURACY)
    rate, threshold, meets = run.metrics("PL-ACCURACY")["accuracy"]
    assert meets is (rate >= threshold)
    assert "still undecided at the most cases, judged by the rate" in text_report(
        json_report(run, implementation="coin", target="python"))


def test_a_decided_rate_draws_nothing() -> None:
    for accuracy in (1.0, 0.9):
        coin = Coin(accuracy=accuracy, seed=1)
        run = explored(coin, supported=2000 if accuracy == 1.0 else 700)
        before = run.cases
        settle(run, coin.evaluate, profile=PROFILES["standard"], seed_value=0, deadline=float("inf"))
        assert run.cases == before and not run.settled and coin.kinds == []


def test_recall_is_settled_on_unsupported_requests() -> None:
    coin = Coin(accuracy=1.0, recall=0.975, seed=2)
    run = explored(coin, supported=2000, unsupported=400)
    assert run.undecided(RECALL)
    settle(run, coin.evaluate, profile=PROFILES["standard"], seed_value=0, deadline=float("inf"))
    assert "recall" in run.settled and set(coin.kinds) == {"unsupported"}


def test_settling_stops_at_the_budget_and_says_so() -> None:
    coin = Coin(accuracy=0.996, seed=4)
    run = explored(coin, supported=700)
    assert run.undecided(ACCURACY)
    settle(run, coin.evaluate, profile=PROFILES["standard"], seed_value=0, deadline=0.0)
    assert run.settle_stopped and run.counted("accuracy") == 700
    assert "SETTLING STOPPED EARLY" in text_report(json_report(run, implementation="coin", target="python"))


def test_settling_is_seeded() -> None:
    def drawn() -> list[str]:
        coin = Coin(accuracy=0.998, seed=9)
        run = explored(coin, supported=700)
        out: list[str] = []

        def evaluate(cases: list[Any]) -> list[CaseResult]:
            out.extend(c.id for c in cases)
            return coin.evaluate(cases)

        settle(run, evaluate, profile=PROFILES["standard"], seed_value=7, deadline=float("inf"))
        return out

    first = drawn()
    assert first and first == drawn()


def test_the_reference_settles_in_process() -> None:
    """In-process certification of the reference planner (quick profile): whichever rates it settles end
    decided or at their most cases, and it passes its scored clauses."""
    from conformance.adapters import PythonAdapter
    from conformance.plan_engine import PlannerJudge
    from reference.cli import plan_line

    judge = PlannerJudge(PythonAdapter.of(plan_line, "reference"), None, role="planner")
    profile = dataclasses.replace(PROFILES["quick"], examples=60)
    run = certify_planner(judge, profile=profile, shrink=False)
    assert run.status("PL-ACCURACY") == "passed" and run.status("PL-REJECT") == "passed"
    for name, had in run.settled.items():
        metric = next(m for m in (ACCURACY, RECALL, FALSE) if m.name == name)
        assert not run.undecided(metric) or run.counted(name) >= profile.settle * had


def _families(miss_every: int) -> Any:
    """A judge scoring each supported case under its own family: a sequential case is missed once in
    ``miss_every`` (0: never), every other case is an exact match."""
    count = [0]

    def evaluate(cases: list[Any]) -> list[CaseResult]:
        out = []
        for case in cases:
            if case.expected_plan is None:
                out.append(CaseResult(case=case, exercised=("PL-REJECT",), scores=(
                    Score(clause="PL-REJECT", metric="recall", family=case.family, ok=True),)))
                continue
            hit = True
            if case.family == "sequential":
                count[0] += 1
                hit = not (miss_every and count[0] % miss_every == 0)
            out.append(CaseResult(case=case, exercised=("PL-ACCURACY",), scores=(
                Score(clause="PL-ACCURACY", metric="accuracy", family=case.family, ok=hit),
                Score(clause="PL-REJECT", metric="false-diagnosis", family=case.family, ok=False))))
        return out

    return evaluate


def _clustered() -> Run:
    """A run as exploring leaves one whose sequential misses came in a cluster: 320 of 332 (0.964) beside 3,000
    single-call requests all right, so that the overall rate meets 0.995 and the family alone misses it."""
    run = fresh()
    (case,) = sample_kinds(random.Random(0), ["supported"], 1)  # (a request for the report to show)
    for family, ok, total in (("single", 3000, 3000), ("sequential", 320, 332)):
        for k in range(total):
            run.record(CaseResult(case=case, exercised=(), scores=(
                Score(clause="PL-ACCURACY", metric="accuracy", family=family, ok=k < ok),)))
    assert run.failing_families(ACCURACY) == ["sequential"] and run.metrics("PL-ACCURACY")["accuracy"][0] > 0.995
    return run


def test_a_family_that_misses_on_its_own_is_judged_again_on_cases_drawn_apart() -> None:
    # its misses were a cluster: over as many cases drawn apart it meets the threshold, and is judged on those
    run = _clustered()
    settle(run, _families(miss_every=0), profile=PROFILES["quick"], seed_value=0, deadline=float("inf"))
    assert run.failing_families(ACCURACY) == [] and run.metrics("PL-ACCURACY")["accuracy"][2]
    ok, cases = run.apart("accuracy", "sequential")
    other = run.scores["accuracy"].total["sequential"] - cases
    assert ok == cases >= other >= 332
    text = text_report(json_report(run, implementation="x", target="python"))
    assert f"family sequential missed it on its own over its other cases ({other - 12} of {other}), not over {cases}" in text
    # a family that is bad misses it over the cases drawn apart too (one in fifty missed, while the overall
    # rate still meets 0.995), and the report says so
    run = _clustered()
    settle(run, _families(miss_every=50), profile=PROFILES["quick"], seed_value=0, deadline=float("inf"))
    assert run.failing_families(ACCURACY) == ["sequential"] and not run.metrics("PL-ACCURACY")["accuracy"][2]
    assert run.metrics("PL-ACCURACY")["accuracy"][0] > 0.995 and run.apart("accuracy", "sequential")
    assert "drawn apart from its other cases, its 95% interval all below 0.995" in text_report(
        json_report(run, implementation="x", target="python"))
    # with no time left nothing is drawn, and the family is judged on what it has
    run = _clustered()
    settle(run, _families(miss_every=0), profile=PROFILES["quick"], seed_value=0, deadline=0.0)
    assert run.failing_families(ACCURACY) == ["sequential"] and run.settle_stopped


def test_an_exploration_past_its_deadline_stops_drawing_at_once() -> None:
    # Hypothesis would draw the profile's every example though each returned at once, and drawing costs
    # (900 compile batches take about a minute on a slow core): a budget overrun by the draws alone
    import time

    from hypothesis import strategies as st

    from conformance.search import explore

    drawn = []
    batches = st.integers(0, 10**6).map(lambda n: drawn.append(n) or [])
    run = Run(role="planner", profile=PROFILES["standard"], seed=0, clauses=role_clauses("planner"))
    explore(run, lambda cases: [], batches, profile=PROFILES["standard"], seed_value=0,
            deadline=time.monotonic() - 1)
    assert PROFILES["standard"].examples == 900 and len(drawn) <= 2  # the first example (and its replay)
    assert run.stopped == "the run's time budget ran out before its search was done"


def test_a_hunt_past_its_time_stops_drawing_and_keeps_what_it_found() -> None:
    # a hunt that runs out of time while shrinking: Hypothesis would go on shrinking, drawing every attempt
    # though each returned at once (a campaign's last hunts overran their 30 s by as much again)
    import time
    from types import SimpleNamespace

    from hypothesis import strategies as st

    from conformance.search import hunt
    from reference.violations import Violation

    drawn: list[Any] = []
    batches = st.lists(st.integers(0, 10**6), min_size=5).map(lambda xs: drawn.append(xs) or [sum(xs)])
    failures: list[int] = []

    def judge(cases: list[int]) -> list[Any]:
        results = [SimpleNamespace(case=n, violations=[Violation(clause="JS-ORDER", message=f"{n}")] if n > 10 else [])
                   for n in cases]
        if any(r.violations for r in results):
            failures.extend(cases)
            if len(failures) == 3:  # found, replayed, and shrunk once: the hunt then runs past its time
                after[0] = len(drawn)
                time.sleep(0.4)
        return results

    after = [0]
    found = hunt(judge, judge, batches, "JS-ORDER", profile=PROFILES["quick"], seed_value=0,
                 deadline=time.time() + 0.2)
    assert found is not None and found.case > 10 and "reached its time limit" in found.note
    # after the judgement that took it past its time, only the shrink attempt that stopped the search
    assert len(drawn) - after[0] <= 1, len(drawn) - after[0]
