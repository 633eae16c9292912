"""Catalog strategies: valid catalogs as records, invalid ones as raw JSON with the clause they break.

The generators are functions of a chooser (``build_tool``, ``build_catalog``; see
``strategies._internal.choosers``), which the Hypothesis strategies and a campaign's sampler both drive;
the ways to break a catalog are registered mutations (``CATALOG_MUTATIONS``).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from reference.catalog import ARGUMENT_TYPES, MAX_ARGUMENTS, MAX_TOOLS, Catalog, Returns, Tool
from reference.names import RESERVED_WORDS
from strategies._internal.choosers import Chooser, DrawChooser
from strategies._internal.errors import InvalidArgument
from strategies._internal.mutations import Mutations

RETURN_KINDS = ("text", "object", "array", "array")


def build_tool(ch: Chooser, name: str, *, adversarial: bool = True, returns: str | None = None) -> Tool:
    """A valid catalog entry named ``name``: up to 4 arguments, some required, and its returns."""
    arg_names = ch.unique_names(0, MAX_ARGUMENTS, adversarial=adversarial)
    arguments = tuple((a, ch.choice(ARGUMENT_TYPES)) for a in arg_names)
    required = tuple(a for a in arg_names if ch.boolean())
    kind = returns or ch.choice(RETURN_KINDS)
    props = None
    if kind != "text" and ch.boolean():
        props = tuple(ch.unique_names(0, 4, adversarial=adversarial))
    return Tool(name=name, arguments=arguments, required=required, returns=Returns(kind=kind, properties=props))


def build_catalog(ch: Chooser, *, min_tools: int = 1, max_tools: int = MAX_TOOLS, adversarial: bool = True) -> Catalog:
    """A valid catalog of ``min_tools``-``max_tools`` tools with unique names."""
    names = ch.unique_names(min_tools, max_tools, adversarial=adversarial, tool=True)
    return Catalog(tools=tuple(build_tool(ch, n, adversarial=adversarial) for n in names))


@st.composite
def tools(draw: st.DrawFn, *, adversarial: bool = True, returns: str | None = None) -> Tool:
    """One valid catalog entry; shrinks towards a tool with no arguments that returns text."""
    ch = DrawChooser(draw)
    return build_tool(ch, ch.tool_name(adversarial=adversarial), adversarial=adversarial, returns=returns)


def catalogs(
    *, min_tools: int = 1, max_tools: int = MAX_TOOLS, adversarial: bool = True
) -> st.SearchStrategy[Catalog]:
    """Valid catalogs of ``min_tools``-``max_tools`` tools with unique names (the ``IN-*`` clauses hold).

    With ``adversarial`` names include ``__proto__``, ``constructor``, ``$`` and non-ASCII identifiers.
    Shrinks towards one tool with no arguments that returns text.
    """
    if not 1 <= min_tools <= max_tools <= MAX_TOOLS:
        raise InvalidArgument(
            f"Cannot have min_tools={min_tools!r}, max_tools={max_tools!r}: need 1 <= min_tools <= max_tools <= {MAX_TOOLS}"
        )

    return _catalogs(min_tools=min_tools, max_tools=max_tools, adversarial=adversarial)


@st.composite
def _catalogs(draw: st.DrawFn, *, min_tools: int, max_tools: int, adversarial: bool) -> Catalog:
    return build_catalog(DrawChooser(draw), min_tools=min_tools, max_tools=max_tools, adversarial=adversarial)


# --- invalid catalogs -------------------------------------------------------------------------------

_NOT_IDENTIFIERS = ("", "1abc", "a-b", "a b", "a.b", "\u200cx", "x\ud800", "\\u0061", "a;b", "@x", "\u2028")

#: every way to break one clause of a valid raw catalog; each takes (chooser, raw catalog, index of the
#: entry to break) and returns the broken raw catalog
CATALOG_MUTATIONS = Mutations("catalogs")
mutation = CATALOG_MUTATIONS.register


@mutation("IN-COUNT")
def empty(ch: Chooser, base: list[Any], i: int) -> Any:
    return []


@mutation("IN-COUNT")
def nine(ch: Chooser, base: list[Any], i: int) -> Any:
    extra = [{"name": f"extra_tool{k}", "arguments": {}, "required": [], "returns": {"kind": "text"}}
             for k in range(9 - len(base))]
    return base + extra


@mutation("IN-COUNT")
def not_array(ch: Chooser, base: list[Any], i: int) -> Any:
    return ch.choice([{}, "tools", None, 3])


@mutation("IN-KEYS")
def drop_key(ch: Chooser, base: list[Any], i: int) -> Any:
    del base[i][ch.choice(("name", "arguments", "required", "returns"))]
    return base


@mutation("IN-KEYS")
def extra_key(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i][ch.choice(("description", "Name", "type", "schema"))] = "x"
    return base


@mutation("IN-KEYS")
def entry_not_object(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i] = ch.choice(["list_users", 7, None, ["name"]])
    return base


@mutation("IN-NAME")
def reserved_name(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["name"] = ch.choice(sorted(RESERVED_WORDS))
    return base


@mutation("IN-NAME")
def not_identifier(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["name"] = ch.choice(_NOT_IDENTIFIERS)
    return base


@mutation("IN-NAME")
def name_not_string(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["name"] = ch.choice([1, None, ["a"], {"a": 1}, True])
    return base


@mutation("IN-UNIQUE")
def duplicate_name(ch: Chooser, base: list[Any], i: int) -> Any:
    if len(base) == 1:
        base.append(dict(base[i]))
    else:
        base[(i + 1) % len(base)]["name"] = base[i]["name"]
    return base


@mutation("IN-ARGS")
def five_arguments(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["arguments"] = {f"a{k}": "string" for k in range(5)}
    base[i]["required"] = []
    return base


@mutation("IN-ARGS")
def nested_type(ch: Chooser, base: list[Any], i: int) -> Any:
    arg = ch.identifier()
    base[i]["arguments"] = {arg: ch.choice(["object", "array", "null", "integer", {"type": "string"}, "String"])}
    base[i]["required"] = []
    return base


@mutation("IN-ARGS")
def argument_not_identifier(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["arguments"] = {ch.choice(_NOT_IDENTIFIERS): "string"}
    base[i]["required"] = []
    return base


@mutation("IN-ARGS")
def arguments_not_object(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["arguments"] = ch.choice([["a"], "a", None, 1])
    base[i]["required"] = []
    return base


@mutation("IN-REQUIRED")
def undeclared_required(ch: Chooser, base: list[Any], i: int) -> Any:
    missing = "undeclared"
    while missing in base[i]["arguments"]:
        missing += "_"
    base[i]["required"] = [*base[i]["required"], missing]
    return base


@mutation("IN-UNIQUE")
def duplicate_required(ch: Chooser, base: list[Any], i: int) -> Any:
    entry = base[i]
    if not entry["arguments"]:
        entry["arguments"] = {"a": "string"}
    first = next(iter(entry["arguments"]))
    entry["required"] = [first, first]
    return base


@mutation("IN-REQUIRED")
def required_not_array(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["required"] = ch.choice(["a", None, {"a": True}, 1])
    return base


@mutation("IN-RETURNS")
def bad_kind(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["returns"] = {"kind": ch.choice(["list", "string", "Array", "", None])}
    return base


@mutation("IN-RETURNS")
def text_with_properties(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["returns"] = {"kind": "text", "properties": ["id"]}
    return base


@mutation("IN-UNIQUE")
def duplicate_property(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["returns"] = {"kind": ch.choice(("object", "array")), "properties": ["id", "id"]}
    return base


@mutation("IN-RETURNS")
def property_not_identifier(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["returns"] = {"kind": "array", "properties": [ch.choice(_NOT_IDENTIFIERS)]}
    return base


@mutation("IN-KEYS")
def returns_extra_key(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["returns"] = dict(base[i]["returns"], description="rows")
    return base


# what coverage of a certification of the reference showed no mutation above reached (make coverage-kit)
@mutation("IN-REQUIRED")
def required_not_string(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["required"] = [*base[i]["required"], ch.choice([1, None, ["a"], {"a": "b"}, True])]
    return base


@mutation("IN-RETURNS")
def returns_not_object(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["returns"] = ch.choice(["array", None, ["text"], 1])
    return base


@mutation("IN-RETURNS")
def properties_not_array(ch: Chooser, base: list[Any], i: int) -> Any:
    base[i]["returns"] = {"kind": ch.choice(("object", "array")), "properties": ch.choice(["id", None, {"id": 1}, 3])}
    return base


@st.composite
def invalid_catalogs(draw: st.DrawFn, *, clause: str | None = None) -> tuple[Any, str]:
    """``(raw_catalog, clause)``: a catalog as JSON that breaks exactly the named ``IN-*`` clause.

    Built by breaking one thing in a valid catalog; ``clause`` restricts which. Shrinks towards the
    first mutation on a one-tool catalog.
    """
    ch = DrawChooser(draw)
    return break_catalog(ch, build_catalog(ch, max_tools=3), clause=clause)


def break_catalog(ch: Chooser, catalog: Catalog, *, clause: str | None = None) -> tuple[Any, str]:
    """``(raw_catalog, clause)``: ``catalog`` as JSON with one thing broken, chosen by ``ch``."""
    base = [t.to_json() for t in catalog.tools]
    if clause is not None and clause not in CATALOG_MUTATIONS.clauses():
        raise InvalidArgument(f"Cannot break clause={clause!r}: not an IN-* catalog clause")
    chosen = CATALOG_MUTATIONS.pick(ch, clause=clause)
    i = ch.integer(0, len(base) - 1)
    return chosen.apply(ch, base, i), chosen.clause
