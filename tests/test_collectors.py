"""The collector role: the reference collector certifies clean, and each faulty collector is flagged under
its own Transport clause."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from conformance.collect import CollectCase, CollectJudge, CollectorAdapter, collect_cases
from conformance.registry import role_clauses
from tests.faulty.collectors import CLAUSE_OF


@pytest.fixture(scope="module")
def cases() -> list[CollectCase]:
    out: list[CollectCase] = []

    @settings(max_examples=600, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seed(7)
    @given(collect_cases())
    def collect(case: CollectCase) -> None:
        out.append(case)

    collect()
    return out


def judged(target: str, cases: list[CollectCase]) -> dict[str, int]:
    """Failed cases per clause when ``target`` collects ``cases``."""
    failed: dict[str, int] = {}
    for result in CollectJudge(CollectorAdapter(target, timeout=10)).evaluate(cases):
        assert result.errored is None, result.errored
        for cid in {v.clause for v in result.violations}:
            failed[cid] = failed.get(cid, 0) + 1
    return failed


def test_the_cases_exercise_every_transport_clause(cases: list[CollectCase]) -> None:
    exercised = set()
    for result in CollectJudge(CollectorAdapter("reference.transports:prepare")).evaluate(cases):
        exercised |= set(result.exercised)
    assert exercised == set(role_clauses("collector"))


def test_the_reference_collector_passes_every_transport_clause(cases: list[CollectCase]) -> None:
    assert judged("reference.transports:prepare", cases) == {}


@pytest.mark.parametrize("name", sorted(CLAUSE_OF))
def test_each_faulty_collector_is_caught_under_its_clause(name: str, cases: list[CollectCase]) -> None:
    assert CLAUSE_OF[name] in judged(f"tests.faulty.collectors:{name}", cases)


def test_a_collector_that_hangs_or_exits_is_errored_not_a_kit_crash() -> None:
    from conformance.adapters import Errored
    from strategies import FragmentCase

    case = CollectCase.of(FragmentCase(tools=[{"name": "f", "arguments": {}, "required": [], "returns": {"kind": "text"}}],
                                       fragments=({"index": 0, "name": "f", "arguments": "{}"},),
                                       expect={"call": {"tool": "f", "args": {}}}, output_chars=3))
    hang = CollectorAdapter("tests.test_collectors:_hanging", timeout=0.5)
    assert isinstance(hang.run(case), Errored)
    leave = CollectorAdapter("tests.test_collectors:_exiting", timeout=5)
    outcome = leave.run(case)
    assert isinstance(outcome, Errored) and "SystemExit" in outcome.reason


def _hanging(stage: object, *, max_output_chars: float) -> object:
    import threading

    threading.Event().wait(3)
    raise RuntimeError("late")


def _exiting(stage: object, *, max_output_chars: float) -> object:
    raise SystemExit(3)


def test_certify_a_collector_from_the_command_line(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "conformance.cli", "certify", "--role", "collector", "--profile", "quick",
           "--examples", "150"]
    good = subprocess.run([*run, "--python", "reference.transports:prepare", "--report", str(tmp_path / "r.json")],
                          capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stdout + good.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["role"] == "collector" and report["summary"]["passed"] == len(role_clauses("collector"))
    bad = subprocess.run([*run, "--python", "tests.faulty.collectors:keeps_first_id", "--report", str(tmp_path / "b.json")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "TR-ID" in bad.stdout
    record = next(c for c in json.loads((tmp_path / "b.json").read_text())["clauses"] if c["clause"] == "TR-ID")
    replay = subprocess.run([*run[:4], "--role", "collector", "--python", "tests.faulty.collectors:keeps_first_id",
                             "--case", json.dumps(record["counterexample"]["case"])], capture_output=True, text=True,
                            timeout=120)
    assert replay.returncode == 1 and "TR-ID" in replay.stdout
    assert len(record["counterexample"]["case"]["fragments"]) <= 4  # shrunk to a small stream
    usage = subprocess.run([*run, "--cmd", "true"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "--python" in usage.stderr
