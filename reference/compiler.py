"""The plan→JavaScript compiler: a valid plan becomes an async-function body; an invalid one a diagnostic.

The body runs as ``new AsyncFunction("tools", js)(tools)`` (DESIGN §4). What it guarantees:

* every call yields a record, ``{ok: true, value}`` or ``{ok: false, error}``, whatever the tool does —
  resolve, reject, throw synchronously, or not exist; the function resolves once every started call
  has settled;
* parallel mode starts every call, in call order, before its first ``await`` and joins them with
  ``Promise.allSettled``; sequential mode starts call k+1 only after call k settled;
* ``all`` returns the records in call order, ``last`` the final call's record;
* a single call whose tool returns an array is shaped: a non-array value, or with ``fields`` a row that
  is not an object holding each field as an own property, becomes a shape error; rows are projected to
  fresh plain objects before ``limit`` takes the first rows.

Names and values are escaped mechanically: every string is emitted as a JSON string literal with every
non-ASCII character and ``<``, ``>``, ``&`` written as ``\\uXXXX``, so the output is pure ASCII, safe
inside ``<script>``, and independent of how the text is later re-encoded. Property keys are always
computed (``["__proto__"]: v``), which defines an own property and never sets a prototype. Numbers are
written in their shortest round-trip form. The output is deterministic: the same plan gives the same
bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reference.catalog import Catalog
from reference.plan import Plan, Value
from reference.violations import InvalidRecord

# Runtime helpers, emitted only when the plan needs them. They use nothing but `tools` and built-ins.
_SETTLE = """\
// Run one call to completion; every outcome becomes a record.
const settle = async (name, args) => {
  try {
    return { ok: true, value: await tools[name](args) };
  } catch (error) {
    return { ok: false, error };
  }
};"""

_START = """\
// Start one call now; a synchronous throw becomes a rejection.
const start = (name, args) => {
  try {
    return Promise.resolve(tools[name](args));
  } catch (error) {
    return Promise.reject(error);
  }
};"""

_RECORD = """\
// A Promise.allSettled outcome as a record.
const record = (outcome) => outcome.status === "fulfilled"
  ? { ok: true, value: outcome.value }
  : { ok: false, error: outcome.reason };"""

_SHAPE_HEAD = """\
// Shape the result of the single array call.
const shape = (result) => {
  if (!result.ok) {
    return result;
  }
  const rows = result.value;
  if (!Array.isArray(rows)) {
    return { ok: false, error: new Error("expected an array of rows, got " + (rows === null ? "null" : typeof rows)) };
  }"""

_PROJECT = """\
  const fields = [{fields}];
  const projected = [];
  for (let i = 0; i < rows.length; i += 1) {{
    const row = rows[i];
    if (row === null || typeof row !== "object" || Array.isArray(row)) {{
      return {{ ok: false, error: new Error("row " + i + " is not an object") }};
    }}
    const out = {{}};
    for (const field of fields) {{
      if (!Object.prototype.hasOwnProperty.call(row, field)) {{
        return {{ ok: false, error: new Error("row " + i + " has no own property " + JSON.stringify(field)) }};
      }}
      Object.defineProperty(out, field, {{ value: row[field], writable: true, enumerable: true, configurable: true }});
    }}
    projected.push(out);
  }}"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Compiled:
    """The outcome of compiling: ``js`` for a valid plan, else ``diagnostic``."""

    js: str | None = None
    diagnostic: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"js": self.js} if self.js is not None else {"diagnostic": self.diagnostic}


def compile_request(raw_plan: Any, raw_tools: Any) -> Compiled:
    """Validate catalog and plan (``IN-*``, ``PL-*``) and compile, or say why not (``CO-VALIDATE``)."""
    try:
        catalog = Catalog.from_json(raw_tools)
    except InvalidRecord as problem:
        return Compiled(diagnostic="invalid catalog: " + problem.diagnostic())
    try:
        plan = Plan.from_json(raw_plan, catalog)
    except InvalidRecord as problem:
        return Compiled(diagnostic="invalid plan: " + problem.diagnostic())
    return Compiled(js=compile_plan(plan, catalog))


def compile_plan(plan: Plan, catalog: Catalog) -> str:
    """The async-function body for a plan already validated against ``catalog``."""
    lines = ['"use strict";']
    shaped = plan.mode == "single" and _returns_array(plan, catalog)
    calls = [f"{js_string(c.tool)}, {js_object(c.args)}" for c in plan.calls]
    if plan.mode == "parallel":
        lines += [_START, _RECORD]
        lines.append(f"// {len(calls)} calls in parallel, all started before the first await.")
        lines.append("const outcomes = await Promise.allSettled([")
        lines += [f"  start({args})," for args in calls]
        lines.append("]);")
        lines.append("const results = outcomes.map(record);")
    else:
        lines.append(_SETTLE)
        if shaped:
            lines.append(_shape(plan.output.fields, plan.output.limit))
        lines.append(f"// {len(calls)} call{'s' if len(calls) > 1 else ''} in sequence, in mention order.")
        lines.append("const results = [];")
        wrap = "shape(await settle({}))" if shaped else "await settle({})"
        lines += [f"results.push({wrap.format(args)});" for args in calls]
    if plan.output.kind == "all":
        lines.append("return results;")
    else:
        lines.append("return results[results.length - 1];")
    return "\n".join(lines) + "\n"


def _returns_array(plan: Plan, catalog: Catalog) -> bool:
    tool = catalog.tool(plan.calls[0].tool)
    return tool is not None and tool.returns.kind == "array"


def _shape(fields: Sequence[str] | None, limit: int | None) -> str:
    parts = [_SHAPE_HEAD]
    rows = "rows"
    if fields is not None:
        parts.append(_PROJECT.format(fields=", ".join(js_string(f) for f in fields)))
        rows = "projected"
    if limit is not None:
        parts.append(f"  return {{ ok: true, value: {rows}.slice(0, {limit}) }};")
    else:
        parts.append(f"  return {{ ok: true, value: {rows} }};")
    parts.append("};")
    return "\n".join(parts)


def js_string(text: str) -> str:
    """A JavaScript string literal for ``text``: pure ASCII, lone surrogates kept as ``\\uD8xx``."""
    quoted = json.dumps(text, ensure_ascii=True)
    return quoted.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def js_value(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, int):
        return str(value)
    if value == 0:
        return "0"
    text = repr(float(value))  # shortest round-trip form, e.g. 0.1, 5e-324, 1e-07
    return text[:-2] if text.endswith(".0") else text


def js_object(pairs: Sequence[tuple[str, Value]]) -> str:
    """An object literal whose keys are computed, so ``__proto__`` is an own property like any other."""
    if not pairs:
        return "{}"
    return "{ " + ", ".join(f"[{js_string(k)}]: {js_value(v)}" for k, v in pairs) + " }"
