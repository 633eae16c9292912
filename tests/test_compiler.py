from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.adapters import PythonAdapter
from conformance.certify import PROFILES, certify_compiler
from conformance.registry import role_clauses
from conformance.engine import CompilerJudge
from conformance.v8host import V8Host
from reference import jsonio
from reference.compiler import compile_plan, compile_request, js_string
from strategies import catalogs, plans

COMPILER_CLAUSES = tuple(c for c in role_clauses("compiler") if c.startswith(("CO-", "JS-")))


@settings(max_examples=200)
@given(st.data())
def test_output_is_ascii_and_deterministic(data: st.DataObject) -> None:
    catalog = data.draw(catalogs())
    plan = data.draw(plans(catalog))
    js = compile_plan(plan, catalog)
    assert js.isascii()
    assert js == compile_plan(plan, catalog)
    assert "</script" not in js.lower()


def test_string_literals_escape_what_html_and_json_disagree_on() -> None:
    assert js_string("</script>\u2028\ud800\"\\") == '"\\u003c/script\\u003e\\u2028\\ud800\\"\\\\"'


def test_invalid_plan_gets_a_diagnostic_naming_its_clause() -> None:
    tools = [{"name": "f", "arguments": {"n": "number"}, "required": [], "returns": {"kind": "text"}}]
    plan = jsonio.loads('{"mode":"single","calls":[{"tool":"f","args":{"n":1e400}}],"output":{"kind":"last"}}')
    answer = compile_request(plan, tools)
    assert answer.js is None and "PL-ARGS" in (answer.diagnostic or "")
    bad_catalog = compile_request(plan, [])
    assert bad_catalog.js is None and "IN-COUNT" in (bad_catalog.diagnostic or "")


def test_reference_certifies_clean_in_process() -> None:
    adapter = PythonAdapter("reference.cli:compile_line")
    with V8Host() as host:
        run = certify_compiler(CompilerJudge(adapter, host), profile=dataclasses.replace(PROFILES["quick"], examples=120), seed_value=1)
    for cid in COMPILER_CLAUSES:
        assert run.status(cid) == "passed", (cid, run.tallies[cid])
        assert run.tallies[cid].cases > 0
