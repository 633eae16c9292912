"""An independent compiler, written in JavaScript from SPEC.md alone, certifies clean: the kit does not
fail a correct implementation that is not the reference."""

from __future__ import annotations

import dataclasses

import shutil

import pytest

from conformance.adapters import SubprocessAdapter
from conformance.certify import PROFILES, certify_compiler
from conformance.registry import role_clauses
from conformance.engine import CompilerJudge
from conformance.v8host import V8Host
from tests.conftest import ROOT

COMPILER_CLAUSES = tuple(c for c in role_clauses("compiler") if c.startswith(("CO-", "JS-")))


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js to run the independent compiler")
def test_an_independent_javascript_compiler_certifies_clean() -> None:
    adapter = SubprocessAdapter(f"node {ROOT / 'tests' / 'independent' / 'compiler.mjs'}")
    try:
        with V8Host() as host:
            run = certify_compiler(CompilerJudge(adapter, host), profile=dataclasses.replace(PROFILES["quick"], examples=120), seed_value=7)
    finally:
        adapter.close()
    assert {cid: run.status(cid) for cid in COMPILER_CLAUSES} == {cid: "passed" for cid in COMPILER_CLAUSES}
