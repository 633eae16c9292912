"""``codemode``: the one command line. A thin layer; nothing imports it.

    codemode plan [--js] [--workers N] [--threads N]   the reference planner, JSONL on stdin/stdout
    codemode compile                       the reference compiler, JSONL on stdin/stdout
    codemode certify --cmd CMD [--role pipeline|planner|compiler] [--profile P] [--seed N] [--report F]
                     [--junit F] [--tokenizer reference|own] [--threshold KEY=RATE] [--invariant hard|report]
    codemode certify ... --case CASE_JSON  replay one case
    codemode replay FILE|ID --cmd CMD      replay corpus cases: FIXED, FAILED or ERRORED
    codemode fuzz --cmd CMD --minutes N -n W [--db DIR|redis://...]   a fuzzing campaign
    codemode spec [CLAUSE]                 the clauses, or one clause's text from SPEC.md
    codemode train [--out F]               rebuild the reference model's weights
    codemode bench js|plan|fuzz            throughput figures beside a baseline
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    from reference import __version__

    parser = argparse.ArgumentParser(prog="codemode", description="Codemode Conformance Kit")
    parser.add_argument("--version", action="version", version=f"codemode-conformance-kit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("compile", help="the reference compiler: compile requests as JSONL on stdin, answers on stdout")
    sub.add_parser("collect", help="the reference streaming collector: collect requests as JSONL on stdin (SPEC.md,"
                   " Transport)")
    plan = sub.add_parser("plan", help="the reference planner: plan requests as JSONL on stdin, answers on stdout")
    plan.add_argument("--js", action="store_true", help="add the compiled js to every plan")
    plan.add_argument("--workers", type=int, default=1,
                      help="worker processes that share out large batches of waiting requests (default 1: none)")
    plan.add_argument("--threads", type=_threads, default=1,
                      help="intra-op threads the network runs on (default 1: fastest where the planner shares the"
                           " machine, as beside the kit; 0: PyTorch's default, one per core)")

    train = sub.add_parser("train", help="train the Tiny Codemode CNN from strategies and the hand-written training"
                           " cases (fixed seed, CPU)")
    train.add_argument("--out", type=Path, default=Path("reference/weights/tiny_codemode.pt"))
    train.add_argument("--examples", type=int, default=None, help="training seeds (default: the shipped recipe)")
    train.add_argument("--epochs", type=int, default=None)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--eval", type=int, default=4000, help="held-out seeds to evaluate on afterwards")
    train.add_argument("--eval-only", action="store_true", help="evaluate the weights at --out without training")
    train.add_argument("--corpus", type=Path, action="append", default=None, metavar="FILE",
                       help="a hand-written corpus to evaluate on too (repeatable; default: the two independent"
                            " corpora that ship with the kit, corpora/heldout/ and corpora/people/)")
    hand = train.add_mutually_exclusive_group()
    hand.add_argument("--hand-written", type=Path, action="append", default=None, metavar="FILE",
                      help="hand-written training cases to add to the generated ones (repeatable; default: those"
                           " that ship, conformance/handwritten/: the files of corpora/train/ linked there)")
    hand.add_argument("--no-hand-written", action="store_true",
                      help="train on generated instructions alone (to measure what the hand-written cases add)")
    train.add_argument("--hold-out", action="append", default=[], metavar="AXIS=FORM",
                       help="leave every instruction phrased with this form out of the training data and report"
                            " accuracy on it (repeatable; e.g. arg=bare-back, tool=paren; see `codemode train"
                            " --hold-out help`); the hand-written cases, whose forms are not labelled, are left out"
                            " too unless --hand-written names them")

    cert = sub.add_parser("certify", help="certify an implementation against SPEC.md")
    target = cert.add_mutually_exclusive_group(required=True)
    target.add_argument("--cmd", help="the command of the implementation under test (run with the shell)")
    target.add_argument("--python", metavar="MODULE:FUNCTION", help="an in-process implementation: line in, line out")
    target.add_argument("--js-collector", metavar="FILE",
                        help="a JavaScript streaming collector (CommonJS, module.exports.prepare), run in V8 (--role collector)")
    target.add_argument("--openai", metavar="URL", help="a planner behind an OpenAI-compatible server, such as"
                        " http://127.0.0.1:8000/v1 (plain HTTP only to this machine); with --model")
    _openai_arguments(cert)
    cert.add_argument("--role", choices=("compiler", "planner", "pipeline", "collector"), default=None,
                      help="what the implementation is (default: the manifest's role, else pipeline); collector:"
                      " a streaming tool-call collector, --python module:prepare (SPEC.md, Transport)")
    cert.add_argument("--manifest", type=Path, metavar="FILE",
                      help="the implementation's manifest (name, version, role, tokenizer, homepage), recorded in every report")
    cert.add_argument("--profile", choices=("quick", "standard", "deep"), default=None,
                      help="quick (a PR gate, about 15 s for a compiler), standard, deep (nightly); default standard,"
                           " or quick where Hypothesis detects CI")
    cert.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                      help="the run's time budget (default: the profile's, 240 s quick, 900 s standard, 7200 s deep);"
                           " past it no more cases are drawn, and the report says the run stopped early")
    cert.add_argument("--repeat", type=int, default=1, metavar="N",
                      help="judge every case N times; a case judged differently is reported as flaky (for LLMs)")
    cert.add_argument("--settle", type=int, default=None, metavar="N",
                      help="a scored rate whose 95%% interval still holds its threshold after exploring is judged on"
                           " more cases, up to N times those it had (default 4; 1 draws none)")
    cert.add_argument("--seed", type=int, default=0, help="the run's seed; the same seed reproduces the run")
    cert.add_argument("--examples", type=int, default=None,
                      help="override the profile's number of Hypothesis examples (each a short list of cases)")
    for name, what in (("report", "the JSON report"), ("junit", "JUnit XML (one testcase per clause)"),
                       ("jsonl", "the JSON Lines report (header, one line per case, clauses, summary)"),
                       ("markdown", "a Markdown summary (for a CI job summary)"),
                       ("badge", "a shields.io endpoint badge (N/M clauses)")):
        cert.add_argument(f"--{name}", type=Path, metavar="FILE", help=f"write {what} here (- for stdout)")
    cert.add_argument("--no-shrink", action="store_true",
                      help="report each failed clause's first failing case, without searching for a minimal one")
    cert.add_argument("-q", "--quiet", action="store_true",
                      help="print only the outcome line and the failures (no table, no live line)")
    cert.add_argument("--expect", type=Path, metavar="FILE",
                      help="gate on expectations: known failures pass, new failures, rates past their floors and stale entries fail")
    cert.add_argument("--update-expectations", action="store_true",
                      help="write this run's failures and rates to the --expect file (and pass)")
    cert.add_argument("--case", help="replay one case: its JSON, as a failure report prints it, or @FILE to read it from FILE")
    cert.add_argument("--corpora", type=Path, default=None, metavar="DIR",
                      help="replay DIR/curated and DIR/regressions first (default: ./corpora, else the kit's)")
    cert.add_argument("--no-corpora", action="store_true", help="generate cases only; replay no corpus")
    cert.add_argument("--english", type=Path, action="append", default=None, metavar="FILE",
                      help="a hand-written planner corpus to measure the planner on, beside the verdicts (repeatable;"
                           " default: the independent corpora shipped with the kit)")
    cert.add_argument("--no-english", action="store_true",
                      help="measure no hand-written corpus (planner and pipeline roles measure them by default)")
    cert.add_argument("--timeout", type=float, default=None,
                      help="seconds to wait for each answer (default 10; with --openai 60, for each attempt)")
    cert.add_argument("--js-timeout", type=float, default=2.0, metavar="S",
                      help="the JS time limit of one case run alone (default 2; a batch of cases has 5 times as long)")
    cert.add_argument("--tokenizer", choices=("reference", "own"), default=None,
                      help="own: the IUT counts tokens its own way; only instructions over 256 reference tokens must be diagnosed")
    cert.add_argument("--threshold", action="append", default=[], metavar="KEY=RATE",
                      help="override a scored threshold: PL-ACCURACY, PL-REJECT:recall or PL-REJECT:false-diagnosis")
    cert.add_argument("--invariant", choices=("report", "hard"), default="report",
                      help="hard: PL-INVARIANT failures fail the run (as for the reference); report: listed only")

    replay = sub.add_parser("replay", help="replay corpus cases: FIXED, FAILED or ERRORED for each")
    replay.add_argument("what", help="a corpus file (JSONL), or a case id (or prefix) to find in the corpora")
    replay_target = replay.add_mutually_exclusive_group(required=True)
    replay_target.add_argument("--cmd", help="the command of the implementation under test")
    replay_target.add_argument("--python", metavar="MODULE:FUNCTION", help="an in-process implementation")
    replay.add_argument("--role", choices=("compiler", "planner", "pipeline", "collector"), default="pipeline")
    replay.add_argument("--corpora", type=Path, default=None, metavar="DIR", help="where to look up a case id")
    replay.add_argument("--timeout", type=float, default=10.0)
    replay.add_argument("--tokenizer", choices=("reference", "own"), default="reference")

    fuzz = sub.add_parser("fuzz", help="a fuzzing campaign: minimized failures land in corpora/regressions/")
    fuzz_target = fuzz.add_mutually_exclusive_group(required=True)
    fuzz_target.add_argument("--cmd", help="the command of the implementation under test")
    fuzz_target.add_argument("--python", metavar="MODULE:FUNCTION", help="an in-process implementation")
    fuzz.add_argument("--role", choices=("compiler", "planner", "pipeline", "collector"), default="pipeline",
                      help="collector: a streaming collector, --python module:prepare or --cmd speaking JSON Lines")
    fuzz.add_argument("--minutes", type=float, default=10.0, help="how long to run (default 10)")
    fuzz.add_argument("-n", "--workers", type=int, default=2, help="xdist workers (default 2)")
    fuzz.add_argument("--db", default=None, metavar="DIR|redis://HOST:PORT/N",
                      help="the shared Hypothesis example database (default: a directory in the campaign folder)")
    fuzz.add_argument("--regressions", type=Path, default=Path("corpora/regressions"),
                      help="where minimized failures are written (default corpora/regressions)")
    fuzz.add_argument("--campaign-dir", type=Path, default=None, help="status and log files (default: a new temp dir)")
    fuzz.add_argument("--seed", type=int, default=0)
    fuzz.add_argument("--timeout", type=float, default=10.0)
    fuzz.add_argument("--tokenizer", choices=("reference", "own"), default="reference")
    fuzz.add_argument("--hypothesis-share", type=float, default=0.1, metavar="FRACTION",
                      help="of each worker's time, for cases Hypothesis draws; the rest are sampled from a seeded"
                           " random.Random, about a hundred times faster (default 0.1; 1: Hypothesis only)")

    serve = sub.add_parser("serve", help="the reference planner behind an OpenAI-compatible /v1/chat/completions")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="the port (default 8000; 0: any free port)")

    fake = sub.add_parser("fake-openai", help="a scripted OpenAI-compatible server for tests (see conformance.openai.fake)")
    fake.add_argument("--script", type=Path, required=True, metavar="FILE", help="the attempts, as JSON or JSON Lines")
    fake.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    fake.add_argument("--port", type=int, default=0, help="the port (default 0: any free port, printed at start)")
    fake.add_argument("--model", default=None, help="the model id /v1/models lists")

    spec = sub.add_parser("spec", help="the clauses of SPEC.md, or one clause's text")
    spec.add_argument("clause", nargs="?", help="a clause id such as JS-PARALLEL")

    bench = sub.add_parser("bench", help="measure the kit's throughput")
    bench.add_argument("what", choices=("js", "plan", "fuzz", "openai", "collector"))
    bench.add_argument("--seconds", type=float, default=60.0, help="fuzz: how long each campaign runs (default 60)")
    bench.add_argument("--cases", type=int, default=2000, help="cases to check (default 2000)")
    bench.add_argument("--batch", type=int, default=200, help="cases per V8 eval in the batched modes (default 200)")
    bench.add_argument("--workers", type=int, default=2, help="plan: worker processes for the batched figure (default 2)")
    bench.add_argument("--threads", type=_threads, default=1, help="plan: the network's intra-op threads (default 1;"
                       " 0: PyTorch's default)")
    bench.add_argument("--contended", action="store_true",
                       help="plan: measure again with another process keeping one core busy, side by side")
    return parser


def _openai_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("a planner behind an OpenAI-compatible server (--openai URL)")
    group.add_argument("--model", help="the model id as the server names it (meta-llama/Llama-3.1-8B-Instruct)")
    group.add_argument("--mode", choices=("strict", "json_only", "none"), default="strict",
                       help="strict: response_format with the answer's strict JSON Schema (default); json_only:"
                       " a JSON object, the schema in the prompt; none: the schema in the prompt only")
    group.add_argument("--wire", choices=("json", "tools"), default="json",
                       help="json: the answer as the message's text (default); tools: as a streamed call of the plan"
                       " function (tools=[...] with the strict schema, stream: true), assembled by the reference"
                       " collector")
    group.add_argument("--prompt", type=Path, metavar="FILE",
                       help="a prompt template with {{catalog}} and {{answer_format}} slots (default: the kit's"
                       " versioned prompt; every report records the prompt's digest)")
    group.add_argument("--max-tokens", type=int, default=2048, metavar="N", help="max_tokens of each request (default 2048)")
    group.add_argument("--attempts", type=int, default=1, metavar="N",
                       help="1 to 3: answers asked for per request, repairs of a non-JSON or schema-breaking answer"
                       " included (default 1)")
    group.add_argument("--concurrency", type=int, default=8, metavar="N", help="requests in flight (default 8)")
    group.add_argument("--api-key-env", metavar="NAME",
                       help="send the key in this environment variable as a bearer token (never written anywhere)")
    group.add_argument("--record", type=Path, metavar="FILE", help="keep every answer, by request digest, in FILE")
    group.add_argument("--replay", type=Path, metavar="FILE",
                       help="answer from a recording alone (no socket is opened; an unrecorded request errors as"
                       " not_recorded)")


def _openai_options(args: argparse.Namespace) -> Any:
    """The driver's options from the command line (raises CannotStart for bad ones)."""
    from conformance.openai.driver import DriverOptions
    from conformance.openai.prompt import Prompt
    from conformance.process import CannotStart

    if not args.model:
        raise CannotStart("--openai needs --model NAME (the model id as the server names it)")
    try:
        prompt = Prompt.from_file(args.prompt) if args.prompt is not None else Prompt.shipped()
    except (OSError, ValueError) as err:
        raise CannotStart(f"--prompt: {err}") from err
    return DriverOptions(url=args.openai, model=args.model, mode=args.mode, prompt=prompt, max_tokens=args.max_tokens,
                         timeout=args.timeout, attempts=args.attempts, concurrency=args.concurrency,
                         api_key_env=args.api_key_env, record=args.record, replay=args.replay, wire=args.wire)


def _openai_target(args: argparse.Namespace) -> str:
    """The --openai part of a replay command (never a credential: only its variable's name)."""
    bits = ["--openai", _quote(args.openai), "--model", _quote(args.model), "--mode", args.mode]
    if args.prompt is not None:
        bits += ["--prompt", _quote(str(args.prompt.resolve()))]
    if args.wire != "json":
        bits += ["--wire", args.wire]
    if args.attempts != 1:
        bits += ["--attempts", str(args.attempts)]
    if args.max_tokens != 2048:
        bits += ["--max-tokens", str(args.max_tokens)]
    if args.api_key_env:
        bits += ["--api-key-env", args.api_key_env]
    if args.replay is not None:
        bits += ["--replay", _quote(str(args.replay.resolve()))]
    return " ".join(bits)


def _threads(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} threads: use 1 or more, or 0 for PyTorch's default")
    return value


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # whoever read the output stopped reading (`codemode spec | head -1`): no traceback, and nothing more
        # written to the closed pipe (Python flushes stdout once more at exit)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _main(argv: list[str] | None) -> int:
    # whatever an implementation wrote (a lone surrogate in an error message, say) can be printed
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = _parser().parse_args(argv)
    if args.command == "compile":
        from reference.cli import compile_main

        return compile_main()
    if args.command == "collect":
        from reference.cli import collect_main

        return collect_main()
    if args.command == "plan":
        from reference.cli import plan_main

        return plan_main(js=args.js, workers=args.workers, threads=args.threads or None)
    if args.command == "train":
        return _train(args)
    if args.command == "certify":
        return _certify(args)
    if args.command == "replay":
        return _replay_corpus(args)
    if args.command == "fuzz":
        return _fuzz(args)
    if args.command == "spec":
        return _spec(args)
    if args.command == "serve":
        from conformance.openai.serve import main as serve_main

        return serve_main(args.host, args.port)
    if args.command == "fake-openai":
        from conformance.openai.fake import main as fake_main

        return fake_main(args.script, args.host, args.port, args.model)
    if args.command == "bench":
        if args.what == "plan":
            from conformance.bench import bench_plan

            return bench_plan(instructions=args.cases, workers=args.workers, threads=args.threads or None,
                              contended=args.contended)
        if args.what == "collector":
            from conformance.bench import bench_collector

            return bench_collector(cases=args.cases, batch=args.batch)
        if args.what == "openai":
            from conformance.bench import bench_openai

            return bench_openai(requests=args.cases)
        if args.what == "fuzz":
            from conformance.bench import bench_fuzz

            return bench_fuzz(seconds=args.seconds, workers=args.workers)
        from conformance.bench import bench_js

        return bench_js(cases=args.cases, batch=args.batch)
    return EXIT_USAGE  # pragma: no cover


def _train(args: argparse.Namespace) -> int:
    from conformance import training
    from reference import train as T
    from reference.model import load
    from reference.planner import Planner

    options = {k: v for k, v in (("examples", args.examples), ("epochs", args.epochs)) if v is not None}
    try:
        training.check_forms(args.hold_out)
    except ValueError as err:
        print(f"codemode train: {err}", file=sys.stderr)
        return EXIT_USAGE
    if args.eval_only:
        network = load(str(args.out))
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        network = training.train(out=str(args.out), seed=args.seed, hold_out=args.hold_out,
                                 hand=[] if args.no_hand_written else args.hand_written, **options)
    planner = Planner(network)
    if args.eval:
        result = T.evaluate(planner, training.held_out(args.eval))
        print(f"held-out generated instructions ({args.eval} seeds below the training seeds):")
        _rates(result)
    if args.hold_out:
        unseen = training.by_form(max(200, args.eval // 4), args.hold_out)
        result = T.evaluate(planner, unseen)
        print(f"phrasing never trained on ({', '.join(args.hold_out)}): {len(unseen)} supported instructions")
        _rates(result)
    from conformance import english

    corpora = args.corpus or english.shipped()
    for path in corpora:
        if not path.exists():
            print(f"(no corpus at {path})")
            continue
        result = T.evaluate_corpus(planner, str(path))
        print(f"independent hand-written corpus {path}:")
        _rates(result)
    return EXIT_OK


def _rates(result: dict[str, Any]) -> None:
    rates, counts = result["rates"], result["counts"]
    supported = [f for f in rates if f in ("single", "sequential", "parallel", "shaping")]
    for family, rate in sorted(rates.items()):
        print(f"  {family:<22} {rate:.4f} of {counts[family]}")
    n = sum(counts[f] for f in supported)
    if n:
        exact = sum(rates[f] * counts[f] for f in supported) / n
        print(f"  supported, exact plan  {exact:.4f} of {n}")
    # the other families that expect plans (injection text in values, requests of exactly 128 tokens) are
    # neither: they are counted apart, not as unsupported requests diagnosed
    planned = [f for f in rates if f in result.get("planned", ()) and f not in supported]
    for label, families in (("adversarial exact plan", planned),
                            ("unsupported, diagnosed", [f for f in rates if f not in supported and f not in planned])):
        m = sum(counts[f] for f in families)
        if m:
            print(f"  {label:<22} {sum(rates[f] * counts[f] for f in families) / m:.4f} of {m}")
    print(f"  false diagnosis rate   {result['false_diagnosis']:.4f}")


def _spec(args: argparse.Namespace) -> int:
    from conformance.registry import registry, spec_section

    if args.clause is None:
        for cid, c in registry().items():
            print(f"{cid:<15} {c.kind:<6} {c.summary}")
        return EXIT_OK
    cid = args.clause.upper()
    if cid not in registry():
        print(f"codemode spec: {args.clause!r} is not a clause id (codemode spec lists them)", file=sys.stderr)
        return EXIT_USAGE
    print(f"### {cid}\n\n{spec_section(cid)}")
    return EXIT_OK


def _thresholds(items: list[str]) -> dict[str, float]:
    from conformance.registry import thresholds

    known = thresholds()
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in known:
            raise ValueError(f"--threshold {item!r}: use KEY=RATE with KEY one of {', '.join(known)}")
        try:
            out[key] = float(value)
        except ValueError:
            raise ValueError(f"--threshold {item!r}: {value!r} is not a number") from None
        if not 0 <= out[key] <= 1:
            raise ValueError(f"--threshold {item!r}: a rate is between 0 and 1")
    return out


def _settle(args: argparse.Namespace) -> tuple[dict[str, object], object]:
    """Read the manifest and the expectations, and fill --role and --tokenizer from the manifest; raises
    ValueError with a message for the user."""
    from conformance import schema
    from conformance.expectations import BadExpectations, Expectations

    manifest: dict[str, object] = {}
    if args.manifest is not None:
        try:
            manifest = schema.read("manifest", args.manifest)
        except schema.BadFile as err:
            raise ValueError(str(err)) from err
    if args.profile is None:
        from hypothesis import settings

        # Hypothesis loads its "ci" profile itself when it detects a CI system (CI, GITHUB_ACTIONS, ...)
        args.profile = "quick" if settings.get_current_profile_name() == "ci" else "standard"
    if args.repeat < 1:
        raise ValueError("--repeat is at least 1")
    if getattr(args, "settle", None) is not None and args.settle < 1:
        raise ValueError("--settle is at least 1 (1 draws no more cases)")
    if args.budget is not None and args.budget <= 0:
        raise ValueError("--budget is a number of seconds above 0")
    openai = getattr(args, "openai", None)
    if args.timeout is None:
        args.timeout = 60.0 if openai else 10.0
    if openai:
        if args.role not in (None, "planner"):
            raise ValueError("--openai certifies a planner: its server answers plans, not js (use --role planner)")
        args.role = "planner"
    elif getattr(args, "js_collector", None) is not None:
        if args.role not in (None, "collector"):
            raise ValueError("--js-collector certifies a collector (--role collector)")
        args.role = "collector"
    elif any(getattr(args, name, None) is not None for name in ("model", "record", "replay", "prompt", "api_key_env")):
        raise ValueError("--model, --prompt, --api-key-env, --record and --replay are options of --openai")
    if args.timeout <= 0 or args.js_timeout <= 0:
        raise ValueError("--timeout and --js-timeout are numbers of seconds above 0")
    for key, default in (("role", "pipeline"), ("tokenizer", "reference")):
        given, declared = getattr(args, key), manifest.get(key)
        if given is not None and declared is not None and given != declared:
            raise ValueError(f"--{key} {given} contradicts the manifest's {key} {declared}")
        setattr(args, key, given or declared or default)
    expected = None
    if args.update_expectations and args.expect is None:
        raise ValueError("--update-expectations needs --expect FILE (the file it writes)")
    if args.expect is not None and not (args.update_expectations and not args.expect.exists()):
        try:
            expected = Expectations.load(args.expect)
        except BadExpectations as err:
            raise ValueError(str(err)) from err
        if expected.role is not None and expected.role != args.role:
            raise ValueError(f"{args.expect} is for role {expected.role}; this run certifies role {args.role}")
    outputs = [name for name in ("report", "junit", "jsonl", "markdown", "badge") if str(getattr(args, name)) == "-"]
    if len(outputs) > 1:
        raise ValueError(f"only one report can go to stdout (-), not --{' and --'.join(outputs)}")
    return manifest, expected


def _english(args: argparse.Namespace, adapter: Any) -> dict[str, Any]:
    """The planner's rates on the hand-written corpora (``conformance.english``), by corpus name."""
    from conformance import english

    if args.role in ("compiler", "collector") or args.no_english:
        return {}
    out = {}
    for path in args.english or english.shipped():
        out[path.stem] = english.evaluate(adapter, english.read(path))
    return out


def _certify(args: argparse.Namespace) -> int:
    from conformance import corpus
    from conformance.adapters import CannotStart, make_adapter
    from conformance.certify import PROFILES, certify_role
    from conformance.english import read as english_rows
    from conformance.report import json_report, text_report
    from conformance.v8host import Limits, V8Host

    _private_hypothesis_home()
    try:
        thresholds = _thresholds(args.threshold)
        manifest, expected = _settle(args)
        entries = [] if args.no_corpora else corpus.discover(args.corpora or corpus.default_root(), args.role)
        for path in args.english or ():
            english_rows(path)  # a bad corpus is a usage error before anything runs
    except ValueError as err:
        print(f"codemode certify: {err}", file=sys.stderr)
        return EXIT_USAGE
    target = (f"--cmd {_quote(args.cmd)}" if args.cmd else _openai_target(args) if args.openai
              else f"--js-collector {_quote(str(Path(args.js_collector).resolve()))}" if args.js_collector
              else f"--python {args.python}")
    cwd = os.getcwd()

    def fresh() -> Any:
        if args.openai:
            from conformance.openai.driver import OpenAIAdapter

            return OpenAIAdapter(_openai_options(args))
        if args.role == "collector":
            from conformance.collect import CollectorAdapter, JSCollectorAdapter

            if args.js_collector is not None:
                return JSCollectorAdapter(args.js_collector, timeout=args.timeout)
            if args.cmd is not None:
                from conformance.collect import StdioCollectorAdapter

                return StdioCollectorAdapter(args.cmd, timeout=args.timeout, cwd=cwd)
            return CollectorAdapter(args.python, timeout=args.timeout)
        return make_adapter(command=args.cmd, python=args.python, timeout=args.timeout, role=args.role, cwd=cwd)

    try:
        adapter = fresh()
    except CannotStart as err:
        print(f"codemode certify: {err}", file=sys.stderr)
        return EXIT_USAGE
    # with a report on stdout, the human-readable text goes to stderr
    human = sys.stderr if any(str(getattr(args, n)) == "-" for n in ("report", "junit", "jsonl", "markdown", "badge")) else sys.stdout
    with V8Host(Limits(case_seconds=args.js_timeout, batch_seconds=5 * args.js_timeout)) as host:
        try:
            if hasattr(adapter, "attach"):
                adapter.attach(host)
            if args.case is not None:
                return _replay(adapter, host, args, args.case)
            problem = smoke(adapter, args.role) if args.role != "collector" else None
            if problem is not None:
                reason, stderr = problem
                from conformance.report import shown

                advice = ("The server did not answer a few trivial requests; check the address (it ends where"
                          " /chat/completions begins, often /v1), the model's name and the key." if args.openai else
                          "The command did not answer a few trivial requests as the protocol asks (the reason is"
                          " above); check that it starts, reads JSON Lines on stdin, answers each request (the kit's"
                          " closing one too) with its own answer, one line each, and flushes after each line.")
                print(f"codemode certify: smoke test failed, so nothing was certified: {shown(reason)}.\n{advice}",
                      file=sys.stderr)
                if stderr.strip():
                    print("its stderr:\n" + "\n".join(shown(line) for line in stderr.rstrip().split("\n")), file=sys.stderr)
                return EXIT_USAGE
            progress = _progress_line() if sys.stderr.isatty() and not args.quiet else None
            profile = PROFILES[args.profile]
            if args.examples is not None:
                profile = dataclasses.replace(profile, examples=max(1, args.examples))
            if args.repeat > 1:
                profile = dataclasses.replace(profile, repeat=args.repeat)
            if args.settle is not None:
                profile = dataclasses.replace(profile, settle=args.settle)
            if args.budget is not None:
                profile = dataclasses.replace(profile, seconds=args.budget)
            run = certify_role(
                args.role, adapter, host, profile=profile, seed_value=args.seed, command=args.cmd, cwd=cwd,
                fresh=fresh if args.cmd else None, timeout=args.timeout, tokenizer=args.tokenizer,
                thresholds=thresholds, invariant_gating=args.invariant == "hard", progress=progress, corpus=entries,
                shrink=not args.no_shrink,
            )
            english = _english(args, adapter)
        except CannotStart as err:
            print(f"codemode certify: {err}", file=sys.stderr)
            return EXIT_USAGE
        finally:
            adapter.close()
    if progress is not None:
        print("\r\x1b[2K", end="", file=sys.stderr)
    report = json_report(run, implementation=adapter.description, target=target, manifest=manifest)
    if hasattr(adapter, "summary"):
        report["driver"] = adapter.summary()
    if english:
        report["english"] = english
    text = text_report(report, case_file=_case_files())
    if args.quiet:
        text = "\n".join(line for line in text.splitlines()[3:] if not _table_row(line, report)).strip()
    print(text, file=human)
    verdict = None
    if expected is not None and not args.update_expectations:
        from conformance.expectations import gate

        verdict = gate(report, expected, passed={e.case.id for e in run.log if e.outcome == "passed"})
        print(f"\nexpectations {args.expect}: {'passed' if verdict.ok else 'FAILED'}"
              + (f" ({len(verdict.known)} known failures: {', '.join(verdict.known)})" if verdict.known else ""),
              file=human)
        for message in verdict.messages:
            print(f"  {message}", file=human)
    _write_reports(args, run, report, verdict)
    if args.update_expectations:
        from conformance.expectations import from_report

        written = from_report(report, expected)  # type: ignore[arg-type]
        written.dump(args.expect)
        print(f"wrote {args.expect}: {len(written.failures)} known failures, floors {written.floors or 'none'}",
              file=sys.stderr)
        return EXIT_OK
    if verdict is not None:
        return EXIT_OK if verdict.ok else EXIT_FAILED  # type: ignore[attr-defined]
    bad = [r for r in report["clauses"] if r.get("gating", True) and r["status"] in ("failed", "errored")]
    return EXIT_FAILED if bad else EXIT_OK


def _table_row(line: str, report: dict[str, Any]) -> bool:
    """A line of the text report's clause table (left out by --quiet): a clause's row or its metrics."""
    words = line.split()
    if not words or line.startswith(" " * 15):
        return bool(words)
    row = words[0] in {r["clause"] for r in report["clauses"]} and len(words) > 2 and words[2].isdigit()
    return row or words[:2] == ["clause", "result"]


def _private_hypothesis_home() -> None:
    """Keep Hypothesis's files out of the implementer's directory: ``certify`` keeps no example database,
    but Hypothesis would still make ``.hypothesis/`` in the working directory."""
    if "HYPOTHESIS_STORAGE_DIRECTORY" in os.environ:
        return
    import tempfile

    from hypothesis import configuration

    configuration.set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), f"codemode-hypothesis-{os.getuid()}"))


def _case_files() -> Any:
    """Where the terminal's long replay commands keep their cases: each case's JSON in a file of a directory
    of this run's own (made when first needed, in the system's temporary directory, readable by this user
    only), replayed with ``--case @FILE``."""
    import hashlib
    import tempfile

    from reference import jsonio

    made: list[str] = []

    def write(case: dict[str, Any]) -> str:
        if not made:
            made.append(tempfile.mkdtemp(prefix="codemode-cases-"))
        text = jsonio.dumps(case)
        path = os.path.join(made[0], hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16] + ".json")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text + "\n")
        return path

    return write


def _write_reports(args: argparse.Namespace, run: Any, report: dict[str, Any], verdict: object) -> None:
    from conformance.report import badge, dump, jsonl_report, junit_xml, markdown_report

    texts = {
        "report": lambda: dump(report) + "\n",
        "junit": lambda: junit_xml(report) + "\n",
        "jsonl": lambda: jsonl_report(run, report),
        "markdown": lambda: markdown_report(report, verdict),
        "badge": lambda: dump(badge(report)) + "\n",
    }
    written = []
    for name, make in texts.items():
        path = getattr(args, name)
        if path is None:
            continue
        if str(path) == "-":
            sys.stdout.write(make())
            sys.stdout.flush()
            continue
        path.write_text(make(), encoding="utf-8", errors="backslashreplace")
        written.append(str(path))
    if written:
        print(f"wrote {', '.join(written)}", file=sys.stderr)


def _progress_line():  # type: ignore[no-untyped-def]
    """A live line on the terminal: cases judged, their rate, and the clauses failing so far."""
    import time

    start = time.monotonic()

    def show(run: Any) -> None:
        seconds = max(time.monotonic() - start, 1e-9)
        failing = [cid for cid, t in run.tallies.items() if t.failed]
        shown = ", ".join(failing[:4]) + (f" +{len(failing) - 4}" if len(failing) > 4 else "")
        print(f"\r\x1b[2K  {run.cases} cases, {run.cases / seconds:.0f}/s, {seconds:.0f}s"
              + (f"; failing: {shown}" if failing else "; no failures yet"), end="", file=sys.stderr, flush=True)

    return show


def smoke(adapter: Any, role: str = "compiler") -> tuple[str, str] | None:
    """The smoke stage: a few trivial requests of the role prove the harness is wired (the command starts,
    answers one line per request, speaks JSON objects). Nothing is judged against SPEC here; ``None`` when
    wired, else why not and the stderr it left."""
    from conformance.adapters import Errored

    tools = [
        {"name": "ping", "arguments": {}, "required": [], "returns": {"kind": "text"}},
        {"name": "get_user", "arguments": {"id": "string"}, "required": ["id"], "returns": {"kind": "object"}},
    ]
    single = {"mode": "single", "calls": [{"tool": "ping", "args": {}}], "output": {"kind": "last"}}
    two = {"mode": "sequential", "calls": [{"tool": "ping", "args": {}}, {"tool": "get_user", "args": {"id": "u1"}}],
           "output": {"kind": "all"}}
    if role == "compiler":
        requests: list[dict[str, object]] = [{"plan": single, "tools": tools}, {"plan": two, "tools": tools}]
    else:
        requests = [{"instruction": "call ping", "tools": tools},
                    {"instruction": 'call get_user with id "u1"', "tools": tools}]
    for batch in ([requests[0]], requests):  # one alone, then several at once
        answers = adapter.exchange(batch)
        for answer in answers:
            if isinstance(answer, Errored):
                if answer.condition not in (None, "misconfigured", "unavailable"):
                    continue  # a server that answers is wired; what it answered is judged, and counted by class
                return answer.reason, answer.stderr
    faults = getattr(adapter, "faults", None)
    if faults:
        return faults[0][1], ""
    return None


def _replay(adapter: Any, host: Any, args: argparse.Namespace, text: str) -> int:
    """Judge one case (a compile, plan or stream case, as a report prints it) and say what happened."""
    from conformance.cases import CompileCase
    from conformance.engine import CompilerJudge
    from conformance.plan_cases import PlanCase
    from conformance.plan_engine import PlannerJudge
    from conformance.stream import StreamCase, probe
    from reference import jsonio

    try:
        if text.startswith("@"):  # a case's JSON never starts so
            try:
                text = Path(text[1:]).read_text(encoding="utf-8", errors="surrogatepass")
            except OSError as err:
                raise ValueError(f"cannot read {text[1:]!r}: {err.strerror or err}") from None
        raw = jsonio.loads(text)
        if args.role == "collector":
            from conformance.collect import CollectCase, CollectJudge

            case = CollectCase.from_json(raw)
            evaluate = CollectJudge(adapter).evaluate
        elif isinstance(raw, dict) and "stream" in raw:
            case: Any = StreamCase.from_json(raw)
            if args.cmd is None:
                raise ValueError("a stream case replays on a command (--cmd), not on an in-process implementation")
            evaluate: Any = lambda cases: [probe(args.cmd, c, timeout=args.timeout, cwd=os.getcwd()) for c in cases]
        elif isinstance(raw, dict) and isinstance(raw.get("request"), dict) and "instruction" in raw["request"]:
            case = PlanCase.from_json(raw)
            role = "pipeline" if args.role == "pipeline" else "planner"
            evaluate = PlannerJudge(adapter, host, role=role, tokenizer=args.tokenizer).evaluate
        else:
            case = CompileCase.from_json(raw)
            evaluate = CompilerJudge(adapter, host).evaluate
    except (ValueError, KeyError, TypeError) as err:
        print(f"codemode certify: --case is not a case: {err}", file=sys.stderr)
        return EXIT_USAGE
    from conformance.report import request_text, shown

    (result,) = evaluate([case])
    print(f"case {case.id}: {result.outcome}")
    print(f"request: {request_text(case.request_line())}")
    if result.answer is not None:
        print(f"answer:  {jsonio.dumps(result.answer)[:2000]}")
    if result.errored is not None:
        print(f"errored: {shown(result.errored.reason)}")
        if result.errored.stderr.strip():
            print("stderr:\n" + "\n".join(shown(line) for line in result.errored.stderr.rstrip().split("\n")))
    for v in result.violations:
        print(f"{v.clause}: {shown(v.message)}")
        if v.expected is not None:
            print(f"  expected: {shown(str(v.expected))}")
        if v.actual is not None:
            print(f"  actual:   {shown(str(v.actual))}")
    for score in result.scores:
        print(f"{score.clause} {score.metric} ({score.family}): {'yes' if score.ok else 'no'}")
    if result.outcome == "passed":
        print("clauses exercised: " + ", ".join(result.exercised))
    return EXIT_OK if result.outcome == "passed" else EXIT_FAILED


def _replay_corpus(args: argparse.Namespace) -> int:
    """``codemode replay FILE|ID``: judge corpus cases against an implementation; one line per case."""
    from conformance import corpus
    from conformance.adapters import CannotStart, make_adapter
    from conformance.engine import CompilerJudge
    from conformance.plan_engine import PlannerJudge
    from conformance.v8host import V8Host

    _private_hypothesis_home()
    try:
        path = Path(args.what)
        if path.suffix == ".jsonl" or path.exists():
            entries = corpus.read(path)
        else:
            entries = corpus.find(args.corpora or corpus.default_root(), args.what)
            if not entries:
                raise ValueError(f"no corpus case has an id starting {args.what!r}")
    except (OSError, ValueError) as err:
        print(f"codemode replay: {err}", file=sys.stderr)
        return EXIT_USAGE
    kinds = corpus.KINDS_OF_ROLE[args.role]
    skipped = [e for e in entries if e.kind not in kinds]
    entries = [e for e in entries if e.kind in kinds]
    try:
        if args.role == "collector":
            from conformance.collect import CollectorAdapter, StdioCollectorAdapter

            adapter: Any = (CollectorAdapter(args.python, timeout=args.timeout) if args.python is not None
                            else StdioCollectorAdapter(args.cmd, timeout=args.timeout))
        else:
            adapter = make_adapter(command=args.cmd, python=args.python, timeout=args.timeout, role=args.role)
    except CannotStart as err:
        print(f"codemode replay: {err}", file=sys.stderr)
        return EXIT_USAGE
    counts = {"FIXED": 0, "FAILED": 0, "ERRORED": 0}
    try:
        with V8Host() as host:
            from conformance.collect import CollectJudge

            plan_judge = PlannerJudge(adapter, host, role=args.role, tokenizer=args.tokenizer) if args.role in (
                "planner", "pipeline") else None
            compile_judge = CompilerJudge(adapter, host) if args.role in ("compiler", "pipeline") else None
            collect_judge = CollectJudge(adapter) if args.role == "collector" else None
            results = corpus.judge(entries, compile_judge=compile_judge, plan_judge=plan_judge,
                                   collect_judge=collect_judge)
    finally:
        adapter.close()
    from conformance.report import shown

    for entry, result in zip(entries, results):
        verdict = corpus.outcome(result)
        counts[verdict] += 1
        detail = ""
        if verdict == "FAILED":
            detail = "; ".join(f"{v.clause}: {v.message}" for v in result.violations)[:300]
        elif verdict == "ERRORED":
            detail = result.errored.reason
        print(f"{verdict:<8} {entry.id} {entry.clause:<16} {entry.source}" + (f"  {shown(detail)}" if detail else ""))
    if skipped:
        print(f"({len(skipped)} cases of other kinds skipped: role {args.role} answers {', '.join(kinds)} requests)")
    print(f"{counts['FIXED']} fixed, {counts['FAILED']} failed, {counts['ERRORED']} errored")
    return EXIT_OK if counts["FAILED"] == counts["ERRORED"] == 0 else EXIT_FAILED


def _fuzz(args: argparse.Namespace) -> int:
    import signal

    from conformance import fuzz
    from conformance.adapters import CannotStart, make_adapter

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Ctrl-C (and a CI job's SIGTERM) stop the campaign cleanly, even when this process was started
    # with SIGINT ignored (as by nohup, or from a pytest-xdist worker)
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)

    if args.workers < 1 or args.minutes <= 0 or not 0 <= args.hypothesis_share <= 1:
        print("codemode fuzz: --workers is at least 1, --minutes above 0, --hypothesis-share from 0 to 1", file=sys.stderr)
        return EXIT_USAGE
    target = f"--cmd {_quote(args.cmd)}" if args.cmd else f"--python {args.python}"
    # the smoke stage, here in the working directory the command was given in: a campaign of workers that
    # cannot start the command would find nothing and say so only in its log
    try:
        if args.role == "collector":
            from conformance.collect import CollectorAdapter, StdioCollectorAdapter

            if args.python is not None:
                adapter: Any = CollectorAdapter(args.python, timeout=args.timeout)  # it imports: that is its smoke
            else:
                adapter = StdioCollectorAdapter(args.cmd, timeout=args.timeout)
        else:
            adapter = make_adapter(command=args.cmd, python=args.python, timeout=args.timeout, role=args.role)
    except CannotStart as err:
        print(f"codemode fuzz: {err}", file=sys.stderr)
        return EXIT_USAGE
    try:
        problem = smoke(adapter, args.role) if args.role != "collector" else None
    finally:
        adapter.close()
    if problem is not None:
        from conformance.report import shown

        print(f"codemode fuzz: smoke test failed, so no campaign was started: {shown(problem[0])}", file=sys.stderr)
        if problem[1].strip():
            print("its stderr:\n" + "\n".join(shown(line) for line in problem[1].rstrip().split("\n")), file=sys.stderr)
        return EXIT_USAGE
    print(f"codemode fuzz: {args.role} {target}, {args.minutes:g} minutes on {args.workers} workers,"
          f" example database {args.db or 'a directory in the campaign folder'}; Ctrl-C stops it cleanly", file=sys.stderr)
    try:
        merged = fuzz.campaign(
            role=args.role, command=args.cmd, python=args.python, minutes=args.minutes, workers=args.workers,
            db=args.db, regressions=args.regressions, seed=args.seed, timeout=args.timeout, tokenizer=args.tokenizer,
            campaign_dir=args.campaign_dir, hypothesis_share=args.hypothesis_share, cwd=os.getcwd(),
        )
    except Exception as err:  # noqa: BLE001 - a bad --db and the like: say so, exit 2
        print(f"codemode fuzz: cannot start the campaign: {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_USAGE
    print(fuzz.summary(merged, target=target, role=args.role))
    if merged["workers"] == 0:
        print(f"codemode fuzz: no worker started; see {merged['campaign']}/pytest.log", file=sys.stderr)
        return EXIT_USAGE
    if merged["errors"] and not merged["regressions"]:
        print(f"codemode fuzz: {len(merged['errors'])} workers stopped early (see above and {merged['campaign']}/pytest.log)",
              file=sys.stderr)
        return EXIT_USAGE
    return EXIT_FAILED if merged["regressions"] else EXIT_OK


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


if __name__ == "__main__":
    sys.exit(main())
