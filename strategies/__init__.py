"""Hypothesis strategies for codemode catalogs, plans, tool behaviours and adversarial values.

Public and composable: use them in your own property tests of a planner or compiler::

    from hypothesis import given, strategies as st
    from strategies import catalogs, plans, tool_behaviours

    @given(st.data())
    def test_my_compiler(data):  # and for planners: instructions(), unsupported_requests(), ...
        catalog = data.draw(catalogs())
        plan = data.draw(plans(catalog))
        behaviours = data.draw(tool_behaviours(plan, catalog))
        ...

Every strategy takes keyword-only options, raises ``InvalidArgument`` for bad ones, and says in its
docstring which way it shrinks.
"""

from __future__ import annotations

from strategies._internal.behaviours import KINDS, Behaviour, Failure, failures, rows_for, tool_behaviours
from strategies._internal.catalogs import catalogs, invalid_catalogs, tools
from strategies._internal.errors import InvalidArgument
from strategies._internal.fragments import BREAKS as FRAGMENT_BREAKS
from strategies._internal.fragments import FragmentCase, broken_fragment_streams, fragment_streams
from strategies._internal.instructions import (
    AXES,
    SUPPORTED,
    TAGS,
    UNSUPPORTED,
    Instruction,
    adversarial_instructions,
    instruction_catalogs,
    instructions,
    permute_catalog,
    rename,
    substitute_strings,
    unsupported_requests,
)
from strategies._internal.plans import calls, invalid_plans, plans, values_for
from strategies._internal.values import (
    ADVERSARIAL_STRINGS,
    EDGE_NUMBERS,
    INEXACT_NUMBER_TEXTS,
    OBJECT_NAMES,
    ODD_IDENTIFIERS,
    identifier_names,
    json_values,
    numbers,
    strings,
    tame_names,
    tool_names,
)

__all__ = [
    "FRAGMENT_BREAKS",
    "FragmentCase",
    "broken_fragment_streams",
    "fragment_streams",
    "AXES",
    "SUPPORTED",
    "TAGS",
    "UNSUPPORTED",
    "Instruction",
    "adversarial_instructions",
    "instruction_catalogs",
    "instructions",
    "permute_catalog",
    "rename",
    "substitute_strings",
    "unsupported_requests",
    "ADVERSARIAL_STRINGS",
    "EDGE_NUMBERS",
    "INEXACT_NUMBER_TEXTS",
    "KINDS",
    "OBJECT_NAMES",
    "ODD_IDENTIFIERS",
    "Behaviour",
    "Failure",
    "InvalidArgument",
    "calls",
    "catalogs",
    "failures",
    "identifier_names",
    "invalid_catalogs",
    "invalid_plans",
    "json_values",
    "numbers",
    "plans",
    "rows_for",
    "strings",
    "tame_names",
    "tool_behaviours",
    "tool_names",
    "tools",
    "values_for",
]
