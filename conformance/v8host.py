"""The V8 host: runs compiled plans in embedded V8 (``py_mini_racer``) against mocked tools.

Cases run in batches in one long-lived context, because one ``eval`` round trip costs far more than
running a case. The harness captured every intrinsic it uses before any body ran, and snapshots every
global and every built-in reachable from ``globalThis`` around each batch: when a batch changed
anything, every case of it is judged again *alone* in a fresh context, and those verdicts are the ones
that count. A case that fails in a batch is judged alone too. ``JS-PURE`` is judged on alone runs.

(DESIGN §6 proposed freezing the built-ins instead. Detection is stronger: a frozen built-in turns a
body's write into a throw that the body itself may swallow, which hides the impurity, and freezing makes
legal code such as assigning ``o.toString`` on a plain object throw.)

Traps handled here: a hard memory limit on every context (an unbounded V8 OOM kills the process);
results are collected by a second ``eval`` with a timeout, never by waiting on a promise; a context
that timed out or ran out of memory is closed and replaced; data crosses as JSON text only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from py_mini_racer import MiniRacer
from py_mini_racer._exc import JSOOMException, JSTimeoutException, MiniRacerBaseException


HARNESS = resources.files("conformance").joinpath("harness.js").read_text(encoding="utf-8")
MAX_JS_CHARS = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    memory_bytes: int = 512 << 20  # per V8 context
    batch_seconds: float = 10.0  # to start or collect one hardened batch
    case_seconds: float = 2.0  # to start or collect one case run alone


class V8Host:
    """Runs case specs (see ``conformance.cases.expect``) and returns one observation each."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._ctx: MiniRacer | None = None
        self.restarts = 0

    # -- contexts ---------------------------------------------------------------------------------

    def _new_context(self) -> MiniRacer:
        ctx = MiniRacer()
        ctx.set_hard_memory_limit(self.limits.memory_bytes)
        ctx.eval(HARNESS)
        return ctx

    def _drop(self) -> None:
        if self._ctx is not None:
            try:
                self._ctx.close()
            except MiniRacerBaseException:  # pragma: no cover - closing a wedged context
                pass
            self._ctx = None
            self.restarts += 1

    def close(self) -> None:
        self._drop()

    def __enter__(self) -> V8Host:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running ------------------------------------------------------------------------------------

    def run_batch(self, specs: Sequence[dict[str, Any]], *, purity: bool = True) -> list[dict[str, Any]]:
        """Observations for ``specs`` run together in the shared context. When the batch wedges,
        exhausts memory or changes a global or built-in, every case is run alone instead (``alone``
        set). Without ``purity`` no snapshot is taken: only failures (judged alone) can then be trusted,
        which is all a search for a known failure needs."""
        runnable = [i for i, s in enumerate(specs) if len(s["js"]) <= MAX_JS_CHARS]
        out: list[dict[str, Any]] = [_too_large(s) for s in specs]
        if not runnable:
            return out
        batch = [specs[i] for i in runnable]
        try:
            if self._ctx is None:
                self._ctx = self._new_context()
            self._ctx.eval(_call("run", _json(batch), purity), timeout_sec=self.limits.batch_seconds)
            collected = json.loads(self._ctx.eval("__codemode.collect()", timeout_sec=self.limits.batch_seconds))
        except MiniRacerBaseException:
            self._drop()
            collected = None
        if collected is None or collected["purity"]:
            self._drop()
            for i in runnable:
                out[i] = self.run_alone(specs[i])
            return out
        for i, obs in zip(runnable, collected["observations"]):
            out[i] = obs
        return out

    def run_alone(self, spec: dict[str, Any], *, purity: bool = True) -> dict[str, Any]:
        """One case in a fresh context; ``purity`` lists what it changed in globals and built-ins."""
        if len(spec["js"]) > MAX_JS_CHARS:
            return _too_large(spec)
        ctx = None
        try:
            ctx = self._new_context()
            ctx.eval(_call("run", _json([spec]), purity), timeout_sec=self.limits.case_seconds)
            collected = json.loads(ctx.eval("__codemode.collect()", timeout_sec=self.limits.case_seconds))
        except JSTimeoutException:
            return {"alone": True, "limit": f"ran past the JS time limit of {self.limits.case_seconds:g}s"}
        except JSOOMException:
            return {"alone": True, "limit": f"exhausted the JS memory limit of {self.limits.memory_bytes >> 20} MiB"}
        except MiniRacerBaseException as err:
            # The body broke the harness after it ran: it replaced something the harness relies on.
            return {"alone": True, "harness": f"{type(err).__name__}: {str(err)[:300]}"}
        finally:
            if ctx is not None:
                ctx.close()
        obs: dict[str, Any] = collected["observations"][0]
        obs["alone"] = True
        obs["purity"] = collected["purity"]
        return obs


def _json(value: Any) -> str:
    # specs hold valid plans only (no inexact number literals), so the standard encoder is exact
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def _call(method: str, text: str, purity: bool) -> str:
    """``__codemode.method(JSON.parse(<text>), purity)`` with ``text`` (pure-ASCII JSON) carried verbatim.

    A raw template keeps every backslash as written, so the JSON needs no second escaping; the only
    characters a template treats specially, a backtick and ``${``, can occur in JSON only inside
    strings, where ``\u0060`` and ``\u0024`` say the same. (Never splice JSON in as an object literal:
    a ``"__proto__"`` key there sets a prototype.)"""
    safe = text.replace("`", "\\u0060").replace("$", "\\u0024")
    return f"__codemode.{method}(String.raw`{safe}`, {'true' if purity else 'false'})"


def _too_large(spec: dict[str, Any]) -> dict[str, Any]:
    return {"alone": True, "limit": f"js of {len(spec['js'])} characters is over the {MAX_JS_CHARS} limit"}
