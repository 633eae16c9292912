"""``codemode certify`` as a user runs it: exit codes, reports, JUnit, replay."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import python_module_command


def certify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", "certify", "--role", "compiler", "--profile", "quick", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_faulty_compiler_fails_with_a_replayable_counterexample(tmp_path: Path) -> None:
    report, junit = tmp_path / "r.json", tmp_path / "j.xml"
    proc = certify("--cmd", python_module_command("tests.faulty.compilers", "staggered-parallel"), "--report", str(report), "--junit", str(junit))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads(report.read_text())
    by_id = {c["clause"]: c for c in data["clauses"]}
    assert by_id["JS-PARALLEL"]["status"] == "failed"
    cx = by_id["JS-PARALLEL"]["counterexample"]
    assert json.loads(cx["request"])["plan"]["mode"] == "parallel"
    cases = ET.parse(junit).getroot().findall("testcase")
    assert {c.get("name") for c in cases} >= {"JS-PARALLEL", "CO-VALIDATE"}
    failing = [c.get("name") for c in cases if c.find("failure") is not None]
    assert "JS-PARALLEL" in failing
    # the printed replay command re-runs just that case and fails it again
    replay = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "certify", "--role", "compiler", "--cmd", python_module_command("tests.faulty.compilers", "staggered-parallel"), "--case", json.dumps(cx["case"])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert replay.returncode == 1 and "JS-PARALLEL" in replay.stdout


def test_reference_certifies_clean_as_a_subprocess(tmp_path: Path) -> None:
    proc = certify("--cmd", f"{sys.executable} -m conformance.cli compile", "--report", str(tmp_path / "r.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert summary["failed"] == 0 and summary["errored"] == 0 and summary["passed"] == 16


def test_usage_errors_exit_2() -> None:
    proc = certify("--python", "no_such_module:nothing")
    assert proc.returncode == 2 and "cannot be imported" in proc.stderr
