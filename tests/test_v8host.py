"""The V8 host survives what compiled code can do to it, and measures what it must."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.cases import CompileCase, expect
from conformance.v8host import Limits, V8Host
from strategies import Behaviour

TOOLS = [{"name": "t", "arguments": {"s": "string"}, "required": [], "returns": {"kind": "text"}}]
PLAN = {"mode": "single", "calls": [{"tool": "t", "args": {"s": "\ud800</script>"}}], "output": {"kind": "last"}}
ROWS_TOOLS = [{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "array", "properties": ["id"]}}]
ROWS_PLAN = {"mode": "single", "calls": [{"tool": "t", "args": {}}], "output": {"kind": "last"}}


def spec(js: str, behaviour: Behaviour | None = None, *, output: str = "last") -> dict[str, Any]:
    plan = {**PLAN, "output": {"kind": output}}
    case = CompileCase(tools=TOOLS, plan=plan, behaviours=(behaviour or Behaviour(kind="resolve", value="\udfff"),))
    return expect(case, js).spec


def rows_spec(js: str, behaviour: Behaviour) -> dict[str, Any]:
    return expect(CompileCase(tools=ROWS_TOOLS, plan=ROWS_PLAN, behaviours=(behaviour,)), js).spec


CALL = "const v = await tools.t({ s: '\\ud800</script>' });"
GOOD = CALL + " return { ok: true, value: v };"
SECONDS = 15  # every call below returns well within this, whatever the body does


@pytest.fixture()
def host() -> Iterator[V8Host]:
    with V8Host(Limits(batch_seconds=2, case_seconds=1, memory_bytes=64 << 20)) as h:
        yield h


_BEFORE: set[int] = set()


@pytest.fixture(autouse=True)
def _workers_before() -> None:
    """Remember the V8 workers other tests of this process left running (hosts not yet collected)."""
    _BEFORE.clear()
    _BEFORE.update(_v8_children())


def _v8_children() -> set[int]:
    out = set()
    for pid in children(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"conformance.v8worker" in f.read():
                    out.add(pid)
        except OSError:
            continue
    return out


def workers() -> list[int]:
    """The pids of the V8 workers this test started (children of this process)."""
    return sorted(_v8_children() - _BEFORE)


def children(parent: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == parent and fields[0] != "Z":
            out.append(int(entry))
    return out


def status_kib(pid: int | str, field: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def timed(call: Any, *args: Any, **kwargs: Any) -> Any:
    start = time.monotonic()
    out = call(*args, **kwargs)
    assert time.monotonic() - start < SECONDS
    return out


def one(host: V8Host, js: str, behaviour: Behaviour | None = None, *, output: str = "last") -> dict[str, Any]:
    (obs,) = timed(host.run_batch, [spec(js, behaviour, output=output)])
    return obs


# --- what the kit has always measured ---------------------------------------------------------------


def test_lone_surrogates_reach_the_tool_and_come_back(host: V8Host) -> None:
    (obs,) = host.run_batch([spec(GOOD)])
    assert obs["invocations"][0]["argsOk"] is True
    assert obs["done"] == "resolved"
    assert obs["result"]["record"]["why"] is None


def test_an_infinite_loop_is_isolated_and_the_host_recovers(host: V8Host) -> None:
    obs = timed(host.run_batch, [spec(GOOD), spec("while (true) {}"), spec(GOOD)])
    assert obs[1].get("limit", "").startswith("ran past")
    assert obs[0]["done"] == "resolved" and obs[2]["done"] == "resolved"
    (again,) = host.run_batch([spec(GOOD)])
    assert again["done"] == "resolved"


def test_an_infinite_loop_after_an_await_does_not_wedge_the_kit(host: V8Host) -> None:
    obs = timed(host.run_batch, [spec("await null; for (;;) {}"), spec(GOOD)])
    assert obs[0]["limit"].startswith("ran past") and obs[1]["done"] == "resolved"


def test_memory_exhaustion_is_a_verdict_not_a_crash(host: V8Host) -> None:
    obs = one(host, "const a = []; for (;;) a.push(new Array(1e6).fill(1));")
    assert obs["limit"].startswith("exhausted the JS memory limit of 64 MiB")


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


def test_a_pure_batch_stays_in_the_shared_context(host: V8Host) -> None:
    for _ in range(3):
        obs = host.run_batch([spec(GOOD), spec(GOOD)])
        assert not any(o.get("alone") for o in obs)
    assert host.restarts == 0


# --- time: loops, waits and bodies that never settle --------------------------------------------------


@pytest.mark.parametrize("before", ["", "await null;"])
def test_atomics_wait_is_interrupted(host: V8Host, before: str) -> None:
    obs = one(host, before + "Atomics.wait(new Int32Array(new SharedArrayBuffer(16)), 0, 0);" + GOOD)
    assert obs["limit"] == "ran past the JS time limit of 1s"


def test_a_never_settling_body_stays_pending(host: V8Host) -> None:
    obs = one(host, CALL + "await new Promise(() => {}); return { ok: true, value: v };")
    assert obs["done"] is None and obs["result"] is None
    assert [e[0] for e in obs["events"]] == ["start", "settle"]


def test_deep_recursion_rejects_the_function(host: V8Host) -> None:
    obs = one(host, "function f(n) { return f(n + 1) + 1; } f(0);" + GOOD)
    assert obs["done"] == "rejected"
    assert obs["result"]["text"] == "[RangeError: Maximum call stack size exceeded]"


def test_a_worker_that_stops_answering_is_killed_at_the_deadline() -> None:
    # a wait nothing interrupts, as the host sees it: the worker is stopped mid-request
    with V8Host(Limits(case_seconds=0.5, grace_seconds=0.5)) as host:
        host.run_alone(spec(GOOD))
        (pid,) = workers()
        threading.Timer(0.2, os.kill, (pid, signal.SIGSTOP)).start()
        obs = timed(host.run_alone, spec("for (;;) {}"))
        assert obs == {"alone": True, "limit": "ran past the JS time limit of 0.5s"}
        assert not alive(pid) and workers() == []
        assert host.run_alone(spec(GOOD))["done"] == "resolved"


# --- memory -------------------------------------------------------------------------------------------


def test_memory_outside_the_heap_is_capped_in_the_worker_only() -> None:
    hog = "const keep = []; for (let i = 0; i < 40; i++) { const a = new Uint8Array(100e6); a.fill(1); keep.push(a); }"
    with V8Host(Limits(batch_seconds=5, case_seconds=5, memory_bytes=64 << 20)) as host:
        host.run_batch([spec(GOOD)])
        before = status_kib("self", "VmRSS")
        obs = one(host, hog + GOOD)
        caught = one(host, "try {" + hog + "} catch (e) {}" + GOOD)
        (pid,) = workers()
        peak = status_kib(pid, "VmHWM")
        grown = status_kib("self", "VmRSS") - before
    assert obs["done"] == "rejected" and obs["result"]["text"] == "[RangeError: Array buffer allocation failed]"
    assert caught["done"] == "resolved" and caught["result"]["record"]["why"] is None
    assert peak < 1200 << 10, f"the worker peaked at {peak >> 10} MiB"
    assert grown < 50 << 10, f"the kit grew by {grown >> 10} MiB"


def test_a_fatal_out_of_memory_kills_the_worker_not_the_kit() -> None:
    # a process cap below what the heap limit allows: V8 itself runs out and aborts its process
    with V8Host() as probe:
        probe.run_alone(spec(GOOD))
        (pid,) = workers()
        started = status_kib(pid, "VmData") << 10  # what V8 holds once started (varies with the cores)
    limits = Limits(case_seconds=5, memory_bytes=512 << 20, process_bytes=started + (200 << 20))
    with V8Host(limits) as host:
        before = status_kib("self", "VmRSS")
        obs = timed(host.run_alone, spec("const a = []; for (;;) a.push(new Array(1e6).fill(1));"))
        assert obs["limit"].startswith("exhausted the JS memory limit of 512 MiB")
        assert workers() == []
        assert host.run_alone(spec(GOOD))["done"] == "resolved"
        assert status_kib("self", "VmRSS") - before < 50 << 10


def test_a_crashed_worker_is_a_verdict_and_is_replaced(host: V8Host) -> None:
    host.run_alone(spec(GOOD))
    (pid,) = workers()
    threading.Timer(0.2, os.kill, (pid, signal.SIGSEGV)).start()
    obs = timed(host.run_alone, spec("for (;;) {}"))
    assert obs["limit"].startswith("crashed its V8 worker process (it ended by signal SIGSEGV")
    assert host.run_alone(spec(GOOD))["done"] == "resolved"


def test_a_killed_worker_in_a_batch_is_judged_alone(host: V8Host) -> None:
    host.run_batch([spec(GOOD)])
    (pid,) = workers()
    threading.Timer(0.2, os.kill, (pid, signal.SIGKILL)).start()
    obs = timed(host.run_batch, [spec("for (;;) {}"), spec(GOOD)])
    assert all(o["alone"] for o in obs)
    assert obs[0]["limit"].startswith("ran past") and obs[1]["done"] == "resolved"
    assert host.restarts >= 1


# --- no worker outlives its host -------------------------------------------------------------------------


def test_close_and_the_context_manager_leave_no_worker() -> None:
    host = V8Host()
    host.run_batch([spec(GOOD)])
    (pid,) = workers()
    host.close()
    assert not alive(pid) and workers() == []
    with V8Host() as host:
        host.run_alone(spec(GOOD))
        assert len(workers()) == 1
    assert workers() == []
    host.run_alone(spec(GOOD))  # a closed host starts a new worker on next use
    host.close()
    assert workers() == []


def test_a_dropped_host_leaves_no_worker() -> None:
    host = V8Host()
    host.run_alone(spec(GOOD))
    (pid,) = workers()
    del host
    assert not alive(pid)


KIT = textwrap.dedent(
    """
    import os, sys, time
    from conformance.cases import CompileCase, expect
    from conformance.v8host import Limits, V8Host
    from strategies import Behaviour
    tools = [{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}]
    plan = {"mode": "single", "calls": [{"tool": "t", "args": {}}], "output": {"kind": "last"}}
    case = CompileCase(tools=tools, plan=plan, behaviours=(Behaviour(kind="resolve", value=1),))
    host = V8Host(Limits(case_seconds=60, grace_seconds=60))
    host.run_alone(expect(case, "return 1;").spec)
    print("ready", flush=True)
    if sys.argv[1] == "busy":
        host.run_alone(expect(case, "for (;;) {}").spec)
    sys.stdin.readline()  # exit: when told; idle: never
    """
)


def _kit(mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", KIT, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _wait_gone(pids: list[int], seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def test_interpreter_exit_leaves_no_worker() -> None:
    kit = _kit("exit")
    assert kit.stdout is not None and kit.stdout.readline() == "ready\n"
    pids = children(kit.pid)
    assert len(pids) == 1
    kit.communicate("\n", timeout=SECONDS)
    assert kit.returncode == 0
    assert _wait_gone(pids)


@pytest.mark.parametrize("mode", ["idle", "busy"])
def test_a_killed_kit_leaves_no_worker(mode: str) -> None:
    kit = _kit(mode)
    assert kit.stdout is not None and kit.stdout.readline() == "ready\n"
    time.sleep(0.3)  # busy: a request is in flight, V8 runs a loop with a minute to go
    pids = children(kit.pid)
    assert len(pids) == 1
    kit.kill()
    kit.wait()
    assert _wait_gone(pids), "the worker outlived its kit"


# --- bodies that attack the harness's reading ---------------------------------------------------------


def test_an_inherited_to_json_does_not_crash_the_kit(host: V8Host) -> None:
    obs = one(host, "Object.prototype.toJSON = function () { return 1; };" + GOOD)
    assert obs["alone"] and obs["done"] == "resolved"
    assert obs["result"]["record"]["why"] is None
    assert obs["purity"] == ['Object.prototype: property "toJSON" added']


def test_a_self_removing_to_json_cannot_hide_changes(host: V8Host) -> None:
    obs = one(
        host,
        "Array.prototype.push = function () {}; globalThis.leak = 1;"
        "Object.defineProperty(Object.prototype, 'toJSON', { configurable: true, get() {"
        "  delete Object.prototype.toJSON; delete globalThis.leak; return undefined; } });" + GOOD,
    )
    assert obs["result"]["record"]["why"] is None
    assert set(obs["purity"]) == {
        'Object.prototype: property "toJSON" added',
        'globalThis: property "leak" added',
        'Array.prototype: property "push" changed',
    }


def test_a_getter_on_the_record_is_never_called(host: V8Host) -> None:
    obs = one(
        host, "globalThis.leak = 1;" + CALL + "return { ok: true, get value() { delete globalThis.leak; return v; } };"
    )
    record = obs["result"]["record"]
    assert record["why"] == "value" and record["text"] == '{"ok":true,"value":[getter]}'
    assert obs["purity"] == ['globalThis: property "leak" added']


def test_a_trap_run_while_the_record_is_read_cannot_hide_changes(host: V8Host) -> None:
    obs = one(
        host,
        "globalThis.leak = 1; Array.prototype.x = 1;" + CALL + "return new Proxy({ ok: true, value: v }, {"
        "  ownKeys(t) { delete globalThis.leak; delete Array.prototype.x; return Reflect.ownKeys(t); } });",
    )
    assert obs["result"]["record"]["why"] is None
    assert 'globalThis: property "leak" added' in obs["purity"]
    assert 'Array.prototype: property "x" added' in obs["purity"]


def test_a_change_made_by_a_trap_while_reading_is_seen(host: V8Host) -> None:
    obs = one(host, CALL + "return new Proxy({ ok: true, value: v }, {"
              "  ownKeys(t) { globalThis.late = 1; return Reflect.ownKeys(t); } });")
    assert obs["purity"] == ['globalThis: property "late" added']


def test_a_change_queued_by_a_trap_for_after_the_reading_is_seen(host: V8Host) -> None:
    obs = one(
        host,
        CALL + "return new Proxy({ ok: true, value: v }, {"
        "  ownKeys(t) { Promise.resolve().then(() => { globalThis.later = 1; }); return Reflect.ownKeys(t); } });",
    )
    assert obs["purity"] == ['globalThis: property "later" added']


def test_a_change_undone_while_the_function_settles_is_seen_while_a_tool_ran(host: V8Host) -> None:
    # the engine's own promise resolution reads `then` through the Proxy's get trap, which undoes the
    # change before the function settles; the change was alive while the tool ran
    obs = one(
        host,
        "Array.prototype.sneaky = 1; const hide = () => { delete Array.prototype.sneaky; };"
        + CALL + "return new Proxy({ ok: true, value: v }, { get(t, k, r) { hide(); return Reflect.get(t, k, r); } });",
    )
    assert obs["alone"] and obs["result"]["record"]["why"] is None
    assert obs["purity"] == ['Array.prototype: property "sneaky" added']


def test_a_self_removing_then_getter_cannot_hide_changes(host: V8Host) -> None:
    obs = one(
        host,
        "globalThis.leak = 1; Object.defineProperty(Object.prototype, 'then', { configurable: true, get() {"
        "  delete Object.prototype.then; delete globalThis.leak; return undefined; } });" + GOOD,
    )
    assert obs["alone"] and obs["result"]["record"]["why"] is None
    assert set(obs["purity"]) == {'globalThis: property "leak" added', 'Object.prototype: property "then" added'}


def test_a_proxy_installed_as_a_global_is_named_without_running_its_traps(host: V8Host) -> None:
    traps = "{ get() { throw 1; }, getOwnPropertyDescriptor() { throw 2; }, ownKeys() { throw 3; },"
    traps += " getPrototypeOf() { throw 4; } }"
    obs = one(host, f"globalThis.Trap = new Proxy(function () {{}}, {traps});"
              f"Object.prototype.p = new Proxy({{}}, {traps});" + GOOD)
    assert obs["result"]["record"]["why"] is None and "harness" not in obs
    assert set(obs["purity"]) == {'globalThis: property "Trap" added', 'Object.prototype: property "p" added'}


def test_garbage_from_the_worker_kills_it(host: V8Host, monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance import v8host

    host.run_alone(spec(GOOD))
    (pid,) = workers()
    real = v8host._Worker.exchange
    monkeypatch.setattr(v8host._Worker, "exchange", lambda self, *a: ({"status": "ok", "late": []}, "{not json"))
    obs = host.run_alone(spec(GOOD))
    assert obs["alone"] and obs["harness"].startswith("the V8 worker answered garbage")
    assert not alive(pid) and workers() == []
    monkeypatch.setattr(v8host._Worker, "exchange", real)
    assert host.run_alone(spec(GOOD))["done"] == "resolved"


def test_setters_on_the_prototypes_never_run(host: V8Host) -> None:
    obs = one(
        host,
        "for (const k of ['0', '1', '2', 'length']) try {"
        "  Object.defineProperty(Array.prototype, k, { set() { throw 1; }, configurable: true }); } catch (e) {}"
        "for (const k of ['text', 'why', 'matches', 'call', 'args', 'isArray', 'moreKeys'])"
        "  Object.defineProperty(Object.prototype, k, { set() { throw 2; }, get() { throw 3; }, configurable: true });"
        + CALL + "return { ok: true, value: 5 };",
    )
    record = obs["result"]["record"]
    assert record["why"] == "value" and record["matches"] == [] and record["text"] == '{"ok":true,"value":5}'
    assert obs["invocations"] == [{"call": 0, "tool": "t", "argc": 1, "argsOk": True, "args": None}]
    assert any("Object.prototype" in c and '"text"' in c for c in obs["purity"])
    assert any("Array.prototype" in c and '"0"' in c for c in obs["purity"])


def test_an_inherited_value_or_get_does_not_answer_for_descriptors(host: V8Host) -> None:
    obs = one(host, "Object.prototype.value = 1; Object.prototype.get = function () {};" + GOOD)
    assert obs["result"]["record"]["why"] is None
    assert obs["invocations"][0]["argsOk"] is True


def test_a_replaced_array_iterator_changes_nothing_but_purity(host: V8Host) -> None:
    obs = one(host, "Array.prototype[Symbol.iterator] = function* () {};" + GOOD)
    assert obs["result"]["record"]["why"] is None
    assert obs["purity"] == ['Array.prototype: property "Symbol(Symbol.iterator)" changed']


@pytest.mark.parametrize(
    ("behaviour", "ctor"),
    [(Behaviour(kind="resolve", value={"not": "rows"}), "Error"), (Behaviour(kind="absent"), "TypeError")],
)
def test_has_instance_cannot_pass_a_non_error(host: V8Host, behaviour: Behaviour, ctor: str) -> None:
    body = f"Object.defineProperty({ctor}, Symbol.hasInstance, {{ value: () => true }});"
    body += "try { await tools.t({}); } catch (e) {} return { ok: false, error: { message: 'not an Error' } };"
    (obs,) = timed(host.run_batch, [rows_spec(body, behaviour)])
    assert obs["result"]["record"]["why"] == "error"
    assert obs["purity"] == [f'{ctor}: property "Symbol(Symbol.hasInstance)" added']


def test_a_real_shape_error_passes(host: V8Host) -> None:
    body = "const v = await tools.t({});"
    body += "return Array.isArray(v) ? { ok: true, value: v } : { ok: false, error: new Error('bad') };"
    (obs,) = host.run_batch([rows_spec(body, Behaviour(kind="resolve", value={"not": "rows"}))])
    assert obs["result"]["record"]["why"] is None


@pytest.mark.parametrize(
    "change",
    [
        "Promise.prototype.constructor = function () { throw 5; };"
        "Object.defineProperty(Promise, Symbol.species, { get() { throw 6; } });",
        "Object.defineProperty(Promise.prototype, 'constructor', { get() { throw 7; } });",
    ],
)
def test_a_replaced_promise_species_cannot_hide_the_settlement(host: V8Host, change: str) -> None:
    # a tool that returns its value at once: the body settles without awaiting anything
    body = "const v = tools.t({ s: '\\ud800</script>' });" + change + "return { ok: true, value: v };"
    obs = one(host, body, Behaviour(kind="return", value=3))
    assert obs["done"] == "resolved" and obs["result"]["record"]["why"] is None
    assert any(c.startswith("Promise") for c in obs["purity"])
    assert "harness" not in obs


THROWING_TRAPS = (
    "{ getPrototypeOf() { throw 1; }, ownKeys() { throw new Error('no keys'); },"
    " getOwnPropertyDescriptor() { throw 3; } }"
)


def test_an_unreadable_record_is_a_fact(host: V8Host) -> None:
    obs = one(host, CALL + f"return new Proxy({{ ok: true, value: v }}, {THROWING_TRAPS});")
    assert obs["done"] == "resolved" and "harness" not in obs and not obs.get("alone")
    record = obs["result"]["record"]
    assert record["why"] == "unreadable" and record["plain"] is False and record["matches"] == []
    assert record["text"] == "[reading it threw: 1]"
    assert obs["result"]["unreadable"] == "[reading it threw: 1]"


def test_an_unreadable_array_of_records_is_a_fact(host: V8Host) -> None:
    body = CALL + "return new Proxy([{ ok: true, value: v }], { getOwnPropertyDescriptor() { throw 'len'; } });"
    obs = one(host, body, output="all")
    result = obs["result"]
    assert result["isArray"] is False and result["unreadable"] == '[reading it threw: "len"]'
    inner = one(host, CALL + "const r = Proxy.revocable({}, {}); r.revoke(); return [r.proxy];", output="all")
    record = inner["result"]["records"][0]
    assert record["why"] == "unreadable" and record["text"].startswith("[reading it threw: [TypeError:")


def test_a_getter_in_the_array_of_records_is_not_called(host: V8Host) -> None:
    body = CALL + "return Object.defineProperty([], '0', { get() { throw 1; }, enumerable: true, configurable: true });"
    obs = one(host, body, output="all")
    unreadable = {"plain": False, "keys": [], "ok": None, "why": "unreadable", "text": "[getter]", "matches": []}
    assert obs["result"]["records"][0] == unreadable


def test_the_kit_api_does_not_answer_bodies(host: V8Host) -> None:
    calls = "for (const m of ['run', 'collect', 'recheck']) try { __codemode[m]('guess', '[]', true); } catch (e) {}"
    obs = one(host, calls + GOOD)
    assert obs["done"] == "resolved" and obs["result"]["record"]["why"] is None and not obs.get("alone")


# --- values that are hard to describe -----------------------------------------------------------------


def test_bigints_are_described(host: V8Host) -> None:
    resolved = one(host, CALL + "return { ok: true, value: 10n, big: 7n ** 1000n };")
    assert resolved["result"]["record"]["text"] == '{"ok":true,"value":10n,"big":[a BigInt of over 300 digits]}'
    assert one(host, "throw 10n;")["result"]["text"] == "10n"


@pytest.mark.parametrize(
    ("thrown", "text"),
    [
        ("42", "42"),
        ("null", "null"),
        ("undefined", "undefined"),
        ("Symbol('s')", "Symbol(s)"),
        (f"new Proxy({{}}, {THROWING_TRAPS})", "[reading it threw: 1]"),
        ("{ get message() { throw new Error('gotcha'); } }", '{"message":[getter]}'),
        ("Object.assign(new Error('m'), { name: 'Custom' })", "[Custom: m]"),
        ("Object.defineProperty(new TypeError('x'), 'message', { get() { throw 1; } })", "[TypeError: [getter]]"),
        ("(() => { const e = new Error('e'); e.cause = e; return e; })()", "[Error: e]"),
    ],
)
def test_thrown_non_errors_are_described(host: V8Host, thrown: str, text: str) -> None:
    obs = one(host, f"throw {thrown};")
    assert obs["done"] == "rejected" and obs["result"]["text"] == text


def test_a_lone_surrogate_in_a_thrown_error_comes_back(host: V8Host) -> None:
    obs = one(host, 'throw new Error("\\ud800");')
    assert obs["result"]["text"] == "[Error: \ud800]"
    assert json.loads(json.dumps(obs)) == obs


def test_cycles_depth_and_symbols_are_described(host: V8Host) -> None:
    obs = one(host, CALL + "const o = { ok: true, value: v, [Symbol('k')]: 1 }; o.self = o;"
              "let d = {}; for (let i = 0; i < 1e5; i++) d = { a: d }; o.d = d; return o;")
    deep = '{"a":' * 7 + "[...]" + "}" * 7
    text = '{"ok":true,"value":"\\udfff","self":[circular],"d":' + deep + ",[Symbol(k)]:1}"
    assert obs["result"]["record"]["text"] == text
    assert obs["result"]["record"]["keys"] == ["ok", "value", "self", "d", "Symbol(k)"]


def test_huge_strings_and_many_keys_stay_small(host: V8Host) -> None:
    obs = one(host, CALL + "const big = 'x'.repeat(1e7); const o = { ok: true, value: big, [big]: 1 };"
              "for (let i = 0; i < 1e4; i++) o['k' + i] = i; return o;")
    record = obs["result"]["record"]
    assert len(record["text"]) <= 303 and record["text"].endswith("...")
    assert len(record["keys"]) == 20 and record["moreKeys"] == 10003 - 20
    assert all(len(k) <= 103 for k in record["keys"])
    assert len(json.dumps(obs)) < 10_000


def test_a_storm_of_tool_calls_is_recorded_up_to_a_limit(host: V8Host) -> None:
    obs = one(host, "for (let i = 0; i < 1e5; i++) tools.t({ s: 'x' });" + GOOD)
    assert len(obs["invocations"]) == 32 and len(obs["events"]) == 65 and obs["events"][-1] == ["done", "resolved"]
    assert obs["dropped"] > 0
    assert obs["invocations"][0]["args"] == '{"s":"x"}' and obs["invocations"][1]["call"] == -1


def test_a_forked_child_starts_its_own_worker() -> None:
    with V8Host() as host:
        host.run_alone(spec(GOOD))
        (parents,) = workers()
        child = os.fork()
        if child == 0:  # pragma: no cover - the child reports through its exit status
            code = 1
            try:
                ok = host.run_alone(spec(GOOD))["done"] == "resolved" and children(os.getpid()) not in ([], [parents])
                host.close()  # its own worker, not the parent's
                code = 0 if ok and children(os.getpid()) == [] else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert alive(parents) and host.run_alone(spec(GOOD))["done"] == "resolved"
