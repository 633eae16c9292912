"""The V8 host: runs compiled plans in embedded V8 (``py_mini_racer``) against mocked tools.

V8 runs in a worker process (:mod:`conformance.v8worker`), never in the kit's: what a body does to V8
(exhaust memory outside the heap, crash the engine, wedge it in a wait nothing interrupts) ends or
bloats the worker only. The worker caps its own private writable memory (``RLIMIT_DATA``, ``Limits.
process_bytes``) before it loads V8: the heap limit counts only the V8 heap, and without the cap a body
filling array buffers grows the process without bound, while V8's own fatal out-of-memory aborts the
whole process. The cap leaves room for V8's code-range reservation (about 512 MiB, counted although
mostly never touched), the heap limit and some memory outside the heap; a body that asks for more gets
a ``RangeError``, and one that exhausts what V8 itself needs kills the worker. The host talks to it over
pipes, one request and one reply per batch or per alone run, and holds every request to a wall-clock
deadline a little past the JS limits: a worker that runs past it, dies or answers garbage is killed
with its process group and replaced on next use, and the host gives the verdict the situation calls for.
No worker outlives its host: ``close()``, the context manager, a weakref finalizer (also at interpreter
exit) kill it, and the worker exits by itself when its stdin reaches EOF or its parent is gone.

Cases run in batches in one long-lived context, because one ``eval`` round trip costs far more than
running a case. The harness captured every intrinsic it uses before any body ran, and compares every
global and every built-in reachable from ``globalThis`` with a baseline taken before any body ran in the
context: when a batch changed anything, every case of it is judged again *alone* in a fresh context,
and those verdicts are the ones that count. A case that fails in a batch is judged alone too.
``JS-PURE`` is judged on alone runs. The harness reads results without running any code of a body's
except a Proxy's traps, which it cannot avoid: it compares the built-ins before reading, after reading,
and once more after the microtasks the reading queued, and looks at them while tools run too (a change
undone before the function settles is seen if it was alive then; see ``harness.js``).

(DESIGN §6 proposed freezing the built-ins instead. Detection is stronger: a frozen built-in turns a
body's write into a throw that the body itself may swallow, which hides the impurity, and freezing makes
legal code such as assigning ``o.toString`` on a plain object throw.)

Inside the worker: a hard memory limit on every context; results are collected by a second ``eval``
with a timeout, never by waiting on a promise; a context that timed out or ran out of memory is closed
and replaced; data crosses as ASCII JSON text only (lone surrogates as ``\\u`` escapes).

Time is virtual: the harness installs its own ``setTimeout``, ``setInterval``, ``clearTimeout``,
``clearInterval`` and ``Atomics.waitAsync`` (a finite timeout is a virtual timer) before any body runs,
and once the microtask queue has drained the worker fires the pending timers, in order of due time, one
per eval, until none is pending or the cap (1,000 firings per batch, and per case run alone) is reached:
"never settles" and "stays pending" are judged with every finite timer fired, and purity after them. A
batch that reaches the cap with timers pending is judged alone, case by case. An observation of a case
run alone says how many timers its body set (``timers``, when any) and, when the cap stopped the firing,
how many were still pending (``timersPending``); see ``harness.js``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAX_JS_CHARS = 1 << 20
FRAME = struct.Struct(">I")
MAX_REPLY = 256 << 20
ROOT = Path(__file__).resolve().parent.parent  # holds the conformance package the worker must import
MEMORY_SIGNS = ("out of memory", "allocation failed", "bad_alloc", "memoryerror", "cannot allocate memory")


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    memory_bytes: int = 512 << 20  # V8 heap, per context
    batch_seconds: float = 10.0  # per eval of one hardened batch (start, collect, recheck)
    case_seconds: float = 2.0  # per eval of one case run alone
    # the worker process's private writable memory (RLIMIT_DATA): V8's code range (~512 MiB, mostly
    # untouched), the heap up to memory_bytes, and what lives outside the heap
    process_bytes: int = 1536 << 20
    grace_seconds: float = 2.0  # wall-clock allowance over the JS limits before the worker is killed
    start_seconds: float = 60.0  # for a new worker to load V8 and say it is ready


class V8Host:
    """Runs case specs (see ``conformance.cases.expect``) and returns one observation each."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._worker: _Worker | None = None
        self._shared = False  # the worker holds the shared batch context
        self._fresh = False  # the next batch must start in a fresh context
        self.restarts = 0  # times the shared context was thrown away
        #: a ``time.monotonic()`` past which a batch that must be judged case by case judges no more cases
        #: (their observations say ``unjudged``): the run's time budget, so that a batch of bodies that
        #: all loop forever costs the budget, not a JS time limit per case
        self.deadline: float | None = None

    # -- the worker ---------------------------------------------------------------------------------

    def _lose_shared(self) -> None:
        if self._shared:
            self._shared = False
            self.restarts += 1

    def _kill(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None
        self._lose_shared()
        self._fresh = False

    def close(self) -> None:
        self._kill()

    def __enter__(self) -> V8Host:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, op: str, specs: str, purity: bool, seconds: float) -> _Reply:
        """One request to the worker (started if need be); a worker that fails it is killed."""
        if self._worker is not None and self._worker.owner != os.getpid():
            self._worker = None  # a forked child's copy: the worker and its pipes are the parent's
            self._shared = self._fresh = False
        if self._worker is None:
            self._worker = _Worker(self.limits)
        header = {"op": op, "purity": purity, "seconds": seconds, "memory": self.limits.memory_bytes, "fresh": False}
        if op == "batch":
            header["fresh"] = self._fresh
            self._fresh = False
            self._shared = True  # from here on the worker holds it (it drops it on a failure)
        evals = 4 if purity else 3  # run, collect, recheck, and the firing of timers (one budget)
        try:
            status, body = self._worker.exchange(header, specs, evals * seconds + self.limits.grace_seconds)
        except _Failed as failed:
            self._kill()
            return _Reply(failed.status, failed.message)
        reply = _Reply(str(status.get("status", "garbage")), str(status.get("message", "")), status, body)
        if op == "batch" and reply.status != "ok":
            self._lose_shared()
        return reply

    # -- running ------------------------------------------------------------------------------------

    def run_batch(self, specs: Sequence[dict[str, Any]], *, purity: bool = True) -> list[dict[str, Any]]:
        """Observations for ``specs`` run together in the shared context. When the batch wedges,
        exhausts memory, changes a global or built-in, or reaches the cap on timer firings with timers
        still pending, every case is run alone instead (``alone`` set). Without ``purity`` no comparison is made: only failures (judged alone) can then be
        trusted, which is all a search for a known failure needs."""
        runnable = [i for i, s in enumerate(specs) if len(s["js"]) <= MAX_JS_CHARS]
        out: list[dict[str, Any]] = [_too_large(s) for s in specs]
        if not runnable:
            return out
        batch = [specs[i] for i in runnable]
        reply = self._request("batch", _json(batch), purity, self.limits.batch_seconds)
        collected = self._collected(reply, len(batch))
        if collected is None or collected["purity"] or collected.get("timerCap"):
            self._lose_shared()
            self._fresh = self._worker is not None
            for i in runnable:
                if self.deadline is not None and time.monotonic() > self.deadline:
                    out[i] = {"alone": True, "unjudged": "the run's time budget ran out"}
                else:
                    out[i] = self.run_alone(specs[i])
            return out
        for i, obs in zip(runnable, collected["observations"]):
            out[i] = obs
        return out

    def run_alone(self, spec: dict[str, Any], *, purity: bool = True) -> dict[str, Any]:
        """One case in a fresh context; ``purity`` lists what it changed in globals and built-ins."""
        if len(spec["js"]) > MAX_JS_CHARS:
            return _too_large(spec)
        reply = self._request("alone", _json([spec]), purity, self.limits.case_seconds)
        if reply.status in ("timeout", "hung"):
            return {"alone": True, "limit": f"ran past the JS time limit of {self.limits.case_seconds:g}s"}
        if reply.status in ("oom", "died-oom"):
            limit = f"exhausted the JS memory limit of {self.limits.memory_bytes >> 20} MiB"
            if reply.status == "died-oom":
                limit += " (it killed its V8 worker process)"
            return {"alone": True, "limit": limit}
        if reply.status == "died":
            return {"alone": True, "limit": f"crashed its V8 worker process ({reply.message})"}
        if reply.status == "error":
            # the harness failed after the body ran: the body broke something the harness relies on
            return {"alone": True, "harness": reply.message}
        collected = self._collected(reply, 1)
        if collected is None:
            return {"alone": True, "harness": reply.message or "the V8 worker answered garbage"}
        obs: dict[str, Any] = collected["observations"][0]
        obs["alone"] = True
        obs["purity"] = collected["purity"]
        return obs

    def collect(self, source: str, cases: Sequence[dict[str, Any]], *, seconds: float) -> list[dict[str, Any]] | str:
        """What a JavaScript collector (CommonJS ``source`` exporting ``prepare``) did with each case, in a
        fresh context of its own (``conformance/collect_harness.js``); or why there is nothing to judge
        (it ran past ``seconds``, exhausted memory, threw while loading, or broke the harness)."""
        reply = self._request("collect", _json({"source": source, "cases": list(cases)}), False, seconds)
        if reply.status in ("timeout", "hung"):
            return f"ran past the time limit of {seconds:g}s"
        if reply.status in ("oom", "died-oom"):
            return f"exhausted the JS memory limit of {self.limits.memory_bytes >> 20} MiB"
        if reply.status != "ok":
            return f"{reply.status}: {reply.message}"
        try:
            observations = json.loads(reply.body)
            if not isinstance(observations, list) or len(observations) != len(cases):
                raise ValueError("not one observation per case")
        except ValueError as err:
            self._kill()
            return f"the V8 worker answered garbage ({err})"
        return observations

    def _collected(self, reply: _Reply, n: int) -> dict[str, Any] | None:
        """The harness's collect text of an ok reply, with the late purity changes added; None for a
        failed request, or for garbage (the worker is then killed)."""
        if reply.status != "ok":
            return None
        try:
            collected = json.loads(reply.body)
            observations, changes, late = collected["observations"], collected["purity"], reply.header["late"]
            if len(observations) != n or not all(isinstance(o, dict) for o in observations):
                raise ValueError(f"{len(observations)} observations for {n} cases")
            collected["purity"] = [*changes, *(c for c in late if c not in changes)]
        except (ValueError, KeyError, TypeError) as err:
            self._kill()
            reply.status = "garbage"
            reply.message = f"the V8 worker answered garbage ({type(err).__name__}: {err})"[:300]
            return None
        return collected


@dataclass(slots=True)
class _Reply:
    status: str  # ok, timeout, oom, error (from the worker); hung, died, died-oom, garbage (from the host)
    message: str
    header: dict[str, Any] | None = None
    body: str = ""


class _Failed(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Worker:
    """One worker process and its pipes (non-blocking: every wait has a deadline)."""

    def __init__(self, limits: Limits) -> None:
        self.stderr = tempfile.TemporaryFile(prefix="codemode-v8worker-")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        command = [sys.executable, "-m", "conformance.v8worker", str(limits.process_bytes), str(os.getpid())]
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, bufsize=0,
            start_new_session=True, env=env,
        )
        self.owner = os.getpid()
        self._finalizer = weakref.finalize(self, _reap, self.proc, self.stderr, self.owner)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._buf = bytearray()  # read from the worker, not yet taken
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        try:
            ready, _ = self._receive(time.monotonic() + limits.start_seconds)
        except _Failed as failed:
            self.kill()
            raise RuntimeError(f"the V8 worker did not start ({failed.message}): {self._tail()}") from None
        if ready != {"ready": True}:
            self.kill()
            raise RuntimeError(f"the V8 worker did not start: it said {ready!r}")

    def kill(self) -> None:
        self._finalizer()

    def exchange(self, header: dict[str, Any], body: str, seconds: float) -> tuple[dict[str, Any], str]:
        deadline = time.monotonic() + seconds
        data = json.dumps(header, separators=(",", ":")).encode("ascii") + b"\n" + body.encode("ascii")
        self._send(FRAME.pack(len(data)) + data, deadline)
        return self._receive(deadline)

    def _send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._in, view) :]
            except BlockingIOError:
                self._wait(self._in, select.POLLOUT, deadline)
            except (BrokenPipeError, ConnectionResetError):
                raise self._died() from None

    def _receive(self, deadline: float) -> tuple[dict[str, Any], str]:
        (size,) = FRAME.unpack(self._read(FRAME.size, deadline))
        if size > MAX_REPLY:
            raise _Failed("garbage", f"the V8 worker answered garbage (a frame of {size} bytes)")
        line, _, body = self._read(size, deadline).partition(b"\n")
        try:
            header = json.loads(line)
            text = body.decode("ascii")
        except ValueError as err:
            raise _Failed("garbage", f"the V8 worker answered garbage ({err})"[:300]) from None
        if not isinstance(header, dict):
            raise _Failed("garbage", "the V8 worker answered garbage (a header that is not an object)")
        return header, text

    def _read(self, size: int, deadline: float) -> bytes:
        buf = self._buf
        while len(buf) < size:
            self._wait(self._out, select.POLLIN, deadline)
            try:
                chunk = os.read(self._out, max(size - len(buf), 1 << 16))
            except BlockingIOError:
                continue
            if not chunk:
                raise self._died()
            buf += chunk
        data = bytes(buf[:size])
        del buf[:size]
        return data

    def _wait(self, fd: int, events: int, deadline: float) -> None:
        left = deadline - time.monotonic()
        poller = select.poll()
        poller.register(fd, events)
        if left <= 0 or not poller.poll(left * 1000):
            raise _Failed("hung", "the V8 worker ran past its deadline")

    def _died(self) -> _Failed:
        """Why the worker ended (it closed its end of a pipe): memory, or a crash."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return _Failed("died", "it closed its pipes but did not exit")
        tail = self._tail()
        how = f"exit status {code}"
        if code < 0 and -code in signal.valid_signals():
            how = f"signal {signal.Signals(-code).name}"
        if code == -signal.SIGKILL or any(sign in tail.lower() for sign in MEMORY_SIGNS):
            return _Failed("died-oom", f"it ended by {how}")
        said = _last_words(tail)
        return _Failed("died", f"it ended by {how}" + (f": {said}" if said else ""))

    def _tail(self) -> str:
        """The end of the worker's stderr (V8 writes a fatal error's reason, then a long stack trace)."""
        try:
            size = self.stderr.seek(0, os.SEEK_END)
            self.stderr.seek(max(0, size - (64 << 10)))
            return self.stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""


def _last_words(stderr: str) -> str:
    """What a dying worker said: V8's fatal line, else its last unindented line."""
    lines = [line.strip("# ").strip() for line in stderr.splitlines() if line.strip() and not line[:1].isspace()]
    fatal = [line for line in lines if "fatal" in line.lower()]
    return (fatal or lines or [""])[-1][:200]


def _reap(proc: subprocess.Popen[bytes], stderr: IO[bytes], owner: int) -> None:
    """Kill a worker's process group and wait for it (not from a forked child: the worker is its
    parent's)."""
    if os.getpid() != owner:
        return
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except PermissionError:  # pragma: no cover - the group is the worker's own
            proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process stuck in the kernel
            pass
    for stream in (proc.stdin, proc.stdout, stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass


def _json(value: Any) -> str:
    # specs hold valid plans only (no inexact number literals), so the standard encoder is exact
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def _too_large(spec: dict[str, Any]) -> dict[str, Any]:
    return {"alone": True, "limit": f"js of {len(spec['js'])} characters is over the {MAX_JS_CHARS} limit"}
