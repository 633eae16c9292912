"""Plan strategies: valid plans for a catalog, and invalid ones with the clause they break."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from reference.catalog import Catalog, Tool
from reference.jsonio import MAX_SAFE_INTEGER, InexactNumber
from reference.plan import Call, Output, Plan, Value
from strategies._internal.errors import InvalidArgument
from strategies._internal.values import INEXACT_NUMBER_TEXTS, numbers, strings

MODES = ("single", "sequential", "parallel")


def values_for(kind: str, *, adversarial: bool = True) -> st.SearchStrategy[Value]:
    """Argument values of one declared type: ``string``, ``number`` or ``boolean``."""
    if kind == "string":
        return strings(adversarial=adversarial)
    if kind == "number":
        return numbers(adversarial=adversarial)
    if kind == "boolean":
        return st.booleans()
    raise InvalidArgument(f"Cannot draw values for kind={kind!r}: not string, number or boolean")


@st.composite
def calls(draw: st.DrawFn, tool: Tool, *, adversarial: bool = True) -> Call:
    """One call of ``tool``: every required argument, a subset of the optional ones."""
    args = []
    for name, kind in tool.arguments:
        if name in tool.required or draw(st.booleans()):
            args.append((name, draw(values_for(kind, adversarial=adversarial))))
    return Call(tool=tool.name, args=tuple(args))


def plans(
    catalog: Catalog,
    *,
    modes: tuple[str, ...] = MODES,
    output_kinds: tuple[str, ...] = ("all", "last"),
    adversarial: bool = True,
) -> st.SearchStrategy[Plan]:
    """Valid plans for ``catalog`` (the ``PL-*`` clauses hold): 1 call in ``single`` mode, 2-3 (tools may
    repeat) in ``sequential`` or ``parallel``; a single call of an array-returning tool may take
    ``fields`` and ``limit``. Shrinks towards a single call of the first tool with output ``all``."""
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise InvalidArgument(f"Cannot have modes={modes!r}: each must be one of {MODES}")

    return _plans(catalog, modes=modes, output_kinds=output_kinds, adversarial=adversarial)


@st.composite
def _plans(
    draw: st.DrawFn, catalog: Catalog, *, modes: tuple[str, ...], output_kinds: tuple[str, ...], adversarial: bool
) -> Plan:
    mode = draw(st.sampled_from(modes))
    n = 1 if mode == "single" else draw(st.integers(2, 3))
    chosen = [draw(st.sampled_from(catalog.tools)) for _ in range(n)]
    plan_calls = tuple(draw(calls(t, adversarial=adversarial)) for t in chosen)
    kind = draw(st.sampled_from(output_kinds))
    fields = limit = None
    tool = chosen[0]
    if mode == "single" and tool.returns.kind == "array":
        props = tool.returns.properties or ()
        if props and draw(st.booleans()):
            fields = tuple(draw(st.lists(st.sampled_from(props), min_size=1, max_size=3, unique=True)))
        if draw(st.booleans()):
            limit = draw(_LIMITS)
    return Plan(mode=mode, calls=plan_calls, output=Output(kind=kind, fields=fields, limit=limit))


_LIMITS = st.integers(0, 100) | st.sampled_from((0, 1, 2, 3))
#: numbers that are not exact JavaScript numbers, as a plan's JSON carries them
_INEXACT_TEXTS = tuple(map(InexactNumber, INEXACT_NUMBER_TEXTS))
_UNSAFE_INTEGERS = (MAX_SAFE_INTEGER + 1, -(MAX_SAFE_INTEGER + 1), 2**63)


# --- invalid plans ----------------------------------------------------------------------------------


@st.composite
def invalid_plans(draw: st.DrawFn, catalog: Catalog, *, clause: str | None = None) -> tuple[Any, str]:
    """``(raw_plan, clause)``: a plan as JSON that breaks the named ``PL-*`` clause for ``catalog``.

    Built by breaking one thing in a valid plan; a number that is not exact is an
    :class:`~reference.jsonio.InexactNumber`, which ``reference.jsonio.dumps`` writes as its literal
    text. Shrinks towards the first applicable mutation.
    """
    from strategies._internal.instructions import DrawChooser

    return break_plan(DrawChooser(draw), draw(plans(catalog)), catalog, clause=clause)


def break_plan(ch: Any, plan: Plan, catalog: Catalog, *, clause: str | None = None) -> tuple[Any, str]:
    """``(raw_plan, clause)``: ``plan`` with one thing broken, chosen by ``ch`` (a ``DrawChooser``, or a
    campaign's :class:`~strategies._internal.sampling.Sampler`)."""
    raw = plan.to_json()
    options = [m for m in _applicable(plan, catalog) if clause is None or m[0] == clause]
    if not options:
        raise InvalidArgument(f"Cannot break clause={clause!r} for this catalog")
    broken, how = ch.choice(options)
    call = raw["calls"][0]
    tool = catalog.tool(call["tool"])
    assert tool is not None
    if how == "extra-key":
        raw[ch.choice(("id", "Mode", "notes"))] = "x"
    elif how == "missing-key":
        del raw[ch.choice(("mode", "calls", "output"))]
    elif how == "bad-mode":
        raw["mode"] = ch.choice(("batch", "Single", "", None, 1))
    elif how == "bad-output-kind":
        raw["output"]["kind"] = ch.choice(("first", "none", "All", None))
    elif how == "call-extra-key":
        call["id"] = 1
    elif how == "nested-arg":
        call["args"][ch.choice(tool.arguments)[0] if tool.arguments else "x"] = ch.choice(({}, [], None, {"a": 1}, ["a"]))
    elif how == "bad-limit":
        raw["output"]["limit"] = ch.choice((101, -1, 2.5, "5", True, 1000))
    elif how == "bad-fields":
        raw["output"]["fields"] = ch.choice(([], ["a", "b", "c", "d"], ["a", "a"], "a", [1]))
    elif how == "no-calls":
        raw["calls"] = []
    elif how == "four-calls":
        raw["mode"] = ch.choice(("sequential", "parallel"))
        raw["calls"] = (raw["calls"] * 4)[:4]
        raw["output"] = {"kind": raw["output"]["kind"]}
    elif how == "not-object":
        raw = ch.choice(([], "plan", None, 1))
    elif how == "single-with-two":
        raw["mode"] = "single"
        raw["calls"] = [call, call]
        raw["output"] = {"kind": raw["output"]["kind"]}
    elif how == "many-with-one":
        raw["mode"] = ch.choice(("sequential", "parallel"))
        raw["calls"] = [call]
        raw["output"] = {"kind": raw["output"]["kind"]}
    elif how == "unknown-tool":
        name = "unknown_tool"
        while catalog.tool(name) is not None:
            name += "_"
        call["tool"] = name
    elif how == "undeclared-arg":
        name = "undeclared"
        while tool.argument_type(name) is not None:
            name += "_"
        call["args"][name] = "x"
    elif how == "missing-required":
        del call["args"][ch.choice(tool.required)]
    elif how == "wrong-type":
        name, kind = ch.choice(tool.arguments)
        call["args"][name] = {"string": 5, "number": "5", "boolean": 1}[kind]
    elif how == "inexact-number":
        name = ch.choice([a for a, k in tool.arguments if k == "number"])
        # half JSON texts no double holds exactly, half integers past the safe range
        call["args"][name] = ch.choice(_UNSAFE_INTEGERS) if ch.boolean() else ch.choice(_INEXACT_TEXTS)
    elif how == "fields-on-non-array":
        raw["output"]["fields"] = ["id"]
    elif how == "shape-in-many":
        raw["output"]["limit"] = 1
    elif how == "undeclared-field":
        name = "undeclared"
        while name in (tool.returns.properties or ()):
            name += "_"
        raw["output"]["fields"] = [name]
    return raw, broken


def _applicable(plan: Plan, catalog: Catalog) -> list[tuple[str, str]]:
    tool = catalog.tool(plan.calls[0].tool)
    assert tool is not None
    out = [
        ("PL-SCHEMA", "extra-key"),
        ("PL-SCHEMA", "missing-key"),
        ("PL-SCHEMA", "bad-mode"),
        ("PL-SCHEMA", "bad-output-kind"),
        ("PL-SCHEMA", "call-extra-key"),
        ("PL-SCHEMA", "nested-arg"),
        ("PL-SCHEMA", "bad-limit"),
        ("PL-SCHEMA", "bad-fields"),
        ("PL-SCHEMA", "no-calls"),
        ("PL-SCHEMA", "four-calls"),  # an off-by-one in the call limit is common: drawn thrice as often
        ("PL-SCHEMA", "four-calls"),
        ("PL-SCHEMA", "four-calls"),
        ("PL-SCHEMA", "not-object"),
        ("PL-TOOL", "unknown-tool"),
        # argument checks (declared, required, typed, exact) are where validators slip most: each of
        # their mutations is drawn twice as often, so even a quick run meets each several times
        ("PL-ARGS", "undeclared-arg"),
        ("PL-ARGS", "undeclared-arg"),
    ]
    if plan.mode == "single":
        out.append(("PL-MODE", "single-with-two"))
        if tool.returns.kind != "array":
            out.append(("PL-SHAPE", "fields-on-non-array"))
        elif tool.returns.properties is not None:
            out.append(("PL-SHAPE", "undeclared-field"))
    else:
        out.append(("PL-MODE", "many-with-one"))
        out.append(("PL-SHAPE", "shape-in-many"))
    if tool.required:
        out += [("PL-ARGS", "missing-required")] * 2
    if tool.arguments:
        out += [("PL-ARGS", "wrong-type")] * 2
    if any(k == "number" for _, k in tool.arguments):
        out += [("PL-ARGS", "inexact-number")] * 2
    return out
