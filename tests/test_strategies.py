from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies
from reference.catalog import Catalog
from strategies import InvalidArgument, catalogs, plans
from strategies._internal.catalogs import invalid_catalogs


def test_all_matches_what_is_public() -> None:
    # (names that are not identifiers are pytest's, when it rewrote the package's asserts)
    public = {name for name in dir(strategies)
              if name.isidentifier() and not name.startswith("_") and name not in {"annotations"}}
    assert set(strategies.__all__) == public


def test_bad_arguments_name_themselves() -> None:
    with pytest.raises(InvalidArgument, match="min_tools=3"):
        catalogs(min_tools=3, max_tools=2)
    catalog = Catalog.from_json([{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}])
    with pytest.raises(InvalidArgument, match="modes"):
        plans(catalog, modes=("batch",))


@given(st.data())
def test_breaking_a_clause_that_is_not_a_catalog_clause_is_refused(data: st.DataObject) -> None:
    with pytest.raises(InvalidArgument, match="clause='PL-MODE'"):
        data.draw(invalid_catalogs(clause="PL-MODE"))
