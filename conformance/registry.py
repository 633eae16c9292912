"""The clause model: every clause of SPEC.md has one registration, and the judges run the registry.

A clause is registered once, in the check module of its family (``conformance/checks/<family>.py``), by
decorating its check function::

    FAMILY = Family("js", order=70, subject="compile", roles=("compiler", "pipeline"))

    @FAMILY.clause("JS-PARALLEL", applies=lambda obs: obs.exp is not None and obs.exp.mode == "parallel")
    def js_parallel(obs: CompileObservation) -> Iterator[Violation]:
        '''"Parallel mode uses Promise.allSettled" ...'''

That registration is everything the kit knows of the clause: its id, its kind (``hard`` or ``scored``,
with its metrics and their default thresholds), the *subject* it judges (which kind of immutable
observation of ``conformance.observations``: ``stream``, ``plan``, ``compile`` or ``again``), the roles it
is judged in, when it applies to an observation (what "cases per clause" counts), and one check of one
signature, ``check(observation) -> Iterable[Violation | Score]``. :func:`judge` runs, for one observation,
every registered clause of its subject that applies, in SPEC order; nothing calls a check by hand.

The families are found by walking ``conformance.checks`` for modules with a ``FAMILY`` (not by import side
effects elsewhere): adding a family is SPEC text, one check module, its generator and its faulty
implementations. ``SPEC.md`` (shipped inside the package) holds each clause's normative text; a test holds
the registry and the document to each other.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from reference.violations import Violation

ROLES = ("compiler", "planner", "pipeline")  # the roles of the inference contract (a family's default)
ALL_ROLES = (*ROLES, "collector")  # and the streaming collector of the transport contract
SUBJECTS = ("stream", "plan", "compile", "again", "collect")


@dataclass(frozen=True, slots=True, kw_only=True)
class Score:
    """One case's contribution to a scored clause's metric: ``ok`` is a hit (for ``at least`` metrics) or
    an occurrence of what the metric counts against (for ``at most`` ones, such as false diagnoses)."""

    clause: str
    metric: str
    family: str
    ok: bool
    axes: tuple[str, ...] = ()  # the phrasing forms of the case's instruction, counted apart in reports


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    """A rate a scored clause is judged by: ``key`` names its threshold (``PL-REJECT:recall``), ``bound`` is
    ``at least`` or ``at most``, ``default`` the threshold SPEC.md states. With ``per_family`` no family
    may be credibly on the wrong side of the threshold either (the Wilson interval of its rate). ``draws``
    names the kind of case the rate counts (``supported``, ``unsupported``): while the rate's 95% interval
    holds the threshold, a run draws more cases of that kind to settle it."""

    name: str
    key: str
    bound: str
    default: float
    per_family: bool = False
    draws: str | None = None


Check = Callable[[Any], Iterable[Any]]


def _always(obs: Any) -> bool:
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class Clause:
    id: str
    kind: str  # "hard" or "scored"
    family: str
    subject: str  # the observation it judges (one of SUBJECTS)
    roles: tuple[str, ...]
    check: Check = field(repr=False)
    applies: Callable[[Any], bool] = field(default=_always, repr=False)
    metrics: tuple[Metric, ...] = ()
    summary: str = ""

    @property
    def anchor(self) -> str:
        """The clause's heading anchor in SPEC.md."""
        return self.id.lower()

    @property
    def doc(self) -> str:
        return (self.check.__doc__ or "").strip()


class Family:
    """The clauses of one SPEC.md section, registered by their check module, in SPEC order."""

    def __init__(self, name: str, *, order: int, subject: str, roles: tuple[str, ...] = ROLES) -> None:
        if subject not in SUBJECTS:
            raise ValueError(f"{subject!r} is not a subject: one of {', '.join(SUBJECTS)}")
        self.name = name
        self.order = order
        self.subject = subject
        self.roles = roles
        self.clauses: list[Clause] = []

    def clause(
        self,
        id: str,
        *,
        applies: Callable[[Any], bool] = _always,
        summary: str,
        metrics: tuple[Metric, ...] = (),
        subject: str | None = None,
        roles: tuple[str, ...] | None = None,
    ) -> Callable[[Check], Check]:
        """Register the decorated function as the check of clause ``id`` (scored when it has ``metrics``)."""

        def register(check: Check) -> Check:
            name = id.lower().replace("-", "_")
            if check.__name__ != name:
                raise ValueError(f"the check of {id} is named {check.__name__!r}, not {name!r}")
            self.clauses.append(Clause(
                id=id, kind="scored" if metrics else "hard", family=self.name, subject=subject or self.subject,
                roles=roles or self.roles, check=check, applies=applies, metrics=metrics, summary=summary,
            ))
            return check

        return register


@cache
def families() -> tuple[Family, ...]:
    """Every family of ``conformance.checks``, in SPEC order."""
    import conformance.checks as package

    found = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        family = getattr(module, "FAMILY", None)
        if isinstance(family, Family):
            found.append(family)
    return tuple(sorted(found, key=lambda f: f.order))


@cache
def registry() -> dict[str, Clause]:
    """Every clause by id, in SPEC order."""
    out: dict[str, Clause] = {}
    for family in families():
        for c in family.clauses:
            if c.id in out:
                raise ValueError(f"{c.id} is registered twice")
            out[c.id] = c
    return out


def clause(cid: str) -> Clause:
    return registry()[cid]


def order() -> tuple[str, ...]:
    return tuple(registry())


def role_clauses(role: str) -> tuple[str, ...]:
    """The clauses judged when certifying ``role``, in SPEC order."""
    return tuple(cid for cid, c in registry().items() if role in c.roles)


def thresholds() -> dict[str, float]:
    """The default threshold of every metric of every scored clause, by key (``PL-REJECT:recall``)."""
    return {m.key: m.default for c in registry().values() for m in c.metrics}


@dataclass(frozen=True, slots=True)
class Judgement:
    """What the registry made of one observation: the clauses it exercised, their violations and scores."""

    exercised: tuple[str, ...]
    violations: tuple[Violation, ...]
    scores: tuple[Score, ...]


def judge(subject: str, obs: Any, *, clauses: Collection[str] | None = None, judged: bool = True) -> Judgement:
    """Run every registered clause of ``subject`` that applies to ``obs`` (and is among ``clauses``, when
    given). With ``judged=False`` (an errored case: nothing to judge) only what it exercised is said."""
    exercised: list[str] = []
    violations: list[Violation] = []
    scores: list[Score] = []
    for c in registry().values():
        if c.subject != subject or (clauses is not None and c.id not in clauses) or not c.applies(obs):
            continue
        exercised.append(c.id)
        if not judged:
            continue
        for item in c.check(obs):
            if isinstance(item, Score):
                scores.append(item)
            else:
                violations.append(item)
    return Judgement(exercised=tuple(exercised), violations=tuple(violations), scores=tuple(scores))


# --- SPEC.md --------------------------------------------------------------------------------------------


def spec_text() -> str:
    """SPEC.md as shipped with the kit (inside the ``conformance`` package)."""
    return resources.files("conformance").joinpath("SPEC.md").read_text(encoding="utf-8")


def spec_clauses(text: str | None = None) -> dict[str, str]:
    """``{id: kind}`` as SPEC.md states them (kind is ``hard`` or ``scored``)."""
    out: dict[str, str] = {}
    for match in re.finditer(r"^### ([A-Z]+(?:-[A-Z]+)+)\s*\n+\*\*Kind:\*\* (\w+)", text or spec_text(), re.M):
        out[match.group(1)] = match.group(2)
    return out


def spec_section(cid: str, text: str | None = None) -> str:
    """The text of clause ``cid`` in SPEC.md: from its heading to the next one."""
    match = re.search(rf"^### {re.escape(cid)}\s*\n(.*?)(?=^### |^## |\Z)", text or spec_text(), re.M | re.S)
    return match.group(1).strip() if match else ""


def spec_rule(cid: str, text: str | None = None) -> str:
    """The ``**Rule:**`` paragraph of clause ``cid``, without its label."""
    found = re.search(r"^\*\*Rule:\*\* (.*)$", spec_section(cid, text), re.M)
    return found.group(1).strip() if found else ""


def spec_thresholds(text: str | None = None) -> dict[str, float]:
    """The thresholds SPEC.md states, by metric key (a test holds them to the registered defaults)."""
    out: dict[str, float] = {}
    for cid, c in registry().items():
        for line in re.findall(r"^\*\*Threshold:\*\* (.*)$", spec_section(cid, text), re.M):
            found = re.search(r"(exact-match rate|recall|false-diagnosis rate) at (?:least|most) ([0-9.]+)", line)
            if found:
                name = {"exact-match rate": "accuracy", "recall": "recall", "false-diagnosis rate": "false-diagnosis"}[found.group(1)]
                key = next((m.key for m in c.metrics if m.name == name), None)
                if key is not None:
                    out[key] = float(found.group(2))
    return out


def iter_subject(subject: str) -> Iterator[Clause]:
    return (c for c in registry().values() if c.subject == subject)
