"""``codemode certify`` as a user runs it: exit codes, reports, JUnit, replay."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
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
    # and from a file (as the terminal replays a case too long for one line), the same
    case_file = tmp_path / "case.json"
    case_file.write_text(json.dumps(cx["case"]) + "\n")
    command = [sys.executable, "-m", "conformance.cli", "certify", "--role", "compiler", "--cmd",
               python_module_command("tests.faulty.compilers", "staggered-parallel"), "--case"]
    from_file = subprocess.run([*command, f"@{case_file}"], capture_output=True, text=True, timeout=120)
    assert from_file.returncode == 1 and from_file.stdout == replay.stdout
    missing = subprocess.run([*command, f"@{tmp_path / 'gone.json'}"], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "gone.json" in missing.stderr


def test_a_long_replay_is_replayed_from_a_file_on_the_terminal_and_kept_whole_in_the_reports() -> None:
    from conformance.report import REPLAY_CHARS, replay_command, text_report

    case = {"stream": ['{"plan":' + "1" * 3000 + "}"] * 3, "bad": [False] * 3}
    assert len(replay_command("--cmd ./iut", "compiler", case)) > REPLAY_CHARS
    whole = replay_command("--cmd ./iut", "compiler", case)
    report = {"role": "compiler", "implementation": "iut", "target": "--cmd ./iut", "profile": "quick", "seed": 0,
              "cases": 1, "seconds": 1.0, "summary": {"passed": 0, "failed": 1, "errored": 0, "skipped": 0},
              "clauses": [{"clause": "CLI-STREAM", "kind": "hard", "status": "failed", "cases": 1, "failed": 1,
                           "errored": 0, "summary": "one line per request",
                           "counterexample": {"message": "m", "request": " \\n ".join(case["stream"]),
                                              "case": case, "replay": whole, "minimal": False}}]}
    written = []
    shown = text_report(report, case_file=lambda c: written.append(c) or "/tmp/a case.json")
    assert written == [case]
    assert shown.splitlines()[-3].endswith("--case '@/tmp/a case.json'")
    assert "… (9" in shown and len(max(shown.splitlines(), key=len)) < 2200
    # with nowhere to write it, the terminal shows part of the command and says where it is whole
    alone = text_report(report)
    assert "characters; the JSON report has the whole command)" in alone and whole not in alone


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
    assert scored["PL-REJECT"]["recall"]["cases"] > 30 and "precision" in scored["PL-REJECT"]  # measured, not a trickle
    assert "precision of diagnosing" in proc.stdout


def test_faulty_planner_fails_with_a_replayable_counterexample(tmp_path: Path) -> None:
    target = "tests.faulty.planners:truncates_long_inputs"
    proc = certify("--python", target, "--examples", "150", "--report", str(tmp_path / "r.json"), role="planner")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    clauses = {c["clause"]: c for c in json.loads((tmp_path / "r.json").read_text())["clauses"]}
    assert clauses["IN-LENGTH"]["status"] == "failed"
    cx = clauses["IN-LENGTH"]["counterexample"]
    # the terminal says what was expected and what the planner answered, not only that it failed
    assert "  expected: {\"diagnostic\": ...}" in proc.stdout and "  actual: {\"plan\":" in proc.stdout, proc.stdout[-3000:]
    replay = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "certify", "--role", "planner", "--python", target, "--case", json.dumps(cx["case"])],
        capture_output=True, text=True, timeout=120,
    )
    assert replay.returncode == 1 and "IN-LENGTH" in replay.stdout, replay.stdout + replay.stderr


def test_a_scored_failure_says_its_rates_and_a_replayable_miss_in_every_report(tmp_path: Path) -> None:
    target = "tests.faulty.planners:sloppy_output"
    report, junit, lines = tmp_path / "r.json", tmp_path / "j.xml", tmp_path / "r.jsonl"
    proc = certify("--python", target, "--examples", "150", "--no-english", "--report", str(report), "--jsonl", str(lines),
                   "--junit", str(junit), role="planner")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    accuracy = next(c for c in json.loads(report.read_text())["clauses"] if c["clause"] == "PL-ACCURACY")
    assert accuracy["status"] == "failed"
    miss = accuracy["metrics"]["accuracy"]["example_miss"]
    # the terminal and JUnit say the rate, its threshold and one miss with its replay; no None anywhere
    assert "PL-ACCURACY misses its threshold" in proc.stdout and f"replay: {miss['replay']}" in proc.stdout
    row = next(line.split() for line in proc.stdout.splitlines() if line.startswith("PL-ACCURACY "))
    assert row[1] == "FAILED" and row[3] == "-", row  # no "0 failed" beside a failed scored clause
    (node,) = [c for c in ET.parse(junit).getroot().findall("testcase") if c.get("name") == "PL-ACCURACY"]
    failure = node.find("failure")
    assert failure is not None and "accuracy" in failure.get("message", "") and "required" in failure.get("message", "")
    assert "None" not in (failure.text or "") and "replay: " in (failure.text or "") and "(MISSED)" in (failure.text or "")
    # the case lines mark each miss of a scored rate, with what a reader needs to see it again
    cases = [json.loads(line) for line in lines.read_text().splitlines() if json.loads(line)["type"] == "case"]
    missed = [c for c in cases if "PL-ACCURACY:accuracy" in c.get("missed", ())]
    assert missed and all(c["outcome"] == "passed" and c["request"] and c["answer"] and c["replay"] for c in missed)
    assert all("plan" in c["expected"] for c in missed) and any(c.get("axes") for c in missed)  # in which phrasing
    from conformance import schema

    assert all(schema.problems("report-line", c) == [] for c in missed)
    args = shlex.split(miss["replay"])
    replay = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "certify", "--role", "planner", "--python", target, "--case",
         args[args.index("--case") + 1]], capture_output=True, text=True, timeout=120,
    )
    assert "PL-ACCURACY" in replay.stdout, replay.stdout + replay.stderr


def test_usage_errors_exit_2() -> None:
    proc = certify("--python", "no_such_module:nothing")
    assert proc.returncode == 2 and "cannot be imported" in proc.stderr


def kit(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def test_version_and_spec() -> None:
    from reference import __version__

    proc = kit("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"codemode-conformance-kit {__version__}"
    listed = kit("spec")
    assert "JS-PARALLEL" in listed.stdout and "CLI-STREAM" in listed.stdout
    one = kit("spec", "js-parallel")
    assert one.stdout.startswith("### JS-PARALLEL") and "**Rule:**" in one.stdout
    assert kit("spec", "JS-NOPE").returncode == 2
    # a reader that stops reading (`codemode spec | head -1`; here, before anything is written): no traceback
    piped = subprocess.Popen([sys.executable, "-m", "conformance.cli", "spec"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert piped.stdout is not None
    piped.stdout.close()
    _, err = piped.communicate(timeout=60)
    assert piped.returncode == 1 and "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_report_can_go_to_stdout_and_the_table_then_goes_to_stderr(tmp_path: Path) -> None:
    proc = kit("certify", "--role", "compiler", "--python", "reference.cli:compile_line", "--examples", "5",
               "--no-corpora", "--report", "-", "--junit", str(tmp_path / "j.xml"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["summary"]["failed"] == 0
    assert "clause          result" in proc.stderr and f"wrote {tmp_path / 'j.xml'}" in proc.stderr
    assert not (tmp_path / "-").exists()
    assert not (tmp_path / ".hypothesis").exists()  # nothing of the kit's in the implementer's directory
    both = kit("certify", "--role", "compiler", "--python", "reference.cli:compile_line", "--report", "-",
               "--jsonl", "-", cwd=tmp_path)
    assert both.returncode == 2 and "only one report can go to stdout" in both.stderr


def test_quiet_prints_the_outcome_and_the_failures_only() -> None:
    proc = kit("certify", "--role", "compiler", "--cmd", python_module_command("tests.faulty.compilers", "staggered-parallel"),
               "--examples", "40", "--no-corpora", "-q")
    assert proc.returncode == 1
    assert "clause          result" not in proc.stdout and "CO-VALIDATE     passed" not in proc.stdout
    assert "JS-PARALLEL failed on" in proc.stdout and "passed, 1 failed" in proc.stdout


def test_the_same_seed_gives_the_same_minimal_case() -> None:
    # a hunt is bounded by judgements, not time: a slower machine (here: a busier one) finds the same case
    command = python_module_command("tests.faulty.compilers", "staggered-parallel")
    found = []
    for _ in range(2):
        report = json.loads(kit("certify", "--role", "compiler", "--cmd", command, "--examples", "60", "--no-corpora",
                                "--seed", "11", "--report", "-").stdout)
        found.append({c["clause"]: c["counterexample"]["case_id"] for c in report["clauses"] if "counterexample" in c})
    assert found[0] and found[0] == found[1]


def test_a_stream_counterexample_replays(tmp_path: Path) -> None:
    # a planner that answers a valid request after a bad record with something else than before
    command = python_module_command("tests.faulty.planners", "goes-wrong-after-bad-record")
    report = json.loads(kit("certify", "--role", "planner", "--cmd", command, "--examples", "3", "--no-corpora",
                            "--report", "-").stdout)
    record = next(c for c in report["clauses"] if c["clause"] == "CLI-BAD-RECORD")
    assert record["status"] == "failed", record
    replay = kit("certify", "--role", "planner", "--cmd", command, "--case", json.dumps(record["counterexample"]["case"]))
    assert replay.returncode == 1 and "CLI-BAD-RECORD" in replay.stdout, replay.stdout + replay.stderr


def test_a_run_that_meets_its_budget_stops_and_says_so() -> None:
    command = python_module_command("tests.faulty.hostile", "loop-before-await")
    started = time.monotonic()
    # (a budget long enough for some JS cases to be judged on a busy machine, far shorter than the profile's)
    proc = kit("certify", "--role", "compiler", "--cmd", command, "--no-corpora", "--budget", "30", "--js-timeout", "0.5",
               "--report", "-")
    seconds = time.monotonic() - started
    report = json.loads(proc.stdout)
    assert report["stopped"] and "STOPPED EARLY" in proc.stderr
    assert seconds < 90, seconds  # the budget, and the time limits of what was in hand
    assert {c["clause"]: c["status"] for c in report["clauses"]}["JS-FORM"] == "failed"
