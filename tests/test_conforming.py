"""Unusual but conforming implementations certify clean on every hard clause.

They were written from SPEC.md alone by someone who had not read the kit's code (``tests/outside/``, see
its README): a compiler in Node.js whose bodies look nothing like the reference's (``.then`` chains, a
table interpreter, strings rebuilt from code units, null-prototype records), a second compiler in Python
that answers slowly, a wrapper that flushes its answers in odd chunks, and a planner that diagnoses every
plan request. A conformance kit that failed any of them on a hard clause would be giving a false verdict.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.registry import registry
from tests.conftest import ROOT

OUTSIDE = ROOT / "tests" / "outside"
PY = sys.executable


def certify(role: str, command: str, tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [PY, "-m", "conformance", "certify", "--role", role, "--cmd", command, "--report", str(report), "--seed", "3",
         *extra],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )
    assert report.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc, json.loads(report.read_text())


def _hard_failures(report: dict[str, Any]) -> dict[str, str]:
    return {r["clause"]: r["status"] for r in report["clauses"]
            if registry()[r["clause"]].kind == "hard" and r["status"] in ("failed", "errored")}


COMPILERS = {
    "combinators": "node tests/outside/compiler_combinators.mjs",
    "slow": f"{PY} tests/outside/compiler_slow.py",
    "chunky": f"{PY} tests/outside/chunky.py node tests/outside/compiler_combinators.mjs",
    "chunky-reference": f"{PY} tests/outside/chunky.py {PY} -m conformance compile",
}


@pytest.mark.parametrize("name", sorted(COMPILERS))
def test_an_unusual_conforming_compiler_certifies_clean(name: str, tmp_path: Path) -> None:
    if "node" in COMPILERS[name] and shutil.which("node") is None:
        pytest.skip("Node.js is not installed")
    examples = "4" if name == "slow" else "60"  # the slow one answers in 150 ms on average
    proc, report = certify("compiler", COMPILERS[name], tmp_path, "--examples", examples)
    assert proc.returncode == 0, (name, _hard_failures(report), proc.stdout[-3000:])
    assert report["summary"]["failed"] == report["summary"]["errored"] == 0
    assert report["cases"] > 40


def test_a_planner_that_diagnoses_everything_passes_every_hard_clause_and_fails_the_scored_ones(tmp_path: Path) -> None:
    proc, report = certify("pipeline", f"{PY} tests/outside/planner_refuses.py", tmp_path, "--examples", "60",
                           "--no-corpora")
    assert _hard_failures(report) == {}, proc.stdout[-3000:]
    statuses = {r["clause"]: r["status"] for r in report["clauses"]}
    assert statuses["PL-ACCURACY"] == statuses["PL-REJECT"] == "failed"
    assert statuses["CLI-BAD-RECORD"] == statuses["CLI-STREAM"] == "passed"
    assert proc.returncode == 1  # the scored clauses fail the run, and only they
