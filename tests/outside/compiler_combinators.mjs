#!/usr/bin/env node
// compiler_combinators.mjs -- an outside, deliberately unusual compiler for the
// Codemode Conformance Kit, written from SPEC.md alone.
//
// Role: compiler (JSON Lines on stdin/stdout).
//   {"plan": P, "tools": T}  ->  {"js": J}  or  {"diagnostic": D}
//   anything else            ->  {"diagnostic": D}
//
// The generated body is unusual on purpose: no async/await at all (the body
// returns a promise built from Promise.prototype.then chains), a generic
// interpreter over a data table, every name and string value stored as an
// array of UTF-16 code units and rebuilt with String.fromCharCode, every number
// stored as the two 32-bit halves of its IEEE-754 bits, argument objects and
// records with a null prototype filled with Object.defineProperty, helper
// function declarations placed after the `return` (they are hoisted), failure
// records whose keys come in the order error, ok, sequential/single calls
// that start in a microtask rather than synchronously, and shaped results that
// are always a fresh array (even with neither fields nor limit).

import fs from "node:fs";

// ---------------------------------------------------------------------------
// JSON parser that keeps number texts.  Objects become Maps (so names such as
// "__proto__" are ordinary keys); numbers become Num instances holding the
// text exactly as written.  Duplicate member names make the text unusable
// (the kit never sends them; a request holding them is answered with a
// diagnostic).

class Num {
  constructor(text) {
    this.text = text;
  }
}

class JsonError extends Error {}

const NUMBER_RE = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const MAX_DEPTH = 256;

function parseJson(text) {
  let i = 0;
  const n = text.length;
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const fail = (why) => {
    throw new JsonError(`${why} at offset ${i}`);
  };
  const hex4 = () => {
    if (i + 4 > n) fail("short \\u escape");
    const h = text.slice(i, i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) fail("bad \\u escape");
    i += 4;
    return parseInt(h, 16);
  };
  const str = () => {
    i++; // opening quote
    let out = "";
    let run = i;
    for (;;) {
      if (i >= n) fail("unterminated string");
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(run, i);
        i++;
        return out;
      }
      if (c < 0x20) fail("control character in string");
      if (c === 0x5c) {
        out += text.slice(run, i);
        i++;
        if (i >= n) fail("unterminated escape");
        const e = text[i];
        i++;
        switch (e) {
          case '"': out += '"'; break;
          case "\\": out += "\\"; break;
          case "/": out += "/"; break;
          case "b": out += "\b"; break;
          case "f": out += "\f"; break;
          case "n": out += "\n"; break;
          case "r": out += "\r"; break;
          case "t": out += "\t"; break;
          case "u": out += String.fromCharCode(hex4()); break;
          default: fail("bad escape");
        }
        run = i;
        continue;
      }
      i++;
    }
  };
  const value = (depth) => {
    if (depth > MAX_DEPTH) fail("nesting too deep");
    ws();
    if (i >= n) fail("unexpected end");
    const c = text[i];
    if (c === "{") {
      i++;
      const m = new Map();
      ws();
      if (text[i] === "}") {
        i++;
        return m;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected member name");
        const k = str();
        if (m.has(k)) fail("duplicate member name");
        ws();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        m.set(k, value(depth + 1));
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return m;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const a = [];
      ws();
      if (text[i] === "]") {
        i++;
        return a;
      }
      for (;;) {
        a.push(value(depth + 1));
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return a;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]]) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    NUMBER_RE.lastIndex = i;
    const m = NUMBER_RE.exec(text);
    if (m) {
      i += m[0].length;
      return new Num(m[0]);
    }
    fail("unexpected character");
  };
  const v = value(0);
  ws();
  if (i !== n) fail("trailing text");
  return v;
}

// ---------------------------------------------------------------------------
// Numbers judged on their text ("finite and exact", SPEC.md Definitions/Values).

function decimalParts(text) {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(text);
  if (!m) throw new Error(`not a decimal: ${text}`);
  const frac = m[3] || "";
  let digits = (m[2] + frac).replace(/^0+/, "");
  let exp = BigInt(m[4] || "0") - BigInt(frac.length);
  if (digits === "") return { neg: false, digits: "", exp: 0n };
  const trimmed = digits.replace(/0+$/, "");
  exp += BigInt(digits.length - trimmed.length);
  digits = trimmed;
  return { neg: m[1] === "-", digits, exp };
}

function isFiniteAndExact(text) {
  const d = Number(text);
  if (!Number.isFinite(d)) return false;
  const p = decimalParts(text);
  if (p.digits === "") return true; // a zero, of any sign
  if (p.exp >= 0n) {
    // an integer: |x| <= 2^53 - 1
    if (BigInt(p.digits.length) + p.exp > 16n) return false;
    return BigInt(p.digits) * 10n ** p.exp <= 9007199254740991n;
  }
  const q = decimalParts(String(d)); // shortest round-trip form of the double
  return q.neg === p.neg && q.digits === p.digits && q.exp === p.exp;
}

// The integer value of a number text if it is an integer in [lo, hi], else null.
function smallInteger(text, lo, hi) {
  const p = decimalParts(text);
  if (p.digits === "") return lo <= 0 && 0 <= hi ? 0 : null;
  if (p.exp < 0n) return null;
  if (BigInt(p.digits.length) + p.exp > 6n) return null;
  let v = Number(BigInt(p.digits) * 10n ** p.exp);
  if (p.neg) v = -v;
  return lo <= v && v <= hi ? v : null;
}

// ---------------------------------------------------------------------------
// Names.

const IDENTIFIER_NAME = /^[\p{ID_Start}$_][\p{ID_Continue}$\u200C\u200D]*$/u;
const RESERVED = new Set(
  (
    "await break case catch class const continue debugger default delete do " +
    "else enum export extends false finally for function if implements import " +
    "in instanceof interface let new null package private protected public " +
    "return static super switch this throw true try typeof var void while with yield"
  ).split(" "),
);

const isIdentifierName = (s) => typeof s === "string" && IDENTIFIER_NAME.test(s);

// ---------------------------------------------------------------------------
// Validation.  Each check returns a reason string, or null when valid.

const isObj = (v) => v instanceof Map;
const isArr = (v) => Array.isArray(v);
const isStr = (v) => typeof v === "string";
const isNum = (v) => v instanceof Num;
const isBool = (v) => v === true || v === false;
const sameKeys = (m, required, optional = []) => {
  for (const k of required) if (!m.has(k)) return false;
  for (const k of m.keys()) if (!required.includes(k) && !optional.includes(k)) return false;
  return true;
};
const unique = (arr) => new Set(arr).size === arr.length;

function catalogProblem(tools) {
  if (!isArr(tools)) return "IN-COUNT: tools is not an array";
  if (tools.length < 1 || tools.length > 8) return "IN-COUNT: the catalog must have 1 to 8 entries";
  const seen = new Set();
  for (const e of tools) {
    if (!isObj(e) || !sameKeys(e, ["name", "arguments", "required", "returns"]))
      return "IN-KEYS: a catalog entry must have exactly name, arguments, required, returns";
    const name = e.get("name");
    if (!isIdentifierName(name) || RESERVED.has(name))
      return "IN-NAME: a tool name must be an IdentifierName and not a reserved word";
    if (seen.has(name)) return "IN-UNIQUE: duplicate tool name";
    seen.add(name);
    const args = e.get("arguments");
    if (!isObj(args) || args.size > 4) return "IN-ARGS: arguments must be an object of at most 4 members";
    for (const [k, t] of args) {
      if (!isIdentifierName(k)) return "IN-ARGS: argument names must be IdentifierNames";
      if (t !== "string" && t !== "number" && t !== "boolean")
        return "IN-ARGS: argument types must be string, number or boolean";
    }
    const req = e.get("required");
    if (!isArr(req)) return "IN-REQUIRED: required must be an array";
    for (const r of req) {
      if (!isStr(r) || !args.has(r)) return "IN-REQUIRED: required names a missing argument";
    }
    if (!unique(req)) return "IN-UNIQUE: duplicate required entry";
    const ret = e.get("returns");
    if (!isObj(ret)) return "IN-RETURNS: returns must be an object";
    if (!sameKeys(ret, ["kind"], ["properties"]))
      return "IN-KEYS: returns must have kind and optionally properties";
    const kind = ret.get("kind");
    if (kind !== "text" && kind !== "object" && kind !== "array") return "IN-RETURNS: bad return kind";
    if (ret.has("properties")) {
      if (kind === "text") return "IN-RETURNS: properties with kind text";
      const props = ret.get("properties");
      if (!isArr(props) || !props.every(isIdentifierName))
        return "IN-RETURNS: properties must be an array of IdentifierNames";
      if (!unique(props)) return "IN-UNIQUE: duplicate return property";
    }
  }
  return null;
}

function planProblem(plan, tools) {
  // PL-SCHEMA
  if (!isObj(plan) || !sameKeys(plan, ["mode", "calls", "output"])) return "PL-SCHEMA: plan members";
  const mode = plan.get("mode");
  if (mode !== "single" && mode !== "sequential" && mode !== "parallel") return "PL-SCHEMA: mode";
  const calls = plan.get("calls");
  if (!isArr(calls) || calls.length < 1 || calls.length > 3) return "PL-SCHEMA: calls";
  for (const c of calls) {
    if (!isObj(c) || !sameKeys(c, ["tool", "args"])) return "PL-SCHEMA: call members";
    if (!isStr(c.get("tool"))) return "PL-SCHEMA: tool";
    const a = c.get("args");
    if (!isObj(a) || a.size > 4) return "PL-SCHEMA: args";
    for (const v of a.values()) if (!isStr(v) && !isNum(v) && !isBool(v)) return "PL-SCHEMA: arg value";
  }
  const out = plan.get("output");
  if (!isObj(out) || !sameKeys(out, ["kind"], ["fields", "limit"])) return "PL-SCHEMA: output members";
  if (out.get("kind") !== "all" && out.get("kind") !== "last") return "PL-SCHEMA: output kind";
  if (out.has("fields")) {
    const f = out.get("fields");
    if (!isArr(f) || f.length < 1 || f.length > 3 || !f.every(isStr) || !unique(f))
      return "PL-SCHEMA: fields";
  }
  if (out.has("limit")) {
    const l = out.get("limit");
    if (!isNum(l) || smallInteger(l.text, 0, 100) === null) return "PL-SCHEMA: limit";
  }
  // PL-MODE
  if ((mode === "single") !== (calls.length === 1)) return "PL-MODE: call count";
  // PL-TOOL, PL-ARGS
  const byName = new Map(tools.map((e) => [e.get("name"), e]));
  for (const c of calls) {
    const entry = byName.get(c.get("tool"));
    if (!entry) return "PL-TOOL: unknown tool";
    const decl = entry.get("arguments");
    const a = c.get("args");
    for (const [k, v] of a) {
      if (!decl.has(k)) return "PL-ARGS: undeclared argument";
      const t = decl.get(k);
      if (t === "string" && !isStr(v)) return "PL-ARGS: expected a string";
      if (t === "boolean" && !isBool(v)) return "PL-ARGS: expected a boolean";
      if (t === "number" && !(isNum(v) && isFiniteAndExact(v.text)))
        return "PL-ARGS: expected a finite and exact number";
    }
    for (const r of entry.get("required")) if (!a.has(r)) return "PL-ARGS: missing required argument";
  }
  // PL-SHAPE
  if (out.has("fields") || out.has("limit")) {
    if (mode !== "single") return "PL-SHAPE: fields/limit need mode single";
    const ret = byName.get(calls[0].get("tool")).get("returns");
    if (ret.get("kind") !== "array") return "PL-SHAPE: fields/limit need an array tool";
    if (out.has("fields")) {
      const props = ret.has("properties") ? ret.get("properties") : [];
      for (const f of out.get("fields")) if (!props.includes(f)) return "PL-SHAPE: undeclared field";
    }
  }
  return null;
}

// ---------------------------------------------------------------------------
// Code generation.

const units = (s) => {
  const a = [];
  for (let k = 0; k < s.length; k++) a.push(s.charCodeAt(k));
  return `[${a.join(",")}]`;
};

const bits = (text) => {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, Number(text));
  return `${dv.getUint32(0)},${dv.getUint32(4)}`;
};

const encodeValue = (v) => {
  if (isStr(v)) return `[0,${units(v)}]`;
  if (isNum(v)) return `[1,${bits(v.text)}]`;
  return `[2,${v ? 1 : 0}]`;
};

// The runtime: function declarations only, so that they are hoisted above the
// `return` that precedes them.  Names start with U+01C2 (a letter), which no
// JavaScript global uses, so nothing shadows `tools` or a built-in.
const RUNTIME = `
function \u01C2text(c) {
  let s = "";
  for (let i = 0; i < c.length; i += 2048) s = s + String.fromCharCode.apply(undefined, c.slice(i, i + 2048));
  return s;
}
function \u01C2number(hi, lo) {
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, hi);
  view.setUint32(4, lo);
  return view.getFloat64(0);
}
function \u01C2value(v) {
  return v[0] === 0 ? \u01C2text(v[1]) : v[0] === 1 ? \u01C2number(v[1], v[2]) : v[1] === 1;
}
function \u01C2prop(o, k, v) {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  return o;
}
function \u01C2args(list) {
  const o = Object.create(null);
  for (let i = 0; i < list.length; i++) \u01C2prop(o, \u01C2text(list[i][0]), \u01C2value(list[i][1]));
  return o;
}
function \u01C2won(value) {
  return \u01C2prop(\u01C2prop(Object.create(null), "ok", true), "value", value);
}
function \u01C2lost(error) {
  return \u01C2prop(\u01C2prop(Object.create(null), "error", error), "ok", false);
}
function \u01C2start(call) {
  let pending;
  try {
    pending = tools[\u01C2text(call[0])](\u01C2args(call[1]));
  } catch (thrown) {
    return Promise.resolve(\u01C2lost(thrown));
  }
  return Promise.resolve(pending).then(\u01C2won, \u01C2lost);
}
function \u01C2shape(record, spec) {
  if (record.ok !== true) return record;
  const rows = record.value;
  if (!Array.isArray(rows)) return \u01C2lost(new Error("shape error: the result is not an array"));
  let out = [];
  if (spec[0] === null) {
    // A fresh array holding every row, in order (never the tool's own array).
    for (let i = 0; i < rows.length; i++) out.push(rows[i]);
  } else {
    const names = [];
    for (let j = 0; j < spec[0].length; j++) names.push(\u01C2text(spec[0][j]));
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      if (typeof row !== "object" || row === null || Array.isArray(row))
        return \u01C2lost(new Error("shape error: row " + i + " is not an object"));
      const fresh = {};
      for (let j = 0; j < names.length; j++) {
        if (!Object.prototype.hasOwnProperty.call(row, names[j]))
          return \u01C2lost(new Error("shape error: row " + i + " lacks a field"));
        \u01C2prop(fresh, names[j], row[names[j]]);
      }
      out.push(fresh);
    }
  }
  if (spec[1] >= 0) {
    const cut = [];
    for (let i = 0; i < out.length && i < spec[1]; i++) cut.push(out[i]);
    out = cut;
  }
  return \u01C2won(out);
}
function \u01C2run(table) {
  const calls = table[3];
  let settled;
  if (table[0] === 2) {
    const started = [];
    for (let i = 0; i < calls.length; i++) started.push(\u01C2start(calls[i]));
    settled = Promise.all(started);
  } else {
    const records = [];
    settled = calls
      .reduce(function (chain, call) {
        return chain
          .then(function () {
            return \u01C2start(call);
          })
          .then(function (record) {
            records.push(record);
          });
      }, Promise.resolve())
      .then(function () {
        return records;
      });
  }
  return settled.then(function (records) {
    if (table[2] !== null) records = [\u01C2shape(records[0], table[2])];
    return table[1] === 0 ? records : records[records.length - 1];
  });
}`;

function generate(plan, tools) {
  const byName = new Map(tools.map((e) => [e.get("name"), e]));
  const mode = { single: 0, sequential: 1, parallel: 2 }[plan.get("mode")];
  const out = plan.get("output");
  const calls = plan.get("calls");
  let shape = "null";
  if (mode === 0 && byName.get(calls[0].get("tool")).get("returns").get("kind") === "array") {
    const fields = out.has("fields") ? `[${out.get("fields").map(units).join(",")}]` : "null";
    const limit = out.has("limit") ? smallInteger(out.get("limit").text, 0, 100) : -1;
    shape = `[${fields},${limit}]`;
  }
  const callRows = calls.map((c) => {
    const args = [...c.get("args")].map(([k, v]) => `[${units(k)},${encodeValue(v)}]`);
    return `[${units(c.get("tool"))},[${args.join(",")}]]`;
  });
  const table = `[${mode},${out.get("kind") === "all" ? 0 : 1},${shape},[${callRows.join(",")}]]`;
  return `"use strict";\nreturn \u01C2run(\u01C2table());\nfunction \u01C2table() {\n  return ${table};\n}${RUNTIME}\n`;
}

// ---------------------------------------------------------------------------
// Requests.

function answer(line) {
  let req;
  try {
    req = parseJson(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(line));
  } catch (e) {
    return { diagnostic: "bad record: not one JSON text in UTF-8" };
  }
  if (!isObj(req) || !sameKeys(req, ["plan", "tools"]) || !isObj(req.get("plan")) || !isArr(req.get("tools")))
    return { diagnostic: "bad record: expected a compile request {plan, tools}" };
  const tools = req.get("tools");
  const plan = req.get("plan");
  const why = catalogProblem(tools) || planProblem(plan, tools);
  if (why) return { diagnostic: why };
  return { js: generate(plan, tools) };
}

function writeAll(text) {
  const buf = Buffer.from(text, "utf8");
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(1, buf, off, buf.length - off);
    } catch (e) {
      if (e.code === "EAGAIN") continue;
      if (e.code === "EPIPE") process.exit(0);
      throw e;
    }
  }
}

function respond(line) {
  let res;
  try {
    res = answer(line);
  } catch (e) {
    res = { diagnostic: "internal error: " + String(e && e.message) };
  }
  // JSON.stringify writes lone surrogates as \u escapes and nothing raw below U+0020.
  writeAll(JSON.stringify(res) + "\n");
}

export { parseJson, isFiniteAndExact, isIdentifierName, catalogProblem, planProblem, generate, answer };

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("compiler_combinators.mjs")) {
  let pending = Buffer.alloc(0);
  process.stdin.on("data", (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let nl;
    while ((nl = pending.indexOf(0x0a)) !== -1) {
      const line = pending.subarray(0, nl);
      pending = pending.subarray(nl + 1);
      respond(line);
    }
  });
  process.stdin.on("end", () => {
    if (pending.length) respond(pending);
    process.exitCode = 0;
  });
}
