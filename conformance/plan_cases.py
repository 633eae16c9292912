"""Plan cases: a plan request and what the kit expects of its answer.

``expect`` is one of: ``{"plan": PLAN}`` (a supported instruction rendered from that plan; PL-ACCURACY),
``{"diagnostic": CLAUSE}`` (an unsupported request, ``PL-REJECT``, or an invalid catalog or instruction,
an ``IN-*`` clause), or ``{}`` (no expectation of its own). A case with ``pair`` is one side of a
``PL-INVARIANT`` pair: ``pair.request`` is the untransformed request and ``pair.transform`` says how its
answer maps to this one's. Cases are data: ``to_json``/``from_json`` round-trip them and ``id`` hashes them.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from reference import jsonio
from reference.catalog import Catalog
from reference.lexer import lex
from strategies import invalid_catalogs
from strategies._internal.choosers import Chooser, DrawChooser, QuickChooser, RandomChooser
from strategies._internal.instructions import (
    ADVERSARIAL_INVALID,
    ADVERSARIAL_SUPPORTED,
    PHRASE_WORDS,
    SUPPORTED,
    UNSUPPORTED,
    Instruction,
    adversarial,
    catalog_names,
    fresh_names,
    permute_catalog,
    render_catalog,
    rename,
    substitute_strings,
    supported,
    unsupported,
)


CATALOG_CLAUSES = ("IN-COUNT", "IN-KEYS", "IN-NAME", "IN-UNIQUE", "IN-ARGS", "IN-REQUIRED", "IN-RETURNS")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanCase:
    instruction: str
    tools: Any
    expect: dict[str, Any]
    family: str
    pair: dict[str, Any] | None = None
    axes: tuple[str, ...] = ()  # the phrasing forms of a rendered instruction (strategies: ``axis=form``)

    def request(self) -> dict[str, Any]:
        return {"instruction": self.instruction, "tools": self.tools}

    def request_line(self) -> str:
        return jsonio.dumps(self.request())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.request(), "expect": self.expect, "family": self.family}
        if self.pair is not None:
            out["pair"] = self.pair
        if self.axes:
            out["axes"] = list(self.axes)
        return out

    @classmethod
    def from_json(cls, raw: Any) -> PlanCase:
        if not isinstance(raw, dict) or "request" not in raw or not set(raw) <= {"request", "expect", "family", "pair", "axes"}:
            raise ValueError("a plan case is an object with request, expect, family and optionally pair and axes")
        axes = raw.get("axes", [])
        if not isinstance(axes, list) or not all(isinstance(a, str) for a in axes):
            raise ValueError("a plan case's axes is an array of strings")
        request = raw["request"]
        if not isinstance(request, dict) or set(request) != {"instruction", "tools"}:
            raise ValueError("a plan case's request is a plan request: exactly instruction and tools")
        return cls(
            instruction=request["instruction"],
            tools=request["tools"],
            expect=raw.get("expect", {}),
            family=raw.get("family", ""),
            pair=raw.get("pair"),
            axes=tuple(axes),
        )

    @property
    def id(self) -> str:
        return hashlib.sha256(jsonio.dumps(self.to_json()).encode()).hexdigest()[:12]

    @property
    def expected_plan(self) -> Any:
        return self.expect.get("plan")

    @property
    def expected_clause(self) -> str | None:
        return self.expect.get("diagnostic")


def from_instruction(inst: Instruction) -> PlanCase:
    if inst.plan is not None:
        expect: dict[str, Any] = {"plan": inst.plan.to_json()}
    else:
        expect = {"diagnostic": inst.clause or "PL-REJECT"}
    return PlanCase(instruction=inst.text, tools=inst.catalog.to_json(), expect=expect, family=inst.family,
                    axes=inst.axes)


# --- strategies -------------------------------------------------------------------------------------------


# Each kind of case is built by a function of a chooser: a ``DrawChooser`` for the Hypothesis strategies
# (certification, shrinking) or a ``QuickChooser`` for a campaign's volume (:func:`sample_plan_cases`).


def _supported(ch: Chooser) -> PlanCase:
    catalog = render_catalog(ch, adversarial=ch.boolean())
    family = ch.choice(SUPPORTED)
    inst = supported(ch, catalog, family) or supported(ch, catalog, "single")
    if inst is None:
        return PlanCase(instruction="call x", tools=[], expect={"diagnostic": "IN-COUNT"}, family="IN-COUNT")
    return from_instruction(inst)


def _unsupported(ch: Chooser) -> PlanCase:
    catalog = render_catalog(ch, adversarial=False, min_tools=2)
    for _ in range(4):
        inst = unsupported(ch, catalog, ch.choice(UNSUPPORTED))
        if inst is not None:
            return from_instruction(inst)
    return from_instruction(unsupported(ch, catalog, "dependency"))  # type: ignore[arg-type]


def _adversarial(ch: Chooser) -> PlanCase:
    catalog = render_catalog(ch)
    family = ch.choice(ADVERSARIAL_SUPPORTED + tuple(ADVERSARIAL_INVALID))
    for _ in range(4):
        inst = adversarial(ch, catalog, family)
        if inst is not None:
            return from_instruction(inst)
        catalog = render_catalog(ch)
    inst = supported(ch, catalog, "single")
    assert inst is not None
    return from_instruction(inst)


def _invalid_catalog(ch: Chooser, raw: Any, clause: str) -> PlanCase:
    name = next((e.get("name") for e in raw if isinstance(e, dict) and isinstance(e.get("name"), str)), None) if isinstance(raw, list) else None
    instruction = f"call {name}" if name and name.isidentifier() else ch.choice(("call list_users", "run it"))
    return PlanCase(instruction=instruction, tools=raw, expect={"diagnostic": clause}, family=clause)


def _plain_word_names(inst: Instruction) -> set[str]:
    """Catalog names the instruction also writes as plain words (not as a name)."""
    words = [t.text for t in lex(inst.text, max_tokens=10**6).tokens]
    names = set(catalog_names(inst.catalog))
    if inst.tags is None:
        return {w for w in words if w in names and w.lower() in PHRASE_WORDS}
    return {w for w, tag in zip(words, inst.tags) if tag == "O" and w in names}


def _invariant(ch: Chooser) -> PlanCase:
    """The transformed side of a PL-INVARIANT pair (the untransformed request rides along in ``pair``)."""
    catalog = render_catalog(ch, adversarial=ch.boolean())
    if ch.chance(70):
        base = supported(ch, catalog, ch.choice(SUPPORTED)) or supported(ch, catalog, "single")
    else:
        base = unsupported(ch, catalog, ch.choice(UNSUPPORTED)) or supported(ch, catalog, "single")
    assert base is not None
    kind = ch.choice(("permute", "values", "rename"))
    if kind == "rename" and _plain_word_names(base):
        kind = "permute"  # renaming would rename an ordinary word too ("send it to the team", "to" an argument)
    text, new_catalog, mapping = base.text, catalog, {}
    if kind == "permute":
        new_catalog = permute_catalog(ch, catalog)
    elif kind == "values":
        rc = RandomChooser(random.Random(ch.integer(0, 2**32)))
        seen: dict[str, str] = {}

        def swap(value: str) -> str:
            if value not in seen:
                new = rc.string()
                while new in seen.values() or new == value:
                    new = new + rc.choice(("x", "\ud800", "\"", " "))
                seen[value] = new
            return seen[value]

        text, _ = substitute_strings(base.text, None, swap)
        mapping = seen
    else:
        mapping = fresh_names(ch, base.text, catalog)
        text, new_catalog, _ = rename(base.text, catalog, None, mapping)
    return PlanCase(
        instruction=text,
        tools=new_catalog.to_json(),
        expect={},
        family=f"invariant-{kind}",
        pair={"request": {"instruction": base.text, "tools": catalog.to_json()},
              "transform": {"kind": kind, "map": [[k, v] for k, v in mapping.items()]}},
    )


@st.composite
def supported_cases(draw: st.DrawFn) -> PlanCase:
    return _supported(DrawChooser(draw))


@st.composite
def unsupported_cases(draw: st.DrawFn) -> PlanCase:
    return _unsupported(DrawChooser(draw, adversarial=False))


@st.composite
def adversarial_cases(draw: st.DrawFn) -> PlanCase:
    return _adversarial(DrawChooser(draw))


@st.composite
def invalid_catalog_cases(draw: st.DrawFn) -> PlanCase:
    clause = draw(st.sampled_from(CATALOG_CLAUSES))
    raw, clause = draw(invalid_catalogs(clause=clause))
    return _invalid_catalog(DrawChooser(draw), raw, clause)


@st.composite
def invariant_cases(draw: st.DrawFn) -> PlanCase:
    return _invariant(DrawChooser(draw))


def plan_cases(*, tokenizer: str = "reference") -> st.SearchStrategy[PlanCase]:
    """Every kind of plan case, weighted so the scored clauses get enough cases of each family."""
    return st.one_of(
        supported_cases(),
        supported_cases(),
        supported_cases(),
        unsupported_cases(),
        unsupported_cases(),
        adversarial_cases(),
        invalid_catalog_cases(),
        invariant_cases(),
    )


def sample_plan_cases(rng: random.Random, n: int) -> list[PlanCase]:
    """``n`` plan cases drawn from ``rng`` with the weights of :func:`plan_cases`, about a hundred times
    faster than Hypothesis draws them (a campaign's volume; no shrinking)."""
    from strategies._internal.catalogs import break_catalog, build_catalog

    ch = QuickChooser(rng)
    out = []
    for _ in range(n):
        k = rng.randrange(8)
        if k < 3:
            out.append(_supported(ch))
        elif k < 5:
            out.append(_unsupported(ch))
        elif k == 5:
            out.append(_adversarial(ch))
        elif k == 6:
            raw, clause = break_catalog(ch, build_catalog(ch, max_tools=3), clause=ch.choice(CATALOG_CLAUSES))
            out.append(_invalid_catalog(ch, raw, clause))
        else:
            out.append(_invariant(ch))
    return out


#: the kinds of case a scored rate counts (``registry.Metric.draws``), each drawn by its chooser function
KINDS = {"supported": _supported, "unsupported": _unsupported}


def sample_kinds(rng: random.Random, kinds: Sequence[str], n: int) -> list[PlanCase]:
    """``n`` cases of the named ``kinds`` in turn, drawn independently from ``rng`` (as
    :func:`sample_plan_cases`): the cases that settle a scored rate Hypothesis' search left undecided."""
    ch = QuickChooser(rng)
    return [KINDS[kinds[i % len(kinds)]](ch) for i in range(n)]


def transform_plan(plan: Any, transform: dict[str, Any]) -> Any:
    """What a PL-INVARIANT transform makes of a plan (raw JSON) answered to the untransformed request."""
    kind = transform["kind"]
    mapping = {k: v for k, v in transform.get("map", [])}
    if kind == "permute" or not isinstance(plan, dict):
        return plan
    out = jsonio.loads(jsonio.dumps(plan))
    calls = out.get("calls") if isinstance(out.get("calls"), list) else []
    for call in calls:
        if not isinstance(call, dict):
            continue
        args = call.get("args")
        if kind == "values" and isinstance(args, dict):
            call["args"] = {k: mapping.get(v, v) if isinstance(v, str) else v for k, v in args.items()}
        if kind == "rename":
            if isinstance(call.get("tool"), str):
                call["tool"] = mapping.get(call["tool"], call["tool"])
            if isinstance(args, dict):
                call["args"] = {mapping.get(k, k): v for k, v in args.items()}
    output = out.get("output")
    if kind == "rename" and isinstance(output, dict) and isinstance(output.get("fields"), list):
        output["fields"] = [mapping.get(f, f) if isinstance(f, str) else f for f in output["fields"]]
    return out


def at_limit_twin(case: PlanCase) -> dict[str, Any] | None:
    """The 127-token twin of an at-limit case: its request less the instruction's last token (the
    generator ends every at-limit instruction with a neutral word). ``None`` for any other case."""
    if case.family != "at-limit":
        return None
    tokens = lex(case.instruction, max_tokens=10**6).tokens
    if len(tokens) != 128:
        return None
    return {"instruction": case.instruction[: tokens[-1].start].rstrip(), "tools": case.tools}


def catalog_of(case: PlanCase) -> Catalog | None:
    try:
        return Catalog.from_json(case.tools)
    except (ValueError, KeyError, TypeError):
        return None
