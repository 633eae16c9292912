"""``codemode certify --openai`` as a user runs it: against ``codemode serve``, from a recording with the
server stopped, and against the fake scripted with every failure class."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

KIT = [sys.executable, "-m", "conformance.cli"]
SMALL = ["--role", "planner", "--profile", "quick", "--examples", "12", "--no-english", "--seed", "3"]


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    """A kit server as a process, and the URL its first line announces."""
    proc = subprocess.Popen([*KIT, *args, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert " on http://" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, line.split()[-1]


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    return err


def certify(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    report = Path(args[args.index("--report") + 1])
    proc = subprocess.run([*KIT, "certify", *SMALL, *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc, json.loads(report.read_text())


def verdicts(report: dict[str, Any]) -> dict[str, tuple[str, int, int, int]]:
    return {c["clause"]: (c["status"], c["cases"], c["failed"], c["errored"]) for c in report["clauses"]
            if c["clause"] not in ("CLI-STREAM", "CLI-BAD-RECORD")}  # a server has no stdio stream


def outcomes(report: dict[str, Any]) -> dict[str, tuple[str, int, int]]:
    """Verdicts without case counts, for runs in different transports: Hypothesis also draws constants from
    the modules a process has loaded (README, ``--seed``), and the HTTP driver loads more than a stdio run,
    so the two draw other cases; every clause must still be judged, on some cases, the same way."""
    out = {}
    for clause, (status, cases, failed, errored) in verdicts(report).items():
        assert cases > 0 or status == "skipped", clause
        out[clause] = (status, failed, errored)
    return out


@pytest.fixture(scope="module")
def serve() -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc, url = start("serve")
    yield proc, url
    if proc.poll() is None:
        stop(proc)


def test_serve_certifies_as_the_stdio_planner_does_and_replays_byte_exact(serve: Any, tmp_path: Path) -> None:
    proc, url = serve
    _, stdio = certify("--cmd", f"{sys.executable} -m conformance.cli plan", "--report", str(tmp_path / "stdio.json"))
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    run, http = certify("--openai", url, "--model", "reference", "--record", str(first),
                        "--report", str(tmp_path / "http.json"), "--jsonl", str(tmp_path / "http.jsonl"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert outcomes(http) == outcomes(stdio)
    assert http["summary"]["failed"] == http["summary"]["errored"] == 0
    # the plan as a streamed tool call, assembled by the reference collector: the same verdicts again
    _, tools = certify("--openai", url, "--model", "reference", "--wire", "tools", "--report", str(tmp_path / "tools.json"))
    assert outcomes(tools) == outcomes(stdio) and tools["driver"]["wire"] == "tools"
    assert http["driver"]["prompt"]["name"] == "codemode-plan-v1" and http["driver"]["answers"]["repaired"] == 0
    certify("--openai", url, "--model", "reference", "--record", str(second), "--report", str(tmp_path / "again.json"))
    assert first.read_bytes() == second.read_bytes()  # stable: the same run records the same file
    stop(proc)
    replay, again = certify("--openai", url, "--model", "reference", "--replay", str(first),
                            "--report", str(tmp_path / "replay.json"), "--jsonl", str(tmp_path / "replay.jsonl"))
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert verdicts(again) == verdicts(http)
    cases = [line for line in (tmp_path / "http.jsonl").read_text().splitlines() if '"type":"case"' in line]
    assert cases == [line for line in (tmp_path / "replay.jsonl").read_text().splitlines() if '"type":"case"' in line]
    assert again["driver"]["replay"]["unused"] == 0 and "replayed from" in replay.stdout


def test_each_failure_class_is_an_errored_case_of_its_class(tmp_path: Path) -> None:
    smoke = [{"answer": {"diagnostic": "wired"}, "match": "call ping", "times": 2},
             {"answer": {"diagnostic": "wired"}, "match": 'call get_user with id "u1"'}]
    classes = [{"raw": "not JSON"}, {"answer": {"diagnostic": "repaired"}},  # one repaired answer
               {"condition": "refused"}, {"condition": "over_budget"}, {"condition": "too_long"},
               {"condition": "misconfigured"}, {"condition": "unavailable", "times": 3}, {"condition": "malformed"},
               {"condition": "not_completion"}, {"condition": "timed_out"},
               {"condition": "rate_limited", "retry_after": 0.1}, {"answer": {"diagnostic": "after a wait"}},
               {"answer": {"diagnostic": "never taken"}, "match": "no instruction says this"}]
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(a) + "\n" for a in smoke + classes))
    fake, url = start("fake-openai", "--script", str(script))
    run, report = certify("--openai", url, "--model", "fake", "--concurrency", "1", "--attempts", "2",
                          "--timeout", "2", "--no-corpora", "--report", str(tmp_path / "r.json"),
                          "--jsonl", str(tmp_path / "r.jsonl"))
    err = stop(fake)
    assert run.returncode == 1  # errored clauses fail the run: never a refusal, never a pass
    by_class = report["errored_by_class"]  # by case (a case with two requests errors with its first's class)
    per_request = report["driver"]["conditions"]
    for name in ("refused", "over_budget", "too_long", "misconfigured", "unavailable", "malformed", "timed_out",
                 "fake_exhausted"):
        assert per_request.get(name, 0) >= 1, (name, per_request)
    assert set(by_class) <= set(per_request) and "fake_exhausted" in by_class
    assert report["driver"]["answers"]["repaired"] == 1
    assert report["driver"]["fake"]["unused"] == ["#15 (answer, match 'no instruction says this')"]
    assert report["driver"]["fake"]["exhausted"] == per_request["fake_exhausted"]
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    errored = [line for line in lines if line.get("outcome") == "errored"]
    assert errored and all(line["error"]["class"] in by_class for line in errored)
    assert "errored cases by class: " in run.stdout and "fake_unused 1" in run.stdout
    assert "fake_unused: 1 attempts were never taken" in err  # the fake says so itself at exit


def test_usage_errors_are_said_before_anything_runs(tmp_path: Path) -> None:
    proc = subprocess.run([*KIT, "certify", "--openai", "http://example.com/v1", "--model", "m"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "loopback" in proc.stderr
    proc = subprocess.run([*KIT, "certify", "--openai", "http://127.0.0.1:9/v1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--model" in proc.stderr
    proc = subprocess.run([*KIT, "certify", "--openai", "http://127.0.0.1:9/v1", "--model", "m", "--role", "compiler"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "planner" in proc.stderr
    # nothing listens there: the smoke stage says the server cannot be used, and nothing is certified
    proc = subprocess.run([*KIT, "certify", "--openai", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "unavailable" in proc.stderr and "smoke" in proc.stderr
