"""Results of a certification: one :class:`CaseResult` per judged case, tallied per clause in a :class:`Run`.

A run knows nothing of how cases are made or sent; it counts what the judges found: per clause the cases
that exercised it, failed it and errored on it, the first failure and the minimal one, and per scored
metric its hits per family. ``Run.status`` turns that into the clause's outcome.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from conformance.adapters import Errored
from conformance.registry import Metric, Score, clause, registry, thresholds
from reference import jsonio
from reference.violations import Violation


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    """One judged case (of any kind): the clauses it exercised, what broke them, or why it errored;
    ``scores`` are its contributions to the scored clauses."""

    case: Any
    exercised: tuple[str, ...]
    violations: tuple[Violation, ...] = ()
    errored: Errored | None = None
    answer: dict[str, Any] | None = None
    scores: tuple[Score, ...] = ()

    @property
    def outcome(self) -> str:
        if self.errored is not None:
            return "errored"
        return "failed" if self.violations else "passed"


@dataclass(slots=True)
class ClauseTally:
    cases: int = 0
    failed: int = 0
    errored: int = 0
    first_failure: tuple[Any, Violation] | None = None
    minimal: tuple[Any, Violation] | None = None
    minimal_note: str = ""  # why the minimal case may not be minimal (its search ran out of time)
    first_error: Any = None
    failed_ids: list[str] = field(default_factory=list)  # every failing case's id, in the order seen


@dataclass(slots=True)
class ScoreTally:
    """Counts of one scored metric, overall and per family."""

    total: Counter[str] = field(default_factory=Counter)
    ok: Counter[str] = field(default_factory=Counter)
    first_miss: dict[str, Any] = field(default_factory=dict)
    axes_total: Counter[str] = field(default_factory=Counter)  # per phrasing form (``axis=form``)
    axes_ok: Counter[str] = field(default_factory=Counter)

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


def wilson_lower(hits: int, total: int, z: float = 1.96) -> float:
    return 1.0 - wilson_upper(total - hits, total, z) if total else 0.0


def credibly(hits: int, total: int, threshold: float, bound: str) -> str | None:
    """Which side of ``threshold`` the 95% Wilson interval of ``hits`` of ``total`` lies wholly on: ``"past"``
    it (the wrong side for ``bound``, "at least" or "at most"), ``"within"`` it, or None where it holds it."""
    lo, hi = wilson_lower(hits, total), wilson_upper(hits, total)
    if bound == "at least":
        return "past" if hi < threshold else "within" if lo >= threshold else None
    return "past" if lo > threshold else "within" if hi <= threshold else None


#: the answer text kept per logged case (the JSON Lines report shows it)
ANSWER_EXCERPT = 4000


@dataclass(slots=True)
class LogEntry:
    case: Any
    outcome: str  # passed, failed, errored, flaky
    violations: tuple[Violation, ...]
    answer: str | None  # the answer's JSON text, shortened (kept for cases that did not pass or missed a score)
    error: Errored | None = None  # why an errored case has no usable answer
    #: the scored rates this case counts against (``PL-ACCURACY:accuracy``, ``PL-REJECT:false-diagnosis``): a
    #: case can pass every hard clause and still be a miss of a scored one
    missed: tuple[str, ...] = ()


@dataclass(slots=True)
class Run:
    """Everything a report needs."""

    role: str
    profile: Any  # conformance.search.Profile
    seed: int
    clauses: tuple[str, ...] = ()
    tallies: dict[str, ClauseTally] = field(default_factory=dict)
    scores: dict[str, ScoreTally] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=thresholds)
    gating: dict[str, bool] = field(default_factory=dict)  # a clause reported but not failing the run
    skipped: dict[str, str] = field(default_factory=dict)  # clause -> why it is not judged in this run
    cases: int = 0
    log: list[LogEntry] = field(default_factory=list)  # one entry per judged case, in order
    replayed: int = 0  # corpus cases judged before exploring
    #: cases judged differently on repeats (``--repeat``): (case, each repeat's result); not tallied
    flaky: list[tuple[Any, list[Any]]] = field(default_factory=list)
    #: why the run stopped before its profile's search was done (its time budget), or None
    stopped: str | None = None
    #: scored rates whose 95% interval held their threshold after exploring: metric -> the cases it had counted
    #: then (the run drew more of that kind to settle it, ``conformance.certify.settle``)
    settled: dict[str, int] = field(default_factory=dict)
    #: why settling stopped before every rate was settled or had its most cases, or None
    settle_stopped: str | None = None
    #: per-family metrics whose families missed them on their own over the cases explored, judged again on
    #: cases drawn apart: metric -> the tally of those cases alone (``conformance.certify.confirm_families``)
    confirmed: dict[str, ScoreTally] = field(default_factory=dict)
    #: errored cases by the class of their condition (an HTTP planner's ``refused``, ``unavailable``, …)
    conditions: Counter[str] = field(default_factory=Counter)
    started: float = field(default_factory=time.time)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        for cid in self.clauses:
            self.tallies.setdefault(cid, ClauseTally())

    def record(self, result: CaseResult) -> None:
        self.cases += 1
        misses = [not score.ok if self._bound(score.metric) == "at least" else score.ok for score in result.scores]
        missed = tuple(f"{score.clause}:{score.metric}" for score, miss in zip(result.scores, misses) if miss)
        answer = None
        if (result.outcome != "passed" or missed) and result.answer is not None:
            answer = _excerpt(result.answer)
        self.log.append(LogEntry(result.case, result.outcome, tuple(result.violations), answer, result.errored, missed))
        if result.errored is not None and result.errored.condition:
            self.conditions[result.errored.condition] += 1
        for score, miss in zip(result.scores, misses):
            tally_s = self.scores.setdefault(score.metric, ScoreTally())
            tally_s.total[score.family] += 1
            tally_s.ok[score.family] += score.ok
            for label in score.axes:
                tally_s.axes_total[label] += 1
                tally_s.axes_ok[label] += score.ok
            if miss and score.family not in tally_s.first_miss:
                tally_s.first_miss[score.family] = (result.case, result.answer)
        # a violated clause counts the case too, whatever the judge said it exercised
        exercised = dict.fromkeys((*result.exercised, *(v.clause for v in result.violations)))
        for cid in exercised:
            tally = self.tallies.get(cid)
            if tally is None:
                continue
            tally.cases += 1
            if result.errored is not None:
                tally.errored += 1
                if tally.first_error is None or (tally.first_error.errored.unmatched and not result.errored.unmatched):
                    tally.first_error = result  # (the request that went unanswered, before one answered too early)
        seen: set[str] = set()
        for v in result.violations:
            tally = self.tallies.get(v.clause)
            if tally is None:
                continue
            if v.clause not in seen:
                tally.failed += 1
                tally.failed_ids.append(result.case.id)
                seen.add(v.clause)
            if tally.first_failure is None:
                tally.first_failure = (result.case, v)

    @staticmethod
    def _bound(metric: str) -> str:
        for c in registry().values():
            for m in c.metrics:
                if m.name == metric:
                    return m.bound
        return "at least"

    def counted(self, metric: str) -> int:
        """The cases a scored metric has counted so far."""
        tally = self.scores.get(metric)
        return sum(tally.total.values()) if tally else 0

    def undecided(self, m: Metric) -> bool:
        """Whether the 95% Wilson interval of ``m``'s overall rate holds its threshold, so that more cases of
        the same planner could still turn its verdict either way. A threshold of 0 or 1 is never settled
        (no number of cases makes a perfect rate credibly meet it)."""
        threshold = self.thresholds[m.key]
        if not self.counted(m.name) or not 0.0 < threshold < 1.0:
            return False
        return self._overall(m) is None

    def credibly_past(self, m: Metric) -> bool:
        """Whether ``m``'s overall rate is past its threshold by more than its 95% Wilson interval."""
        return bool(self.counted(m.name)) and self._overall(m) == "past"

    def _overall(self, m: Metric) -> str | None:
        tally = self.scores[m.name]
        return credibly(sum(tally.ok.values()), sum(tally.total.values()), self.thresholds[m.key], m.bound)

    def metrics(self, cid: str) -> dict[str, tuple[float | None, float, bool]]:
        """For a scored clause: metric -> (rate, threshold, meets it); a missing rate does not fail."""
        out = {}
        for m in clause(cid).metrics:
            tally = self.scores.get(m.name, ScoreTally())
            threshold = self.thresholds[m.key]
            rate = tally.rate()
            lower = m.bound == "at least"
            meets = (rate is None or (rate >= threshold if lower else rate <= threshold)) and not self.failing_families(m)
            out[m.name] = (rate, threshold, meets)
        return out

    def failing_families(self, m: Metric) -> list[str]:
        """The families that fail a ``per_family`` metric on their own. A family is a few hundred cases, where
        one miss moves the rate by more than the margin between 0.995 and 1: it fails when it is credibly past
        the threshold (the far end of its 95% Wilson interval is), while the overall rate must meet it outright.
        A family judged again on as many cases drawn apart from those explored (:meth:`apart`) is judged on
        those alone."""
        if not m.per_family:
            return []
        tally = self.scores.get(m.name, ScoreTally())
        out = []
        for f in sorted(tally.total):
            hits, total = self.apart(m.name, f) or (tally.ok[f], tally.total[f])
            if credibly(hits, total, self.thresholds[m.key], m.bound) == "past":
                out.append(f)
        return out

    def apart(self, metric: str, family: str) -> tuple[int, int] | None:
        """A family's (hits, cases) over the cases drawn apart to judge it again, once it has as many of them as
        it had explored; else None."""
        apart = self.confirmed.get(metric)
        if apart is None or not apart.total[family]:
            return None
        n = apart.total[family]
        return (apart.ok[family], n) if n >= self.scores[metric].total[family] - n else None

    def status(self, cid: str) -> str:
        if cid in self.skipped:
            return "skipped"
        tally = self.tallies.get(cid)
        if tally is None:
            return "skipped"
        if clause(cid).kind == "scored":
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


def _excerpt(answer: Any) -> str:
    try:
        text = jsonio.dumps(answer)
    except (TypeError, ValueError):
        text = repr(answer)
    return text[:ANSWER_EXCERPT]


def merge(into: Run, other: Run) -> None:
    """Add ``other``'s tallies (of clauses ``into`` judges) to ``into``."""
    into.cases += other.cases
    into.log += other.log
    into.flaky += other.flaky
    for metric, explored in other.settled.items():
        into.settled[metric] = into.settled.get(metric, 0) + explored
    into.settle_stopped = into.settle_stopped or other.settle_stopped
    for metric, tally in other.confirmed.items():
        mine_c = into.confirmed.setdefault(metric, ScoreTally())
        mine_c.total.update(tally.total)
        mine_c.ok.update(tally.ok)
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
        if mine.first_error is None or (mine.first_error.errored.unmatched and tally.first_error is not None
                                        and not tally.first_error.errored.unmatched):
            mine.first_error = tally.first_error
