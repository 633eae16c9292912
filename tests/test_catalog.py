from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import jsonio
from reference.catalog import Catalog, validate_catalog
from reference.violations import InvalidRecord
from strategies import catalogs, invalid_catalogs

IN_CLAUSES = ("IN-COUNT", "IN-KEYS", "IN-NAME", "IN-UNIQUE", "IN-ARGS", "IN-REQUIRED", "IN-RETURNS")


@given(catalogs())
def test_generated_catalogs_are_valid_and_round_trip(catalog: Catalog) -> None:
    raw = jsonio.loads(jsonio.dumps(catalog.to_json()))
    assert validate_catalog(raw) == []
    assert Catalog.from_json(raw) == catalog


@given(invalid_catalogs())
def test_invalid_catalogs_break_the_clause_they_name(case: tuple[object, str]) -> None:
    raw, clause = case
    found = [v.clause for v in validate_catalog(jsonio.loads(jsonio.dumps(raw)))]
    assert clause in found
    assert len(found) == len(set(found)), "one violation per broken clause"


@pytest.mark.parametrize("clause", IN_CLAUSES)
@settings(max_examples=20)
@given(data=st.data())
def test_every_catalog_clause_can_be_broken(clause: str, data: st.DataObject) -> None:
    raw, broken = data.draw(invalid_catalogs(clause=clause))
    assert broken == clause
    assert clause in [v.clause for v in validate_catalog(raw)]


def test_unknown_keys_are_rejected() -> None:
    raw = [{"name": "a", "arguments": {}, "required": [], "returns": {"kind": "text"}, "description": "x"}]
    with pytest.raises(InvalidRecord) as err:
        Catalog.from_json(raw)
    assert [v.clause for v in err.value.violations] == ["IN-KEYS"]
    assert "description" in err.value.diagnostic()
