"""The OpenAI-compatible driver: a planner behind a Chat Completions server, as an implementation under test.

One plan request becomes one chat request (``POST <url>/chat/completions``: the model id as written, the
prompt's messages, ``max_tokens``, and in ``strict`` mode ``response_format`` with the answer's strict
schema). Its answer is read as the contract of the kit says (SPEC.md, *Planners over HTTP*):

* the text is ``choices[0].message.content``; a refusal or a ``content_filter`` stop is ``refused``, a
  ``length`` stop ``over_budget``; an answer with no text ``malformed``;
* a 400 saying the context is too long (OpenAI's ``context_length_exceeded`` code, vLLM's and
  llama.cpp's messages and types) is ``too_long``; any other 4xx, a redirect, a 401 or a 403
  ``misconfigured``;
* a server that cannot be reached or closes mid-answer, a 429 (after its ``Retry-After``, capped) and a
  5xx are sent again, at most 3 sends in all within the attempt's timeout, then ``unavailable``;
* no whole answer within the timeout is ``timed_out``; a body that is not a chat completion is
  ``malformed``, and the report names the connection and the prompt, never the body's text;
* a JSON answer in a Markdown fence is read without it; one that is not JSON, or breaks the schema, is
  *repaired* (``attempts`` 2 or 3): the answer goes back as the assistant's turn with a fixed correction,
  and what still fails is ``malformed``.

Each condition is an :class:`~conformance.adapters.Errored` answer carrying its class, never a refusal
and never a pass. Up to ``concurrency`` requests are in flight at once; answers come back in request
order. Sends go through a :class:`Transport`: the network (``LiveTransport``), the network with every
answer kept (``Recorder``), or a recording alone (``Replayer``, which never opens a socket).
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import os
import re
import socket
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from conformance.openai import schema as answers
from conformance.openai.prompt import MODES, Prompt
from conformance.process import CannotStart
from reference import jsonio

__all__ = ["CONDITIONS", "Condition", "Driver", "DriverOptions", "LiveTransport", "OpenAIAdapter", "Outcome",
           "Recorder", "Replayer", "Reply", "body_digest"]

#: the errored classes an HTTP planner's answer can end in
CONDITIONS = ("refused", "over_budget", "too_long", "misconfigured", "unavailable", "timed_out", "malformed",
              "not_recorded", "fake_exhausted")
SENDS = 3  # sends of one request in all, the first included
RETRY_AFTER_CAP = 30.0  # the longest Retry-After honoured (seconds); past it, or past the timeout, unavailable
MAX_BODY_BYTES = 16 << 20  # the longest response body read
SCHEMA_NAME = "codemode_plan"
#: the function a ``--wire tools`` request offers, whose arguments are the answer document
PLAN_FUNCTION = "codemode_answer"
WIRES = ("json", "tools")
NO_DELAY = (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
TOO_LONG = re.compile(r"context[ _-]?(length|window|size)|maximum context|too many tokens|exceeds the available context",
                      re.IGNORECASE)
FENCED = re.compile(r"\A```[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)\r?\n?```\s*\Z", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Reply:
    """A whole HTTP answer: its status, the headers the driver reads, its body."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class Condition:
    """Why a request has no answer: one of :data:`CONDITIONS` (or, from a transport, ``unreachable``,
    which the driver sends again), and what happened, in words that never quote the model's text."""

    kind: str
    detail: str


class Transport(Protocol):
    async def post(self, body: bytes, seconds: float) -> Reply | Condition: ...

    async def aclose(self) -> None: ...


def body_digest(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def is_loopback(host: str) -> bool:
    import ipaddress

    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class LiveTransport:
    """Sends over HTTP with httpx (one pooled async client); never follows a redirect."""

    def __init__(self, url: str, *, api_key: str | None, concurrency: int) -> None:
        try:
            import httpx
        except ImportError as err:
            raise CannotStart("--openai needs httpx: pip install 'codemode-conformance-kit[openai]'") from err

        self._httpx = httpx
        self.endpoint = url.rstrip("/") + "/chat/completions"
        headers = {"content-type": "application/json", "accept": "application/json", "accept-encoding": "identity"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        host = urlsplit(url).hostname or ""
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        # no Nagle: a request's headers and body go out as two writes, and with Nagle the second waits for
        # the server's delayed ACK of the first (40 ms a request on Linux)
        transport = httpx.AsyncHTTPTransport(limits=limits, socket_options=[NO_DELAY])
        self.client = httpx.AsyncClient(headers=headers, timeout=None, follow_redirects=False,
                                        trust_env=not is_loopback(host), transport=transport)

    async def post(self, body: bytes, seconds: float) -> Reply | Condition:
        try:
            async with asyncio.timeout(seconds):
                async with self.client.stream("POST", self.endpoint, content=body) as response:
                    chunks, size = [], 0
                    # decoded as it comes (a server may compress though asked not to), and bounded decoded:
                    # a small compressed body that inflates to gigabytes stops at the cap
                    async for chunk in response.aiter_bytes():
                        size += len(chunk)
                        if size > MAX_BODY_BYTES:
                            return Condition("malformed", f"answered a body over {MAX_BODY_BYTES >> 20} MiB")
                        chunks.append(chunk)
                    data = b"".join(chunks)
                    keep = {k: response.headers[k] for k in ("retry-after", "x-codemode-fake") if k in response.headers}
                    return Reply(response.status_code, keep, data)
        except TimeoutError:
            return Condition("timed_out", f"no whole answer within {seconds:.3g}s")
        except self._httpx.DecodingError as err:
            return Condition("malformed", f"answered a body its content-encoding does not decode ({str(err)[:120]})")
        except self._httpx.TransportError as err:
            return Condition("unreachable", f"{type(err).__name__}: {str(err)[:160] or 'the connection failed'}")

    async def aclose(self) -> None:
        await self.client.aclose()


class Recorder:
    """A transport that keeps every answer (or condition) with its request body's digest, written at
    :meth:`aclose` as JSON Lines sorted by digest (and, for one digest, in send order), so the same run
    makes the same file on any machine."""

    def __init__(self, inner: Transport, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.kept: dict[str, list[dict[str, Any]]] = {}

    async def post(self, body: bytes, seconds: float) -> Reply | Condition:
        got = await self.inner.post(body, seconds)
        entry: dict[str, Any]
        if isinstance(got, Reply):
            entry = {"status": got.status, "headers": got.headers, "body": got.body.decode("utf-8", "surrogateescape")}
        else:
            entry = {"condition": got.kind, "detail": got.detail}
        self.kept.setdefault(body_digest(body), []).append(entry)
        return got

    async def aclose(self) -> None:
        await self.inner.aclose()
        lines = []
        for digest in sorted(self.kept):
            for k, entry in enumerate(self.kept[digest]):
                lines.append(json.dumps({"request": digest, "send": k, **entry}, ensure_ascii=True))
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.replace(tmp, self.path)


class Replayer:
    """A transport that answers from a recording alone and never opens a socket: each send of a body
    takes that body's next recorded answer; a body with none left is ``not_recorded``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.waiting: dict[str, list[dict[str, Any]]] = {}
        try:
            text = path.read_text("utf-8")
        except OSError as err:
            raise CannotStart(f"cannot read the recording {path}: {err.strerror}") from err
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                self.waiting.setdefault(entry.pop("request"), []).append(entry)
                entry.pop("send", None)
            except (ValueError, KeyError, AttributeError) as err:
                raise CannotStart(f"{path}:{n} is not a recording line: {err}") from err

    async def post(self, body: bytes, seconds: float) -> Reply | Condition:
        queue = self.waiting.get(body_digest(body))
        if not queue:
            return Condition("not_recorded", f"the recording {self.path.name} has no answer for this request"
                             f" ({body_digest(body)[:19]}…)")
        entry = queue.pop(0)
        if "condition" in entry:
            return Condition(entry["condition"], entry.get("detail", ""))
        return Reply(int(entry["status"]), dict(entry.get("headers", {})), entry["body"].encode("utf-8", "surrogateescape"))

    def unused(self) -> list[str]:
        return sorted(d for d, queue in self.waiting.items() for _ in queue)

    async def aclose(self) -> None:
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverOptions:
    url: str
    model: str
    mode: str = "strict"
    prompt: Prompt = field(default_factory=Prompt.shipped)
    max_tokens: int = 2048
    timeout: float = 60.0  # seconds per attempt, its sends and waits included
    attempts: int = 1  # 1 to 3: the first answer and up to two repairs
    concurrency: int = 8
    api_key_env: str | None = None
    record: Path | None = None
    replay: Path | None = None
    #: json: the answer as the message's text; tools: as a streamed call of the plan function
    wire: str = "json"

    def check(self) -> None:
        if self.mode not in MODES:
            raise CannotStart(f"--mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.wire not in WIRES:
            raise CannotStart(f"--wire must be one of {', '.join(WIRES)}, not {self.wire!r}")
        if not 1 <= self.attempts <= 3:
            raise CannotStart(f"--attempts must be 1 to 3, not {self.attempts}")
        if not 1 <= self.concurrency <= 256:
            raise CannotStart(f"--concurrency must be 1 to 256, not {self.concurrency}")
        if not 1 <= self.max_tokens <= 1_000_000:
            raise CannotStart(f"--max-tokens must be 1 to 1,000,000, not {self.max_tokens}")
        if not self.model:
            raise CannotStart("--model must name the model (as the server names it)")
        if self.record is not None and self.replay is not None:
            raise CannotStart("give --record or --replay, not both")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CannotStart(f"--openai {self.url!r} is not an http:// or https:// address")
        if parts.username or parts.password:
            raise CannotStart("--openai must not carry a credential; name its variable with --api-key-env")
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            raise CannotStart(f"plain HTTP only to this machine: {parts.hostname} is not a loopback address (use https)")

    def describe(self) -> str:
        wire = ", streamed tool calls" if self.wire == "tools" else ""
        return f"OpenAI-compatible {self.url} model {self.model} ({self.mode}{wire})"


@dataclass(slots=True)
class Outcome:
    """A request's end: an answer (``{"plan": ...}`` or ``{"diagnostic": ...}``) after ``attempts``
    answers, or a condition."""

    answer: dict[str, Any] | None = None
    condition: Condition | None = None
    attempts: int = 0


class Driver:
    """The driver proper (asynchronous). :meth:`answer` never raises for anything the server does."""

    def __init__(self, options: DriverOptions, transport: Transport) -> None:
        self.options = options
        self.transport = transport
        self.stats: Counter[str] = Counter()
        self.fake_seen = False

    def body(self, messages: list[dict[str, str]], tools: Any) -> bytes:
        """The canonical request body (sorted keys, ASCII): equal requests have equal bytes and digests."""
        return self._body(messages, answers.for_catalog(answers.key(tools)))

    def _body(self, messages: list[dict[str, str]], catalog: answers.ForCatalog) -> bytes:
        request: dict[str, Any] = {"model": self.options.model, "messages": messages, "max_tokens": self.options.max_tokens}
        if self.options.wire == "tools":
            request["stream"] = True
            request["tools"] = [{"type": "function", "function": {
                "name": PLAN_FUNCTION, "description": "Answer with the plan or the diagnostic.", "strict": True,
                "parameters": catalog.strict}}]
            request["tool_choice"] = {"type": "function", "function": {"name": PLAN_FUNCTION}}
            return json.dumps(request, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        if self.options.mode == "json_only":
            request["response_format"] = {"type": "json_object"}
        text = json.dumps(request, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
        if self.options.mode == "strict":
            # "response_format" sorts after every other key: the catalog's schema text, made once, goes last
            text = (text[:-1] + ',"response_format":{"json_schema":{"name":' + json.dumps(SCHEMA_NAME)
                    + ',"schema":' + catalog.strict_json + ',"strict":true},"type":"json_schema"}}')
        return text.encode("ascii")

    async def answer(self, request: dict[str, Any]) -> Outcome:
        instruction, tools = request.get("instruction"), request.get("tools")
        if not isinstance(instruction, str):
            return Outcome(condition=Condition("misconfigured", "the driver sends plan requests only"))
        catalog = answers.for_catalog(answers.key(tools))
        messages = self.options.prompt.messages(instruction, tools, mode=self.options.mode, schema=catalog.strict)
        broke = ""
        for attempt in range(1, self.options.attempts + 1):
            got = await self._send(self._body(messages, catalog))
            if isinstance(got, Condition):
                return Outcome(condition=got, attempts=attempt)
            if self.options.wire == "tools":
                assembled = _assemble(got, catalog, self._where())
                if isinstance(assembled, Condition):
                    return Outcome(condition=assembled, attempts=attempt)
                got, document, correction, broke = assembled
            else:
                document, correction, broke = _decode(got, catalog)
            if correction is None:
                return Outcome(answer=answers.from_document(document), attempts=attempt)
            messages = [*messages, {"role": "assistant", "content": got}, {"role": "user", "content": correction}]
        tries = "answer" if self.options.attempts == 1 else f"{self.options.attempts} answers"
        return Outcome(condition=Condition("malformed", f"after {tries}, {broke}"), attempts=self.options.attempts)

    async def _send(self, body: bytes) -> str | Condition:
        """The answer's text, after at most :data:`SENDS` sends within the timeout; or its condition."""
        deadline = time.monotonic() + self.options.timeout
        last = ""
        for send in range(SENDS):
            left = deadline - time.monotonic()
            if left <= 0:
                return Condition("timed_out", f"no whole answer within {self.options.timeout:g}s")
            got = await self.transport.post(body, left)
            wait = min(0.25 * 2**send, 2.0)
            if isinstance(got, Condition):
                if got.kind != "unreachable":
                    return got
                last = f"could not be reached ({got.detail})"
            else:
                if "x-codemode-fake" in got.headers:
                    self.fake_seen = True
                read = self._read(got)
                if not isinstance(read, tuple):
                    return read
                last, retry_after = read
                if retry_after is not None:
                    if retry_after > min(RETRY_AFTER_CAP, deadline - time.monotonic()):
                        return Condition("unavailable", f"{last}, asking to wait {retry_after:g}s, past the"
                                         f" {'timeout' if retry_after <= RETRY_AFTER_CAP else 'cap of the wait'}")
                    wait = retry_after
            if send + 1 < SENDS:
                await asyncio.sleep(max(0.0, min(wait, deadline - time.monotonic())))
        return Condition("unavailable", f"{last}, {SENDS} sends in all")

    def _where(self) -> str:
        return f"{self.options.url} (prompt {self.options.prompt.name} {self.options.prompt.digest[:19]}…)"

    def _read(self, reply: Reply) -> str | Condition | tuple[str, float | None]:
        """The text of a 200, a condition, or (what happened, the wait it asks) for one to send again."""
        status = reply.status
        where = self._where()
        if status == 429:
            return f"answered 429 {_error_text(reply.body)}".rstrip(), _retry_after(reply.headers.get("retry-after"))
        if status >= 500:
            return f"answered {status} {_error_text(reply.body)}".rstrip(), None
        if 300 <= status < 400:
            return Condition("misconfigured", f"answered a redirect ({status}); give the address it names")
        if status >= 400:
            error = _error(reply.body)
            code, kind, message = (str(error.get(k, "")) for k in ("code", "type", "message"))
            if code == "fake_exhausted":
                return Condition("fake_exhausted", f"the fake's script has no attempt left: {message[:200]}")
            if status in (400, 413) and (code in ("context_length_exceeded", "exceed_context_size_error")
                                         or kind == "exceed_context_size_error" or TOO_LONG.search(message)):
                return Condition("too_long", f"the prompt is over the model's context ({status} {code or kind})")
            return Condition("misconfigured", f"answered {status} {_error_text(reply.body)}".rstrip())
        if status != 200:
            return Condition("malformed", f"{where} answered status {status}, not a chat completion")
        if self.options.wire == "tools":
            return reply.body.decode("utf-8", "replace")  # a stream of chunks: read by _assemble
        try:
            completion = jsonio.loads(reply.body.decode("utf-8"))
            choice = completion["choices"][0]
            message = choice["message"]
            if not isinstance(message, dict):
                raise TypeError
        except (ValueError, UnicodeDecodeError, RecursionError, KeyError, IndexError, TypeError):
            return Condition("malformed", f"{where} answered something that is not a chat completion")
        finish = choice.get("finish_reason")
        if message.get("refusal") or finish == "content_filter":
            return Condition("refused", "the model refused" + (" (content_filter)" if finish == "content_filter" else ""))
        if finish == "length":
            return Condition("over_budget", f"the answer ran past max_tokens ({self.options.max_tokens})")
        content = message.get("content")
        if isinstance(content, list):  # content parts
            parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") in ("text", "output_text")]
            content = "".join(p for p in parts if isinstance(p, str)) if parts else None
        if not isinstance(content, str) or not content.strip():
            return Condition("malformed", f"{where} answered a chat completion with no text")
        return content


def _decode(text: str, catalog: answers.ForCatalog) -> tuple[Any, str | None, str]:
    """``(document, None, "")`` for an answer that matches the schema, else ``(None, the correction, what
    broke)``."""
    stripped = text.strip()
    fenced = FENCED.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        document = jsonio.loads(stripped)
    except (ValueError, RecursionError):
        return None, "Your answer wasn't one JSON document.", "the answer was not one JSON document"
    broken = catalog.problem(document)
    if broken is None:
        return document, None, ""
    path, rule = broken
    return None, (f"In your answer, {path} breaks the rule {rule}. Answer again with one JSON document alone that"
                  " matches the schema."), f"{path} of the answer breaks the rule {rule}"


@dataclass(frozen=True, slots=True)
class _AnswerTool:
    """The plan function as a registry tool: its input is the answer document, parsed against the
    catalog's schema; it resolves to the planner's answer."""

    catalog: answers.ForCatalog
    id: str = PLAN_FUNCTION

    def parse(self, value: Any) -> Any:
        broken = self.catalog.problem(value)
        if broken is not None:
            raise _Broken(*broken)
        return value

    def resolve(self, value: Any) -> dict[str, Any]:
        return answers.from_document(value)


class _Broken(ValueError):
    def __init__(self, path: str, rule: str) -> None:
        super().__init__(f"{path} breaks the rule {rule}")
        self.path, self.rule = path, rule


def _assemble(stream: str, catalog: answers.ForCatalog, where: str) -> Condition | tuple[str, Any, str | None, str]:
    """A streamed answer (server-sent chat completion chunks) assembled by the reference collector, with
    the plan function as its one tool: ``(what the model wrote, the document, None, "")``, or with the
    correction and what broke for a repair; or a condition."""
    from reference.transports import ProtocolError, Selection, ToolRegistry, prepare

    collector = prepare(ToolRegistry([_AnswerTool(catalog)]).seal())
    written: list[str] = []
    finish = None
    try:
        for line in stream.splitlines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            try:
                chunk = jsonio.loads(data)
                choices = chunk.get("choices") or []
                choice = choices[0] if choices else {}
                delta = choice.get("delta") or {}
            except (ValueError, RecursionError, AttributeError, TypeError):
                return Condition("malformed", f"{where} answered a stream that is not chat completion chunks")
            if delta.get("refusal"):
                return Condition("refused", "the model refused")
            finish = choice.get("finish_reason") or finish
            if isinstance(delta.get("content"), str):
                collector.push(delta["content"])
                written.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                fragment = {"index": call.get("index")} if isinstance(call, dict) else call
                if isinstance(call, dict):
                    if call.get("id") is not None:
                        fragment["id"] = call["id"]
                    for key in ("name", "arguments"):
                        if isinstance(function, dict) and function.get(key) is not None:
                            fragment[key] = function[key]
                    if isinstance(fragment.get("arguments"), str):
                        written.append(fragment["arguments"])
                collector.push(fragment)
        if finish == "content_filter":
            return Condition("refused", "the model refused (content_filter)")
        if finish == "length":
            return Condition("over_budget", "the answer ran past max_tokens")
        result = collector.finish()
    except ProtocolError as err:
        text = "".join(written)
        if err.code == "arguments_invalid" and isinstance(err.cause, _Broken):
            return text, None, (f"In your answer, {err.cause.path} breaks the rule {err.cause.rule}. Answer again with"
                                " one JSON document alone that matches the schema."), str(err.cause)
        if err.code == "arguments_invalid":
            return text, None, "Your answer wasn't one JSON document.", "the call's arguments were not one JSON document"
        return Condition("malformed", f"the streamed call was rejected by the collector ({err.code}: {err})")
    if isinstance(result, Selection):
        return "".join(written), result.input, None, ""
    document, correction, broke = _decode(result.text, catalog)  # a text answer where a call was asked for
    return result.text, document, correction, broke


def _error(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    error = value.get("error")
    if isinstance(error, str):
        return {"message": error}
    if isinstance(error, dict):
        return error
    # vLLM writes its error at the top level: {"object": "error", "message": ..., "type": ..., "code": 400}
    return {k: value[k] for k in ("message", "type", "code") if k in value}


def _error_text(body: bytes) -> str:
    """A server's error, shortened (a server's own words, never a model's answer)."""
    error = _error(body)
    bits = [str(error.get(k)) for k in ("code", "type") if error.get(k)]
    message = str(error.get("message", ""))[:200]
    return (f"({', '.join(bits)}) " if bits else "") + message


def _retry_after(value: str | None) -> float:
    """Seconds to wait: Retry-After as seconds or an HTTP date; 1 second when absent or unreadable."""
    if value is None:
        return 1.0
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return 1.0


# --- the kit's adapter -----------------------------------------------------------------------------


class OpenAIAdapter:
    """The driver as an :class:`~conformance.adapters.Adapter`: ``exchange`` sends a batch with up to
    ``concurrency`` requests in flight (on the adapter's own event loop, run by the calling thread, which
    must not be running one itself) and returns one answer per request, in order; a condition is an
    ``Errored`` answer with its class."""

    def __init__(self, options: DriverOptions) -> None:
        options.check()
        self.options = options
        self.description = options.describe()
        api_key = None
        if options.api_key_env:
            api_key = os.environ.get(options.api_key_env)
            if not api_key:
                raise CannotStart(f"--api-key-env {options.api_key_env}: that variable is not set")
        self.transport: Transport
        if options.replay is not None:
            self.transport = Replayer(options.replay)
        else:
            self.transport = LiveTransport(options.url, api_key=api_key, concurrency=options.concurrency)
            if options.record is not None:
                self.transport = Recorder(self.transport, options.record)
        self.driver = Driver(options, self.transport)
        self.first_try = 0
        self.repaired = 0
        self.conditions: Counter[str] = Counter()
        self.fake_state: dict[str, Any] | None = None
        # the adapter's own event loop, run by the calling thread for each exchange (no thread to hop to);
        # the HTTP client's connections belong to it and are kept between exchanges
        self._loop = asyncio.new_event_loop()
        self._closed = False

    def exchange(self, requests: Sequence[dict[str, Any]]) -> list[Any]:
        from conformance.adapters import Errored

        outcomes: list[Outcome] = self._loop.run_until_complete(self._batch(list(requests)))
        out: list[Any] = []
        for outcome in outcomes:
            if outcome.condition is not None:
                self.conditions[outcome.condition.kind] += 1
                out.append(Errored(reason=f"{outcome.condition.kind}: {outcome.condition.detail}",
                                   condition=outcome.condition.kind))
                continue
            if outcome.attempts == 1:
                self.first_try += 1
            else:
                self.repaired += 1
            out.append(outcome.answer)
        return out

    async def _batch(self, requests: list[dict[str, Any]]) -> list[Outcome]:
        gate = asyncio.Semaphore(self.options.concurrency)

        async def one(request: dict[str, Any]) -> Outcome:
            async with gate:
                try:
                    return await self.driver.answer(request)
                except Exception as err:  # a driver bug must not lose the other answers
                    return Outcome(condition=Condition("malformed", f"the driver failed: {type(err).__name__}: {err}"))

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def summary(self) -> dict[str, Any]:
        """What the report says of the driver (never the credential, only its variable's name)."""
        out: dict[str, Any] = {
            "url": self.options.url, "model": self.options.model, "mode": self.options.mode,
            "prompt": self.options.prompt.describe(), "wire": self.options.wire, "max_tokens": self.options.max_tokens,
            "timeout": self.options.timeout, "attempts": self.options.attempts,
            "concurrency": self.options.concurrency,
            "answers": {"first_try": self.first_try, "repaired": self.repaired},
            "conditions": dict(sorted(self.conditions.items())),
        }
        if self.options.api_key_env:
            out["api_key_env"] = self.options.api_key_env
        if isinstance(self.transport, Replayer):
            unused = self.transport.unused()
            out["replay"] = {"file": str(self.options.replay), "unused": len(unused), "unused_requests": unused[:20]}
        if isinstance(self.transport, Recorder):
            out["record"] = {"file": str(self.options.record)}
        if self.fake_state is not None:
            out["fake"] = self.fake_state
        return out

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.driver.fake_seen and not isinstance(self.transport, Replayer):
            self.fake_state = _fake_state(self.options.url)
        try:
            self._loop.run_until_complete(self.transport.aclose())
        finally:
            self._loop.close()


def _fake_state(url: str) -> dict[str, Any] | None:
    """What the kit's fake server says of its script (exhausted and unused attempts), when it is one."""
    import httpx

    try:
        reply = httpx.get(url.rstrip("/") + "/_fake/state", timeout=5, trust_env=False)
        state = reply.json()
        return state if isinstance(state, dict) else None
    except (httpx.HTTPError, ValueError):
        return None
