"""``codemode bench js``: how fast compiled plans are checked in V8, batched against the baselines.

Cases are generated and compiled first (not timed). Each mode then runs every case in V8 and judges
it with the JS checks; the figures are cases per second on this machine, measured in the same run:

* batched: 200 cases per ``eval`` in one long-lived context, no snapshot (the hunting path);
* batched + purity: the same with the built-in snapshot around each batch (the certify path);
* per-case eval: one case per ``eval`` round trip in the same context;
* fresh context: a new V8 context per case.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hypothesis import HealthCheck, Phase, given, seed, settings

from conformance.cases import CompileCase, expect, valid_cases
from conformance.checks.compiler import judge_js
from conformance.v8host import V8Host
from reference.compiler import compile_request


def _cases(n: int) -> list[CompileCase]:
    out: list[CompileCase] = []

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @seed(1234)
    @given(valid_cases())
    def collect(case: CompileCase) -> None:
        out.append(case)

    collect()
    return out


def bench_js(*, cases: int = 2000, batch: int = 200) -> int:
    warm = min(cases, 500)
    print(f"generating and compiling {cases} cases and {warm} warm-up cases (not timed)...", flush=True)
    generated = _cases(cases + warm)
    exps = []
    for case in generated:
        js = compile_request(case.plan, case.tools).js
        assert js is not None
        exps.append(expect(case, js))
    warm_specs = [e.spec for e in exps[cases:]]
    exps = exps[:cases]
    specs = [e.spec for e in exps]
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


def bench_plan(*, instructions: int = 2000, chunk: int = 256) -> int:
    """``codemode bench plan``: the in-process reference planner, batched against one-at-a-time.

    Instructions (supported and unsupported, from held-out seeds) are rendered first (not timed). The
    figures: batched instructions per second through ``Planner.respond_many`` in chunks of ``chunk``
    (lexing, features, the model on dynamically padded batches, decoding, validation), and the latency of
    a single instruction through ``Planner.respond`` (p50, p90, p99) with its rate as the baseline.
    """
    import statistics

    import torch

    from reference.planner import Planner
    from reference.train import held_out

    items = held_out(instructions, base=500_000)
    requests = [(i.text, i.catalog.to_json()) for i in items]
    planner = Planner()
    planner.respond_many(requests[:200])  # warm up
    print(f"codemode bench plan: {len(requests)} instructions, torch {torch.__version__}, {torch.get_num_threads()} threads")

    start = time.perf_counter()
    for k in range(0, len(requests), chunk):
        planner.respond_many(requests[k : k + chunk])
    batched = len(requests) / (time.perf_counter() - start)

    singles = []
    for request in requests[: min(len(requests), 1000)]:
        t0 = time.perf_counter()
        planner.respond(*request)
        singles.append(time.perf_counter() - t0)
    singles.sort()
    p50 = statistics.median(singles) * 1000
    p90 = singles[int(0.9 * (len(singles) - 1))] * 1000
    p99 = singles[int(0.99 * (len(singles) - 1))] * 1000
    one_rate = len(singles) / sum(singles)
    print(f"  batched ({chunk} per call)    {batched:10.0f} instructions/s   ({batched / one_rate:.1f}x the baseline)")
    print(f"  one at a time (baseline) {one_rate:10.0f} instructions/s   p50 {p50:.3f} ms, p90 {p90:.3f} ms, p99 {p99:.3f} ms")
    return 0
