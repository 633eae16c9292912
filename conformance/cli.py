"""``codemode``: the one command line. A thin layer; nothing imports it.

    codemode compile                       the reference compiler, JSONL on stdin/stdout
    codemode certify --cmd CMD --role compiler [--profile P] [--seed N] [--report F] [--junit F]
    codemode certify ... --case CASE_JSON  replay one case
    codemode bench js                      compiled-JS cases checked per second
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codemode", description="Codemode Conformance Kit")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("compile", help="the reference compiler: compile requests as JSONL on stdin, answers on stdout")

    cert = sub.add_parser("certify", help="certify an implementation against SPEC.md")
    target = cert.add_mutually_exclusive_group(required=True)
    target.add_argument("--cmd", help="the command of the implementation under test (run with the shell)")
    target.add_argument("--python", metavar="MODULE:FUNCTION", help="an in-process implementation: line in, line out")
    cert.add_argument("--role", choices=("compiler", "planner", "pipeline"), default="pipeline")
    cert.add_argument("--profile", choices=("quick", "standard", "deep"), default="standard")
    cert.add_argument("--seed", type=int, default=0, help="the run's seed; the same seed reproduces the run")
    cert.add_argument("--report", type=Path, help="write the JSON report here")
    cert.add_argument("--junit", type=Path, help="write JUnit XML here (one testcase per clause)")
    cert.add_argument("--case", help="replay one case (its JSON, as a failure report prints it)")
    cert.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each answer (default 10)")

    bench = sub.add_parser("bench", help="measure the kit's throughput")
    bench.add_argument("what", choices=("js",))
    bench.add_argument("--cases", type=int, default=2000, help="cases to check (default 2000)")
    bench.add_argument("--batch", type=int, default=200, help="cases per V8 eval in the batched modes (default 200)")

    args = parser.parse_args(argv)
    if args.command == "compile":
        from reference.cli import compile_main

        return compile_main()
    if args.command == "certify":
        return _certify(args)
    if args.command == "bench":
        from conformance.bench import bench_js

        return bench_js(cases=args.cases, batch=args.batch)
    return EXIT_USAGE  # pragma: no cover


def _certify(args: argparse.Namespace) -> int:
    from conformance.adapters import CannotStart, make_adapter
    from conformance.certify import PROFILES, certify_compiler
    from conformance.engine import CompilerJudge
    from conformance.report import dump, json_report, junit_xml, text_report
    from conformance.v8host import V8Host

    if args.role != "compiler":
        print(f"codemode certify: --role {args.role} is not available in this version; use --role compiler", file=sys.stderr)
        return EXIT_USAGE
    target = f"--cmd {_quote(args.cmd)}" if args.cmd else f"--python {args.python}"
    try:
        adapter = make_adapter(command=args.cmd, python=args.python, timeout=args.timeout)
    except CannotStart as err:
        print(f"codemode certify: {err}", file=sys.stderr)
        return EXIT_USAGE
    with V8Host() as host:
        judge = CompilerJudge(adapter, host)
        try:
            if args.case is not None:
                return _replay(judge, args.case)
            smoke = _smoke(adapter)
            if smoke is not None:
                print(f"codemode certify: the implementation cannot be started: {smoke.reason}", file=sys.stderr)
                if smoke.stderr.strip():
                    print("its stderr:\n" + smoke.stderr.rstrip(), file=sys.stderr)
                return EXIT_USAGE

            def progress(run: object) -> None:
                if sys.stderr.isatty():
                    print(f"\r  {getattr(run, 'cases')} cases judged", end="", file=sys.stderr, flush=True)

            run = certify_compiler(judge, profile=PROFILES[args.profile], seed_value=args.seed, progress=progress)
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
    hard_bad = [r for r in report["clauses"] if r["kind"] == "hard" and r["status"] in ("failed", "errored")]
    return EXIT_FAILED if hard_bad else EXIT_OK


def _smoke(adapter: object) -> object | None:
    """One trivial compile request proves the harness is wired: an answer that is one JSON object."""
    from conformance.adapters import Errored

    request = {
        "plan": {"mode": "single", "calls": [{"tool": "ping", "args": {}}], "output": {"kind": "last"}},
        "tools": [{"name": "ping", "arguments": {}, "required": [], "returns": {"kind": "text"}}],
    }
    (answer,) = adapter.exchange([request])  # type: ignore[attr-defined]
    return answer if isinstance(answer, Errored) else None


def _replay(judge: object, text: str) -> int:
    from conformance.cases import CompileCase
    from reference import jsonio

    try:
        case = CompileCase.from_json(jsonio.loads(text))
    except (ValueError, KeyError, TypeError) as err:
        print(f"codemode certify: --case is not a case: {err}", file=sys.stderr)
        return EXIT_USAGE
    (result,) = judge.evaluate([case])  # type: ignore[attr-defined]
    print(f"case {case.id}: {result.outcome}")
    print(f"request: {case.request_line()}")
    if result.answer is not None:
        print(f"answer:  {jsonio.dumps(result.answer)[:2000]}")
    if result.errored is not None:
        print(f"errored: {result.errored.reason}")
        if result.errored.stderr.strip():
            print("stderr:\n" + result.errored.stderr.rstrip())
    for v in result.violations:
        print(f"{v.clause}: {v.message}")
    if result.outcome == "passed":
        print("clauses exercised: " + ", ".join(result.exercised))
    return EXIT_OK if result.outcome == "passed" else EXIT_FAILED


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


if __name__ == "__main__":
    sys.exit(main())
