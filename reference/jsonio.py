"""Strict JSON at the JSONL boundary.

``loads`` accepts exactly RFC 8259 JSON: no ``NaN``/``Infinity``, no duplicate object keys. Numbers keep
what exactness needs: integers are ``int`` (those with more digits than Python converts are
:class:`InexactNumber`); a non-integer literal is a ``float`` when it is exact and a
:class:`InexactNumber` (a ``float`` that remembers its text) when it is not finite or is not the shortest
round-trip form of its double, so validators can name the offending literal. ``dumps`` writes pure-ASCII
JSON (lone surrogates as ``\\udXXX`` escapes), one line, the form every message on the wire takes.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from decimal import Decimal, InvalidOperation
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1
#: integers with more digits than this are not converted (Python's default limit, kept here so that a
#: process that lifts it, ``sys.set_int_max_str_digits(0)``, does not take quadratic time on a long one)
MAX_INT_DIGITS = 4300


class InexactNumber(float):
    """A JSON number literal that no JavaScript double represents exactly (or that overflows)."""

    text: str

    def __new__(cls, text: str) -> InexactNumber:
        self = super().__new__(cls, float(text))
        self.text = text
        return self

    def __repr__(self) -> str:
        return self.text


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        return InexactNumber(text)
    if value == 0:
        # -0 and 0e5 are plain zero, whatever the exponent (0e99999999999999999999 is past what Decimal
        # takes); 1e-400 only underflows to it
        mantissa = text.lower().partition("e")[0]
        return 0.0 if not mantissa.strip("-0.") else InexactNumber(text)
    try:
        decimal = Decimal(text)
    except InvalidOperation:  # pragma: no cover - an exponent past Decimal's range: the double is 0 or inf
        return InexactNumber(text)
    return value if decimal == Decimal(repr(value)) else InexactNumber(text)


def _parse_int(text: str) -> int | InexactNumber:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:  # none of them is exact in JavaScript
        return InexactNumber(text)
    try:
        return int(text)
    except ValueError:  # pragma: no cover - a process that set a lower digit limit than ours
        return InexactNumber(text)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} in a JSON object")
        out[key] = value
    return out


def loads(text: str | bytes) -> Any:
    """Parse one JSON document strictly; raises ``ValueError`` with a readable message."""
    return json.loads(
        text,
        parse_float=_parse_float,
        parse_int=_parse_int,
        parse_constant=_reject_constant,
        object_pairs_hook=_no_duplicates,
    )


def _holds_inexact(value: Any) -> bool:
    """Whether an ``InexactNumber`` is anywhere in ``value`` (a walk that builds nothing)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, InexactNumber):
            return True
    return False


def dumps(value: Any) -> str:
    """One line of pure-ASCII JSON; an ``InexactNumber`` is written as its literal text."""
    if not _holds_inexact(value):
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    literals: list[str] = []
    tag = "\x00codemode-literal-" + secrets.token_hex(8) + "-"

    def restore(v: Any) -> Any:
        if isinstance(v, InexactNumber):
            literals.append(v.text)
            return f"{tag}{len(literals) - 1}"
        if isinstance(v, dict):
            return {k: restore(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [restore(x) for x in v]
        return v

    text = json.dumps(restore(value), ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    if not literals:
        return text
    quoted_tag = json.dumps(tag, ensure_ascii=True)[1:-1]
    return re.sub(
        '"' + re.escape(quoted_tag) + r'(\d+)"', lambda m: literals[int(m.group(1))], text
    )


def is_exact_number(value: object) -> bool:
    """A JSON number a JavaScript double holds exactly: finite, safe if integer-valued, shortest form."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, InexactNumber):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_SAFE_INTEGER
    if not math.isfinite(value):
        return False
    if value.is_integer():
        return abs(value) <= MAX_SAFE_INTEGER
    return True


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(x: Any, y: Any) -> bool:
    """JSON equality as SPEC.md defines it for plans: objects by members (order ignored), arrays in
    order, strings by code units, numbers by exact decimal value (zeros equal, inexact literals by their
    text), and a boolean never equals a number."""
    if isinstance(x, bool) or isinstance(y, bool):
        return isinstance(x, bool) and isinstance(y, bool) and x == y
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        return _decimal(x) == _decimal(y)
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(json_equal(x[k], y[k]) for k in x)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(json_equal(a, b) for a, b in zip(x, y))
    return type(x) is type(y) and x == y


def _decimal(n: int | float) -> Decimal:
    if isinstance(n, InexactNumber):
        return Decimal(n.text)
    value = Decimal(n) if isinstance(n, int) else Decimal(repr(float(n)))
    return value if value != 0 else Decimal(0)
