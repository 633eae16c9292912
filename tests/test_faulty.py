"""Every clause check bites: each faulty implementation fails under the clause it breaks."""

from __future__ import annotations

import pytest

from conformance.adapters import SubprocessAdapter
from conformance.certify import PROFILES, certify_compiler, hunt
from conformance.clauses import COMPILER_CLAUSES
from conformance.engine import CompilerJudge
from conformance.v8host import V8Host
from tests.conftest import python_module_command
from tests.faulty.compilers import CLAUSE_OF


@pytest.mark.parametrize("name", sorted(CLAUSE_OF))
def test_faulty_compiler_fails_under_its_clause(name: str) -> None:
    clause = CLAUSE_OF[name]
    adapter = SubprocessAdapter(python_module_command("tests.faulty.compilers", name))
    try:
        with V8Host() as host:
            run = certify_compiler(CompilerJudge(adapter, host), profile=PROFILES["quick"], shrink=False)
    finally:
        adapter.close()
    failed = [cid for cid in COMPILER_CLAUSES if run.status(cid) == "failed"]
    statuses = {cid: (run.status(cid), run.tallies[cid].cases, run.tallies[cid].errored) for cid in COMPILER_CLAUSES}
    assert clause in failed, f"{name} should fail {clause}; failed {failed}; (status, cases, errored): {statuses}"
    tally = run.tallies[clause]
    assert tally.first_failure is not None and tally.first_failure[1].clause == clause


def test_every_compiler_clause_has_a_faulty_implementation() -> None:
    assert set(COMPILER_CLAUSES) <= set(CLAUSE_OF.values())


def test_a_failure_shrinks_to_a_small_replayable_case() -> None:
    adapter = SubprocessAdapter(python_module_command("tests.faulty.compilers", "staggered-parallel"))
    try:
        with V8Host() as host:
            found = hunt(CompilerJudge(adapter, host), "JS-PARALLEL", profile=PROFILES["quick"], seed_value=0)
    finally:
        adapter.close()
    assert found is not None
    case, violation = found
    assert violation.clause == "JS-PARALLEL"
    assert case.plan["mode"] == "parallel" and len(case.plan["calls"]) == 2  # as small as a parallel plan gets
