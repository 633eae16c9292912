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
from strategies import Behaviour, Failure

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


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        ("Object.getPrototypeOf([][Symbol.iterator]()).x = 1;", '%ArrayIteratorPrototype%: property "x" added'),
        ("Object.getPrototypeOf(/a/[Symbol.matchAll]('')).x = 1;", '%RegExpStringIteratorPrototype%: property "x" added'),
        ("Object.getPrototypeOf(async function () {}).x = 1;", '%AsyncFunction.prototype%: property "x" added'),
        ("Object.getPrototypeOf(Object.getPrototypeOf(async function* () {}).prototype).x = 1;",
         'Object.getPrototypeOf(%AsyncGeneratorFunction.prototype%.prototype): property "x" added'),
        ("Object.getPrototypeOf(Uint8Array).x = 1;", 'Object.getPrototypeOf(Uint8Array): property "x" added'),
        ("Object.getOwnPropertyDescriptor(Map.prototype, 'size').get.x = 1;",
         'the getter of Map.prototype.size: property "x" added'),
    ],
)
def test_a_changed_built_in_no_global_names_is_named_by_how_it_is_reached(host: V8Host, tamper: str, named: str) -> None:
    obs = one(host, tamper + GOOD)
    assert obs["purity"] == [named]


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


# --- virtual time: timers fire, in the worker, before "never settles" is judged -----------------------

SEQ_PLAN = {
    "mode": "sequential",
    "calls": [{"tool": "t", "args": {"s": "a"}}, {"tool": "t", "args": {"s": "b"}}],
    "output": {"kind": "all"},
}
NEVER_THEN_RESOLVE = (Behaviour(kind="never"), Behaviour(kind="resolve", value=1))


def seq_case(js: str, behaviours: tuple[Behaviour, ...] = NEVER_THEN_RESOLVE) -> tuple[CompileCase, Any]:
    case = CompileCase(tools=TOOLS, plan=SEQ_PLAN, behaviours=behaviours)
    return case, expect(case, js)


def clauses(item: tuple[CompileCase, Any], run: dict[str, Any]) -> set[str]:
    """The clauses the JS checks report for one run."""
    from conformance.bench import judge_js

    return {v.clause for v in judge_js(item, run).violations}


WAITS = {
    "setTimeout": "new Promise((r) => setTimeout(r, 30))",
    "setInterval": "new Promise((r) => { const i = setInterval(() => { clearInterval(i); r(); }, 30); })",
    "Atomics.waitAsync": "Atomics.waitAsync(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30).value",
    "mini-racer's timer manager": "new Promise((r) => __timer_manager.setTimeout(r, 30))",
}


@pytest.mark.parametrize("wait", WAITS.values(), ids=list(WAITS))
def test_a_timer_cannot_start_the_next_call_after_one_that_never_settles(host: V8Host, wait: str) -> None:
    item = seq_case(f"const p = tools.t({{ s: 'a' }}); await Promise.race([p, {wait}]);"
                    "return [await tools.t({ s: 'b' })];")
    (obs,) = timed(host.run_batch, [item[1].spec])
    assert ["start", 1, False] in obs["events"] and obs["done"] == "resolved"
    assert {"JS-SEQUENTIAL", "JS-AWAIT"} <= clauses(item, obs)


def test_a_timer_cannot_settle_the_function_while_a_call_never_settles(host: V8Host) -> None:
    obs = one(host, "tools.t({ s: '\\ud800</script>' }); await new Promise((r) => setTimeout(r, 1e6));"
              "return { ok: true, value: 1 };", Behaviour(kind="never"))
    assert obs["done"] == "resolved"
    assert [e[0] for e in obs["events"]] == ["start", "done"]


def test_a_never_settling_call_still_never_settles_with_time_run_out(host: V8Host) -> None:
    obs = host.run_alone(spec("setTimeout(() => {}, 2 ** 31 - 1); setInterval(() => {}, 1e9);" + GOOD,
                              Behaviour(kind="never")))
    assert obs["done"] is None and [e[0] for e in obs["events"]] == ["start"]
    assert obs["timers"] == 2 and obs["timersPending"] == 1  # the interval, after 999 more firings


def test_a_tamper_in_a_timer_is_impure(host: V8Host) -> None:
    obs = one(host, "setTimeout(() => { Array.prototype.evil = 1; }, 30);" + GOOD)
    assert obs["alone"] and obs["done"] == "resolved" and obs["timers"] == 1
    assert obs["purity"] == ['Array.prototype: property "evil" added']


def test_a_timer_set_while_the_result_is_read_fires_before_the_recheck(host: V8Host) -> None:
    obs = one(host, CALL + "return new Proxy({ ok: true, value: v }, { ownKeys(t) {"
              "  setTimeout(() => { globalThis.late = 1; }, 50); return Reflect.ownKeys(t); } });")
    assert obs["purity"] == ['globalThis: property "late" added']


def test_timers_left_by_a_batch_never_fire_in_the_next(host: V8Host) -> None:
    # without purity nothing fires timers a trap set while the result was read: they must die with the batch
    host.run_batch([spec(CALL + "return new Proxy({ ok: true, value: v }, { ownKeys(t) {"
                         "  setTimeout(() => { globalThis.stale = 1; }, 10); return Reflect.ownKeys(t); } });")],
                   purity=False)
    time.sleep(0.1)
    obs = host.run_batch([spec(GOOD)])
    assert not obs[0].get("alone") and obs[0]["result"]["record"]["why"] is None


@pytest.mark.parametrize(
    "change",
    ["globalThis.setTimeout = () => 0", "setInterval.x = 1", "delete globalThis.clearInterval",
     "Atomics.waitAsync = () => ({ async: false, value: 'ok' })", "globalThis.clearTimeout = clearInterval"],
)
def test_replacing_the_timers_is_impure(host: V8Host, change: str) -> None:
    obs = one(host, change + ";" + GOOD)
    assert obs["alone"] and obs["purity"], obs


def test_a_timer_that_loops_is_a_time_limit(host: V8Host) -> None:
    obs = one(host, "setTimeout(() => { for (;;) {} }, 5);" + GOOD)
    assert obs["limit"] == "ran past the JS time limit of 1s"


def test_many_slow_timers_share_one_time_limit(host: V8Host) -> None:
    obs = one(host, "for (let i = 0; i < 40; i++) setTimeout(() => { const t = Date.now(); while (Date.now() - t < 100); }, i);"
              + GOOD)
    assert obs["limit"] == "ran past the JS time limit of 1s"


def test_an_endless_interval_stops_at_the_cap_with_a_fact(host: V8Host) -> None:
    obs = one(host, "let n = 0; setInterval(() => { n++; }, 1);" + CALL + "return { ok: true, value: v, n };")
    assert obs["alone"] and obs["done"] == "resolved" and obs["result"]["record"]["why"] is None
    assert obs["timers"] == 1 and obs["timersPending"] == 1


def test_a_batch_with_timers_is_judged_in_the_batch(host: V8Host) -> None:
    obs = host.run_batch([spec("await new Promise((r) => setTimeout(r, 5));" + GOOD), spec(GOOD)])
    assert not any(o.get("alone") for o in obs) and all(o["result"]["record"]["why"] is None for o in obs)
    assert host.run_alone(spec("await new Promise((r) => setTimeout(r, 5));" + GOOD))["timers"] == 1
    assert "timers" not in host.run_alone(spec(GOOD))


def test_timers_fire_by_due_time_then_by_setting_with_microtasks_between(host: V8Host) -> None:
    body = (
        "const log = [];"
        "setTimeout(() => log.push('c'), 20);"
        "setTimeout(() => { log.push('a'); Promise.resolve().then(() => log.push('m')); }, 10);"
        "setTimeout(() => log.push('b'), 10);"
        "clearTimeout(setTimeout(() => log.push('cleared'), 5));"
        "setTimeout((x, y) => log.push(x + y), 15, 'd', 'e');"
        "setTimeout(() => log.push('z'), -5); setTimeout(() => log.push('huge'), 2 ** 40);"  # both 1 ms, as in Node
        "queueMicrotask(() => log.push('q'));"
        "await new Promise((r) => setTimeout(r, 50));"
        + CALL + "return { ok: true, value: log.join() };"
    )
    assert one(host, body)["result"]["record"]["text"] == '{"ok":true,"value":"q,z,huge,a,m,b,de,c"}'


def test_wait_async_keeps_its_synchronous_outcomes_and_notify(host: V8Host) -> None:
    body = (
        "const ia = new Int32Array(new SharedArrayBuffer(8));"
        "const a = Atomics.waitAsync(ia, 0, 1, 10), b = Atomics.waitAsync(ia, 0, 0, 0);"
        "const c = Atomics.waitAsync(ia, 0, 0, 1e6), d = Atomics.waitAsync(ia, 1, 0, 10);"
        "const woken = Atomics.notify(ia, 0);"
        "const out = [a.async, a.value, b.async, b.value, c.async, woken, await c.value, await d.value];"
        "let e; try { Atomics.waitAsync(new Int32Array(4), 0, 0, 10); } catch (x) { e = x.constructor.name; }"
        + CALL + "return { ok: true, value: out.concat(e, Atomics.waitAsync.length, Atomics.waitAsync.name).join() };"
    )
    text = one(host, body)["result"]["record"]["text"]
    assert text == '{"ok":true,"value":"false,not-equal,false,timed-out,true,1,ok,timed-out,TypeError,4,waitAsync"}'


EVAL_COUNT = textwrap.dedent(
    """
    import json, sys
    from conformance import v8worker
    from conformance.cases import CompileCase, expect
    from strategies import Behaviour
    worker = v8worker.Worker()
    real = worker._racer.eval
    count = [0]
    def counting(self, *args, **kwargs):
        count[0] += 1
        return real(self, *args, **kwargs)
    worker._racer.eval = counting
    tools = [{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}]
    plan = {"mode": "single", "calls": [{"tool": "t", "args": {}}], "output": {"kind": "last"}}
    case = CompileCase(tools=tools, plan=plan, behaviours=(Behaviour(kind="resolve", value=1),))
    counts = []
    for js in sys.argv[1:]:
        specs = json.dumps([expect(case, js).spec] * 3)
        for op in ("batch", "alone"):
            request = {"op": op, "purity": True, "seconds": 5, "memory": 64 << 20}
            if op == "batch":
                worker.handle(request, specs)  # the shared context and its baseline exist from here on
            count[0] = 0
            reply, _ = worker.handle(request, specs)
            assert reply["status"] == "ok", reply
            counts.append(count[0])
    print(json.dumps(counts))
    """
)


def test_a_batch_without_timers_costs_no_eval_more() -> None:
    out = subprocess.run(
        [sys.executable, "-c", EVAL_COUNT, "return await tools.t({});",
         "await new Promise((r) => setTimeout(r, 5)); return await tools.t({});"],
        capture_output=True, text=True, timeout=60, check=True,
    )
    plain_batch, plain_alone, timed_batch, timed_alone = json.loads(out.stdout)
    # batch: run, collect, recheck; alone: a fresh context (mini-racer's own setup, the harness), the same three
    assert (plain_batch, plain_alone) == (3, 5)
    # with timers: collect says "timers", three firings (one per case), "idle", collect again
    assert (timed_batch, timed_alone) == (3 + 5, 5 + 5)


# --- arguments: read as a real tool reads them, at the call and when it settles ------------------------


def test_a_proxy_argument_is_read_as_a_tool_reads_it(host: V8Host) -> None:
    obs = one(host, "const v = await tools.t(new Proxy({ s: '\\ud800</script>' }, { get: () => 'WRONG' }));"
              "return { ok: true, value: v };")
    (inv,) = obs["invocations"]
    assert inv["call"] == 0 and inv["argsOk"] is False
    assert inv["args"] == '{"s":"\\ud800</script>"} whose "s" reads as "WRONG"'
    thrown = one(host, "const v = await tools.t(new Proxy({ s: '\\ud800</script>' }, { get() { throw 7; } }));"
                 "return { ok: true, value: v };")
    assert thrown["invocations"][0]["argsOk"] is False
    assert thrown["invocations"][0]["args"].endswith('whose "s" reads as [reading it threw: 7]')


@pytest.mark.parametrize("kind", ["resolve", "reject"])
def test_an_argument_changed_before_the_call_settles_is_wrong(host: V8Host, kind: str) -> None:
    behaviour = Behaviour(kind=kind, value=1, delay=2, failure=None if kind == "resolve" else Failure(message="no"))
    changed = one(host, "const a = { s: '\\ud800</script>' }; const p = tools.t(a); a.s = 'changed';"
                  "try { await p; } catch (e) {} return 1;", behaviour)
    (inv,) = changed["invocations"]
    assert inv["argsOk"] is False and inv["args"] == '{"s":"changed"} by the time the call settled'
    later = one(host, "const a = { s: '\\ud800</script>' }; try { await tools.t(a); } catch (e) {} a.s = 'changed';"
                "return 1;", behaviour)
    assert later["invocations"][0]["argsOk"] is True


def test_a_proxy_that_changes_its_answer_after_the_call_is_wrong(host: V8Host) -> None:
    body = ("let n = 0; const v = await tools.t(new Proxy({ s: '\\ud800</script>' },"
            "  { get: (t, k) => (n++ ? 'WRONG' : t[k]) })); return { ok: true, value: v };")
    (inv,) = one(host, body, Behaviour(kind="resolve", value=1))["invocations"]
    assert inv["argsOk"] is False and inv["args"].endswith('reads as "WRONG" by the time the call settled')


# --- shape errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        "new (class extends Error { get message() { globalThis.ran = 1; return 'bad'; } })()",
        "Object.defineProperty(new Error('bad'), 'message', { get() { globalThis.ran = 1; return 'bad'; } })",
    ],
)
def test_a_message_accessor_is_its_own_why_and_never_called(host: V8Host, error: str) -> None:
    body = f"await tools.t({{}}); return {{ ok: false, error: {error} }};"
    (obs,) = timed(host.run_batch, [rows_spec(body, Behaviour(kind="resolve", value={"not": "rows"}))])
    assert not obs.get("alone")  # the getter never ran: the batch stayed pure
    assert obs["result"]["record"]["why"] == "error-message-accessor"
