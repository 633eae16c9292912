#!/usr/bin/env node
// selftest.mjs -- the outside implementations' own smoke test, written from
// SPEC.md alone (it does not use the kit).  It starts each implementation as a
// command, sends hand-written requests over the JSON Lines protocol, and runs
// every returned `js` in a fresh node:vm context against mocked tools,
// checking records, schedules, shaping, argument delivery and purity as
// SPEC.md words them.
//
//   node tests/outside/selftest.mjs            # all implementations
//   node tests/outside/selftest.mjs combinators # only those whose label matches

import { spawn } from "node:child_process";
import path from "node:path";
import vm from "node:vm";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const IMPLS = [
  { label: "combinators", cmd: ["node", path.join(HERE, "compiler_combinators.mjs")] },
  { label: "slow", cmd: ["python3", path.join(HERE, "compiler_slow.py")] },
  { label: "refuses(compile)", cmd: ["python3", path.join(HERE, "planner_refuses.py")] },
  {
    label: "chunky(combinators)",
    cmd: ["python3", path.join(HERE, "chunky.py"), "node", path.join(HERE, "compiler_combinators.mjs")],
  },
];

// ---------------------------------------------------------------------------
// JSON text with numbers written as given: a number is {$n: "text"}.
const N = (text) => ({ $n: text });
function toJson(v) {
  if (v && typeof v === "object" && "$n" in v) return v.$n;
  if (Array.isArray(v)) return `[${v.map(toJson).join(",")}]`;
  if (v && typeof v === "object") {
    if (v instanceof Map) return `{${[...v].map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(",")}}`;
    return `{${Object.keys(v).map((k) => `${JSON.stringify(k)}:${toJson(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}
// Objects whose keys include "__proto__" are written as Maps.
const M = (...pairs) => new Map(pairs);

// ---------------------------------------------------------------------------
// Talking to an implementation.
function ask(cmd, lines, { timeoutMs = 120000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    const chunks = [];
    child.stdout.on("data", (c) => chunks.push(c));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`timeout: ${cmd.join(" ")}`));
    }, timeoutMs);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString("utf8");
      const out = text.split("\n");
      if (out.pop() !== "") return reject(new Error("last response line not terminated"));
      resolve({ code, signal, responses: out.map((l) => JSON.parse(l)) });
    });
    for (const l of lines) child.stdin.write(Buffer.isBuffer(l) ? Buffer.concat([l, Buffer.from("\n")]) : l + "\n");
    child.stdin.end();
  });
}

let failures = 0;
let checks = 0;
const fail = (label, what) => {
  failures++;
  console.log(`FAIL [${label}] ${what}`);
};

// ---------------------------------------------------------------------------
// Catalogs and validation cases.
const entry = (name, args, required, returns) => ({ name, arguments: args, required, returns });
const SEARCH = entry("search", { q: "string", n: "number", exact: "boolean" }, ["q"], {
  kind: "array",
  properties: ["id", "title"],
});
const FETCH = entry("fetch", {}, [], { kind: "text" });
const BASE_TOOLS = [SEARCH, FETCH];
const BASE_PLAN = { mode: "single", calls: [{ tool: "search", args: { q: "x" } }], output: { kind: "last" } };
const req = (plan, tools = BASE_TOOLS) => toJson({ plan, tools });
const withTools = (...entries) => req(BASE_PLAN, [SEARCH, ...entries]);
const single = (args, output = { kind: "last" }) => req({ mode: "single", calls: [{ tool: "search", args }], output });
const lots = (n) => Array.from({ length: n }, (_, i) => entry(`t${i}`, {}, [], { kind: "text" }));

const INVALID = {
  "IN-COUNT 0": req(BASE_PLAN, []),
  "IN-COUNT 9": req(BASE_PLAN, [SEARCH, ...lots(8)]),
  "IN-KEYS missing returns": withTools({ name: "a", arguments: {}, required: [] }),
  "IN-KEYS extra member": withTools({ ...entry("a", {}, [], { kind: "text" }), doc: "x" }),
  "IN-KEYS entry not object": withTools("a"),
  "IN-KEYS returns lacks kind": withTools(entry("a", {}, [], {})),
  "IN-KEYS returns extra": withTools(entry("a", {}, [], { kind: "text", x: 1 })),
  "IN-NAME class": withTools(entry("class", {}, [], { kind: "text" })),
  "IN-NAME await": withTools(entry("await", {}, [], { kind: "text" })),
  "IN-NAME yield": withTools(entry("yield", {}, [], { kind: "text" })),
  "IN-NAME digit": withTools(entry("1a", {}, [], { kind: "text" })),
  "IN-NAME dash": withTools(entry("a-b", {}, [], { kind: "text" })),
  "IN-NAME space": withTools(entry("a b", {}, [], { kind: "text" })),
  "IN-NAME escape": withTools(entry("\\u0061", {}, [], { kind: "text" })),
  "IN-NAME lone surrogate": withTools(entry("a\ud800", {}, [], { kind: "text" })),
  "IN-NAME empty": withTools(entry("", {}, [], { kind: "text" })),
  "IN-NAME number": withTools(entry(N("5"), {}, [], { kind: "text" })),
  "IN-UNIQUE names": withTools(entry("search", {}, [], { kind: "text" })),
  "IN-UNIQUE required": withTools(entry("a", { x: "string" }, ["x", "x"], { kind: "text" })),
  "IN-UNIQUE properties": withTools(entry("a", {}, [], { kind: "array", properties: ["p", "p"] })),
  "IN-ARGS 5": withTools(entry("a", { a: "string", b: "string", c: "string", d: "string", e: "string" }, [], { kind: "text" })),
  "IN-ARGS name": withTools(entry("a", { "a b": "string" }, [], { kind: "text" })),
  "IN-ARGS integer": withTools(entry("a", { x: "integer" }, [], { kind: "text" })),
  "IN-ARGS null": withTools(entry("a", { x: null }, [], { kind: "text" })),
  "IN-ARGS nested": withTools(entry("a", { x: { type: "string" } }, [], { kind: "text" })),
  "IN-ARGS array": withTools(entry("a", ["x"], [], { kind: "text" })),
  "IN-REQUIRED not array": withTools(entry("a", { x: "string" }, "x", { kind: "text" })),
  "IN-REQUIRED non-string": withTools(entry("a", { x: "string" }, [N("1")], { kind: "text" })),
  "IN-REQUIRED undeclared": withTools(entry("a", { x: "string" }, ["y"], { kind: "text" })),
  "IN-REQUIRED inherited name": withTools(entry("a", { x: "string" }, ["toString"], { kind: "text" })),
  "IN-RETURNS kind": withTools(entry("a", {}, [], { kind: "list" })),
  "IN-RETURNS text+properties": withTools(entry("a", {}, [], { kind: "text", properties: [] })),
  "IN-RETURNS properties not array": withTools(entry("a", {}, [], { kind: "object", properties: "p" })),
  "IN-RETURNS bad property": withTools(entry("a", {}, [], { kind: "object", properties: ["p q"] })),
  "IN-RETURNS not object": withTools(entry("a", {}, [], "text")),
  "PL-SCHEMA extra member": req({ ...BASE_PLAN, why: "x" }),
  "PL-SCHEMA no output": req({ mode: "single", calls: BASE_PLAN.calls }),
  "PL-SCHEMA mode": req({ ...BASE_PLAN, mode: "batch" }),
  "PL-SCHEMA calls empty": req({ ...BASE_PLAN, calls: [] }),
  "PL-SCHEMA 4 calls": req({ mode: "sequential", calls: Array(4).fill({ tool: "fetch", args: {} }), output: { kind: "all" } }),
  "PL-SCHEMA call extra": req({ ...BASE_PLAN, calls: [{ tool: "search", args: { q: "x" }, id: 1 }] }),
  "PL-SCHEMA tool not string": req({ ...BASE_PLAN, calls: [{ tool: ["search"], args: { q: "x" } }] }),
  "PL-SCHEMA args array": req({ ...BASE_PLAN, calls: [{ tool: "fetch", args: [] }] }),
  "PL-SCHEMA args 5": req({ ...BASE_PLAN, calls: [{ tool: "search", args: { q: "x", a: "1", b: "2", c: "3", d: "4" } }] }),
  "PL-SCHEMA arg null": single({ q: "x", exact: null }),
  "PL-SCHEMA arg object": single({ q: { v: "x" } }),
  "PL-SCHEMA arg array": single({ q: ["x"] }),
  "PL-SCHEMA output kind": single({ q: "x" }, { kind: "first" }),
  "PL-SCHEMA output extra": single({ q: "x" }, { kind: "last", sort: "id" }),
  "PL-SCHEMA fields empty": single({ q: "x" }, { kind: "last", fields: [] }),
  "PL-SCHEMA fields 4": single({ q: "x" }, { kind: "last", fields: ["id", "title", "id2", "x"] }),
  "PL-SCHEMA fields dup": single({ q: "x" }, { kind: "last", fields: ["id", "id"] }),
  "PL-SCHEMA fields non-string": single({ q: "x" }, { kind: "last", fields: [N("1")] }),
  "PL-SCHEMA limit 101": single({ q: "x" }, { kind: "last", limit: N("101") }),
  "PL-SCHEMA limit -1": single({ q: "x" }, { kind: "last", limit: N("-1") }),
  "PL-SCHEMA limit 1.5": single({ q: "x" }, { kind: "last", limit: N("1.5") }),
  "PL-SCHEMA limit string": single({ q: "x" }, { kind: "last", limit: "3" }),
  "PL-SCHEMA limit 1e400": single({ q: "x" }, { kind: "last", limit: N("1e400") }),
  "PL-MODE single 2": req({ mode: "single", calls: [BASE_PLAN.calls[0], BASE_PLAN.calls[0]], output: { kind: "all" } }),
  "PL-MODE sequential 1": req({ ...BASE_PLAN, mode: "sequential" }),
  "PL-MODE parallel 1": req({ ...BASE_PLAN, mode: "parallel" }),
  "PL-TOOL unknown": req({ ...BASE_PLAN, calls: [{ tool: "lookup", args: {} }] }),
  "PL-TOOL inherited name": req({ ...BASE_PLAN, calls: [{ tool: "constructor", args: {} }] }),
  "PL-TOOL case": req({ ...BASE_PLAN, calls: [{ tool: "Search", args: { q: "x" } }] }),
  "PL-ARGS undeclared": single({ q: "x", page: N("1") }),
  "PL-ARGS inherited name": single({ q: "x", toString: "y" }),
  "PL-ARGS missing required": single({ n: N("1") }),
  "PL-ARGS string gets number": single({ q: N("1") }),
  "PL-ARGS string gets boolean": single({ q: true }),
  "PL-ARGS number gets string": single({ q: "x", n: "1" }),
  "PL-ARGS number gets boolean": single({ q: "x", n: false }),
  "PL-ARGS 9007199254740992": single({ q: "x", n: N("9007199254740992") }),
  "PL-ARGS -9007199254740992": single({ q: "x", n: N("-9007199254740992") }),
  "PL-ARGS 0.30000000000000001": single({ q: "x", n: N("0.30000000000000001") }),
  "PL-ARGS 1e400": single({ q: "x", n: N("1e400") }),
  "PL-ARGS 1e-400": single({ q: "x", n: N("1e-400") }),
  "PL-ARGS 1e21": single({ q: "x", n: N("1e21") }),
  "PL-ARGS 4.9e-324": single({ q: "x", n: N("4.9e-324") }),
  "PL-ARGS boolean gets string": single({ q: "x", exact: "true" }),
  "PL-ARGS boolean gets number": single({ q: "x", exact: N("1") }),
  "PL-SHAPE fields on text tool": req({ mode: "single", calls: [{ tool: "fetch", args: {} }], output: { kind: "last", fields: ["id"] } }),
  "PL-SHAPE limit on text tool": req({ mode: "single", calls: [{ tool: "fetch", args: {} }], output: { kind: "last", limit: N("1") } }),
  "PL-SHAPE limit on sequential": req({
    mode: "sequential",
    calls: [BASE_PLAN.calls[0], BASE_PLAN.calls[0]],
    output: { kind: "all", limit: N("1") },
  }),
  "PL-SHAPE undeclared field": single({ q: "x" }, { kind: "last", fields: ["url"] }),
  "PL-SHAPE inherited field": single({ q: "x" }, { kind: "last", fields: ["toString"] }),
  "PL-SHAPE fields without properties": req(
    { mode: "single", calls: [{ tool: "rows", args: {} }], output: { kind: "all", fields: ["a"] } },
    [entry("rows", {}, [], { kind: "array" })],
  ),
  "PL-SHAPE fields on object tool": req(
    { mode: "single", calls: [{ tool: "obj", args: {} }], output: { kind: "all", fields: ["a"] } },
    [entry("obj", {}, [], { kind: "object", properties: ["a"] })],
  ),
};

const EDGE_TOOLS = [
  entry("__proto__", M(["__proto__", "string"], ["class", "number"], ["await", "boolean"], ["$", "string"]), ["__proto__"], {
    kind: "array",
    properties: ["__proto__", "constructor", "toString", "default"],
  }),
  entry("constructor", {}, [], { kind: "object", properties: [] }),
  entry("toString", { valueOf: "string" }, [], { kind: "array", properties: [] }),
  entry("$", {}, [], { kind: "text" }),
  entry("\u00f1and\u00fa\u{1d453}", { "\u00e9t\u00e9": "string" }, [], { kind: "object" }),
  entry("eval", {}, [], { kind: "array" }),
  entry("undefined", {}, [], { kind: "text" }),
  entry("a\u200cb_$9", { x\u200d: "number" }, [], { kind: "text" }),
];
const VALID = {
  "base": req(BASE_PLAN),
  "8 entries, edge names": req(
    { mode: "single", calls: [{ tool: "__proto__", args: M(["__proto__", "v"]) }], output: { kind: "all", fields: ["__proto__", "constructor", "toString"], limit: N("0") } },
    EDGE_TOOLS,
  ),
  "limit 100": single({ q: "x" }, { kind: "last", limit: N("100") }),
  "limit 0": single({ q: "x" }, { kind: "last", limit: N("0") }),
  "limit on array without properties": req(
    { mode: "single", calls: [{ tool: "eval", args: {} }], output: { kind: "last", limit: N("7") } },
    EDGE_TOOLS,
  ),
  "3 calls repeated, empty args": req({
    mode: "parallel",
    calls: [{ tool: "fetch", args: {} }, { tool: "fetch", args: {} }, { tool: "search", args: { q: "" } }],
    output: { kind: "last" },
  }),
  "edge numbers": req({
    mode: "sequential",
    calls: [
      { tool: "search", args: { q: "a", n: N("9007199254740991") } },
      { tool: "search", args: { q: "b", n: N("-9007199254740991") } },
      { tool: "search", args: { q: "c", n: N("5e-324"), exact: false } },
    ],
    output: { kind: "all" },
  }),
  "number 0.1, 1.50, 1e2": req({
    mode: "parallel",
    calls: [
      { tool: "search", args: { q: "a", n: N("0.1") } },
      { tool: "search", args: { q: "b", n: N("1.50") } },
      { tool: "search", args: { q: "c", n: N("1e2") } },
    ],
    output: { kind: "all" },
  }),
  "0 and 4 arguments, reserved argument names": req(
    { mode: "single", calls: [{ tool: "__proto__", args: M(["__proto__", "x"], ["class", N("1")], ["await", true], ["$", ""]) }], output: { kind: "last" } },
    EDGE_TOOLS,
  ),
  "properties empty on object": req(
    { mode: "single", calls: [{ tool: "constructor", args: {} }], output: { kind: "last" } },
    EDGE_TOOLS,
  ),
};

const BAD_RECORDS = [
  "{",
  "{} x",
  "hello",
  "[]",
  '"s"',
  "1",
  "null",
  "true",
  "{}",
  '{"plan":{},"tools":[],"x":1}',
  '{"plan":[],"tools":[]}',
  '{"plan":{},"tools":{}}',
  '{"instruction":"x","plan":{},"tools":[]}',
  '{"tools":[]}',
  '{"plan":{},"tools":[],"plan":{}}',
  Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
  Buffer.from('{"plan":{},"tools":["\xed\xa0\x80"]}', "latin1"),
  '{"instruction":"call fetch","tools":[' + JSON.stringify(FETCH) + "]}",
];

async function validationSuite(impl) {
  const names = [...Object.keys(INVALID), ...Object.keys(VALID)];
  const lines = [...Object.values(INVALID), ...Object.values(VALID), ...BAD_RECORDS];
  const { code, signal, responses } = await ask(impl.cmd, lines);
  checks++;
  if (code !== 0 || signal) fail(impl.label, `exit ${code} ${signal}`);
  if (responses.length !== lines.length) fail(impl.label, `${responses.length} responses to ${lines.length} requests`);
  responses.forEach((r, k) => {
    checks++;
    const keys = Object.keys(r).sort().join(",");
    const name = k < names.length ? names[k] : `bad record ${JSON.stringify(String(lines[k]))}`;
    const wantJs = k >= Object.keys(INVALID).length && k < names.length;
    if (wantJs ? keys !== "js" || typeof r.js !== "string" : keys !== "diagnostic" || typeof r.diagnostic !== "string" || !r.diagnostic)
      fail(impl.label, `${name}: got ${JSON.stringify(r).slice(0, 120)}`);
  });
}

// ---------------------------------------------------------------------------
// Behaviour: run js in a fresh vm context against mocked tools.

// Evaluated inside each fresh context; returns a function.  Everything it
// needs is local, so it adds no global.
const RUNNER = String.raw`(function (specText, js) {
  const spec = JSON.parse(specText);
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
  const G = globalThis;
  const ids = new WeakMap();
  let nextId = 1;
  const idOf = (o) => { if (!ids.has(o)) ids.set(o, nextId++); return ids.get(o); };
  const describe = (v) => (typeof v === "object" && v !== null) || typeof v === "function" ? "#" + idOf(v) : typeof v + ":" + String(v);
  function snapshot() {
    const seen = new Set();
    const out = [];
    const visit = (obj, where, depth) => {
      if (seen.has(obj) || depth > 4) return;
      seen.add(obj);
      out.push(where + " proto " + describe(Object.getPrototypeOf(obj)) + " ext " + Object.isExtensible(obj));
      for (const k of Reflect.ownKeys(obj)) {
        const d = Object.getOwnPropertyDescriptor(obj, k);
        const at = where + "." + String(k);
        out.push(at + " " + ("value" in d ? describe(d.value) + d.writable : "get " + describe(d.get) + " set " + describe(d.set)) + d.enumerable + d.configurable);
        if ("value" in d && ((typeof d.value === "object" && d.value !== null) || typeof d.value === "function")) visit(d.value, at, depth + 1);
      }
    };
    visit(G, "globalThis", 0);
    return out;
  }
  const events = [];
  const tokens = spec.behaviours.map((b, i) => (b.src ? (0, eval)("(" + b.src + ")") : { token: i, kind: b.kind }));
  const tools = Object.create(null);
  const queues = new Map();
  spec.calls.forEach((c, i) => { if (!queues.has(c.tool)) queues.set(c.tool, []); queues.get(c.tool).push(i); });
  const invocations = [];
  for (const [name, idxs] of queues) {
    const first = spec.behaviours[idxs[0]];
    if (first.kind === "missing") continue;
    if (first.kind === "nonfn") { Object.defineProperty(tools, name, { value: 42, enumerable: true, writable: true, configurable: true }); continue; }
    let n = 0;
    const fn = function (...argv) {
      const i = n < idxs.length ? idxs[n] : -1;
      n++;
      events.push({ type: "start", i });
      invocations.push({ i, argv, self: this });
      if (i < 0) return Promise.resolve("extra invocation");
      const b = spec.behaviours[i];
      if (b.kind === "throw") { events.push({ type: "settle", i }); throw tokens[i]; }
      if (b.kind === "never") return new Promise(() => {});
      let p = Promise.resolve();
      for (let t = 0; t < (b.delay || 0); t++) p = p.then(() => {});
      return p.then(() => {
        events.push({ type: "settle", i });
        if (b.kind === "reject") throw tokens[i];
        return tokens[i];
      });
    };
    Object.defineProperty(tools, name, { value: fn, enumerable: true, writable: true, configurable: true });
  }
  const before = snapshot();
  let state = "pending";
  let result;
  let reason;
  const f = new AsyncFunction("tools", js);
  const p = f(tools);
  events.push({ type: "returned" });
  p.then((v) => { state = "fulfilled"; result = v; events.push({ type: "done" }); }, (e) => { state = "rejected"; reason = e; });

  return function finish() {
    const errors = [];
    const bad = (m) => errors.push(m);
    const after = snapshot();
    const a = new Set(after);
    const b = new Set(before);
    const changed = [...before.filter((x) => !a.has(x)), ...after.filter((x) => !b.has(x))];
    if (changed.length) bad("JS-PURE: " + changed.slice(0, 3).join(" | "));
    const calls = spec.calls;
    const n = calls.length;
    // which calls are expected to start
    let expectStarted = n;
    if (spec.mode !== "parallel") {
      const never = spec.behaviours.findIndex((x) => x.kind === "never");
      if (never >= 0) expectStarted = never + 1;
    }
    const invokable = (i) => spec.behaviours[i].kind !== "missing" && spec.behaviours[i].kind !== "nonfn";
    const wantStarts = [];
    for (let i = 0; i < expectStarted; i++) if (invokable(i)) wantStarts.push(i);
    const starts = events.filter((e) => e.type === "start").map((e) => e.i);
    if (starts.join() !== wantStarts.join()) bad("JS-CALLS/ORDER/SEQUENTIAL: starts " + starts.join() + " want " + wantStarts.join());
    const returned = events.findIndex((e) => e.type === "returned");
    if (spec.mode === "parallel") {
      events.forEach((e, k) => { if (e.type === "start" && k > returned) bad("JS-PARALLEL: call " + e.i + " started after f returned"); });
    } else {
      for (let i = 1; i < n; i++) {
        const s = events.findIndex((e) => e.type === "start" && e.i === i);
        const prev = events.findIndex((e) => e.type === "settle" && e.i === i - 1);
        if (s >= 0 && invokable(i - 1) && (prev < 0 || prev > s)) bad("JS-SEQUENTIAL: call " + i + " started before call " + (i - 1) + " settled");
      }
    }
    // arguments
    for (const inv of invocations) {
      if (inv.i < 0) { bad("JS-CALLS: extra invocation"); continue; }
      if (inv.argv.length !== 1) bad("JS-CALLS: " + inv.argv.length + " arguments");
      const arg = inv.argv[0];
      const want = calls[inv.i].args;
      if (typeof arg !== "object" || arg === null) { bad("JS-CALLS: argument not an object"); continue; }
      const keys = Reflect.ownKeys(arg);
      if (keys.length !== want.length || !want.every(([k]) => keys.includes(k))) bad("JS-ESCAPE/CALLS: keys " + JSON.stringify(keys.map(String)) + " want " + JSON.stringify(want.map((w) => w[0])));
      for (const [k, kind, v] of want) {
        const d = Object.getOwnPropertyDescriptor(arg, k);
        if (!d || !("value" in d) || !d.enumerable) { bad("JS-CALLS: " + JSON.stringify(k) + " not an own enumerable data property"); continue; }
        const expected = kind === "n" ? Number(v) : v;
        if (!Object.is(d.value, expected)) bad("JS-ESCAPE: " + JSON.stringify(k) + " got " + JSON.stringify(String(d.value)) + " want " + JSON.stringify(String(expected)));
      }
    }
    // settlement
    const hangs = spec.behaviours.slice(0, expectStarted).some((x) => x.kind === "never");
    if (hangs) {
      if (state !== "pending") bad("JS-AWAIT: function " + state + " although a call never settles");
      return JSON.stringify(errors);
    }
    if (state !== "fulfilled") { bad("JS-FORM: function " + state + (reason ? " " + String(reason && reason.stack) : "")); return JSON.stringify(errors); }
    // records
    const checkRecord = (r, i, label) => {
      if (typeof r !== "object" || r === null) { bad(label + ": record is not an object"); return; }
      const proto = Object.getPrototypeOf(r);
      if (proto !== Object.prototype && proto !== null) bad("JS-RECORD: record prototype");
      const keys = Reflect.ownKeys(r).map(String).sort().join(",");
      const beh = spec.behaviours[i];
      if (spec.shape) {
        const want = spec.shape;
        if (want.error) {
          if (keys !== "error,ok" || r.ok !== false || !(r.error instanceof Error) || typeof r.error.message !== "string" || !r.error.message) bad("JS-SHAPE: want a shape error, got " + keys + " " + JSON.stringify(r));
          return;
        }
        if (want.passthrough) {
          if (keys !== "error,ok" || r.ok !== false || r.error !== tokens[i]) bad("JS-SHAPE: failed record not passed through");
          return;
        }
        if (keys !== "ok,value" || r.ok !== true || !Array.isArray(r.value)) { bad("JS-SHAPE: want rows, got " + keys + " " + String(r.error)); return; }
        const src = tokens[i];
        const rows = r.value;
        if (rows.length !== want.count) bad("JS-LIMIT: " + rows.length + " rows, want " + want.count);
        rows.forEach((row, k) => {
          if (!want.fields) { if (!Object.is(row, src[k])) bad("JS-LIMIT: row " + k + " differs"); return; }
          if (row === src[k]) bad("JS-PROJECT: row " + k + " is the tool's row");
          if (Object.getPrototypeOf(row) !== Object.prototype) bad("JS-PROJECT: row " + k + " prototype");
          const rk = Reflect.ownKeys(row);
          if (JSON.stringify(rk.map(String)) !== JSON.stringify(want.fields)) bad("JS-PROJECT: row " + k + " keys " + JSON.stringify(rk.map(String)));
          for (const f of want.fields) {
            const d = Object.getOwnPropertyDescriptor(row, f);
            if (!d || !("value" in d) || !d.enumerable || !Object.is(d.value, Object.getOwnPropertyDescriptor(src[k], f).value)) bad("JS-PROJECT: row " + k + " field " + f);
          }
        });
        return;
      }
      if (beh.kind === "ok") {
        if (keys !== "ok,value" || r.ok !== true || !Object.is(r.value, tokens[i])) bad("JS-RECORD: call " + i + " want ok record, got " + keys + " " + JSON.stringify(r));
      } else if (beh.kind === "reject" || beh.kind === "throw") {
        if (keys !== "error,ok" || r.ok !== false || !Object.is(r.error, tokens[i])) bad("JS-RECORD/SYNC-THROW: call " + i + " want error record, got " + keys + " " + JSON.stringify(r));
      } else {
        if (keys !== "error,ok" || r.ok !== false || !(r.error instanceof TypeError)) bad("JS-SYNC-THROW: call " + i + " want TypeError record, got " + keys + " " + String(r.error));
      }
    };
    if (spec.output === "all") {
      if (!Array.isArray(result) || result.length !== n) { bad("JS-ALL: result is not an array of " + n); return JSON.stringify(errors); }
      result.forEach((r, i) => checkRecord(r, i, "JS-ALL"));
    } else {
      if (Array.isArray(result)) { bad("JS-LAST: result is an array"); return JSON.stringify(errors); }
      checkRecord(result, n - 1, "JS-LAST");
    }
    return JSON.stringify(errors);
  };
})`;

async function runJs(js, spec) {
  const ctx = vm.createContext({});
  const runner = vm.runInContext(RUNNER, ctx);
  const finish = runner(JSON.stringify(spec), js);
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 5));
  return JSON.parse(finish());
}

// Plans for behaviour cases.  Argument values: strings, N(text), booleans.
const T = (name, args = {}, kind = "text", properties) =>
  entry(name, args, [], properties ? { kind, properties } : { kind });
const WEIRD = [
  '"\\*/${x}`\u2028\u2029</script>\u0000\'',
  "\ud800",
  "\udfff\ud800",
  "\ud83d\ude00",
  "",
  "a\\u0041b",
  "\u00e9\u0301 \u{10ffff}",
];
const tame = [T("a", { x: "string", y: "number" }), T("b", { z: "boolean" }), T("c")];
const call = (tool, args = {}) => ({ tool, args });
const BEHAVIOUR_PLANS = [
  {
    name: "single last",
    tools: tame,
    plan: { mode: "single", calls: [call("a", { x: "hi", y: N("3") })], output: { kind: "last" } },
    scenarios: [["ok"], ["reject"], ["throw"], ["missing"], ["nonfn"], ["never"]],
  },
  {
    name: "single all",
    tools: tame,
    plan: { mode: "single", calls: [call("c")], output: { kind: "all" } },
    scenarios: [["ok"], ["reject"], ["throw"], ["missing"]],
  },
  {
    name: "sequential all, repeated tool",
    tools: tame,
    plan: { mode: "sequential", calls: [call("a", { x: "1" }), call("b", { z: true }), call("a", { x: "2" })], output: { kind: "all" } },
    scenarios: [
      ["ok:5", "ok:0", "ok:2"],
      ["reject:3", "throw", "ok"],
      ["ok", "missing", "reject:1"],
      ["ok", "nonfn", "ok"],
      ["ok", "never", "ok"],
      ["never", "ok", "ok"],
      ["throw", "ok", "throw"],
    ],
  },
  {
    name: "sequential last",
    tools: tame,
    plan: { mode: "sequential", calls: [call("c"), call("b", { z: false })], output: { kind: "last" } },
    scenarios: [["ok:9", "ok:0"], ["ok:0", "reject:9"], ["throw", "throw"], ["missing", "ok"], ["ok", "missing"]],
  },
  {
    name: "parallel all",
    tools: tame,
    plan: { mode: "parallel", calls: [call("a", { y: N("-7") }), call("b"), call("c")], output: { kind: "all" } },
    scenarios: [
      ["ok:5", "ok:0", "ok:2"],
      ["throw", "ok", "reject"],
      ["missing", "throw", "ok:3"],
      ["nonfn", "missing", "throw"],
      ["never", "ok", "ok"],
      ["ok", "ok:4", "never"],
    ],
  },
  {
    name: "parallel last",
    tools: tame,
    plan: { mode: "parallel", calls: [call("a"), call("c"), call("b")], output: { kind: "last" } },
    scenarios: [["ok:0", "ok:0", "ok:9"], ["ok:9", "ok:3", "ok:0"], ["reject:7", "ok:0", "throw"], ["ok", "ok", "missing"]],
  },
  {
    name: "parallel twins",
    tools: tame,
    plan: { mode: "parallel", calls: [call("a", { x: "same" }), call("a", { x: "same" })], output: { kind: "all" } },
    scenarios: [["ok:1", "ok:2"], ["reject:2", "ok:1"]],
  },
  {
    name: "adversarial single",
    tools: [
      T("__proto__", M(["__proto__", "string"], ["constructor", "number"], ["class", "boolean"], ["$", "string"])),
      T("constructor"),
    ],
    plan: {
      mode: "single",
      calls: [call("__proto__", M(["__proto__", "\ud800"], ["constructor", N("5e-324")], ["class", true], ["$", WEIRD[0]]))],
      output: { kind: "all" },
    },
    scenarios: [["ok"], ["throw"], ["missing"]],
  },
  {
    name: "adversarial parallel",
    tools: [
      T("constructor", { default: "string", await: "number" }),
      T("toString", { yield: "string", valueOf: "number", "\u00e9t\u00e9": "string", hasOwnProperty: "boolean" }),
      T("\u00f1and\u00fa\u{1d453}", { $: "number", _: "string" }),
    ],
    plan: {
      mode: "parallel",
      calls: [
        call("constructor", { default: WEIRD[1], await: N("9007199254740991") }),
        call("toString", { yield: WEIRD[2], valueOf: N("-9007199254740991"), "\u00e9t\u00e9": WEIRD[3], hasOwnProperty: false }),
        call("\u00f1and\u00fa\u{1d453}", { $: N("0.1"), _: WEIRD[5] }),
      ],
      output: { kind: "all" },
    },
    scenarios: [["ok:2", "ok:1", "ok:0"], ["throw", "nonfn", "ok"]],
  },
  {
    name: "adversarial sequential",
    tools: [T("$", { then: "string", prototype: "number" }), T("valueOf", { length: "string", n: "number" }), T("eval", { arguments: "string" })],
    plan: {
      mode: "sequential",
      calls: [
        call("$", { then: WEIRD[4], prototype: N("1.50") }),
        call("valueOf", { length: WEIRD[6], n: N("1e2") }),
        call("eval", { arguments: WEIRD[0] + WEIRD[1] }),
      ],
      output: { kind: "last" },
    },
    scenarios: [["ok", "ok", "ok"], ["reject", "missing", "ok"]],
  },
];

// Shaping cases: one array tool, rows built by source text inside the context.
const ROWS_OK = `[{id: 1, title: "a", x: 0}, {title: "b", id: 2}, Object.assign(Object.create({inherited: 1}), {id: 3, title: null})]`;
const SHAPE_PLANS = [
  { output: { kind: "last" }, src: "[1, 'two', null]", want: { count: 3 } },
  { output: { kind: "last" }, src: "({length: 0})", want: { error: true } },
  { output: { kind: "all" }, src: "'rows'", want: { error: true } },
  { output: { kind: "all" }, src: "undefined", want: { error: true } },
  { output: { kind: "last" }, kind: "reject", want: { passthrough: true } },
  { output: { kind: "last", fields: ["id", "title"] }, src: ROWS_OK, want: { fields: ["id", "title"], count: 3 } },
  { output: { kind: "all", fields: ["title"] }, src: ROWS_OK, want: { fields: ["title"], count: 3 } },
  { output: { kind: "last", fields: ["id"] }, src: "[{id: 1}, null]", want: { error: true } },
  { output: { kind: "last", fields: ["id"] }, src: "[{id: 1}, [1]]", want: { error: true } },
  { output: { kind: "last", fields: ["id"] }, src: "[{id: 1}, 7]", want: { error: true } },
  { output: { kind: "last", fields: ["id"] }, src: "[{id: 1}, function () {}]", want: { error: true } },
  { output: { kind: "last", fields: ["id"] }, src: "[{id: 1}, Object.create({id: 2})]", want: { error: true } },
  { output: { kind: "last", fields: ["id"] }, src: "[{id: 1}, Object.assign([1], {id: 2})]", want: { error: true } },
  { output: { kind: "last", fields: ["id"] }, src: "[{id: 1}, Object.assign(function () {}, {id: 2})]", want: { error: true } },
  { tool: "str", properties: ["length"], output: { kind: "last", fields: ["length"] }, src: "['abc']", want: { error: true } },
  { tool: "str", properties: ["length"], output: { kind: "last", fields: ["length"] }, src: "[{length: 3}]", want: { fields: ["length"], count: 1 } },
  { output: { kind: "last", fields: ["id"] }, src: "[{id: 1}, {title: 2}]", want: { error: true } },
  { output: { kind: "last", fields: ["id"], limit: N("1") }, src: "[{id: 1}, {title: 2}]", want: { error: true } },
  { output: { kind: "last", fields: ["id"], limit: N("0") }, src: "[{id: 1}, null]", want: { error: true } },
  { output: { kind: "last", fields: ["id"], limit: N("0") }, src: "[{id: 1}]", want: { fields: ["id"], count: 0 } },
  { output: { kind: "last", limit: N("0") }, src: "[1, 2]", want: { count: 0 } },
  { output: { kind: "last", limit: N("2") }, src: "[null, [1], 3]", want: { count: 2 } },
  { output: { kind: "all", limit: N("100") }, src: "[1, 2, 3]", want: { count: 3 } },
  { output: { kind: "last", limit: N("100") }, src: "'x'", want: { error: true } },
  { output: { kind: "last", fields: ["id", "title"], limit: N("2") }, src: ROWS_OK, want: { fields: ["id", "title"], count: 2 } },
  { output: { kind: "last", fields: ["id"] }, src: "[]", want: { fields: ["id"], count: 0 } },
  {
    tool: "__proto__",
    properties: ["__proto__", "constructor", "toString", "$", "class", "\u00e9"],
    output: { kind: "last", fields: ["__proto__", "constructor", "toString"] },
    src: `[JSON.parse('{"__proto__": 5, "constructor": 6, "toString": 7}'), JSON.parse('{"toString": null, "__proto__": {"p": 1}, "constructor": "c"}')]`,
    want: { fields: ["__proto__", "constructor", "toString"], count: 2 },
  },
  {
    tool: "__proto__",
    properties: ["__proto__", "constructor", "toString", "$", "class", "\u00e9"],
    output: { kind: "last", fields: ["toString"] },
    src: "[{}]",
    want: { error: true },
  },
  {
    tool: "$",
    properties: ["$", "class", "\u00e9"],
    output: { kind: "all", fields: ["\u00e9", "class", "$"], limit: N("1") },
    src: `[{"\u00e9": 1, "class": 2, "$": 3}, {"\u00e9": 4, "class": 5, "$": 6}]`,
    want: { fields: ["\u00e9", "class", "$"], count: 1 },
  },
];

function parseBehaviour(s) {
  const [kind, delay] = s.split(":");
  return { kind, delay: delay ? Number(delay) : 0 };
}

function argTriples(args) {
  const pairs = args instanceof Map ? [...args] : Object.entries(args);
  return pairs.map(([k, v]) => (v && typeof v === "object" && "$n" in v ? [k, "n", v.$n] : [k, typeof v === "string" ? "s" : "b", v]));
}

async function behaviourSuite(impl) {
  const cases = [];
  for (const bp of BEHAVIOUR_PLANS) {
    for (const sc of bp.scenarios) {
      cases.push({
        name: `${bp.name} [${sc.join(" ")}]`,
        line: toJson({ plan: bp.plan, tools: bp.tools }),
        spec: {
          mode: bp.plan.mode,
          output: bp.plan.output.kind,
          calls: bp.plan.calls.map((c) => ({ tool: c.tool, args: argTriples(c.args) })),
          behaviours: sc.map(parseBehaviour),
        },
      });
    }
  }
  for (const sp of SHAPE_PLANS) {
    const tool = sp.tool || "rows";
    const properties = sp.properties || ["id", "title"];
    cases.push({
      name: `shape ${tool} ${toJson(sp.output)} ${sp.src || sp.kind}`,
      line: toJson({
        plan: { mode: "single", calls: [call(tool)], output: sp.output },
        tools: [T(tool, {}, "array", properties)],
      }),
      spec: {
        mode: "single",
        output: sp.output.kind,
        calls: [{ tool, args: [] }],
        behaviours: [sp.src ? { kind: "ok", src: sp.src, delay: 1 } : { kind: sp.kind || "ok", delay: 2 }],
        shape: sp.want,
      },
    });
  }
  const { responses } = await ask(impl.cmd, cases.map((c) => c.line));
  const jsSeen = new Map();
  for (let k = 0; k < cases.length; k++) {
    const c = cases[k];
    const r = responses[k];
    checks++;
    if (!r || typeof r.js !== "string" || Object.keys(r).length !== 1) {
      fail(impl.label, `${c.name}: no js: ${JSON.stringify(r)}`);
      continue;
    }
    if (jsSeen.has(c.line) && jsSeen.get(c.line) !== r.js) fail(impl.label, `${c.name}: PL-DETERMINISM js differs`);
    jsSeen.set(c.line, r.js);
    let errors;
    try {
      errors = await runJs(r.js, c.spec);
    } catch (e) {
      errors = [`harness/parse error: ${e && e.stack}`];
    }
    for (const e of errors) fail(impl.label, `${c.name}: ${e}`);
  }
}

// ---------------------------------------------------------------------------
// Stream: answers come while stdin stays open; EOF gives exit 0.
function streamSuite(impl) {
  return new Promise((resolve) => {
    const child = spawn(impl.cmd[0], impl.cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    let buf = "";
    let got = 0;
    const lines = [req(BASE_PLAN), "garbage", req(BASE_PLAN, [])];
    const timer = setTimeout(() => {
      fail(impl.label, `CLI-STREAM: only ${got} answers with stdin open`);
      child.kill("SIGKILL");
    }, 5000);
    child.stdout.on("data", (d) => {
      buf += d.toString("utf8");
      const n = buf.split("\n").length - 1;
      if (n > got) {
        got = n;
        if (got < lines.length) child.stdin.write(lines[got] + "\n");
        else {
          clearTimeout(timer);
          child.stdin.end();
        }
      }
    });
    child.on("close", (code) => {
      checks++;
      if (code !== 0) fail(impl.label, `CLI-STREAM: exit status ${code}`);
      resolve();
    });
    child.stdin.write(lines[0] + "\n");
  });
}

export { RUNNER, runJs };

const only = process.argv[2];
const direct = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
for (const impl of direct ? IMPLS : []) {
  if (only && !impl.label.includes(only)) continue;
  const t0 = Date.now();
  await validationSuite(impl);
  await behaviourSuite(impl);
  await streamSuite(impl);
  console.log(`${impl.label}: done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
if (direct) {
  console.log(`${checks} checks, ${failures} failures`);
  process.exit(failures ? 1 : 0);
}
