"""Certification runs: explore with Hypothesis, judge in large batches, then shrink each failure.

Exploration draws Hypothesis examples (each a short list of cases) and judges them in chunks of a few
hundred, because one IUT round trip and one V8 ``eval`` cost far more than a case. For every clause
that failed, a *hunt* re-runs the same seeded search judging each example on its own and lets
Hypothesis shrink the first failing one to a minimal case.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from conformance.cases import CompileCase, compile_cases
from conformance.clauses import CLAUSES, COMPILER_CLAUSES, PLANNER_CLAUSES, THRESHOLDS
from conformance.engine import CaseResult, CompilerJudge
from reference.violations import Violation


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    name: str
    examples: int  # Hypothesis examples explored (each a list of cases)
    max_batch: int  # cases per example
    chunk: int  # cases judged per IUT round trip while exploring
    hunt_seconds: float  # time to find and shrink one failing clause's minimal case
    repeat: int = 1  # times each case is judged while exploring (above 1: flaky cases are found)


PROFILES = {
    "quick": Profile(name="quick", examples=300, max_batch=10, chunk=200, hunt_seconds=10),
    "standard": Profile(name="standard", examples=900, max_batch=10, chunk=300, hunt_seconds=20),
    "deep": Profile(name="deep", examples=8000, max_batch=10, chunk=400, hunt_seconds=60),
    # one round of a fuzzing campaign (``codemode fuzz``): rounds repeat with new seeds until time is up
    "fuzz": Profile(name="fuzz", examples=60, max_batch=10, chunk=300, hunt_seconds=30),
}


@dataclass(slots=True)
class ClauseTally:
    cases: int = 0
    failed: int = 0
    errored: int = 0
    first_failure: tuple[Any, Violation] | None = None
    minimal: tuple[Any, Violation] | None = None
    first_error: Any = None
    failed_ids: list[str] = field(default_factory=list)  # every failing case's id, in the order seen


@dataclass(slots=True)
class ScoreTally:
    """Counts of one scored metric, overall and per family."""

    total: Counter[str] = field(default_factory=Counter)
    ok: Counter[str] = field(default_factory=Counter)
    first_miss: dict[str, Any] = field(default_factory=dict)

    def rate(self, family: str | None = None) -> float | None:
        total = sum(self.total.values()) if family is None else self.total[family]
        ok = sum(self.ok.values()) if family is None else self.ok[family]
        return ok / total if total else None


def wilson_upper(hits: int, total: int, z: float = 1.96) -> float:
    """The upper end of the Wilson score interval of a rate (95% by default); 1.0 with no cases."""
    if total == 0:
        return 1.0
    p = hits / total
    centre = p + z * z / (2 * total)
    spread = z * ((p * (1 - p) + z * z / (4 * total)) / total) ** 0.5
    return min(1.0, (centre + spread) / (1 + z * z / total))


@dataclass(slots=True)
class Run:
    """Everything a report needs."""

    role: str
    profile: Profile
    seed: int
    clauses: tuple[str, ...] = COMPILER_CLAUSES
    tallies: dict[str, ClauseTally] = field(default_factory=dict)
    scores: dict[str, ScoreTally] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=lambda: dict(THRESHOLDS))
    gating: dict[str, bool] = field(default_factory=dict)  # a clause reported but not failing the run
    skipped: dict[str, str] = field(default_factory=dict)  # clause -> why it is not judged in this run
    cases: int = 0
    #: one entry per judged case, in order: (case, outcome, violations, answer) for the JSON Lines report
    log: list[tuple[Any, str, tuple[Violation, ...], Any]] = field(default_factory=list)
    replayed: int = 0  # corpus cases judged before exploring
    #: cases judged differently on repeats (``--repeat``): (case, each repeat's result); not tallied
    flaky: list[tuple[Any, list[Any]]] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        for cid in self.clauses:
            self.tallies.setdefault(cid, ClauseTally())

    def record(self, result: Any) -> None:
        self.cases += 1
        self.log.append((result.case, result.outcome, tuple(result.violations), result.answer))
        for score in getattr(result, "scores", ()):
            tally_s = self.scores.setdefault(score.metric, ScoreTally())
            tally_s.total[score.family] += 1
            tally_s.ok[score.family] += score.ok
            miss = not score.ok if score.metric != "false-diagnosis" else score.ok
            if miss and score.family not in tally_s.first_miss:
                tally_s.first_miss[score.family] = (result.case, result.answer)
        for cid in result.exercised:
            if cid not in self.tallies:
                continue
            tally = self.tallies[cid]
            tally.cases += 1
            if result.errored is not None:
                tally.errored += 1
                if tally.first_error is None:
                    tally.first_error = result
        seen: set[str] = set()
        for v in result.violations:
            if v.clause not in self.tallies:
                continue
            tally = self.tallies[v.clause]
            if v.clause not in seen:
                tally.failed += 1
                tally.failed_ids.append(result.case.id)
                seen.add(v.clause)
            if tally.first_failure is None:
                tally.first_failure = (result.case, v)

    def metrics(self, cid: str) -> dict[str, tuple[float | None, float, bool]]:
        """For a scored clause: metric -> (rate, threshold, meets it); a missing rate does not fail."""
        out = {}
        for metric, key, lower in (("accuracy", "PL-ACCURACY", True), ("recall", "PL-REJECT:recall", True),
                                   ("false-diagnosis", "PL-REJECT:false-diagnosis", False)):
            if not key.startswith(cid):
                continue
            tally = self.scores.get(metric, ScoreTally())
            threshold = self.thresholds[key]
            rate = tally.rate()
            meets = rate is None or (rate >= threshold if lower else rate <= threshold)
            if metric == "accuracy":
                # a family is a few hundred cases, where one miss moves the rate by more than the margin
                # between 0.995 and 1: it fails when it is credibly below the threshold (the upper end of
                # its 95% Wilson interval is), while the overall rate must meet it outright
                meets = meets and all(wilson_upper(tally.ok[f], tally.total[f]) >= threshold for f in tally.total)
            out[metric] = (rate, threshold, meets)
        return out

    def status(self, cid: str) -> str:
        if cid in self.skipped:
            return "skipped"
        tally = self.tallies.get(cid)
        if tally is None:
            return "skipped"
        if CLAUSES[cid].kind == "scored":
            metrics = self.metrics(cid)
            if not any(self.scores.get(m) and sum(self.scores[m].total.values()) for m in metrics):
                return "errored" if tally.errored else "skipped"
            return "passed" if all(meets for _, _, meets in metrics.values()) else "failed"
        if tally.failed:
            return "failed"
        if tally.errored:
            return "errored"
        if tally.cases == 0:
            return "skipped"
        return "passed"


def _batches(profile: Profile) -> st.SearchStrategy[list[CompileCase]]:
    return st.lists(compile_cases(), min_size=2, max_size=profile.max_batch)


def _settings(profile: Profile, *, shrink: bool, database: Any = None) -> settings:
    return settings(
        max_examples=profile.examples,
        database=database,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=([Phase.reuse] if database is not None else []) + ([Phase.generate, Phase.shrink] if shrink else [Phase.generate]),
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
    answered: list[CaseResult] | None = None,
) -> Run:
    """Explore, then (with ``shrink``) find a minimal case for every failed clause. Answered results are
    appended to ``answered`` when it is given (for PL-DETERMINISM)."""
    run = Run(role="compiler", profile=profile, seed=seed_value)
    explore(run, judge.evaluate, _batches(profile), profile=profile, seed_value=seed_value, progress=progress,
            answered=answered)
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
    search does not meet the failure again, as with a non-deterministic IUT). Shrinking judges batches
    provisionally (JS-PURE is judged on alone runs only); the smallest case is then confirmed."""
    pure = clause == "JS-PURE"
    return _hunt(lambda batch: judge.evaluate(batch, purity=pure, confirm=pure), judge.evaluate,
                 _batches(profile), clause, profile=profile, seed_value=seed_value)


def explore(
    run: Run,
    evaluate: Callable[[list[Any]], list[Any]],
    batches: st.SearchStrategy[list[Any]],
    *,
    profile: Profile,
    seed_value: int,
    progress: Callable[[Run], None] | None = None,
    answered: list[Any] | None = None,
) -> None:
    """Draw the profile's examples and judge their cases in chunks, each distinct case once (Hypothesis
    repeats simple examples, and a repeated case would count twice in every rate)."""
    pending: list[Any] = []
    seen: set[str] = set()

    def flush() -> None:
        rounds = [evaluate(pending) for _ in range(max(1, profile.repeat))]
        for k, result in enumerate(rounds[0]):
            repeats = [r[k] for r in rounds]
            if len({_signature(r) for r in repeats}) > 1:
                run.flaky.append((result.case, repeats))
                run.log.append((result.case, "flaky", tuple(v for r in repeats for v in r.violations), result.answer))
                continue
            run.record(result)
            if answered is not None and result.answer is not None:
                answered.append(result)
        pending.clear()
        if progress is not None:
            progress(run)

    @_settings(profile, shrink=False)
    @seed(seed_value)
    @given(batches)
    def search(batch: list[Any]) -> None:
        for case in batch:
            if case.id not in seen:
                seen.add(case.id)
                pending.append(case)
        if len(pending) >= profile.chunk:
            flush()

    search()
    flush()


def _signature(result: Any) -> tuple[Any, ...]:
    """What must agree between repeats of a case: its outcome, the clauses it broke, and its scores."""
    return (
        result.outcome,
        frozenset(v.clause for v in result.violations),
        tuple(sorted((s.metric, s.family, s.ok) for s in getattr(result, "scores", ()))),
    )


def _hunt(
    provisional: Callable[[list[Any]], list[Any]],
    confirm: Callable[[list[Any]], list[Any]],
    batches: st.SearchStrategy[list[Any]],
    clause: str,
    *,
    profile: Profile,
    seed_value: int,
    database: Any = None,
    deadline: float | None = None,
    stop: Callable[[], bool] | None = None,
) -> tuple[Any, Violation] | None:
    """Find and shrink a case breaking ``clause``. With ``database`` (a campaign's shared Hypothesis
    example database), failures other hunts saved are tried first and this one's is saved. ``deadline``
    is a ``time.time()``; by default the profile's ``hunt_seconds`` from now."""
    stop_at = time.monotonic() + (profile.hunt_seconds if deadline is None else max(0.0, deadline - time.time()))
    last: list[tuple[Any, Violation]] = []

    @_settings(profile, shrink=True, database=database)
    @seed(seed_value)
    @given(batches)
    def search(batch: list[Any]) -> None:
        if (time.monotonic() > stop_at and last) or (stop is not None and stop()):
            return  # out of time (or told to stop): keep the smallest failure found so far
        for result in provisional(batch):
            for v in result.violations:
                if v.clause == clause:
                    last.append((result.case, v))
                    raise _Found(clause)

    if database is not None:
        # one database key per clause and kind of case, so hunts for other clauses neither replay nor
        # evict this clause's saved failures (Hypothesis's own key would be the same for every hunt)
        key = hashlib.sha256(f"{clause}|{batches!r}".encode()).hexdigest()[:24]
        search._hypothesis_internal_database_key = f"codemode-hunt:{key}".encode()  # type: ignore[attr-defined]
    try:
        search()
    except _Found:
        pass
    except HypothesisException:  # pragma: no cover - e.g. a flaky IUT confuses the shrinker
        pass
    for case, _ in reversed(last[-5:]):
        (result,) = confirm([case])
        confirmed = [v for v in result.violations if v.clause == clause]
        if confirmed:
            return case, confirmed[0]
    return None


# --- planners -------------------------------------------------------------------------------------------


def _plan_batches(profile: Profile) -> st.SearchStrategy[list[Any]]:
    from conformance.plan_cases import plan_cases

    return st.lists(plan_cases(), min_size=2, max_size=profile.max_batch)


def certify_planner(
    judge: Any,
    *,
    profile: Profile,
    seed_value: int = 0,
    progress: Callable[[Run], None] | None = None,
    shrink: bool = True,
    command: str | None = None,
    timeout: float = 10.0,
    fresh: Callable[[], Any] | None = None,
    thresholds: dict[str, float] | None = None,
    invariant_gating: bool = False,
) -> Run:
    """Certify plan answers (``judge`` is a :class:`conformance.plan_engine.PlannerJudge`): the stream
    probes when ``command`` is given, then exploration, PL-DETERMINISM re-sends (to the same IUT and, with
    ``fresh``, to a newly started one), then a shrinking hunt for every failed hard clause."""
    from conformance.clauses import JS_CLAUSES
    from conformance.stream import probe, stream_cases

    clauses = PLANNER_CLAUSES + (JS_CLAUSES if judge.role == "pipeline" else ())
    run = Run(role=judge.role, profile=profile, seed=seed_value, clauses=clauses)
    run.thresholds.update(thresholds or {})
    run.gating["PL-INVARIANT"] = invariant_gating
    if command is not None:
        for case in stream_cases(judge.role, seed=seed_value):
            run.record(probe(command, case, timeout=timeout))
    else:
        for cid in ("CLI-STREAM", "CLI-BAD-RECORD"):
            run.skipped[cid] = "an in-process implementation has no stream"
    answered: list[Any] = []
    explore(run, judge.evaluate, _plan_batches(profile), profile=profile, seed_value=seed_value, progress=progress,
            answered=answered)
    for result in determinism(judge.adapter, fresh, [(r.case.request(), r.answer) for r in answered],
                              role=judge.role, seed_value=seed_value, case_of=lambda i: answered[i].case):
        run.record(result)
    for cid in clauses:
        tally = run.tallies[cid]
        if tally.failed and shrink and CLAUSES[cid].kind == "hard" and cid not in ("CLI-STREAM", "CLI-BAD-RECORD", "PL-DETERMINISM"):
            tally.minimal = hunt_plan(judge, cid, profile=profile, seed_value=seed_value) or tally.first_failure
    run.seconds = time.time() - run.started
    return run


def determinism(
    adapter: Any,
    fresh: Callable[[], Any] | None,
    answered: list[tuple[dict[str, Any], Any]],
    *,
    role: str,
    seed_value: int,
    case_of: Callable[[int], Any],
    sample: int = 60,
) -> list[CaseResult]:
    """PL-DETERMINISM: a sample of answered requests sent again, in another order and after other
    requests, to the same IUT and (with ``fresh``) to a newly started one."""
    import random

    from conformance.adapters import Errored
    from conformance.checks.planner import pl_determinism
    from reference import jsonio

    if not answered:
        return []
    rng = random.Random(seed_value)
    picks = rng.sample(range(len(answered)), min(sample, len(answered)))
    requests = [answered[i][0] for i in picks]
    rounds = [list(reversed(adapter.exchange(list(reversed(requests)))))]
    if fresh is not None:
        other = fresh()
        try:
            rounds.append(other.exchange(requests))
        finally:
            other.close()
    out = []
    for k, i in enumerate(picks):
        violations: list[Violation] = []
        errored = None
        for again in (r[k] for r in rounds):
            if isinstance(again, Errored):
                errored = again
                continue
            violations += pl_determinism(jsonio.dumps(requests[k]), answered[i][1], again, role=role)
        out.append(CaseResult(case=case_of(i), exercised=("PL-DETERMINISM",), violations=tuple(violations[:1]),
                              errored=errored if not violations else None))
    return out


def hunt_plan(judge: Any, clause: str, *, profile: Profile, seed_value: int) -> tuple[Any, Violation] | None:
    """The smallest plan case Hypothesis shrinks to that still breaks ``clause``."""
    return _hunt(judge.evaluate, judge.evaluate, _plan_batches(profile), clause, profile=profile, seed_value=seed_value)


def merge(into: Run, other: Run) -> None:
    """Add ``other``'s tallies (of clauses ``into`` judges) to ``into``."""
    into.cases += other.cases
    into.log += other.log
    into.flaky += other.flaky
    for cid, tally in other.tallies.items():
        if cid not in into.tallies:
            continue
        mine = into.tallies[cid]
        mine.cases += tally.cases
        mine.failed += tally.failed
        mine.errored += tally.errored
        mine.failed_ids += tally.failed_ids
        mine.first_failure = mine.first_failure or tally.first_failure
        mine.minimal = mine.minimal or tally.minimal
        mine.first_error = mine.first_error or tally.first_error


def certify_role(
    role: str,
    adapter: Any,
    host: Any,
    *,
    profile: Profile,
    seed_value: int = 0,
    command: str | None = None,
    fresh: Callable[[], Any] | None = None,
    timeout: float = 10.0,
    tokenizer: str = "reference",
    thresholds: dict[str, float] | None = None,
    invariant_gating: bool = False,
    progress: Callable[[Run], None] | None = None,
    shrink: bool = True,
    corpus: list[Any] | None = None,
) -> Run:
    """A whole certification of ``role``: the clauses of ``ROLE_CLAUSES[role]``, one report. The
    ``corpus`` entries (``conformance.corpus``) are judged first, as cases like any other."""
    from conformance import corpus as corpora
    from conformance.clauses import ROLE_CLAUSES
    from conformance.plan_engine import PlannerJudge
    from conformance.stream import probe, stream_cases

    started = time.time()
    run = Run(role=role, profile=profile, seed=seed_value, clauses=ROLE_CLAUSES[role])
    run.thresholds.update(thresholds or {})
    run.gating["PL-INVARIANT"] = invariant_gating
    judge = PlannerJudge(adapter, host, role=role, tokenizer=tokenizer) if role != "compiler" else None
    compile_judge = CompilerJudge(adapter, host) if role != "planner" else None
    if corpus:
        for result in corpora.judge(corpus, compile_judge=compile_judge, plan_judge=judge):
            if result is not None:
                run.record(result)
                run.replayed += 1
        if progress is not None:
            progress(run)
    if judge is not None:
        planned = certify_planner(
            judge, profile=profile, seed_value=seed_value, progress=progress, shrink=shrink, command=command,
            timeout=timeout, fresh=fresh, thresholds=thresholds, invariant_gating=invariant_gating,
        )
        merge(run, planned)
        run.scores = planned.scores
        run.skipped.update(planned.skipped)
    if role in ("compiler", "pipeline"):
        answered: list[CaseResult] = []
        assert compile_judge is not None
        compiled = certify_compiler(compile_judge, profile=profile, seed_value=seed_value,
                                    progress=progress, shrink=shrink, answered=answered)
        merge(run, compiled)
        for result in determinism(adapter, fresh, [(r.case.request(), r.answer) for r in answered], role=role,
                                  seed_value=seed_value, case_of=lambda i: answered[i].case):
            run.record(result)
        if role == "compiler":
            if command is not None:
                for case in stream_cases(role, seed=seed_value):
                    run.record(probe(command, case, timeout=timeout))
            else:
                for cid in ("CLI-STREAM", "CLI-BAD-RECORD"):
                    run.skipped[cid] = "an in-process implementation has no stream"
    run.started = started
    run.seconds = time.time() - started
    return run
