"""The hostile-implementation suite: misbehaving processes (``tests.faulty.broken``) and bodies that attack
the harness (``tests.faulty.hostile``), each certified through the command line as a user would.

Each must end in the verdict SPEC.md gives it (errored, or failed under the right clause; a few are
conforming and must pass), within a bounded time, with the kit's memory bounded (every process of the
kit, V8's included, at most 1.5 GB), with no traceback, and with no process of it left behind: every
process the run started carries a marker in its environment, and none may be alive afterwards.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.process import processes_with_token
from tests.conftest import ROOT, python_module_command
from tests.faulty.hostile import CLAUSE_OF as BODY_CLAUSE_OF

MEMORY_LIMIT_KIB = 1536 << 10
#: runs a command, then prints the largest RSS (KiB) of any process it waited for, the kit's included
_MEASURE = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]);"
            " print('maxrss', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)")


def certify(command: str, tmp_path: Path, *extra: str, limit: float = 240) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], float, int]:
    """Certify ``command`` as a compiler, cheaply: the report, the seconds it took and the largest RSS."""
    mark = secrets.token_hex(8)
    report = tmp_path / "report.json"
    args = [sys.executable, "-c", _MEASURE, sys.executable, "-m", "conformance", "certify", "--role", "compiler",
            "--cmd", command, "--no-corpora", "--examples", "3", "--timeout", "1", "--js-timeout", "0.5", "--budget", "120", "--no-shrink",
            "--report", str(report), *extra]
    env = dict(os.environ, CODEMODE_HOSTILE_MARK=mark)
    started = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=limit, env=env, cwd=ROOT)
    seconds = time.monotonic() - started
    maxrss = int(proc.stderr.rsplit("maxrss ", 1)[1].split()[0])
    left = _marked(mark)
    assert not left, f"processes left behind: {left}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    data = json.loads(report.read_text()) if report.exists() else {}
    return proc, data, seconds, maxrss


def _marked(mark: str) -> list[str]:
    """The live processes whose environment carries ``CODEMODE_HOSTILE_MARK=mark`` (or, for one that
    cleared its environment, whose command line names the mark), as command lines."""
    found = []
    for pid in processes_with_env(f"CODEMODE_HOSTILE_MARK={mark}", also_in_cmdline=mark):
        try:
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
        except OSError:
            pass
    return found


def processes_with_env(entry: str, *, also_in_cmdline: str) -> list[int]:
    needle = entry.encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (needle in environ.split(b"\0") or f"codemode-orphan-{also_in_cmdline}".encode() in cmdline):
            out.append(int(name))
    return out


def _statuses(report: dict[str, Any]) -> dict[str, str]:
    return {r["clause"]: r["status"] for r in report.get("clauses", [])}


# --- misbehaving processes ------------------------------------------------------------------------------

#: how -> (exit status, what the report must show)
PROCESSES: dict[str, tuple[int, str]] = {
    "crash": (1, "errored"),
    "hang": (1, "errored"),
    "garbage": (1, "errored"),
    "array": (1, "errored"),
    "two-lines": (1, "CLI-STREAM"),
    "late-extra": (1, "CLI-STREAM"),
    "shift": (1, "CLI-STREAM"),
    "exit-early": (1, "CLI-STREAM"),
    "endless": (1, "errored"),
    "huge-line": (1, "errored"),
    "close-stdout": (1, "errored"),
    "swap-crash": (1, "errored"),
    "ignore-eof": (1, "errored"),
    "huge-stderr": (0, "clean"),
    "child": (0, "clean"),
    "daemon": (0, "clean"),
    "env-clean-daemon": (0, "clean"),
    "dead": (2, "smoke"),
}


@pytest.mark.parametrize("how", sorted(PROCESSES))
def test_a_misbehaving_process_gets_its_verdict_and_leaves_nothing_behind(how: str, tmp_path: Path) -> None:
    code, what = PROCESSES[how]
    proc, report, seconds, maxrss = certify(python_module_command("tests.faulty.broken", how), tmp_path)
    assert proc.returncode == code, (how, proc.stdout[-3000:], proc.stderr[-2000:])
    assert seconds < 200 and maxrss < MEMORY_LIMIT_KIB, (seconds, maxrss)
    statuses = _statuses(report)
    if what == "smoke":
        assert "smoke test failed" in proc.stderr
    elif what == "clean":
        assert set(statuses.values()) <= {"passed", "skipped"}, statuses
    elif what == "errored":
        assert "errored" in statuses.values(), statuses
        failed = [c for c, s in statuses.items() if s == "failed" and not c.startswith("CLI-")]
        assert not failed, f"{how} is a broken process, not a non-conforming compiler: {failed}"
    else:
        assert statuses[what] == "failed", statuses
        failed = [c for c, s in statuses.items() if s == "failed" and not c.startswith("CLI-")]
        assert not failed, f"{how} breaks the stream, not {failed}"


def test_an_exit_with_status_0_before_every_answer_while_certifying_fails_cli_stream(tmp_path: Path) -> None:
    # past every stream probe (each starts the implementation afresh, and sends fewer requests): CLI-STREAM is
    # judged on every batch of the certification, so the exit is a stream failure, not only errored cases
    from conformance.stream import stream_cases
    from tests.faulty.broken import LATE

    assert max(len(case.lines) for case in stream_cases("compiler", seed=0)) < LATE

    proc, report, seconds, maxrss = certify(python_module_command("tests.faulty.broken", "exit-late"), tmp_path,
                                            "--examples", "30")
    assert proc.returncode == 1 and seconds < 200 and maxrss < MEMORY_LIMIT_KIB, (proc.stdout[-3000:], seconds)
    stream = next(r for r in report["clauses"] if r["clause"] == "CLI-STREAM")
    assert stream["status"] == "failed", stream
    assert "exited with status 0 before answering request" in proc.stdout
    failed = [c for c, s in _statuses(report).items() if s == "failed" and not c.startswith("CLI-")]
    assert not failed, failed
    # the exchange is dozens of requests: the terminal shows part of it and replays it from a file, and says
    # why a replay on a new process may not show the exit (it came after earlier requests)
    assert "earlier requests to the same process (a replay of this exchange alone" in proc.stdout
    (replay,) = [line.split("replay: ", 1)[1] for line in proc.stdout.splitlines()
                 if line.startswith("  replay: ") and "--case @" in line]
    assert len(replay) < 1000 and "characters)" in proc.stdout
    assert stream["counterexample"]["replay"].endswith(shlex.quote(json.dumps(stream["counterexample"]["case"],
                                                                              separators=(",", ":"))))
    again = subprocess.run(replay, shell=True, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert again.returncode in (0, 1) and again.stdout.startswith("case ") and "Traceback" not in again.stderr, again
    assert len(again.stdout.splitlines()[1]) < 2100  # the request, in part


# --- bodies that attack the harness --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BODY_CLAUSE_OF))
def test_a_hostile_body_is_judged_under_its_clause(name: str, tmp_path: Path) -> None:
    clauses = BODY_CLAUSE_OF[name].split()  # a Proxy result is a record's fault, or the array of records'
    proc, report, seconds, maxrss = certify(python_module_command("tests.faulty.hostile", name), tmp_path)
    assert proc.returncode == 1, (name, proc.stdout[-3000:], proc.stderr[-2000:])
    assert seconds < 200 and maxrss < MEMORY_LIMIT_KIB, (seconds, maxrss)
    statuses = _statuses(report)
    assert any(statuses[c] == "failed" for c in clauses), statuses
    if "JS-PURE" not in clauses:
        assert statuses["JS-PURE"] == "passed", f"{name} was charged to JS-PURE: {statuses}"
    assert statuses["CO-VALIDATE"] == "passed" and statuses["CLI-STREAM"] == "passed", statuses
    # the report itself survives what the body wrote (lone surrogates, BigInts, escape sequences):
    # printed, with nothing of the body's able to move the terminal or forge a line
    assert "failed" in proc.stdout.lower()
    assert not any(c in proc.stdout for c in "\x1b\r\x00\x07"), "control characters reached the terminal"
    assert not any(line.startswith("JS-PURE         passed       99") for line in proc.stdout.splitlines())
