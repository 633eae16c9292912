"""The V8 worker: the process in which :class:`conformance.v8host.V8Host` runs compiled plans.

Started by the host as ``python -m conformance.v8worker CAP PARENT_PID``, in a session of its own. It
caps its own memory first, before mini-racer is even imported: ``RLIMIT_DATA`` of ``CAP`` bytes bounds
every private writable mapping of the process, so memory a body allocates outside the V8 heap (array
buffers, which the heap limit does not count) fails as a ``RangeError`` the body sees, and anything V8
cannot survive ends this process, never the kit's.

It answers requests on stdin with replies on stdout, one at a time. Each message is a frame: a 4-byte
big-endian length, then that many bytes: a header (one line of ASCII JSON), a newline, and a body (ASCII
text). The first frame it writes is ``{"ready": true}``. A request's header is ``{"op": "batch" or
"alone", "purity": bool, "seconds": float, "memory": int, "fresh": bool}`` and its body the specs as JSON
text; a reply's header is ``{"status": "ok", "timeout", "oom" or "error", "message": str (not ok),
"late": [str] (ok: purity changes seen only after collect)}`` and its body, when ok, the harness's
collect text.

``collect`` (a streaming collector's source and fragment streams, as JSON ``{"source", "cases"}``) runs
in a fresh context with ``collect_harness.js``, closed afterwards; its reply body is the observations.
``batch`` runs in one long-lived context (whose baseline of the built-ins the harness takes at its first
batch), replaced after any failure and when ``fresh`` asks for it; ``alone`` runs in a fresh context,
closed afterwards. A request is up to three evals (run, collect, and with purity recheck), each with
``seconds``, and, only when bodies set timers, the evals that fire them: collect (or recheck) answers
``"timers"`` instead while virtual timers are pending, and the worker then calls the harness's ``fire``
once per eval (one timer each, so that the microtasks it queued drain before the next fires, as in
Node) until it answers ``"idle"`` or ``"cap"``, and asks again. The firing evals of a request share one
budget of ``seconds`` of JS time: past it the request is a timeout, like a loop in any other eval. A
batch without timers costs no eval more.

The worker exits when stdin reaches EOF, and when its parent is gone even while V8 is busy (a thread
watches the parent pid), so it never outlives the kit.
"""

from __future__ import annotations

import json
import os
import resource
import secrets
import struct
import sys
import threading
import time
from importlib import resources
from typing import Any, BinaryIO

FRAME = struct.Struct(">I")
MAX_FRAME = 1 << 30
HARNESS = resources.files("conformance").joinpath("harness.js").read_text(encoding="utf-8")
COLLECT_HARNESS = resources.files("conformance").joinpath("collect_harness.js").read_text(encoding="utf-8")


def cap_memory(cap: int) -> None:
    """Cap this process's private writable memory (never above a hard limit already set)."""
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard if hard != resource.RLIM_INFINITY else cap))


def protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """The protocol's own copies of stdin and stdout. File descriptor 1 then points at stderr, so that
    whatever else writes there (V8, a library, a stray print) cannot corrupt a frame."""
    inp = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return inp, out


def watch_parent(parent: int) -> None:
    """End this process as soon as ``parent`` is no longer its parent (killed, or exited without
    closing the pipe), even while the main thread waits on V8."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(70)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def read_frame(inp: BinaryIO) -> tuple[dict[str, Any], str] | None:
    """The next request, or None at EOF."""
    head = _read_exact(inp, FRAME.size)
    if head is None:
        return None
    (size,) = FRAME.unpack(head)
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes")
    data = _read_exact(inp, size)
    if data is None:
        return None
    line, _, body = data.partition(b"\n")
    return json.loads(line), body.decode("ascii")


def _read_exact(inp: BinaryIO, size: int) -> bytes | None:
    chunks = []
    left = size
    while left:
        chunk = inp.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_frame(out: BinaryIO, header: dict[str, Any], body: str = "") -> None:
    data = json.dumps(header, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n" + body.encode("ascii")
    out.write(FRAME.pack(len(data)) + data)


class Worker:
    """Contexts and the evals of one request (mini-racer is imported by the caller, after the cap)."""

    def __init__(self) -> None:
        from py_mini_racer import MiniRacer
        from py_mini_racer import _exc

        self._racer = MiniRacer
        self._exc = _exc
        self._batch: _Context | None = None

    def handle(self, request: dict[str, Any], body: str) -> tuple[dict[str, Any], str]:
        op = request["op"]
        purity = bool(request["purity"])
        seconds = float(request["seconds"])
        memory = int(request["memory"])
        if op == "batch":
            batch = self._batch
            if batch is not None and (request.get("fresh") or (purity and batch.tainted and not batch.baselined)):
                self._drop()
            ctx = self._batch
            try:
                if ctx is None:
                    ctx = self._batch = self._context(memory)
                return self._run(ctx, body, purity, seconds, alone=False)
            except BaseException as err:
                failure = self._failure(ctx, err)
                self._drop()
                return failure, ""
        if op == "alone":
            ctx = None
            try:
                ctx = self._context(memory)
                return self._run(ctx, body, purity, seconds, alone=True)
            except BaseException as err:
                return self._failure(ctx, err), ""
            finally:
                if ctx is not None:
                    ctx.close()
        if op == "collect":
            ctx = None
            try:
                ctx = self._context(memory, COLLECT_HARNESS)
                return self._collect(ctx, body, seconds)
            except BaseException as err:
                return self._failure(ctx, err), ""
            finally:
                if ctx is not None:
                    ctx.close()
        return {"status": "error", "message": f"unknown op {op!r}"}, ""

    def _collect(self, ctx: _Context, body: str, seconds: float) -> tuple[dict[str, Any], str]:
        """A collector's source loaded into a fresh context, then the cases run through it (body: JSON
        ``{"source": ..., "cases": [...]}``); the reply body is the harness's observations."""
        request = json.loads(body)

        def raw(text: str) -> str:
            return "String.raw`" + json.dumps(text).replace("`", "\\u0060").replace("$", "\\u0024") + "`"

        # the source goes in as a JSON string literal inside a raw template, decoded by JSON.parse before it
        # runs, so no character of it can end the template
        loaded = ctx.racer.eval(f'__codemode_collect.load({ctx.token}, JSON.parse({raw(request["source"])}))',
                                timeout_sec=seconds)
        if loaded != "ok":
            return {"status": "error", "message": str(loaded)}, ""
        cases = json.dumps(request["cases"])
        text = ctx.racer.eval(f'__codemode_collect.run({ctx.token}, JSON.parse({raw(cases)}))', timeout_sec=seconds)
        if not isinstance(text, str) or not text.isascii():
            raise TypeError("the collector harness answered something other than ASCII text")
        return {"status": "ok"}, text

    def _context(self, memory: int, harness: str = HARNESS) -> _Context:
        """A fresh V8 context with ``memory`` bytes of heap and ``harness`` installed under a new token."""
        racer = self._racer()
        racer.set_hard_memory_limit(memory)
        token = secrets.token_hex(16)
        racer.eval(f"({harness})(globalThis, {json.dumps(token)});")
        return _Context(racer, json.dumps(token))

    def _run(
        self, ctx: _Context, specs: str, purity: bool, seconds: float, *, alone: bool
    ) -> tuple[dict[str, Any], str]:
        # a raw template keeps every backslash of the JSON as written; a backtick and ${ can occur in
        # JSON only inside strings, where \u0060 and \u0024 say the same. The tag is the harness's own
        # String.raw: a body may have replaced the global one.
        safe = specs.replace("`", "\\u0060").replace("$", "\\u0024")
        flags = f"{'true' if purity else 'false'}, {'true' if alone else 'false'}"
        ctx.tainted = True
        start = f'"use strict"; __codemode.run({ctx.token}, __codemode.raw`{safe}`, {flags});'
        ctx.racer.eval(start, timeout_sec=seconds)
        ctx.baselined = ctx.baselined or purity or not alone  # (the harness's rule)
        budget = _Budget(seconds)
        text = self._read(ctx, "collect", seconds, budget)
        late: list[str] = []
        if purity:
            late = json.loads(self._read(ctx, "recheck", seconds, budget))
        if not isinstance(text, str) or not text.isascii():
            raise TypeError("collect answered something other than ASCII text")
        return {"status": "ok", "late": late}, text

    def _read(self, ctx: _Context, op: str, seconds: float, budget: _Budget) -> Any:
        """The harness's ``collect`` or ``recheck``, after firing the timers it says are pending."""
        call = f'"use strict"; __codemode.{op}({ctx.token});'
        fire = f'"use strict"; __codemode.fire({ctx.token});'
        while True:
            answer = ctx.racer.eval(call, timeout_sec=seconds)
            if answer != "timers":
                return answer
            while True:
                left = budget.left()
                if left <= 0:
                    raise self._exc.JSTimeoutException()
                start = time.monotonic()
                try:
                    fired = ctx.racer.eval(fire, timeout_sec=left)
                finally:
                    budget.spend(time.monotonic() - start)
                if fired != "fired":
                    break

    def _failure(self, ctx: _Context | None, err: BaseException) -> dict[str, Any]:
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise err
        exc = self._exc
        if isinstance(err, exc.JSTimeoutException):
            status = "timeout"
        elif isinstance(err, (exc.JSOOMException, MemoryError)) or (ctx is not None and _limit_reached(ctx)):
            status = "oom"
        else:
            status = "error"
        return {"status": status, "message": f"{type(err).__name__}: {str(err)[:300]}"}

    def _drop(self) -> None:
        if self._batch is not None:
            self._batch.close()
            self._batch = None


class _Budget:
    """Seconds of JS time left to the timer-firing evals of one request."""

    def __init__(self, seconds: float) -> None:
        self._left = seconds

    def left(self) -> float:
        return self._left

    def spend(self, seconds: float) -> None:
        self._left -= seconds


class _Context:
    def __init__(self, racer: Any, token: str) -> None:
        self.racer = racer
        self.token = token  # as a JS string literal
        self.tainted = False  # a body ran here
        self.baselined = False  # the harness holds a baseline of the built-ins

    def close(self) -> None:
        try:
            self.racer.close()
        except Exception:  # pragma: no cover - closing a wedged context
            pass


def _limit_reached(ctx: _Context) -> bool:
    try:
        return bool(ctx.racer.was_hard_memory_limit_reached())
    except Exception:
        return False


def main(argv: list[str]) -> int:
    cap, parent = int(argv[1]), int(argv[2])
    cap_memory(cap)
    inp, out = protocol_streams()
    watch_parent(parent)
    # mini-racer reports callbacks arriving after a context was closed on purpose; nothing is lost
    sys.unraisablehook = lambda unraisable: None
    worker = Worker()
    write_frame(out, {"ready": True})
    while True:
        request = read_frame(inp)
        if request is None:
            return 0
        header, body = request
        try:
            reply = worker.handle(header, body)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as err:
            reply = {"status": "error", "message": f"{type(err).__name__}: {str(err)[:300]}"}, ""
        write_frame(out, *reply)


if __name__ == "__main__":
    # never through interpreter teardown: a MiniRacer left open can hang it, and a worker must not linger
    status = 1
    try:
        status = main(sys.argv)
    finally:
        os._exit(status)
