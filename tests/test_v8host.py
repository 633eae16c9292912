"""The V8 host survives what compiled code can do to it, and measures what it must."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cases import CompileCase, expect
from conformance.v8host import Limits, V8Host
from strategies import Behaviour

TOOLS = [{"name": "t", "arguments": {"s": "string"}, "required": [], "returns": {"kind": "text"}}]
PLAN = {"mode": "single", "calls": [{"tool": "t", "args": {"s": "\ud800</script>"}}], "output": {"kind": "last"}}


def spec(js: str, behaviour: Behaviour | None = None) -> dict[str, Any]:
    case = CompileCase(tools=TOOLS, plan=PLAN, behaviours=(behaviour or Behaviour(kind="resolve", value="\udfff"),))
    return expect(case, js).spec


GOOD = "const v = await tools.t({ s: '\\ud800</script>' }); return { ok: true, value: v };"


@pytest.fixture()
def host() -> V8Host:
    with V8Host(Limits(batch_seconds=2, case_seconds=1, memory_bytes=64 << 20)) as h:
        yield h


def test_lone_surrogates_reach_the_tool_and_come_back(host: V8Host) -> None:
    (obs,) = host.run_batch([spec(GOOD)])
    assert obs["invocations"][0]["argsOk"] is True
    assert obs["done"] == "resolved"
    assert obs["result"]["record"]["why"] is None


def test_an_infinite_loop_is_isolated_and_the_host_recovers(host: V8Host) -> None:
    obs = host.run_batch([spec(GOOD), spec("while (true) {}"), spec(GOOD)])
    assert obs[1].get("limit", "").startswith("ran past")
    assert obs[0]["done"] == "resolved" and obs[2]["done"] == "resolved"
    (again,) = host.run_batch([spec(GOOD)])
    assert again["done"] == "resolved"


def test_an_infinite_loop_after_an_await_does_not_wedge_the_kit(host: V8Host) -> None:
    obs = host.run_batch([spec("await null; for (;;) {}"), spec(GOOD)])
    assert "limit" in obs[0] and obs[1]["done"] == "resolved"


def test_memory_exhaustion_is_a_verdict_not_a_crash(host: V8Host) -> None:
    obs = host.run_batch([spec("const a = []; for (;;) a.push(new Array(1e6).fill(1));")])
    assert "limit" in obs[0]


def test_a_global_write_is_seen_and_judged_alone(host: V8Host) -> None:
    obs = host.run_batch([spec(GOOD), spec("globalThis.leak = 1;" + GOOD)])
    assert all(o.get("alone") for o in obs)
    assert obs[0]["purity"] == []
    assert any("leak" in change for change in obs[1]["purity"])


def test_a_swallowed_prototype_write_is_seen(host: V8Host) -> None:
    (obs,) = host.run_batch([spec("try { Object.prototype.x = 1 } catch (e) {}" + GOOD)])
    assert any("Object.prototype" in c and '"x"' in c for c in obs["purity"])


def test_a_syntax_error_is_reported(host: V8Host) -> None:
    (obs,) = host.run_batch([spec("return (")])
    assert "SyntaxError" in obs["compile"]


def test_never_settling_tool_keeps_the_function_pending(host: V8Host) -> None:
    (obs,) = host.run_batch([spec(GOOD, Behaviour(kind="never"))])
    assert obs["done"] is None
    assert [e[0] for e in obs["events"]] == ["start"]
