// The V8 side of the kit: mock tools, an event trace, and comparison of compiled plans' results.
//
// Loaded once per context. Everything it needs from the language is captured here, before any code
// under test runs, so a body that replaces a global cannot change how it is judged. Data comes in as
// JSON text and goes out as JSON.stringify text only (lone surrogates survive both ways).
(function (global) {
  "use strict";
  const AsyncFunction = (async function () {}).constructor;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const is = Object.is;
  const create = Object.create;
  const freeze = Object.freeze;
  const isExtensible = Object.isExtensible;
  const getPrototypeOf = Object.getPrototypeOf;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const defineProperty = Object.defineProperty;
  const ownKeys = Reflect.ownKeys;
  const apply = Reflect.apply;
  const isArray = Array.isArray;
  const ObjectPrototype = Object.prototype;
  const PromiseCtor = Promise;
  const then = Promise.prototype.then;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;
  const push = Array.prototype.push;
  const MapCtor = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapHas = Map.prototype.has;
  const SetCtor = Set;
  const setAdd = Set.prototype.add;
  const setHas = Set.prototype.has;
  const symbolToString = Symbol.prototype.toString;
  const errorToString = Error.prototype.toString;
  const TEXT_LIMIT = 300;

  const add = (list, item) => { apply(push, list, [item]); };

  // A short, faithful rendering of any value for reports (JSON where possible, never throws).
  function describe(value) {
    let text;
    try {
      if (value === undefined) text = "undefined";
      else if (typeof value === "symbol") text = apply(symbolToString, value, []);
      else if (typeof value === "function") text = "[function]";
      else if (typeof value === "bigint") text = StringCtor(value) + "n";
      else if (value instanceof ErrorCtor) {
        text = apply(errorToString, value, []);
        text = "[" + text + "]";
      } else {
        text = stringify(value, (k, v) => {
          if (v === undefined) return "[undefined]";
          if (typeof v === "function") return "[function]";
          if (v instanceof ErrorCtor) return "[" + apply(errorToString, v, []) + "]";
          return v;
        });
        if (text === undefined) text = "undefined";
      }
    } catch (e) {
      text = "[unprintable " + typeof value + "]";
    }
    return text.length > TEXT_LIMIT ? text.slice(0, TEXT_LIMIT) + "..." : text;
  }

  function keyName(key) {
    return typeof key === "symbol" ? apply(symbolToString, key, []) : key;
  }

  function protoName(value) {
    const proto = getPrototypeOf(value);
    if (proto === ObjectPrototype) return "Object.prototype";
    if (proto === null) return "null";
    return "other";
  }

  function sameJSON(a, b) {
    return a === b;  // numbers: 0 === -0; no NaN ever reaches a plan
  }

  // Do the own keys and values of `actual` equal the plan's args object `expected` (from JSON.parse)?
  function argsMatch(actual, expected) {
    if (actual === null || typeof actual !== "object") return false;
    const keys = ownKeys(actual);
    const want = ownKeys(expected);
    if (keys.length !== want.length) return false;
    for (const key of want) {
      const d = getOwnPropertyDescriptor(actual, key);
      if (d === undefined || !("value" in d) || !d.enumerable) return false;
      if (!sameJSON(d.value, expected[key])) return false;
    }
    return true;
  }

  // ---- one case -----------------------------------------------------------------------------------

  function makeFailure(spec) {
    return "message" in spec ? new ErrorCtor(spec.message) : spec.value;
  }

  function runCase(spec) {
    const c = {
      spec,
      events: [],
      invocations: [],
      values: [],     // fulfilment value handed out for call i
      reasons: [],    // rejection reason / thrown value for call i
      inSync: false,
      compile: null,
      invokeThrew: null,
      done: null,
      result: undefined,
    };
    const event = (e) => add(c.events, e);
    const calls = spec.calls;
    const queues = create(null);
    for (let i = 0; i < calls.length; i++) {
      const name = calls[i].tool;
      if (!queues[name]) queues[name] = [];
      add(queues[name], i);
    }
    const tools = create(null);
    for (let i = 0; i < calls.length; i++) {
      const name = calls[i].tool;
      const kind = calls[i].behaviour.kind;
      if (kind === "absent" || name in tools) continue;
      if (kind === "notfn") { tools[name] = 42; continue; }
      const queue = queues[name];
      const used = [];
      tools[name] = function () {
        // The plan call this invocation stands for: the first unused call of this tool whose args it
        // carries, else the first unused one (so calls started out of order are still told apart).
        let index = -1;
        for (const i of queue) {
          if (!used[i] && argsMatch(arguments[0], calls[i].args)) { index = i; break; }
        }
        if (index < 0) for (const i of queue) if (!used[i]) { index = i; break; }
        if (index >= 0) used[index] = true;
        const inv = {
          call: index,
          tool: name,
          argc: arguments.length,
          argsOk: index >= 0 && argsMatch(arguments[0], calls[index].args),
          args: null,
        };
        if (!inv.argsOk) inv.args = describe(arguments[0]);
        add(c.invocations, inv);
        event(["start", index, c.inSync]);
        if (index < 0) { event(["settle", index]); return undefined; }
        const b = calls[index].behaviour;
        switch (b.kind) {
          case "return":
            c.values[index] = b.value;
            event(["settle", index]);
            return b.value;
          case "throw": {
            const reason = makeFailure(b.failure);
            c.reasons[index] = reason;
            event(["settle", index]);
            throw reason;
          }
          case "resolve":
            return (async () => {
              for (let t = 0; t < b.delay; t++) await null;
              c.values[index] = b.value;
              event(["settle", index]);
              return b.value;
            })();
          case "reject":
            return (async () => {
              for (let t = 0; t < b.delay; t++) await null;
              const reason = makeFailure(b.failure);
              c.reasons[index] = reason;
              event(["settle", index]);
              throw reason;
            })();
          default:  // never
            return new PromiseCtor(() => {});
        }
      };
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
    if (promise !== undefined) {
      apply(then, promise, [
        (value) => { c.done = "resolved"; c.result = value; event(["done", "resolved"]); },
        (reason) => { c.done = "rejected"; c.result = reason; event(["done", "rejected"]); },
      ]);
    }
    return c;
  }

  // ---- judging a record against what the kit expects of it -------------------------------------------

  // Facts about one record; its text (costly) only when something about it is wrong.
  function recordFacts(rec, want, c) {
    const facts = { plain: false, keys: [], ok: null, why: null };
    if (rec === null || typeof rec !== "object") {
      facts.why = "not-object";
      facts.text = describe(rec);
      return facts;
    }
    facts.plain = protoName(rec) !== "other";
    const keys = ownKeys(rec);
    for (const k of keys) add(facts.keys, keyName(k));
    const okDesc = getOwnPropertyDescriptor(rec, "ok");
    const ok = okDesc && "value" in okDesc ? okDesc.value : undefined;
    facts.ok = ok === true ? true : ok === false ? false : describe(ok);
    facts.why = mismatch(rec, ok, want, c);
    if (facts.why !== null || !facts.plain || keys.length !== 2) facts.text = describe(rec);
    return facts;
  }

  function own(rec, key) {
    const d = getOwnPropertyDescriptor(rec, key);
    return d && "value" in d ? d.value : undefined;
  }

  // Why `rec` differs from the expectation `want`, or null when it matches.
  function mismatch(rec, ok, want, c) {
    if (ok !== want.ok) return "ok";
    if (want.ok) {
      const value = own(rec, "value");
      if ("same" in want) return is(value, c.values[want.same]) ? null : "value";
      return rowsMismatch(value, want.rows, c);
    }
    const error = own(rec, "error");
    if ("same" in want) return is(error, c.reasons[want.same]) ? null : "error";
    if (want.type === "TypeError") return error instanceof TypeErrorCtor ? null : "error";
    if (want.shape) {
      if (!(error instanceof ErrorCtor)) return "error";
      const m = getOwnPropertyDescriptor(error, "message");
      const message = m && "value" in m ? m.value : error.message;
      return typeof message === "string" && message.length > 0 ? null : "error-message";
    }
    return "error";
  }

  function rowsMismatch(value, rows, c) {
    const orig = c.values[rows.call];
    if (!isArray(value)) return "rows-not-array";
    const limit = rows.limit === null ? orig.length : Math.min(rows.limit, orig.length);
    if (value.length !== limit) return "rows-length";
    const fields = rows.fields;
    for (let j = 0; j < limit; j++) {
      const r = value[j];
      const o = orig[j];
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
      for (const f of fields) {
        const d = getOwnPropertyDescriptor(r, f);
        if (!("value" in d) || !d.enumerable) return "row-descriptor";
      }
      let same = true;
      for (const f of fields) if (!is(r[f], o[f])) same = false;
      if (!same) {
        for (let m = 0; m < orig.length; m++) {
          const other = orig[m];
          if (m === j || other === null || typeof other !== "object") continue;
          let all = true;
          for (const f of fields) if (!is(r[f], other[f])) all = false;
          if (all) return "rows-order";
        }
        return "row-values";
      }
    }
    return null;
  }

  // Which expectations (by call index) does this record match?
  function matching(rec, c) {
    const out = [];
    if (rec === null || typeof rec !== "object") return out;
    const ok = own(rec, "ok");
    const expect = c.spec.expect;
    for (let i = 0; i < expect.length; i++) {
      if (expect[i] !== null && mismatch(rec, ok, expect[i], c) === null) add(out, i);
    }
    return out;
  }

  function observe(c) {
    const obs = {
      compile: c.compile,
      invokeThrew: c.invokeThrew,
      events: c.events,
      invocations: c.invocations,
      done: c.done,
      result: null,
    };
    if (c.done === "rejected") {
      obs.result = { text: describe(c.result) };
    } else if (c.done === "resolved") {
      const value = c.result;
      const expect = c.spec.expect;
      if (c.spec.output === "all") {
        const r = { isArray: isArray(value), length: null, records: [] };
        if (!r.isArray || value.length !== expect.length) r.text = describe(value);
        if (r.isArray) {
          r.length = value.length;
          for (let i = 0; i < value.length && i < expect.length; i++) {
            const facts = expect[i] === null ? { text: describe(value[i]) } : recordFacts(value[i], expect[i], c);
            if (facts.why !== null) facts.matches = matching(value[i], c);
            add(r.records, facts);
          }
        }
        obs.result = r;
      } else {
        const last = expect[expect.length - 1];
        const facts = last === null ? { text: describe(value) } : recordFacts(value, last, c);
        if (facts.why !== null) facts.matches = matching(value, c);
        obs.result = { isArray: isArray(value), record: facts };
        if (obs.result.isArray || facts.why !== null) obs.result.text = describe(value);
      }
    }
    return obs;
  }

  // ---- purity: what a body may not touch -------------------------------------------------------------

  function intrinsics() {
    const roots = [global];
    add(roots, getPrototypeOf(async function () {}));
    add(roots, getPrototypeOf(function* () {}));
    add(roots, getPrototypeOf(async function* () {}));
    add(roots, getPrototypeOf([][Symbol.iterator]()));
    add(roots, getPrototypeOf(getPrototypeOf([][Symbol.iterator]())));
    add(roots, getPrototypeOf(new MapCtor().entries()));
    add(roots, getPrototypeOf(new SetCtor().values()));
    add(roots, getPrototypeOf(""[Symbol.iterator]()));
    add(roots, getPrototypeOf(/a/[Symbol.matchAll]("")));
    return roots;
  }

  // Every object reachable from the roots through own properties and prototypes, skipping the harness.
  function reachable() {
    const seen = new SetCtor();
    const list = [];
    const stack = intrinsics();
    while (stack.length) {
      const obj = stack.pop();
      if (obj === null || (typeof obj !== "object" && typeof obj !== "function")) continue;
      if (apply(setHas, seen, [obj]) || obj === api) continue;
      apply(setAdd, seen, [obj]);
      add(list, obj);
      add(stack, getPrototypeOf(obj));
      for (const key of ownKeys(obj)) {
        if (obj === global && key === "__codemode") continue;
        let d;
        try { d = getOwnPropertyDescriptor(obj, key); } catch (e) { continue; }
        if (!d) continue;
        if ("value" in d) add(stack, d.value); else { add(stack, d.get); add(stack, d.set); }
      }
    }
    return list;
  }

  function snapshotOf(obj) {
    const entries = [];
    for (const key of ownKeys(obj)) {
      if (obj === global && key === "__codemode") continue;
      const d = getOwnPropertyDescriptor(obj, key);
      add(entries, [key, d.value, d.get, d.set, d.writable, d.enumerable, d.configurable]);
    }
    return { proto: getPrototypeOf(obj), extensible: isExtensible(obj), entries };
  }

  function takeSnapshot() {
    const snap = new MapCtor();
    for (const obj of reachable()) apply(mapSet, snap, [obj, snapshotOf(obj)]);
    return snap;
  }

  function nameOf(obj) {
    if (obj === global) return "globalThis";
    for (const key of ownKeys(global)) {
      const d = getOwnPropertyDescriptor(global, key);
      if (d && d.value === obj) return keyName(key);
      if (d && d.value && (typeof d.value === "function" || typeof d.value === "object")) {
        try {
          const p = getOwnPropertyDescriptor(d.value, "prototype");
          if (p && p.value === obj) return keyName(key) + ".prototype";
        } catch (e) { /* a hostile getter: keep looking */ }
      }
    }
    return "a built-in object";
  }

  function purityChanges(before) {
    const changes = [];
    const note = (obj, what) => { add(changes, nameOf(obj) + ": " + what); };
    before.forEach((snap, obj) => {
      if (changes.length >= 20) return;
      const now = snapshotOf(obj);
      if (now.proto !== snap.proto) note(obj, "prototype changed");
      if (now.extensible !== snap.extensible) note(obj, "extensibility changed");
      if (now.entries.length === snap.entries.length) {
        let same = true;
        for (let i = 0; i < now.entries.length && same; i++) {
          const a = now.entries[i];
          const b = snap.entries[i];
          for (let j = 0; j < 7; j++) if (!is(a[j], b[j])) { same = false; break; }
        }
        if (same) return;
      }
      const was = new MapCtor();
      for (const e of snap.entries) apply(mapSet, was, [e[0], e]);
      const nowKeys = new SetCtor();
      for (const e of now.entries) {
        apply(setAdd, nowKeys, [e[0]]);
        const label = "property " + describe(keyName(e[0]));
        if (!apply(mapHas, was, [e[0]])) { note(obj, label + " added"); continue; }
        const old = apply(mapGet, was, [e[0]]);
        for (let i = 1; i < 7; i++) {
          if (!is(old[i], e[i])) { note(obj, label + " changed"); break; }
        }
      }
      for (const e of snap.entries) {
        if (!apply(setHas, nowKeys, [e[0]])) note(obj, "property " + describe(keyName(e[0])) + " removed");
      }
    });
    return changes.length > 20 ? changes.slice(0, 20) : changes;
  }

  // ---- batches ---------------------------------------------------------------------------------------

  let current = [];
  let before = null;

  // Start every case of a batch (JSON text), after a snapshot of every built-in. Microtasks run after
  // this returns.
  function run(batchText, purity) {
    const batch = parse(batchText);
    before = purity ? takeSnapshot() : null;
    current = [];
    for (const spec of batch) add(current, runCase(spec));
    return current.length;
  }

  // What happened, as JSON text: one observation per case, and every change any of them made to a
  // global or a built-in (a batch with changes is judged again case by case).
  function collect() {
    const out = { observations: [], purity: [] };
    for (const c of current) add(out.observations, observe(c));
    out.purity = before === null ? [] : purityChanges(before);
    current = [];
    before = null;
    return stringify(out);
  }

  const api = freeze({ run, collect });
  defineProperty(global, "__codemode", { value: api, writable: false, enumerable: false, configurable: false });
})(globalThis);
