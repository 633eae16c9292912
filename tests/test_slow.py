"""Longer searches, kept out of the default run: ``make test-slow``."""

from __future__ import annotations

import pytest

from conformance.adapters import PythonAdapter
from conformance.certify import PROFILES, certify_compiler
from conformance.registry import role_clauses
from conformance.engine import CompilerJudge
from conformance.v8host import V8Host

COMPILER_CLAUSES = tuple(c for c in role_clauses("compiler") if c.startswith(("CO-", "JS-")))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_reference_certifies_clean_on_more_seeds(seed: int) -> None:
    adapter = PythonAdapter("reference.cli:compile_line")
    with V8Host() as host:
        run = certify_compiler(CompilerJudge(adapter, host), profile=PROFILES["standard"], seed_value=seed)
    assert {cid: run.status(cid) for cid in COMPILER_CLAUSES} == {cid: "passed" for cid in COMPILER_CLAUSES}
