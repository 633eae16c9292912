"""Plan strategies: valid plans for a catalog, and invalid ones with the clause they break.

The generators are functions of a chooser (``build_call``, ``build_plan``); the ways to break a plan are
registered mutations (``PLAN_MUTATIONS``).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from reference.catalog import Catalog, Tool
from reference.jsonio import MAX_SAFE_INTEGER, InexactNumber
from reference.plan import Call, Output, Plan, Value
from strategies._internal.choosers import Chooser, DrawChooser
from strategies._internal.errors import InvalidArgument
from strategies._internal.mutations import Mutations
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


def build_value(ch: Chooser, kind: str, *, adversarial: bool = True) -> Value:
    if kind == "string":
        return ch.value_string(adversarial=adversarial)
    if kind == "number":
        return ch.value_number(adversarial=adversarial)
    return ch.boolean()


def build_call(ch: Chooser, tool: Tool, *, adversarial: bool = True) -> Call:
    """One call of ``tool``: every required argument, a subset of the optional ones."""
    args = tuple((name, build_value(ch, kind, adversarial=adversarial)) for name, kind in tool.arguments
                 if name in tool.required or ch.boolean())
    return Call(tool=tool.name, args=args)


def build_plan(ch: Chooser, catalog: Catalog, *, modes: tuple[str, ...] = MODES,
               output_kinds: tuple[str, ...] = ("all", "last"), adversarial: bool = True) -> Plan:
    """A valid plan for ``catalog``: 1 call in ``single`` mode, 2-3 otherwise; fields and a limit on a
    single array call."""
    mode = ch.choice(modes)
    n = 1 if mode == "single" else ch.integer(2, 3)
    chosen = [ch.choice(catalog.tools) for _ in range(n)]
    plan_calls = tuple(build_call(ch, t, adversarial=adversarial) for t in chosen)
    kind = ch.choice(output_kinds)
    fields = limit = None
    tool = chosen[0]
    if mode == "single" and tool.returns.kind == "array":
        props = tool.returns.properties or ()
        if props and ch.boolean():
            fields = tuple(ch.subset(props, 1, 3))
        if ch.boolean():
            limit = ch.integer(0, 100) if ch.boolean() else ch.choice((0, 1, 2, 3))
    return Plan(mode=mode, calls=plan_calls, output=Output(kind=kind, fields=fields, limit=limit))


@st.composite
def calls(draw: st.DrawFn, tool: Tool, *, adversarial: bool = True) -> Call:
    """One call of ``tool``: every required argument, a subset of the optional ones."""
    return build_call(DrawChooser(draw), tool, adversarial=adversarial)


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
    return build_plan(DrawChooser(draw), catalog, modes=modes, output_kinds=output_kinds, adversarial=adversarial)


#: numbers that are not exact JavaScript numbers, as a plan's JSON carries them
_INEXACT_TEXTS = tuple(map(InexactNumber, INEXACT_NUMBER_TEXTS))
_UNSAFE_INTEGERS = (MAX_SAFE_INTEGER + 1, -(MAX_SAFE_INTEGER + 1), 2**63)


# --- invalid plans ----------------------------------------------------------------------------------

#: every way to break one clause of a valid plan; each takes (chooser, raw plan, plan, catalog, the first
#: call's tool) and returns the broken raw plan. Registration order is the order a chooser shrinks in.
PLAN_MUTATIONS = Mutations("plans")
mutation = PLAN_MUTATIONS.register


def _single(plan: Plan, catalog: Catalog, tool: Tool) -> bool:
    return plan.mode == "single"


@mutation("PL-SCHEMA")
def extra_key(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw[ch.choice(("id", "Mode", "notes"))] = "x"
    return raw


@mutation("PL-SCHEMA")
def missing_key(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    del raw[ch.choice(("mode", "calls", "output"))]
    return raw


@mutation("PL-SCHEMA")
def bad_mode(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["mode"] = ch.choice(("batch", "Single", "", None, 1))
    return raw


@mutation("PL-SCHEMA")
def bad_output_kind(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["output"]["kind"] = ch.choice(("first", "none", "All", None))
    return raw


@mutation("PL-SCHEMA")
def call_extra_key(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["calls"][0]["id"] = 1
    return raw


@mutation("PL-SCHEMA")
def nested_arg(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    name = ch.choice(tool.arguments)[0] if tool.arguments else "x"
    raw["calls"][0]["args"][name] = ch.choice(({}, [], None, {"a": 1}, ["a"]))
    return raw


@mutation("PL-SCHEMA")
def bad_limit(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["output"]["limit"] = ch.choice((101, -1, 2.5, "5", True, 1000))
    return raw


@mutation("PL-SCHEMA")
def bad_fields(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["output"]["fields"] = ch.choice(([], ["a", "b", "c", "d"], ["a", "a"], "a", [1]))
    return raw


@mutation("PL-SCHEMA")
def no_calls(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["calls"] = []
    return raw


@mutation("PL-SCHEMA", weight=3)  # an off-by-one in the call limit is common: drawn thrice as often
def four_calls(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["mode"] = ch.choice(("sequential", "parallel"))
    raw["calls"] = (raw["calls"] * 4)[:4]
    raw["output"] = {"kind": raw["output"]["kind"]}
    return raw


@mutation("PL-SCHEMA")
def not_object(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    return ch.choice(([], "plan", None, 1))


@mutation("PL-TOOL")
def unknown_tool(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    name = "unknown_tool"
    while catalog.tool(name) is not None:
        name += "_"
    raw["calls"][0]["tool"] = name
    return raw


# argument checks (declared, required, typed, exact) are where validators slip most: each of their
# mutations is drawn twice as often, so even a quick run meets each several times
@mutation("PL-ARGS", weight=2)
def undeclared_arg(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    name = "undeclared"
    while tool.argument_type(name) is not None:
        name += "_"
    raw["calls"][0]["args"][name] = "x"
    return raw


@mutation("PL-MODE", applies=_single)
def single_with_two(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    call = raw["calls"][0]
    raw["mode"] = "single"
    raw["calls"] = [call, call]
    raw["output"] = {"kind": raw["output"]["kind"]}
    return raw


@mutation("PL-SHAPE", applies=lambda plan, catalog, tool: _single(plan, catalog, tool) and tool.returns.kind != "array")
def fields_on_non_array(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["output"]["fields"] = ["id"]
    return raw


@mutation("PL-SHAPE", applies=lambda plan, catalog, tool: _single(plan, catalog, tool) and tool.returns.kind == "array"
          and tool.returns.properties is not None)
def undeclared_field(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    name = "undeclared"
    while name in (tool.returns.properties or ()):
        name += "_"
    raw["output"]["fields"] = [name]
    return raw


@mutation("PL-MODE", applies=lambda plan, catalog, tool: not _single(plan, catalog, tool))
def many_with_one(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["mode"] = ch.choice(("sequential", "parallel"))
    raw["calls"] = [raw["calls"][0]]
    raw["output"] = {"kind": raw["output"]["kind"]}
    return raw


@mutation("PL-SHAPE", applies=lambda plan, catalog, tool: not _single(plan, catalog, tool))
def shape_in_many(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["output"]["limit"] = 1
    return raw


@mutation("PL-ARGS", weight=2, applies=lambda plan, catalog, tool: bool(tool.required))
def missing_required(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    del raw["calls"][0]["args"][ch.choice(tool.required)]
    return raw


@mutation("PL-ARGS", weight=2, applies=lambda plan, catalog, tool: bool(tool.arguments))
def wrong_type(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    name, kind = ch.choice(tool.arguments)
    raw["calls"][0]["args"][name] = {"string": 5, "number": "5", "boolean": 1}[kind]
    return raw


@mutation("PL-ARGS", weight=2, applies=lambda plan, catalog, tool: any(k == "number" for _, k in tool.arguments))
def inexact_number(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    name = ch.choice([a for a, k in tool.arguments if k == "number"])
    # half JSON texts no double holds exactly, half integers past the safe range
    raw["calls"][0]["args"][name] = ch.choice(_UNSAFE_INTEGERS) if ch.boolean() else ch.choice(_INEXACT_TEXTS)
    return raw


# what coverage of a certification of the reference showed no mutation above reached (make coverage-kit)
@mutation("PL-SCHEMA")
def args_not_object(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["calls"][0]["args"] = ch.choice(([], "args", None, 1))
    return raw


@mutation("PL-SCHEMA")
def five_args(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["calls"][0]["args"] = {f"a{k}": "x" for k in range(5)}
    return raw


@mutation("PL-SCHEMA")
def tool_not_string(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["calls"][0]["tool"] = ch.choice((None, 1, [plan.calls[0].tool], {"name": plan.calls[0].tool}))
    return raw


@mutation("PL-SCHEMA")
def output_extra_key(ch: Chooser, raw: Any, plan: Plan, catalog: Catalog, tool: Tool) -> Any:
    raw["output"][ch.choice(("sort", "Kind", "offset"))] = ch.choice(("id", 1, True))
    return raw


@st.composite
def invalid_plans(draw: st.DrawFn, catalog: Catalog, *, clause: str | None = None) -> tuple[Any, str]:
    """``(raw_plan, clause)``: a plan as JSON that breaks the named ``PL-*`` clause for ``catalog``.

    Built by breaking one thing in a valid plan; a number that is not exact is an
    :class:`~reference.jsonio.InexactNumber`, which ``reference.jsonio.dumps`` writes as its literal
    text. Shrinks towards the first applicable mutation.
    """
    ch = DrawChooser(draw)
    return break_plan(ch, build_plan(ch, catalog), catalog, clause=clause)


def break_plan(ch: Chooser, plan: Plan, catalog: Catalog, *, clause: str | None = None) -> tuple[Any, str]:
    """``(raw_plan, clause)``: ``plan`` with one thing broken, chosen by ``ch``."""
    tool = catalog.tool(plan.calls[0].tool)
    assert tool is not None
    try:
        chosen = PLAN_MUTATIONS.pick(ch, plan, catalog, tool, clause=clause)
    except InvalidArgument:
        raise InvalidArgument(f"Cannot break clause={clause!r} for this catalog") from None
    return chosen.apply(ch, plan.to_json(), plan, catalog, tool), chosen.clause
