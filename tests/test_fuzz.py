"""Fuzzing campaigns for real: xdist workers, a minimized regression file naming the right clause, the
Redis example database against a real redis-server, a clean stop on Ctrl-C, and replay outcomes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import corpus
from conformance.fuzz import bucket_of
from tests.conftest import python_module_command

FAULTY = python_module_command("tests.faulty.compilers", "staggered-parallel")
REFERENCE = f"{sys.executable} -m conformance.cli compile"


def codemode(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_buckets_ignore_values_but_not_clauses_or_shapes() -> None:
    a = bucket_of("JS-ORDER", "call 2 ('list_users', resolve) started before call 1 settled at turn 3")
    b = bucket_of("JS-ORDER", "call 3 ('get_weather', resolve) started before call 2 settled at turn 17")
    assert a == b and a.startswith("JS-ORDER-")
    assert bucket_of("JS-PARALLEL", "call 2 ('list_users', resolve) started before call 1 settled at turn 3") != a
    assert bucket_of("JS-ORDER", "call 2 ('list_users', reject) started before call 1 settled at turn 3") != a
    assert bucket_of("JS-ORDER", "the result was never returned") != a


def test_one_bug_is_one_bucket_whatever_its_cases_hold() -> None:
    # a check names its fault (Violation.kind): the records' renderings in the message do not matter
    a = bucket_of("JS-LIMIT", 'record of call 0 (\'x\', return) is {"ok":true,"value":[{"a":1}]}: it holds', "rows-length")
    b = bucket_of("JS-LIMIT", "record of call 0 ('\ud800', resolve) is [... 300 characters ...]: it holds", "rows-length")
    assert a == b != bucket_of("JS-LIMIT", "anything", "rows-order")
    assert bucket_of("JS-FORM", "\udfff lone \ud800 surrogates") == bucket_of("JS-FORM", "\udfff lone \ud800 surrogates")


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real redis-server on a free loopback port, for this test only."""
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("CODEMODE_REQUIRE_REDIS"):
            pytest.fail("redis-server is not installed (apt-get install redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import redis

        client = redis.Redis(port=port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_campaign_finds_shrinks_and_keeps_a_regression_in_redis(tmp_path: Path, redis_url: str) -> None:
    regressions = tmp_path / "regressions"
    proc = codemode("fuzz", "--cmd", FAULTY, "--role", "compiler", "--minutes", "0.4", "-n", "2",
                    "--db", redis_url, "--regressions", str(regressions), "--campaign-dir", str(tmp_path / "c"))
    assert proc.returncode == 1, proc.stdout + proc.stderr  # 1: it found something
    files = sorted(regressions.glob("JS-PARALLEL-*.jsonl"))
    assert files, proc.stdout + proc.stderr
    (entry,) = corpus.read(files[0])
    assert entry.clause == "JS-PARALLEL" and entry.expect == "fail" and entry.source == "regression"
    plan = entry.case.plan
    assert plan["mode"] == "parallel" and 2 <= len(plan["calls"]) <= 3  # a parallel plan, shrunk
    statuses = [json.loads(p.read_text()) for p in (tmp_path / "c").glob("worker-*.json")]
    assert len(statuses) == 2 and all(s["done"] and s["cases"] > 0 for s in statuses)
    assert all(s["sampled_cases"] > 0 for s in statuses) and "drawn by: sampling" in proc.stdout
    kept = [r for s in statuses for r in s["regressions"] if r["bucket"].startswith("JS-PARALLEL")]
    assert kept and all(r["minimized"] for r in kept)  # Hypothesis shrank it (within the hunt's time)
    assert "JS-PARALLEL" in proc.stdout and "codemode replay " in proc.stdout
    import redis

    keys = redis.Redis.from_url(redis_url).keys(b"codemode-fuzz:*")
    assert keys, "the workers' shared example database holds the shrunk failures"
    claims = [k for k in keys if k.startswith(b"codemode-fuzz:bucket:")]
    assert {k.rsplit(b":", 1)[1].decode() for k in claims} >= {f.stem for f in files}  # one claim per bucket
    assert not list((tmp_path / "c" / "buckets").iterdir())  # claimed in Redis, not in the campaign folder

    # replay: still FAILED on the faulty compiler, FIXED on the reference
    failed = codemode("replay", str(files[0]), "--role", "compiler", "--cmd", FAULTY)
    assert failed.returncode == 1 and failed.stdout.startswith("FAILED") and "JS-PARALLEL" in failed.stdout
    fixed = codemode("replay", entry.id[:8], "--role", "compiler", "--cmd", REFERENCE, "--corpora", str(tmp_path))
    assert fixed.returncode == 0 and fixed.stdout.startswith("FIXED"), fixed.stdout + fixed.stderr  # found by id


def test_hypothesis_share_one_draws_every_case_with_hypothesis(tmp_path: Path) -> None:
    proc = codemode("fuzz", "--cmd", REFERENCE, "--role", "compiler", "--minutes", "0.15", "-n", "1",
                    "--hypothesis-share", "1", "--regressions", str(tmp_path / "r"), "--campaign-dir", str(tmp_path / "c"))
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the reference: nothing found
    (status,) = [json.loads(p.read_text()) for p in (tmp_path / "c").glob("worker-*.json")]
    assert status["hypothesis_cases"] == status["cases"] > 0 and status["sampled_cases"] == 0
    bad = codemode("fuzz", "--cmd", REFERENCE, "--hypothesis-share", "1.5")
    assert bad.returncode == 2 and "--hypothesis-share" in bad.stderr


def test_replay_reports_errored_for_a_crashing_implementation(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    curated = corpus.read(Path("corpora/curated/compile.jsonl"))[:6]
    corpus.write(path, curated)
    proc = codemode("replay", str(path), "--role", "compiler", "--cmd", python_module_command("tests.faulty.broken", "dead"))
    assert proc.returncode == 1 and "ERRORED" in proc.stdout, proc.stdout + proc.stderr


def test_ctrl_c_stops_a_campaign_cleanly_and_keeps_what_it_found(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "fuzz", "--cmd", FAULTY, "--role", "compiler", "--minutes", "10",
         "-n", "2", "--regressions", str(tmp_path / "regressions"), "--campaign-dir", str(folder)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline and not list((tmp_path / "regressions").glob("*.jsonl")):
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=150)
    assert "campaign interrupted" in out, out + err
    assert list((tmp_path / "regressions").glob("JS-PARALLEL-*.jsonl"))
    statuses = [json.loads(p.read_text()) for p in folder.glob("worker-*.json")]
    assert statuses and all(s["done"] for s in statuses)


def test_a_relative_command_runs_where_fuzz_was_started_and_a_broken_one_stops_it(tmp_path: Path) -> None:
    script = tmp_path / "compiler.sh"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -m conformance compile\n")
    script.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    proc = subprocess.run([sys.executable, "-m", "conformance", "fuzz", "--cmd", "./compiler.sh", "--role", "compiler",
                           "--minutes", "0.12", "-n", "1", "--regressions", "r", "--campaign-dir", "c"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (status,) = [json.loads(p.read_text()) for p in (tmp_path / "c").glob("worker-*.json")]
    assert status["cases"] > 0 and not status["errors"] and not status["buckets"]
    missing = subprocess.run([sys.executable, "-m", "conformance", "fuzz", "--cmd", "./missing.sh", "--minutes", "0.1"],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert missing.returncode == 2 and "smoke test failed, so no campaign was started" in missing.stderr


def test_lone_surrogates_in_failures_are_bucketed_written_and_replayed(tmp_path: Path) -> None:
    command = python_module_command("tests.faulty.hostile", "throw-surrogate")
    proc = codemode("fuzz", "--cmd", command, "--role", "compiler", "--minutes", "0.12", "-n", "1",
                    "--regressions", str(tmp_path / "r"), "--campaign-dir", str(tmp_path / "c"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    statuses = [json.loads(p.read_text()) for p in (tmp_path / "c").glob("worker-*.json")]
    assert statuses and not any(s["errors"] for s in statuses)
    files = sorted((tmp_path / "r").glob("JS-FORM-*.jsonl"))
    assert files and "Traceback" not in proc.stderr
    replayed = codemode("replay", str(files[0]), "--role", "compiler", "--cmd", command)
    assert replayed.returncode == 1 and replayed.stdout.startswith("FAILED") and "Traceback" not in replayed.stderr
