// The collector harness: runs a JavaScript collector (CommonJS source exporting `prepare`) on the kit's
// fragment streams, in a fresh V8 context of its own (conformance/v8worker.py, op "collect").
//
// Everything the harness relies on is captured before the collector's source runs, and what it brings
// back is written by its own serializer from values it made itself (null-prototype objects and arrays it
// built), so no getter, toJSON or changed built-in of the collector's can alter an observation. The
// collector's own results are copied through own data properties only; an accessor or an exotic value
// is reported as unreadable, never called. `outputChars` is read as the seed says Core reads it: after
// the collector is made, after every push and after finish, once each.
(function (global, token) {
  "use strict";
  const getOwn = Object.getOwnPropertyDescriptor;
  const ownKeys = Reflect.ownKeys;
  const create = Object.create;
  const freeze = Object.freeze;
  const isArray = Array.isArray;
  const parse = JSON.parse;
  const Fn = Function;
  const StringOf = String;
  const isFiniteNumber = Number.isFinite;
  const apply = Reflect.apply;
  const charCodeAt = String.prototype.charCodeAt;
  const toString16 = Number.prototype.toString;
  const numberToString = Number.prototype.toString;
  const hasOwn = Object.prototype.hasOwnProperty;
  const sliceString = String.prototype.slice;

  function join(parts) {
    let out = "";
    for (let i = 0; i < parts.length; i++) out += (i ? "," : "") + parts[i];
    return out;
  }

  function own(obj, key) {
    if (obj === null || (typeof obj !== "object" && typeof obj !== "function")) return { has: false };
    const d = getOwn(obj, key);
    if (d === undefined) return { has: false };
    if (!apply(hasOwn, d, ["value"])) return { has: true, accessor: true };
    return { has: true, value: d.value };
  }

  // a JSON-able copy of a value through own data properties (depth and size bounded)
  function copy(value, depth) {
    if (value === null || typeof value === "boolean" || typeof value === "string") return value;
    if (typeof value === "number") return isFiniteNumber(value) ? value : { unreadable: "a non-finite number" };
    if (typeof value !== "object" || depth > 20) return { unreadable: typeof value };
    const out = isArray(value) ? [] : create(null);
    const keys = ownKeys(value);
    for (let i = 0; i < keys.length && i < 1000; i++) {
      const key = keys[i];
      if (typeof key !== "string" || (isArray(value) && key === "length")) continue;
      const d = own(value, key);
      out[key] = d.accessor ? { unreadable: "an accessor" } : copy(d.value, depth + 1);
    }
    return out;
  }

  function quote(s) {
    let out = '"';
    for (let i = 0; i < s.length; i++) {
      const c = apply(charCodeAt, s, [i]);
      if (c === 0x22) out += '\\"';
      else if (c === 0x5c) out += "\\\\";
      else if (c < 0x20 || c > 0x7e) out += "\\u" + apply(sliceString, "000" + apply(toString16, c, [16]), [-4]);
      else out += s[i];
    }
    return out + '"';
  }

  function write(v) {
    if (v === null) return "null";
    if (typeof v === "boolean") return v ? "true" : "false";
    if (typeof v === "number") return isFiniteNumber(v) ? apply(numberToString, v, []) : "null";
    if (typeof v === "string") return quote(v);
    if (isArray(v)) {
      const parts = [];
      for (let i = 0; i < v.length; i++) parts[parts.length] = write(v[i]);
      return "[" + join(parts) + "]";
    }
    const keys = ownKeys(v);
    const parts = [];
    for (let i = 0; i < keys.length; i++) parts[parts.length] = quote(keys[i]) + ":" + write(v[keys[i]]);
    return "{" + join(parts) + "}";
  }

  function exact(v, kind) {
    if (kind === "string") return typeof v === "string";
    if (kind === "boolean") return typeof v === "boolean";
    return typeof v === "number" && isFiniteNumber(v);
  }

  function stage(tools, counter) {
    const byId = create(null);
    const ids = [];
    for (let t = 0; t < tools.length; t++) {
      const entry = tools[t];
      const name = entry.name;
      const args = entry.arguments;
      const required = entry.required;
      byId[name] = freeze({
        id: name,
        parse(value) {
          if (value === null || typeof value !== "object" || isArray(value)) throw new TypeError(`the input of ${name} is not an object`);
          const out = create(null);
          const keys = ownKeys(value);
          for (let i = 0; i < keys.length; i++) {
            const key = keys[i];
            if (typeof key !== "string" || !apply(hasOwn, args, [key])) throw new TypeError(`${StringOf(key)} is not an argument of ${name}`);
            const d = own(value, key);
            if (d.accessor || !exact(d.value, args[key])) throw new TypeError(`${key} of ${name} is not a ${args[key]}`);
            out[key] = d.value;
          }
          for (let i = 0; i < required.length; i++) {
            if (!apply(hasOwn, out, [required[i]])) throw new TypeError(`required argument ${required[i]} of ${name} is missing`);
          }
          return out;
        },
        resolve(input) {
          counter.n++;
          return freeze({ tool: name, args: copy(input, 0) });
        },
      });
      ids[ids.length] = name;
    }
    return freeze({
      ids() {
        const copyOf = [];
        for (let i = 0; i < ids.length; i++) copyOf[i] = ids[i];
        return copyOf;
      },
      get(id) { return typeof id === "string" && apply(hasOwn, byId, [id]) ? byId[id] : undefined; },
      has(id) { return typeof id === "string" && apply(hasOwn, byId, [id]); },
    });
  }

  function reading(collector) {
    try {
      const v = collector.outputChars;
      if (typeof v !== "number") return { not_a_number: typeof v };
      if (!isFiniteNumber(v)) return { not_finite: StringOf(v) };
      return v;
    } catch (err) {
      return { unreadable: "reading outputChars threw" };
    }
  }

  function why(err) {
    try {
      const code = own(err, "code");
      const message = own(err, "message");
      const c = code.has && typeof code.value === "string" ? code.value : "";
      const m = message.has && typeof message.value === "string" ? message.value : "";
      return (c ? c + ": " : "") + apply(sliceString, m, [0, 200]) || "threw";
    } catch (e) {
      return "threw";
    }
  }

  function result(r) {
    const kind = own(r, "kind");
    if (kind.has && kind.value === "text") {
      const text = own(r, "text");
      return typeof text.value === "string" ? { text: text.value } : { other: "a text result without its text" };
    }
    if (kind.has && kind.value === "call") {
      const value = own(r, "value");
      if (value.has && !value.accessor) return { call: copy(value.value, 0) };
      return { other: "a call result without its resolved value" };
    }
    return { other: "a result that is neither {kind: 'call'} nor {kind: 'text'}" };
  }

  let prepare = null;
  const api = freeze({
    load(check, source) {
      if (check !== token) throw new Error("not the kit");
      const module = create(null);
      module.exports = {};
      new Fn("module", "exports", source)(module, module.exports);
      const exported = own(module, "exports").value;
      const found = own(exported, "prepare");
      if (!found.has || found.accessor || typeof found.value !== "function") return "no prepare function exported";
      prepare = found.value;
      return "ok";
    },
    run(check, casesText) {
      if (check !== token) throw new Error("not the kit");
      const cases = parse(casesText);
      const out = [];
      for (let k = 0; k < cases.length; k++) {
        const c = cases[k];
        const counter = { n: 0 };
        const counts = [];
        let res;
        let pushed = 0;
        let collector;
        try {
          collector = prepare({ tools: stage(c.tools, counter), maxOutputChars: c.maxOutputChars === null ? Infinity : c.maxOutputChars });
        } catch (err) {
          out[out.length] = { result: { rejected: "prepare threw " + why(err) }, counts: [], resolved: counter.n, pushed: 0 };
          continue;
        }
        counts[counts.length] = reading(collector);
        try {
          for (let i = 0; i < c.fragments.length; i++) {
            try {
              collector.push(c.fragments[i]);
            } finally {
              counts[counts.length] = reading(collector);
            }
            pushed++;
          }
          let r;
          try {
            r = collector.finish();
          } finally {
            counts[counts.length] = reading(collector);
          }
          res = result(r);
        } catch (err) {
          res = { rejected: why(err) };
        }
        try {
          void collector.metadata;  // the optional call metadata: read once, best effort, never overriding
        } catch (err) {
          // a throwing getter changes neither the result nor the error already obtained
        }
        out[out.length] = { result: res, counts, resolved: counter.n, pushed };
      }
      return write(out);
    },
  });
  Object.defineProperty(global, "__codemode_collect", { value: api, writable: false, enumerable: false, configurable: false });
})
