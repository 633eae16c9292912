"""The fake: a real HTTP server on loopback that answers chat completions from a script of attempts, in the
driver's own form, so the driver's whole reading, decoding and repair run in tests as against a model.

A script is a JSON array, or JSON Lines, of attempts; each HTTP request to ``/chat/completions`` takes
one. An attempt is an object with exactly one of:

* ``"answer"``: the planner's answer (``{"plan": ...}`` or ``{"diagnostic": "..."}``), written as a strict
  server writes it (wrapped in ``answer``, absent properties null) when the request asks for the
  kit's strict schema, else as ``{"answer": ...}``;
* ``"raw"``: the completion's text, as it is;
* ``"condition"``: ``refused`` (a refusal), ``over_budget`` (a ``length`` stop), ``too_long`` (400
  ``context_length_exceeded``), ``misconfigured`` (404 ``model_not_found``), ``unavailable`` (503),
  ``timed_out`` (never answers), ``malformed`` (a completion with no text), ``not_completion`` (a 200
  whose body is not a chat completion), ``rate_limited`` (429, with ``retry_after`` seconds) or
  ``closed`` (the connection closed halfway through the body);

and optionally ``"latency"`` (seconds before answering), ``"match"`` (the attempt is taken only by a
request whose instruction contains this text; attempts without ``match`` are taken in order by any
request) and ``"times"`` (how many requests it answers: a number, or ``"*"`` for all that come).

A request past the script's end gets 409 with code ``fake_exhausted`` (the driver's condition of that
name); attempts no request took are *unused*. Both are kept: ``GET /_fake/state`` tells, the driver asks
at its close (every answer carries the ``x-codemode-fake`` header), and ``codemode fake-openai`` prints
them at exit with status 1.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.openai import schema as answers
from conformance.openai import server
from conformance.openai.prompt import RequestError, read_request
from reference import jsonio

FAKE_CONDITIONS = ("refused", "over_budget", "too_long", "misconfigured", "unavailable", "timed_out", "malformed",
                   "not_completion", "rate_limited", "closed")
KEYS = {"answer", "raw", "condition", "latency", "match", "times", "retry_after"}


class ScriptError(ValueError):
    pass


@dataclass(slots=True)
class Attempt:
    index: int
    kind: str  # answer, raw, condition
    value: Any
    latency: float = 0.0
    match: str | None = None
    times: int | None = 1  # None: every request that comes
    retry_after: float = 1.0
    taken: int = 0

    def describe(self) -> str:
        what = self.value if self.kind == "condition" else self.kind
        return f"#{self.index + 1} ({what}{', match ' + repr(self.match) if self.match else ''})"


def read_script(path: Path) -> list[Attempt]:
    text = path.read_text("utf-8")
    try:
        items = json.loads(text)
        if not isinstance(items, list):
            items = [items]
    except ValueError:
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except ValueError as err:
                    raise ScriptError(f"{path}:{n}: not JSON: {err}") from err
    return parse_script(items)


def parse_script(items: list[Any]) -> list[Attempt]:
    out = []
    for k, item in enumerate(items):
        where = f"attempt {k + 1}"
        if not isinstance(item, dict):
            raise ScriptError(f"{where} is not an object")
        unknown = set(item) - KEYS
        if unknown:
            raise ScriptError(f"{where} has unknown keys {sorted(unknown)}")
        kinds = [key for key in ("answer", "raw", "condition") if key in item]
        if len(kinds) != 1:
            raise ScriptError(f"{where} must have exactly one of answer, raw, condition")
        kind = kinds[0]
        value = item[kind]
        if kind == "condition" and value not in FAKE_CONDITIONS:
            raise ScriptError(f"{where}: condition {value!r} is not one of {', '.join(FAKE_CONDITIONS)}")
        if kind == "raw" and not isinstance(value, str):
            raise ScriptError(f"{where}: raw must be a string")
        if kind == "answer" and not (isinstance(value, dict) and len(value) == 1 and set(value) <= {"plan", "diagnostic"}):
            raise ScriptError(f"{where}: answer must be {{\"plan\": ...}} or {{\"diagnostic\": ...}}")
        times = item.get("times", 1)
        if not (times == "*" or (isinstance(times, int) and not isinstance(times, bool) and times >= 1)):
            raise ScriptError(f"{where}: times must be a positive integer or \"*\"")
        latency = item.get("latency", 0)
        if not isinstance(latency, (int, float)) or isinstance(latency, bool) or latency < 0:
            raise ScriptError(f"{where}: latency must be a non-negative number of seconds")
        match = item.get("match")
        if match is not None and not isinstance(match, str):
            raise ScriptError(f"{where}: match must be a string")
        out.append(Attempt(index=k, kind=kind, value=value, latency=float(latency), match=match,
                           times=None if times == "*" else times, retry_after=float(item.get("retry_after", 1))))
    return out


class Fake:
    """The fake's state and its Starlette app (``app``)."""

    def __init__(self, script: list[Attempt], *, model: str | None = None) -> None:
        self.script = script
        self.model = model
        self.exhausted = 0
        self.served = 0
        #: every request's body and authorization header, in arrival order (for tests)
        self.requests: list[tuple[Any, str | None]] = []
        self.in_flight = 0
        self.peak = 0  # the most requests in flight at once
        self._lock = asyncio.Lock()
        from starlette.applications import Starlette
        from starlette.routing import Route

        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
            Route("/chat/completions", self.chat, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/_fake/state", self.state_route, methods=["GET"]),
            Route("/_fake/state", self.state_route, methods=["GET"]),
        ])

    def state(self) -> dict[str, Any]:
        unused = [a.describe() for a in self.script if a.times is not None and a.taken < a.times]
        return {"served": self.served, "exhausted": self.exhausted, "unused": unused}

    async def state_route(self, request: Any) -> Any:
        return server.json_response(self.state())

    async def models(self, request: Any) -> Any:
        return server.json_response({"object": "list", "data": [
            {"id": self.model or "fake", "object": "model", "created": 0, "owned_by": "codemode-fake"}]})

    def _take(self, instruction: str) -> Attempt | None:
        for attempt in self.script:
            if attempt.times is not None and attempt.taken >= attempt.times:
                continue
            if attempt.match is not None and attempt.match not in instruction:
                continue
            attempt.taken += 1
            return attempt
        return None

    async def chat(self, request: Any) -> Any:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return await self._chat(request)
        finally:
            self.in_flight -= 1

    async def _chat(self, request: Any) -> Any:
        from starlette.responses import StreamingResponse

        headers = {"x-codemode-fake": "1"}
        try:
            body = await server.read_json(request)
        except server.TooLarge:
            return server.error(413, "the request body is too large", headers=headers)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return server.error(400, "the request body is not JSON", headers=headers)
        if not isinstance(body, dict):
            return server.error(400, "the request body is not an object", headers=headers)
        try:
            instruction, tools, _ = read_request(body.get("messages"))
        except RequestError:
            instruction, tools = "", None
        model = str(body.get("model", "fake"))
        self.requests.append((body, request.headers.get("authorization")))
        async with self._lock:
            self.served += 1
            attempt = self._take(instruction)
            if attempt is None:
                self.exhausted += 1
        if attempt is None:
            return server.error(409, f"the fake's script has no attempt left for request {self.served}",
                                code="fake_exhausted", headers=headers)
        if attempt.latency:
            await asyncio.sleep(attempt.latency)
        if attempt.kind == "raw":
            return server.json_response(server.completion(model, attempt.value), headers=headers)
        if attempt.kind == "answer":
            strict = _asks_strict(body)
            document = answers.to_document(attempt.value, tools) if strict else {"answer": attempt.value}
            return server.json_response(server.completion(model, jsonio.dumps(document)), headers=headers)
        condition = attempt.value
        if condition == "refused":
            return server.json_response(server.completion(model, None, refusal="I can't help with that."), headers=headers)
        if condition == "over_budget":
            return server.json_response(server.completion(model, '{"answer": {"plan": {"mo', finish_reason="length"),
                                        headers=headers)
        if condition == "too_long":
            return server.error(400, "This model's maximum context length is 8192 tokens.",
                                code="context_length_exceeded", headers=headers)
        if condition == "misconfigured":
            return server.error(404, f"The model `{model}` does not exist.", code="model_not_found", headers=headers)
        if condition == "unavailable":
            return server.error(503, "the server is overloaded", kind="server_error", headers=headers)
        if condition == "rate_limited":
            return server.error(429, "rate limit reached", code="rate_limit_exceeded",
                                headers={**headers, "retry-after": f"{attempt.retry_after:g}"})
        if condition == "timed_out":
            await asyncio.sleep(3600)
        if condition == "malformed":
            return server.json_response(server.completion(model, None), headers=headers)
        if condition == "not_completion":
            return server.json_response({"hello": "this is not a chat completion"}, headers=headers)

        async def halfway() -> Any:
            yield b'{"id": "chatcmpl-1", "choices": [{"mess'
            raise ConnectionResetError("the fake closes the connection halfway through the answer")

        return StreamingResponse(halfway(), media_type="application/json", headers={**headers, "content-length": "400"})


def _asks_strict(body: dict[str, Any]) -> bool:
    form = body.get("response_format")
    return isinstance(form, dict) and form.get("type") == "json_schema"


def main(script: Path, host: str, port: int, model: str | None) -> int:
    import sys

    if server.missing():
        print(f"codemode fake-openai: {server.missing()}", file=sys.stderr)
        return 2
    try:
        attempts = read_script(script)
    except (OSError, ScriptError) as err:
        print(f"codemode fake-openai: {err}", file=sys.stderr)
        return 2
    fake = Fake(attempts, model=model)
    try:
        server.serve_forever(fake.app, host, port, what=f"the fake ({len(attempts)} attempts)")
    except OSError as err:
        print(f"codemode fake-openai: cannot listen on {host}:{port}: {err.strerror}", file=sys.stderr)
        return 2
    state = fake.state()
    problems = []
    if state["exhausted"]:
        problems.append(f"fake_exhausted: {state['exhausted']} requests came past the script's end")
    if state["unused"]:
        problems.append(f"fake_unused: {len(state['unused'])} attempts were never taken: {', '.join(state['unused'])}")
    for line in problems:
        print(f"codemode fake-openai: {line}", file=sys.stderr)
    return 1 if problems else 0
