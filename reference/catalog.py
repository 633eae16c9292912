"""Tool catalogs: frozen records, strict JSON (de)serialisation, and the ``IN-*`` catalog clauses.

``validate_catalog`` works on raw JSON and returns one :class:`Violation` per broken clause;
``Catalog.from_json`` returns a record only for a valid catalog, so every ``Catalog`` is valid.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from reference.names import is_identifier_name, is_tool_name
from reference.violations import InvalidRecord, Violation

MAX_TOOLS = 8
MAX_ARGUMENTS = 4
ARGUMENT_TYPES = ("string", "number", "boolean")
RETURN_KINDS = ("text", "object", "array")
TOOL_KEYS = ("name", "arguments", "required", "returns")


@dataclass(frozen=True, slots=True, kw_only=True)
class Returns:
    kind: str
    properties: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.properties is not None:
            out["properties"] = list(self.properties)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    name: str
    arguments: tuple[tuple[str, str], ...]  # (argument name, type) in declaration order
    required: tuple[str, ...]
    returns: Returns
    _types: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_types", dict(self.arguments))

    def argument_type(self, name: str) -> str | None:
        return self._types.get(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arguments": dict(self.arguments),
            "required": list(self.required),
            "returns": self.returns.to_json(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    tools: tuple[Tool, ...]

    def tool(self, name: str) -> Tool | None:
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    def to_json(self) -> list[dict[str, Any]]:
        return [tool.to_json() for tool in self.tools]

    @classmethod
    def from_json(cls, raw: Any) -> Catalog:
        """The catalog ``raw`` describes; raises :class:`InvalidRecord` naming every broken clause."""
        fast = _surely_valid(raw)
        if fast is not None:
            return fast
        violations = validate_catalog(raw)
        if violations:
            raise InvalidRecord(violations)
        return cls(tools=tuple(_tool(entry) for entry in raw))


_KEYS = frozenset(TOOL_KEYS)
_TYPES = frozenset(ARGUMENT_TYPES)
_PLAIN_RETURNS = {kind: Returns(kind=kind) for kind in RETURN_KINDS}  # immutable, so shared


def _surely_valid(raw: Any) -> Catalog | None:
    """The catalog, when ``raw`` is plainly valid; ``None`` when in any doubt (the full validator then
    decides, and words the diagnostic). One tight pass over the common case: the planner reads a catalog
    with every request. ``tests/test_catalog.py`` checks it never accepts what the validator rejects."""
    if type(raw) is not list or not 1 <= len(raw) <= MAX_TOOLS:
        return None
    tools = []
    names: set[str] = set()
    for entry in raw:
        if type(entry) is not dict or entry.keys() != _KEYS:
            return None
        name, arguments, required, returns = entry["name"], entry["arguments"], entry["required"], entry["returns"]
        if type(name) is not str or name in names or not is_tool_name(name):
            return None
        names.add(name)
        if type(arguments) is not dict or len(arguments) > MAX_ARGUMENTS or type(required) is not list:
            return None
        for arg, kind in arguments.items():
            if type(kind) is not str or kind not in _TYPES or not is_identifier_name(arg):
                return None
        if not all(type(r) is str and r in arguments for r in required) or len(set(required)) != len(required):
            return None
        if type(returns) is not dict:
            return None
        kind = returns.get("kind")
        props = returns.get("properties")
        if type(kind) is not str or kind not in RETURN_KINDS:
            return None
        if "properties" in returns:
            if len(returns) != 2 or kind == "text" or type(props) is not list:
                return None
            if not all(is_identifier_name(q) for q in props) or len(set(props)) != len(props):
                return None
        elif len(returns) != 1:
            return None
        tools.append(Tool(
            name=name,
            arguments=tuple(arguments.items()),
            required=tuple(required),
            returns=_PLAIN_RETURNS[kind] if props is None else Returns(kind=kind, properties=tuple(props)),
        ))
    return Catalog(tools=tuple(tools))


def _tool(entry: Mapping[str, Any]) -> Tool:
    returns = entry["returns"]
    props = returns.get("properties")
    return Tool(
        name=entry["name"],
        arguments=tuple(entry["arguments"].items()),
        required=tuple(entry["required"]),
        returns=Returns(kind=returns["kind"], properties=None if props is None else tuple(props)),
    )


def validate_catalog(raw: Any) -> list[Violation]:
    """One violation per broken ``IN-*`` clause (the first problem found for each), in clause order."""
    first: dict[str, Violation] = {}
    for violation in _catalog_violations(raw):
        first.setdefault(violation.clause, violation)
    return list(first.values())


def _catalog_violations(raw: Any) -> Iterator[Violation]:
    if not isinstance(raw, list):
        yield Violation(clause="IN-COUNT", message=f"tools {_short(raw)} is not an array of 1-8 catalog entries")
        return
    if not 1 <= len(raw) <= MAX_TOOLS:
        yield Violation(clause="IN-COUNT", message=f"{len(raw)} tools is outside 1-{MAX_TOOLS}")
    seen: set[str] = set()
    for index, entry in enumerate(raw):
        where = f"tools[{index}]"
        if not isinstance(entry, dict):
            yield Violation(clause="IN-KEYS", message=f"{where} {_short(entry)} is not an object")
            continue
        keys = set(entry)
        if keys != set(TOOL_KEYS):
            missing = [k for k in TOOL_KEYS if k not in keys]
            extra = sorted(keys - set(TOOL_KEYS))
            yield Violation(
                clause="IN-KEYS",
                message=f"{where} keys {sorted(keys)!r} are not exactly name, arguments, required, returns"
                + (f" (missing {missing!r})" if missing else "")
                + (f" (unknown {extra!r})" if extra else ""),
            )
        name = entry.get("name")
        if "name" in entry:
            if not is_tool_name(name):
                yield Violation(
                    clause="IN-NAME",
                    message=f"{_short(name)} at {where}.name is not a JavaScript identifier that is not a reserved word",
                )
            elif name in seen:
                yield Violation(clause="IN-UNIQUE", message=f"{name!r} names more than one tool")
            else:
                seen.add(name)
        declared: set[str] = set()
        if "arguments" in entry:
            declared = yield from _arguments(entry["arguments"], where)
        if "required" in entry:
            yield from _required(entry["required"], declared, where, args_ok="arguments" in entry)
        if "returns" in entry:
            yield from _returns(entry["returns"], where)


def _arguments(arguments: Any, where: str) -> Iterator[Violation]:
    if not isinstance(arguments, dict):
        yield Violation(clause="IN-ARGS", message=f"{_short(arguments)} at {where}.arguments is not an object")
        return set()
    if len(arguments) > MAX_ARGUMENTS:
        yield Violation(
            clause="IN-ARGS", message=f"{len(arguments)} arguments at {where} is more than {MAX_ARGUMENTS}"
        )
    for arg, kind in arguments.items():
        if not is_identifier_name(arg):
            yield Violation(clause="IN-ARGS", message=f"{arg!r} at {where}.arguments is not an IdentifierName")
        if kind not in ARGUMENT_TYPES:
            yield Violation(
                clause="IN-ARGS",
                message=f"{_short(kind)} for {where}.arguments.{arg} is not one of string, number, boolean"
                + " (nested objects, arrays and null are unsupported)",
            )
    return set(arguments)


def _required(required: Any, declared: set[str], where: str, *, args_ok: bool) -> Iterator[Violation]:
    if not isinstance(required, list):
        yield Violation(clause="IN-REQUIRED", message=f"{_short(required)} at {where}.required is not an array")
        return
    seen: set[str] = set()
    for name in required:
        if not isinstance(name, str):
            yield Violation(clause="IN-REQUIRED", message=f"{_short(name)} in {where}.required is not a string")
        elif name in seen:
            yield Violation(clause="IN-UNIQUE", message=f"{name!r} appears twice in {where}.required")
        elif args_ok and name not in declared:
            yield Violation(
                clause="IN-REQUIRED", message=f"{name!r} in {where}.required is not a declared argument"
            )
        else:
            seen.add(name)


def _returns(returns: Any, where: str) -> Iterator[Violation]:
    if not isinstance(returns, dict):
        yield Violation(clause="IN-RETURNS", message=f"{_short(returns)} at {where}.returns is not an object")
        return
    extra = sorted(set(returns) - {"kind", "properties"})
    if extra or "kind" not in returns:
        yield Violation(
            clause="IN-KEYS",
            message=f"{where}.returns keys {sorted(returns)!r} are not kind and optionally properties",
        )
    kind = returns.get("kind")
    if "kind" in returns and kind not in RETURN_KINDS:
        yield Violation(
            clause="IN-RETURNS", message=f"{_short(kind)} at {where}.returns.kind is not text, object or array"
        )
    if "properties" not in returns:
        return
    props = returns["properties"]
    if kind == "text":
        yield Violation(clause="IN-RETURNS", message=f"{where} returns text, which cannot declare properties")
    if not isinstance(props, list):
        yield Violation(
            clause="IN-RETURNS", message=f"{_short(props)} at {where}.returns.properties is not an array"
        )
        return
    seen: set[str] = set()
    for prop in props:
        if not is_identifier_name(prop):
            yield Violation(
                clause="IN-RETURNS",
                message=f"{_short(prop)} in {where}.returns.properties is not an IdentifierName",
            )
        elif prop in seen:
            yield Violation(clause="IN-UNIQUE", message=f"{prop!r} appears twice in {where}.returns.properties")
        else:
            seen.add(prop)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
