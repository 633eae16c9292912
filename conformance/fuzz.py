"""Fuzzing campaigns: ``codemode fuzz --cmd CMD --minutes N -n WORKERS [--db DIR|redis://...]``.

A campaign runs the certification's properties with the ``fuzz`` profile for a fixed time on pytest-xdist
workers (``pytest -p conformance.pytest_plugin --codemode-fuzz DIR -n WORKERS``). Every worker draws
rounds of cases with its own seeds and judges them in batches, as ``certify`` does. Most rounds are
sampled from a seeded ``random.Random`` by the same generators the Hypothesis strategies drive
(``sample_plan_cases``, ``sample_compile_cases``: a hundred times faster to draw); a tenth of each
worker's time (``--hypothesis-share``) goes to rounds Hypothesis draws, for its edge cases.

A failure is put in a *bucket* by its clause and its signature (the violation's message with the values
taken out), so the thousandth instance of a bug is not news. For the first instance of a new bucket,
Hypothesis searches for a failure of that clause and shrinks it; the minimal case (or the case as found,
marked so, when the search does not meet the failure again in its time) is written to
``corpora/regressions/`` as a corpus line naming its clause, where ``certify`` replays it from then on
(``codemode replay FILE --cmd CMD`` says FIXED, FAILED or ERRORED).

Workers share a Hypothesis example database: a directory by default, or a Redis server
(``--db redis://127.0.0.1:6379/0``, Hypothesis's ``RedisExampleDatabase``) so campaigns on many machines
replay each other's minimal failures when they shrink. A bucket is claimed by creating a file in the
campaign directory (or a key in the Redis server), so two workers never shrink the same bucket twice.

The parent process shows a live status (cases/s, cases per clause, buckets, time since the last new
bucket) read from each worker's status file, and stops the campaign cleanly at its time limit or on
Ctrl-C: workers finish the batch in hand, write what they found, and exit.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATUS_EVERY = 1.0  # seconds between a worker's status writes


def bucket_of(clause: str, message: str, kind: str = "") -> str:
    """A failure's bucket: its clause and the fault's ``kind`` (the name the check gives it, the same for
    every case one bug breaks), hashed; without a kind, its message with quoted text, bracketed renderings
    of values and numbers taken out."""
    if kind:
        shape = f"kind:{kind}"
    else:
        shape = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|\[[^\]]*\]|\{[^}]*\}|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?', "_",
                       message)
        shape = re.sub(r"\s+", " ", shape)[:160]
    digest = hashlib.sha256(f"{clause}|{shape}".encode("utf-8", "backslashreplace")).hexdigest()[:10]
    return f"{clause}-{digest}"


def example_database(spec: str | None, campaign: Path) -> Any:
    """The shared Hypothesis example database: ``redis://...`` or a directory (default: in the campaign)."""
    from hypothesis.database import DirectoryBasedExampleDatabase

    if spec and spec.startswith(("redis://", "rediss://", "unix://")):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError as err:  # pragma: no cover - redis is a dependency of the kit
            raise RuntimeError("a Redis example database needs the redis package: pip install redis") from err
        client = redis.Redis.from_url(spec)
        client.ping()  # fail now, with the server's error, not in the middle of a campaign
        return RedisExampleDatabase(client, key_prefix=b"codemode-fuzz:")
    return DirectoryBasedExampleDatabase(spec or str(campaign / "examples"))


# --- the worker side (runs inside a pytest-xdist worker, see conformance.pytest_plugin) ---------------


@dataclass
class WorkerOptions:
    campaign: Path
    role: str
    command: str | None
    python: str | None
    deadline: float  # time.time() at which to stop
    seed: int
    db: str | None
    regressions: Path
    timeout: float
    tokenizer: str
    js_collector: str | None = None  # a JavaScript collector's file (the collector role)
    hypothesis_share: float = 0.1  # of a worker's time, for rounds Hypothesis draws (the rest are sampled)
    cwd: str | None = None  # where the command runs (the directory fuzz was started in)


def work(options: WorkerOptions, worker: int) -> dict[str, Any]:
    """One worker's share of a campaign: rounds of exploration until the deadline or the stop file, a
    minimal case for every new bucket. Returns (and keeps writing) the worker's status."""
    from hypothesis import strategies as st

    from conformance import corpus
    from conformance.adapters import make_adapter
    from conformance.cases import sample_compile_cases
    from conformance.certify import compile_batches, plan_batches
    from conformance.results import Run
    from conformance.search import PROFILES, explore, hunt
    from conformance.engine import CompilerJudge
    from conformance.plan_cases import sample_plan_cases
    from conformance.plan_engine import PlannerJudge
    from conformance.v8host import V8Host

    profile = PROFILES["fuzz"]
    database = example_database(options.db, options.campaign)
    status_path = options.campaign / f"worker-{worker}.json"
    stop = options.campaign / "stop"
    claims = options.campaign / "buckets"
    claims.mkdir(parents=True, exist_ok=True)
    status: dict[str, Any] = {"worker": worker, "pid": os.getpid(), "started": time.time(), "cases": 0,
                              "sampled_cases": 0, "hypothesis_cases": 0, "hypothesis_seconds": 0.0, "clauses": {},
                              "buckets": [], "regressions": [], "last_new": None, "errors": [], "done": False}
    per_clause: Counter[str] = Counter()
    last_write = 0.0

    def write_status(force: bool = False) -> None:
        nonlocal last_write
        if not force and time.time() - last_write < STATUS_EVERY:
            return
        status["clauses"] = dict(per_clause)
        status["updated"] = time.time()
        tmp = status_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(status), encoding="utf-8")
        os.replace(tmp, status_path)
        last_write = time.time()

    def stopped() -> bool:
        return time.time() >= options.deadline or stop.exists()

    host = V8Host()
    if options.role == "collector":
        from conformance.collect import CollectorAdapter, JSCollectorAdapter, StdioCollectorAdapter

        if options.js_collector:
            adapter: Any = JSCollectorAdapter(options.js_collector, host, timeout=options.timeout)
        elif options.command:
            adapter = StdioCollectorAdapter(options.command, timeout=options.timeout, cwd=options.cwd)
        else:
            adapter = CollectorAdapter(str(options.python), timeout=options.timeout)
    else:
        adapter = make_adapter(command=options.command, python=options.python, timeout=options.timeout,
                               role=options.role, cwd=options.cwd)
    try:
        jobs: list[tuple[Any, st.SearchStrategy[Any], Any]] = []
        if options.role == "collector":
            from conformance.certify import collect_batches
            from conformance.collect import CollectJudge, sample_collect_cases

            jobs.append((CollectJudge(adapter).evaluate, collect_batches(profile), sample_collect_cases))
        elif options.role != "compiler":
            plan_judge = PlannerJudge(adapter, host, role=options.role, tokenizer=options.tokenizer)
            jobs.append((plan_judge.evaluate, plan_batches(profile), sample_plan_cases))
        if options.role not in ("planner", "collector"):
            jobs.append((CompilerJudge(adapter, host).evaluate, compile_batches(profile), sample_compile_cases))
        round_ = 0
        spent = [0.0] * len(jobs)  # seconds of rounds, per job (plan cases, compile cases)
        spent_hypothesis = [0.0] * len(jobs)
        while not stopped():
            job = round_ % len(jobs)
            evaluate, batches, sample = jobs[job]
            seed_value = options.seed + worker * 1_000_003 + round_
            round_ += 1
            run = Run(role=options.role, profile=profile, seed=seed_value, clauses=())
            found: dict[str, tuple[Any, Any]] = {}

            def judged(results: list[Any], *, drawn_by: str) -> list[Any]:
                for result in results:
                    status["cases"] += 1
                    status[drawn_by] += 1
                    for cid in result.exercised:
                        per_clause[cid] += 1
                    for v in result.violations:
                        found.setdefault(bucket_of(v.clause, v.message, v.kind), (result.case, v))
                    if result.errored is not None and result.exercised:
                        reason = f"errored: {result.errored.reason}"
                        found.setdefault(bucket_of(result.exercised[0], reason), (result.case, reason))
                write_status()
                return results

            # most rounds judge cases sampled from a seeded random.Random (a hundred times faster to draw);
            # hypothesis_share of the time goes to rounds Hypothesis draws, with its own taste for edge
            # cases (kept per job, so plan and compile cases both get theirs). A round is short either way,
            # so the deadline is never overrun by much.
            started = time.monotonic()
            share = options.hypothesis_share
            if share >= 1 or (spent[job] > 0 and spent_hypothesis[job] < share * spent[job]):
                explore(run, lambda cases, evaluate=evaluate: judged(evaluate(cases), drawn_by="hypothesis_cases"),
                        batches, profile=profile, seed_value=seed_value)
                spent_hypothesis[job] += time.monotonic() - started
                status["hypothesis_seconds"] = sum(spent_hypothesis)
            else:
                judged(evaluate(sample(random.Random(seed_value), profile.chunk)), drawn_by="sampled_cases")
            spent[job] += time.monotonic() - started
            for bucket, (case, violation) in found.items():
                if bucket in status["buckets"] or not _claim(claims / bucket, database, options):
                    continue
                status["buckets"].append(bucket)
                status["last_new"] = time.time()
                clause = bucket.rsplit("-", 1)[0]
                minimal = None
                # an error is kept as found (shrinking would re-crash it), and so is everything found once
                # the campaign is stopped (Ctrl-C): it stops promptly and keeps what it found. At the time
                # limit a bucket found in the last round is still shrunk, for at most 30 s more.
                if not isinstance(violation, str) and not stop.exists():
                    minimal = hunt(evaluate, evaluate, batches, clause, profile=profile, seed_value=seed_value,
                                   database=database, stop=lambda: stop.exists(),
                                   deadline=min(options.deadline + 30, time.time() + profile.hunt_seconds))
                if minimal is not None:
                    case, violation = minimal.case, minimal.violation
                message = violation if isinstance(violation, str) else violation.message
                entry = corpus.Entry.of(case, clause, expect="fail", source="regression",
                                        note=f"bucket {bucket}: {message}"[:500])
                path = options.regressions / f"{bucket}.jsonl"
                corpus.write(path, [entry])
                status["regressions"].append({"bucket": bucket, "file": str(path), "case": entry.id,
                                              "message": message[:300], "minimized": minimal is not None})
                write_status(force=True)
    except Exception as err:  # noqa: BLE001 - a worker reports what stopped it and keeps what it found
        status["errors"].append(f"{type(err).__name__}: {err}")
    finally:
        status["done"] = True
        write_status(force=True)
        adapter.close()
        host.close()
    return status


def _claim(path: Path, database: Any = None, options: WorkerOptions | None = None) -> bool:
    """Claim a bucket for this worker: in the Redis server when the campaign shares one (so campaigns on
    several machines against the same implementation never write the same bucket twice; a claim lapses an
    hour after this campaign's deadline), else by creating a file in the campaign folder."""
    client = getattr(database, "redis", None)  # a RedisExampleDatabase's server
    if client is not None and options is not None:
        target = hashlib.sha256(f"{options.role}|{options.command or options.python}".encode()).hexdigest()[:10]
        lapse = max(60, int(options.deadline - time.time()) + 3600)
        return bool(client.set(f"codemode-fuzz:bucket:{target}:{path.name}".encode(), os.getpid(), nx=True, ex=lapse))
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


# --- the parent side: ``codemode fuzz`` -----------------------------------------------------------------


def campaign(
    *,
    role: str,
    command: str | None,
    python: str | None,
    minutes: float,
    workers: int,
    db: str | None,
    regressions: Path,
    seed: int,
    timeout: float,
    tokenizer: str,
    campaign_dir: Path | None = None,
    out: Any = sys.stderr,
    hypothesis_share: float = 0.1,
    cwd: str | None = None,
) -> dict[str, Any]:
    """Run a campaign on ``workers`` xdist workers for ``minutes``; returns the merged status."""
    folder = (campaign_dir or Path(tempfile.mkdtemp(prefix="codemode-fuzz-"))).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    if db is not None and not db.startswith(("redis://", "rediss://", "unix://")):
        db = str(Path(db).resolve())  # the workers run in the campaign folder
        Path(db).mkdir(parents=True, exist_ok=True)
    example_database(db, folder)  # a bad --db fails here, before any worker starts
    deadline = time.time() + minutes * 60
    from importlib.metadata import entry_points

    installed = any(ep.name == "codemode" for ep in entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "conformance.pytest_plugin"]  # loaded by its entry point when installed
    args = [
        sys.executable, "-m", "pytest", *plugin, "-p", "no:cacheprovider", "-q",
        "--no-header", "-n", str(workers), "--dist", "each", "--rootdir", str(folder), "--codemode-fuzz", str(folder),
        "--codemode-fuzz-deadline", repr(deadline), "--codemode-role", role, "--codemode-seed", str(seed),
        "--codemode-fuzz-regressions", str(regressions.resolve()), "--codemode-timeout", str(timeout),
        "--codemode-tokenizer", tokenizer, "--codemode-fuzz-workers", str(workers),
        "--codemode-fuzz-hypothesis-share", repr(hypothesis_share), "--codemode-cwd", cwd or os.getcwd(),
    ]
    args += ["--codemode-cmd", command] if command else ["--codemode-python", str(python)]
    if db:
        args += ["--codemode-fuzz-db", db]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    # every worker (and the implementation each starts) gets one OpenMP thread unless told otherwise:
    # workers already fill the cores, and spinning OpenMP threads of several processes starve each other
    env.setdefault("OMP_NUM_THREADS", "1")
    log = open(folder / "pytest.log", "w", encoding="utf-8")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=folder,
                            start_new_session=True)
    started = time.time()
    tty = hasattr(out, "isatty") and out.isatty()
    last_line = 0.0
    interrupted = False
    try:
        while proc.poll() is None:
            time.sleep(0.5)
            merged = merge(folder)
            if tty or time.time() - last_line >= 30:
                line = status_line(merged, started)
                print(("\r\x1b[2K" + line) if tty else line, end="" if tty else "\n", file=out, flush=True)
                last_line = time.time()
            if time.time() > deadline + 120:  # workers overran their deadline: make them stop
                (folder / "stop").touch()
    except KeyboardInterrupt:
        interrupted = True
        (folder / "stop").touch()
        print("\nstopping: the workers finish the batch in hand and write what they found ...", file=out, flush=True)
        try:
            proc.wait(timeout=120)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            (folder / "stop").touch()
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    merged = merge(folder)
    merged["interrupted"] = interrupted
    merged["seconds"] = time.time() - started
    merged["campaign"] = str(folder)
    merged["exit"] = proc.returncode
    if tty:
        print(file=out)
    return merged


def merge(folder: Path) -> dict[str, Any]:
    """The workers' status files, summed."""
    merged: dict[str, Any] = {"cases": 0, "sampled_cases": 0, "hypothesis_cases": 0, "clauses": Counter(),
                              "buckets": [], "regressions": [], "workers": 0, "last_new": None, "errors": [], "done": 0}
    for path in sorted(folder.glob("worker-*.json")):
        try:
            status = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being replaced right now
        merged["workers"] += 1
        merged["done"] += bool(status.get("done"))
        merged["cases"] += status["cases"]
        merged["sampled_cases"] += status.get("sampled_cases", 0)
        merged["hypothesis_cases"] += status.get("hypothesis_cases", 0)
        merged["clauses"].update(status["clauses"])
        merged["buckets"] += status["buckets"]
        merged["regressions"] += status["regressions"]
        merged["errors"] += status["errors"]
        if status["last_new"] and (merged["last_new"] is None or status["last_new"] > merged["last_new"]):
            merged["last_new"] = status["last_new"]
    return merged


def status_line(merged: dict[str, Any], started: float) -> str:
    seconds = max(time.time() - started, 1e-9)
    since = "none yet" if merged["last_new"] is None else f"{time.time() - merged['last_new']:.0f}s ago"
    top = ", ".join(f"{c} {n}" for c, n in merged["clauses"].most_common(3))
    return (f"{seconds:5.0f}s  {merged['cases']} cases ({merged['cases'] / seconds:.0f}/s) on {merged['workers']} workers;"
            f" {len(merged['buckets'])} buckets, last new {since}; most cases: {top}")


def summary(merged: dict[str, Any], *, target: str, role: str) -> str:
    from conformance.report import kit_command, shown

    lines = [
        f"campaign {'interrupted' if merged['interrupted'] else 'finished'} after {merged['seconds']:.0f}s:"
        f" {merged['cases']} cases ({merged['cases'] / max(merged['seconds'], 1e-9):.0f}/s) on {merged['workers']} workers,"
        f" {len(merged['buckets'])} buckets",
        f"drawn by: sampling {merged['sampled_cases']}, Hypothesis {merged['hypothesis_cases']}",
        "cases per clause: " + ", ".join(f"{c} {n}" for c, n in sorted(merged["clauses"].items())),
    ]
    for reg in merged["regressions"]:
        lines.append(f"  {reg['bucket']}: {shown(reg['message'][:160])}")
        lines.append(f"    {'minimized' if reg['minimized'] else 'as found'}, case {reg['case']} -> {reg['file']}")
        lines.append(f"    replay: {kit_command()} replay {shlex.quote(reg['file'])} --role {role} {target}")
    for error in merged["errors"]:
        lines.append(f"  a worker stopped early: {shown(error)}")
    lines.append(f"campaign files: {merged['campaign']}")
    return "\n".join(lines)
