"""What mocked tools do when a compiled plan calls them: the records, and their generators (functions of a
chooser, which the strategies below and a campaign's sampler both drive)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from reference.catalog import Catalog
from reference.plan import Plan
from strategies._internal.choosers import Chooser, DrawChooser

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


FAILURE_VALUES = (None, 0, "", False, "boom")
#: the kinds of behaviour a call gets, as often as they appear here
BEHAVIOUR_KINDS = ("resolve",) * 6 + ("return", "reject", "throw") * 3 + ("never",)


def build_failure(ch: Chooser) -> Failure:
    """A rejection reason or thrown value: an Error with a message, or a JSON value itself."""
    if not ch.boolean():
        return Failure(message=ch.value_string())
    return Failure(value=ch.choice(FAILURE_VALUES) if ch.boolean() else ch.json_value())


def build_rows(ch: Chooser, properties: Sequence[str], *, bad: bool = True, min_rows: int = 0) -> Any:
    """An array result for shaping: rows holding every property (plus extras), and with ``bad`` rows that
    break the shape and non-array values."""
    if bad and ch.integer(0, 3) == 3:
        while True:
            value = ch.json_value()
            if not isinstance(value, list):
                return value
    if ch.boolean():
        return [_row(ch, properties, bad) for _ in range(ch.integer(min_rows, max(6, min_rows)))]
    return [_row(ch, properties, False) for _ in range(ch.integer(max(3, min_rows), max(12, min_rows)))]


def _row(ch: Chooser, properties: Sequence[str], bad: bool) -> Any:
    r = ch.integer(0, 5) if bad else 0
    if r == 3:
        return ch.choice((None, 5, "row", True))
    if r == 4:
        return [ch.integer(-10, 10) for _ in range(ch.integer(0, 2))]
    row = {p: ch.json_value(2) for p in properties}
    for extra in ("extra", "__proto__", "id"):
        if extra not in properties and ch.integer(0, 2) == 2:
            row[extra] = ch.json_value(2)
    if r == 5 and properties:
        del row[ch.choice(properties)]
    return row


def build_behaviours(ch: Chooser, plan: Plan, catalog: Catalog | None = None, *, max_delay: int = 4,
                     allow_never: bool = True) -> tuple[Behaviour, ...]:
    """One :class:`Behaviour` per call of ``plan`` (missing and non-function tools consistently per tool
    name); with ``catalog``, a single array call gets rows to shape."""
    missing: dict[str, str] = {}
    for name in dict.fromkeys(c.tool for c in plan.calls):
        if ch.integer(0, 9) == 9:  # shrinks towards the tool being there
            missing[name] = ch.choice(("absent", "notfn"))
    shaped: tuple[str, ...] | None = None
    if catalog is not None and plan.mode == "single":
        tool = catalog.tool(plan.calls[0].tool)
        if tool is not None and tool.returns.kind == "array":
            shaped = tuple(dict.fromkeys((*(plan.output.fields or ()), *(tool.returns.properties or ()))))
    kinds = BEHAVIOUR_KINDS if allow_never else BEHAVIOUR_KINDS[:-1]
    out = []
    for index, call in enumerate(plan.calls):
        if call.tool in missing:
            out.append(Behaviour(kind=missing[call.tool]))
            continue
        kind = ch.choice(kinds)
        delay = ch.integer(0, max_delay) if kind in ("resolve", "reject") else 0
        if kind in ("resolve", "return"):
            value = build_rows(ch, shaped) if shaped is not None and index == 0 else ch.json_value()
            out.append(Behaviour(kind=kind, value=value, delay=delay))
        elif kind in ("reject", "throw"):
            out.append(Behaviour(kind=kind, delay=delay, failure=build_failure(ch)))
        else:
            out.append(Behaviour(kind=kind))
    return tuple(out)


@st.composite
def failures(draw: st.DrawFn) -> Failure:
    """Rejection reasons and thrown values: Errors, and primitives such as ``undefined``-like ``null``,
    ``0``, ``""`` and strings (identity must survive). Shrinks towards ``Error("")``."""
    return build_failure(DrawChooser(draw))


@st.composite
def rows_for(draw: st.DrawFn, properties: tuple[str, ...], *, bad: bool = True, min_rows: int = 0) -> Any:
    """Array results for shaping: at least ``min_rows`` rows holding every declared property (plus
    extras), and with ``bad`` rows that break the shape (``null``, arrays, primitives, a missing field)
    and non-array values. Shrinks towards ``[]`` (or ``min_rows`` small rows)."""
    return build_rows(DrawChooser(draw), properties, bad=bad, min_rows=min_rows)


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
    return build_behaviours(DrawChooser(draw), plan, catalog, max_delay=max_delay, allow_never=allow_never)
