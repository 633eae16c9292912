"""``make coverage-kit``: which branches of the reference a certification of the reference never reaches.

A branch of the reference compiler or planner that no certification case reaches is a blind spot: some
clause's generator never makes the case that would tell a faulty implementation of that branch from a
good one. This certifies the reference pipeline in process (``reference.cli:pipeline_line``, every clause
but the stream ones, whose cases are raw streams) under coverage, with the branch measurement on, then
lists per module the lines and branches never taken.

    python scripts/coverage_kit.py [--profile quick|standard|deep] [--seed N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: the modules whose every branch a certification of the reference should reach
MODULES = ("compiler", "plan", "catalog", "names", "jsonio", "lexer", "planner", "protocol", "cli")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="standard", choices=("quick", "standard", "deep"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import coverage

    cov = coverage.Coverage(branch=True, source=["reference"], data_file=str(ROOT / ".coverage.kit"))
    cov.start()
    from conformance import corpus
    from conformance.adapters import PythonAdapter
    from conformance.certify import PROFILES, certify_role
    from conformance.v8host import V8Host
    from reference.cli import pipeline_line

    adapter = PythonAdapter.of(pipeline_line, "--python reference.cli:pipeline_line", timeout=30.0)
    with V8Host() as host:
        run = certify_role("pipeline", adapter, host, profile=PROFILES[args.profile], seed_value=args.seed,
                           invariant_gating=True, shrink=False, corpus=corpus.discover(ROOT / "corpora", "pipeline"))
    cov.stop()
    cov.save()
    bad = [cid for cid in run.clauses if run.status(cid) in ("failed", "errored")]
    print(f"certified the reference in process: {run.cases} cases, profile {args.profile}, seed {args.seed};"
          f" {'clauses failing: ' + ', '.join(bad) if bad else 'every judged clause passed'}\n")
    files = [str(ROOT / "reference" / f"{m}.py") for m in MODULES]
    total = cov.report(include=files, show_missing=True, skip_covered=False, file=sys.stdout)
    print(f"\nbranch coverage of the reference's compiler and planner modules by one certification: {total:.1f}%."
          " Every line or branch listed as missing is a case no clause's generator makes (see README, 'Coverage"
          " as evidence').")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
