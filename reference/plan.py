"""Plans: frozen records, strict JSON (de)serialisation, and the ``PL-*`` structural clauses.

``PL-SCHEMA`` is judged by ``plan.schema.json`` through ``jsonschema``; the catalog-relative clauses
(``PL-MODE``, ``PL-TOOL``, ``PL-ARGS``, ``PL-SHAPE``) in code. ``validate_plan`` returns one violation per
broken clause; ``Plan.from_json`` returns a record only for a plan valid against its catalog.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from reference.catalog import Catalog
from reference.jsonio import is_exact_number, is_number
from reference.violations import InvalidRecord, Violation

Value = str | int | float | bool
MODES = ("single", "sequential", "parallel")


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    tool: str
    args: tuple[tuple[str, Value], ...]  # (argument name, value) in the plan's order

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "args": dict(self.args)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Output:
    kind: str
    fields: tuple[str, ...] | None = None
    limit: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.fields is not None:
            out["fields"] = list(self.fields)
        if self.limit is not None:
            out["limit"] = self.limit
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    mode: str
    calls: tuple[Call, ...]
    output: Output

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "calls": [call.to_json() for call in self.calls],
            "output": self.output.to_json(),
        }

    @classmethod
    def from_json(cls, raw: Any, catalog: Catalog) -> Plan:
        """The plan ``raw`` describes; raises :class:`InvalidRecord` naming every broken clause."""
        violations = validate_plan(raw, catalog)
        if violations:
            raise InvalidRecord(violations)
        output = raw["output"]
        return cls(
            mode=raw["mode"],
            calls=tuple(
                Call(tool=c["tool"], args=tuple((k, _normal(v)) for k, v in c["args"].items()))
                for c in raw["calls"]
            ),
            output=Output(
                kind=output["kind"],
                fields=tuple(output["fields"]) if "fields" in output else None,
                limit=int(output["limit"]) if "limit" in output else None,
            ),
        )


def _normal(value: Value) -> Value:
    # -0 is treated as 0; integer-valued floats stay floats only where JSON wrote them so
    if isinstance(value, float) and value == 0:
        return 0
    return value


@cache
def plan_schema() -> dict[str, Any]:
    """The plan's JSON Schema (``reference/plan.schema.json``)."""
    text = resources.files("reference").joinpath("plan.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> jsonschema.protocols.Validator:
    schema = plan_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate_plan(raw: Any, catalog: Catalog) -> list[Violation]:
    """One violation per broken ``PL-*`` clause (the first problem found for each), in clause order."""
    first: dict[str, Violation] = {}
    for violation in _plan_violations(raw, catalog):
        first.setdefault(violation.clause, violation)
    return list(first.values())


def schema_surely_valid(raw: Any) -> bool:
    """A fast, conservative pre-check: True only for plans that ``plan.schema.json`` accepts (the common
    case), so the full ``jsonschema`` validation, which finds and words the error, runs only when it may
    fail. Tested to agree with ``jsonschema`` in ``tests/test_plan.py``."""
    if type(raw) is not dict or raw.keys() != _PLAN_KEYS or raw["mode"] not in MODES:
        return False
    calls = raw["calls"]
    if type(calls) is not list or not 1 <= len(calls) <= 3:
        return False
    for call in calls:
        if type(call) is not dict or call.keys() != _CALL_KEYS or type(call["tool"]) is not str:
            return False
        args = call["args"]
        if type(args) is not dict or len(args) > 4:
            return False
        for value in args.values():
            if type(value) not in (str, int, float, bool) and not isinstance(value, float):
                return False
    output = raw["output"]
    if type(output) is not dict or "kind" not in output or output["kind"] not in ("all", "last"):
        return False
    if not output.keys() <= _OUTPUT_KEYS:
        return False
    if "fields" in output:
        fields = output["fields"]
        if type(fields) is not list or not 1 <= len(fields) <= 3 or len(set(map(repr, fields))) != len(fields):
            return False
        if any(type(f) is not str for f in fields):
            return False
    if "limit" in output:
        limit = output["limit"]
        if type(limit) is not int or not 0 <= limit <= 100:
            return False
    return True


_PLAN_KEYS = frozenset({"mode", "calls", "output"})
_CALL_KEYS = frozenset({"tool", "args"})
_OUTPUT_KEYS = frozenset({"kind", "fields", "limit"})


def _plan_violations(raw: Any, catalog: Catalog) -> Iterator[Violation]:
    error = None if schema_surely_valid(raw) else jsonschema.exceptions.best_match(_validator().iter_errors(raw))
    if error is not None:
        where = "plan" + "".join(f"[{p!r}]" for p in error.absolute_path)
        yield Violation(clause="PL-SCHEMA", message=f"{where}: {error.message}")
    if not isinstance(raw, dict):
        return
    calls = raw.get("calls")
    calls = [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    mode = raw.get("mode")
    if mode in MODES and isinstance(raw.get("calls"), list):
        n = len(raw["calls"])
        if (mode == "single") != (n == 1) or not 1 <= n <= 3:
            want = "exactly 1 call" if mode == "single" else "2-3 calls"
            yield Violation(clause="PL-MODE", message=f"{n} calls in {mode} mode (it needs {want})")
    for index, call in enumerate(calls):
        yield from _call_violations(call, index, catalog)
    output = raw.get("output")
    if isinstance(output, dict) and ("fields" in output or "limit" in output):
        yield from _shape_violations(mode, calls, output, catalog)


def _call_violations(call: dict[str, Any], index: int, catalog: Catalog) -> Iterator[Violation]:
    name = call.get("tool")
    if not isinstance(name, str):
        return
    tool = catalog.tool(name)
    if tool is None:
        yield Violation(clause="PL-TOOL", message=f"{name!r} in calls[{index}] is not a catalog tool")
        return
    args = call.get("args")
    if not isinstance(args, dict):
        return
    declared = dict(tool.arguments)
    for arg, value in args.items():
        kind = declared.get(arg)
        if kind is None:
            yield Violation(clause="PL-ARGS", message=f"{arg!r} in calls[{index}] is not an argument of {name!r}")
        elif not has_type(value, kind):
            yield Violation(
                clause="PL-ARGS", message=f"{value!r} for {name}.{arg} in calls[{index}] is not a {kind}"
            )
        elif kind == "number" and not is_exact_number(value):
            yield Violation(
                clause="PL-ARGS",
                message=f"{value!r} for {name}.{arg} in calls[{index}] is not an exact JavaScript number"
                + " (finite; integers within +/-(2^53-1); shortest round-trip decimals)",
            )
    for arg in tool.required:
        if arg not in args:
            yield Violation(
                clause="PL-ARGS", message=f"required argument {arg!r} of {name!r} is missing in calls[{index}]"
            )


def has_type(value: Any, kind: str) -> bool:
    """Whether a plan value is of the argument type ``kind`` (``reference.catalog.ARGUMENT_TYPES``)."""
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    return is_number(value)


def _shape_violations(
    mode: Any, calls: list[dict[str, Any]], output: dict[str, Any], catalog: Catalog
) -> Iterator[Violation]:
    tool = catalog.tool(calls[0].get("tool")) if len(calls) == 1 and isinstance(calls[0].get("tool"), str) else None
    if mode != "single" or len(calls) != 1:
        yield Violation(clause="PL-SHAPE", message="fields and limit are allowed only for a single call")
        return
    if tool is None:
        return
    if tool.returns.kind != "array":
        yield Violation(
            clause="PL-SHAPE",
            message=f"{tool.name!r} returns {tool.returns.kind}, and only an array result takes fields or limit",
        )
        return
    fields = output.get("fields")
    if isinstance(fields, list):
        declared = tool.returns.properties or ()
        for field in fields:
            if isinstance(field, str) and field not in declared:
                yield Violation(
                    clause="PL-SHAPE",
                    message=f"{field!r} in output.fields is not a declared property of {tool.name!r}",
                )
