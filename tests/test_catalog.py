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


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["text", "object", "array", "string", "a", "b", "if", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "arguments", "required", "returns", "kind", "properties", "a", "b"]), inner, max_size=5
    ),
    max_leaves=20,
)


def _mutations(raw: object) -> st.SearchStrategy[object]:
    """``raw`` with one value somewhere inside it replaced by arbitrary JSON, or one key removed."""
    paths: list[tuple[object, ...]] = []

    def walk(value: object, path: tuple[object, ...]) -> None:
        paths.append(path)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, (*path, i))

    walk(raw, ())

    def apply(path: tuple[object, ...], new: object, drop: bool) -> object:
        root = jsonio.loads(jsonio.dumps(raw))
        if not path:
            return new
        parent = root
        for step in path[:-1]:
            parent = parent[step]  # type: ignore[index]
        if drop and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = new  # type: ignore[index]
        return root

    return st.builds(apply, st.sampled_from(paths), _json, st.booleans())


@settings(max_examples=300)
@given(data=st.data())
def test_the_fast_catalog_path_never_accepts_what_the_validator_rejects(data: st.DataObject) -> None:
    """``Catalog.from_json`` answers plainly valid catalogs in one tight pass; whatever it accepts that way
    the full validator accepts too, and builds into the same record."""
    from reference.catalog import _surely_valid

    valid = jsonio.loads(jsonio.dumps(data.draw(catalogs()).to_json()))
    fast = _surely_valid(valid)
    assert fast is not None and fast == Catalog.from_json(valid)  # the common case is fast
    raw = data.draw(st.one_of(_mutations(valid), invalid_catalogs().map(lambda case: case[0]), _json))
    raw = jsonio.loads(jsonio.dumps(raw))
    if _surely_valid(raw) is not None:
        assert validate_catalog(raw) == []
        assert _surely_valid(raw) == Catalog.from_json(raw)
