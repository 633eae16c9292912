// The V8 side of the kit: mock tools, an event trace, and comparison of compiled plans' results.
//
// This file is one function expression; the V8 worker (conformance/v8worker.py) calls it once per
// context, before any code under test runs, as `(<this file>)(globalThis, token)`. It installs
// `__codemode`, whose methods answer only to calls carrying `token`, a secret the worker writes into
// the scripts it evaluates and no body can read: a body that finds `__codemode` cannot drive it.
//
// The rule it lives by: no code of a body may run inside the harness's own reading, comparing and
// serializing, and nothing a body installs may change what the harness computes. So:
//
// * every intrinsic it uses is captured here, before any body ran, and called with the captured
//   Reflect.apply (never as a method, whose lookup a body could redirect); no for-of, spread or array
//   destructuring (Array.prototype[Symbol.iterator]), no instanceof (Symbol.hasInstance), no template
//   literals, no `in` on, and no property assignment to, objects whose prototype a body can reach;
// * the harness's own records inherit only from a frozen, empty, null-prototype object of its own, and
//   its lists are arrays with a null prototype, so assigning a property or an element defines it (a
//   setter on Object.prototype or an index setter on Array.prototype never runs) and reading a missing
//   one finds nothing; the descriptors it passes are null-prototype objects. Specs are copied into such
//   records on arrival, except the tool values handed to bodies, which stay the plain JSON.parse
//   objects a real tool would return, and are read only through own data properties;
// * descriptors (fresh ordinary objects) are read only after `hasOwn` says which kind they are, so an
//   inherited `value` or `get` on Object.prototype cannot answer for them;
// * values a body produced are read only through getOwnPropertyDescriptor, ownKeys, getPrototypeOf and
//   Array.isArray, never through a getter, toJSON, toString or valueOf. A Proxy's traps still run there
//   (JavaScript cannot tell a Proxy from an object without running them), so every such read is in
//   try/catch, and what a trap does becomes a fact about the result ("unreadable"), never a failure of
//   the harness. The purity comparison is made before any result is read, again after, and once more
//   after the microtasks those reads queued have run (`recheck`), so a trap cannot hide a change;
// * output is written by the harness's own serializer (JSON.stringify would look up toJSON through
//   Object.prototype and Array.prototype), in ASCII: every other code unit, lone surrogates included,
//   is a \u escape, which Python's json.loads reads back exactly.
(function (global, token) {
  "use strict";
  const apply = Reflect.apply;
  const ownKeys = Reflect.ownKeys;
  const getPrototypeOf = Object.getPrototypeOf;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const defineProperty = Object.defineProperty;
  const isExtensible = Object.isExtensible;
  const hasOwn = Object.hasOwn;
  const freeze = Object.freeze;
  const create = Object.create;
  const setPrototypeOf = Object.setPrototypeOf;
  const is = Object.is;
  const isArray = Array.isArray;
  const isError = Error.isError || (() => false);  // a brand check: runs nobody's code
  const parse = JSON.parse;
  const rawString = String.raw;
  const charCodeAt = String.prototype.charCodeAt;
  const stringSlice = String.prototype.slice;
  const numberToString = Number.prototype.toString;
  const bigintToString = BigInt.prototype.toString;
  const symbolDescription = getOwnPropertyDescriptor(Symbol.prototype, "description").get;
  const regexpExec = RegExp.prototype.exec;
  const PromiseCtor = Promise;
  const then = Promise.prototype.then;
  const MapCtor = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapHas = Map.prototype.has;
  const mapDelete = Map.prototype.delete;
  const SetCtor = Set;
  const setAdd = Set.prototype.add;
  const setHas = Set.prototype.has;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const AtomicsObject = Atomics;
  const realWaitAsync = Atomics.waitAsync;
  const toPrimitive = Symbol.toPrimitive;
  const AsyncFunction = getPrototypeOf(async function () {}).constructor;
  const ObjectPrototype = Object.prototype;
  const ErrorPrototype = Error.prototype;
  const TypeErrorPrototype = TypeError.prototype;

  const TEXT_LIMIT = 300;      // characters of one description
  const DESCRIBE_DEPTH = 8;    // nesting levels a description opens (the length limit stops it first)
  const DESCRIBE_ITEMS = 20;   // entries per object or array a description shows
  const KEY_LIMIT = 20;        // own keys of a record listed in its facts
  const KEY_TEXT = 100;        // characters of one listed key
  const TRACE_LIMIT = 64;      // start and settle events recorded per case (the done event always is)
  const INVOCATION_LIMIT = 32; // invocations recorded per case
  const PROTO_STEPS = 64;      // prototypes walked before a chain counts as endless
  const CHANGE_LIMIT = 20;     // purity changes reported
  const BIG_BIGINT = 10n ** 300n;

  // Characters that need attention when quoting: JSON output escapes everything outside printable
  // ASCII; descriptions escape controls and surrogates only. Private regexps, run with the captured exec
  // (which reads only their own lastIndex).
  const OUTSIDE_ASCII = /[^\u0020-\u007e]|["\\]/;
  const NOT_PLAIN = /[\u0000-\u001f"\\\ud800-\udfff]/;
  const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;  // a key a report writes after a dot

  // ---- the harness's own data ------------------------------------------------------------------------

  // A record: an object whose prototype is EMPTY, a frozen, empty, null-prototype object no body can
  // reach. Reading a missing key gives undefined and assigning a new one defines it, as on a
  // null-prototype object, but V8 keeps its properties fast.
  const EMPTY = freeze(create(null));

  function rec() {
    return create(EMPTY);
  }

  // A list: an array with a null prototype, so that appending by assignment defines the element (an
  // index setter on Array.prototype never runs) and nothing is inherited.
  function list() {
    return setPrototypeOf([], null);
  }

  function add(items, item) {
    items[items.length] = item;
  }

  function slice(text, start, end) {
    return apply(stringSlice, text, [start, end]);
  }

  function code(text, i) {
    return apply(charCodeAt, text, [i]);
  }

  function hex4(c) {
    const h = apply(numberToString, c, [16]);
    return "\\u" + slice("0000", 0, 4 - h.length) + h;
  }

  const SHORT_ESCAPES = rec();
  SHORT_ESCAPES[0x22] = "\\\"";
  SHORT_ESCAPES[0x5c] = "\\\\";
  SHORT_ESCAPES[0x08] = "\\b";
  SHORT_ESCAPES[0x0c] = "\\f";
  SHORT_ESCAPES[0x0a] = "\\n";
  SHORT_ESCAPES[0x0d] = "\\r";
  SHORT_ESCAPES[0x09] = "\\t";

  // A JSON string literal in ASCII only (the serializer's strings).
  function quoteAscii(text) {
    if (apply(regexpExec, OUTSIDE_ASCII, [text]) === null) return "\"" + text + "\"";
    let out = "\"";
    let start = 0;
    const n = text.length;
    for (let i = 0; i < n; i++) {
      const c = code(text, i);
      if (c >= 0x20 && c < 0x7f && c !== 0x22 && c !== 0x5c) continue;
      if (start < i) out += slice(text, start, i);
      const short = SHORT_ESCAPES[c];
      out += short !== undefined ? short : hex4(c);
      start = i + 1;
    }
    if (start < n) out += slice(text, start, n);
    return out + "\"";
  }

  // A string as JSON.stringify writes it (controls and lone surrogates escaped, other text as is), for
  // descriptions; at most `limit` code units of it are read.
  function quoteText(text, limit) {
    const cut = text.length > limit;
    if (cut) {
      text = slice(text, 0, limit);
      const last = code(text, limit - 1);
      if (last >= 0xd800 && last <= 0xdbff) text = slice(text, 0, limit - 1);  // no half pair
    }
    const tail = cut ? "...\"" : "\"";
    if (apply(regexpExec, NOT_PLAIN, [text]) === null) return "\"" + text + tail;
    let out = "\"";
    let start = 0;
    const n = text.length;
    for (let i = 0; i < n; i++) {
      const c = code(text, i);
      let escape = null;
      if (c < 0x20 || c === 0x22 || c === 0x5c) {
        escape = SHORT_ESCAPES[c];
        if (escape === undefined) escape = hex4(c);
      } else if (c >= 0xd800 && c <= 0xdbff) {
        const next = i + 1 < n ? code(text, i + 1) : 0;
        if (next >= 0xdc00 && next <= 0xdfff) { i++; continue; }
        escape = hex4(c);
      } else if (c >= 0xdc00 && c <= 0xdfff) {
        escape = hex4(c);
      }
      if (escape === null) continue;
      if (start < i) out += slice(text, start, i);
      out += escape;
      start = i + 1;
    }
    if (start < n) out += slice(text, start, n);
    return out + tail;
  }

  // The harness's data as JSON text: null-prototype records, harness arrays, primitive leaves. Record
  // keys are the harness's own identifiers and are written as they are.
  function serialize(value) {
    if (value === null || value === undefined) return "null";
    const type = typeof value;
    if (type === "string") return quoteAscii(value);
    if (type === "boolean") return value ? "true" : "false";
    if (type === "number") return value === value && value !== Infinity && value !== -Infinity ? "" + value : "null";
    let out;
    if (isArray(value)) {
      out = "[";
      const n = value.length;
      for (let i = 0; i < n; i++) out += (i ? "," : "") + serialize(value[i]);
      return out + "]";
    }
    out = "{";
    const keys = ownKeys(value);
    let first = true;
    for (let i = 0; i < keys.length; i++) {
      const v = value[keys[i]];
      if (v === undefined) continue;
      out += (first ? "\"" : ",\"") + keys[i] + "\":" + serialize(v);
      first = false;
    }
    return out + "}";
  }

  // A copy of parsed JSON as harness data (records and lists), except the members named `value`:
  // a tool's fulfilment value or failure value stays the JSON.parse object that bodies are handed.
  function harden(json) {
    if (json === null || typeof json !== "object") return json;
    if (isArray(json)) {
      const out = list();
      for (let i = 0; i < json.length; i++) add(out, harden(json[i]));
      return out;
    }
    const out = rec();
    const keys = ownKeys(json);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      out[k] = k === "value" ? json[k] : harden(json[k]);
    }
    return out;
  }

  // ---- reading what a body made (every function here may run a Proxy's trap; callers catch) -----------

  // `obj`'s own property `key`: {data, value, get, set, enumerable} or null when there is none.
  function ownProperty(obj, key) {
    const d = getOwnPropertyDescriptor(obj, key);
    if (d === undefined) return null;
    const p = rec();
    p.data = hasOwn(d, "value");
    p.value = p.data ? d.value : undefined;
    p.get = p.data ? undefined : d.get;
    p.set = p.data ? undefined : d.set;
    p.enumerable = d.enumerable === true;
    return p;
  }

  function ownData(obj, key) {
    const p = ownProperty(obj, key);
    return p !== null && p.data ? p.value : undefined;
  }

  function isObject(value) {
    return value !== null && (typeof value === "object" || typeof value === "function");
  }

  // Is `proto` on the prototype chain of `value` (what instanceof asks, without Symbol.hasInstance)?
  function inherits(value, proto) {
    if (!isObject(value)) return false;
    let p = getPrototypeOf(value);
    for (let steps = 0; p !== null && steps < PROTO_STEPS; steps++) {
      if (p === proto) return true;
      p = getPrototypeOf(p);
    }
    return false;
  }

  // The first own data property `key` along `value`'s prototype chain: {found, value, getter}.
  function inheritedData(value, key) {
    const out = rec();
    out.found = false;
    out.getter = false;
    let o = value;
    for (let steps = 0; o !== null && steps < PROTO_STEPS; steps++) {
      const p = ownProperty(o, key);
      if (p !== null) {
        out.found = true;
        if (p.data) out.value = p.value; else out.getter = true;
        return out;
      }
      o = getPrototypeOf(o);
    }
    return out;
  }

  function keyText(key) {
    if (typeof key === "symbol") return symbolText(key);
    return key.length > KEY_TEXT ? slice(key, 0, KEY_TEXT) + "..." : key;
  }

  function symbolText(symbol) {
    const d = apply(symbolDescription, symbol, []);
    if (d === undefined) return "Symbol()";
    return "Symbol(" + (d.length > KEY_TEXT ? slice(d, 0, KEY_TEXT) + "..." : d) + ")";
  }

  // ---- descriptions --------------------------------------------------------------------------------

  // A short, faithful rendering of any value for reports: primitives as JSON writes them (BigInts as
  // 123n, symbols as Symbol(...)), objects through their own properties (a getter shows as [getter] and
  // is never called), Errors as [Name: message] from own data properties, cycles as [circular]. Never
  // throws; what a trap threw shows as [reading it threw: ...].
  function describe(value) {
    const st = rec();
    st.text = "";
    st.path = list();
    st.thrown = 0;
    try {
      put(st, value, 0);
    } catch (e) {
      st.text += "[unprintable]";  // only a stack overflow or memory exhaustion gets here
    }
    const text = st.text;
    return text.length > TEXT_LIMIT ? slice(text, 0, TEXT_LIMIT) + "..." : text;
  }

  function full(st) {
    return st.text.length > TEXT_LIMIT;
  }

  function put(st, value, depth) {
    if (full(st)) return;
    const type = typeof value;
    if (value === undefined) st.text += "undefined";
    else if (value === null) st.text += "null";
    else if (type === "string") st.text += quoteText(value, TEXT_LIMIT + 1);
    else if (type === "number") st.text += is(value, -0) ? "-0" : "" + value;
    else if (type === "boolean") st.text += value ? "true" : "false";
    else if (type === "bigint") {
      const small = value < BIG_BIGINT && value > -BIG_BIGINT;
      st.text += small ? apply(bigintToString, value, []) + "n" : "[a BigInt of over 300 digits]";
    } else if (type === "symbol") st.text += symbolText(value);
    else if (type === "function") st.text += "[function]";
    else putObject(st, value, depth);
  }

  function putObject(st, value, depth) {
    for (let i = 0; i < st.path.length; i++) {
      if (st.path[i] === value) { st.text += "[circular]"; return; }
    }
    if (depth >= DESCRIBE_DEPTH) { st.text += "[...]"; return; }
    add(st.path, value);
    try {
      if (isError(value) || inherits(value, ErrorPrototype)) putError(st, value);
      else if (isArray(value)) putArray(st, value, depth);
      else putRecord(st, value, depth);
    } catch (e) {
      st.text += "[reading it threw: " + thrownText(st, e) + "]";
    }
    st.path.length -= 1;
  }

  function putError(st, value) {
    const name = errorPart(inheritedData(value, "name"), "Error");
    const message = errorPart(inheritedData(value, "message"), "");
    st.text += "[" + (name === "" ? message : message === "" ? name : name + ": " + message) + "]";
  }

  // A name or message as Error.prototype.toString shows it (strings as they are), without running code.
  function errorPart(found, fallback) {
    if (found.getter) return "[getter]";
    if (!found.found || found.value === undefined) return fallback;
    const v = found.value;
    if (typeof v === "string") return v.length > TEXT_LIMIT ? slice(v, 0, TEXT_LIMIT) : v;
    if (isObject(v)) return "[object]";
    return describe(v);
  }

  function putArray(st, value, depth) {
    const length = ownData(value, "length");
    const n = typeof length === "number" ? length : 0;
    st.text += "[";
    for (let i = 0; i < n; i++) {
      if (i) st.text += ",";
      if (i >= DESCRIBE_ITEMS || full(st)) { st.text += "..."; break; }
      putProperty(st, ownProperty(value, i), depth);
    }
    st.text += "]";
  }

  function putRecord(st, value, depth) {
    const keys = ownKeys(value);
    st.text += "{";
    for (let i = 0; i < keys.length; i++) {
      if (i) st.text += ",";
      if (i >= DESCRIBE_ITEMS || full(st)) { st.text += "..."; break; }
      const key = keys[i];
      st.text += typeof key === "symbol" ? "[" + symbolText(key) + "]" : quoteText(key, KEY_TEXT);
      st.text += ":";
      putProperty(st, ownProperty(value, key), depth);
    }
    st.text += "}";
  }

  function putProperty(st, p, depth) {
    if (p === null) st.text += "undefined";
    else if (p.data) put(st, p.value, depth + 1);
    else st.text += p.get !== undefined ? "[getter]" : "[setter]";
  }

  // What a trap threw, described without opening anything it throws in turn.
  function thrownText(st, e) {
    if (st.thrown > 0) return "[unreadable]";
    const inner = rec();
    inner.text = "";
    inner.path = list();
    inner.thrown = st.thrown + 1;
    try {
      put(inner, e, DESCRIBE_DEPTH - 1);
    } catch (again) {
      return "[unreadable]";
    }
    return inner.text.length > 100 ? slice(inner.text, 0, 100) + "..." : inner.text;
  }

  function threw(e) {
    const st = rec();
    st.thrown = 0;
    return "[reading it threw: " + thrownText(st, e) + "]";
  }

  // ---- one case -----------------------------------------------------------------------------------

  function makeFailure(failure) {
    return failure.message !== undefined ? new ErrorCtor(failure.message) : failure.value;
  }

  // Do the own keys and values of `actual` equal the plan's args (a hardened record)?
  function argsMatch(actual, expected, expectedKeys) {
    if (actual === null || typeof actual !== "object") return false;
    const keys = ownKeys(actual);
    if (keys.length !== expectedKeys.length) return false;
    for (let i = 0; i < expectedKeys.length; i++) {
      const p = ownProperty(actual, expectedKeys[i]);
      if (p === null || !p.data || !p.enumerable) return false;
      if (p.value !== expected[expectedKeys[i]]) return false;  // numbers: 0 === -0; no NaN reaches a plan
    }
    return true;
  }

  function argsMatchSafely(actual, call) {
    try {
      return argsMatch(actual, call.args, call.argKeys);
    } catch (e) {
      return false;
    }
  }

  // Does reading the argument as a real tool does (each of the call's arg names through an ordinary
  // [[Get]]) give the plan's values? null when it does, else a description of the first difference. On
  // an object whose own data properties argsMatch has seen this changes nothing, but a Proxy's get trap
  // runs here (as in any real tool) and may answer something else; whatever it does is caught.
  function readsDiffer(actual, call) {
    const keys = call.argKeys;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      let got;
      try {
        got = actual[key];
      } catch (e) {
        return describe(actual) + " whose " + quoteText(key, KEY_TEXT) + " reads as " + threw(e);
      }
      if (got !== call.args[key]) {  // numbers: 0 === -0, as argsMatch compares them
        return describe(actual) + " whose " + quoteText(key, KEY_TEXT) + " reads as " + describe(got);
      }
    }
    return null;
  }

  // The argument of a call, read again when the call settles (a real tool reads its arguments while it
  // runs, and a body may change what it passed): null when it still holds the plan's args, else its
  // description.
  function argsNow(actual, call) {
    if (!argsMatchSafely(actual, call)) return describe(actual) + " by the time the call settled";
    const wrong = readsDiffer(actual, call);
    return wrong === null ? null : wrong + " by the time the call settled";
  }

  // What the tool's rows were when handed out (a body may change them later): for each row, the row
  // itself and the own data value of each field.
  function rowsTable(value, fields) {
    const table = rec();
    table.rows = list();
    table.fields = list();
    const n = isArray(value) ? value.length : 0;
    for (let j = 0; j < n; j++) {
      const row = value[j];
      add(table.rows, row);
      const values = rec();
      if (fields !== null && row !== null && typeof row === "object" && !isArray(row)) {
        for (let k = 0; k < fields.length; k++) {
          if (hasOwn(row, fields[k])) values[fields[k]] = row[fields[k]];
        }
      }
      add(table.fields, values);
    }
    return table;
  }

  function runCase(spec, batch) {
    const c = rec();
    c.spec = spec;
    c.batch = batch;
    c.events = list();
    c.invocations = list();
    c.dropped = 0;
    c.looks = 0;       // looks at the built-ins from inside its tool calls
    c.values = rec();   // fulfilment value handed out for call i
    c.reasons = rec();  // rejection reason / thrown value for call i
    c.inSync = false;
    c.compile = null;
    c.invokeThrew = null;
    c.watch = null;
    c.done = null;
    c.result = undefined;
    c.rows = null;
    const calls = spec.calls;
    const first = spec.expect.length ? spec.expect[0] : null;
    if (first !== null && first.rows !== undefined) {
      c.rows = rowsTable(calls[first.rows.call].behaviour.value, first.rows.fields);
    }
    for (let i = 0; i < calls.length; i++) calls[i].argKeys = ownKeys(calls[i].args);
    const queues = rec();
    for (let i = 0; i < calls.length; i++) {
      const name = calls[i].tool;
      if (queues[name] === undefined) queues[name] = list();
      add(queues[name], i);
    }
    const tools = rec();
    for (let i = 0; i < calls.length; i++) {
      const name = calls[i].tool;
      const kind = calls[i].behaviour.kind;
      if (kind === "absent" || name in tools) continue;
      tools[name] = kind === "notfn" ? 42 : mockTool(c, name, queues[name]);
    }
    let fn;
    try {
      fn = new AsyncFunction("tools", spec.js);
    } catch (e) {
      c.compile = describe(e);
      return c;
    }
    let promise;
    c.inSync = true;
    try {
      promise = fn(tools);
    } catch (e) {
      c.invokeThrew = describe(e);
    }
    c.inSync = false;
    if (promise !== undefined) watch(c, promise);
    return c;
  }

  function event(c, e) {
    if (c.batch.sealed) return;
    if (c.events.length < TRACE_LIMIT) add(c.events, e); else c.dropped++;
  }

  function mockTool(c, name, queue) {
    const calls = c.spec.calls;
    const used = rec();
    return function () {
      if (c.batch.sealed) return undefined;  // called from a trap while results are read: no effect
      watchBuiltIns(c);
      const argc = arguments.length;
      const arg = argc > 0 ? arguments[0] : undefined;
      // The plan call this invocation stands for: the first unused call of this tool whose args it
      // carries, else the first unused one (so calls started out of order are still told apart).
      let index = -1;
      let argsOk = false;
      for (let k = 0; k < queue.length && index < 0; k++) {
        const i = queue[k];
        if (!used[i] && argsMatchSafely(arg, calls[i])) { index = i; argsOk = true; }
      }
      for (let k = 0; k < queue.length && index < 0; k++) if (!used[queue[k]]) index = queue[k];
      if (index >= 0) used[index] = true;
      const wrong = argsOk ? readsDiffer(arg, calls[index]) : null;
      if (wrong !== null) argsOk = false;
      let inv = null;
      if (c.invocations.length < INVOCATION_LIMIT) {
        inv = rec();
        inv.call = index;
        inv.tool = name;
        inv.argc = argc;
        inv.argsOk = argsOk;
        inv.args = argsOk ? null : wrong !== null ? wrong : describe(arg);
        add(c.invocations, inv);
      } else {
        c.dropped++;
      }
      // at the settle event of an asynchronous call: are the args still the plan's?
      const reread = () => {
        if (inv === null || !inv.argsOk || c.batch.sealed) return;
        const now = argsNow(arg, calls[index]);
        if (now !== null) {
          inv.argsOk = false;
          inv.args = now;
        }
      };
      event(c, ["start", index, c.inSync]);
      if (index < 0) { event(c, ["settle", index]); return undefined; }
      const b = calls[index].behaviour;
      switch (b.kind) {
        case "return":
          c.values[index] = b.value;
          event(c, ["settle", index]);
          return b.value;
        case "throw": {
          const reason = makeFailure(b.failure);
          c.reasons[index] = reason;
          event(c, ["settle", index]);
          throw reason;
        }
        case "resolve":
          return (async () => {
            for (let t = 0; t < b.delay; t++) await null;
            c.values[index] = b.value;
            reread();
            event(c, ["settle", index]);
            return b.value;
          })();
        case "reject":
          return (async () => {
            for (let t = 0; t < b.delay; t++) await null;
            const reason = makeFailure(b.failure);
            c.reasons[index] = reason;
            reread();
            event(c, ["settle", index]);
            throw reason;
          })();
        default:  // never
          return new PromiseCtor(() => {});
      }
    };
  }

  // Observe how the function's promise settles. Promise.prototype.then looks up the promise's
  // `constructor` and its Symbol.species, where a body that replaced them would run; an own
  // `constructor` of undefined on this fresh promise (which no body can reach) makes then use the
  // intrinsic Promise and look nothing up.
  function watch(c, promise) {
    try {
      defineProperty(promise, "constructor", { __proto__: null, value: undefined });
      apply(then, promise, [
        (value) => { settle(c, "resolved", value); },
        (reason) => { settle(c, "rejected", reason); },
      ]);
    } catch (e) {
      c.watch = describe(e);  // cannot happen with the intrinsics captured above
    }
  }

  function settle(c, how, result) {
    if (c.batch.sealed || c.done !== null) return;
    c.done = how;
    c.result = result;
    add(c.events, ["done", how]);
  }

  // ---- judging a record against what the kit expects of it -------------------------------------------

  // What a record is made of, read once: its prototype, own keys and own ok, value and error.
  function readRecord(value) {
    const view = rec();
    view.proto = getPrototypeOf(value);
    view.keys = ownKeys(value);
    view.ok = ownData(value, "ok");
    view.value = ownData(value, "value");
    view.error = ownData(value, "error");
    return view;
  }

  function unreadableFacts(text) {
    const facts = rec();
    facts.plain = false;
    facts.keys = list();
    facts.ok = null;
    facts.why = "unreadable";
    facts.text = text;
    facts.matches = list();
    return facts;
  }

  // Facts about one record; its text (costly) only when something about it is wrong.
  function recordFacts(value, want, c) {
    const facts = rec();
    facts.plain = false;
    facts.keys = list();
    facts.ok = null;
    facts.why = null;
    if (value === null || typeof value !== "object") {
      facts.why = "not-object";
      facts.text = describe(value);
      facts.matches = list();
      return facts;
    }
    let view;
    try {
      view = readRecord(value);
    } catch (e) {
      return unreadableFacts(threw(e));
    }
    facts.plain = view.proto === ObjectPrototype || view.proto === null;
    const keys = view.keys;
    for (let i = 0; i < keys.length && i < KEY_LIMIT; i++) add(facts.keys, keyText(keys[i]));
    if (keys.length > KEY_LIMIT) facts.moreKeys = keys.length - KEY_LIMIT;
    const ok = view.ok;
    facts.ok = ok === true ? true : ok === false ? false : describe(ok);
    try {
      facts.why = mismatch(view, want, c);
    } catch (e) {
      return unreadableFacts(threw(e));
    }
    if (facts.why !== null || !facts.plain || keys.length !== 2) facts.text = describe(value);
    if (facts.why !== null) facts.matches = matching(view, c);
    return facts;
  }

  // Why the record `view` differs from the expectation `want`, or null when it matches.
  function mismatch(view, want, c) {
    if (view.ok !== want.ok) return "ok";
    if (want.ok) {
      if (want.same !== undefined) return is(view.value, c.values[want.same]) ? null : "value";
      return rowsMismatch(view.value, want.rows, c);
    }
    const error = view.error;
    if (want.same !== undefined) return is(error, c.reasons[want.same]) ? null : "error";
    if (want.type === "TypeError") return inherits(error, TypeErrorPrototype) ? null : "error";
    if (want.shape) {
      if (!inherits(error, ErrorPrototype)) return "error";
      const message = inheritedData(error, "message");
      if (message.getter) return "error-message-accessor";  // never called: a getter is code of the body's
      return typeof message.value === "string" && message.value.length > 0 ? null : "error-message";
    }
    return "error";
  }

  function rowsMismatch(value, rows, c) {
    const table = c.rows;
    if (!isArray(value)) return "rows-not-array";
    const n = table.rows.length;
    const limit = rows.limit === null ? n : rows.limit < n ? rows.limit : n;
    if (ownData(value, "length") !== limit) return "rows-length";
    const fields = rows.fields;
    for (let j = 0; j < limit; j++) {
      const r = ownData(value, j);
      const o = table.rows[j];
      if (fields === null) {
        if (!is(r, o)) return "rows-order";
        continue;
      }
      if (r === o) return "row-fresh";
      if (r === null || typeof r !== "object" || isArray(r)) return "row-not-object";
      if (getPrototypeOf(r) !== ObjectPrototype) return "row-proto";
      const keys = ownKeys(r);
      if (keys.length !== fields.length) return "row-keys";
      for (let k = 0; k < fields.length; k++) if (keys[k] !== fields[k]) return "row-keys";
      const got = rec();
      for (let k = 0; k < fields.length; k++) {
        const p = ownProperty(r, fields[k]);
        if (p === null || !p.data || !p.enumerable) return "row-descriptor";
        got[fields[k]] = p.value;
      }
      if (!sameFields(got, table.fields[j], fields)) {
        for (let m = 0; m < n; m++) {
          const other = table.rows[m];
          if (m === j || other === null || typeof other !== "object") continue;
          if (sameFields(got, table.fields[m], fields)) return "rows-order";
        }
        return "row-values";
      }
    }
    return null;
  }

  function sameFields(got, want, fields) {
    for (let k = 0; k < fields.length; k++) {
      const f = fields[k];
      if (!(f in want) || !is(got[f], want[f])) return false;
    }
    return true;
  }

  // Which expectations (by call index) does this record match?
  function matching(view, c) {
    const out = list();
    const expect = c.spec.expect;
    for (let i = 0; i < expect.length; i++) {
      if (expect[i] === null) continue;
      let why;
      try {
        why = mismatch(view, expect[i], c);
      } catch (e) {
        continue;
      }
      if (why === null) add(out, i);
    }
    return out;
  }

  // Facts about the value in the place of a call that never settles: its text, and the expectations
  // it matches all the same.
  function pendingFacts(value, c) {
    const facts = rec();
    facts.text = describe(value);
    facts.matches = list();
    if (value === null || typeof value !== "object") return facts;
    try {
      facts.matches = matching(readRecord(value), c);
    } catch (e) {
      // unreadable: it matches nothing
    }
    return facts;
  }

  function observe(c) {
    const obs = rec();
    obs.compile = c.compile;
    obs.invokeThrew = c.invokeThrew;
    obs.events = c.events;
    obs.invocations = c.invocations;
    obs.done = c.done;
    obs.result = null;
    if (c.dropped > 0) obs.dropped = c.dropped;
    if (c.watch !== null) obs.harness = "observing the function's promise threw " + c.watch;
    if (c.batch.alone && clock.scheduled > 0) obs.timers = clock.scheduled;
    if (c.batch.alone && clock.capped) obs.timersPending = clock.live;
    if (c.done === "rejected") {
      obs.result = rec();
      obs.result.text = describe(c.result);
    } else if (c.done === "resolved") {
      obs.result = c.spec.output === "all" ? observeAll(c) : observeLast(c);
    }
    return obs;
  }

  function observeAll(c) {
    const value = c.result;
    const expect = c.spec.expect;
    const r = rec();
    r.isArray = false;
    r.length = null;
    r.records = list();
    let length;
    try {
      r.isArray = isArray(value);
      if (r.isArray) length = ownData(value, "length");
    } catch (e) {
      r.isArray = false;
      r.unreadable = threw(e);
      r.text = r.unreadable;
      return r;
    }
    if (!r.isArray || length !== expect.length) r.text = describe(value);
    if (!r.isArray) return r;
    r.length = typeof length === "number" ? length : null;  // (a Proxy's trap may report anything)
    for (let i = 0; i < length && i < expect.length; i++) {
      let item;
      let facts;
      try {
        const p = ownProperty(value, i);
        if (p !== null && !p.data) facts = unreadableFacts("[getter]");
        else item = p === null ? undefined : p.value;
      } catch (e) {
        facts = unreadableFacts(threw(e));
      }
      if (facts === undefined) facts = expect[i] === null ? pendingFacts(item, c) : recordFacts(item, expect[i], c);
      add(r.records, facts);
    }
    return r;
  }

  function observeLast(c) {
    const value = c.result;
    const expect = c.spec.expect;
    const last = expect[expect.length - 1];
    const r = rec();
    try {
      r.isArray = isArray(value);
    } catch (e) {
      r.isArray = false;
      r.unreadable = threw(e);
      r.record = unreadableFacts(r.unreadable);
      r.text = r.unreadable;
      return r;
    }
    const facts = last === null ? pendingFacts(value, c) : recordFacts(value, last, c);
    r.record = facts;
    if (facts.why === "unreadable") r.unreadable = r.text = facts.text;  // (no second round of traps)
    else if (r.isArray || facts.why !== null) r.text = describe(value);  // a pending call's facts have no why
    return r;
  }

  // ---- purity: what a body may not touch -------------------------------------------------------------

  // The roots of the built-ins, found when the harness loads (before any body runs).
  const ROOTS = [
    global,
    getPrototypeOf(async function () {}),
    getPrototypeOf(function* () {}),
    getPrototypeOf(async function* () {}),
    getPrototypeOf([][Symbol.iterator]()),
    getPrototypeOf(getPrototypeOf([][Symbol.iterator]())),
    getPrototypeOf(new MapCtor().entries()),
    getPrototypeOf(new SetCtor().values()),
    getPrototypeOf(""[Symbol.iterator]()),
    getPrototypeOf(/a/[Symbol.matchAll]("")),
  ];
  // Their names in reports, as ECMA-262 names the intrinsics (the globals are named by their keys).
  const ROOT_NAMES = [
    "globalThis", "%AsyncFunction.prototype%", "%GeneratorFunction.prototype%", "%AsyncGeneratorFunction.prototype%",
    "%ArrayIteratorPrototype%", "%IteratorPrototype%", "%MapIteratorPrototype%", "%SetIteratorPrototype%",
    "%StringIteratorPrototype%", "%RegExpStringIteratorPrototype%",
  ];

  let api;  // skipped by the snapshot (set below)

  // The own properties of a built-in as [key, isData, value or get, writable or set, enumerable,
  // configurable] rows. Built-ins are ordinary or exotic objects, never Proxies: reading them runs no code.
  function entriesOf(obj) {
    const keys = ownKeys(obj);
    const entries = list();
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (obj === global && key === "__codemode") continue;
      const d = getOwnPropertyDescriptor(obj, key);
      if (d === undefined) continue;
      const data = hasOwn(d, "value");
      add(entries, [key, data, data ? d.value : d.get, data ? d.writable : d.set, d.enumerable, d.configurable]);
    }
    return entries;
  }

  // Names for the built-ins, from the globals as they were before any body ran.
  function namesOf() {
    const names = new MapCtor();
    const keys = ownKeys(global);
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] === "__codemode") continue;
      const d = getOwnPropertyDescriptor(global, keys[i]);
      if (d === undefined || !hasOwn(d, "value") || !isObject(d.value)) continue;
      const name = keyText(keys[i]);
      if (!apply(mapHas, names, [d.value])) apply(mapSet, names, [d.value, name]);
      const p = getOwnPropertyDescriptor(d.value, "prototype");
      if (p !== undefined && hasOwn(p, "value") && isObject(p.value) && !apply(mapHas, names, [p.value])) {
        apply(mapSet, names, [p.value, name + ".prototype"]);
      }
    }
    apply(mapSet, names, [global, "globalThis"]);
    return names;
  }

  const PROTO = rec();  // how a built-in found as another's prototype was reached

  // Every object reachable from the roots through own properties and prototypes, with its name,
  // prototype, extensibility and own properties: taken once per context, before any body runs. A
  // built-in no global names is named, when a report needs it (nameOf), by the way it was reached: the
  // snapshot it was found from and how (PROTO, or a row of its entries: the value, or the getter or
  // setter).
  function takeBaseline() {
    const names = namesOf();
    const seen = new SetCtor();
    const base = list();
    // breadth first, so that a path is a shortest one
    const queue = list();  // [object, the snapshot it was found from (null: a root), how, root index]
    for (let i = 0; i < ROOTS.length; i++) add(queue, [ROOTS[i], null, null, i]);
    for (let head = 0; head < queue.length; head++) {
      const item = queue[head];
      queue[head] = undefined;
      const obj = item[0];
      if (!isObject(obj) || apply(setHas, seen, [obj]) || obj === api) continue;
      apply(setAdd, seen, [obj]);
      const snap = rec();
      snap.obj = obj;
      snap.name = apply(mapHas, names, [obj]) ? apply(mapGet, names, [obj])
        : item[1] === null ? ROOT_NAMES[item[3]] : null;
      snap.from = item[1];
      snap.via = item[2];
      snap.proto = getPrototypeOf(obj);
      snap.extensible = isExtensible(obj);
      snap.entries = entriesOf(obj);
      add(base, snap);
      add(queue, [snap.proto, snap, PROTO]);
      for (let i = 0; i < snap.entries.length; i++) {
        const e = snap.entries[i];
        add(queue, [e[2], snap, e]);
        if (!e[1]) add(queue, [e[3], snap, e]);
      }
    }
    return base;
  }

  // The name of a snapshot's object: its global name, or the path it was reached by from one
  // ("Object.getPrototypeOf(%AsyncGeneratorFunction.prototype%.prototype)", "the getter of
  // Map.prototype.size"); made only for a report.
  function nameOf(snap) {
    if (snap.name !== null) return snap.name;
    const parts = list();
    let s = snap;
    while (s.name === null && s.from !== null && parts.length < 8) {
      add(parts, s);
      s = s.from;
    }
    let name = s.name === null ? "a built-in object" : s.name;
    for (let i = parts.length - 1; i >= 0; i--) {
      const p = parts[i];
      if (p.via === PROTO) {
        name = "Object.getPrototypeOf(" + name + ")";
        continue;
      }
      const key = p.via[0];
      const path = typeof key === "symbol" ? name + "[" + symbolText(key) + "]"
        : apply(regexpExec, IDENTIFIER, [key]) !== null ? name + "." + keyText(key) : name + "[" + describe(key) + "]";
      name = p.via[1] ? path : (p.via[2] === p.obj ? "the getter of " : "the setter of ") + path;
    }
    snap.name = name;
    return name;
  }

  function sameEntry(a, b) {
    for (let j = 0; j < 6; j++) if (!is(a[j], b[j])) return false;
    return true;
  }

  // Are the own properties of `obj` still `entries` (without building a row per property)?
  function unchanged(obj, entries) {
    const keys = ownKeys(obj);
    let k = 0;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (obj === global && key === "__codemode") continue;
      if (k >= entries.length) return false;
      const e = entries[k++];
      if (e[0] !== key) return false;
      const d = getOwnPropertyDescriptor(obj, key);
      if (d === undefined) return false;
      const data = hasOwn(d, "value");
      if (e[1] !== data || e[4] !== d.enumerable || e[5] !== d.configurable) return false;
      if (data ? !is(e[2], d.value) || e[3] !== d.writable : e[2] !== d.get || e[3] !== d.set) return false;
    }
    return k === entries.length;
  }

  function propertyLabel(key) {
    return "property " + describe(typeof key === "symbol" ? symbolText(key) : key);
  }

  // Every change to the built-ins since the baseline, as "name: what" lines, added to `changes` unless
  // `found` (a Set) holds them already (collect compares more than once).
  function compare(base, found, changes) {
    const note = (snap, what) => {
      const line = nameOf(snap) + ": " + what;
      if (changes.length >= CHANGE_LIMIT || apply(setHas, found, [line])) return;
      apply(setAdd, found, [line]);
      add(changes, line);
    };
    for (let s = 0; s < base.length && changes.length < CHANGE_LIMIT; s++) {
      const snap = base[s];
      const obj = snap.obj;
      if (getPrototypeOf(obj) !== snap.proto) note(snap, "prototype changed");
      if (isExtensible(obj) !== snap.extensible) note(snap, "extensibility changed");
      if (unchanged(obj, snap.entries)) continue;
      const was = new MapCtor();
      for (let i = 0; i < snap.entries.length; i++) apply(mapSet, was, [snap.entries[i][0], snap.entries[i]]);
      const now = entriesOf(obj);
      const present = new SetCtor();
      for (let i = 0; i < now.length && changes.length < CHANGE_LIMIT; i++) {
        const e = now[i];
        apply(setAdd, present, [e[0]]);
        if (!apply(mapHas, was, [e[0]])) note(snap, propertyLabel(e[0]) + " added");
        else if (!sameEntry(apply(mapGet, was, [e[0]]), e)) note(snap, propertyLabel(e[0]) + " changed");
      }
      for (let i = 0; i < snap.entries.length && changes.length < CHANGE_LIMIT; i++) {
        const key = snap.entries[i][0];
        if (!apply(setHas, present, [key])) note(snap, propertyLabel(key) + " removed");
      }
    }
  }

  // The built-ins bodies tamper with most, for the tripwire (found when the harness loads).
  const HOT = [
    global, Object, ObjectPrototype, Array, Array.prototype, Function.prototype, PromiseCtor, PromiseCtor.prototype,
    ErrorCtor, ErrorPrototype, Symbol, Reflect, JSON, Math, String.prototype, Number.prototype, ROOTS[1], ROOTS[4],
    ROOTS[5],
  ];
  const WATCH_LIMIT = 8;  // tool invocations per alone run at which the built-ins are compared

  function hotCounts() {
    const counts = list();
    for (let i = 0; i < HOT.length; i++) add(counts, ownKeys(HOT[i]).length);
    return counts;
  }

  // A look at the built-ins while a tool runs, inside the body: a change the body undoes before its
  // promise settles (in a `then` getter, or a Proxy's get trap, which the engine's own promise
  // resolution runs) is seen here if it was alive while a tool ran. Alone runs compare every built-in
  // at each of the first WATCH_LIMIT invocations; batches, at each case's first invocation, only count
  // the own keys of the hottest ones (a tripwire, about 20 us: a batch that trips it is judged alone,
  // case by case).
  function watchBuiltIns(c) {
    const batch = c.batch;
    if (!batch.purity || batch.tripped || c.looks >= (batch.alone ? WATCH_LIMIT : 1)) return;
    c.looks++;
    try {
      if (batch.alone) {
        compare(baseline, batch.found, batch.changes);
        return;
      }
      for (let i = 0; i < HOT.length; i++) {
        if (ownKeys(HOT[i]).length !== hotBaseline[i]) {
          add(batch.changes, "the built-ins changed while a tool ran");
          batch.tripped = true;
          return;
        }
      }
    } catch (e) {
      // a stack overflow inside the body's deepest call: the comparisons after it settles still run
    }
  }

  // ---- virtual time ----------------------------------------------------------------------------------

  // Timers never wait in real time and never run outside the harness's control. The harness replaces
  // setTimeout, setInterval, clearTimeout and clearInterval (mini-racer's own setTimeout waits in real
  // time, through Atomics.waitAsync, and fires whenever its event loop gets to it) and wraps
  // Atomics.waitAsync, before the baseline of the built-ins is taken, so a body that replaces them is
  // impure. A timer is a record on the batch's clock; after the microtask queue has drained, the worker
  // calls `fire` once per eval, which runs the timer due first (by due time, then by when it was set) at
  // that virtual time, and the microtasks it queued drain before the next; until none is pending or
  // TIMER_CAP firings (per batch: a case alone has its own) have run. "Never settles" is then judged
  // with virtual time run out: every finite timer has fired, and a never-settling tool still has not
  // settled. Delays follow Node: a delay that is not a number from 1 to 2^31-1 is 1 ms.
  const TIMER_CAP = 1000;
  const TIMEOUT_MAX = 2147483647;
  let timerIds = 0;  // ids of setTimeout and setInterval, unique in the context

  function newClock() {
    const k = rec();
    k.now = 0;              // virtual milliseconds since the batch started
    k.seq = 0;              // order of setting, for timers due at the same time
    k.heap = list();        // pending timers (cancelled ones are skipped when they come up)
    k.byId = new MapCtor(); // id -> timer, for clearTimeout and clearInterval
    k.live = 0;             // timers pending
    k.scheduled = 0;        // timers set (an interval once)
    k.fired = 0;            // firings (an interval's each)
    k.capped = false;       // TIMER_CAP reached with timers pending
    return k;
  }

  let clock = newClock();  // the batch's (replaced when a batch starts: what is left of the last one never fires)

  function earlier(a, b) {
    return a.due < b.due || (a.due === b.due && a.seq < b.seq);
  }

  function heapPush(heap, t) {
    let i = heap.length;
    heap[i] = t;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!earlier(heap[i], heap[parent])) break;
      const x = heap[parent];
      heap[parent] = heap[i];
      heap[i] = x;
      i = parent;
    }
  }

  function heapPop(heap) {
    const top = heap[0];
    const last = heap[heap.length - 1];
    heap.length -= 1;
    const n = heap.length;
    if (n === 0) return top;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && earlier(heap[l], heap[m])) m = l;
      if (r < n && earlier(heap[r], heap[m])) m = r;
      if (m === i) break;
      const x = heap[m];
      heap[m] = heap[i];
      heap[i] = x;
      i = m;
    }
    return top;
  }

  // A timer due `delay` virtual ms from now, calling `callback` with `args` (every `delay` ms if `repeat`).
  function schedule(callback, args, delay, repeat) {
    const k = clock;
    const t = rec();
    t.clock = k;
    t.id = 0;
    t.callback = callback;
    t.args = args;
    t.repeat = repeat ? delay : 0;
    t.due = k.now + delay;
    t.seq = k.seq++;
    t.live = true;
    heapPush(k.heap, t);
    k.live++;
    k.scheduled++;
    return t;
  }

  function cancel(t) {
    if (!t.live) return;
    t.live = false;
    t.clock.live--;
    if (t.id !== 0) apply(mapDelete, t.clock.byId, [t.id]);
  }

  function startTimer(callback, delay, argv, repeat) {
    if (typeof callback !== "function") {
      throw new TypeErrorCtor("The \"callback\" argument must be of type function");
    }
    const args = list();
    for (let i = 2; i < argv.length; i++) add(args, argv[i]);
    let after = +delay;  // ToNumber, as Node's `after *= 1`: a body's valueOf runs here, in its own call
    if (!(after >= 1 && after <= TIMEOUT_MAX)) after = 1;
    const t = schedule(callback, args, after, repeat);
    t.id = ++timerIds;
    apply(mapSet, clock.byId, [t.id, t]);
    return t.id;
  }

  function stopTimer(id) {
    if (typeof id !== "number" && typeof id !== "string") return;
    const key = +id;  // a primitive: no code runs
    if (apply(mapHas, clock.byId, [key])) cancel(apply(mapGet, clock.byId, [key]));
  }

  // A promise whose `then` looks nothing up (see watch): own `constructor` undefined.
  const RESOLVED = new PromiseCtor((resolve) => { resolve(undefined); });
  defineProperty(RESOLVED, "constructor", { __proto__: null, value: undefined });

  const TIMER_FUNCTIONS = {
    __proto__: null,
    setTimeout(callback, delay) {
      return startTimer(callback, delay, arguments, false);
    },
    setInterval(callback, delay) {
      return startTimer(callback, delay, arguments, true);
    },
    clearTimeout(id) {
      stopTimer(id);
    },
    clearInterval(id) {
      stopTimer(id);
    },
    // Node and browsers have it, mini-racer does not; a microtask is no timer (it drains with the rest)
    queueMicrotask(callback) {
      if (typeof callback !== "function") {
        throw new TypeErrorCtor("The \"callback\" argument must be of type function");
      }
      apply(then, RESOLVED, [() => { apply(callback, undefined, []); }]);
    },
  };

  // Atomics.waitAsync as the engine has it, except that a finite positive timeout is a virtual timer:
  // the real function validates the arguments and compares the value (its synchronous "not-equal" and,
  // for a timeout of 0, "timed-out" stand), and waits for Atomics.notify with no timeout of its own;
  // the promise handed back settles with the engine's "ok" when notified, or with "timed-out" when the
  // virtual timer fires first. (A waiter that timed out so stays in the engine's list: a later notify
  // counts it among those it woke.)
  const WAIT_ASYNC = {
    __proto__: null,
    waitAsync(typedArray, index, value, timeout) {
      let virtual = -1;
      const probe = create(null);
      // called by the engine for ToNumber(timeout), in its place among the argument conversions
      probe[toPrimitive] = () => {
        const q = +timeout;
        if (q !== q || q === Infinity) return q;  // no timeout: waits until notified
        if (q <= 0) return 0;
        virtual = q;
        return Infinity;
      };
      const result = apply(realWaitAsync, AtomicsObject, [typedArray, index, value, probe]);
      if (virtual < 0 || ownData(result, "async") !== true) return result;
      const engine = ownData(result, "value");
      let settle;
      let settled = false;
      const promise = new PromiseCtor((resolve) => { settle = resolve; });
      const timer = schedule(() => {
        if (settled) return;
        settled = true;
        settle("timed-out");
      }, list(), virtual, false);
      defineProperty(engine, "constructor", { __proto__: null, value: undefined });
      apply(then, engine, [(outcome) => {
        if (settled) return;
        settled = true;
        cancel(timer);
        settle(outcome);
      }]);
      defineProperty(result, "value", { __proto__: null, value: promise, writable: true, enumerable: true, configurable: true });
      return result;
    },
  }.waitAsync;

  function installTimers() {
    const names = ownKeys(TIMER_FUNCTIONS);
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      const fn = TIMER_FUNCTIONS[name];
      if (hasOwn(global, name)) {
        defineProperty(global, name, { __proto__: null, value: fn });  // mini-racer's: a var, not configurable
      } else {
        defineProperty(global, name, { __proto__: null, value: fn, writable: true, enumerable: true, configurable: true });
      }
    }
    if (typeof realWaitAsync === "function") {
      defineProperty(AtomicsObject, "waitAsync", { __proto__: null, value: WAIT_ASYNC });
    }
  }

  // Fire the timer due first, at its due time; the microtasks it queued run when this eval ends.
  // "fired", "idle" (no timer pending) or "cap" (TIMER_CAP firings ran, and timers are still pending).
  function fire(t) {
    check(t);
    if (current === null) throw new ErrorCtor("no batch in flight");
    const k = clock;
    if (k.live === 0) return "idle";
    if (k.fired >= TIMER_CAP) {
      k.capped = true;
      return "cap";
    }
    let timer = heapPop(k.heap);
    while (!timer.live) timer = heapPop(k.heap);
    if (timer.due > k.now) k.now = timer.due;
    k.fired++;
    if (timer.repeat > 0) {
      timer.due = k.now + timer.repeat;
      timer.seq = k.seq++;
      heapPush(k.heap, timer);
    } else {
      cancel(timer);
    }
    try {
      apply(timer.callback, undefined, timer.args);
    } catch (e) {
      // an exception a timer's callback did not catch: the next timers still fire (as in a browser)
    }
    return "fired";
  }

  // Must the worker fire timers before the harness reads (collect) or compares (recheck)?
  function timersPending() {
    return clock.live > 0 && !clock.capped;
  }

  // ---- batches ---------------------------------------------------------------------------------------

  // taken before the first body runs: at the first run of a shared context (whatever its purity, so that
  // later batches with purity can use the context), at an alone run's only run if it has purity
  let baseline = null;
  let hotBaseline = null;
  let tainted = false;   // a body has run in this context
  let current = null;    // the batch in flight: {cases, purity, sealed, found, changes}

  function check(t) {
    if (t !== token) throw new ErrorCtor("__codemode answers the kit only");
  }

  // Start every case of a batch (JSON text). Microtasks run after this returns, within the same eval.
  function run(t, batchText, purity, alone) {
    check(t);
    if (current !== null) throw new ErrorCtor("a batch is already in flight");
    if (baseline === null && !tainted && (purity || !alone)) {
      baseline = takeBaseline();
      hotBaseline = hotCounts();
    }
    if (purity && baseline === null) throw new ErrorCtor("no clean baseline: bodies ran in this context before it");
    const specs = harden(parse(batchText));
    clock = newClock();
    const batch = rec();
    batch.cases = list();
    batch.purity = purity === true;
    batch.alone = alone === true;
    batch.tripped = false;
    batch.sealed = false;
    batch.found = new SetCtor();
    batch.changes = list();
    current = batch;
    tainted = true;
    for (let i = 0; i < specs.length; i++) add(batch.cases, runCase(specs[i], batch));
    return specs.length;
  }

  // What happened, as JSON text: one observation per case, and every change any of them made to a
  // global or a built-in. The built-ins are compared before any result is read, and again after.
  // "timers" instead, reading nothing, while timers are pending: the worker fires them first.
  function collect(t) {
    check(t);
    const batch = current;
    if (batch === null) throw new ErrorCtor("no batch in flight");
    if (timersPending()) return "timers";
    batch.sealed = true;
    if (batch.purity) compare(baseline, batch.found, batch.changes);
    const observations = list();
    for (let i = 0; i < batch.cases.length; i++) add(observations, observe(batch.cases[i]));
    if (batch.purity) compare(baseline, batch.found, batch.changes);
    else current = null;
    const out = rec();
    out.observations = observations;
    out.purity = batch.changes;
    if (clock.capped) out.timerCap = true;
    return serialize(out);
  }

  // Changes not reported by collect, made by code that ran after it (microtasks its reads queued, and
  // timers they set, which the worker fires first: "timers"), as a JSON array; ends the batch.
  function recheck(t) {
    check(t);
    const batch = current;
    if (batch === null || !batch.purity) throw new ErrorCtor("no batch to recheck");
    if (timersPending()) return "timers";
    current = null;
    const late = list();
    compare(baseline, batch.found, late);
    return serialize(late);
  }

  for (let i = 0; i < ROOTS.length; i++) if (!isObject(ROOTS[i])) throw new ErrorCtor("a root is missing");
  installTimers();  // before any baseline: the harness's timers are built-ins like any other
  api = freeze({
    __proto__: null,
    run: freeze((t, text, purity, alone) => run(t, text, purity, alone)),
    collect: freeze((t) => collect(t)),
    recheck: freeze((t) => recheck(t)),
    fire: freeze((t) => fire(t)),
    raw: rawString,
  });
  defineProperty(global, "__codemode", {
    __proto__: null, value: api, writable: false, enumerable: false, configurable: false,
  });
})
