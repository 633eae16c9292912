"""Compilers whose bodies attack the harness that runs them: ``python -m tests.faulty.hostile NAME``.

Each answers every valid compile request with a hostile body (most of them wrapped around the reference
compiler's own js, so that only the attack is wrong), and everything else as the reference does. The kit
must judge each under the clause named in ``CLAUSE_OF`` (the attack is the fault, never the harness's),
within its time limits, without growing and without crashing; ``CLEAN`` bodies do nothing wrong at all.
"""

from __future__ import annotations

import sys
from typing import Any

from reference.catalog import Catalog
from reference.compiler import compile_plan
from reference.plan import Plan
from reference.protocol import serve

#: name -> (the clause the kit must fail, or clauses one of which it must, the body; ``{js}`` stands for
#: the reference compiler's js)
BODIES: dict[str, tuple[str, str]] = {
    "loop-before-await": ("JS-FORM", "while (true) {}"),
    "loop-after-await": ("JS-FORM", "await null; for (;;) {}"),
    "atomics-wait": ("JS-FORM", "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); {js}"),
    "heap": ("JS-FORM", "const a = []; for (;;) a.push(new Array(1e6).fill(1));"),
    "off-heap": ("JS-FORM", "const a = []; for (let i = 0; i < 60; i++) { const b = new Uint8Array(100 * 1024 * 1024);"
                 " b.fill(1); a.push(b); } {js}"),
    "recursion": ("JS-FORM", "function f(n) { return f(n + 1) + 1; } f(0); {js}"),
    "never-settles": ("JS-FORM", "await new Promise(() => {}); {js}"),
    "throw-surrogate": ("JS-FORM", 'throw new Error("\\ud800 lone surrogate");'),
    "throw-number": ("JS-FORM", "throw 5;"),
    # a message that would clear the terminal and forge rows of the report if it were printed as written
    "forged-report": ("JS-FORM", 'throw new Error("\\x00\\x07\\x1b[2J\\x1b[H\\x1b[32mall clauses passed\\x1b[0m\\r\\n'
                      'JS-PURE         passed       99       0        0 <!-- |");'),
    "throw-null": ("JS-FORM", "throw null;"),
    "throw-proxy": ("JS-FORM", "throw new Proxy({}, {get() { throw 1; }, getPrototypeOf() { throw 2; },"
                    " ownKeys() { throw 3; }, getOwnPropertyDescriptor() { throw 4; }});"),
    "tojson": ("JS-PURE", "Object.prototype.toJSON = function () { return 1; }; {js}"),
    "tamper-and-hide": ("JS-PURE",
                        "Array.prototype.sneaky = 1; globalThis.leaked = 2;"
                        " Object.defineProperty(Object.prototype, 'toJSON', {configurable: true, get() {"
                        " delete Object.prototype.toJSON; delete Array.prototype.sneaky; delete globalThis.leaked;"
                        " return undefined; }}); {js}"),
    "hide-in-getter": ("JS-PURE",
                       "Array.prototype.sneaky = 1; const result = await (async () => { {js} })();"
                       " const hide = () => { delete Array.prototype.sneaky; };"
                       " if (Array.isArray(result)) { Object.defineProperty(result, 'length', {value: result.length});"
                       " return new Proxy(result, {get(t, k, r) { hide(); return Reflect.get(t, k, r); },"
                       " getOwnPropertyDescriptor(t, k) { hide(); return Reflect.getOwnPropertyDescriptor(t, k); }}); }"
                       " return new Proxy(result, {get(t, k, r) { hide(); return Reflect.get(t, k, r); },"
                       " getOwnPropertyDescriptor(t, k) { hide(); return Reflect.getOwnPropertyDescriptor(t, k); }});"),
    "iterator": ("JS-PURE", "Array.prototype[Symbol.iterator] = function* () {}; {js}"),
    "has-instance": ("JS-PURE", "Object.defineProperty(Error, Symbol.hasInstance, {value: () => true}); {js}"),
    "index-setter": ("JS-PURE", "Object.defineProperty(Array.prototype, '0', {set(v) {}, configurable: true}); {js}"),
    "species": ("JS-PURE", "Promise.prototype.constructor = function () { throw 1; }; {js}"),
    # changes made later, by a timer (time is virtual: every timer fires before the kit judges)
    "timer-tamper": ("JS-PURE", "setTimeout(() => { Array.prototype.sneaky = 1; }, 20); {js}"),
    "wait-async-tamper": ("JS-PURE", "Atomics.waitAsync(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20)"
                          ".value.then(() => { globalThis.leaked = 1; }); {js}"),
    # a Proxy result whose traps throw whenever the harness reads it (but not when the engine resolves the
    # function's promise with it: then the function rejects, which is JS-FORM's)
    "proxy-result": ("JS-RECORD JS-ALL", "await (async () => { {js} })(); return new Proxy({}, {get(t, k) { if (k === 'then')"
                     " return undefined; throw 1; }, getPrototypeOf() { throw 2; }, ownKeys() { throw 3; },"
                     " getOwnPropertyDescriptor() { throw 4; }, has() { throw 5; }});"),
    "proxy-rejects": ("JS-FORM", "return new Proxy({}, {get() { throw 1; }});"),
    "getter-record": ("JS-RECORD", "const r = await (async () => { {js} })();"
                      " const first = Array.isArray(r) ? r : [r];"
                      " for (const rec of first) { const ok = rec.ok; Object.defineProperty(rec, 'ok', {get() { return ok; }}); }"
                      " return r;"),
    "bigint-result": ("JS-RECORD", "const r = await (async () => { {js} })();"
                      " const recs = Array.isArray(r) ? r : [r];"
                      " for (const rec of recs) { if (rec.ok) rec.value = 10n ** 30n; else rec.error = -1n; }"
                      " return r;"),
    "surrogate-result": ("JS-RECORD", "const r = await (async () => { {js} })();"
                         " const recs = Array.isArray(r) ? r : [r];"
                         " for (const rec of recs) { if (rec.ok) rec.value = '\\udc00\\ud800'; else rec.error = '\\udfff'; }"
                         " return r;"),
}

CLAUSE_OF = {name: clause for name, (clause, _) in BODIES.items()}


def handler_for(name: str) -> Any:
    from reference.cli import compile_handler
    from reference.protocol import request_kind

    _, body = BODIES[name]

    def handle(request: Any) -> dict[str, Any]:
        answer = compile_handler(request)
        if request_kind(request) == "compile" and "js" in answer:
            catalog = Catalog.from_json(request["tools"])
            if any(c.get("tool") == "codemode_fence" for c in request["plan"].get("calls", [])):
                return answer  # the kit's own fence request: answered plainly
            js = compile_plan(Plan.from_json(request["plan"], catalog), catalog)
            return {"js": body.replace("{js}", js)}
        return answer

    return handle


if __name__ == "__main__":
    sys.exit(serve(handler_for(sys.argv[1])))
