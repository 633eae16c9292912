"""``codemode certify`` as a user runs it: exit codes, reports, JUnit, replay."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import python_module_command


def certify(*args: str, role: str = "compiler") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", "certify", "--role", role, "--profile", "quick", *args],
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
    assert summary["failed"] == 0 and summary["errored"] == 0 and summary["passed"] == 19  # + CLI-*, PL-DETERMINISM


def test_reference_pipeline_certifies_clean_in_process(tmp_path: Path) -> None:
    proc = certify("--python", "reference.cli:pipeline_line", "--invariant", "hard", "--examples", "150",
                   "--report", str(tmp_path / "r.json"), role="pipeline")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    status = {c["clause"]: c["status"] for c in report["clauses"]}
    assert status.pop("CLI-STREAM") == status.pop("CLI-BAD-RECORD") == "skipped"  # no stream in process
    assert set(status.values()) == {"passed"}, {k: v for k, v in status.items() if v != "passed"}
    scored = {c["clause"]: c["metrics"] for c in report["clauses"] if c["kind"] == "scored"}
    assert set(scored["PL-ACCURACY"]["accuracy"]["families"]) == {"single", "sequential", "parallel", "shaping"}
    assert scored["PL-REJECT"]["recall"]["cases"] > 50 and "precision" in scored["PL-REJECT"]
    assert "precision of diagnosing" in proc.stdout


def test_faulty_planner_fails_with_a_replayable_counterexample(tmp_path: Path) -> None:
    target = "tests.faulty.planners:truncates_long_inputs"
    proc = certify("--python", target, "--examples", "150", "--report", str(tmp_path / "r.json"), role="planner")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    clauses = {c["clause"]: c for c in json.loads((tmp_path / "r.json").read_text())["clauses"]}
    assert clauses["IN-LENGTH"]["status"] == "failed"
    cx = clauses["IN-LENGTH"]["counterexample"]
    replay = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "certify", "--role", "planner", "--python", target, "--case", json.dumps(cx["case"])],
        capture_output=True, text=True, timeout=120,
    )
    assert replay.returncode == 1 and "IN-LENGTH" in replay.stdout, replay.stdout + replay.stderr


def test_usage_errors_exit_2() -> None:
    proc = certify("--python", "no_such_module:nothing")
    assert proc.returncode == 2 and "cannot be imported" in proc.stderr
