"""The collector role: streamed tool-call fragments pushed into an implementation's collector, observed.

A :class:`CollectCase` is a :class:`strategies.FragmentCase` (a catalog, the fragments, the output limit,
what must come of them, and the rule a broken one breaks) with an id. Three adapters run a collector,
each returning one observation per case (``{"result", "counts", "resolved", "pushed"}``) or ``Errored``:

* :class:`CollectorAdapter`, an in-process Python collector (``--python module:function``, the seed's
  ``prepare``: ``function(stage, max_output_chars=...)`` returns an object with ``push(fragment)``,
  ``finish()`` and ``output_chars``). The kit builds the stage itself (``reference.transports``: a sealed
  registry of the catalog's tools, each counting its ``resolve`` calls), reads ``output_chars`` after
  creation, after every push and after finish, stops at the first exception (a rejection), and reads the
  optional ``metadata`` once after the end (a getter that raises changes nothing). Nothing the collector
  does stops the kit: a hang past the time limit, or a ``SystemExit``, is errored;
* :class:`JSCollectorAdapter`, a JavaScript collector in V8 (``--js-collector FILE``), observed the same way
  by ``conformance/collect_harness.js``;
* :class:`StdioCollectorAdapter`, a command in any language speaking the collector role's JSON Lines
  protocol, whose readings and resolve count are its own report.

``CollectJudge`` hands each observation to the registry (``conformance.checks.transport``).
"""

from __future__ import annotations

import copy
import hashlib
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from conformance.adapters import Errored
from conformance.observations import CollectObservation, freeze
from conformance.process import CannotStart
from conformance.registry import judge
from conformance.results import CaseResult
from reference import jsonio

__all__ = ["CollectCase", "CollectJudge", "CollectorAdapter", "JSCollectorAdapter", "StdioCollectorAdapter",
           "collect_cases", "sample_collect_cases"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectCase:
    tools: Any
    fragments: tuple[Any, ...]
    max_output_chars: int | None  # None: Infinity
    expect: dict[str, Any]
    output_chars: int | None = None
    breaks: str | None = None

    @classmethod
    def of(cls, case: Any) -> CollectCase:
        return cls(tools=case.tools, fragments=tuple(case.fragments), max_output_chars=case.max_output_chars,
                   expect=case.expect, output_chars=case.output_chars, breaks=case.breaks)

    def to_json(self) -> dict[str, Any]:
        out = {"tools": self.tools, "fragments": list(self.fragments), "maxOutputChars": self.max_output_chars,
               "expect": self.expect, "outputChars": self.output_chars}
        if self.breaks:
            out["breaks"] = self.breaks
        return out

    @classmethod
    def from_json(cls, raw: Any) -> CollectCase:
        if not isinstance(raw, dict) or not {"tools", "fragments", "expect"} <= set(raw):
            raise ValueError("a collect case is an object with tools, fragments, expect and optionally"
                             " maxOutputChars, outputChars and breaks")
        return cls(tools=raw["tools"], fragments=tuple(raw["fragments"]), max_output_chars=raw.get("maxOutputChars"),
                   expect=raw["expect"], output_chars=raw.get("outputChars"), breaks=raw.get("breaks"))

    @property
    def id(self) -> str:
        return hashlib.sha256(jsonio.dumps(self.to_json()).encode()).hexdigest()[:12]

    def request_line(self) -> str:
        """The request as the collector role's JSON Lines protocol writes it."""
        return jsonio.dumps({"collect": _wire(self)})

    @property
    def family(self) -> str:
        return self.breaks or ("text" if "text" in self.expect else "call")


@st.composite
def collect_cases(draw: st.DrawFn) -> CollectCase:
    """Valid streams (some under an output limit they meet exactly or with room) and broken ones, about
    half each, each broken one labelled with its rule."""
    from strategies import broken_fragment_streams, fragment_streams

    if draw(st.booleans()):
        case = CollectCase.of(draw(fragment_streams()))
        if draw(st.integers(0, 2)) == 0 and case.output_chars is not None:
            case = CollectCase(tools=case.tools, fragments=case.fragments, expect=case.expect,
                               output_chars=case.output_chars,
                               max_output_chars=case.output_chars + draw(st.integers(0, 2)))
        return case
    return CollectCase.of(draw(broken_fragment_streams()))


def sample_collect_cases(rng: Any, n: int) -> list[CollectCase]:
    """``n`` collect cases drawn from ``rng`` (a ``random.Random``) by the same generators
    :func:`collect_cases` drives, without Hypothesis: a campaign's volume. About half are broken."""
    from strategies._internal.choosers import QuickChooser
    from strategies._internal.fragments import BREAKS, build_broken_stream, build_fragment_stream

    ch = QuickChooser(rng)
    out = []
    for _ in range(n):
        if ch.boolean():
            case = CollectCase.of(build_fragment_stream(ch))
            if ch.integer(0, 2) == 0 and case.output_chars is not None:
                case = CollectCase(tools=case.tools, fragments=case.fragments, expect=case.expect,
                                   output_chars=case.output_chars,
                                   max_output_chars=case.output_chars + ch.integer(0, 2))
            out.append(case)
        else:
            out.append(CollectCase.of(build_broken_stream(ch, ch.choice(BREAKS))))
    return out


# --- running a collector ---------------------------------------------------------------------------------


def _read(collector: Any) -> Any:
    """``output_chars`` as read once (what a getter that raises gives is said, never raised)."""
    try:
        value = collector.output_chars
    except Exception as err:  # noqa: BLE001 - anything the collector does is observed
        return {"unreadable": f"{type(err).__name__}: {err}"[:200]}
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return {"not_a_number": repr(value)[:100]}
    if isinstance(value, float) and not math.isfinite(value):
        return {"not_finite": repr(value)}
    return value


def _plain(result: Any) -> dict[str, Any]:
    from reference.transports import Selection, Text

    if isinstance(result, Selection):
        return {"call": result.call}
    if isinstance(result, Text):
        return {"text": result.text}
    call = getattr(result, "call", None)
    if isinstance(call, dict):
        return {"call": call}
    text = getattr(result, "text", None)
    if isinstance(text, str):
        return {"text": text}
    return {"other": repr(result)[:200]}


def observe(prepare: Callable[..., Any], case: CollectCase) -> dict[str, Any]:
    """What ``prepare``'s collector does with ``case`` (raises only for the kit's own faults)."""
    from reference.transports import counting_stage

    stage, seen = counting_stage(case.tools)
    limit = math.inf if case.max_output_chars is None else case.max_output_chars
    counts: list[Any] = []
    try:
        collector = prepare(stage, max_output_chars=limit)
    except Exception as err:  # noqa: BLE001
        return {"result": {"rejected": f"prepare raised {type(err).__name__}: {err}"[:300]}, "counts": [],
                "resolved": seen[0], "pushed": 0, "prepare_failed": True}
    counts.append(_read(collector))
    pushed = 0
    result: dict[str, Any]
    try:
        for fragment in case.fragments:
            try:
                collector.push(copy.deepcopy(fragment))  # the collector's own copy: the case stays as drawn
            finally:
                counts.append(_read(collector))
            pushed += 1
        try:
            result = _plain(collector.finish())
        finally:
            counts.append(_read(collector))
    except Exception as err:  # noqa: BLE001 - a rejection
        result = {"rejected": f"{type(err).__name__}: {err}"[:300]}
    # the optional call metadata: read once, best effort; whatever its getter does cannot change the result
    try:
        getattr(collector, "metadata", None)
    except Exception:  # noqa: BLE001
        pass
    return {"result": result, "counts": counts, "resolved": seen[0], "pushed": pushed}


class CollectorAdapter:
    """An in-process Python collector, ``module:function`` (the seed's ``prepare``)."""

    def __init__(self, target: str, *, timeout: float = 10.0) -> None:
        from conformance.adapters import load_function

        self.description = f"--python {target}"
        self.timeout = timeout
        self.prepare: Callable[..., Any] = load_function(target)

    def run(self, case: CollectCase) -> dict[str, Any] | Errored:
        box: list[Any] = []

        def work() -> None:
            try:
                box.append(observe(self.prepare, case))
            except BaseException as err:  # noqa: BLE001 - SystemExit and the like, from the collector
                box.append(Errored(reason=f"the collector raised {type(err).__name__} past the kit: {err}"[:300]))

        thread = threading.Thread(target=work, name="codemode-collector", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive() or not box:
            return Errored(reason=f"no end within {self.timeout:g}s (a push or finish hung)")
        return box[0]

    def close(self) -> None:
        return None


class JSCollectorAdapter:
    """A JavaScript collector (``--js-collector FILE``: CommonJS, ``module.exports.prepare``) run in V8 by
    the kit's collector harness: a batch of cases in one fresh context; when the batch cannot be judged
    (a hang, memory, a broken harness), each case again alone, so only the culprit is errored."""

    def __init__(self, path: str, host: Any = None, *, timeout: float = 10.0) -> None:
        from pathlib import Path

        try:
            self.source = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise CannotStart(f"--js-collector {path}: {err}") from err
        self.path = path
        self.description = f"--js-collector {path}"
        self.host = None
        self.timeout = timeout
        if host is not None:
            self.attach(host)

    def attach(self, host: Any) -> None:
        """Use ``host`` (a :class:`conformance.v8host.V8Host`) and check that the source loads there."""
        self.host = host
        probe = host.collect(self.source, [], seconds=self.timeout)
        if isinstance(probe, str):
            raise CannotStart(f"--js-collector {self.path} does not load: {probe}")

    def run_many(self, cases: Sequence[CollectCase]) -> list[dict[str, Any] | Errored]:
        got = self.host.collect(self.source, [_wire(c) for c in cases], seconds=self.timeout)
        if not isinstance(got, str):
            return list(got)
        if len(cases) == 1:
            return [Errored(reason=f"the collector {got}")]
        return [self.run_many([c])[0] for c in cases]

    def run(self, case: CollectCase) -> dict[str, Any] | Errored:
        return self.run_many([case])[0]

    def close(self) -> None:
        return None


class StdioCollectorAdapter:
    """A collector in any language, as a command speaking the collector role's JSON Lines protocol
    (SPEC.md, Transport): ``{"collect": {"tools", "fragments", "maxOutputChars"}}`` in, ``{"result":
    {"call"|"text"|"rejected": ...}, "outputChars": [readings], "resolved": n}`` out. It runs on the same
    leash as every command (``conformance.adapters.SubprocessAdapter``: fenced exchanges, restarts,
    errored crashes and hangs); an answer of another shape is errored. Over a stream the readings of
    outputChars and the count of resolve calls are the collector's own report."""

    def __init__(self, command: str, *, timeout: float = 10.0, cwd: str | None = None) -> None:
        from conformance.adapters import SubprocessAdapter

        self.inner = SubprocessAdapter(command, timeout=timeout, cwd=cwd, fence="collect")
        self.description = command

    @property
    def faults(self) -> list[Any]:
        return self.inner.faults

    def run_many(self, cases: Sequence[CollectCase]) -> list[dict[str, Any] | Errored]:
        return [_reported(a) for a in self.inner.exchange([{"collect": _wire(c)} for c in cases])]

    def run(self, case: CollectCase) -> dict[str, Any] | Errored:
        return self.run_many([case])[0]

    def close(self) -> None:
        self.inner.close()


def _reported(answer: Any) -> dict[str, Any] | Errored:
    if isinstance(answer, Errored):
        return answer
    result, counts, resolved = answer.get("result"), answer.get("outputChars"), answer.get("resolved")
    shaped = (set(answer) == {"result", "outputChars", "resolved"} and isinstance(result, dict) and len(result) == 1
              and next(iter(result)) in ("call", "text", "rejected") and isinstance(counts, list)
              and isinstance(resolved, int) and not isinstance(resolved, bool))
    if not shaped:
        return Errored(reason=f"answered {jsonio.dumps(answer)[:200]}, not a collector response"
                       ' ({"result": {"call"|"text"|"rejected": ...}, "outputChars": [...], "resolved": n})')
    if "rejected" in result and not isinstance(result["rejected"], str):
        result = {"rejected": jsonio.dumps(result["rejected"])[:300]}
    return {"result": result, "counts": counts, "resolved": resolved, "pushed": None}


def _wire(case: CollectCase) -> dict[str, Any]:
    return {"tools": case.tools, "fragments": list(case.fragments), "maxOutputChars": case.max_output_chars}


class CollectJudge:
    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    def evaluate(self, cases: Sequence[CollectCase]) -> list[CaseResult]:
        out = []
        many = getattr(self.adapter, "run_many", None)
        answers = many(cases) if many is not None else [self.adapter.run(case) for case in cases]
        for case, answer in zip(cases, answers):
            errored = answer if isinstance(answer, Errored) else None
            obs = CollectObservation(case=case, answer=None if errored else freeze(answer))
            verdict = judge("collect", obs, judged=errored is None)
            out.append(CaseResult(case=case, exercised=verdict.exercised, violations=verdict.violations,
                                  errored=errored, answer=None if errored else answer))
        return out
