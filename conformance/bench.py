"""``codemode bench js``: how fast compiled plans are checked in V8, batched against the baselines.

Cases are generated and compiled first (not timed). Each mode then runs every case in V8 and judges
it with the JS checks; the figures are cases per second on this machine, measured in the same run:

* batched: 200 cases per ``eval`` in one long-lived context, no snapshot (the hunting path);
* batched + purity: the same with the built-in snapshot around each batch (the certify path);
* per-case eval: one case per ``eval`` round trip in the same context;
* fresh context: a new V8 context per case.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any


from conformance.cases import CompileCase, expect, valid_cases
from conformance.observations import CompileObservation, freeze
from conformance.registry import judge
from conformance.v8host import V8Host
from reference.compiler import compile_request


def _cases(n: int) -> list[CompileCase]:
    from conformance.search import drawn

    return drawn(valid_cases(), n, seed_value=1234)


def judge_js(item: tuple[CompileCase, Any], run: dict[str, Any]) -> Any:
    """Every registered compile clause on one case's V8 run (what certification does per case)."""
    case, exp = item
    return judge("compile", CompileObservation(case=case, answer={"js": exp.spec["js"]}, exp=exp, run=freeze(run)))


def bench_js(*, cases: int = 2000, batch: int = 200) -> int:
    warm = min(cases, 500)
    print(f"generating and compiling {cases} cases and {warm} warm-up cases (not timed)...", flush=True)
    generated = _cases(cases + warm)
    exps = []
    for case in generated:
        js = compile_request(case.plan, case.tools).js
        assert js is not None
        exps.append((case, expect(case, js)))
    warm_specs = [e.spec for _, e in exps[cases:]]
    exps = exps[:cases]
    specs = [e.spec for _, e in exps]
    host = V8Host()

    def batched(purity: bool) -> Callable[[], None]:
        def run() -> None:
            for start in range(0, len(specs), batch):
                chunk = slice(start, start + batch)
                for exp, obs in zip(exps[chunk], host.run_batch(specs[chunk], purity=purity)):
                    judge_js(exp, obs)

        return run

    def per_case() -> None:
        for exp, spec in zip(exps, specs):
            (obs,) = host.run_batch([spec], purity=False)
            judge_js(exp, obs)

    sample = max(1, len(specs) // 10)

    def fresh() -> None:
        for exp, spec in zip(exps[:sample], specs[:sample]):
            judge_js(exp, host.run_alone(spec, purity=False))

    # warm the context, V8's JIT and the heap on other cases (the same sources would hit V8's cache)
    for start in range(0, len(warm_specs), batch):
        host.run_batch(warm_specs[start : start + batch], purity=False)
    rows = []
    for name, fn, n in (
        ("batched", batched(False), len(specs)),
        ("batched + purity", batched(True), len(specs)),
        ("per-case eval", per_case, len(specs)),
        ("fresh context", fresh, sample),
    ):
        t0 = time.perf_counter()
        fn()
        seconds = time.perf_counter() - t0
        rows.append((name, n, seconds))
    host.close()
    base = rows[0][1] / rows[0][2]
    print(f"\n{'mode':<18} {'cases':>6} {'seconds':>8} {'cases/s':>9} {'us/case':>8} {'batched is':>11}")
    for name, n, seconds in rows:
        rate = n / seconds
        print(f"{name:<18} {n:>6} {seconds:>8.3f} {rate:>9.0f} {1e6 / rate:>8.1f} {base / rate:>10.1f}x")
    print(f"\nbatch size {batch}; each case is run in V8 and judged by every JS check")
    return 0


def bench_plan(
    *, instructions: int = 2000, chunk: int = 500, workers: int = 2, threads: int | None = 1, contended: bool = False
) -> int:
    """``codemode bench plan``: the in-process reference planner, batched on ``workers`` cores, against
    the same planner batched in one process and one instruction at a time.

    Instructions (supported and unsupported, from held-out seeds) are rendered first (not timed). Batched
    figures are instructions per second through ``Planner.respond_many`` in calls of ``chunk`` (catalog
    validation, lexing, features, the network on dynamically padded batches, decoding, plan validation);
    the single figures are the latency of ``Planner.respond`` (p50, p90, p99). Each batched figure is the
    best of five rounds after an untimed one, and the single figures are those of the round with the
    lowest median of three: the noise of a shared machine only ever slows a round down. The planners run
    the network on ``threads`` intra-op threads (``None``: torch's default, one per core).

    With ``contended``, every figure is measured twice: as above, then while another process keeps one
    core busy (a child spinning in a loop for the duration, killed after), as ``make certify`` runs the
    kit beside the planner; the two are printed side by side with how many times slower the busy one is,
    and the targets are judged on each.
    """
    import statistics
    import subprocess
    import sys

    import torch

    from reference import model as M
    from reference.lexer import lex
    from reference.planner import Planner
    from conformance.training import held_out

    items = held_out(instructions, base=500_000)
    requests = [(i.text, i.catalog.to_json()) for i in items]
    tokens = sum(lex(i.text, max_tokens=10**6).count for i in items) / len(items)
    network = M.load()
    print(
        f"codemode bench plan: {len(requests)} held-out instructions (about {tokens:.0f} tokens each),"
        f" torch {torch.__version__}, the network on {threads or torch.get_num_threads()} intra-op"
        f" thread(s) (torch's default here: {torch.get_num_threads()}), {workers} worker processes"
    )

    def batched(planner: Planner) -> float:
        for k in range(0, len(requests), chunk):  # one untimed round: starts any workers, and TorchScript
            planner.respond_many(requests[k : k + chunk])  # compiles for the shapes it meets (once a process)
        best = 0.0
        for _ in range(5):
            start = time.perf_counter()
            for k in range(0, len(requests), chunk):
                planner.respond_many(requests[k : k + chunk])
            best = max(best, len(requests) / (time.perf_counter() - start))
        return best

    def measure() -> dict[str, float]:
        with Planner(network, workers=workers, threads=threads) as sharded:
            fast = batched(sharded)
        here = Planner(network, threads=threads)
        base = batched(here)
        rounds = []
        for _ in range(3):
            singles = []
            for request in requests[: min(len(requests), 1000)]:
                t0 = time.perf_counter()
                here.respond(*request)
                singles.append(time.perf_counter() - t0)
            rounds.append(sorted(singles))
        singles = min(rounds, key=statistics.median)
        return {
            "fast": fast,
            "base": base,
            "one": len(singles) / sum(singles),
            "p50": statistics.median(singles) * 1000,
            "p90": singles[int(0.9 * (len(singles) - 1))] * 1000,
            "p99": singles[int(0.99 * (len(singles) - 1))] * 1000,
        }

    def targets(f: dict[str, float]) -> str:
        return (
            f"batched >= 5000/s: {'met' if f['fast'] >= 5000 else 'NOT met'};"
            f" single p50 <= 1 ms: {'met' if f['p50'] <= 1.0 else 'NOT met'}"
        )

    idle = measure()
    if not contended:
        f = idle
        print(f"  batched, {workers} workers ({chunk} per call)  {f['fast']:8.0f} instructions/s  {f['fast'] / f['one']:5.1f}x one at a time")
        print(f"  batched, in-process ({chunk} per call)  {f['base']:8.0f} instructions/s  {f['base'] / f['one']:5.1f}x one at a time")
        print(f"  one at a time (baseline)          {f['one']:8.0f} instructions/s  p50 {f['p50']:.3f} ms, p90 {f['p90']:.3f} ms, p99 {f['p99']:.3f} ms")
        print(f"targets: {targets(f)}")
        return 0
    # another process on one core, as when the kit and the planner run side by side
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = measure()
    finally:
        spinner.kill()
        spinner.wait()
    rows = [
        (f"batched, {workers} workers ({chunk} per call)", "fast", "instructions/s"),
        (f"batched, in-process ({chunk} per call)", "base", "instructions/s"),
        ("one at a time", "one", "instructions/s"),
        ("one at a time, p50", "p50", "ms"),
        ("one at a time, p90", "p90", "ms"),
        ("one at a time, p99", "p99", "ms"),
    ]
    print(f"  {'figure':<36} {'idle':>10} {'one core busy':>14}  {'unit':<15} slowdown")
    for label, key, unit in rows:
        a, b = idle[key], busy[key]
        slower = a / b if unit == "instructions/s" else b / a  # rates fall, latencies rise
        digits = 0 if unit == "instructions/s" else 3
        print(f"  {label:<36} {a:10.{digits}f} {b:14.{digits}f}  {unit:<15} {slower:7.2f}x")
    print(f"targets, idle: {targets(idle)}")
    print(f"targets, one core busy: {targets(busy)}")
    return 0


def bench_fuzz(*, seconds: float = 60.0, workers: int = 2) -> int:
    """``codemode bench fuzz``: full-pipeline campaign throughput against the reference (``codemode plan
    --js``, as ``make certify`` runs it; role pipeline: plan requests whose ``js`` is judged in V8, and
    compile requests) on ``workers`` xdist workers, against two baselines from the same run: one worker,
    and ``workers`` workers drawing every case with Hypothesis (``--hypothesis-share 1``). The rate counts judged cases over the time the
    workers were judging (start-up excluded); regressions go to a scratch folder, not the corpora."""
    import json
    import shlex
    import sys
    import tempfile
    from pathlib import Path

    from conformance import fuzz

    command = shlex.join([sys.executable, "-m", "conformance.cli", "plan", "--js"])
    print(f"codemode bench fuzz: role pipeline, --cmd 'codemode plan --js', {seconds:g}s per campaign")
    runs = [(f"{workers} workers", workers, 0.1)]
    if workers != 1:
        runs.append(("1 worker", 1, 0.1))
    runs.append((f"{workers} workers, Hypothesis only", workers, 1.0))
    rates = []
    print(f"  {'campaign':<30} {'cases':>7} {'judging':>16} {'rate':>14}  {workers} workers is")
    for label, n, share in runs:
        with tempfile.TemporaryDirectory(prefix="codemode-bench-fuzz-") as scratch:
            folder = Path(scratch)
            merged = fuzz.campaign(
                role="pipeline", command=command, python=None, minutes=seconds / 60,
                workers=n, db=None, regressions=folder / "regressions", seed=0, timeout=30.0,
                tokenizer="reference", campaign_dir=folder / "campaign", out=open(os.devnull, "w"),
                hypothesis_share=share,
            )
            statuses = [json.loads(p.read_text()) for p in (folder / "campaign").glob("worker-*.json")]
            if not statuses:
                print(f"  {label}: no worker reported (see the campaign log)")
                return 1
            busy = max(s["updated"] for s in statuses) - min(s["started"] for s in statuses)
            rates.append(merged["cases"] / max(busy, 1e-9))
            print(f"  {label:<30} {merged['cases']:7d} {busy:14.1f}s {rates[-1]:8.0f} cases/s  {rates[0] / rates[-1]:10.2f}x"
                  f"  ({len(merged['buckets'])} buckets)")
    print(f"\ntarget >= 1000 cases/s on {workers} workers: {'met' if rates[0] >= 1000 else 'NOT met'}")
    return 0


def bench_openai(*, requests: int = 2000, latency: float = 0.2, concurrency: int = 32) -> int:
    """``codemode bench openai``: the driver against the kit's fake, run as a process of its own.

    * answered requests per second at ``concurrency`` 32 when every answer takes ``latency`` (200 ms):
      what bounds certifying a slow server (the ideal is concurrency / latency, 160/s);
    * the driver's own cost per request with no latency, one request at a time: its time minus a
      baseline's, a bare httpx POST of the same request body to the same server, measured in the same
      run (prompt, schema, canonical body, reading, decoding and validating the answer).

    Requests use 50 catalogs in turn (their schemas are built once each and cached, as in a run)."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    import httpx

    from conformance.openai.driver import DriverOptions, OpenAIAdapter
    from reference import jsonio

    def catalog(k: int) -> list[dict[str, Any]]:
        return [{"name": "get_weather", "arguments": {"city": "string", "units": "string"}, "required": ["city"],
                 "returns": {"kind": "object"}},
                {"name": f"list_users_{k}", "arguments": {"team": "string", "limit": "number"}, "required": ["team"],
                 "returns": {"kind": "array", "properties": ["id", "name"]}}]

    reqs = [{"instruction": f'call get_weather with city "Paris {k}"', "tools": catalog(k % 50)}
            for k in range(requests)]
    answer = {"plan": {"mode": "single", "calls": [{"tool": "get_weather", "args": {"city": "Paris"}}],
                       "output": {"kind": "last"}}}

    def fake(latency_s: float) -> tuple[subprocess.Popen[str], str]:
        script = Path(tempfile.mkdtemp(prefix="codemode-bench-")) / "script.json"
        script.write_text(jsonio.dumps([{"answer": answer, "times": "*", "latency": latency_s}]))
        proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "fake-openai", "--script", str(script),
                                 "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        return proc, proc.stdout.readline().split()[-1]

    print(f"codemode bench openai: the driver against the kit's fake (a separate process), {os.cpu_count()} CPUs")
    slow = min(requests, 20 * concurrency)
    proc, url = fake(latency)
    try:
        adapter = OpenAIAdapter(DriverOptions(url=url, model="fake", concurrency=concurrency))
        adapter.exchange(reqs[:concurrency])  # connections opened, schemas cached
        started = time.perf_counter()
        got = adapter.exchange(reqs[:slow])
        seconds = time.perf_counter() - started
        adapter.close()
    finally:
        proc.terminate()
        proc.wait(30)
    answered = sum(isinstance(a, dict) for a in got)
    ideal = concurrency / latency
    print(f"  {latency * 1000:.0f} ms per answer, concurrency {concurrency}: {answered / seconds:8.1f} answered requests/s"
          f" ({answered} of {slow} in {seconds:.2f}s; ideal {ideal:.0f}/s, ratio {answered / seconds / ideal:.2f})")

    proc, url = fake(0)
    try:
        adapter = OpenAIAdapter(DriverOptions(url=url, model="fake", concurrency=1))
        adapter.exchange(reqs[:100])  # warm: schemas cached, the connection open
        fast = reqs[:requests]
        bodies = [adapter.driver.body(adapter.options.prompt.messages(
            r["instruction"], r["tools"], mode="strict", schema={}), r["tools"]) for r in fast]
        from conformance.openai.driver import NO_DELAY

        endpoint = url + "/chat/completions"
        blocking = httpx.Client(timeout=30, trust_env=False, headers={"content-type": "application/json"},
                                transport=httpx.HTTPTransport(socket_options=[NO_DELAY]))
        loop = adapter._loop  # the bare async client runs on the driver's own loop, as the driver's does
        bare = httpx.AsyncClient(timeout=30, trust_env=False, headers={"content-type": "application/json"},
                                 transport=httpx.AsyncHTTPTransport(socket_options=[NO_DELAY]))

        async def posts(chunk: list[bytes]) -> None:
            for body in chunk:
                await bare.post(endpoint, content=body)

        ways: dict[str, Callable[[int, int], None]] = {
            "driver": lambda a, b: [adapter.exchange([r]) for r in fast[a:b]] and None,
            "async": lambda a, b: loop.run_until_complete(posts(bodies[a:b])),
            "blocking": lambda a, b: [blocking.post(endpoint, content=body) for body in bodies[a:b]] and None,
        }
        # interleaved blocks of 50 requests, each way in turn, so drift on a shared machine hits all three
        per: dict[str, list[float]] = {name: [] for name in ways}
        for a in range(0, len(fast), 50):
            b = min(len(fast), a + 50)
            for name, way in ways.items():
                began = time.perf_counter()
                way(a, b)
                per[name].append((time.perf_counter() - began) / (b - a))
        loop.run_until_complete(bare.aclose())
        blocking.close()
        adapter.close()
    finally:
        proc.terminate()
        proc.wait(30)
    driver, base_async, base = (statistics.median(per[name]) for name in ("driver", "async", "blocking"))
    print(f"  no latency, one at a time (medians of {len(per['driver'])} interleaved blocks of 50): driver"
          f" {driver * 1000:.3f} ms per request; baselines, the same bodies POSTed bare: httpx.AsyncClient"
          f" {base_async * 1000:.3f} ms, httpx.Client {base * 1000:.3f} ms")
    print(f"  driver overhead: {(driver - base_async) * 1000:.3f} ms per request over its own HTTP client"
          f" (ratio {driver / base_async:.2f}), {(driver - base) * 1000:.3f} ms over a blocking client"
          f" (ratio {driver / base:.2f})")
    return 0


def bench_collector(*, cases: int = 2000, batch: int = 200) -> int:
    """``codemode bench collector``: fragments per second pushed through a collector and judged, for the
    JavaScript reference collector in the V8 host, batched (``batch`` streams per fresh context: the
    certify path), against baselines measured in the same run: one stream per fresh context, and the
    Python reference collector in process (observed and judged inline, no thread). Every figure includes
    judging each stream by the Transport clauses."""
    from conformance.collect import CollectCase, CollectJudge, JSCollectorAdapter, collect_cases, observe
    from conformance.search import drawn as examples
    from reference import transports

    drawn: list[CollectCase] = examples(collect_cases(), cases, seed_value=4321)
    fragments = sum(len(c.fragments) for c in drawn)
    print(f"codemode bench collector: {len(drawn)} fragment streams, {fragments} fragments, {os.cpu_count()} CPUs")
    from importlib import resources

    source = str(resources.files("reference").joinpath("collector.js"))
    with V8Host() as host:
        judge_ = CollectJudge(JSCollectorAdapter(source, host))
        started = time.perf_counter()
        for k in range(0, len(drawn), batch):
            judge_.evaluate(drawn[k : k + batch])
        batched = fragments / (time.perf_counter() - started)
        alone_cases = drawn[: max(1, len(drawn) // 10)]
        alone_fragments = sum(len(c.fragments) for c in alone_cases)
        started = time.perf_counter()
        for case in alone_cases:
            judge_.evaluate([case])
        alone = alone_fragments / (time.perf_counter() - started)
    class InProcess:  # the Python reference observed and judged inline (no thread per stream)
        @staticmethod
        def run(case: CollectCase) -> Any:
            return observe(transports.prepare, case)

    started = time.perf_counter()
    CollectJudge(InProcess()).evaluate(drawn)
    python = fragments / (time.perf_counter() - started)
    print(f"  V8, {batch} streams per context (certify): {batched:10.0f} fragments/s")
    print(f"  V8, one stream per context (baseline):   {alone:10.0f} fragments/s   (batched is {batched / alone:.1f}x)")
    print(f"  Python reference in process (baseline):  {python:10.0f} fragments/s   (batched V8 is {batched / python:.2f}x)")
    return 0
