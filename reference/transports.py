"""The tool registry and the streaming collector: a plan call assembled from a model's streamed tool-call
fragments, selected only after full validation (the seed ``tool-registry-and-transports.md``).

A :class:`ToolRegistry` is built from a catalog: each tool has an id (its name), an input schema (its
declared arguments), a pure :meth:`ToolDefinition.parse` (the complete input, validated; a fresh value)
and a pure :meth:`ToolDefinition.resolve` (the plan call it stands for). :meth:`ToolRegistry.seal`
freezes it into a :class:`Stage` holding every tool; :meth:`Stage.select` returns a sealed subset, the
tools one stage may propose. Unknown tools, duplicate ids, empty selections and selections outside the
stage are :class:`RegistryError`.

:func:`prepare` returns a :class:`Collector`: ``push`` takes fragments as they arrive (body text as a
string, or a function-call delta: a non-array object with ``index`` 0 and optional ``id``, ``name`` and
``arguments`` strings), ``output_chars`` counts what was pushed, and ``finish`` returns the
:class:`Selection` (a registered tool, its parsed input and resolved call) or the body :class:`Text`. A
collector rejects, with a :class:`ProtocolError` of a stable ``code``, and resolves no tool when:

=====================  ==========================================================================
``fragment_invalid``   a fragment is neither a string nor a well-formed delta
``multiple_calls``     a delta's ``index`` is not 0 (a second call)
``id_conflict``        two deltas carry different ids
``mixed_body``         non-empty body text and a call in the same answer
``output_limit``       ``output_chars`` passed ``max_output_chars``
``unknown_tool``       the call names no tool of the stage (or no name at all)
``arguments_invalid``  the arguments are not one complete JSON text (cut short or broken), or are one
                       the tool's parse rejects
``empty``              nothing was pushed but empty text
``finished``           a push or finish after finish
=====================  ==========================================================================

``output_chars`` is the number of UTF-16 code units of body text, ``name`` and ``arguments`` pushed so
far (what JavaScript's ``length`` counts; ids are not output); it never decreases, and a push that takes
it past the limit is rejected. After an error every later push and the finish raise that first error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reference import jsonio
from reference.catalog import Catalog, Tool
from reference.jsonio import is_exact_number, is_number

__all__ = ["CODES", "Collector", "ProtocolError", "RegistryError", "Selection", "Stage", "Text", "ToolDefinition",
           "ToolRegistry", "prepare", "utf16_length"]

CODES = ("fragment_invalid", "multiple_calls", "id_conflict", "mixed_body", "output_limit", "unknown_tool",
         "arguments_invalid", "empty", "finished")


class RegistryError(ValueError):
    """A registry or a selection that breaks a rule; ``code`` names it (``unknown_tool``, ``duplicate_id``,
    ``empty_selection``, ``outside_stage``, ``invalid_tool``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ProtocolError(ValueError):
    """A stream a collector rejects; ``code`` is one of :data:`CODES`; ``cause`` is the tool's own parse
    error behind an ``arguments_invalid``, when there is one."""

    def __init__(self, code: str, message: str, cause: Exception | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.cause = cause


def utf16_length(text: str) -> int:
    """JavaScript's ``length`` of ``text`` (a lone surrogate is one unit, a non-BMP code point two)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One tool: its id and input schema (from a catalog entry), a pure parse and a pure resolve."""

    tool: Tool

    @property
    def id(self) -> str:
        return self.tool.name

    def input_schema(self) -> dict[str, Any]:
        """The input's JSON Schema (for a model's ``tools`` list)."""
        props = {a: {"type": t} for a, t in self.tool.arguments}
        return {"type": "object", "properties": props, "required": list(self.tool.required),
                "additionalProperties": False}

    def parse(self, value: Any) -> dict[str, Any]:
        """The complete input, validated: an object whose members are declared arguments of their types
        (numbers finite and exact), every required one present; a fresh dict. Raises ``ValueError``."""
        if not isinstance(value, Mapping):
            raise ValueError(f"the input of {self.id} is not an object")
        types = dict(self.tool.arguments)
        out: dict[str, Any] = {}
        for name, item in value.items():
            kind = types.get(name)
            if kind is None:
                raise ValueError(f"{name!r} is not an argument of {self.id}")
            ok = (isinstance(item, str) if kind == "string" else isinstance(item, bool) if kind == "boolean"
                  else is_number(item) and is_exact_number(item))
            if not ok:
                raise ValueError(f"{item!r} for {self.id}.{name} is not an exact {kind}")
            out[name] = item
        missing = [r for r in self.tool.required if r not in out]
        if missing:
            raise ValueError(f"required argument {missing[0]!r} of {self.id} is missing")
        return out

    def resolve(self, value: dict[str, Any]) -> dict[str, Any]:
        """The plan call a parsed input stands for (pure: nothing runs)."""
        return {"tool": self.id, "args": dict(value)}


class ToolRegistry:
    """Tools by id, open for building; :meth:`seal` freezes them into a :class:`Stage`."""

    def __init__(self, tools: Iterable[ToolDefinition] = ()) -> None:
        self._tools: dict[str, Any] = {}
        for tool in tools:
            self.add(tool)

    @classmethod
    def from_catalog(cls, raw: Any) -> ToolRegistry:
        """A registry of a valid catalog's tools (``InvalidRecord`` for an invalid one)."""
        return cls(ToolDefinition(tool) for tool in Catalog.from_json(raw).tools)

    def add(self, tool: Any) -> None:
        """Add a tool: a :class:`ToolDefinition`, or any object with a string ``id`` and pure ``parse``
        and ``resolve`` methods (a tool whose input is not a catalog's arguments)."""
        if not (isinstance(getattr(tool, "id", None), str) and callable(getattr(tool, "parse", None))
                and callable(getattr(tool, "resolve", None))):
            raise RegistryError("invalid_tool", f"{tool!r} is not a tool definition (id, parse, resolve)")
        if tool.id in self._tools:
            raise RegistryError("duplicate_id", f"tool id {tool.id!r} is registered twice")
        self._tools[tool.id] = tool

    def seal(self) -> Stage:
        tools = tuple(self._tools.values())
        return Stage(tools, frozenset(t.id for t in tools))


@dataclass(frozen=True, slots=True)
class Stage:
    """A sealed set of tools a stage may propose (immutable; ``select`` makes a subset). ``registered``
    holds every id of the sealed registry it came from: an id outside it is unknown, one inside it but
    not in this stage is outside the stage."""

    tools: tuple[Any, ...]
    registered: frozenset[str]
    _by_id: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {t.id: t for t in self.tools})

    def ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.tools)

    def get(self, tool_id: str) -> Any:
        return self._by_id.get(tool_id)

    def select(self, ids: Iterable[str]) -> Stage:
        """The sealed subset of these ids, in this stage's order."""
        chosen = list(ids)
        if not chosen:
            raise RegistryError("empty_selection", "a selection needs at least one tool")
        seen: set[str] = set()
        for tool_id in chosen:
            if not isinstance(tool_id, str) or tool_id not in self.registered:
                raise RegistryError("unknown_tool", f"{tool_id!r} is not a registered tool")
            if tool_id in seen:
                raise RegistryError("duplicate_id", f"{tool_id!r} is selected twice")
            if tool_id not in self._by_id:
                raise RegistryError("outside_stage", f"{tool_id!r} is not a tool of this stage")
            seen.add(tool_id)
        return Stage(tuple(t for t in self.tools if t.id in seen), self.registered)


@dataclass(frozen=True, slots=True)
class Selection:
    """A validated tool call: the tool's id, its parsed input and the call it resolves to."""

    tool_id: str
    input: dict[str, Any]
    call: dict[str, Any]
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Text:
    """An answer of body text alone (no call)."""

    text: str


class Collector:
    """Assembles one answer's fragments (see the module's docstring)."""

    def __init__(self, stage: Stage, *, max_output_chars: float = math.inf) -> None:
        if not isinstance(stage, Stage):
            raise TypeError("a collector needs a sealed stage (ToolRegistry.seal(), Stage.select())")
        if not (max_output_chars == math.inf or (isinstance(max_output_chars, int) and max_output_chars >= 0)):
            raise ValueError("max_output_chars is a non-negative integer or infinity")
        self.stage = stage
        self.max_output_chars = max_output_chars
        self.output_chars = 0
        self._text: list[str] = []
        self._name: list[str] = []
        self._arguments: list[str] = []
        self._id: str | None = None
        self._call = False
        self._error: ProtocolError | None = None
        self._done = False

    def _fail(self, code: str, message: str, cause: Exception | None = None) -> ProtocolError:
        if self._error is None:
            self._error = ProtocolError(code, message, cause)
        return self._error

    def push(self, fragment: Any) -> None:
        if self._done:
            raise ProtocolError("finished", "a fragment after finish")
        if self._error is not None:
            raise self._error
        if isinstance(fragment, str):
            self._count(fragment)
            if fragment:
                if self._call:
                    raise self._fail("mixed_body", "body text together with a call")
                self._text.append(fragment)
            return
        if not isinstance(fragment, Mapping):
            raise self._fail("fragment_invalid", f"a fragment is a string or a delta object, not {type(fragment).__name__}")
        index = fragment.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise self._fail("fragment_invalid", f"a delta's index {index!r} is not an integer")
        if index != 0:
            raise self._fail("multiple_calls", f"a delta for call {index}: only one call is allowed")
        parts = {}
        for key in ("id", "name", "arguments"):
            if key in fragment and fragment[key] is not None:
                if not isinstance(fragment[key], str):
                    raise self._fail("fragment_invalid", f"a delta's {key} is not a string")
                parts[key] = fragment[key]
        if "id" in parts:
            if not parts["id"]:
                raise self._fail("fragment_invalid", "a delta's id is empty")
            if self._id is not None and parts["id"] != self._id:
                raise self._fail("id_conflict", f"call id {parts['id']!r} after {self._id!r}")
            self._id = parts["id"]
        self._count(parts.get("name", "") + parts.get("arguments", ""))
        if any(self._text):
            raise self._fail("mixed_body", "a call together with body text")
        self._call = True
        self._name.append(parts.get("name", ""))
        self._arguments.append(parts.get("arguments", ""))

    def _count(self, text: str) -> None:
        self.output_chars += utf16_length(text)
        if self.output_chars > self.max_output_chars:
            raise self._fail("output_limit", f"{self.output_chars} output characters, over the limit of"
                             f" {self.max_output_chars}")

    def finish(self) -> Selection | Text:
        if self._done:
            raise ProtocolError("finished", "finish after finish")
        self._done = True
        if self._error is not None:
            raise self._error
        if not self._call:
            text = _joined(self._text)
            if not text:
                raise self._fail("empty", "the answer holds no text and no call")
            return Text(text)
        name = _joined(self._name)
        tool = self.stage.get(name)
        if tool is None:
            raise self._fail("unknown_tool", f"{name!r} is not a tool of this stage" if name else "the call has no name")
        text = _joined(self._arguments)
        try:
            value = jsonio.loads(text)
        except (ValueError, RecursionError) as err:
            raise self._fail("arguments_invalid", f"the arguments of {name} are not one complete JSON text: {err}") from None
        try:
            parsed = tool.parse(value)
        except ValueError as err:
            raise self._fail("arguments_invalid", str(err), err) from None
        return Selection(tool_id=name, input=parsed, call=tool.resolve(parsed), call_id=self._id)


def _joined(parts: list[str]) -> str:
    """The fragments as one string, a surrogate pair split between two fragments made one code point again
    (as JavaScript's strings, which are UTF-16, join them)."""
    text = "".join(parts)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return text


def prepare(stage: Stage, *, max_output_chars: float = math.inf) -> Collector:
    """A new collector for one answer of ``stage`` (the seed's ``prepare(options)``)."""
    return Collector(stage, max_output_chars=max_output_chars)


# --- the JSON Lines protocol of the collector role (``codemode collect``) ------------------------------


class _Counted:
    """A stage tool that counts its ``resolve`` calls in a shared one-item list."""

    def __init__(self, tool: ToolDefinition, resolved: list[int]) -> None:
        self.id = tool.id
        self._tool = tool
        self._resolved = resolved

    def parse(self, value: Any) -> dict[str, Any]:
        return self._tool.parse(value)

    def resolve(self, value: dict[str, Any]) -> dict[str, Any]:
        self._resolved[0] += 1
        return self._tool.resolve(value)


def counting_stage(catalog: Any) -> tuple[Stage, list[int]]:
    """A sealed stage of a valid catalog's tools whose ``resolve`` calls are counted in the returned
    one-item list (what TR-RESOLVE reads); ``InvalidRecord`` for an invalid catalog."""
    resolved = [0]
    return ToolRegistry(_Counted(t, resolved) for t in ToolRegistry.from_catalog(catalog).seal().tools).seal(), resolved


def collect_request(request: Any, *, make: Any = None) -> dict[str, Any]:
    """The answer to one parsed request line of the collector role: ``{"collect": {"tools", "fragments",
    "maxOutputChars"}}`` gets ``{"result": {"call": ...} | {"text": ...} | {"rejected": why}, "outputChars":
    [each reading: after the collector is made, after every push, after finish], "resolved": n}``; any
    other line gets ``{"diagnostic": ...}``. ``make`` is the collector factory (``prepare`` by default)."""
    from reference.violations import InvalidRecord

    body = request.get("collect") if isinstance(request, dict) and set(request) == {"collect"} else None
    if not isinstance(body, dict) or not isinstance(body.get("fragments"), list) or "tools" not in body:
        return {"diagnostic": "a collector request is {\"collect\": {\"tools\": [...], \"fragments\": [...],"
                              " \"maxOutputChars\": n or null}}"}
    limit = body.get("maxOutputChars")
    if limit is None:
        limit = math.inf
    elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        return {"diagnostic": f"maxOutputChars {limit!r} is not a non-negative integer or null"}
    try:
        stage, resolved = counting_stage(body["tools"])
    except InvalidRecord as err:
        return {"diagnostic": err.diagnostic()}
    collector = (make or prepare)(stage, max_output_chars=limit)
    counts = [collector.output_chars]
    result: dict[str, Any]
    try:
        for fragment in body["fragments"]:
            try:
                collector.push(fragment)
            finally:
                counts.append(collector.output_chars)
        try:
            done = collector.finish()
        finally:
            counts.append(collector.output_chars)
        result = {"call": done.call} if isinstance(done, Selection) else {"text": done.text}
    except ProtocolError as err:
        result = {"rejected": f"{err.code}: {err}"}
    return {"result": result, "outputChars": counts, "resolved": resolved[0]}
