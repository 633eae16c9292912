"""What mocked tools do when a compiled plan calls them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from hypothesis import strategies as st

from reference.catalog import Catalog
from reference.plan import Plan
from strategies._internal.values import json_values, strings

#: ``resolve``: a promise fulfilled after ``delay`` microtask turns; ``return``: the value itself,
#: synchronously; ``reject``: a promise rejected after ``delay`` turns; ``throw``: a synchronous throw;
#: ``never``: a promise that never settles; ``absent``: no such key in ``tools``; ``notfn``: the key
#: holds a non-function.
KINDS = ("resolve", "return", "reject", "throw", "never", "absent", "notfn")


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """A rejection reason or thrown value: a fresh ``Error(message)``, or a JSON ``value`` itself."""

    message: str | None = None
    value: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message} if self.message is not None else {"value": self.value}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Failure:
        if set(raw) == {"message"} and isinstance(raw["message"], str):
            return cls(message=raw["message"])
        if set(raw) == {"value"}:
            return cls(value=raw["value"])
        raise ValueError(f"{raw!r} is not a failure: expected {{message}} or {{value}}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Behaviour:
    """What one call's tool does; see :data:`KINDS`."""

    kind: str
    value: Any = None
    delay: int = 0
    failure: Failure | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.kind!r} is not a behaviour kind: one of {', '.join(KINDS)}")

    @property
    def settles(self) -> bool:
        return self.kind != "never"

    @property
    def invoked(self) -> bool:
        """Whether calling it reaches a mock (absent and non-function tools are never invoked)."""
        return self.kind not in ("absent", "notfn")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind in ("resolve", "return"):
            out["value"] = self.value
        if self.kind in ("resolve", "reject"):
            out["delay"] = self.delay
        if self.failure is not None:
            out["failure"] = self.failure.to_json()
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Behaviour:
        unknown = set(raw) - {"kind", "value", "delay", "failure"}
        if unknown:
            raise ValueError(f"{sorted(unknown)!r} are not behaviour keys")
        failure = raw.get("failure")
        return cls(
            kind=raw["kind"],
            value=raw.get("value"),
            delay=int(raw.get("delay", 0)),
            failure=None if failure is None else Failure.from_json(failure),
        )


@cache
def failures() -> st.SearchStrategy[Failure]:
    """Rejection reasons and thrown values: Errors, and primitives such as ``undefined``-like ``null``,
    ``0``, ``""`` and strings (identity must survive). Shrinks towards ``Error("")``."""
    return st.one_of(
        st.builds(Failure, message=strings()),
        st.builds(Failure, value=st.one_of(st.none(), st.sampled_from((0, "", False, "boom")), json_values())),
    )


@cache
def rows_for(properties: tuple[str, ...], *, bad: bool = True, min_rows: int = 0) -> st.SearchStrategy[Any]:
    """Array results for shaping: at least ``min_rows`` rows holding every declared property (plus
    extras), and with ``bad`` rows that break the shape (``null``, arrays, primitives, a missing field)
    and non-array values. Shrinks towards ``[]`` (or ``min_rows`` small rows)."""
    good_row = st.fixed_dictionaries(
        {p: json_values(max_leaves=2) for p in properties},
        optional={k: json_values(max_leaves=2) for k in ("extra", "__proto__", "id") if k not in properties},
    )
    row = good_row
    if bad:
        missing = (
            st.sampled_from(properties).flatmap(
                lambda drop: good_row.map(lambda r: {k: v for k, v in r.items() if k != drop})
            )
            if properties
            else good_row
        )
        row = st.one_of(
            good_row,
            good_row,
            good_row,
            st.sampled_from((None, 5, "row", True)),
            st.lists(st.integers(), max_size=2),
            missing,
        )
    arrays = st.lists(row, min_size=min_rows, max_size=max(6, min_rows)) | st.lists(
        good_row, min_size=max(3, min_rows), max_size=max(12, min_rows)
    )
    if not bad:
        return arrays
    return st.one_of(arrays, arrays, arrays, json_values().filter(lambda v: not isinstance(v, list)))


@st.composite
def tool_behaviours(
    draw: st.DrawFn,
    plan: Plan,
    catalog: Catalog | None = None,
    *,
    max_delay: int = 4,
    allow_never: bool = True,
) -> tuple[Behaviour, ...]:
    """One :class:`Behaviour` per call of ``plan``: values, rejections, synchronous throws, missing and
    non-function tools (consistently per tool name), never-settling calls, and delays of up to
    ``max_delay`` microtask turns. With ``catalog``, a single array call gets rows to shape.
    Shrinks towards every call resolving at once with ``null``."""
    missing: dict[str, str] = {}
    for name in dict.fromkeys(c.tool for c in plan.calls):
        if draw(st.integers(0, 9)) == 9:  # shrinks towards the tool being there
            missing[name] = draw(st.sampled_from(("absent", "notfn")))
    shaped_props: tuple[str, ...] | None = None
    if catalog is not None and plan.mode == "single":
        tool = catalog.tool(plan.calls[0].tool)
        if tool is not None and tool.returns.kind == "array":
            shaped_props = tool.returns.properties or ()
            if plan.output.fields is not None:
                shaped_props = tuple(dict.fromkeys((*plan.output.fields, *shaped_props)))
    kinds = st.sampled_from(
        ("resolve",) * 6 + ("return", "reject", "throw") * 3 + (("never",) if allow_never else ())
    )
    out = []
    for index, call in enumerate(plan.calls):
        if call.tool in missing:
            out.append(Behaviour(kind=missing[call.tool]))
            continue
        kind = draw(kinds)
        if kind in ("resolve", "return"):
            if shaped_props is not None and index == 0:
                value = draw(rows_for(shaped_props))
            else:
                value = draw(json_values())
            delay = draw(st.integers(0, max_delay)) if kind == "resolve" else 0
            out.append(Behaviour(kind=kind, value=value, delay=delay))
        elif kind in ("reject", "throw"):
            delay = draw(st.integers(0, max_delay)) if kind == "reject" else 0
            out.append(Behaviour(kind=kind, delay=delay, failure=draw(failures())))
        else:
            out.append(Behaviour(kind=kind))
    return tuple(out)

