"""Seeded random sampling of the same things the strategies draw, for fuzzing campaigns.

A Hypothesis example of a compile case takes hundreds of draws at tens of microseconds each; a campaign
that judges a thousand cases a second cannot afford that. :class:`Sampler` draws catalogs, plans, tool
behaviours and values from a ``random.Random`` with the strategies' own pools of adversarial names,
strings and numbers (``strategies._internal.values``) and about their weights, a hundred times faster,
but without shrinking: a campaign draws its volume here and asks Hypothesis, with the strategies, for a
minimal case once it has found a new failure.

It is a :class:`~strategies._internal.instructions.QuickChooser` (``choice``, ``integer``, ``chance``,
``boolean``) with the compile side's values, and answers ``identifier`` like
:class:`~strategies._internal.instructions.DrawChooser`, so the code that breaks a valid plan or catalog
(``break_plan``, ``break_catalog``) serves both.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from reference.catalog import ARGUMENT_TYPES, MAX_ARGUMENTS, MAX_TOOLS, Catalog, Returns, Tool
from reference.jsonio import MAX_SAFE_INTEGER
from reference.names import RESERVED_WORDS, is_identifier_name, is_tool_name
from reference.plan import Call, Output, Plan, Value
from strategies._internal.behaviours import Behaviour, Failure
from strategies._internal.instructions import QuickChooser
from strategies._internal.values import (
    ADVERSARIAL_STRINGS,
    EDGE_NUMBERS,
    OBJECT_NAMES,
    ODD_IDENTIFIERS,
    WORDS,
    utf16_canonical,
)

_RESERVED = tuple(sorted(RESERVED_WORDS))
_LETTERS = (  # code point ranges of letters (Lu, Ll, Lo) in several scripts, for random identifiers
    (0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xD6), (0x3B1, 0x3C9), (0x410, 0x44F), (0x5D0, 0x5EA),
    (0x3041, 0x3096), (0x4E00, 0x9FA5), (0x1D4D0, 0x1D4E9),
)
_ODD_CHARS = (0x0, 0x1F, 0x7F, 0x85, 0x2028, 0x2029, 0xFEFF, 0x202E, 0xD800, 0xDBFF, 0xDC00, 0xDFFF)
_BEHAVIOUR_KINDS = ("resolve",) * 6 + ("return", "reject", "throw") * 3 + ("never",)
_FAILURE_VALUES = (None, 0, "", False, "boom")


class Sampler(QuickChooser):
    """Everything a compile case is made of, drawn from one seeded ``random.Random``."""

    def identifier(self) -> str:
        return self.name(adversarial=False)

    # --- values -------------------------------------------------------------------------------------

    def name(self, *, adversarial: bool = True) -> str:
        """An IdentifierName, as ``identifier_names``: tame, object traps, odd, reserved, random Unicode."""
        r = self.rng.randrange(7) if adversarial else 0
        if r <= 1:
            k = self.rng.randrange(3)
            word = self.choice(WORDS)
            return word if k == 0 else f"{word}_{self.choice(WORDS)}" if k == 1 else f"{word}{self.rng.randrange(10)}"
        if r == 2:
            return "__proto__"
        if r == 3:
            return self.choice(OBJECT_NAMES)
        if r == 4:
            return self.choice(ODD_IDENTIFIERS)
        if r == 5:
            return self.choice(_RESERVED)
        while True:
            text = "".join(chr(self.rng.randint(*self.choice(_LETTERS))) for _ in range(self.rng.randint(1, 4)))
            if is_identifier_name(text):
                return text

    def tool_name(self, *, adversarial: bool = True) -> str:
        while True:
            name = self.name(adversarial=adversarial)
            if is_tool_name(name):
                return name

    def names(self, n: int, *, adversarial: bool = True, tool: bool = False) -> list[str]:
        """Up to ``n`` distinct names (fewer when draws collide, as with ``st.lists(unique=True)``)."""
        out: list[str] = []
        for _ in range(n):
            name = self.tool_name(adversarial=adversarial) if tool else self.name(adversarial=adversarial)
            if name not in out:
                out.append(name)
        return out

    def string(self, *, adversarial: bool = True) -> str:
        """As ``strings``: short words, literal-breaking strings, arbitrary text with lone surrogates."""
        r = self.rng.randrange(5) if adversarial else 0
        if r == 0:
            return "".join(chr(self.rng.randint(0x61, 0x7A)) for _ in range(self.rng.randint(0, 8)))
        if r <= 2:
            return self.choice(ADVERSARIAL_STRINGS)
        if r == 3:
            return utf16_canonical("".join(chr(self._code_point()) for _ in range(self.rng.randint(0, 12))))
        return utf16_canonical("".join(chr(self.choice(_ODD_CHARS)) for _ in range(self.rng.randint(0, 4))))

    def _code_point(self) -> int:
        r = self.rng.randrange(4)
        if r == 0:
            return self.rng.randint(0x20, 0x7E)
        if r == 1:
            return self.rng.randint(0x80, 0xFFFF)  # lone surrogates included
        if r == 2:
            return self.rng.randint(0x10000, 0x10FFFF)
        return self.choice(_ODD_CHARS)

    def number(self) -> int | float:
        """As ``numbers``: small integers, JavaScript's edges, any safe integer, finite fractions."""
        r = self.rng.randrange(4)
        if r == 0:
            return self.rng.randint(-1000, 1000)
        if r == 1:
            return self.choice(EDGE_NUMBERS)
        if r == 2:
            return self.rng.randint(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
        while True:  # any finite double that is not an integer, from its bits
            (value,) = struct.unpack("<d", self.rng.getrandbits(64).to_bytes(8, "little"))
            if value == value and abs(value) != float("inf") and not value.is_integer():
                return value

    def json_value(self, leaves: int = 6) -> Any:
        """As ``json_values``: scalars, and lists and objects of up to 3 members."""
        r = self.rng.randrange(8) if leaves > 1 else self.rng.randrange(4)
        if r == 0:
            return None
        if r == 1:
            return self.boolean()
        if r == 2:
            return self.number()
        if r == 3:
            return self.string()
        size = self.rng.randint(0, 3)
        share = max(1, (leaves - 1) // max(size, 1))
        if r < 6:
            return [self.json_value(share) for _ in range(size)]
        return {self.name(): self.json_value(share) for _ in range(size)}

    # --- catalogs and plans -------------------------------------------------------------------------

    def tool(self, name: str, *, adversarial: bool = True, returns: str | None = None) -> Tool:
        arg_names = self.names(self.rng.randint(0, MAX_ARGUMENTS), adversarial=adversarial)
        arguments = tuple((a, self.choice(ARGUMENT_TYPES)) for a in arg_names)
        required = tuple(a for a in arg_names if self.boolean())
        kind = returns or self.choice(("text", "object", "array", "array"))
        props = None
        if kind != "text" and self.boolean():
            props = tuple(self.names(self.rng.randint(0, 4), adversarial=adversarial))
        return Tool(name=name, arguments=arguments, required=required, returns=Returns(kind=kind, properties=props))

    def catalog(self, *, max_tools: int = MAX_TOOLS, adversarial: bool = True) -> Catalog:
        names = self.names(self.rng.randint(1, max_tools), adversarial=adversarial, tool=True)
        return Catalog(tools=tuple(self.tool(n, adversarial=adversarial) for n in names))

    def value(self, kind: str, *, adversarial: bool = True) -> Value:
        if kind == "string":
            return self.string(adversarial=adversarial)
        if kind == "number":
            return self.number() if adversarial else self.rng.randint(-1000, 1000)
        return self.boolean()

    def call(self, tool: Tool, *, adversarial: bool = True) -> Call:
        args = tuple((n, self.value(k, adversarial=adversarial)) for n, k in tool.arguments
                     if n in tool.required or self.boolean())
        return Call(tool=tool.name, args=args)

    def plan(self, catalog: Catalog, *, modes: Sequence[str] = ("single", "sequential", "parallel"),
             adversarial: bool = True) -> Plan:
        """As ``plans``: 1 call in single mode, 2-3 otherwise; fields and a limit on an array call."""
        mode = self.choice(modes)
        chosen = [self.choice(catalog.tools) for _ in range(1 if mode == "single" else self.rng.randint(2, 3))]
        calls = tuple(self.call(t, adversarial=adversarial) for t in chosen)
        fields = limit = None
        props = chosen[0].returns.properties or ()
        if mode == "single" and chosen[0].returns.kind == "array":
            if props and self.boolean():
                fields = tuple(self.rng.sample(props, self.rng.randint(1, min(3, len(props)))))
            if self.boolean():
                limit = self.rng.randint(0, 100) if self.boolean() else self.rng.randint(0, 3)
        return Plan(mode=mode, calls=calls, output=Output(kind=self.choice(("all", "last")), fields=fields, limit=limit))

    # --- behaviours -----------------------------------------------------------------------------------

    def failure(self) -> Failure:
        if self.boolean():
            return Failure(message=self.string())
        return Failure(value=self.choice(_FAILURE_VALUES) if self.boolean() else self.json_value())

    def rows(self, properties: Sequence[str], *, bad: bool = True, min_rows: int = 0) -> Any:
        """As ``rows_for``: arrays of rows holding every property, with ``bad`` rows and non-arrays."""
        if bad and self.rng.randrange(4) == 0:
            while True:
                value = self.json_value()
                if not isinstance(value, list):
                    return value
        if self.boolean():
            return [self._row(properties, bad) for _ in range(self.rng.randint(min_rows, max(6, min_rows)))]
        return [self._row(properties, False) for _ in range(self.rng.randint(max(3, min_rows), max(12, min_rows)))]

    def _row(self, properties: Sequence[str], bad: bool) -> Any:
        r = self.rng.randrange(6) if bad else 0
        if r == 3:
            return self.choice((None, 5, "row", True))
        if r == 4:
            return [self.rng.randint(-10, 10) for _ in range(self.rng.randint(0, 2))]
        row = {p: self.json_value(2) for p in properties}
        for extra in ("extra", "__proto__", "id"):
            if extra not in properties and self.rng.randrange(3) == 0:
                row[extra] = self.json_value(2)
        if r == 5 and properties:
            del row[self.choice(properties)]
        return row

    def behaviours(self, plan: Plan, catalog: Catalog | None = None, *, max_delay: int = 4) -> tuple[Behaviour, ...]:
        """As ``tool_behaviours``: one behaviour per call (missing tools consistently per name)."""
        missing = {name: self.choice(("absent", "notfn")) for name in dict.fromkeys(c.tool for c in plan.calls)
                   if self.rng.randrange(10) == 9}
        shaped: tuple[str, ...] | None = None
        if catalog is not None and plan.mode == "single":
            tool = catalog.tool(plan.calls[0].tool)
            if tool is not None and tool.returns.kind == "array":
                shaped = tuple(dict.fromkeys((*(plan.output.fields or ()), *(tool.returns.properties or ()))))
        out = []
        for index, call in enumerate(plan.calls):
            if call.tool in missing:
                out.append(Behaviour(kind=missing[call.tool]))
                continue
            kind = self.choice(_BEHAVIOUR_KINDS)
            delay = self.rng.randint(0, max_delay) if kind in ("resolve", "reject") else 0
            if kind in ("resolve", "return"):
                value = self.rows(shaped) if shaped is not None and index == 0 else self.json_value()
                out.append(Behaviour(kind=kind, value=value, delay=delay))
            elif kind in ("reject", "throw"):
                out.append(Behaviour(kind=kind, delay=delay, failure=self.failure()))
            else:
                out.append(Behaviour(kind=kind))
        return tuple(out)
