'use strict';
// Independent streaming tool-call collector (JavaScript, CommonJS), written
// from SPEC.md's Transport section and the seed contract only.

const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 2^53 - 1

class CollectorRejection extends Error {}

function reject(message) {
  throw new CollectorRejection(message);
}

function prepare({ tools, maxOutputChars } = {}) {
  const limit = maxOutputChars;
  if (typeof limit !== 'number' || Number.isNaN(limit) || limit < 0 ||
      (Number.isFinite(limit) && !Number.isInteger(limit))) {
    reject('maxOutputChars must be a non-negative integer or Infinity');
  }
  if (!tools || typeof tools.get !== 'function') reject('a stage with get(id) is required');

  let count = 0;
  let state = 'open'; // open | failed | finished
  let textParts = [];
  let nonEmptyText = false;
  let sawDelta = false;
  let callId;
  let nameParts = [];
  let argParts = [];

  function fail(message) {
    state = 'failed';
    reject(message);
  }

  function addOutput(units) {
    if (units === 0) return;
    const total = count + units;
    if (total > MAX_SAFE) fail('output exceeds the largest safe integer');
    count = total;
    if (total > limit) fail(`output of ${total} UTF-16 code units passes maxOutputChars`);
  }

  function checkOpen() {
    if (state === 'failed') reject('collector already rejected the stream');
    if (state === 'finished') reject('collector already finished');
  }

  function pushText(text) {
    addOutput(text.length);
    if (text.length > 0) {
      textParts.push(text);
      nonEmptyText = true;
      if (sawDelta) fail('body text mixed with a function call');
    }
  }

  function pushDelta(delta) {
    // Read each property once (getters may be arbitrary).
    const index = delta.index;
    const id = delta.id;
    const name = delta.name;
    const args = delta.arguments;

    // shape (TR-FRAGMENT)
    if (typeof index !== 'number' || !Number.isInteger(index)) fail('delta index must be an integer');
    if (id !== undefined && (typeof id !== 'string' || id === '')) fail('delta id must be a non-empty string');
    if (name !== undefined && typeof name !== 'string') fail('delta name must be a string');
    if (args !== undefined && typeof args !== 'string') fail('delta arguments must be a string');

    // protocol (TR-SINGLE, TR-ID, TR-MIXED)
    if (index !== 0) fail('delta of a second call (index is not 0)');
    if (id !== undefined) {
      if (callId === undefined) callId = id;
      else if (callId !== id) fail('conflicting call ids');
    }
    sawDelta = true;
    if (nonEmptyText) fail('function call mixed with body text');

    // output (TR-COUNT, TR-LIMIT)
    let units = 0;
    if (name) { units += name.length; nameParts.push(name); }
    if (args) { units += args.length; argParts.push(args); }
    addOutput(units);
  }

  function push(fragment) {
    checkOpen();
    try {
      if (typeof fragment === 'string') pushText(fragment);
      else if (fragment !== null && typeof fragment === 'object' && !Array.isArray(fragment)) pushDelta(fragment);
      else fail('fragment is neither a string nor a function-call delta');
    } catch (err) {
      state = 'failed';
      throw err instanceof CollectorRejection ? err : new CollectorRejection(`bad fragment: ${err}`);
    }
  }

  function doFinish() {
    if (count > limit) fail('output passes maxOutputChars');
    if (!sawDelta) {
      const text = textParts.join('');
      if (text === '') fail('empty answer: no text and no call');
      state = 'finished';
      textParts = [];
      return { kind: 'text', text };
    }
    if (nonEmptyText) fail('body text mixed with a function call');
    const toolId = nameParts.join('');
    if (toolId === '') fail('call names no tool');
    const tool = tools.get(toolId);
    if (tool === undefined || tool === null) fail(`call names a tool outside the stage: ${JSON.stringify(toolId)}`);
    let value;
    try {
      value = JSON.parse(argParts.join(''));
    } catch (err) {
      fail(`arguments are not one complete JSON text: ${err.message}`);
    }
    const input = tool.parse(value); // throws for input the tool rejects
    // Everything is validated: resolve exactly once.
    state = 'finished';
    nameParts = [];
    argParts = [];
    const resolved = tool.resolve(input);
    return { kind: 'call', toolId, input, value: resolved };
  }

  function finish() {
    checkOpen();
    try {
      return doFinish();
    } catch (err) {
      state = 'failed';
      throw err instanceof CollectorRejection ? err : new CollectorRejection(`rejected: ${err && err.message}`);
    }
  }

  return {
    push,
    finish,
    get outputChars() { return count; },
  };
}

module.exports = { prepare };
