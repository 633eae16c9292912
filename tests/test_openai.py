"""The OpenAI-compatible driver, its fake and ``codemode serve``, end to end over real sockets."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conformance.adapters import Errored
from conformance.openai import schema as answers
from conformance.openai.driver import DriverOptions, OpenAIAdapter, body_digest
from conformance.openai.fake import Fake, ScriptError, parse_script
from conformance.openai.prompt import Prompt, RequestError, read_request
from conformance.openai.server import Background
from conformance.process import CannotStart

TOOLS = [
    {"name": "get_weather", "arguments": {"city": "string", "units": "string"}, "required": ["city"],
     "returns": {"kind": "object"}},
    {"name": "list_users", "arguments": {"team": "string", "active": "boolean"}, "required": ["team"],
     "returns": {"kind": "array", "properties": ["id", "name", "email"]}},
]
PLAN = {"plan": {"mode": "single", "calls": [{"tool": "get_weather", "args": {"city": "Paris"}}], "output": {"kind": "last"}}}
REQUEST = {"instruction": 'call get_weather with city "Paris"', "tools": TOOLS}


def driven(script: list[dict[str, Any]], requests: list[dict[str, Any]], **options: Any) -> tuple[list[Any], Fake, OpenAIAdapter]:
    """The answers a driver gets from a fake playing ``script``."""
    fake = Fake(parse_script(script))
    with Background(fake.app) as server:
        adapter = OpenAIAdapter(DriverOptions(url=server.url, model="m", **options))
        try:
            got = adapter.exchange(requests)
        finally:
            adapter.close()
    return got, fake, adapter


def condition(answer: Any) -> str | None:
    assert isinstance(answer, Errored), answer
    return answer.condition


# --- the strict schema --------------------------------------------------------------------------


def _strict_rules(node: Any) -> None:
    """OpenAI's strict subset: every object lists all its properties as required and forbids others."""
    if isinstance(node, dict):
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node["properties"])
        for value in node.values():
            _strict_rules(value)
    elif isinstance(node, list):
        for value in node:
            _strict_rules(value)


def test_the_strict_schema_keeps_to_the_strict_subset_and_reads_back_answers() -> None:
    schema = answers.answer_schema(TOOLS)
    _strict_rules(schema)
    assert schema["properties"]["answer"]["anyOf"]  # the union, as the member of a root object
    shaped = {"plan": {"mode": "single", "calls": [{"tool": "list_users", "args": {"team": "a"}}],
                       "output": {"kind": "last", "fields": ["id"], "limit": 5}}}
    for answer in (PLAN, shaped, {"diagnostic": "no"}):
        document = answers.to_document(answer, TOOLS)
        jsonschema.validate(document, schema)  # what a strict server writes validates
        assert answers.problem(document, TOOLS) is None
        assert answers.from_document(document) == answer  # nulls read as absent
    # a tool outside the catalog, an argument of another tool, a wrong type: each is named by path and rule
    bad_tool = {"answer": {"plan": {**PLAN["plan"], "calls": [{"tool": "nope", "args": {}}]}}}
    assert answers.problem(bad_tool, TOOLS) == ("/answer/plan/calls/0/tool", "enum")
    other_args = {"answer": {"plan": {**PLAN["plan"], "calls": [{"tool": "get_weather", "args": {"team": "a"}}]}}}
    assert answers.problem(other_args, TOOLS) == ("/answer/plan/calls/0/args", "required")
    assert answers.problem({"answer": {"plan": PLAN["plan"], "diagnostic": "x"}}, TOOLS) == ("/answer", "maxProperties")
    wrong_type = {"answer": {"plan": {**PLAN["plan"], "calls": [{"tool": "get_weather", "args": {"city": 5}}]}}}
    assert answers.problem(wrong_type, TOOLS) == ("/answer/plan/calls/0/args/city", "type")
    assert answers.problem({"answer": {"diagnostic": 5}}, TOOLS) == ("/answer/diagnostic", "type")
    assert answers.problem({"answer": {"plan": {**PLAN["plan"], "mode": "twice"}}}, TOOLS) == ("/answer/plan/mode", "enum")


@pytest.mark.parametrize("tools", [[], None, "x", [{"name": 5}], [TOOLS[0], TOOLS[0]], [{"name": "f", "arguments": {"a": "object"}}]])
def test_any_catalog_gives_a_schema_that_admits_a_diagnostic(tools: Any) -> None:
    schema = answers.answer_schema(tools)
    _strict_rules(schema)
    jsonschema.validate({"answer": {"diagnostic": "the catalog is invalid"}}, schema)


def test_the_prompt_carries_the_catalog_and_a_server_reads_it_back() -> None:
    prompt = Prompt.shipped()
    tools = [*TOOLS, {"name": "odd\ud800```", "arguments": {}, "required": [], "returns": {"kind": "text"}}]
    messages = prompt.messages("do it \ud800", tools, mode="none", schema=answers.answer_schema(tools))
    assert "# Answer format" in messages[0]["content"]  # the schema goes in the prompt outside strict mode
    assert read_request(messages) == ("do it \ud800", tools, True)
    assert "# Answer format" not in prompt.messages("x", TOOLS, mode="strict", schema={})[0]["content"]
    # repair turns do not change the instruction; a JSON plan request as the last user message is read too
    repair = [*messages, {"role": "assistant", "content": "x"}, {"role": "user", "content": "Your answer wasn't one JSON document."}]
    assert read_request(repair)[0] == "do it \ud800"
    assert read_request([{"role": "user", "content": json.dumps(REQUEST)}]) == (REQUEST["instruction"], TOOLS, False)
    with pytest.raises(RequestError):
        read_request([{"role": "user", "content": "hello"}])
    assert prompt.digest.startswith("sha256:") and len(prompt.digest) == 71


# --- reading answers: each condition of the seed, against the fake ------------------------------------


@pytest.mark.parametrize(("script", "expected"), [
    ([{"condition": "refused"}], "refused"),
    ([{"condition": "over_budget"}], "over_budget"),
    ([{"condition": "too_long"}], "too_long"),
    ([{"condition": "misconfigured"}], "misconfigured"),
    ([{"condition": "unavailable", "times": 3}], "unavailable"),
    ([{"condition": "closed", "times": 3}], "unavailable"),
    ([{"condition": "malformed"}], "malformed"),
    ([{"condition": "not_completion"}], "malformed"),
    ([{"raw": "no JSON here"}], "malformed"),
    ([], "fake_exhausted"),
])
def test_each_condition_is_an_errored_answer_of_its_class(script: list[dict[str, Any]], expected: str) -> None:
    (answer,), fake, adapter = driven(script, [REQUEST])
    assert condition(answer) == expected
    assert adapter.summary()["conditions"] == {expected: 1}
    assert fake.state()["unused"] == []


def test_sends_again_after_5xx_a_closed_connection_and_429_honouring_retry_after() -> None:
    script = [{"condition": "unavailable"}, {"condition": "closed"}, {"answer": PLAN}]
    (answer,), fake, _ = driven(script, [REQUEST])
    assert answer == PLAN and fake.served == 3
    started = time.monotonic()
    (answer,), fake, _ = driven([{"condition": "rate_limited", "retry_after": 0.4}, {"answer": PLAN}], [REQUEST])
    assert answer == PLAN and time.monotonic() - started >= 0.4
    # a Retry-After past the attempt's timeout is not waited for
    (answer,), _, _ = driven([{"condition": "rate_limited", "retry_after": 20}, {"answer": PLAN}], [REQUEST], timeout=2)
    assert condition(answer) == "unavailable" and "20s" in answer.reason


def test_no_whole_answer_within_the_timeout_is_timed_out() -> None:
    (answer,), _, _ = driven([{"condition": "timed_out"}], [REQUEST], timeout=1)
    assert condition(answer) == "timed_out"
    (answer,), _, _ = driven([{"answer": PLAN, "latency": 3}], [REQUEST], timeout=1)
    assert condition(answer) == "timed_out"


def test_a_fault_names_the_connection_and_prompt_never_the_text() -> None:
    (answer,), _, _ = driven([{"condition": "not_completion"}], [REQUEST])
    assert "codemode-plan-v1" in answer.reason and "127.0.0.1" in answer.reason
    assert "this is not a chat completion" not in answer.reason
    (answer,), _, _ = driven([{"raw": "SECRET-MODEL-TEXT"}], [REQUEST])
    assert "SECRET-MODEL-TEXT" not in answer.reason


def test_a_fenced_json_answer_is_read_without_its_fence() -> None:
    text = "```json\n" + json.dumps(answers.to_document(PLAN, TOOLS)) + "\n```"
    (answer,), _, adapter = driven([{"raw": text}], [REQUEST])
    assert answer == PLAN and adapter.first_try == 1


def test_repair_sends_the_answer_back_with_the_fixed_correction() -> None:
    bad = json.dumps({"answer": {"plan": {**PLAN["plan"], "mode": "twice"}}})
    (answer,), fake, adapter = driven([{"raw": "not json"}, {"raw": bad}, {"answer": PLAN}], [REQUEST], attempts=3)
    assert answer == PLAN and adapter.repaired == 1 and adapter.first_try == 0
    second, third = fake.requests[1][0]["messages"], fake.requests[2][0]["messages"]
    assert second[-2:] == [{"role": "assistant", "content": "not json"},
                           {"role": "user", "content": "Your answer wasn't one JSON document."}]
    assert third[-1]["content"] == ("In your answer, /answer/plan/mode breaks the rule enum. Answer again with one JSON"
                                    " document alone that matches the schema.")
    # with one attempt, the same bad answer is malformed, and a repair that stays bad is malformed too
    (answer,), _, _ = driven([{"raw": "not json"}], [REQUEST], attempts=1)
    assert condition(answer) == "malformed"
    (answer,), _, _ = driven([{"raw": "x"}, {"raw": bad}], [REQUEST], attempts=2)
    assert condition(answer) == "malformed" and "/answer/plan/mode" in answer.reason


def test_fake_exhausted_and_fake_unused_are_reported_by_name() -> None:
    script = [{"answer": PLAN}, {"answer": PLAN, "match": "never asked"}]
    got, fake, adapter = driven(script, [REQUEST, REQUEST])
    # the two requests go out concurrently, so either may be the one the fake answers first
    assert sorted("plan" if g == PLAN else condition(g) for g in got) == ["fake_exhausted", "plan"]
    state = adapter.summary()["fake"]
    assert state["exhausted"] == 1 and state["unused"] == ["#2 (answer, match 'never asked')"]
    with pytest.raises(ScriptError):
        parse_script([{"answer": PLAN, "raw": "x"}])
    with pytest.raises(ScriptError):
        parse_script([{"condition": "on_fire"}])


def test_answers_come_back_in_request_order_with_requests_in_flight_at_once() -> None:
    requests = [{"instruction": f"request {k}", "tools": TOOLS} for k in range(24)]
    # every answer takes at least 0.3 s, so the first six requests are surely in flight together
    script = [{"answer": {"diagnostic": f"answer {k}"}, "match": f"request {k}", "latency": 0.3 + 0.05 * (k % 4)}
              for k in range(24)]
    got, fake, _ = driven(script, requests, concurrency=6)
    assert got == [{"diagnostic": f"answer {k}"} for k in range(24)]
    assert fake.peak == 6  # as many in flight as --concurrency allows, never more


def test_options_are_checked_and_the_key_goes_nowhere_but_the_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for url in ("http://example.com/v1", "ftp://127.0.0.1/v1", "http://user:pw@127.0.0.1/v1"):
        with pytest.raises(CannotStart):
            OpenAIAdapter(DriverOptions(url=url, model="m"))
    with pytest.raises(CannotStart):
        OpenAIAdapter(DriverOptions(url="http://127.0.0.1:1/v1", model="m", attempts=4))
    with pytest.raises(CannotStart):
        OpenAIAdapter(DriverOptions(url="http://127.0.0.1:1/v1", model="m", api_key_env="CODEMODE_TEST_UNSET_KEY"))
    monkeypatch.setenv("CODEMODE_TEST_KEY", "sk-test-very-secret")
    record = tmp_path / "rec.jsonl"
    (answer,), fake, adapter = driven([{"answer": PLAN}], [REQUEST], api_key_env="CODEMODE_TEST_KEY", record=record)
    assert answer == PLAN and fake.requests[0][1] == "Bearer sk-test-very-secret"
    assert "sk-test-very-secret" not in json.dumps(adapter.summary()) + record.read_text()
    assert adapter.summary()["api_key_env"] == "CODEMODE_TEST_KEY"


def test_an_unreachable_server_is_unavailable_after_three_sends() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    adapter = OpenAIAdapter(DriverOptions(url=f"http://127.0.0.1:{port}/v1", model="m", timeout=5))
    try:
        (answer,) = adapter.exchange([REQUEST])
    finally:
        adapter.close()
    assert condition(answer) == "unavailable" and "3 sends" in answer.reason


def test_an_answer_over_the_body_limit_is_malformed_not_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.openai import driver

    monkeypatch.setattr(driver, "MAX_BODY_BYTES", 64 << 10)
    (answer,), _, _ = driven([{"raw": "x" * (200 << 10)}], [REQUEST])
    assert condition(answer) == "malformed" and "MiB" in answer.reason or "over" in answer.reason


def test_replay_answers_from_the_recording_alone_and_never_opens_a_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "rec.jsonl"
    other = {"instruction": "another", "tools": TOOLS}
    script = [{"condition": "unavailable", "match": "Paris"}, {"answer": PLAN, "match": "Paris"},
              {"condition": "refused", "match": "another"}]
    got, _, _ = driven(script, [REQUEST, other], record=record)
    assert got[0] == PLAN and condition(got[1]) == "refused"

    def no_socket(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("replay opened a socket")

    monkeypatch.setattr(socket.socket, "connect", no_socket)
    monkeypatch.setattr(socket, "create_connection", no_socket)
    adapter = OpenAIAdapter(DriverOptions(url="http://127.0.0.1:9/v1", model="m", replay=record))
    try:
        third = {"instruction": "never recorded", "tools": TOOLS}
        replayed = adapter.exchange([REQUEST, other, third])
    finally:
        adapter.close()
    assert replayed[:2] == got[:1] + [replayed[1]] and condition(replayed[1]) == "refused"
    assert condition(replayed[2]) == "not_recorded"
    assert adapter.summary()["replay"]["unused"] == 0
    # a recording is keyed by the request body's digest, sorted, so the same requests make the same file
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line["request"] for line in lines] == sorted(line["request"] for line in lines)
    assert [line.get("status") for line in lines if line["request"] == lines[0]["request"]] in ([503, 200], [200])


# --- codemode serve ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served() -> Any:
    from conformance.openai.serve import app

    with Background(app()) as server:
        yield server.url


def test_serve_answers_the_official_openai_client_with_a_valid_plan(served: str) -> None:
    openai = pytest.importorskip("openai")
    from reference.catalog import Catalog
    from reference.plan import validate_plan

    client = openai.OpenAI(base_url=served, api_key="unused", max_retries=0)
    assert [m.id for m in client.models.list()] == ["reference"]
    messages = Prompt.shipped().messages(REQUEST["instruction"], TOOLS, mode="strict", schema={})
    reply = client.chat.completions.create(
        model="reference", messages=messages, max_tokens=512,
        response_format={"type": "json_schema", "json_schema": {"name": "codemode_plan", "strict": True,
                                                                 "schema": answers.answer_schema(TOOLS)}})
    document = json.loads(reply.choices[0].message.content)
    jsonschema.validate(document, answers.answer_schema(TOOLS))
    plan = answers.from_document(document)["plan"]
    assert plan == PLAN["plan"] and not validate_plan(plan, Catalog.from_json(TOOLS))
    # a plan request as JSON in the last user message, with no response_format: the bare answer
    reply = client.chat.completions.create(model="reference", messages=[{"role": "user", "content": json.dumps(REQUEST)}])
    assert json.loads(reply.choices[0].message.content) == PLAN


def test_serve_says_what_is_wrong_with_a_bad_request(served: str) -> None:
    import httpx

    url = served + "/chat/completions"
    assert httpx.post(url, content=b"{not json").status_code == 400
    reply = httpx.post(url, json={"model": "gpt-9", "messages": [{"role": "user", "content": json.dumps(REQUEST)}]})
    assert reply.status_code == 404 and reply.json()["error"]["code"] == "model_not_found"
    reply = httpx.post(url, json={"model": "reference", "messages": [{"role": "user", "content": "hello"}]})
    assert reply.status_code == 400 and "no plan request" in reply.json()["error"]["message"]
    reply = httpx.post(url, content=b'{"model": "' + b"x" * (9 << 20) + b'"}')
    assert reply.status_code == 413
    reply = httpx.post(url, json={"model": "reference", "max_tokens": 3,
                                  "messages": [{"role": "user", "content": json.dumps(REQUEST)}]})
    assert reply.json()["choices"][0]["finish_reason"] == "length"


def test_the_driver_reads_serve_in_every_mode(served: str) -> None:
    for mode in ("strict", "json_only", "none"):
        adapter = OpenAIAdapter(DriverOptions(url=served, model="reference", mode=mode))
        try:
            assert adapter.exchange([REQUEST]) == [PLAN]
        finally:
            adapter.close()


def test_equal_requests_have_equal_bodies() -> None:
    from conformance.openai.driver import Driver

    options = DriverOptions(url="http://127.0.0.1:9/v1", model="m")
    one = Driver(options, None).body([{"role": "user", "content": "x\ud800"}], TOOLS)  # type: ignore[arg-type]
    two = Driver(options, None).body([{"role": "user", "content": "x\ud800"}], json.loads(json.dumps(TOOLS)))  # type: ignore[arg-type]
    assert one == two and body_digest(one) == body_digest(two) and b"\\ud800" in one


@pytest.mark.parametrize(("status", "body", "expected"), [
    (400, {"error": {"message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error",
                     "code": "context_length_exceeded"}}, "too_long"),  # OpenAI
    (400, {"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested"
           " 5000 tokens in the messages.", "type": "BadRequestError", "param": None, "code": 400}, "too_long"),  # vLLM
    (400, {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                     "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}}, "too_long"),  # llama.cpp
    (400, {"error": {"message": "Unrecognized request argument supplied: response_format"}}, "misconfigured"),
    (401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}, "misconfigured"),
    (403, {"error": "forbidden"}, "misconfigured"),
    (302, {}, "misconfigured"),
    (200, {"choices": []}, "malformed"),
    (200, {"choices": [{"message": {"content": None, "refusal": None}, "finish_reason": "content_filter"}]}, "refused"),
    (200, {"choices": [{"message": {"content": "{", "refusal": None}, "finish_reason": "length"}]}, "over_budget"),
])
def test_server_answers_are_read_as_the_seed_says(status: int, body: Any, expected: str) -> None:
    from conformance.openai.driver import Condition, Driver, Reply

    driver = Driver(DriverOptions(url="http://127.0.0.1:9/v1", model="m"), None)  # type: ignore[arg-type]
    got = driver._read(Reply(status, {}, json.dumps(body).encode()))
    assert isinstance(got, Condition) and got.kind == expected, got


def test_content_parts_are_read_as_text() -> None:
    from conformance.openai.driver import Driver, Reply

    driver = Driver(DriverOptions(url="http://127.0.0.1:9/v1", model="m"), None)  # type: ignore[arg-type]
    parts = {"choices": [{"message": {"content": [{"type": "text", "text": "{\"answer\": "},
                                                  {"type": "text", "text": "{\"diagnostic\": \"no\"}}"}]},
                          "finish_reason": "stop"}]}
    assert driver._read(Reply(200, {}, json.dumps(parts).encode())) == '{"answer": {"diagnostic": "no"}}'


def test_serve_streams_the_plan_as_tool_call_deltas_to_the_official_client(served: str) -> None:
    openai = pytest.importorskip("openai")
    from conformance.openai.driver import PLAN_FUNCTION

    client = openai.OpenAI(base_url=served, api_key="unused", max_retries=0)
    messages = Prompt.shipped().messages(REQUEST["instruction"], TOOLS, mode="strict", schema={})
    function = {"name": PLAN_FUNCTION, "strict": True, "parameters": answers.answer_schema(TOOLS)}
    stream = client.chat.completions.create(
        model="reference", messages=messages, stream=True, tools=[{"type": "function", "function": function}],
        tool_choice={"type": "function", "function": {"name": PLAN_FUNCTION}})
    pieces, finish = [], None
    for chunk in stream:
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for call in choice.delta.tool_calls or ():
            pieces.append(call.function.arguments or "")
    assert finish == "tool_calls" and len(pieces) > 2  # the arguments came in several deltas
    document = json.loads("".join(pieces))
    assert answers.from_document(document) == PLAN


def _sse(*deltas: dict[str, Any], finish: str = "tool_calls") -> str:
    chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def test_a_streamed_call_is_assembled_by_the_reference_collector() -> None:
    from conformance.openai.driver import Condition, _assemble

    catalog = answers.for_catalog(answers.key(TOOLS))
    text = json.dumps(answers.to_document({"plan": {**PLAN["plan"], "calls": [
        {"tool": "get_weather", "args": {"city": "Paris \U0001F600"}}]}}, TOOLS))  # ASCII: the emoji as two escapes
    cut = text.index("\\ud83d") + 3  # inside the first \\u escape
    calls = [{"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "codemode_", "arguments": ""}}]},
             {"tool_calls": [{"index": 0, "function": {"name": "answer", "arguments": text[:cut]}}]},
             {"tool_calls": [{"index": 0, "function": {"arguments": text[cut:]}}]}]
    got = _assemble(_sse(*calls), catalog, "here")
    assert not isinstance(got, Condition)
    assert answers.from_document(got[1])["plan"]["calls"][0]["args"]["city"] == "Paris \U0001F600"
    # body text beside the call, a second call, a refusal, a length stop: conditions, nothing resolved
    mixed = _assemble(_sse({"content": "Sure!"}, *calls), catalog, "here")
    assert isinstance(mixed, Condition) and mixed.kind == "malformed" and "mixed_body" in mixed.detail
    second = _assemble(_sse(*calls, {"tool_calls": [{"index": 1, "function": {"name": "x"}}]}), catalog, "here")
    assert isinstance(second, Condition) and "multiple_calls" in second.detail
    assert _assemble(_sse({"refusal": "no"}), catalog, "here").kind == "refused"
    assert _assemble(_sse(*calls, finish="length"), catalog, "here").kind == "over_budget"
    # arguments that break the schema get the fixed correction for a repair
    bad = json.dumps({"answer": {"plan": {**PLAN["plan"], "mode": "twice"}}})
    repair = _assemble(_sse({"tool_calls": [{"index": 0, "function": {"name": "codemode_answer", "arguments": bad}}]}),
                       catalog, "here")
    assert repair[1] is None and repair[2].startswith("In your answer, /answer/plan/mode breaks the rule enum.")


def test_a_compressed_body_that_inflates_past_the_cap_is_malformed_not_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    from conformance.openai import driver

    monkeypatch.setattr(driver, "MAX_BODY_BYTES", 1 << 20)
    bomb = gzip.compress(b" " * (64 << 20))  # 64 MiB of spaces in about 64 KiB

    async def chat(request: Any) -> Response:
        return Response(bomb, media_type="application/json", headers={"content-encoding": "gzip"})

    async def broken(request: Any) -> Response:
        return Response(b"not gzip at all", media_type="application/json", headers={"content-encoding": "gzip"})

    for handler, words in ((chat, "over"), (broken, "does not decode")):
        app = Starlette(routes=[Route("/v1/chat/completions", handler, methods=["POST"])])
        with Background(app) as server:
            adapter = OpenAIAdapter(DriverOptions(url=server.url, model="m"))
            try:
                (answer,) = adapter.exchange([REQUEST])
            finally:
                adapter.close()
        assert condition(answer) == "malformed" and words in answer.reason
