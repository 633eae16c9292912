"""Mutations: the ways the strategies know to break one clause of a valid catalog or plan.

A mutation is registered where it is written, with the clause it breaks, how often it is chosen among
those that apply, and when it applies, as faulty implementations are registered in ``tests/faulty``::

    @PLAN_MUTATIONS.register("PL-ARGS", weight=2, applies=lambda plan, catalog, tool: bool(tool.required))
    def missing_required(ch, raw, plan, catalog, tool):
        del raw["calls"][0]["args"][ch.choice(tool.required)]
        return raw

``pick`` chooses among the mutations that apply (in registration order, each repeated by its weight, so
a chooser shrinks towards the first); adding a way to break a clause is one decorated function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strategies._internal.errors import InvalidArgument


def _always(*args: Any) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Mutation:
    clause: str
    name: str
    weight: int
    applies: Callable[..., bool]
    apply: Callable[..., Any]


class Mutations:
    """A named, ordered set of mutations of one kind of record (catalogs, plans)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.all: list[Mutation] = []

    def register(self, clause: str, *, weight: int = 1, applies: Callable[..., bool] = _always) -> Callable[..., Any]:
        def add(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.all.append(Mutation(clause=clause, name=fn.__name__.replace("_", "-"), weight=weight,
                                     applies=applies, apply=fn))
            return fn

        return add

    def pick(self, ch: Any, *context: Any, clause: str | None = None) -> Mutation:
        """One mutation that applies to ``context`` (and breaks ``clause``, when given), chosen by ``ch``."""
        options = [m for m in self.all if (clause is None or m.clause == clause) and m.applies(*context)
                   for _ in range(m.weight)]
        if not options:
            raise InvalidArgument(f"Cannot break clause={clause!r}: no mutation of {self.what} applies")
        return ch.choice(options)

    def clauses(self) -> set[str]:
        return {m.clause for m in self.all}
