"""The answer's JSON Schema for one catalog, in the strict subset structured-output servers accept.

A planner's answer is ``{"plan": ...}`` or ``{"diagnostic": "..."}``: a union, which strict mode cannot
take at its root, so it is asked for as the member ``answer`` of an object. The schema is cut to types,
properties, required fields, enums and ``anyOf`` with nesting: every object lists all its properties as
required and forbids others; a property that may be left out (an optional argument, ``fields``,
``limit``) may be null instead, and null is read as absent. Tool names are an enum of the catalog and
each tool is its own call branch, with its own arguments.

The bounds strict mode cannot say (1 to 3 calls, limit 0 to 100, 1 to 3 distinct fields) and everything
that depends on the catalog beyond names and types (PL-*) are left to the kit's judges: the driver
repairs only what breaks this schema, and never mends a plan.

Any ``tools`` value gives a schema, a malformed catalog included (its answer should be a diagnostic,
which the schema always admits): entries that are not well-formed tools are left out of the branches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema

__all__ = ["ForCatalog", "answer_schema", "for_catalog", "from_document", "key", "problem", "to_document"]

TYPES = ("string", "number", "boolean")


def _tools(tools: Any) -> list[tuple[str, dict[str, str], set[str], list[str]]]:
    """(name, arguments, required, array properties) of each well-formed entry, first of each name."""
    out: list[tuple[str, dict[str, str], set[str], list[str]]] = []
    seen: set[str] = set()
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or tool["name"] in seen:
            continue
        arguments = tool.get("arguments")
        arguments = {k: v for k, v in arguments.items() if v in TYPES} if isinstance(arguments, dict) else {}
        required = tool.get("required")
        required = {r for r in required if isinstance(r, str) and r in arguments} if isinstance(required, list) else set()
        returns = tool.get("returns")
        props: list[str] = []
        if isinstance(returns, dict) and returns.get("kind") == "array" and isinstance(returns.get("properties"), list):
            props = list(dict.fromkeys(p for p in returns["properties"] if isinstance(p, str)))
        seen.add(tool["name"])
        out.append((tool["name"], arguments, required, props))
    return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _object(properties: dict[str, Any], required: list[str], *, strict: bool) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties) if strict else required,
            "additionalProperties": False}


def _call(name: str, arguments: dict[str, str], required: set[str], *, strict: bool) -> dict[str, Any]:
    args = {a: ({"type": t} if a in required else {"type": [t, "null"]}) for a, t in arguments.items()}
    return _object({"tool": {"type": "string", "enum": [name]},
                    "args": _object(args, [a for a in arguments if a in required], strict=strict)},
                   ["tool", "args"], strict=strict)


def answer_schema(tools: Any, *, strict: bool = True) -> dict[str, Any]:
    """The schema of a document ``{"answer": <plan or diagnostic>}`` for ``tools`` (a fresh copy).
    ``strict=False`` lists only the truly required properties as required."""
    return _schema(key(tools), strict)


def key(tools: Any) -> str:
    """A catalog's cache key: its canonical JSON."""
    return json.dumps(tools, sort_keys=True, ensure_ascii=True)


@dataclass(frozen=True, slots=True)
class ForCatalog:
    """What the driver needs of one catalog, made once: the strict schema (not to be changed) and the
    validator of answers."""

    strict: dict[str, Any]
    validator: jsonschema.Draft202012Validator
    #: the strict schema as canonical JSON text (sorted keys, ASCII, no spaces), for request bodies
    strict_json: str

    def problem(self, document: Any) -> tuple[str, str] | None:
        """Where ``document`` breaks the schema: ``(path, rule)``, the path a JSON Pointer
        (``/answer/plan/calls/0/tool``) and the rule the schema keyword (``enum``); ``None`` if it matches."""
        error = jsonschema.exceptions.best_match(self.validator.iter_errors(document))
        if error is None:
            return None
        path = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in error.absolute_path) or "/"
        return path, str(error.validator)


@lru_cache(maxsize=512)
def for_catalog(tools_key: str) -> ForCatalog:
    strict = _schema(tools_key, True)
    return ForCatalog(strict=strict, validator=_validator(tools_key),
                      strict_json=json.dumps(strict, sort_keys=True, ensure_ascii=True, separators=(",", ":")))


def _schema(tools_json: str, strict: bool) -> dict[str, Any]:
    tools = _tools(json.loads(tools_json))
    calls = [_call(name, args, req, strict=strict) for name, args, req, _ in tools]
    props = list(dict.fromkeys(p for *_, ps in tools for p in ps))
    fields = _nullable({"type": "array", "items": {"type": "string", "enum": props}}) if props else {"type": "null"}
    output = _object({"kind": {"type": "string", "enum": ["all", "last"]}, "fields": fields,
                      "limit": _nullable({"type": "integer"})}, ["kind"], strict=strict)
    call_items: dict[str, Any] = {"anyOf": calls} if len(calls) > 1 else (calls[0] if calls else {"not": {}})
    plan = _object({"mode": {"type": "string", "enum": ["single", "sequential", "parallel"]},
                    "calls": {"type": "array", "items": call_items}, "output": output},
                   ["mode", "calls", "output"], strict=strict)
    answer = {"anyOf": [_object({"plan": plan}, ["plan"], strict=strict),
                        _object({"diagnostic": {"type": "string"}}, ["diagnostic"], strict=strict)]}
    return _object({"answer": answer}, ["answer"], strict=strict)


def _validator(tools_json: str) -> jsonschema.Draft202012Validator:
    """What the driver validates answers against: the same rules as :func:`answer_schema` (its non-strict
    form: null or absent), with each union said as a discriminated choice instead of ``anyOf`` (a call's
    branch chosen by its ``tool``, the answer's by its one key), so a valid answer is checked once, not
    against every branch, and a broken one is named where it breaks (``/answer/plan/calls/0/tool``)."""
    tools = _tools(json.loads(tools_json))
    branches = []
    for name, arguments, required, _ in tools:
        args = {a: {"type": [t] if a in required else [t, "null"]} for a, t in arguments.items()}
        branches.append({"if": {"properties": {"tool": {"const": name}}, "required": ["tool"]},
                         "then": {"properties": {"args": {"properties": args, "required": sorted(required),
                                                          "additionalProperties": False}}}})
    call = {"type": "object", "required": ["tool", "args"], "additionalProperties": False, "allOf": branches,
            "properties": {"tool": {"type": "string", "enum": [name for name, *_ in tools]}, "args": {"type": "object"}}}
    props = list(dict.fromkeys(p for *_, ps in tools for p in ps))
    output = {"type": "object", "required": ["kind"], "additionalProperties": False, "properties": {
        "kind": {"type": "string", "enum": ["all", "last"]},
        "fields": {"type": ["array", "null"], "items": {"type": "string", "enum": props}},
        "limit": {"type": ["integer", "null"]}}}
    plan = {"type": "object", "required": ["mode", "calls", "output"], "additionalProperties": False, "properties": {
        "mode": {"type": "string", "enum": ["single", "sequential", "parallel"]},
        "calls": {"type": "array", "items": call}, "output": output}}
    answer = {"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
              "properties": {"plan": plan, "diagnostic": {"type": "string"}}}
    return jsonschema.Draft202012Validator({"type": "object", "required": ["answer"], "additionalProperties": False,
                                            "properties": {"answer": answer}})


def problem(document: Any, tools: Any) -> tuple[str, str] | None:
    """Where ``document`` breaks the answer schema of ``tools`` (see :meth:`ForCatalog.problem`)."""
    return for_catalog(key(tools)).problem(document)


def from_document(document: dict[str, Any]) -> dict[str, Any]:
    """The planner's answer in a document that matches the schema: nulls read as absent."""
    answer = document["answer"]
    if "plan" not in answer:
        return {"diagnostic": answer["diagnostic"]}
    plan = answer["plan"]
    calls = [{"tool": c["tool"], "args": {k: v for k, v in c["args"].items() if v is not None}} for c in plan["calls"]]
    output = {k: v for k, v in plan["output"].items() if v is not None}
    return {"plan": {"mode": plan["mode"], "calls": calls, "output": output}}


def to_document(answer: dict[str, Any], tools: Any) -> dict[str, Any]:
    """``answer`` as a strict server writes it: wrapped in ``answer``, every declared argument and every
    output property present (null where absent). Values are kept as they are, valid or not."""
    if "plan" not in answer or not isinstance(answer.get("plan"), dict):
        return {"answer": answer}
    declared = {name: args for name, args, _, _ in _tools(tools)}
    plan = dict(answer["plan"])
    calls = []
    for call in plan.get("calls") or ():
        if isinstance(call, dict) and isinstance(call.get("args"), dict) and call.get("tool") in declared:
            args = {a: None for a in declared[call["tool"]]} | call["args"]
            call = {**call, "args": args}
        calls.append(call)
    if isinstance(plan.get("calls"), list):
        plan["calls"] = calls
    if isinstance(plan.get("output"), dict):
        plan["output"] = {"fields": None, "limit": None} | plan["output"]
    return {"answer": {"plan": plan}}
