"""SPEC.md, the registry, the checks and the faulty implementations agree."""

from __future__ import annotations

import inspect

from conformance.clauses import CHECKS, CLAUSES, COMPILER_CLAUSES, ORDER, PENDING, spec_clauses
from tests.faulty.compilers import CLAUSE_OF
from tests.faulty.planners import CLAUSE_OF as PLANNER_CLAUSE_OF


def test_spec_and_registry_name_the_same_clauses_with_the_same_kinds() -> None:
    spec = spec_clauses()
    assert list(spec) == list(ORDER)
    for cid, kind in spec.items():
        assert CLAUSES[cid].kind == kind


def test_every_clause_has_a_check_or_is_pending_with_a_reason() -> None:
    for cid in ORDER:
        assert (cid in CHECKS) != (cid in PENDING), cid
    for cid, check in CHECKS.items():
        assert check.__name__ == cid.lower().replace("-", "_")
        assert inspect.getdoc(check), f"{cid}'s check quotes no contract sentence"


def test_every_checked_clause_has_a_faulty_implementation() -> None:
    assert set(CHECKS) == set(ORDER) and not PENDING
    assert set(COMPILER_CLAUSES) <= set(CLAUSE_OF.values())
    assert set(CHECKS) <= set(CLAUSE_OF.values()) | set(PLANNER_CLAUSE_OF.values())
