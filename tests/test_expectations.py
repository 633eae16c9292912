"""The CI gate: known failures pass, new failures, rates past their floors and stale entries fail; and the
report formats it writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import schema
from conformance.expectations import BadExpectations, Expectations, from_report, gate
from tests.conftest import python_module_command


def _report(**statuses: str) -> dict:
    clauses = []
    for cid, status in statuses.items():
        cid = cid.replace("_", "-")
        record = {"clause": cid, "kind": "property", "status": status, "cases": 10, "failed": int(status == "failed"),
                  "errored": int(status == "errored"), "spec": "SPEC.md", "gating": True}
        if status == "failed":
            record["failed_case_ids"] = ["aaaaaaaaaaaa"]
            record["counterexample"] = {"message": f"{cid} broke"}
        clauses.append(record)
    return {"role": "pipeline", "clauses": clauses}


def _scored(report: dict, accuracy: float, recall: float, false_diagnosis: float) -> dict:
    report["clauses"] += [
        {"clause": "PL-ACCURACY", "kind": "scored", "status": "passed", "cases": 10, "failed": 0, "errored": 0,
         "spec": "SPEC.md", "gating": True, "metrics": {"accuracy": {"rate": accuracy, "meets": True}}},
        {"clause": "PL-REJECT", "kind": "scored", "status": "passed", "cases": 10, "failed": 0, "errored": 0,
         "spec": "SPEC.md", "gating": True,
         "metrics": {"recall": {"rate": recall, "meets": True}, "false-diagnosis": {"rate": false_diagnosis, "meets": True}}},
    ]
    return report


def test_a_known_failure_passes_and_a_new_one_fails() -> None:
    report = _report(JS_ORDER="failed", JS_PARALLEL="failed", CO_VALIDATE="passed")
    verdict = gate(report, Expectations(failures={"JS-ORDER": "tracked"}))
    assert not verdict.ok and verdict.known == ["JS-ORDER"] and verdict.new_failures == ["JS-PARALLEL"]
    assert any("NEW FAILURE JS-PARALLEL" in m for m in verdict.messages)
    assert gate(report, Expectations(failures={"JS-ORDER": "", "JS-PARALLEL": ""})).ok


def test_errored_counts_as_failing_and_non_gating_clauses_are_ignored() -> None:
    report = _report(CLI_STREAM="errored", PL_INVARIANT="failed")
    report["clauses"][1]["gating"] = False
    verdict = gate(report, Expectations())
    assert verdict.new_failures == ["CLI-STREAM"]


def test_a_listed_failure_that_passes_is_stale() -> None:
    verdict = gate(_report(JS_ORDER="passed"), Expectations(failures={"JS-ORDER": "was broken"}))
    assert not verdict.ok and verdict.stale == ["JS-ORDER"]
    assert "remove it" in verdict.messages[0]
    skipped = gate(_report(JS_ORDER="skipped"), Expectations(failures={"JS-ORDER": ""}))
    assert skipped.ok  # not judged this run: not evidence either way


def test_case_ids_make_a_failure_known_and_go_stale_when_they_pass() -> None:
    report = _report(JS_ORDER="failed")
    assert gate(report, Expectations(failures={"case:aaaaaaaaaaaa": "this one case"})).ok
    assert not gate(report, Expectations(failures={"case:bbbbbbbbbbbb": ""})).ok  # a different case failed
    stale = gate(_report(JS_ORDER="passed"), Expectations(failures={"case:bbbbbbbbbbbb": ""}), passed={"bbbbbbbbbbbb"})
    assert stale.stale == ["case:bbbbbbbbbbbb"]


def test_floors_bound_rates_and_false_diagnosis_is_a_ceiling() -> None:
    report = _scored(_report(), accuracy=0.95, recall=0.9, false_diagnosis=0.04)
    assert gate(report, Expectations(floors={"PL-ACCURACY": 0.95, "PL-REJECT:recall": 0.8,
                                             "PL-REJECT:false-diagnosis": 0.05})).ok
    verdict = gate(report, Expectations(floors={"PL-ACCURACY": 0.96, "PL-REJECT:false-diagnosis": 0.03}))
    assert verdict.past_floor == ["PL-ACCURACY", "PL-REJECT:false-diagnosis"]


def test_written_expectations_let_the_same_run_through() -> None:
    report = _scored(_report(JS_ORDER="failed", CO_VALIDATE="passed"), accuracy=0.91237, recall=1.0, false_diagnosis=0.01234)
    written = from_report(report, Expectations(failures={"JS-ORDER": "tracked in #12"}))
    assert written.failures == {"JS-ORDER": "tracked in #12"}
    assert written.floors == {"PL-ACCURACY": 0.9123, "PL-REJECT:recall": 1.0, "PL-REJECT:false-diagnosis": 0.0124}
    assert gate(report, written).ok
    assert schema.problems("expectations", written.to_json()) == []


def test_bad_files_are_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"format": 1, "failures": {"not a clause": "x"}}))
    with pytest.raises(BadExpectations, match="does not match"):
        Expectations.load(path)
    path.write_text("{")
    with pytest.raises(BadExpectations, match="cannot be read as JSON"):
        Expectations.load(path)
    with pytest.raises(BadExpectations, match="role compiler"):
        gate(_report(), Expectations(role="compiler"))


def _certify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "certify", "--profile", "quick", *args],
                          capture_output=True, text=True, timeout=600)


def test_the_gate_from_the_command_line(tmp_path: Path) -> None:
    """Write expectations from a faulty compiler's run, gate the same compiler with them (passes), then
    gate the fixed compiler (the listed failure is stale, so it fails), with every report format."""
    faulty = python_module_command("tests.faulty.compilers", "staggered-parallel")
    fixed = f"{sys.executable} -m conformance.cli compile"
    expect = tmp_path / "expectations.json"
    manifest = tmp_path / "iut.json"
    manifest.write_text(json.dumps({"name": "staggered", "version": "0.0.1", "role": "compiler",
                                    "homepage": "https://example.com/staggered"}))
    common = ("--manifest", str(manifest), "--examples", "80", "--expect", str(expect))
    wrote = _certify("--cmd", faulty, *common, "--update-expectations")
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    assert "JS-PARALLEL" in json.loads(expect.read_text())["failures"]

    out = {k: tmp_path / f"r.{k}" for k in ("json", "jsonl", "md", "badge")}
    gated = _certify("--cmd", faulty, *common, "--report", str(out["json"]), "--jsonl", str(out["jsonl"]),
                     "--markdown", str(out["md"]), "--badge", str(out["badge"]))
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "expectations" in gated.stdout and "known failures" in gated.stdout
    report = json.loads(out["json"].read_text())
    assert report["manifest"]["name"] == "staggered" and report["role"] == "compiler"
    lines = [json.loads(line) for line in out["jsonl"].read_text().splitlines()]
    for line in lines:
        assert schema.problems("report-line", line) == [], line
    assert [line["type"] for line in (lines[0], lines[-1])] == ["header", "summary"]
    failing = [line for line in lines if line["type"] == "case" and line["outcome"] == "failed"]
    assert failing and all("replay" in line and line["violations"] for line in failing)
    assert sum(line["type"] == "case" for line in lines) == report["cases"]
    markdown = out["md"].read_text()
    assert "JS-PARALLEL" in markdown and "```sh" in markdown and "Expectations gate: **passed**" in markdown
    badge = json.loads(out["badge"].read_text())
    assert badge["schemaVersion"] == 1 and badge["message"].endswith("clauses") and badge["color"] != "brightgreen"

    stale = _certify("--cmd", fixed, *common)
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "STALE JS-PARALLEL" in stale.stdout


def test_a_manifest_that_contradicts_the_command_line_is_a_usage_error(tmp_path: Path) -> None:
    manifest = tmp_path / "iut.json"
    manifest.write_text(json.dumps({"name": "x", "role": "planner"}))
    proc = _certify("--cmd", "true", "--role", "compiler", "--manifest", str(manifest))
    assert proc.returncode == 2 and "contradicts the manifest" in proc.stderr
    manifest.write_text(json.dumps({"name": "x", "colour": "blue"}))
    proc = _certify("--cmd", "true", "--manifest", str(manifest))
    assert proc.returncode == 2 and "colour" in proc.stderr


@pytest.mark.parametrize("how", ["dead", "garbage-first", "silent"])
def test_a_broken_harness_fails_the_smoke_stage_with_exit_2(how: str) -> None:
    commands = {
        "dead": python_module_command("tests.faulty.broken", "dead"),
        "garbage-first": "while read -r line; do echo 'not json'; done",
        "silent": "cat > /dev/null",
    }
    proc = _certify("--cmd", commands[how], "--role", "compiler", "--timeout", "3")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "smoke test failed, so nothing was certified" in proc.stderr
    assert "passed" not in proc.stdout and "FAILED" not in proc.stdout


def test_repeat_reports_flaky_cases_apart_from_failures(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    proc = _certify("--role", "planner", "--python", "tests.faulty.planners:non_deterministic", "--examples", "30",
                    "--repeat", "3", "--report", str(report), "--no-corpora")
    data = json.loads(report.read_text())
    assert data["repeat"] == 3 and data["flaky"], proc.stdout + proc.stderr
    flaky = data["flaky"][0]
    assert len(flaky["outcomes"]) == 3 and len(set(flaky["outcomes"])) > 1 and "replay" in flaky
    assert data["summary"]["flaky cases"] == len(data["flaky"])
    assert "flaky cases (judged differently on repeats" in proc.stdout
    flaky_ids = {f["case_id"] for f in data["flaky"]}
    failing_ids = {i for c in data["clauses"] for i in c.get("failed_case_ids", [])}
    assert not flaky_ids & failing_ids  # a flaky case is not also counted as a failure
