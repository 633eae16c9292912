// The reference streaming collector in JavaScript (the seed tool-registry-and-transports.md; SPEC.md,
// Transport). CommonJS: `module.exports.prepare`. `prepare({tools, maxOutputChars})` takes a sealed stage
// (`tools.get(id)` gives a tool with pure `parse(value)` and `resolve(input)`, or undefined) and returns a
// collector: `push(fragment)` takes body text (a string) or a function-call delta ({index: 0, id?, name?,
// arguments?}), `outputChars` counts the UTF-16 units of text, names and arguments pushed, and `finish()`
// returns {kind: "call", toolId, input, value} (value: the tool's resolve of its parsed input) or
// {kind: "text", text}. A rejection throws an Error whose `code` names the rule (the same codes as
// reference/transports.py); after it, every push and finish throws it again. No tool is resolved before
// the whole stream is validated.
"use strict";

function protocolError(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}

function prepare(options) {
  const stage = options.tools;
  const limit = options.maxOutputChars === undefined ? Infinity : options.maxOutputChars;
  if (!(limit === Infinity || (Number.isSafeInteger(limit) && limit >= 0))) {
    throw new RangeError("maxOutputChars is a non-negative safe integer or Infinity");
  }
  let count = 0;
  let text = "";
  let name = "";
  let args = "";
  let id;
  let call = false;
  let error = null;
  let done = false;

  function fail(code, message) {
    if (error === null) error = protocolError(code, message);
    return error;
  }

  function add(s) {
    count += s.length;  // UTF-16 code units, as pushed: halves of a pair count one each
    if (count > limit) throw fail("output_limit", `${count} output characters, over the limit of ${limit}`);
  }

  return {
    get outputChars() { return count; },
    push(fragment) {
      if (done) throw protocolError("finished", "a fragment after finish");
      if (error !== null) throw error;
      if (typeof fragment === "string") {
        add(fragment);
        if (fragment.length > 0) {
          if (call) throw fail("mixed_body", "body text together with a call");
          text += fragment;
        }
        return;
      }
      if (fragment === null || typeof fragment !== "object" || Array.isArray(fragment)) {
        throw fail("fragment_invalid", "a fragment is a string or a delta object");
      }
      const index = fragment.index;
      if (!Number.isInteger(index)) throw fail("fragment_invalid", "a delta's index is not an integer");
      if (index !== 0) throw fail("multiple_calls", `a delta for call ${index}: only one call is allowed`);
      const parts = {};
      for (const key of ["id", "name", "arguments"]) {
        const value = fragment[key];
        if (value === undefined || value === null) continue;
        if (typeof value !== "string") throw fail("fragment_invalid", `a delta's ${key} is not a string`);
        parts[key] = value;
      }
      if (parts.id !== undefined) {
        if (parts.id === "") throw fail("fragment_invalid", "a delta's id is empty");
        if (id !== undefined && parts.id !== id) throw fail("id_conflict", `call id ${parts.id} after ${id}`);
        id = parts.id;
      }
      add((parts.name || "") + (parts.arguments || ""));
      if (text.length > 0) throw fail("mixed_body", "a call together with body text");
      call = true;
      name += parts.name || "";
      args += parts.arguments || "";
    },
    finish() {
      if (done) throw protocolError("finished", "finish after finish");
      done = true;
      if (error !== null) throw error;
      if (!call) {
        if (text.length === 0) throw fail("empty", "the answer holds no text and no call");
        return { kind: "text", text };
      }
      const tool = stage.get(name);
      if (tool === undefined) throw fail("unknown_tool", name ? `${name} is not a tool of this stage` : "the call has no name");
      let value;
      try {
        value = JSON.parse(args);
      } catch (err) {
        throw fail("arguments_invalid", `the arguments of ${name} are not one complete JSON text`);
      }
      let input;
      try {
        input = tool.parse(value);
      } catch (err) {
        throw fail("arguments_invalid", String(err && err.message));
      }
      return { kind: "call", toolId: name, input, value: tool.resolve(input) };
    },
  };
}

module.exports = { prepare };
