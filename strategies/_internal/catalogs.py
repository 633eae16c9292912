"""Catalog strategies: valid catalogs as records, invalid ones as raw JSON with the clause they break."""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import strategies as st

from reference.catalog import ARGUMENT_TYPES, MAX_ARGUMENTS, MAX_TOOLS, Catalog, Returns, Tool
from reference.names import RESERVED_WORDS
from strategies._internal.errors import InvalidArgument
from strategies._internal.values import identifier_names, tool_names


_KINDS = st.sampled_from(("text", "object", "array", "array"))
_TYPES = st.sampled_from(ARGUMENT_TYPES)


@cache
def _names(adversarial: bool, max_size: int) -> st.SearchStrategy[list[str]]:
    return st.lists(identifier_names(adversarial=adversarial), max_size=max_size, unique=True)


@cache
def _properties(adversarial: bool) -> st.SearchStrategy[list[str] | None]:
    return _names(adversarial, 4) | st.none()


def _returns(draw: st.DrawFn, *, adversarial: bool, kind: str | None) -> Returns:
    kind = kind or draw(_KINDS)
    if kind == "text":
        return Returns(kind=kind)
    props = draw(_properties(adversarial))
    return Returns(kind=kind, properties=None if props is None else tuple(props))


def _tool(draw: st.DrawFn, name: str, *, adversarial: bool, returns: str | None) -> Tool:
    arg_names = draw(_names(adversarial, MAX_ARGUMENTS))
    arguments = tuple((a, draw(_TYPES)) for a in arg_names)
    required = tuple(a for a in arg_names if draw(st.booleans()))
    return Tool(
        name=name,
        arguments=arguments,
        required=required,
        returns=_returns(draw, adversarial=adversarial, kind=returns),
    )


@st.composite
def tools(draw: st.DrawFn, *, adversarial: bool = True, returns: str | None = None) -> Tool:
    """One valid catalog entry; shrinks towards a tool with no arguments that returns text."""
    return _tool(draw, draw(tool_names(adversarial=adversarial)), adversarial=adversarial, returns=returns)


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


@cache
def _tool_name_lists(min_tools: int, max_tools: int, adversarial: bool) -> st.SearchStrategy[list[str]]:
    return st.lists(tool_names(adversarial=adversarial), min_size=min_tools, max_size=max_tools, unique=True)


@st.composite
def _catalogs(draw: st.DrawFn, *, min_tools: int, max_tools: int, adversarial: bool) -> Catalog:
    names = draw(_tool_name_lists(min_tools, max_tools, adversarial))
    return Catalog(tools=tuple(_tool(draw, n, adversarial=adversarial, returns=None) for n in names))


# --- invalid catalogs -------------------------------------------------------------------------------

_NOT_IDENTIFIERS = ("", "1abc", "a-b", "a b", "a.b", "\u200cx", "x\ud800", "\\u0061", "a;b", "@x", "\u2028")


def _mutations(catalog: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Every way this module knows to break one clause of a valid raw catalog: (clause, mutator)."""
    return [
        ("IN-COUNT", "empty"),
        ("IN-COUNT", "nine"),
        ("IN-COUNT", "not-array"),
        ("IN-KEYS", "drop-key"),
        ("IN-KEYS", "extra-key"),
        ("IN-KEYS", "entry-not-object"),
        ("IN-NAME", "reserved-name"),
        ("IN-NAME", "not-identifier"),
        ("IN-NAME", "name-not-string"),
        ("IN-UNIQUE", "duplicate-name"),
        ("IN-ARGS", "five-arguments"),
        ("IN-ARGS", "nested-type"),
        ("IN-ARGS", "argument-not-identifier"),
        ("IN-ARGS", "arguments-not-object"),
        ("IN-REQUIRED", "undeclared-required"),
        ("IN-UNIQUE", "duplicate-required"),
        ("IN-REQUIRED", "required-not-array"),
        ("IN-RETURNS", "bad-kind"),
        ("IN-RETURNS", "text-with-properties"),
        ("IN-UNIQUE", "duplicate-property"),
        ("IN-RETURNS", "property-not-identifier"),
        ("IN-KEYS", "returns-extra-key"),
    ]


@st.composite
def invalid_catalogs(draw: st.DrawFn, *, clause: str | None = None) -> tuple[Any, str]:
    """``(raw_catalog, clause)``: a catalog as JSON that breaks exactly the named ``IN-*`` clause.

    Built by breaking one thing in a valid catalog; ``clause`` restricts which. Shrinks towards the
    first mutation on a one-tool catalog.
    """
    from strategies._internal.instructions import DrawChooser

    return break_catalog(DrawChooser(draw), draw(catalogs(max_tools=3)), clause=clause)


def break_catalog(ch: Any, catalog: Catalog, *, clause: str | None = None) -> tuple[Any, str]:
    """``(raw_catalog, clause)``: ``catalog`` as JSON with one thing broken, chosen by ``ch`` (a
    ``DrawChooser``, or a campaign's :class:`~strategies._internal.sampling.Sampler`)."""
    base = [t.to_json() for t in catalog.tools]
    options = [m for m in _mutations(base) if clause is None or m[0] == clause]
    if not options:
        raise InvalidArgument(f"Cannot break clause={clause!r}: not an IN-* catalog clause")
    broken_clause, how = ch.choice(options)
    i = ch.integer(0, len(base) - 1)
    entry = base[i]
    if how == "empty":
        return [], broken_clause
    if how == "nine":
        extra = [
            {"name": f"extra_tool{k}", "arguments": {}, "required": [], "returns": {"kind": "text"}}
            for k in range(9 - len(base))
        ]
        return base + extra, broken_clause
    if how == "not-array":
        return ch.choice([{}, "tools", None, 3]), broken_clause
    if how == "drop-key":
        del entry[ch.choice(("name", "arguments", "required", "returns"))]
    elif how == "extra-key":
        entry[ch.choice(("description", "Name", "type", "schema"))] = "x"
    elif how == "entry-not-object":
        base[i] = ch.choice(["list_users", 7, None, ["name"]])
    elif how == "reserved-name":
        entry["name"] = ch.choice(sorted(RESERVED_WORDS))
    elif how == "not-identifier":
        entry["name"] = ch.choice(_NOT_IDENTIFIERS)
    elif how == "name-not-string":
        entry["name"] = ch.choice([1, None, ["a"], {"a": 1}, True])
    elif how == "duplicate-name":
        if len(base) == 1:
            base.append(dict(entry))
        else:
            base[(i + 1) % len(base)]["name"] = entry["name"]
    elif how == "five-arguments":
        entry["arguments"] = {f"a{k}": "string" for k in range(5)}
        entry["required"] = []
    elif how == "nested-type":
        arg = ch.identifier()
        entry["arguments"] = {arg: ch.choice(["object", "array", "null", "integer", {"type": "string"}, "String"])}
        entry["required"] = []
    elif how == "argument-not-identifier":
        entry["arguments"] = {ch.choice(_NOT_IDENTIFIERS): "string"}
        entry["required"] = []
    elif how == "arguments-not-object":
        entry["arguments"] = ch.choice([["a"], "a", None, 1])
        entry["required"] = []
    elif how == "undeclared-required":
        missing = "undeclared"
        while missing in entry["arguments"]:
            missing += "_"
        entry["required"] = [*entry["required"], missing]
    elif how == "duplicate-required":
        if not entry["arguments"]:
            entry["arguments"] = {"a": "string"}
        first = next(iter(entry["arguments"]))
        entry["required"] = [first, first]
    elif how == "required-not-array":
        entry["required"] = ch.choice(["a", None, {"a": True}, 1])
    elif how == "bad-kind":
        entry["returns"] = {"kind": ch.choice(["list", "string", "Array", "", None])}
    elif how == "text-with-properties":
        entry["returns"] = {"kind": "text", "properties": ["id"]}
    elif how == "duplicate-property":
        entry["returns"] = {"kind": ch.choice(("object", "array")), "properties": ["id", "id"]}
    elif how == "property-not-identifier":
        entry["returns"] = {"kind": "array", "properties": [ch.choice(_NOT_IDENTIFIERS)]}
    elif how == "returns-extra-key":
        entry["returns"] = dict(entry["returns"], description="rows")
    return base, broken_clause
