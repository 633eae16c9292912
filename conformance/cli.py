"""``codemode``: the one command line. A thin layer; nothing imports it.

    codemode plan [--js]                   the reference planner, JSONL on stdin/stdout
    codemode compile                       the reference compiler, JSONL on stdin/stdout
    codemode certify --cmd CMD [--role pipeline|planner|compiler] [--profile P] [--seed N] [--report F]
                     [--junit F] [--tokenizer reference|own] [--threshold KEY=RATE] [--invariant hard|report]
    codemode certify ... --case CASE_JSON  replay one case
    codemode train [--out F]               rebuild the reference model's weights
    codemode bench js|plan                 throughput figures beside a baseline
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codemode", description="Codemode Conformance Kit")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("compile", help="the reference compiler: compile requests as JSONL on stdin, answers on stdout")
    plan = sub.add_parser("plan", help="the reference planner: plan requests as JSONL on stdin, answers on stdout")
    plan.add_argument("--js", action="store_true", help="add the compiled js to every plan")

    train = sub.add_parser("train", help="train the Tiny Codemode CNN from strategies (fixed seed, CPU)")
    train.add_argument("--out", type=Path, default=Path("reference/weights/tiny_codemode.pt"))
    train.add_argument("--examples", type=int, default=None, help="training seeds (default: the shipped recipe)")
    train.add_argument("--epochs", type=int, default=None)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--eval", type=int, default=4000, help="held-out seeds to evaluate on afterwards")
    train.add_argument("--eval-only", action="store_true", help="evaluate the weights at --out without training")
    train.add_argument("--corpus", type=Path, default=Path("corpora/heldout/planner.jsonl"),
                       help="a hand-written corpus to evaluate on too (default corpora/heldout/planner.jsonl)")

    cert = sub.add_parser("certify", help="certify an implementation against SPEC.md")
    target = cert.add_mutually_exclusive_group(required=True)
    target.add_argument("--cmd", help="the command of the implementation under test (run with the shell)")
    target.add_argument("--python", metavar="MODULE:FUNCTION", help="an in-process implementation: line in, line out")
    cert.add_argument("--role", choices=("compiler", "planner", "pipeline"), default="pipeline")
    cert.add_argument("--profile", choices=("quick", "standard", "deep"), default="standard")
    cert.add_argument("--seed", type=int, default=0, help="the run's seed; the same seed reproduces the run")
    cert.add_argument("--examples", type=int, default=None,
                      help="override the profile's number of Hypothesis examples (each a short list of cases)")
    cert.add_argument("--report", type=Path, help="write the JSON report here")
    cert.add_argument("--junit", type=Path, help="write JUnit XML here (one testcase per clause)")
    cert.add_argument("--case", help="replay one case (its JSON, as a failure report prints it)")
    cert.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each answer (default 10)")
    cert.add_argument("--tokenizer", choices=("reference", "own"), default="reference",
                      help="own: the IUT counts tokens its own way; only instructions over 256 reference tokens must be diagnosed")
    cert.add_argument("--threshold", action="append", default=[], metavar="KEY=RATE",
                      help="override a scored threshold: PL-ACCURACY, PL-REJECT:recall or PL-REJECT:false-diagnosis")
    cert.add_argument("--invariant", choices=("report", "hard"), default="report",
                      help="hard: PL-INVARIANT failures fail the run (as for the reference); report: listed only")

    bench = sub.add_parser("bench", help="measure the kit's throughput")
    bench.add_argument("what", choices=("js", "plan"))
    bench.add_argument("--cases", type=int, default=2000, help="cases to check (default 2000)")
    bench.add_argument("--batch", type=int, default=200, help="cases per V8 eval in the batched modes (default 200)")

    args = parser.parse_args(argv)
    if args.command == "compile":
        from reference.cli import compile_main

        return compile_main()
    if args.command == "plan":
        from reference.cli import plan_main

        return plan_main(js=args.js)
    if args.command == "train":
        return _train(args)
    if args.command == "certify":
        return _certify(args)
    if args.command == "bench":
        if args.what == "plan":
            from conformance.bench import bench_plan

            return bench_plan(instructions=args.cases)
        from conformance.bench import bench_js

        return bench_js(cases=args.cases, batch=args.batch)
    return EXIT_USAGE  # pragma: no cover


def _train(args: argparse.Namespace) -> int:
    from reference import train as T
    from reference.planner import Planner

    from reference.model import load

    options = {k: v for k, v in (("examples", args.examples), ("epochs", args.epochs)) if v is not None}
    if args.eval_only:
        network = load(str(args.out))
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        network = T.train(out=str(args.out), seed=args.seed, **options)
    planner = Planner(network)
    if args.eval:
        result = T.evaluate(planner, T.held_out(args.eval))
        print(f"held-out generated instructions ({args.eval} seeds below the training seeds):")
        _rates(result)
    if args.corpus and args.corpus.exists():
        result = T.evaluate_corpus(planner, str(args.corpus))
        print(f"hand-written corpus {args.corpus}:")
        _rates(result)
        for ident, instruction, answer in result["misses"][:20]:
            print(f"  miss {ident}: {instruction}\n       -> {str(answer)[:200]}")
    return EXIT_OK


def _rates(result: dict[str, object]) -> None:
    rates, counts = result["rates"], result["counts"]
    for family, rate in sorted(rates.items()):  # type: ignore[attr-defined]
        print(f"  {family:<22} {rate:.4f} of {counts[family]}")  # type: ignore[index]
    print(f"  false diagnosis rate   {result['false_diagnosis']:.4f}")


def _thresholds(items: list[str]) -> dict[str, float]:
    from conformance.clauses import THRESHOLDS

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in THRESHOLDS:
            raise ValueError(f"--threshold {item!r}: use KEY=RATE with KEY one of {', '.join(THRESHOLDS)}")
        out[key] = float(value)
        if not 0 <= out[key] <= 1:
            raise ValueError(f"--threshold {item!r}: a rate is between 0 and 1")
    return out


def _certify(args: argparse.Namespace) -> int:
    from conformance.adapters import CannotStart, make_adapter
    from conformance.certify import PROFILES, certify_role
    from conformance.report import dump, json_report, junit_xml, text_report
    from conformance.v8host import V8Host

    try:
        thresholds = _thresholds(args.threshold)
    except ValueError as err:
        print(f"codemode certify: {err}", file=sys.stderr)
        return EXIT_USAGE
    target = f"--cmd {_quote(args.cmd)}" if args.cmd else f"--python {args.python}"

    def fresh() -> object:
        return make_adapter(command=args.cmd, python=args.python, timeout=args.timeout)

    try:
        adapter = fresh()
    except CannotStart as err:
        print(f"codemode certify: {err}", file=sys.stderr)
        return EXIT_USAGE
    with V8Host() as host:
        try:
            if args.case is not None:
                return _replay(adapter, host, args, args.case)
            smoke = _smoke(adapter, args.role)
            if smoke is not None:
                print(f"codemode certify: the implementation cannot be started: {smoke.reason}", file=sys.stderr)
                if smoke.stderr.strip():
                    print("its stderr:\n" + smoke.stderr.rstrip(), file=sys.stderr)
                return EXIT_USAGE

            def progress(run: object) -> None:
                if sys.stderr.isatty():
                    print(f"\r  {getattr(run, 'cases')} cases judged", end="", file=sys.stderr, flush=True)

            profile = PROFILES[args.profile]
            if args.examples is not None:
                profile = dataclasses.replace(profile, examples=max(1, args.examples))
            run = certify_role(
                args.role, adapter, host, profile=profile, seed_value=args.seed,
                command=args.cmd, fresh=fresh if args.cmd else None, timeout=args.timeout, tokenizer=args.tokenizer,
                thresholds=thresholds, invariant_gating=args.invariant == "hard", progress=progress,
            )
        except CannotStart as err:
            print(f"codemode certify: {err}", file=sys.stderr)
            return EXIT_USAGE
        finally:
            adapter.close()
    if sys.stderr.isatty():
        print("\r", end="", file=sys.stderr)
    report = json_report(run, implementation=adapter.description, target=target)
    print(text_report(report))
    if args.report:
        args.report.write_text(dump(report) + "\n", encoding="utf-8")
    if args.junit:
        args.junit.write_text(junit_xml(report) + "\n", encoding="utf-8")
    bad = [r for r in report["clauses"] if r.get("gating", True) and r["status"] in ("failed", "errored")]
    return EXIT_FAILED if bad else EXIT_OK


def _smoke(adapter: object, role: str = "compiler") -> object | None:
    """One trivial request of the role proves the harness is wired: an answer that is one JSON object."""
    from conformance.adapters import Errored

    tools = [{"name": "ping", "arguments": {}, "required": [], "returns": {"kind": "text"}}]
    request: dict[str, object] = {
        "plan": {"mode": "single", "calls": [{"tool": "ping", "args": {}}], "output": {"kind": "last"}},
        "tools": tools,
    }
    if role != "compiler":
        request = {"instruction": "call ping", "tools": tools}
    (answer,) = adapter.exchange([request])  # type: ignore[attr-defined]
    return answer if isinstance(answer, Errored) else None


def _replay(adapter: object, host: object, args: argparse.Namespace, text: str) -> int:
    """Judge one case (a compile case or a plan case, as a report prints it) and say what happened."""
    from conformance.cases import CompileCase
    from conformance.engine import CompilerJudge
    from conformance.plan_cases import PlanCase
    from conformance.plan_engine import PlannerJudge
    from reference import jsonio

    try:
        raw = jsonio.loads(text)
        if isinstance(raw, dict) and isinstance(raw.get("request"), dict) and "instruction" in raw["request"]:
            case: object = PlanCase.from_json(raw)
            judge: object = PlannerJudge(adapter, host, role="pipeline" if args.role == "pipeline" else "planner",  # type: ignore[arg-type]
                                         tokenizer=args.tokenizer)
        else:
            case = CompileCase.from_json(raw)
            judge = CompilerJudge(adapter, host)  # type: ignore[arg-type]
    except (ValueError, KeyError, TypeError) as err:
        print(f"codemode certify: --case is not a case: {err}", file=sys.stderr)
        return EXIT_USAGE
    (result,) = judge.evaluate([case])  # type: ignore[attr-defined]
    print(f"case {case.id}: {result.outcome}")  # type: ignore[attr-defined]
    print(f"request: {case.request_line()}")  # type: ignore[attr-defined]
    if result.answer is not None:
        print(f"answer:  {jsonio.dumps(result.answer)[:2000]}")
    if result.errored is not None:
        print(f"errored: {result.errored.reason}")
        if result.errored.stderr.strip():
            print("stderr:\n" + result.errored.stderr.rstrip())
    for v in result.violations:
        print(f"{v.clause}: {v.message}")
        if v.expected is not None:
            print(f"  expected: {v.expected}")
        if v.actual is not None:
            print(f"  actual:   {v.actual}")
    for score in getattr(result, "scores", ()):
        print(f"{score.clause} {score.metric} ({score.family}): {'yes' if score.ok else 'no'}")
    if result.outcome == "passed":
        print("clauses exercised: " + ", ".join(result.exercised))
    return EXIT_OK if result.outcome == "passed" else EXIT_FAILED


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


if __name__ == "__main__":
    sys.exit(main())
