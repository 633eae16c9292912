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
from strategies._internal.catalogs import build_catalog
from strategies._internal.choosers import Chooser, DrawChooser
from strategies._internal.errors import InvalidArgument
from strategies._internal.plans import build_call

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


def _pieces(ch: Chooser, text: str) -> list[str]:
    """``text`` cut at code-unit boundaries: at drawn points (empty pieces included, halves of a surrogate
    pair apart), all at once, or one unit at a time."""
    units = _units(text)
    how = ch.choice(("cuts", "cuts", "cuts", "whole", "each"))
    if how == "whole" or not units:
        return [text]
    if how == "each":
        return [_text([u]) for u in units]
    cuts = sorted(ch.integer(0, len(units)) for _ in range(ch.integer(0, 8)))
    bounds = [0, *cuts, len(units)]
    return [_text(units[a:b]) for a, b in zip(bounds, bounds[1:])]


def _arguments_text(ch: Chooser, args: dict[str, Any]) -> str:
    """The arguments as a server writes them: every non-ASCII code unit escaped (``\\uXXXX``), or raw, or
    with spaces after separators."""
    text = jsonio.dumps(args)
    style = ch.choice(("ascii", "raw", "spaced"))
    if style == "ascii":
        return text
    value = json.loads(text)
    if style == "raw":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=True, separators=(", ", ": "))


_ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#: code points outside the BMP (two UTF-16 units each), so that cuts fall between the halves of a pair
ASTRAL = ("\U0001F600", "\U00010400", "\U0001D11E", "\U00020BB7")


def build_fragment_stream(ch: Chooser, *, catalog: Catalog | None = None, text_only: bool | None = None) -> FragmentCase:
    """A valid answer's fragments and what a collector must make of them (see the module docstring)."""
    catalog = catalog if catalog is not None else build_catalog(ch)
    tools = catalog.to_json()
    if text_only if text_only is not None else ch.integer(0, 9) == 0:
        text = (ch.string() or "x") + (ch.choice(ASTRAL) if ch.boolean() else "")
        return FragmentCase(tools=tools, fragments=tuple(_pieces(ch, text)), expect={"text": text},
                            output_chars=utf16_length(text))
    tool = ch.choice(catalog.tools)
    args = dict(build_call(ch, tool).args)
    strings = [name for name, value in args.items() if isinstance(value, str)]
    if strings and ch.chance(40):
        name = ch.choice(strings)
        args[name] = args[name] + ch.choice(ASTRAL)
    arguments = _arguments_text(ch, args)
    call_id = None if ch.boolean() else "call_" + "".join(ch.choice(_ID_CHARS) for _ in range(ch.integer(4, 12)))
    names = _pieces(ch, tool.name) if ch.boolean() else [tool.name]
    fragments: list[Any] = []
    first: dict[str, Any] = {"index": 0, "name": names[0]}
    if call_id is not None:
        first["id"] = call_id
    fragments.append(first)
    for part in names[1:]:
        fragments.append({"index": 0, "name": part})
    for part in _pieces(ch, arguments):
        delta: dict[str, Any] = {"index": 0, "arguments": part}
        if call_id is not None and ch.integer(0, 4) == 0:
            delta["id"] = call_id  # some servers repeat the id
        fragments.append(delta)
    for _ in range(ch.integer(0, 2)):  # empty fragments anywhere
        empty = ch.choice(("", {"index": 0}, {"index": 0, "arguments": ""}, {"index": 0, "name": ""}))
        fragments.insert(ch.integer(0, len(fragments)), empty)
    expected = {"call": {"tool": tool.name, "args": json.loads(jsonio.dumps(args))}}
    return FragmentCase(tools=tools, fragments=tuple(fragments), expect=expected,
                        output_chars=utf16_length(tool.name) + utf16_length(arguments))


def build_broken_stream(ch: Chooser, rule: str) -> FragmentCase:
    """A stream that breaks ``rule`` (one of :data:`BREAKS`), labelled with it."""
    base = build_fragment_stream(ch, text_only=False)
    frags = list(base.fragments)
    names = {t["name"] for t in base.tools}
    at = ch.integer(0, len(frags))
    limit = None
    if rule == "fragment_invalid":
        frags.insert(at, ch.choice(BAD_FRAGMENTS))
    elif rule == "multiple_calls":
        frags.insert(at, {"index": ch.integer(1, 3), "name": sorted(names)[0], "arguments": "{}"})
    elif rule == "id_conflict":
        if not any(isinstance(f, dict) and "id" in f for f in frags):
            k = next(k for k, f in enumerate(frags) if isinstance(f, dict) and "name" in f and f["name"])
            frags[k] = {**frags[k], "id": "call_a"}
        first_id = next(f["id"] for f in frags if isinstance(f, dict) and "id" in f)
        frags.insert(ch.integer(1, len(frags)), {"index": 0, "id": first_id + "x"})
    elif rule == "mixed_body":
        frags.insert(at, ch.string() or " ")
    elif rule == "output_limit":
        limit = ch.integer(0, max(0, (base.output_chars or 0) - 1))
    elif rule == "unknown_tool":
        name = base.expect["call"]["tool"]
        other = ch.choice(("", name + "_x", "x" + name))
        other = other if other not in names else other + "_y"
        frags = [{**f, "name": ""} if isinstance(f, dict) and "name" in f else f for f in frags]
        frags[next(k for k, f in enumerate(frags) if isinstance(f, dict) and "name" in f)]["name"] = other
    elif rule == "arguments_invalid":
        args = base.expect["call"]["args"]
        how = ch.choice(("cut", "extra", "type", "not-object", "trailing"))
        text = jsonio.dumps(args)
        if how == "cut":
            units = _units(text)
            text = _text(units[: ch.integer(0, len(units) - 1)])
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
            text = ch.choice(("[]", "1", '"x"', "null"))
        else:
            text = text + "}"
        frags = [f for f in frags if not (isinstance(f, dict) and "arguments" in f)]
        frags += [{"index": 0, "arguments": p} for p in _pieces(ch, text)]
    elif rule == "empty":
        frags = [""] * ch.integer(0, 3)
    return FragmentCase(tools=base.tools, fragments=tuple(frags), max_output_chars=limit, expect={"error": rule},
                        breaks=rule)


@st.composite
def fragment_streams(draw: st.DrawFn, *, catalog: Catalog | None = None, text_only: bool | None = None) -> FragmentCase:
    """A valid answer's fragments and what a collector must make of them (see the module docstring).
    Shrinks towards a one-tool catalog, a call written whole, no id and no empty fragments."""
    return build_fragment_stream(DrawChooser(draw), catalog=catalog, text_only=text_only)


def broken_fragment_streams(*, breaks: str | None = None) -> st.SearchStrategy[FragmentCase]:
    """A stream that breaks one rule, labelled with it (``breaks``: one of :data:`BREAKS`, drawn if None)."""
    if breaks is not None and breaks not in BREAKS:
        raise InvalidArgument(f"Cannot break {breaks!r}: not one of {', '.join(BREAKS)}")
    return _broken(breaks)


@st.composite
def _broken(draw: st.DrawFn, breaks: str | None) -> FragmentCase:
    ch = DrawChooser(draw)
    return build_broken_stream(ch, breaks if breaks is not None else ch.choice(BREAKS))
