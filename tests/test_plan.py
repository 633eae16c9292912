from __future__ import annotations

import json

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from reference import jsonio
from reference.catalog import Catalog
from reference.plan import Plan, plan_schema, validate_plan
from strategies import catalogs, invalid_plans, plans


def test_the_plan_schema_is_a_valid_json_schema() -> None:
    schema = plan_schema()
    jsonschema.validators.validator_for(schema).check_schema(schema)
    assert json.dumps(schema)


@given(st.data())
def test_generated_plans_are_valid_and_round_trip(data: st.DataObject) -> None:
    catalog = data.draw(catalogs())
    plan = data.draw(plans(catalog))
    raw = jsonio.loads(jsonio.dumps(plan.to_json()))
    assert validate_plan(raw, catalog) == []
    assert Plan.from_json(raw, catalog) == plan


@given(st.data())
def test_invalid_plans_break_the_clause_they_name(data: st.DataObject) -> None:
    catalog: Catalog = data.draw(catalogs())
    raw, clause = data.draw(invalid_plans(catalog))
    found = [v.clause for v in validate_plan(jsonio.loads(jsonio.dumps(raw)), catalog)]
    assert clause in found
    assert len(found) == len(set(found))


def test_inexact_number_is_a_pl_args_violation() -> None:
    catalog = Catalog.from_json([{"name": "f", "arguments": {"n": "number"}, "required": ["n"], "returns": {"kind": "text"}}])
    raw = jsonio.loads('{"mode":"single","calls":[{"tool":"f","args":{"n":0.30000000000000001}}],"output":{"kind":"last"}}')
    assert [v.clause for v in validate_plan(raw, catalog)] == ["PL-ARGS"]


@given(st.data())
def test_the_fast_schema_check_never_accepts_what_the_schema_rejects(data: st.DataObject) -> None:
    from reference.plan import _validator, schema_surely_valid

    catalog = data.draw(catalogs())
    raw = data.draw(
        st.one_of(
            plans(catalog).map(lambda p: p.to_json()),
            invalid_plans(catalog).map(lambda pair: pair[0]),
        )
    )
    raw = jsonio.loads(jsonio.dumps(raw))
    if schema_surely_valid(raw):
        assert _validator().is_valid(raw)
    if _validator().is_valid(raw) and isinstance(raw, dict):
        # the fast path is taken for every plan the reference makes (integer limits, plain values)
        output = raw.get("output", {})
        if not isinstance(output.get("limit", 0), float):
            assert schema_surely_valid(raw)
