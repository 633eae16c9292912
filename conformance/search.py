"""Searching for cases with Hypothesis: explore in large batches, then hunt each failure down to a minimal case.

Exploration draws Hypothesis examples (each a short list of cases) and judges them in chunks of a few
hundred, because one IUT round trip and one V8 ``eval`` cost far more than a case. For every clause that
failed, a *hunt* re-runs the same seeded search judging each example on its own and lets Hypothesis
shrink the first failing one to a minimal case. A hunt is bounded by a number of judgements, not by time,
so the same seed finds the same minimal case on a fast machine and a slow one; its time limit is only a
safety net (a hunt that reaches it says so).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from conformance.results import Run
from reference.violations import Violation


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    name: str
    examples: int  # Hypothesis examples explored (each a list of cases)
    max_batch: int  # cases per example
    chunk: int  # cases judged per IUT round trip while exploring
    hunt_calls: int  # judgements a hunt may make to find and shrink one failing clause's minimal case
    hunt_seconds: float  # a hunt's safety net: past this, it keeps the smallest failure found so far
    seconds: float  # the whole run's time budget: past it, no more cases are drawn (the report says so)
    repeat: int = 1  # times each case is judged while exploring (above 1: flaky cases are found)
    #: a scored rate left undecided by exploring is settled on up to this many times the cases it had counted
    settle: int = 4


PROFILES = {
    "quick": Profile(name="quick", examples=300, max_batch=10, chunk=200, hunt_calls=150, hunt_seconds=30, seconds=240),
    "standard": Profile(name="standard", examples=900, max_batch=10, chunk=300, hunt_calls=300, hunt_seconds=60,
                        seconds=900),
    "deep": Profile(name="deep", examples=8000, max_batch=10, chunk=400, hunt_calls=1500, hunt_seconds=300,
                    seconds=7200),
    # one round of a fuzzing campaign (``codemode fuzz``): rounds repeat with new seeds until time is up
    "fuzz": Profile(name="fuzz", examples=60, max_batch=10, chunk=300, hunt_calls=200, hunt_seconds=20, seconds=600),
}


@contextmanager
def kit_draws() -> Iterator[None]:
    """While the kit draws cases: no constant from the source of the modules loaded.

    Hypothesis now and then draws a constant it found in the source of the *local* modules a process has
    loaded (those outside site-packages and the standard library): the kit's own modules in a checkout,
    and an in-process implementation's module and whatever it imports. Cases would then depend on the code
    under test and on any edit to the kit's source, so a seed would not name one run. While the kit draws,
    Hypothesis's local constants are an empty set (its own list of well-known constants stays), and its
    cache of the constants it may draw is one of the kit's: the cases of a seed are the same for every
    implementation, in a checkout and from the wheel. Hypothesis
    has no setting for this, so the names it looks up are swapped for the duration and put back (a
    Hypothesis without them draws as it does)."""
    if _providers is None or not hasattr(_providers, "_get_local_constants"):  # pragma: no cover
        yield
        return
    saved = _providers._get_local_constants, _providers.CONSTANTS_CACHE
    _providers._get_local_constants, _providers.CONSTANTS_CACHE = lambda: _NONE, _KIT_CACHE
    try:
        yield
    finally:
        _providers._get_local_constants, _providers.CONSTANTS_CACHE = saved


try:  # what ``kit_draws`` swaps in: no local constant, and a cache of the constants the kit's draws may use
    from hypothesis.internal.cache import LRUCache
    from hypothesis.internal.conjecture import providers as _providers
    from hypothesis.internal.constants_ast import Constants

    _NONE, _KIT_CACHE = Constants(), LRUCache(1024)
except ImportError:  # pragma: no cover - another Hypothesis: it draws as it does
    _providers = None


def drawn(strategy: st.SearchStrategy[Any], n: int, *, seed_value: int) -> list[Any]:
    """The first ``n`` examples a seeded Hypothesis run draws from ``strategy`` (generation only, no
    database, no shrinking): the same list for the same seed, for benchmarks and fixed test sets."""
    out: list[Any] = []

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seed(seed_value)
    @given(strategy)
    def collect(example: Any) -> None:
        out.append(example)

    with kit_draws():
        collect()
    return out


def hypothesis_settings(profile: Profile, *, shrink: bool, database: Any = None, examples: int | None = None) -> settings:
    return settings(
        max_examples=profile.examples if examples is None else examples,
        database=database,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=([Phase.reuse] if database is not None else []) + ([Phase.generate, Phase.shrink] if shrink else [Phase.generate]),
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
    )


def explore(
    run: Run,
    evaluate: Callable[[list[Any]], list[Any]],
    batches: st.SearchStrategy[list[Any]],
    *,
    profile: Profile,
    seed_value: int,
    progress: Callable[[Run], None] | None = None,
    answered: list[Any] | None = None,
    deadline: float | None = None,
) -> None:
    """Draw the profile's examples and judge their cases in chunks, each distinct case once (Hypothesis
    repeats simple examples, and a repeated case would count twice in every rate). Past ``deadline`` (a
    ``time.monotonic()``) nothing more is drawn, and ``run.stopped`` says so."""
    pending: list[Any] = []
    seen: set[str] = set()

    def flush() -> None:
        if not pending:
            return
        rounds = [{r.case.id: r for r in evaluate(pending)} for _ in range(max(1, profile.repeat))]
        for ident, result in rounds[0].items():
            repeats = [r[ident] for r in rounds if ident in r]
            if len({signature(r) for r in repeats}) > 1:
                run.flaky.append((result.case, repeats))
                continue
            run.record(result)
            if answered is not None and result.answer is not None:
                answered.append(result)
        pending.clear()
        if progress is not None:
            progress(run)

    def out_of_time() -> bool:
        return deadline is not None and time.monotonic() > deadline

    @hypothesis_settings(profile, shrink=False)
    @seed(seed_value)
    @given(batches)
    def search(batch: list[Any]) -> None:
        if out_of_time():  # stop drawing: the examples left would cost the time of drawing them
            raise _Enough
        for case in batch:
            if case.id not in seen:
                seen.add(case.id)
                pending.append(case)
        if len(pending) >= profile.chunk:
            flush()

    with kit_draws():
        try:
            search()
        except _Enough:
            pass
    if out_of_time():
        run.stopped = run.stopped or "the run's time budget ran out before its search was done"
        pending.clear()
    flush()


def signature(result: Any) -> tuple[Any, ...]:
    """What must agree between repeats of a case: its outcome, the clauses it broke, and its scores."""
    return (
        result.outcome,
        frozenset(v.clause for v in result.violations),
        tuple(sorted((s.metric, s.family, s.ok) for s in result.scores)),
    )


class _Enough(KeyboardInterrupt):
    """Raised inside a search that must draw nothing more (an exploration past its deadline; a hunt past
    its time, its judgements or a campaign's stop): an example that returned at once would still be
    drawn, and shrunk, and drawing is not free (900 compile batches take about a minute on a slow core).
    Hypothesis treats a ``KeyboardInterrupt`` as the wish to stop at once: it neither shrinks, replays
    nor saves the example that raised it (a hunt's failures saved before it stay in the database). Only
    this subclass is caught, around the search: a real Ctrl-C still goes through."""


class _Found(Exception):
    """Raised inside a hunt to tell Hypothesis an example breaks the hunted clause."""


@dataclass(frozen=True, slots=True)
class Hunted:
    """A hunt's find: the smallest case breaking the clause, and why it may not be minimal."""

    case: Any
    violation: Violation
    note: str = ""


def hunt(
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
) -> Hunted | None:
    """Find and shrink a case breaking ``clause``: at most ``profile.hunt_calls`` judgements, so the same
    seed finds the same case anywhere. With ``database`` (a campaign's shared Hypothesis example database),
    failures other hunts saved are tried first and this one's is saved. ``deadline`` (a ``time.time()``;
    by default the profile's ``hunt_seconds`` from now) is a safety net. The smallest case found is
    judged again by ``confirm``; ``None`` when no failure is met again (as with a non-deterministic IUT)."""
    stop_at = time.monotonic() + (profile.hunt_seconds if deadline is None else max(0.0, deadline - time.time()))
    last: list[tuple[Any, Violation]] = []
    calls = [0]
    note = [""]

    @hypothesis_settings(profile, shrink=True, database=database, examples=profile.hunt_calls)
    @seed(seed_value)
    @given(batches)
    def search(batch: list[Any]) -> None:
        # past its stop, budget or time, the search stops drawing (see _Enough): the smallest failure
        # found so far is kept
        if stop is not None and stop():
            note[0] = note[0] or "the campaign stopped before its search for a minimal case was done"
            raise _Enough
        if calls[0] >= profile.hunt_calls:
            raise _Enough
        if time.monotonic() > stop_at:
            note[0] = "the search for a minimal case reached its time limit; a smaller case may exist"
            raise _Enough
        calls[0] += 1
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
        with kit_draws():
            search()
    except (_Found, _Enough):
        pass
    except HypothesisException:  # pragma: no cover - e.g. a flaky IUT confuses the shrinker
        pass
    for case, _ in reversed(last[-5:]):
        (result,) = confirm([case])
        confirmed = [v for v in result.violations if v.clause == clause]
        if confirmed:
            return Hunted(case, confirmed[0], note[0])
    return None
