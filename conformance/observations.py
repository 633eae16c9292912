"""What the kit saw of one case, as immutable records: the one thing every check reads.

Each *subject* of ``conformance.registry`` has its observation:

* ``stream`` — :class:`StreamObservation`: the lines a freshly started IUT wrote for a raw stream;
* ``plan`` — :class:`PlanObservation`: a plan case and its answer (with the answers to its companion
  requests: an at-limit case's 127-token twin, a PL-INVARIANT pair's untransformed request);
* ``compile`` — :class:`CompileObservation`: a compile case, its answer and, for a valid plan, what its
  ``js`` did in V8 (also made, with ``source="plan"``, for the ``js`` of a pipeline's plan answers);
* ``again`` — :class:`AgainObservation`: a request answered twice (PL-DETERMINISM).

``answer`` is ``None`` when the IUT gave no usable answer (the case is errored, and only what it would
have exercised is counted); otherwise it is the answer as parsed from its line (plain JSON, which the
validators read; nothing modifies it). What V8 saw is frozen (mappings read-only, lists as tuples). A
check may memoize what several checks derive from one observation in ``memo``, which is never part of
what was observed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


def freeze(value: Any) -> Any:
    """``value`` (JSON-like) with every dict read-only and every list a tuple."""
    if isinstance(value, dict):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A frozen value as plain dicts and lists again (for JSON)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanObservation:
    case: Any  # conformance.plan_cases.PlanCase
    answer: dict[str, Any] | None
    role: str
    tokenizer: str
    catalog: Any  # reference.catalog.Catalog, or None when the request's catalog is invalid
    twin: dict[str, Any] | None = None  # the answer to an at-limit case's 127-token twin
    base: dict[str, Any] | None = None  # the answer to a PL-INVARIANT pair's untransformed request
    tokens: int | None = None  # reference tokens of the instruction (counted under --tokenizer own only)
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileObservation:
    case: Any  # conformance.cases.CompileCase
    answer: dict[str, Any] | None
    source: str = "compile"  # "compile": an answer to a compile request; "plan": a pipeline's plan answer
    exp: Any = None  # conformance.cases.Expectation, for a valid plan whose js was run (or errored)
    run: Mapping[str, Any] | None = None  # what the js did in V8 (see conformance/harness.js)
    twin: Mapping[str, Any] | None = None  # how the tame twin of an adversarial plan fared (JS-ESCAPE)
    caught_inside_limit: bool | None = None  # JS-LIMIT's probe: the limit raised over the bad row
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgainObservation:
    case: Any
    answer: dict[str, Any] | None  # the answer to the request sent again
    first: dict[str, Any]  # the answer it got the first time
    role: str
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamObservation:
    case: Any  # conformance.stream.StreamCase
    answer: dict[str, Any] | None  # {"lines": n} when the stream could be judged, None when errored
    got: tuple[bytes, ...] = ()  # lines read while stdin was open
    late: tuple[bytes, ...] = ()  # lines read after stdin was closed
    withheld: bool = False  # the per-request time limit passed with stdin open
    status: int | None = None  # exit status (None: it did not exit)
    stderr: str = ""
    timeout: float = 10.0
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectObservation:
    case: Any  # conformance.collect.CollectCase
    #: what the collector did: ``result`` ({"call": ...}, {"text": ...} or {"rejected": why}), ``counts``
    #: (each reading of outputChars: after creation, after every push, after finish), ``resolved`` (the
    #: stage's resolve calls), ``pushed`` (fragments pushed before it stopped)
    answer: Mapping[str, Any] | None
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
