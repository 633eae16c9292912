// Independent codemode compiler, written from SPEC.md alone (Definitions, Compile, JS).
// Reads JSON Lines on stdin; answers one JSON line per request on stdout.
// Plain Node.js 20, no packages.

// ---------------------------------------------------------------------------
// Strict JSON parser (RFC 8259) that keeps every number's text.
// Values: string -> JS string, true/false -> boolean, null -> null,
// number -> Num, array -> JS array, object -> JObj (Map of members).

class Num {
  constructor(raw) { this.raw = raw; }
}
class JObj {
  constructor(map) { this.map = map; }
}
class JSONError extends Error {}

function parseJSON(text) {
  let i = 0;
  const n = text.length;
  const fail = (why) => { throw new JSONError(why + " at " + i); };
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const isDigit = (c) => c >= 0x30 && c <= 0x39;
  function parseString() {
    // text[i] === '"'
    i++;
    let out = "";
    let start = i;
    while (true) {
      if (i >= n) fail("unterminated string");
      const c = text.charCodeAt(i);
      if (c === 0x22) { out += text.slice(start, i); i++; return out; }
      if (c < 0x20) fail("control character in string");
      if (c === 0x5c) {
        out += text.slice(start, i);
        i++;
        if (i >= n) fail("bad escape");
        const e = text[i];
        switch (e) {
          case '"': out += '"'; i++; break;
          case "\\": out += "\\"; i++; break;
          case "/": out += "/"; i++; break;
          case "b": out += "\b"; i++; break;
          case "f": out += "\f"; i++; break;
          case "n": out += "\n"; i++; break;
          case "r": out += "\r"; i++; break;
          case "t": out += "\t"; i++; break;
          case "u": {
            const h = text.slice(i + 1, i + 5);
            if (!/^[0-9a-fA-F]{4}$/.test(h)) fail("bad \\u escape");
            out += String.fromCharCode(parseInt(h, 16));
            i += 5;
            break;
          }
          default: fail("bad escape");
        }
        start = i;
        continue;
      }
      i++;
    }
  }
  function parseNumber() {
    const s = i;
    if (text[i] === "-") i++;
    if (i >= n) fail("bad number");
    if (text[i] === "0") i++;
    else if (text.charCodeAt(i) >= 0x31 && text.charCodeAt(i) <= 0x39) {
      while (i < n && isDigit(text.charCodeAt(i))) i++;
    } else fail("bad number");
    if (text[i] === ".") {
      i++;
      if (!(i < n && isDigit(text.charCodeAt(i)))) fail("bad fraction");
      while (i < n && isDigit(text.charCodeAt(i))) i++;
    }
    if (text[i] === "e" || text[i] === "E") {
      i++;
      if (text[i] === "+" || text[i] === "-") i++;
      if (!(i < n && isDigit(text.charCodeAt(i)))) fail("bad exponent");
      while (i < n && isDigit(text.charCodeAt(i))) i++;
    }
    return new Num(text.slice(s, i));
  }
  function parseValue(depth) {
    if (depth > 500) fail("nesting too deep");
    ws();
    if (i >= n) fail("unexpected end");
    const c = text[i];
    if (c === "{") {
      i++;
      const map = new Map();
      ws();
      if (text[i] === "}") { i++; return new JObj(map); }
      while (true) {
        ws();
        if (text[i] !== '"') fail("expected member name");
        const k = parseString();
        ws();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        const v = parseValue(depth + 1);
        if (map.has(k)) fail("duplicate member name");
        map.set(k, v);
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "}") { i++; return new JObj(map); }
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const arr = [];
      ws();
      if (text[i] === "]") { i++; return arr; }
      while (true) {
        arr.push(parseValue(depth + 1));
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "]") { i++; return arr; }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return parseString();
    if (c === "-" || isDigit(text.charCodeAt(i))) return parseNumber();
    if (text.startsWith("true", i)) { i += 4; return true; }
    if (text.startsWith("false", i)) { i += 5; return false; }
    if (text.startsWith("null", i)) { i += 4; return null; }
    fail("unexpected character");
  }
  const v = parseValue(0);
  ws();
  if (i !== n) fail("trailing text");
  return v;
}

// ---------------------------------------------------------------------------
// Numbers as written.

// Decompose a JSON number text into {neg, digits, exp} with x = digits * 10^exp,
// digits without leading or trailing zeros ("" for zero).
function decompose(raw) {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(raw);
  if (!m) return null;
  const neg = m[1] === "-";
  let digits = m[2] + (m[3] || "");
  let exp = BigInt(m[4] || "0") - BigInt((m[3] || "").length);
  digits = digits.replace(/^0+/, "");
  const t = digits.match(/0*$/)[0].length;
  if (t > 0) { digits = digits.slice(0, digits.length - t); exp += BigInt(t); }
  if (digits === "") exp = 0n;
  return { neg, digits, exp };
}

const MAX_SAFE = 9007199254740991n;

// The number's value if it is finite and exact as written, else undefined.
function exactNumber(num) {
  const d = decompose(num.raw);
  if (!d) return undefined;
  if (d.digits === "") return 0; // a zero (the kit sends no negative zero)
  if (d.exp >= 0n) {
    // integer
    if (BigInt(d.digits.length) + d.exp > 16n) return undefined;
    const v = BigInt(d.digits) * 10n ** d.exp;
    if (v > MAX_SAFE) return undefined;
    return d.neg ? -Number(v) : Number(v);
  }
  const x = Number(num.raw); // correctly rounded, ties to even
  if (!Number.isFinite(x) || x === 0) return undefined;
  const s = decompose(shortest(Math.abs(x)));
  if (!s || s.digits !== d.digits || s.exp !== d.exp) return undefined;
  return x;
}

// Shortest round-trip decimal text of a positive finite double, in JSON number syntax.
function shortest(x) {
  // Number.prototype.toString yields the shortest round-trip digits; it may
  // use the forms "123", "0.00123", "1.23e+21", "1.23e-7".
  return String(x).replace("e+", "e");
}

// The exact decimal value of a number as an integer (BigInt), or undefined when not integral.
function exactInteger(num) {
  const d = decompose(num.raw);
  if (!d) return undefined;
  if (d.digits === "") return 0n;
  if (d.exp < 0n) return undefined;
  if (BigInt(d.digits.length) + d.exp > 400n) return undefined; // huge, certainly out of range anyway
  const v = BigInt(d.digits) * 10n ** d.exp;
  return d.neg ? -v : v;
}

// ---------------------------------------------------------------------------
// Names.

const ID_START = /^[\p{ID_Start}$_]$/u;
const ID_CONTINUE = /^[\p{ID_Continue}$\u200C\u200D]$/u;
function isIdentifierName(s) {
  if (typeof s !== "string" || s.length === 0) return false;
  let first = true;
  for (const ch of s) { // iterates by code point; lone surrogates come alone
    const cp = ch.codePointAt(0);
    if (cp >= 0xd800 && cp <= 0xdfff) return false;
    if (first ? !ID_START.test(ch) : !ID_CONTINUE.test(ch)) return false;
    first = false;
  }
  return true;
}

const RESERVED = new Set([
  "await", "break", "case", "catch", "class", "const", "continue", "debugger", "default",
  "delete", "do", "else", "enum", "export", "extends", "false", "finally", "for", "function",
  "if", "implements", "import", "in", "instanceof", "interface", "let", "new", "null",
  "package", "private", "protected", "public", "return", "static", "super", "switch", "this",
  "throw", "true", "try", "typeof", "var", "void", "while", "with", "yield",
]);

// ---------------------------------------------------------------------------
// Validation. Each validator throws Invalid with a reason.

class Invalid extends Error {}
const bad = (why) => { throw new Invalid(why); };
const isObj = (v) => v instanceof JObj;
const hasExactly = (o, required, optional = []) => {
  for (const k of required) if (!o.map.has(k)) return false;
  for (const k of o.map.keys()) if (!required.includes(k) && !optional.includes(k)) return false;
  return true;
};
const allUnique = (arr) => new Set(arr).size === arr.length;

// Returns Map name -> {args: Map name->type, required: [...], kind, properties: [...]|null}
function validateCatalog(tools) {
  if (!Array.isArray(tools)) bad("tools is not an array");
  if (tools.length < 1 || tools.length > 8) bad("IN-COUNT: catalog must have 1 to 8 entries");
  const cat = new Map();
  for (const e of tools) {
    if (!isObj(e) || !hasExactly(e, ["name", "arguments", "required", "returns"]))
      bad("IN-KEYS: entry must have exactly name, arguments, required, returns");
    const ret = e.map.get("returns");
    if (!isObj(ret)) bad("IN-RETURNS: returns is not an object");
    if (!hasExactly(ret, ["kind"], ["properties"])) bad("IN-KEYS: returns must have kind and optionally properties");
    const name = e.map.get("name");
    if (typeof name !== "string" || !isIdentifierName(name) || RESERVED.has(name))
      bad("IN-NAME: tool name is not a non-reserved IdentifierName");
    if (cat.has(name)) bad("IN-UNIQUE: duplicate tool name");
    const args = e.map.get("arguments");
    if (!isObj(args)) bad("IN-ARGS: arguments is not an object");
    if (args.map.size > 4) bad("IN-ARGS: more than 4 arguments");
    for (const [k, v] of args.map) {
      if (!isIdentifierName(k)) bad("IN-ARGS: argument name is not an IdentifierName");
      if (v !== "string" && v !== "number" && v !== "boolean") bad("IN-ARGS: bad argument type");
    }
    const req = e.map.get("required");
    if (!Array.isArray(req)) bad("IN-REQUIRED: required is not an array");
    for (const r of req) {
      if (typeof r !== "string") bad("IN-REQUIRED: required entry is not a string");
      if (!args.map.has(r)) bad("IN-REQUIRED: required names an undeclared argument");
    }
    if (!allUnique(req)) bad("IN-UNIQUE: duplicate required entry");
    const kind = ret.map.get("kind");
    if (kind !== "text" && kind !== "object" && kind !== "array") bad("IN-RETURNS: bad kind");
    let props = null;
    if (ret.map.has("properties")) {
      if (kind === "text") bad("IN-RETURNS: properties with kind text");
      props = ret.map.get("properties");
      if (!Array.isArray(props)) bad("IN-RETURNS: properties is not an array");
      for (const p of props) if (!isIdentifierName(p)) bad("IN-RETURNS: property is not an IdentifierName");
      if (!allUnique(props)) bad("IN-UNIQUE: duplicate property");
    }
    cat.set(name, { args: args.map, required: req, kind, properties: props });
  }
  return cat;
}

// Returns a normalized plan: {mode, calls: [{tool, args: [[name, value]...]}], kind, fields|null, limit|null}
function validatePlan(plan, cat) {
  // PL-SCHEMA
  if (!isObj(plan) || !hasExactly(plan, ["mode", "calls", "output"])) bad("PL-SCHEMA: plan must have exactly mode, calls, output");
  const mode = plan.map.get("mode");
  if (mode !== "single" && mode !== "sequential" && mode !== "parallel") bad("PL-SCHEMA: bad mode");
  const calls = plan.map.get("calls");
  if (!Array.isArray(calls) || calls.length < 1 || calls.length > 3) bad("PL-SCHEMA: calls must be an array of 1 to 3");
  for (const c of calls) {
    if (!isObj(c) || !hasExactly(c, ["tool", "args"])) bad("PL-SCHEMA: call must have exactly tool and args");
    if (typeof c.map.get("tool") !== "string") bad("PL-SCHEMA: tool is not a string");
    const a = c.map.get("args");
    if (!isObj(a) || a.map.size > 4) bad("PL-SCHEMA: args must be an object of at most 4 members");
    for (const v of a.map.values())
      if (!(typeof v === "string" || typeof v === "boolean" || v instanceof Num)) bad("PL-SCHEMA: arg value type");
  }
  const out = plan.map.get("output");
  if (!isObj(out) || !hasExactly(out, ["kind"], ["fields", "limit"])) bad("PL-SCHEMA: output members");
  const kind = out.map.get("kind");
  if (kind !== "all" && kind !== "last") bad("PL-SCHEMA: bad output kind");
  let fields = null;
  if (out.map.has("fields")) {
    fields = out.map.get("fields");
    if (!Array.isArray(fields) || fields.length < 1 || fields.length > 3) bad("PL-SCHEMA: fields must be 1 to 3 strings");
    for (const f of fields) if (typeof f !== "string") bad("PL-SCHEMA: field is not a string");
    if (!allUnique(fields)) bad("PL-SCHEMA: duplicate field");
  }
  let limit = null;
  if (out.map.has("limit")) {
    const l = out.map.get("limit");
    if (!(l instanceof Num)) bad("PL-SCHEMA: limit is not a number");
    const li = exactInteger(l);
    if (li === undefined || li < 0n || li > 100n) bad("PL-SCHEMA: limit must be an integer from 0 to 100");
    limit = Number(li);
  }
  // PL-MODE
  if (mode === "single" ? calls.length !== 1 : calls.length < 2) bad("PL-MODE: wrong number of calls for mode");
  // PL-TOOL, PL-ARGS
  const norm = [];
  for (const c of calls) {
    const tool = c.map.get("tool");
    const t = cat.get(tool);
    if (!t) bad("PL-TOOL: unknown tool");
    const args = [];
    for (const [k, v] of c.map.get("args").map) {
      if (!t.args.has(k)) bad("PL-ARGS: undeclared argument");
      const ty = t.args.get(k);
      if (ty === "string") {
        if (typeof v !== "string") bad("PL-ARGS: expected a string");
        args.push([k, v]);
      } else if (ty === "boolean") {
        if (typeof v !== "boolean") bad("PL-ARGS: expected a boolean");
        args.push([k, v]);
      } else {
        if (!(v instanceof Num)) bad("PL-ARGS: expected a number");
        const x = exactNumber(v);
        if (x === undefined) bad("PL-ARGS: number is not finite and exact");
        args.push([k, x]);
      }
    }
    for (const r of t.required) if (!c.map.get("args").map.has(r)) bad("PL-ARGS: missing required argument");
    norm.push({ tool, args });
  }
  // PL-SHAPE
  const shapedTool = mode === "single" && cat.get(norm[0].tool).kind === "array";
  if ((fields !== null || limit !== null) && !shapedTool) bad("PL-SHAPE: fields/limit only for a single array call");
  if (fields !== null) {
    const props = cat.get(norm[0].tool).properties || [];
    for (const f of fields) if (!props.includes(f)) bad("PL-SHAPE: field not among the tool's properties");
  }
  return { mode, calls: norm, kind, shaped: shapedTool, fields, limit };
}

// ---------------------------------------------------------------------------
// Code generation.

const str = (s) => JSON.stringify(s); // a valid JS string literal (lone surrogates escaped)
const num = (x) => (Object.is(x, -0) ? "-0" : String(x));
const lit = (v) => (typeof v === "string" ? str(v) : typeof v === "boolean" ? String(v) : num(v));

function argsLiteral(args) {
  // Computed keys always create own data properties, "__proto__" included.
  return "{" + args.map(([k, v]) => "[" + str(k) + "]: " + lit(v)).join(", ") + "}";
}

function generate(p) {
  const L = [];
  L.push('"use strict";');
  // One call: invoke the tool synchronously, turn every outcome into a record.
  L.push("const $call = async ($name, $args) => {");
  L.push("  let $v;");
  L.push("  try {");
  L.push("    $v = await tools[$name]($args);");
  L.push("  } catch ($e) {");
  L.push("    return { ok: false, error: $e };");
  L.push("  }");
  L.push("  return { ok: true, value: $v };");
  L.push("};");
  const inv = p.calls.map((c) => "$call(" + str(c.tool) + ", " + argsLiteral(c.args) + ")");
  const names = p.calls.map((_, k) => "$r" + k);
  if (p.mode === "parallel") {
    L.push("const $ps = [" + inv.join(", ") + "];");
    L.push("const $settled = await Promise.allSettled($ps);");
    names.forEach((r, k) => {
      L.push("const " + r + " = $settled[" + k + "].status === \"fulfilled\" ? $settled[" + k +
        "].value : { ok: false, error: $settled[" + k + "].reason };");
    });
  } else {
    inv.forEach((c, k) => L.push("let " + names[k] + " = await " + c + ";"));
  }
  if (p.shaped) {
    const r = names[0];
    L.push("if (" + r + ".ok) {");
    L.push("  const $rows = " + r + ".value;");
    L.push("  if (!Array.isArray($rows)) {");
    L.push("    " + r + " = { ok: false, error: new Error(\"shape error: the tool's value is not an array\") };");
    L.push("  } else {");
    if (p.fields !== null) {
      const fl = "[" + p.fields.map(str).join(", ") + "]";
      L.push("    const $fields = " + fl + ";");
      L.push("    let $badRow = -1;");
      L.push("    const $proj = [];");
      L.push("    for (let $i = 0; $i < $rows.length; $i++) {");
      L.push("      const $row = $rows[$i];");
      L.push("      if (typeof $row !== \"object\" || $row === null || Array.isArray($row)) { $badRow = $i; break; }");
      L.push("      let $ok = true;");
      L.push("      for (let $j = 0; $j < $fields.length; $j++) {");
      L.push("        if (!Object.prototype.hasOwnProperty.call($row, $fields[$j])) { $ok = false; break; }");
      L.push("      }");
      L.push("      if (!$ok) { $badRow = $i; break; }");
      L.push("      $proj[$proj.length] = {" + p.fields.map((f) => "[" + str(f) + "]: $row[" + str(f) + "]").join(", ") + "};");
      L.push("    }");
      L.push("    if ($badRow >= 0) {");
      L.push("      " + r + " = { ok: false, error: new Error(\"shape error: row \" + $badRow + \" is not an object holding every field\") };");
      L.push("    } else {");
      if (p.limit !== null) {
        L.push("      const $out = [];");
        L.push("      for (let $i = 0; $i < $proj.length && $i < " + p.limit + "; $i++) $out[$i] = $proj[$i];");
        L.push("      " + r + " = { ok: true, value: $out };");
      } else {
        L.push("      " + r + " = { ok: true, value: $proj };");
      }
      L.push("    }");
    } else if (p.limit !== null) {
      L.push("    const $out = [];");
      L.push("    for (let $i = 0; $i < $rows.length && $i < " + p.limit + "; $i++) $out[$i] = $rows[$i];");
      L.push("    " + r + " = { ok: true, value: $out };");
    }
    L.push("  }");
    L.push("}");
  }
  if (p.kind === "all") L.push("return [" + names.join(", ") + "];");
  else L.push("return " + names[names.length - 1] + ";");
  return L.join("\n") + "\n";
}

// ---------------------------------------------------------------------------
// Request handling.

function answer(line) {
  let req;
  try {
    req = parseJSON(line);
  } catch (e) {
    return { diagnostic: "bad record: not JSON (" + e.message + ")" };
  }
  if (!isObj(req)) return { diagnostic: "bad record: not a JSON object" };
  if (!hasExactly(req, ["plan", "tools"]) || !isObj(req.map.get("plan")) || !Array.isArray(req.map.get("tools")))
    return { diagnostic: "bad record: expected exactly an object plan and an array tools" };
  try {
    const cat = validateCatalog(req.map.get("tools"));
    const plan = validatePlan(req.map.get("plan"), cat);
    return { js: generate(plan) };
  } catch (e) {
    if (e instanceof Invalid) return { diagnostic: e.message };
    throw e;
  }
}

const decoder = new TextDecoder("utf-8", { fatal: true });

function handle(buf) {
  let resp;
  try {
    let line;
    try {
      line = decoder.decode(buf);
    } catch {
      resp = { diagnostic: "bad record: not UTF-8" };
    }
    if (resp === undefined) resp = answer(line);
  } catch (e) {
    resp = { diagnostic: "internal error: " + (e && e.message ? String(e.message) : "unknown") };
  }
  let text;
  try {
    text = JSON.stringify(resp);
  } catch {
    text = '{"diagnostic":"internal error"}';
  }
  process.stdout.write(text + "\n");
}

let pending = Buffer.alloc(0);
process.stdout.on("error", () => {});
process.stdin.on("data", (chunk) => {
  pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
  let start = 0;
  let nl;
  while ((nl = pending.indexOf(0x0a, start)) !== -1) {
    handle(pending.subarray(start, nl));
    start = nl + 1;
  }
  pending = pending.subarray(start);
});
process.stdin.on("end", () => {
  if (pending.length > 0) handle(pending);
  pending = Buffer.alloc(0);
});
