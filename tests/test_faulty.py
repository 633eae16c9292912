"""Every clause check bites: each faulty implementation fails under the clause it breaks."""

from __future__ import annotations

import random

import pytest

from conformance.adapters import SubprocessAdapter
from conformance.cases import sample_compile_cases
from conformance.certify import PROFILES, certify_compiler, hunt_compile
from conformance.engine import CompilerJudge
from conformance.registry import role_clauses
from conformance.results import Run
from conformance.v8host import V8Host
from tests.conftest import python_module_command
from tests.faulty.compilers import CLAUSE_OF

COMPILER_CLAUSES = tuple(c for c in role_clauses("compiler") if c.startswith(("CO-", "JS-")))


#: sampled cases judged at most, in chunks: a faulty compiler must be caught within them
CHUNK, MOST = 150, 1800


@pytest.mark.parametrize("name", sorted(CLAUSE_OF))
def test_faulty_compiler_fails_under_its_clause(name: str) -> None:
    """Judged chunk by chunk on cases sampled from one seed (what a campaign draws; unlike Hypothesis's
    draws they do not depend on the modules this process loaded), until its clause fails."""
    clause = CLAUSE_OF[name]
    cases = sample_compile_cases(random.Random(20261201), MOST)
    run = Run(role="compiler", profile=PROFILES["quick"], seed=0, clauses=role_clauses("compiler"))
    adapter = SubprocessAdapter(python_module_command("tests.faulty.compilers", name))
    try:
        with V8Host() as host:
            judge = CompilerJudge(adapter, host)
            for start in range(0, MOST, CHUNK):
                for result in judge.evaluate(cases[start : start + CHUNK]):
                    run.record(result)
                if run.tallies[clause].failed:
                    break
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
            found = hunt_compile(CompilerJudge(adapter, host), "JS-PARALLEL", profile=PROFILES["quick"], seed_value=0)
    finally:
        adapter.close()
    assert found is not None
    case, violation = found.case, found.violation
    assert violation.clause == "JS-PARALLEL"
    assert case.plan["mode"] == "parallel" and len(case.plan["calls"]) == 2  # as small as a parallel plan gets
