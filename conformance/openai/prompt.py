"""The prompt the driver sends: versioned, shipped in the kit, and readable back by a server.

A prompt is a Markdown template with two slots: ``{{catalog}}``, replaced by the catalog as one line of
JSON inside a ```` ```json ```` fence under a ``# Catalog`` heading, and ``{{answer_format}}``, replaced
by the answer's JSON Schema under ``# Answer format`` in the modes that do not send the schema as
``response_format`` (``json_only`` and ``none``), and by nothing in ``strict`` mode. The system message is
the rendered template; the user message is the instruction, exactly as written. Every report records the
prompt's name and the SHA-256 digest of its template, so two certifications are comparable only when
their digests are equal. ``--prompt FILE`` replaces the template (its name is the file's stem).

:func:`read_request` is the inverse, for a server (``codemode serve``, the fake): the instruction and
catalog of a chat request, from the kit's prompt or from a last user message that is itself a plan
request as JSON (``{"instruction": ..., "tools": [...]}``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from reference import jsonio

__all__ = ["DEFAULT_PROMPT", "Prompt", "RequestError", "read_request"]

DEFAULT_PROMPT = "codemode-plan-v1"
MODES = ("strict", "json_only", "none")

ANSWER_FORMAT = """
# Answer format

Answer with one JSON document alone, with no other text, that matches this JSON Schema:

```json
{schema}
```
"""


class RequestError(ValueError):
    """A chat request that holds no plan request the server can read."""


@dataclass(frozen=True, slots=True)
class Prompt:
    name: str
    template: str

    @classmethod
    def shipped(cls, name: str = DEFAULT_PROMPT) -> Prompt:
        text = resources.files("conformance.openai").joinpath("prompts", f"{name}.md").read_text("utf-8")
        return cls(name=name, template=text)

    @classmethod
    def from_file(cls, path: Path) -> Prompt:
        """A user's template; it must have both slots (a prompt without the catalog cannot be answered)."""
        text = path.read_text("utf-8")
        missing = [slot for slot in ("{{catalog}}", "{{answer_format}}") if slot not in text]
        if missing:
            raise ValueError(f"prompt {path} has no {' and no '.join(missing)} slot")
        return cls(name=path.stem, template=text)

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.template.encode("utf-8")).hexdigest()

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "digest": self.digest}

    def messages(self, instruction: str, tools: Any, *, mode: str, schema: dict[str, Any]) -> list[dict[str, str]]:
        """The chat messages of one plan request (the catalog as the kit received it, valid or not)."""
        answer_format = "" if mode == "strict" else ANSWER_FORMAT.format(schema=json.dumps(schema, sort_keys=True))
        system = self.template.replace("{{answer_format}}", answer_format).replace("{{catalog}}", jsonio.dumps(tools))
        return [{"role": "system", "content": system}, {"role": "user", "content": instruction}]


def read_request(messages: Any) -> tuple[str, Any, bool]:
    """``(instruction, tools, from_prompt)`` of a chat request's ``messages``: the kit's prompt (a system
    message with the catalog's fenced line under ``# Catalog``; the instruction is the first user message,
    later ones being repair turns), else a last user message that is a JSON plan request.
    ``from_prompt`` says which."""
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty array")
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise RequestError("no user message")
    for message in messages:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            tools = _catalog(_text(message.get("content")) or "")
            if tools is not _NONE:
                # the kit's prompt: the instruction is the first user message (later ones are repair turns)
                instruction = _text(users[0].get("content"))
                if instruction is None:
                    raise RequestError("the first user message has no text")
                return instruction, tools, True
    last = _text(users[-1].get("content"))
    try:
        value = jsonio.loads(last) if last is not None else None
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict) and set(value) == {"instruction", "tools"} and isinstance(value["instruction"], str):
        return value["instruction"], value["tools"], False
    raise RequestError("found no catalog: neither a system message with a ```json line under '# Catalog' nor a"
                       ' last user message that is a plan request ({"instruction": ..., "tools": [...]})')


_NONE = object()


def _catalog(text: str) -> Any:
    lines = text.split("\n")
    for k, line in enumerate(lines):
        if line.strip() == "# Catalog":
            for j in range(k + 1, len(lines) - 1):
                if lines[j].strip() == "```json":
                    try:
                        return jsonio.loads(lines[j + 1])
                    except (ValueError, RecursionError):
                        return _NONE
            return _NONE
    return _NONE


def _text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a content array."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if parts and all(isinstance(p, str) for p in parts):
            return "".join(parts)
    return None
