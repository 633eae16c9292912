"""Streamed tool calls: a valid call's fragments, split as servers send them, and the ways to break them.

A :class:`FragmentCase` is one answer as a collector receives it: the catalog, the fragments in order
(body text as strings, function-call deltas as ``{"index": 0, "id"?, "name"?, "arguments"?}``), the
output limit, and what the collector must make of it: the call (``{"tool": ..., "args": ...}``), the
body text, or the rule it breaks (``breaks``: a code of ``reference.transports.CODES``).

Valid streams are split at arbitrary UTF-16 code-unit boundaries: inside ``\\uXXXX`` escapes, between the
two halves of a surrogate pair, into empty fragments, one code unit at a time, or all at once; the id
and name come first and the arguments after, as real servers send them, sometimes with the name itself
split. Shrinking goes towards fewer cuts, then shorter values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from reference import jsonio
from reference.catalog import Catalog
from reference.transports import utf16_length
from strategies._internal.catalogs import catalogs
from strategies._internal.plans import calls

#: the rules a fragment stream can break, each with the mutation that breaks it
BREAKS = ("fragment_invalid", "multiple_calls", "id_conflict", "mixed_body", "output_limit", "unknown_tool",
          "arguments_invalid", "empty")

BAD_FRAGMENTS: tuple[Any, ...] = (
    [], [{"index": 0}], 7, None, True, {"index": "0"}, {"index": True}, {"index": 0.5}, {"name": "x"},
    {"index": 0, "id": ""}, {"index": 0, "id": 5}, {"index": 0, "name": 5}, {"index": 0, "arguments": {}},
    {"index": 0, "arguments": ["{}"]},
)


@dataclass(frozen=True, slots=True, kw_only=True)
class FragmentCase:
    tools: list[dict[str, Any]]
    fragments: tuple[Any, ...]
    max_output_chars: int | None = None  # None: Infinity
    expect: dict[str, Any] = field(default_factory=dict)  # {"call": ...} | {"text": ...} | {"error": code}
    output_chars: int | None = None  # the count after the last fragment, where the stream is valid
    breaks: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"tools": self.tools, "fragments": list(self.fragments), "maxOutputChars": self.max_output_chars,
                "expect": self.expect, **({"breaks": self.breaks} if self.breaks else {})}


def _units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[k : k + 2], "little") for k in range(0, len(data), 2)]


def _text(units: list[int]) -> str:
    return b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")


def _pieces(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at code-unit boundaries: all at once, one unit at a time, or at drawn points (empty
    pieces included, halves of a surrogate pair apart)."""
    units = _units(text)
    how = draw(st.sampled_from(("cuts", "cuts", "cuts", "whole", "each")))
    if how == "whole" or not units:
        return [text]
    if how == "each":
        return [_text([u]) for u in units]
    cuts = sorted(draw(st.lists(st.integers(0, len(units)), max_size=8)))
    bounds = [0, *cuts, len(units)]
    return [_text(units[a:b]) for a, b in zip(bounds, bounds[1:])]


def _arguments_text(draw: st.DrawFn, args: dict[str, Any]) -> str:
    """The arguments as a server writes them: every non-ASCII code unit escaped (``\\uXXXX``), or raw, or
    with spaces after separators."""
    text = jsonio.dumps(args)
    style = draw(st.sampled_from(("ascii", "raw", "spaced")))
    if style == "ascii":
        return text
    value = json.loads(text)
    if style == "raw":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=True, separators=(", ", ": "))


@st.composite
def fragment_streams(draw: st.DrawFn, *, catalog: Catalog | None = None, text_only: bool | None = None) -> FragmentCase:
    """A valid answer's fragments and what a collector must make of them (see the module docstring)."""
    catalog = catalog if catalog is not None else draw(catalogs(min_tools=1))
    tools = catalog.to_json()
    if text_only if text_only is not None else draw(st.integers(0, 9)) == 0:
        text = draw(st.text(min_size=1, max_size=40).filter(bool))
        pieces = _pieces(draw, text)
        return FragmentCase(tools=tools, fragments=tuple(pieces), expect={"text": text},
                            output_chars=utf16_length(text))
    tool = draw(st.sampled_from(catalog.tools))
    call = draw(calls(tool))
    args = dict(call.args)
    arguments = _arguments_text(draw, args)
    call_id = draw(st.one_of(st.none(), st.from_regex(r"call_[A-Za-z0-9]{4,12}", fullmatch=True)))
    names = _pieces(draw, tool.name) if draw(st.booleans()) else [tool.name]
    fragments: list[Any] = []
    first: dict[str, Any] = {"index": 0, "name": names[0]}
    if call_id is not None:
        first["id"] = call_id
    fragments.append(first)
    for part in names[1:]:
        fragments.append({"index": 0, "name": part})
    for part in _pieces(draw, arguments):
        delta: dict[str, Any] = {"index": 0, "arguments": part}
        if call_id is not None and draw(st.integers(0, 4)) == 0:
            delta["id"] = call_id  # some servers repeat the id
        fragments.append(delta)
    for _ in range(draw(st.integers(0, 2))):  # empty fragments anywhere
        empty = draw(st.sampled_from(("", {"index": 0}, {"index": 0, "arguments": ""}, {"index": 0, "name": ""})))
        fragments.insert(draw(st.integers(0, len(fragments))), empty)
    expected = {"call": {"tool": tool.name, "args": json.loads(jsonio.dumps(args))}}
    return FragmentCase(tools=tools, fragments=tuple(fragments), expect=expected,
                        output_chars=utf16_length(tool.name) + utf16_length(arguments))


@st.composite
def broken_fragment_streams(draw: st.DrawFn, *, breaks: str | None = None) -> FragmentCase:
    """A stream that breaks one rule, labelled with it (``breaks``; drawn from :data:`BREAKS` if None)."""
    rule = breaks if breaks is not None else draw(st.sampled_from(BREAKS))
    base = draw(fragment_streams(text_only=False))
    frags = list(base.fragments)
    names = {t["name"] for t in base.tools}
    at = draw(st.integers(0, len(frags)))
    limit = None
    if rule == "fragment_invalid":
        frags.insert(at, draw(st.sampled_from(BAD_FRAGMENTS)))
    elif rule == "multiple_calls":
        frags.insert(at, {"index": draw(st.integers(1, 3)), "name": next(iter(names)), "arguments": "{}"})
    elif rule == "id_conflict":
        if not any(isinstance(f, dict) and "id" in f for f in frags):
            k = next(k for k, f in enumerate(frags) if isinstance(f, dict) and "name" in f and f["name"])
            frags[k] = {**frags[k], "id": "call_a"}
        first_id = next(f["id"] for f in frags if isinstance(f, dict) and "id" in f)
        later = draw(st.integers(1, len(frags)))
        frags.insert(later, {"index": 0, "id": first_id + "x"})
    elif rule == "mixed_body":
        frags.insert(at, draw(st.text(min_size=1, max_size=10).filter(bool)))
    elif rule == "output_limit":
        total = base.output_chars or 0
        limit = draw(st.integers(0, max(0, total - 1)))
    elif rule == "unknown_tool":
        name = base.expect["call"]["tool"]
        other = draw(st.sampled_from(("", name + "_x", "x" + name)))
        other = other if other not in names else other + "_y"
        frags = [{**f, "name": ""} if isinstance(f, dict) and "name" in f else f for f in frags]
        frags[next(k for k, f in enumerate(frags) if isinstance(f, dict) and "name" in f)]["name"] = other
    elif rule == "arguments_invalid":
        args = base.expect["call"]["args"]
        how = draw(st.sampled_from(("cut", "extra", "type", "not-object", "trailing")))
        text = jsonio.dumps(args)
        if how == "cut":
            units = _units(text)
            text = _text(units[: draw(st.integers(0, len(units) - 1))])
        elif how == "extra":
            text = jsonio.dumps({**args, "zz_not_declared": 1})
        elif how == "type":
            tool = next(t for t in base.tools if t["name"] == base.expect["call"]["tool"])
            if not tool["arguments"]:
                text = "[]"
            else:
                arg, kind = next(iter(tool["arguments"].items()))
                text = jsonio.dumps({**args, arg: True if kind != "boolean" else "yes"})
        elif how == "not-object":
            text = draw(st.sampled_from(("[]", "1", '"x"', "null")))
        else:
            text = text + "}"
        frags = [f for f in frags if not (isinstance(f, dict) and "arguments" in f)]
        frags += [{"index": 0, "arguments": p} for p in _pieces(draw, text)]
    elif rule == "empty":
        frags = [""] * draw(st.integers(0, 3))
    return FragmentCase(tools=base.tools, fragments=tuple(frags), max_output_chars=limit, expect={"error": rule},
                        breaks=rule)
