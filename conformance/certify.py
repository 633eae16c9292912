"""Certification runs: explore with Hypothesis, judge in large batches, then shrink each failure.

Exploration draws Hypothesis examples (each a short list of cases) and judges them in chunks of a few
hundred, because one IUT round trip and one V8 ``eval`` cost far more than a case. For every clause
that failed, a *hunt* re-runs the same seeded search judging each example on its own and lets
Hypothesis shrink the first failing one to a minimal case.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from conformance.cases import CompileCase, compile_cases
from conformance.clauses import CLAUSES, COMPILER_CLAUSES
from conformance.engine import CaseResult, CompilerJudge
from reference.violations import Violation


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    name: str
    examples: int  # Hypothesis examples explored (each a list of cases)
    max_batch: int  # cases per example
    chunk: int  # cases judged per IUT round trip while exploring
    hunt_seconds: float  # time to find and shrink one failing clause's minimal case


PROFILES = {
    "quick": Profile(name="quick", examples=300, max_batch=10, chunk=200, hunt_seconds=10),
    "standard": Profile(name="standard", examples=900, max_batch=10, chunk=300, hunt_seconds=20),
    "deep": Profile(name="deep", examples=8000, max_batch=10, chunk=400, hunt_seconds=60),
}


@dataclass(slots=True)
class ClauseTally:
    cases: int = 0
    failed: int = 0
    errored: int = 0
    first_failure: tuple[CompileCase, Violation] | None = None
    minimal: tuple[CompileCase, Violation] | None = None
    first_error: CaseResult | None = None


@dataclass(slots=True)
class Run:
    """Everything a report needs."""

    role: str
    profile: Profile
    seed: int
    tallies: dict[str, ClauseTally] = field(default_factory=dict)
    cases: int = 0
    started: float = field(default_factory=time.time)
    seconds: float = 0.0

    def record(self, result: CaseResult) -> None:
        self.cases += 1
        for cid in result.exercised:
            tally = self.tallies[cid]
            tally.cases += 1
            if result.errored is not None:
                tally.errored += 1
                if tally.first_error is None:
                    tally.first_error = result
        seen: set[str] = set()
        for v in result.violations:
            tally = self.tallies[v.clause]
            if v.clause not in seen:
                tally.failed += 1
                seen.add(v.clause)
            if tally.first_failure is None:
                tally.first_failure = (result.case, v)

    def status(self, cid: str) -> str:
        tally = self.tallies.get(cid)
        if tally is None or CLAUSES[cid].check is None:
            return "skipped"
        if tally.failed:
            return "failed"
        if tally.errored:
            return "errored"
        if tally.cases == 0:
            return "skipped"
        return "passed"


def _batches(profile: Profile) -> st.SearchStrategy[list[CompileCase]]:
    return st.lists(compile_cases(), min_size=2, max_size=profile.max_batch)


def _settings(profile: Profile, *, shrink: bool) -> settings:
    return settings(
        max_examples=profile.examples,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate],
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
    )


class _Found(Exception):
    """Raised inside a hunt to tell Hypothesis an example breaks the hunted clause."""


def certify_compiler(
    judge: CompilerJudge,
    *,
    profile: Profile,
    seed_value: int = 0,
    progress: Callable[[Run], None] | None = None,
    shrink: bool = True,
) -> Run:
    """Explore, then (with ``shrink``) find a minimal case for every failed clause."""
    run = Run(role="compiler", profile=profile, seed=seed_value)
    for cid in COMPILER_CLAUSES:
        run.tallies[cid] = ClauseTally()
    pending: list[CompileCase] = []

    def flush() -> None:
        for result in judge.evaluate(pending):
            run.record(result)
        pending.clear()
        if progress is not None:
            progress(run)

    @_settings(profile, shrink=False)
    @seed(seed_value)
    @given(_batches(profile))
    def explore(batch: list[CompileCase]) -> None:
        pending.extend(batch)
        if len(pending) >= profile.chunk:
            flush()

    explore()
    flush()
    for cid in COMPILER_CLAUSES:
        tally = run.tallies[cid]
        if tally.failed and shrink:
            tally.minimal = hunt(judge, cid, profile=profile, seed_value=seed_value) or tally.first_failure
    run.seconds = time.time() - run.started
    return run


def hunt(
    judge: CompilerJudge, clause: str, *, profile: Profile, seed_value: int
) -> tuple[CompileCase, Violation] | None:
    """The minimal case Hypothesis can shrink to that still breaks ``clause`` (``None`` if the seeded
    search does not meet the failure again, as with a non-deterministic IUT)."""
    deadline = time.monotonic() + profile.hunt_seconds
    last: list[tuple[CompileCase, Violation]] = []

    @_settings(profile, shrink=True)
    @seed(seed_value)
    @given(_batches(profile))
    def search(batch: list[CompileCase]) -> None:
        if time.monotonic() > deadline and last:
            return  # out of time: keep the smallest failure found so far
        pure = clause == "JS-PURE"  # judged on alone runs only
        for result in judge.evaluate(batch, purity=pure, confirm=pure):
            for v in result.violations:
                if v.clause == clause:
                    last.append((result.case, v))
                    raise _Found(clause)

    try:
        search()
    except _Found:
        pass
    except HypothesisException:  # pragma: no cover - e.g. a flaky IUT confuses the shrinker
        pass
    # shrinking judged batches provisionally: confirm the smallest case, falling back to larger ones
    for case, _ in reversed(last[-5:]):
        (result,) = judge.evaluate([case])
        confirmed = [v for v in result.violations if v.clause == clause]
        if confirmed:
            return case, confirmed[0]
    return None
