"""Faulty compilers, each the reference compiler with one seeded bug, and the clause that must catch it.

Run one as an implementation under test: ``python -m tests.faulty.compilers NAME``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from reference.catalog import Catalog
from reference.compiler import compile_plan, js_string, js_value
from reference.plan import Call, Output, Plan, validate_plan
from reference.protocol import bad_record, request_kind, serve
from reference.violations import InvalidRecord

Compiler = Callable[[Plan, Catalog], str]
FAULTY: dict[str, tuple[str, Compiler]] = {}


def faulty(name: str, clause: str) -> Callable[[Compiler], Compiler]:
    def register(fn: Compiler) -> Compiler:
        FAULTY[name] = (clause, fn)
        return fn

    return register


@faulty("stray-brace", "JS-FORM")
def stray_brace(plan: Plan, catalog: Catalog) -> str:
    """A three-call plan gets an unbalanced brace: the body no longer parses."""
    js = compile_plan(plan, catalog)
    return js + "}\n" if len(plan.calls) == 3 else js


@faulty("rejects-empty", "JS-FORM")
def rejects_empty(plan: Plan, catalog: Catalog) -> str:
    """A plan whose calls all take no arguments throws instead of resolving."""
    js = compile_plan(plan, catalog)
    if all(not c.args for c in plan.calls) and len(plan.calls) > 1:
        return js.replace("return results", 'throw new Error("empty")', 1)
    return js


@faulty("dedupe-calls", "JS-CALLS")
def dedupe_calls(plan: Plan, catalog: Catalog) -> str:
    """A repeated tool is called once and its record reused."""
    seen: dict[str, int] = {}
    keep: list[Call] = []
    index: list[int] = []
    for call in plan.calls:
        if call.tool not in seen:
            seen[call.tool] = len(keep)
            keep.append(call)
        index.append(seen[call.tool])
    if len(keep) == len(plan.calls):
        return compile_plan(plan, catalog)
    mode = "single" if len(keep) == 1 else plan.mode
    js = compile_plan(Plan(mode=mode, calls=tuple(keep), output=Output(kind="all")), catalog)
    body = js.replace("return results;", "")
    pick = "[" + ", ".join(f"results[{i}]" for i in index) + "]"
    tail = f"return {pick};" if plan.output.kind == "all" else f"return {pick}[{len(index) - 1}];"
    return body + tail + "\n"


@faulty("two-arguments", "JS-CALLS")
def two_arguments(plan: Plan, catalog: Catalog) -> str:
    """Every tool also receives the tools object."""
    return compile_plan(plan, catalog).replace("tools[name](args)", "tools[name](args, tools)")


@faulty("staggered-parallel", "JS-PARALLEL")
def staggered_parallel(plan: Plan, catalog: Catalog) -> str:
    """Parallel calls start one microtask late, after the body first awaits."""
    return compile_plan(plan, catalog).replace(
        "    return Promise.resolve(tools[name](args));",
        "    return Promise.resolve(null).then(() => tools[name](args));",
    )


@faulty("sequential-as-parallel", "JS-SEQUENTIAL")
def sequential_as_parallel(plan: Plan, catalog: Catalog) -> str:
    """Sequential plans run in parallel."""
    if plan.mode == "sequential":
        plan = Plan(mode="parallel", calls=plan.calls, output=plan.output)
    return compile_plan(plan, catalog)


@faulty("promise-all", "JS-AWAIT")
def promise_all(plan: Plan, catalog: Catalog) -> str:
    """Parallel mode uses Promise.all and returns as soon as one call rejects."""
    if plan.mode != "parallel":
        return compile_plan(plan, catalog)
    calls = ", ".join(f"tools[{js_string(c.tool)}]({_args(c)})" for c in plan.calls)
    n = len(plan.calls)
    out = "records" if plan.output.kind == "all" else f"records[{n - 1}]"
    return f"""
let records;
try {{
  const values = await Promise.all([{calls}].map((p) => Promise.resolve(p)));
  records = values.map((value) => ({{ ok: true, value }}));
}} catch (error) {{
  records = Array.from({{ length: {n} }}, () => ({{ ok: false, error }}));
}}
return {out};
"""


@faulty("sync-throw-escapes", "JS-SYNC-THROW")
def sync_throw_escapes(plan: Plan, catalog: Catalog) -> str:
    """A synchronous throw escapes the array literal given to Promise.allSettled."""
    js = compile_plan(plan, catalog)
    if plan.mode != "parallel":
        return js
    return re.sub(
        r"const start = \(name, args\) => \{.*?\n\};",
        "const start = (name, args) => Promise.resolve(tools[name](args));",
        js,
        flags=re.S,
    )


@faulty("record-extra-key", "JS-RECORD")
def record_extra_key(plan: Plan, catalog: Catalog) -> str:
    """Fulfilled records also carry ``error: null``."""
    js = compile_plan(plan, catalog)
    js = js.replace("return { ok: true, value: await tools[name](args) };", "return { ok: true, value: await tools[name](args), error: null };")
    return js.replace("? { ok: true, value: outcome.value }", "? { ok: true, value: outcome.value, error: null }")


@faulty("completion-order", "JS-ALL")
def completion_order(plan: Plan, catalog: Catalog) -> str:
    """``all`` lists parallel records in the order the calls finished."""
    js = compile_plan(plan, catalog)
    if plan.mode != "parallel" or plan.output.kind != "all":
        return js
    js = js.replace("const outcomes = await Promise.allSettled([", "const finished = [];\nconst outcomes = await Promise.allSettled([")
    js = js.replace("  start(", "  track(start(")
    js = js.replace("}),\n", "})),\n")
    js = js.replace(
        "// A Promise.allSettled outcome as a record.",
        "const track = (p) => p.then((v) => { finished.push({ status: \"fulfilled\", value: v }); }, (e) => { finished.push({ status: \"rejected\", reason: e }); });\n// A Promise.allSettled outcome as a record.",
    )
    return js.replace("const results = outcomes.map(record);", "const results = finished.map(record);")


@faulty("last-to-finish", "JS-LAST")
def last_to_finish(plan: Plan, catalog: Catalog) -> str:
    """``last`` returns the record of the parallel call that finished last."""
    if plan.mode != "parallel" or plan.output.kind != "last":
        return compile_plan(plan, catalog)
    js = completion_order(Plan(mode=plan.mode, calls=plan.calls, output=Output(kind="all")), catalog)
    return js.replace("return results;", "return results[results.length - 1];")


@faulty("skip-bad-rows", "JS-SHAPE")
def skip_bad_rows(plan: Plan, catalog: Catalog) -> str:
    """Rows without a field are skipped instead of reported as a shape error."""
    js = compile_plan(plan, catalog)
    js = js.replace(
        '      return { ok: false, error: new Error("row " + i + " is not an object") };',
        "      continue;",
    )
    return re.sub(r'        return \{ ok: false, error: new Error\("row " \+ i \+ " has no own property.*?\n', "        continue;\n", js)


@faulty("assign-fields", "JS-PROJECT")
def assign_fields(plan: Plan, catalog: Catalog) -> str:
    """Projection assigns ``out[field] = row[field]``, so a field named ``__proto__`` sets a prototype."""
    return compile_plan(plan, catalog).replace(
        "      Object.defineProperty(out, field, { value: row[field], writable: true, enumerable: true, configurable: true });",
        "      out[field] = row[field];",
    )


@faulty("limit-first", "JS-LIMIT")
def limit_first(plan: Plan, catalog: Catalog) -> str:
    """The limit is applied before projection, so bad rows past it go unnoticed."""
    js = compile_plan(plan, catalog)
    if plan.output.limit is None or plan.output.fields is None:
        return js
    js = js.replace("  const rows = result.value;", f"  const rows = Array.isArray(result.value) ? result.value.slice(0, {plan.output.limit}) : result.value;")
    return js


@faulty("reverse-start", "JS-ORDER")
def reverse_start(plan: Plan, catalog: Catalog) -> str:
    """Parallel calls start last-to-first (records still come back in call order)."""
    js = compile_plan(plan, catalog)
    if plan.mode != "parallel":
        return js
    starts = re.findall(r"^  start\((.*)\),$", js, flags=re.M)
    n = len(starts)
    started = "\n".join(f"const p{i} = start({starts[i]});" for i in reversed(range(n)))
    js = re.sub(r"const outcomes = await Promise.allSettled\(\[\n.*?\]\);", "@@", js, flags=re.S)
    return js.replace("@@", started + "\nconst outcomes = await Promise.allSettled([" + ", ".join(f"p{i}" for i in range(n)) + "]);")


@faulty("naive-quotes", "JS-ESCAPE")
def naive_quotes(plan: Plan, catalog: Catalog) -> str:
    """Strings are quoted by wrapping them in double quotes, nothing escaped."""
    js = compile_plan(plan, catalog)
    for call in plan.calls:
        for _, value in call.args:
            if isinstance(value, str):
                js = js.replace(js_string(value), '"' + value + '"')
    return js


@faulty("proto-literal", "JS-ESCAPE")
def proto_literal(plan: Plan, catalog: Catalog) -> str:
    """Argument objects are plain literals, so an argument named ``__proto__`` sets a prototype."""
    js = compile_plan(plan, catalog)
    return re.sub(r'\[("(?:[^"\\]|\\.)*")\]: ', r"\1: ", js)


@faulty("global-write", "JS-PURE")
def global_write(plan: Plan, catalog: Catalog) -> str:
    """The body leaves a global behind."""
    return "globalThis.lastPlan = " + json.dumps(plan.mode) + ";\n" + compile_plan(plan, catalog)


@faulty("prototype-patch", "JS-PURE")
def prototype_patch(plan: Plan, catalog: Catalog) -> str:
    """The body adds a helper to Array.prototype, quietly, when the plan has 3 calls."""
    js = compile_plan(plan, catalog)
    if len(plan.calls) != 3:
        return js
    return "try { Array.prototype.lastItem = function () { return this[this.length - 1]; }; } catch (e) {}\n" + js


@faulty("inherited-fields", "JS-SHAPE")
def inherited_fields(plan: Plan, catalog: Catalog) -> str:
    """Rows are checked with ``field in row``, so an inherited ``toString`` passes for a field."""
    return compile_plan(plan, catalog).replace(
        "if (!Object.prototype.hasOwnProperty.call(row, field)) {", "if (!(field in row)) {"
    )


@faulty("typeof-array", "JS-SHAPE")
def typeof_array(plan: Plan, catalog: Catalog) -> str:
    """The array check is ``typeof rows === "object"``, so a plain object passes for rows."""
    return compile_plan(plan, catalog).replace(
        "  if (!Array.isArray(rows)) {", '  if (rows === null || typeof rows !== "object") {'
    )


@faulty("last-is-first", "JS-LAST")
def last_is_first(plan: Plan, catalog: Catalog) -> str:
    """``last`` of a three-call plan returns the first record."""
    js = compile_plan(plan, catalog)
    if len(plan.calls) == 3 and plan.output.kind == "last":
        js = js.replace("return results[results.length - 1];", "return results[0];")
    return js


@faulty("lossy-numbers", "JS-ESCAPE")
def lossy_numbers(plan: Plan, catalog: Catalog) -> str:
    """Fractional numbers are written with 15 significant digits, which is not always the same double."""
    js = compile_plan(plan, catalog)
    for call in plan.calls:
        for _, value in call.args:
            if isinstance(value, float) and not value.is_integer():
                js = js.replace(f": {js_value(value)}", f": {value:.15g}")
    return js


def _args(call: Call) -> str:
    return "{ " + ", ".join(f"[{js_string(k)}]: {js_value(v)}" for k, v in call.args) + " }" if call.args else "{}"


# --- the one that does not validate ------------------------------------------------------------------


def lenient_compile(raw_plan: Any, raw_tools: Any) -> dict[str, Any]:
    """CO-VALIDATE: compiles plans whose only problems are their arguments (inexact numbers included)."""
    try:
        catalog = Catalog.from_json(raw_tools)
    except InvalidRecord as err:
        return {"diagnostic": err.diagnostic()}
    problems = validate_plan(raw_plan, catalog)
    if any(v.clause != "PL-ARGS" for v in problems):
        return {"diagnostic": "; ".join(v.message for v in problems)}
    plan = Plan(
        mode=raw_plan["mode"],
        calls=tuple(Call(tool=c["tool"], args=tuple(c["args"].items())) for c in raw_plan["calls"]),
        output=Output(
            kind=raw_plan["output"]["kind"],
            fields=tuple(raw_plan["output"]["fields"]) if "fields" in raw_plan["output"] else None,
            limit=raw_plan["output"].get("limit"),
        ),
    )
    return {"js": compile_plan(plan, catalog)}


def accepts_four(raw_plan: Any, raw_tools: Any) -> dict[str, Any]:
    """CO-VALIDATE: takes a plan of 4 calls (in sequential or parallel mode) as if 2-3 were allowed."""
    try:
        catalog = Catalog.from_json(raw_tools)
    except InvalidRecord as err:
        return {"diagnostic": err.diagnostic()}
    if isinstance(raw_plan, dict) and isinstance(raw_plan.get("calls"), list) and len(raw_plan["calls"]) == 4:
        trimmed = dict(raw_plan, calls=raw_plan["calls"][:3])
        if not validate_plan(trimmed, catalog):
            plan = Plan.from_json(trimmed, catalog)
            four = Plan(mode=plan.mode, calls=(*plan.calls, plan.calls[0]), output=plan.output)
            return {"js": compile_plan(four, catalog)}
    try:
        return {"js": compile_plan(Plan.from_json(raw_plan, catalog), catalog)}
    except InvalidRecord as err:
        return {"diagnostic": err.diagnostic()}


def handler_for(name: str) -> Callable[[Any], dict[str, Any]]:
    def handle(request: Any) -> dict[str, Any]:
        if request_kind(request) != "compile":
            return {"diagnostic": bad_record(request)}
        if name in LENIENT:
            return LENIENT[name](request["plan"], request["tools"])
        try:
            catalog = Catalog.from_json(request["tools"])
            plan = Plan.from_json(request["plan"], catalog)
        except InvalidRecord as err:
            return {"diagnostic": err.diagnostic()}
        return {"js": FAULTY[name][1](plan, catalog)}

    return handle


LENIENT = {"lenient": lenient_compile, "accepts-four": accepts_four}
CLAUSE_OF = {**{name: clause for name, (clause, _) in FAULTY.items()}, **{name: "CO-VALIDATE" for name in LENIENT}}


if __name__ == "__main__":
    sys.exit(serve(handler_for(sys.argv[1])))
