"""``codemode serve``: the reference planner behind an OpenAI-compatible ``/v1/chat/completions`` and
``/v1/models``, so any OpenAI client (the official ``openai`` package, the kit's own driver) can use it.

A chat request holds its plan request either in the kit's prompt (the catalog in the system message,
the instruction in the first user message: what the driver sends) or as a last user message that is
itself a plan request as JSON (``{"instruction": ..., "tools": [...]}``). The answer's text honours
``response_format``: with a JSON schema whose root has an ``answer`` property (the kit's strict
schema), or when the request came in the kit's prompt, it is the document ``{"answer": ...}`` with every
declared property present (null where absent); otherwise it is the planner's answer itself,
``{"plan": ...}`` or ``{"diagnostic": "..."}``. Requests waiting at the same moment are planned as one
batch on a worker thread, so concurrent clients share the network's work.

The model is named ``reference``; another name is 404 ``model_not_found``. ``max_tokens`` is honoured with
tokens counted as characters / 4: a longer answer is cut and stopped with ``length``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from conformance.openai import schema as answers
from conformance.openai import server
from conformance.openai.prompt import RequestError, read_request
from reference import jsonio

MODEL = "reference"


class Batcher:
    """Plans waiting requests together, one batch at a time, off the event loop."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[str, Any, asyncio.Future[dict[str, Any]]]] | None = None
        self.worker: asyncio.Task[None] | None = None

    async def plan(self, instruction: str, tools: Any) -> dict[str, Any]:
        if self.queue is None:
            self.queue = asyncio.Queue()
            self.worker = asyncio.get_running_loop().create_task(self._work())
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        await self.queue.put((instruction, tools, future))
        return await future

    async def _work(self) -> None:
        from reference.cli import plan_many

        assert self.queue is not None
        while True:
            batch = [await self.queue.get()]
            while not self.queue.empty() and len(batch) < 256:
                batch.append(self.queue.get_nowait())
            requests = [{"instruction": i, "tools": t} for i, t, _ in batch]
            try:
                results = await asyncio.to_thread(plan_many, requests)
            except Exception as err:  # the planner must not take the server down
                results = [{"diagnostic": f"internal: the planner failed: {type(err).__name__}"}] * len(batch)
            for (_, _, future), result in zip(batch, results):
                if not future.done():
                    future.set_result(result)


def app() -> Any:
    from starlette.applications import Starlette
    from starlette.routing import Route

    batcher = Batcher()

    async def models(request: Any) -> Any:
        return server.json_response({"object": "list", "data": [
            {"id": MODEL, "object": "model", "created": 0, "owned_by": "codemode-conformance-kit"}]})

    async def chat(request: Any) -> Any:
        try:
            body = await server.read_json(request)
        except server.TooLarge:
            return server.error(413, f"the request body is over {server.MAX_REQUEST_BYTES >> 20} MiB")
        except (ValueError, UnicodeDecodeError, RecursionError) as err:
            return server.error(400, f"the request body is not JSON: {err}")
        if not isinstance(body, dict):
            return server.error(400, "the request body must be a JSON object")
        model = body.get("model")
        if model != MODEL:
            return server.error(404, f"The model {jsonio.dumps(model)} does not exist; this server has {MODEL!r}",
                                code="model_not_found")
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1):
            return server.error(400, "max_tokens must be a positive integer", code="invalid_value")
        try:
            instruction, tools, from_prompt = read_request(body.get("messages"))
        except RequestError as err:
            return server.error(400, f"no plan request in the messages: {err}")
        answer = await batcher.plan(instruction, tools)
        function, parameters = _function(body)
        form = body.get("response_format")
        wrapped = from_prompt
        schema = parameters if function is not None else None
        if function is None and isinstance(form, dict) and form.get("type") == "json_schema":
            schema = (form.get("json_schema") or {}).get("schema") if isinstance(form.get("json_schema"), dict) else None
        if schema is not None:
            wrapped = isinstance(schema, dict) and "answer" in (schema.get("properties") or {})
        content = jsonio.dumps(answers.to_document(answer, tools) if wrapped else answer)
        finish = "tool_calls" if function is not None else "stop"
        if max_tokens is not None and len(content) > 4 * max_tokens:
            content, finish = content[: 4 * max_tokens], "length"
        digest = request.state.digest
        if body.get("stream"):
            return _streamed(content, function, finish, digest)
        chars = sum(len(m.get("content") or "") for m in body["messages"] if isinstance(m, dict)
                    and isinstance(m.get("content"), str))
        reply = server.completion(MODEL, None if function else content, finish_reason=finish, prompt_chars=chars,
                                  request_id=digest)
        if function is not None:
            reply["choices"][0]["message"]["tool_calls"] = [{"id": "call_" + digest[:24], "type": "function",
                                                             "function": {"name": function, "arguments": content}}]
        return server.json_response(reply)

    return Starlette(routes=[
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
    ])


def _function(body: dict[str, Any]) -> tuple[str | None, Any]:
    """The function the request asks the answer to come as (its ``tool_choice``, or its one tool), with
    its parameters' schema; ``(None, None)`` for an answer as text."""
    offered = [t.get("function") for t in body.get("tools") or () if isinstance(t, dict) and isinstance(t.get("function"), dict)]
    choice = body.get("tool_choice")
    if not offered or choice == "none":
        return None, None
    name = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else offered[0].get("name")
    chosen = next((f for f in offered if f.get("name") == name), offered[0])
    return str(chosen.get("name")), chosen.get("parameters")


CHUNK_CHARS = 24  # characters of the answer per streamed chunk


def _streamed(content: str, function: str | None, finish: str, digest: str) -> Any:
    """The answer as server-sent chat completion chunks: text deltas, or tool-call deltas (the id, type
    and name first, then the arguments in pieces), then the finish reason and ``[DONE]``."""
    from starlette.responses import StreamingResponse

    base = {"id": "chatcmpl-" + digest[:24], "object": "chat.completion.chunk", "created": 0, "model": MODEL}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        value = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}
        return b"data: " + jsonio.dumps(value).encode("ascii") + b"\n\n"

    pieces = [content[k : k + CHUNK_CHARS] for k in range(0, len(content), CHUNK_CHARS)] or [""]

    async def events() -> Any:
        if function is None:
            yield chunk({"role": "assistant", "content": ""})
            for piece in pieces:
                yield chunk({"content": piece})
        else:
            yield chunk({"role": "assistant", "content": None, "tool_calls": [{
                "index": 0, "id": "call_" + digest[:24], "type": "function",
                "function": {"name": function, "arguments": ""}}]})
            for piece in pieces:
                yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        yield chunk({}, finish)
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


def main(host: str, port: int) -> int:
    import sys

    from reference.cli import torch_problem

    problem = server.missing() or torch_problem()
    if problem is not None:
        print(f"codemode serve: {problem}", file=sys.stderr)
        return 2
    from reference.cli import plan_many

    plan_many([{"instruction": "call ping", "tools": [{"name": "ping", "arguments": {}, "required": [],
                                                        "returns": {"kind": "text"}}]}])  # load the network first
    try:
        server.serve_forever(app(), host, port, what="the reference planner")
    except OSError as err:
        print(f"codemode serve: cannot listen on {host}:{port}: {err.strerror}", file=sys.stderr)
        return 2
    return 0
