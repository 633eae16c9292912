"""Regenerate the curated corpora (``corpora/curated/compile.jsonl`` and ``plan.jsonl``).

For every clause judged case by case, it keeps the few shortest generated cases that exercise the
clause and that the reference passes: small, readable cases a conforming implementation must pass, which
``codemode certify`` replays before it generates new ones. (CLI-STREAM, CLI-BAD-RECORD and PL-DETERMINISM
are judged by probes and re-sends, not by single cases.) Seeded, so a rerun writes the same files.

    python scripts/gen_corpus.py [--per-clause 3] [--examples 600]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance import corpus  # noqa: E402
from conformance.adapters import PythonAdapter  # noqa: E402
from conformance.cases import compile_cases  # noqa: E402
from conformance.engine import CompilerJudge  # noqa: E402
from conformance.plan_cases import plan_cases  # noqa: E402
from conformance.plan_engine import PlannerJudge  # noqa: E402
from conformance.registry import role_clauses  # noqa: E402
from conformance.v8host import V8Host  # noqa: E402
from reference.cli import compile_line, pipeline_line  # noqa: E402

from conformance.certify import UNHUNTED as NOT_PER_CASE  # noqa: E402


def draw(strategy: st.SearchStrategy, examples: int) -> list:
    from conformance.search import drawn

    return [case for batch in drawn(st.lists(strategy, min_size=1, max_size=8), examples, seed_value=20261130)
            for case in batch]


def curate(kind: str, judge: object, cases: list, clauses: list[str], per_clause: int) -> list[corpus.Entry]:
    unique = list({c.id: c for c in cases}.values())
    results = judge.evaluate(unique)  # type: ignore[attr-defined]
    entries = []
    kept: set[str] = set()  # a case is kept once (its id is its line's id), for the first clause needing it
    for cid in clauses:
        passing = [r.case for r in results if _exercises(r, cid) and r.outcome == "passed" and r.case.id not in kept]
        passing.sort(key=lambda c: (len(c.request_line()), c.id))
        if not passing:
            print(f"  {cid}: no passing case exercises it", file=sys.stderr)
        for case in passing[:per_clause]:
            kept.add(case.id)
            entries.append(corpus.Entry.of(case, cid, expect="pass", source="curated",
                                           note=f"a short case exercising {cid}; the reference passes it"))
    print(f"{kind}: {len(unique)} cases judged, {len(entries)} kept for {len(clauses)} clauses")
    return entries


def _exercises(result: object, cid: str) -> bool:
    """The case exercised ``cid`` and did well on it (for a scored clause: a hit, not a miss)."""
    scores = [s for s in result.scores if s.clause == cid]  # type: ignore[attr-defined]
    if scores:
        return all((not s.ok) if s.metric == "false-diagnosis" else s.ok for s in scores)
    return cid in result.exercised  # type: ignore[attr-defined]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-clause", type=int, default=3)
    parser.add_argument("--examples", type=int, default=600)
    args = parser.parse_args()
    out = ROOT / "corpora" / "curated"
    with V8Host() as host:
        compile_judge = CompilerJudge(PythonAdapter.of(compile_line, "reference compiler"), host)
        plan_judge = PlannerJudge(PythonAdapter.of(pipeline_line, "reference pipeline"), host, role="pipeline")
        compile_clauses = [c for c in role_clauses("compiler") if c not in NOT_PER_CASE]
        plan_clauses = [c for c in role_clauses("pipeline") if c not in NOT_PER_CASE and c not in compile_clauses]
        jobs = (("compile", compile_judge, compile_cases(), compile_clauses),
                ("plan", plan_judge, plan_cases(), plan_clauses))
        for kind, judge, strategy, clauses in jobs:
            entries = curate(kind, judge, draw(strategy, args.examples), clauses, args.per_clause)
            path = out / f"{kind}.jsonl"
            if path.exists():
                path.unlink()
            corpus.write(path, entries)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
