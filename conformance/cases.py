"""Compile cases: a request, what the mocked tools do, and what the kit expects of the answer.

A case is data: ``to_json``/``from_json`` round-trip it, and its ``id`` is a hash of that JSON, so a
failure can be replayed later from its one-line form.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import strategies as st

from reference import jsonio
from reference.catalog import Catalog, Returns
from reference.names import RESERVED_WORDS
from reference.plan import Output, Plan
from strategies import Behaviour
from strategies._internal.behaviours import build_behaviours, build_rows
from strategies._internal.catalogs import break_catalog, build_catalog, build_tool
from strategies._internal.choosers import Chooser, DrawChooser, QuickChooser
from strategies._internal.plans import break_plan, build_call, build_plan

_TAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_OBJECT_PROTOTYPE_NAMES = frozenset(
    """__proto__ constructor toString toLocaleString valueOf hasOwnProperty isPrototypeOf
    propertyIsEnumerable __defineGetter__ __defineSetter__ __lookupGetter__ __lookupSetter__""".split()
)
SYNC_FAILURES = ("throw", "absent", "notfn")


def is_tame_text(text: str) -> bool:
    return bool(_TAME.match(text)) and text not in RESERVED_WORDS and text not in _OBJECT_PROTOTYPE_NAMES


def is_tame_plan(plan: Plan) -> bool:
    """SPEC.md "Tame and adversarial plans": nothing in it needs more than naive quoting."""
    for call in plan.calls:
        if not is_tame_text(call.tool):
            return False
        for name, value in call.args:
            if not is_tame_text(name):
                return False
            if isinstance(value, bool):
                continue
            if isinstance(value, str):
                if not is_tame_text(value):
                    return False
            elif not (float(value).is_integer() and abs(value) < 2**31):
                return False
    return all(is_tame_text(f) for f in plan.output.fields or ())


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileCase:
    """A compile request and, for a valid plan, one behaviour per call; ``breaks`` names the clause an
    invalid plan or catalog breaks (``None`` for a valid plan)."""

    tools: Any
    plan: Any
    behaviours: tuple[Behaviour, ...] = ()
    breaks: str | None = None

    def request(self) -> dict[str, Any]:
        return {"plan": self.plan, "tools": self.tools}

    def request_line(self) -> str:
        return jsonio.dumps(self.request())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.request()}
        if self.breaks is not None:
            out["breaks"] = self.breaks
        else:
            out["behaviours"] = [b.to_json() for b in self.behaviours]
        return out

    @classmethod
    def from_json(cls, raw: Any) -> CompileCase:
        if not isinstance(raw, dict) or not set(raw) <= {"request", "behaviours", "breaks"} or "request" not in raw:
            raise ValueError("a case is an object with request, and behaviours or breaks")
        request = raw["request"]
        if not isinstance(request, dict) or set(request) != {"plan", "tools"}:
            raise ValueError("a case's request is a compile request: exactly plan and tools")
        case = cls(
            tools=request["tools"],
            plan=request["plan"],
            behaviours=tuple(Behaviour.from_json(b) for b in raw.get("behaviours", ())),
            breaks=raw.get("breaks"),
        )
        if case.breaks is None:
            expected = len(case.valid[0].calls)
            if len(case.behaviours) != expected:
                raise ValueError(f"{len(case.behaviours)} behaviours for a plan of {expected} calls")
        return case

    @property
    def id(self) -> str:
        return hashlib.sha256(jsonio.dumps(self.to_json()).encode()).hexdigest()[:12]

    @property
    def valid(self) -> tuple[Plan, Catalog]:
        """The plan and catalog as records; only for a valid case."""
        catalog = Catalog.from_json(self.tools)
        return Plan.from_json(self.plan, catalog), catalog


@dataclass(frozen=True, slots=True, kw_only=True)
class Expectation:
    """What running the compiled plan must do, derived from the plan and the behaviours (SPEC.md §JS)."""

    plan: Plan
    behaviours: tuple[Behaviour, ...]
    starts: tuple[int, ...]  # calls that reach their mock, in order
    pending: bool  # a started call never settles, so the function must stay pending
    records: tuple[dict[str, Any] | None, ...]  # per call, what its record must be (None: never settles)
    shaped: bool
    first_bad_row: int | None  # first row that breaks the shape (for JS-LIMIT's "projection precedes")
    tame: bool
    spec: dict[str, Any] = field(repr=False)

    @property
    def mode(self) -> str:
        return self.plan.mode

    @property
    def output(self) -> str:
        return self.plan.output.kind


def expect(case: CompileCase, js: str) -> Expectation:
    plan, catalog = case.valid
    bs = case.behaviours
    starts: list[int] = []
    pending = False
    records: list[dict[str, Any] | None] = []
    for i, b in enumerate(bs):
        if plan.mode == "sequential" and pending:
            records.append(None)
            continue
        if b.invoked:
            starts.append(i)
        if not b.settles:
            pending = True
            records.append(None)
        elif b.kind in ("resolve", "return"):
            records.append({"ok": True, "same": i})
        elif b.kind in ("reject", "throw"):
            records.append({"ok": False, "same": i})
        else:
            records.append({"ok": False, "type": "TypeError"})
    tool = catalog.tool(plan.calls[0].tool)
    shaped = plan.mode == "single" and tool is not None and tool.returns.kind == "array"
    first_bad = None
    if shaped and bs[0].kind in ("resolve", "return"):
        value = bs[0].value
        fields = plan.output.fields
        if not isinstance(value, list):
            records[0] = {"ok": False, "shape": True}
        else:
            if fields is not None:
                first_bad = next((j for j, row in enumerate(value) if not _row_ok(row, fields)), None)
            if first_bad is not None:
                records[0] = {"ok": False, "shape": True}
            else:
                records[0] = {
                    "ok": True,
                    "rows": {"call": 0, "fields": list(fields) if fields else None, "limit": plan.output.limit},
                }
    spec = {
        "js": js,
        "output": plan.output.kind,
        "calls": [
            {"tool": c.tool, "args": dict(c.args), "behaviour": b.to_json()} for c, b in zip(plan.calls, bs)
        ],
        "expect": records,
    }
    return Expectation(
        plan=plan,
        behaviours=bs,
        starts=tuple(starts),
        pending=pending,
        records=tuple(records),
        shaped=shaped,
        first_bad_row=first_bad,
        tame=is_tame_plan(plan),
        spec=spec,
    )


def _row_ok(row: Any, fields: tuple[str, ...]) -> bool:
    return isinstance(row, dict) and all(f in row for f in fields)


# --- generating cases ---------------------------------------------------------------------------------
# Each generator is a function of a chooser (strategies._internal.choosers): the Hypothesis strategies
# drive it for certification and shrinking, a campaign's sampler for volume.


_SCENARIOS = ("rows", "rows", "rows", "bad-row", "bad-row", "bad-row-past-limit", "bad-row-past-limit", "not-array",
              "not-array", "as-drawn")
_MODES = (("single",), ("sequential",), ("parallel",), ("sequential",), ("parallel",))
_SHAPE_NAMES = ("__proto__", "toString", "id", "name", "constructor", "$", "score", "\u540d\u524d")


def shaping_case(ch: Chooser, *, adversarial: bool) -> tuple[Catalog, Plan, tuple[Behaviour, ...]]:
    """A single call of an array tool, usually with fields and a limit, and rows chosen to exercise
    each shaping rule: good rows, a bad row before or past the limit, a non-array, or a failure."""
    first = build_tool(ch, ch.tool_name(adversarial=adversarial), adversarial=adversarial, returns="array")
    props = tuple(ch.subset(_SHAPE_NAMES, 1, 4))
    first = replace(first, returns=Returns(kind="array", properties=props))
    others = tuple(t for t in build_catalog(ch, max_tools=2, adversarial=adversarial).tools if t.name != first.name)
    catalog = Catalog(tools=(first, *others))
    fields = tuple(ch.subset(props, 1, 3)) if ch.integer(0, 4) < 4 else None
    limit = (ch.integer(0, 6) if ch.boolean() else ch.integer(0, 100)) if ch.integer(0, 4) < 4 else None
    plan = Plan(mode="single", calls=(build_call(ch, first, adversarial=adversarial),),
                output=Output(kind=ch.choice(("all", "last")), fields=fields, limit=limit))
    scenario = ch.choice(_SCENARIOS)
    if scenario == "as-drawn":
        return catalog, plan, build_behaviours(ch, plan, catalog)
    shape = tuple(dict.fromkeys((*(fields or ()), *props)))
    past_limit = scenario == "bad-row-past-limit" and limit is not None and fields is not None
    rows: Any = build_rows(ch, shape, bad=False, min_rows=limit if past_limit and limit else 1)
    if scenario.startswith("bad-row"):
        if fields and ch.boolean():
            # a row missing one field: with a field such as toString, `field in row` still says yes, so
            # such a field is the one dropped whenever the plan has one
            inherited = [f for f in fields if f in _OBJECT_PROTOTYPE_NAMES]
            drop = ch.choice(inherited or fields)
            bad: Any = {k: v for k, v in rows[0].items() if k != drop}
        else:
            bad = ch.choice((None, 5, "row", True, [], ["id"], {}))
        rows.insert(len(rows) if past_limit else ch.integer(0, len(rows)), bad)
    elif scenario == "not-array":
        rows = ch.choice(({}, None, {"rows": []}, {"length": 1, "0": {}}, "rows", 0, True))
    kind = ch.choice(("resolve", "resolve", "return"))
    delay = ch.integer(0, 2) if kind == "resolve" else 0
    return catalog, plan, (Behaviour(kind=kind, value=rows, delay=delay),)


def valid_case(ch: Chooser, *, adversarial: bool = True) -> CompileCase:
    if ch.integer(0, 2) == 0:
        catalog, plan, behaviours = shaping_case(ch, adversarial=adversarial)
    else:
        catalog = build_catalog(ch, max_tools=3, adversarial=adversarial)
        plan = build_plan(ch, catalog, modes=ch.choice(_MODES), adversarial=adversarial)
        behaviours = build_behaviours(ch, plan, catalog)
        if plan.mode == "parallel" and ch.boolean():
            # finish in reverse: the final call settles first (what a last-to-finish bug gets wrong)
            n = len(behaviours)
            behaviours = tuple(
                replace(b, delay=2 * (n - 1 - i)) if b.kind in ("resolve", "reject") else b
                for i, b in enumerate(behaviours)
            )
    return CompileCase(tools=catalog.to_json(), plan=plan.to_json(), behaviours=behaviours)


def invalid_case(ch: Chooser) -> CompileCase:
    """A plan or catalog (a quarter of the time) with one clause broken."""
    if ch.integer(0, 3) == 0:
        raw_tools, clause = break_catalog(ch, build_catalog(ch, max_tools=3))
        plan = {"mode": "single", "calls": [{"tool": "list_users", "args": {}}], "output": {"kind": "last"}}
        return CompileCase(tools=raw_tools, plan=plan, breaks=clause)
    catalog = build_catalog(ch, max_tools=3)
    raw_plan, clause = break_plan(ch, build_plan(ch, catalog), catalog)
    return CompileCase(tools=catalog.to_json(), plan=raw_plan, breaks=clause)


def compile_case(ch: Chooser) -> CompileCase:
    """Mostly a valid plan with tool behaviours (half of them with adversarial names and values when
    sampled), a fifth of the time an invalid plan or catalog."""
    if ch.integer(0, 4) == 4:
        return invalid_case(ch)
    return valid_case(ch)


@st.composite
def valid_cases(draw: st.DrawFn, *, adversarial: bool = True) -> CompileCase:
    return valid_case(DrawChooser(draw), adversarial=adversarial)


@st.composite
def invalid_cases(draw: st.DrawFn) -> CompileCase:
    return invalid_case(DrawChooser(draw))


@st.composite
def _compile_cases(draw: st.DrawFn) -> CompileCase:
    return compile_case(DrawChooser(draw))


def compile_cases() -> st.SearchStrategy[CompileCase]:
    """Compile cases: mostly valid plans with tool behaviours, a fifth invalid plans or catalogs.
    Shrinks towards a valid single call of a one-tool catalog that resolves at once."""
    return _compile_cases()


def sample_compile_cases(rng: random.Random, n: int) -> list[CompileCase]:
    """``n`` compile cases drawn from ``rng`` by the same generators :func:`compile_cases` drives, about a
    hundred times faster and without shrinking: a campaign's volume. Half are adversarial."""
    ch = QuickChooser(rng)
    return [invalid_case(ch) if ch.integer(0, 4) == 4 else valid_case(ch, adversarial=ch.boolean()) for _ in range(n)]


def tame_twin(case: CompileCase) -> CompileCase:
    """The same plan with every name and value renamed to a tame one (``t0``, ``a0``, ``s0``, ``1``...).

    When an adversarial plan's js fails, its twin tells whose fault it is: a twin that fails the same
    way is a form or call bug (JS-FORM, JS-CALLS); a twin that passes is an escaping bug (JS-ESCAPE)."""
    plan, catalog = case.valid
    tools = {t.name: f"t{i}" for i, t in enumerate(catalog.tools)}
    tool_json = []
    arg_names: dict[str, dict[str, str]] = {}
    props: dict[str, dict[str, str]] = {}
    for t in catalog.tools:
        arg_names[t.name] = {a: f"a{j}" for j, (a, _) in enumerate(t.arguments)}
        props[t.name] = {p: f"p{j}" for j, p in enumerate(t.returns.properties or ())}
        returns: dict[str, Any] = {"kind": t.returns.kind}
        if t.returns.properties is not None:
            returns["properties"] = [props[t.name][p] for p in t.returns.properties]
        tool_json.append(
            {
                "name": tools[t.name],
                "arguments": {arg_names[t.name][a]: k for a, k in t.arguments},
                "required": [arg_names[t.name][a] for a in t.required],
                "returns": returns,
            }
        )
    counter = iter(range(1, 10**6))

    def tame_value(v: Any) -> Any:
        if isinstance(v, bool):
            return v
        if isinstance(v, str):
            return f"s{next(counter)}"
        return next(counter)

    calls = [
        {"tool": tools[c.tool], "args": {arg_names[c.tool][a]: tame_value(v) for a, v in c.args}} for c in plan.calls
    ]
    output = plan.output.to_json()
    if plan.output.fields is not None:
        output["fields"] = [props[plan.calls[0].tool][f] for f in plan.output.fields]
    raw_plan = {"mode": plan.mode, "calls": calls, "output": output}
    behaviours = tuple(Behaviour(kind="resolve", value=None) for _ in plan.calls)
    return CompileCase(tools=tool_json, plan=raw_plan, behaviours=behaviours)


def limit_past_bad_row(case: CompileCase, first_bad_row: int) -> CompileCase:
    """The same case with its limit raised to take in the first bad row (JS-LIMIT's probe)."""
    plan = dict(case.plan)
    plan["output"] = dict(plan["output"], limit=min(100, first_bad_row + 1))
    return replace(case, plan=plan)
