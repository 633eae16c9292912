#!/usr/bin/env python3
"""compiler_slow.py -- an outside, plain, slow compiler for the Codemode
Conformance Kit, written from SPEC.md alone (Python 3.11, stdlib only).

Role: compiler (JSON Lines on stdin/stdout).
  {"plan": P, "tools": T}  ->  {"js": J}  or  {"diagnostic": D}
  anything else            ->  {"diagnostic": D}

Before each answer it sleeps a pseudo-random 0-300 ms drawn from a seeded
generator (seed: $COMPILER_SLOW_SEED, default 20240607), so runs are
reproducible.  The generated JavaScript is deliberately plain: async/await,
try/catch, Promise.allSettled, object literals with computed keys.

The module is importable: `respond(line_bytes)` answers one request line
without sleeping, and the catalog and plan validators are reusable
(planner_refuses.py uses them).
"""

import json
import os
import random
import sys
import time
import unicodedata

# ---------------------------------------------------------------------------
# JSON with number texts kept.


class Num:
    """A JSON number, kept as the text it was written with."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return f"Num({self.text!r})"


class BadRecord(Exception):
    pass


def _no_constants(name):
    raise BadRecord(f"{name} is not JSON")


def _pairs(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            # The kit never sends duplicate member names; such a text is
            # treated as unusable and answered with a diagnostic.
            raise BadRecord("duplicate member name")
        obj[key] = value
    return obj


def parse_line(raw):
    """Parse one request line (bytes).  Raises BadRecord when it is not one
    JSON text in UTF-8."""
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise BadRecord("not UTF-8") from exc
    try:
        return json.loads(
            text,
            parse_int=Num,
            parse_float=Num,
            parse_constant=_no_constants,
            object_pairs_hook=_pairs,
        )
    except BadRecord:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadRecord("not JSON") from exc


def is_obj(v):
    return isinstance(v, dict)


def is_arr(v):
    return isinstance(v, list)


def is_str(v):
    return isinstance(v, str)


def is_num(v):
    return isinstance(v, Num)


def is_bool(v):
    return v is True or v is False


# ---------------------------------------------------------------------------
# Finite and exact numbers, judged on the text.


def decimal_parts(text):
    """(negative, digits, exponent) with value (-1)^negative * digits * 10^exponent,
    digits without leading or trailing zeros ('' for zero)."""
    neg = text.startswith("-")
    body = text[1:] if neg else text
    mantissa, _, exp_text = body.replace("E", "e").partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    exp = int(exp_text or "0") - len(frac)
    if not digits:
        return (False, "", 0)
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    return (neg, stripped, exp)


def finite_and_exact(text):
    try:
        d = float(text)
    except OverflowError:
        return False
    if d in (float("inf"), float("-inf")):
        return False
    neg, digits, exp = decimal_parts(text)
    if not digits:
        return True
    if exp >= 0:
        if len(digits) + exp > 16:
            return False
        return int(digits) * 10**exp <= 2**53 - 1
    return decimal_parts(repr(d)) == (neg, digits, exp)


def integer_in(text, lo, hi):
    """The integer value of the number text when it is an integer in [lo, hi], else None."""
    neg, digits, exp = decimal_parts(text)
    if not digits:
        return 0 if lo <= 0 <= hi else None
    if exp < 0 or len(digits) + exp > 6:
        return None
    v = int(digits) * 10**exp
    if neg:
        v = -v
    return v if lo <= v <= hi else None


# ---------------------------------------------------------------------------
# IdentifierName (ECMAScript: ID_Start / ID_Continue, plus $ _ ZWNJ ZWJ).

_OTHER_ID_START = {0x1885, 0x1886, 0x2118, 0x212E, 0x309B, 0x309C}
_OTHER_ID_CONTINUE = {0x00B7, 0x0387, 0x19DA, 0x30FB, 0xFF65} | set(range(0x1369, 0x1372))
_PATTERN_SYNTAX_LETTERS = {0x2E2F}  # VERTICAL TILDE: Lm but Pattern_Syntax
_START_CATEGORIES = {"Lu", "Ll", "Lt", "Lm", "Lo", "Nl"}
_CONTINUE_CATEGORIES = {"Mn", "Mc", "Nd", "Pc"}


def _id_start(cp):
    if cp in _OTHER_ID_START:
        return True
    if 0xD800 <= cp <= 0xDFFF or cp in _PATTERN_SYNTAX_LETTERS:
        return False
    return unicodedata.category(chr(cp)) in _START_CATEGORIES


def _id_continue(cp):
    if _id_start(cp) or cp in _OTHER_ID_CONTINUE:
        return True
    if 0xD800 <= cp <= 0xDFFF:
        return False
    return unicodedata.category(chr(cp)) in _CONTINUE_CATEGORIES


def is_identifier_name(s):
    if not isinstance(s, str) or not s:
        return False
    cps = [ord(c) for c in s]
    if not (cps[0] in (0x24, 0x5F) or _id_start(cps[0])):
        return False
    return all(cp in (0x24, 0x200C, 0x200D) or _id_continue(cp) for cp in cps[1:])


RESERVED = frozenset(
    """await break case catch class const continue debugger default delete do
    else enum export extends false finally for function if implements import
    in instanceof interface let new null package private protected public
    return static super switch this throw true try typeof var void while with
    yield""".split()
)


# ---------------------------------------------------------------------------
# Validation: each function returns a reason (str) or None when valid.


def catalog_problem(tools):
    if not is_arr(tools):
        return "tools is not an array"
    if not 1 <= len(tools) <= 8:
        return "the catalog must have 1 to 8 entries (IN-COUNT)"
    names = []
    for entry in tools:
        if not is_obj(entry) or set(entry) != {"name", "arguments", "required", "returns"}:
            return "a catalog entry must have exactly name, arguments, required, returns (IN-KEYS)"
        name = entry["name"]
        if not is_identifier_name(name) or name in RESERVED:
            return "a tool name is not an IdentifierName or is a reserved word (IN-NAME)"
        names.append(name)
        args = entry["arguments"]
        if not is_obj(args) or len(args) > 4:
            return "arguments must be an object with at most 4 members (IN-ARGS)"
        for arg_name, arg_type in args.items():
            if not is_identifier_name(arg_name):
                return "an argument name is not an IdentifierName (IN-ARGS)"
            if not (is_str(arg_type) and arg_type in ("string", "number", "boolean")):
                return "an argument type is not string, number or boolean (IN-ARGS)"
        required = entry["required"]
        if not is_arr(required):
            return "required is not an array (IN-REQUIRED)"
        for r in required:
            if not is_str(r) or r not in args:
                return "required names an undeclared argument (IN-REQUIRED)"
        if len(set(required)) != len(required):
            return "required holds a name twice (IN-UNIQUE)"
        returns = entry["returns"]
        if not is_obj(returns):
            return "returns is not an object (IN-RETURNS)"
        if "kind" not in returns or not set(returns) <= {"kind", "properties"}:
            return "returns must have kind and optionally properties (IN-KEYS)"
        kind = returns["kind"]
        if not (is_str(kind) and kind in ("text", "object", "array")):
            return "returns.kind is not text, object or array (IN-RETURNS)"
        if "properties" in returns:
            props = returns["properties"]
            if kind == "text":
                return "properties given for kind text (IN-RETURNS)"
            if not is_arr(props) or not all(is_identifier_name(p) for p in props):
                return "properties is not an array of IdentifierNames (IN-RETURNS)"
            if len(set(props)) != len(props):
                return "properties holds a name twice (IN-UNIQUE)"
    if len(set(names)) != len(names):
        return "two tools have the same name (IN-UNIQUE)"
    return None


def plan_problem(plan, tools):
    """Assumes the catalog is valid."""
    # PL-SCHEMA
    if not is_obj(plan) or set(plan) != {"mode", "calls", "output"}:
        return "the plan must have exactly mode, calls, output (PL-SCHEMA)"
    mode = plan["mode"]
    if not (is_str(mode) and mode in ("single", "sequential", "parallel")):
        return "bad mode (PL-SCHEMA)"
    calls = plan["calls"]
    if not is_arr(calls) or not 1 <= len(calls) <= 3:
        return "calls must be an array of 1 to 3 calls (PL-SCHEMA)"
    for call in calls:
        if not is_obj(call) or set(call) != {"tool", "args"}:
            return "a call must have exactly tool and args (PL-SCHEMA)"
        if not is_str(call["tool"]):
            return "a call's tool is not a string (PL-SCHEMA)"
        args = call["args"]
        if not is_obj(args) or len(args) > 4:
            return "args must be an object with at most 4 members (PL-SCHEMA)"
        for value in args.values():
            if not (is_str(value) or is_num(value) or is_bool(value)):
                return "an argument value is not a string, number or boolean (PL-SCHEMA)"
    output = plan["output"]
    if not is_obj(output) or "kind" not in output or not set(output) <= {"kind", "fields", "limit"}:
        return "output must have kind and optionally fields and limit (PL-SCHEMA)"
    if not (is_str(output["kind"]) and output["kind"] in ("all", "last")):
        return "output.kind must be all or last (PL-SCHEMA)"
    if "fields" in output:
        fields = output["fields"]
        if (
            not is_arr(fields)
            or not 1 <= len(fields) <= 3
            or not all(is_str(f) for f in fields)
            or len(set(fields)) != len(fields)
        ):
            return "fields must be 1 to 3 unique strings (PL-SCHEMA)"
    if "limit" in output:
        limit = output["limit"]
        if not is_num(limit) or integer_in(limit.text, 0, 100) is None:
            return "limit must be an integer from 0 to 100 (PL-SCHEMA)"
    # PL-MODE
    if (mode == "single") != (len(calls) == 1):
        return "single needs 1 call, sequential and parallel 2 or 3 (PL-MODE)"
    # PL-TOOL, PL-ARGS
    catalog = {entry["name"]: entry for entry in tools}
    for call in calls:
        entry = catalog.get(call["tool"])
        if entry is None:
            return "a call names a tool not in the catalog (PL-TOOL)"
        declared = entry["arguments"]
        for arg_name, value in call["args"].items():
            if arg_name not in declared:
                return "an argument is not declared by its tool (PL-ARGS)"
            kind = declared[arg_name]
            if kind == "string" and not is_str(value):
                return "a string argument is not a string (PL-ARGS)"
            if kind == "boolean" and not is_bool(value):
                return "a boolean argument is not a boolean (PL-ARGS)"
            if kind == "number" and not (is_num(value) and finite_and_exact(value.text)):
                return "a number argument is not a finite and exact number (PL-ARGS)"
        for r in entry["required"]:
            if r not in call["args"]:
                return "a required argument is missing (PL-ARGS)"
    # PL-SHAPE
    if "fields" in output or "limit" in output:
        if mode != "single":
            return "fields and limit need mode single (PL-SHAPE)"
        returns = catalog[calls[0]["tool"]]["returns"]
        if returns["kind"] != "array":
            return "fields and limit need a tool returning array (PL-SHAPE)"
        props = returns.get("properties", [])
        for f in output.get("fields", []):
            if f not in props:
                return "a field is not a declared return property (PL-SHAPE)"
    return None


# ---------------------------------------------------------------------------
# Plain code generation.


def js_string(s):
    """A double-quoted JavaScript string literal for s, code unit for code
    unit (lone surrogates kept), pure ASCII."""
    data = s.encode("utf-16-le", "surrogatepass")
    out = ['"']
    for k in range(0, len(data), 2):
        unit = data[k] | (data[k + 1] << 8)
        if 0x20 <= unit < 0x7F and unit not in (0x22, 0x5C):
            out.append(chr(unit))
        else:
            out.append("\\u%04x" % unit)
    out.append('"')
    return "".join(out)


def js_value(v):
    if is_str(v):
        return js_string(v)
    if is_bool(v):
        return "true" if v else "false"
    return "(" + repr(float(v.text)) + ")"


def js_args(args):
    return "{" + ", ".join(f"[{js_string(k)}]: {js_value(v)}" for k, v in args.items()) + "}"


def generate(plan, tools):
    catalog = {entry["name"]: entry for entry in tools}
    mode = plan["mode"]
    calls = plan["calls"]
    output = plan["output"]
    lines = ['"use strict";']
    invocations = [f"tools[{js_string(c['tool'])}]({js_args(c['args'])})" for c in calls]
    if mode == "parallel":
        lines.append("const $started = [];")
        for inv in invocations:
            lines += [
                "try {",
                f"  $started.push({inv});",
                "} catch ($error) {",
                "  $started.push(Promise.reject($error));",
                "}",
            ]
        lines += [
            "const $settled = await Promise.allSettled($started);",
            "const $records = [];",
            "for (let $i = 0; $i < $settled.length; $i++) {",
            "  const $s = $settled[$i];",
            '  $records.push($s.status === "fulfilled" ? { ok: true, value: $s.value } : { ok: false, error: $s.reason });',
            "}",
        ]
    else:
        lines.append("const $records = [];")
        for inv in invocations:
            lines += [
                "try {",
                f"  $records.push({{ ok: true, value: await {inv} }});",
                "} catch ($error) {",
                "  $records.push({ ok: false, error: $error });",
                "}",
            ]
    shaped = mode == "single" and catalog[calls[0]["tool"]]["returns"]["kind"] == "array"
    if shaped:
        fields = output.get("fields")
        limit = integer_in(output["limit"].text, 0, 100) if "limit" in output else None
        lines += [
            "if ($records[0].ok) {",
            "  const $value = $records[0].value;",
            "  if (!Array.isArray($value)) {",
            '    $records[0] = { ok: false, error: new Error("shape error: the tool did not return an array") };',
            "  } else {",
        ]
        if fields is not None:
            has = " || ".join(
                f"!Object.prototype.hasOwnProperty.call($row, {js_string(f)})" for f in fields
            )
            projection = ", ".join(f"[{js_string(f)}]: $row[{js_string(f)}]" for f in fields)
            lines += [
                "    let $rows = [];",
                "    let $bad = false;",
                "    for (let $i = 0; $i < $value.length; $i++) {",
                "      const $row = $value[$i];",
                '      if (typeof $row !== "object" || $row === null || Array.isArray($row) || ' + has + ") {",
                "        $bad = true;",
                "        break;",
                "      }",
                f"      $rows.push({{ {projection} }});",
                "    }",
            ]
        else:
            lines += ["    let $rows = $value;", "    let $bad = false;"]
        if limit is not None:
            lines += [
                "    const $taken = [];",
                f"    for (let $i = 0; $i < $rows.length && $i < {limit}; $i++) $taken.push($rows[$i]);",
                "    $rows = $taken;",
            ]
        lines += [
            "    if ($bad) {",
            '      $records[0] = { ok: false, error: new Error("shape error: a row is not an object with every field") };',
            "    } else if ($rows !== $value) {",
            "      $records[0] = { ok: true, value: $rows };",
            "    }",
            "  }",
            "}",
        ]
    if output["kind"] == "all":
        lines.append("return $records;")
    else:
        lines.append("return $records[$records.length - 1];")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Requests.


def compile_request(req):
    """Answer a parsed compile request {plan, tools}."""
    tools = req["tools"]
    plan = req["plan"]
    why = catalog_problem(tools) or plan_problem(plan, tools)
    if why:
        return {"diagnostic": "invalid: " + why}
    return {"js": generate(plan, tools)}


def is_compile_request(req):
    return is_obj(req) and set(req) == {"plan", "tools"} and is_obj(req["plan"]) and is_arr(req["tools"])


def is_plan_request(req):
    return (
        is_obj(req) and set(req) == {"instruction", "tools"} and is_str(req["instruction"]) and is_arr(req["tools"])
    )


def respond(raw):
    """Answer one request line (bytes, without its LF) with a response dict."""
    try:
        req = parse_line(raw)
    except BadRecord as exc:
        return {"diagnostic": f"bad record: {exc}"}
    if not is_compile_request(req):
        return {"diagnostic": "bad record: this compiler takes only {plan, tools} requests"}
    try:
        return compile_request(req)
    except RecursionError:
        return {"diagnostic": "request too deeply nested"}


def encode(response):
    # ensure_ascii writes every non-ASCII code unit, lone surrogates included, as \u escapes.
    return (json.dumps(response, ensure_ascii=True) + "\n").encode("ascii")


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def serve(answer, before_each=None):
    """Read request lines from fd 0, answer each at once on fd 1, exit 0 on EOF."""
    pending = b""
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        pending += chunk
        while True:
            nl = pending.find(b"\n")
            if nl < 0:
                break
            line, pending = pending[:nl], pending[nl + 1 :]
            if before_each:
                before_each()
            write_all(1, encode(answer(line)))
    if pending:
        if before_each:
            before_each()
        write_all(1, encode(answer(pending)))


def main():
    rng = random.Random(int(os.environ.get("COMPILER_SLOW_SEED", "20240607")))
    try:
        serve(respond, before_each=lambda: time.sleep(rng.uniform(0.0, 0.3)))
    except BrokenPipeError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
