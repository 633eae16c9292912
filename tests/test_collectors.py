"""The collector role: the reference collector certifies clean, and each faulty collector is flagged under
its own Transport clause."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.collect import CollectCase, CollectJudge, CollectorAdapter, collect_cases
from conformance.registry import role_clauses
from tests.faulty.collectors import CLAUSE_OF


@pytest.fixture(scope="module")
def cases() -> list[CollectCase]:
    from conformance.search import drawn

    return drawn(collect_cases(), 600, seed_value=7)


def judged(target: str, cases: list[CollectCase]) -> dict[str, int]:
    """Failed cases per clause when ``target`` collects ``cases``."""
    failed: dict[str, int] = {}
    for result in CollectJudge(CollectorAdapter(target, timeout=10)).evaluate(cases):
        assert result.errored is None, result.errored
        for cid in {v.clause for v in result.violations}:
            failed[cid] = failed.get(cid, 0) + 1
    return failed


def test_the_cases_exercise_every_transport_clause(cases: list[CollectCase]) -> None:
    exercised = set()
    for result in CollectJudge(CollectorAdapter("reference.transports:prepare")).evaluate(cases):
        exercised |= set(result.exercised)
    assert exercised == set(role_clauses("collector"))


def test_the_reference_collector_passes_every_transport_clause(cases: list[CollectCase]) -> None:
    assert judged("reference.transports:prepare", cases) == {}


@pytest.mark.parametrize("name", sorted(CLAUSE_OF))
def test_each_faulty_collector_is_caught_under_its_clause(name: str, cases: list[CollectCase]) -> None:
    assert CLAUSE_OF[name] in judged(f"tests.faulty.collectors:{name}", cases)


def test_a_collector_that_hangs_or_exits_is_errored_not_a_kit_crash() -> None:
    from conformance.adapters import Errored
    from strategies import FragmentCase

    case = CollectCase.of(FragmentCase(tools=[{"name": "f", "arguments": {}, "required": [], "returns": {"kind": "text"}}],
                                       fragments=({"index": 0, "name": "f", "arguments": "{}"},),
                                       expect={"call": {"tool": "f", "args": {}}}, output_chars=3))
    hang = CollectorAdapter("tests.test_collectors:_hanging", timeout=0.5)
    assert isinstance(hang.run(case), Errored)
    leave = CollectorAdapter("tests.test_collectors:_exiting", timeout=5)
    outcome = leave.run(case)
    assert isinstance(outcome, Errored) and "SystemExit" in outcome.reason


def _hanging(stage: object, *, max_output_chars: float) -> object:
    import threading

    threading.Event().wait(3)
    raise RuntimeError("late")


def _exiting(stage: object, *, max_output_chars: float) -> object:
    raise SystemExit(3)


def test_certify_a_collector_from_the_command_line(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "conformance.cli", "certify", "--role", "collector", "--profile", "quick",
           "--examples", "150"]
    good = subprocess.run([*run, "--python", "reference.transports:prepare", "--report", str(tmp_path / "r.json")],
                          capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stdout + good.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["role"] == "collector" and report["summary"]["passed"] == len(role_clauses("collector"))
    bad = subprocess.run([*run, "--python", "tests.faulty.collectors:keeps_first_id", "--report", str(tmp_path / "b.json")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "TR-ID" in bad.stdout
    record = next(c for c in json.loads((tmp_path / "b.json").read_text())["clauses"] if c["clause"] == "TR-ID")
    replay = subprocess.run([*run[:4], "--role", "collector", "--python", "tests.faulty.collectors:keeps_first_id",
                             "--case", json.dumps(record["counterexample"]["case"])], capture_output=True, text=True,
                            timeout=120)
    assert replay.returncode == 1 and "TR-ID" in replay.stdout
    assert len(record["counterexample"]["case"]["fragments"]) <= 4  # shrunk to a small stream
    usage = subprocess.run([*run, "--openai", "http://127.0.0.1:9/v1", "--model", "m"], capture_output=True, text=True,
                           timeout=60)
    assert usage.returncode == 2 and "planner" in usage.stderr


# --- JavaScript collectors, run in V8 -----------------------------------------------------------------

REFERENCE_JS = Path(__file__).resolve().parent.parent / "reference" / "collector.js"

#: one-line changes of the JS reference collector, each a bug hand-written collectors have, and its clause
JS_MUTANTS = {
    "counts-code-points": ("count += s.length;", "count += Array.from(s).length;", "TR-COUNT"),
    "drops-body-beside-a-call": ('if (call) throw fail("mixed_body", "body text together with a call");',
                                 "if (call) return;", "TR-MIXED"),
    "ignores-other-calls": ("if (index !== 0) throw fail(", "if (index !== 0) return void (", "TR-SINGLE"),
    "resolves-before-parse": ("input = tool.parse(value);", "tool.resolve(value); input = tool.parse(value);",
                              "TR-RESOLVE"),
}


@pytest.fixture(scope="module")
def host() -> object:
    from conformance.v8host import V8Host

    with V8Host() as h:
        yield h


def js_judged(source: str, cases: list[CollectCase], host: object, tmp: Path, *, timeout: float = 10) -> dict[str, int]:
    from conformance.collect import JSCollectorAdapter

    path = tmp / "collector.js"
    path.write_text(source, encoding="utf-8")
    failed: dict[str, int] = {}
    for result in CollectJudge(JSCollectorAdapter(str(path), host, timeout=timeout)).evaluate(cases):
        assert result.errored is None, result.errored
        for cid in {v.clause for v in result.violations}:
            failed[cid] = failed.get(cid, 0) + 1
    return failed


def test_the_javascript_reference_collector_passes_in_v8(cases: list[CollectCase], host: object, tmp_path: Path) -> None:
    assert js_judged(REFERENCE_JS.read_text(encoding="utf-8"), cases, host, tmp_path) == {}


@pytest.mark.parametrize("name", sorted(JS_MUTANTS))
def test_each_javascript_mutant_is_caught_under_its_clause(name: str, cases: list[CollectCase], host: object,
                                                            tmp_path: Path) -> None:
    old, new, clause = JS_MUTANTS[name]
    source = REFERENCE_JS.read_text(encoding="utf-8")
    assert source.count(old) == 1
    assert clause in js_judged(source.replace(old, new), cases, host, tmp_path)


def test_a_javascript_collector_cannot_hide_its_faults_by_changing_built_ins(cases: list[CollectCase], host: object,
                                                                              tmp_path: Path) -> None:
    old, new, _ = JS_MUTANTS["drops-body-beside-a-call"]
    tamper = """
    const realPrepare = module.exports.prepare;
    module.exports.prepare = function (options) {
      Array.prototype.join = function () { return ""; };
      String.prototype.slice = function () { return ""; };
      JSON.stringify = function () { return "[]"; };
      Object.defineProperty(Object.prototype, "rejected", { get() { return "forged"; }, configurable: true });
      Reflect.ownKeys = function () { return []; };
      Object.getOwnPropertyDescriptor = function () { return undefined; };
      return realPrepare(options);
    };
    """
    source = REFERENCE_JS.read_text(encoding="utf-8").replace(old, new) + tamper
    failed = js_judged(source, cases, host, tmp_path)
    assert "TR-MIXED" in failed and set(failed) == {"TR-MIXED"}


def test_a_javascript_collector_that_hangs_is_errored_and_the_rest_judged(host: object, tmp_path: Path) -> None:
    from conformance.adapters import Errored
    from conformance.collect import JSCollectorAdapter

    source = REFERENCE_JS.read_text(encoding="utf-8").replace(
        'if (done) throw protocolError("finished", "a fragment after finish");',
        'if (done) throw protocolError("finished", "a fragment after finish"); if (fragment === "loop") for (;;) {}')
    path = tmp_path / "hang.js"
    path.write_text(source, encoding="utf-8")
    tools = [{"name": "f", "arguments": {}, "required": [], "returns": {"kind": "text"}}]
    loop = CollectCase(tools=tools, fragments=("loop",), max_output_chars=None, expect={"text": "loop"}, output_chars=4)
    fine = CollectCase(tools=tools, fragments=("fine",), max_output_chars=None, expect={"text": "fine"}, output_chars=4)
    got = JSCollectorAdapter(str(path), host, timeout=0.5).run_many([fine, loop])
    assert isinstance(got[1], Errored) and "time limit" in got[1].reason
    assert not isinstance(got[0], Errored) and got[0]["result"] == {"text": "fine"}


class _MetadataThrows:
    """The reference collector with a metadata getter that raises, counting how often it is read."""

    reads = 0

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    @property
    def metadata(self) -> object:
        type(self).reads += 1
        raise RuntimeError("metadata is not available")


def _metadata_throws(stage: object, *, max_output_chars: float) -> object:
    from reference.transports import prepare

    return _MetadataThrows(prepare(stage, max_output_chars=max_output_chars))  # type: ignore[arg-type]


def test_metadata_is_read_once_and_a_throwing_getter_changes_nothing(cases: list[CollectCase], host: object,
                                                                       tmp_path: Path) -> None:
    some = cases[:50]
    _MetadataThrows.reads = 0
    assert judged("tests.test_collectors:_metadata_throws", some) == {}
    assert _MetadataThrows.reads == len(some)  # once per stream, after its end
    source = REFERENCE_JS.read_text(encoding="utf-8").replace(
        "get outputChars() { return count; },",
        'get outputChars() { return count; }, get metadata() { throw new Error("no metadata"); },')
    assert js_judged(source, some, host, tmp_path) == {}


def test_collectors_written_from_spec_alone_certify_clean(cases: list[CollectCase], host: object, tmp_path: Path) -> None:
    """Two collectors written from SPEC.md's Transport section alone (tests/outside/README.md)."""
    assert judged("tests.outside.collectors.indep_collector:prepare", cases) == {}
    outside = Path(__file__).resolve().parent / "outside" / "collectors" / "indep_collector.js"
    assert js_judged(outside.read_text(encoding="utf-8"), cases, host, tmp_path) == {}


def test_a_collector_in_any_language_speaks_json_lines(tmp_path: Path) -> None:
    from tests.conftest import python_module_command

    run = [sys.executable, "-m", "conformance.cli", "certify", "--role", "collector", "--profile", "quick",
           "--examples", "60"]
    good = subprocess.run([*run, "--cmd", f"{sys.executable} -m conformance.cli collect", "--report", str(tmp_path / "r.json")],
                          capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stdout + good.stderr
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["passed"] == len(role_clauses("collector"))
    bad = subprocess.run([*run, "--cmd", python_module_command("tests.faulty.collectors", "any_tool"), "--no-shrink"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "TR-TOOL" in bad.stdout
    # a command that answers something else is errored, not judged
    odd = subprocess.run([*run, "--cmd", f"{sys.executable} -m conformance.cli compile", "--no-shrink"],
                         capture_output=True, text=True, timeout=300)
    assert odd.returncode == 1 and "0 passed, 0 failed, " in odd.stdout and " errored" in odd.stdout


def test_a_fuzzing_campaign_finds_and_replays_a_faulty_collector(tmp_path: Path) -> None:
    regressions = tmp_path / "regressions"
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "fuzz", "--role", "collector", "--python",
                           "tests.faulty.collectors:any_tool", "--minutes", "0.2", "-n", "1", "--regressions",
                           str(regressions), "--campaign-dir", str(tmp_path / "c")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (found,) = [p for p in regressions.glob("TR-TOOL-*.jsonl")]
    replay = [sys.executable, "-m", "conformance.cli", "replay", str(found), "--role", "collector", "--python"]
    assert subprocess.run([*replay, "tests.faulty.collectors:any_tool"], capture_output=True, timeout=120).returncode == 1
    fixed = subprocess.run([*replay, "reference.transports:prepare"], capture_output=True, text=True, timeout=120)
    assert fixed.returncode == 0 and "FIXED" in fixed.stdout


def _mutating(stage: object, *, max_output_chars: float) -> object:
    """The reference collector, but it scribbles on every fragment it is given after reading it."""
    from reference.transports import prepare

    inner = prepare(stage, max_output_chars=max_output_chars)  # type: ignore[arg-type]
    push = inner.push

    def scribble(fragment: object) -> None:
        push(fragment)
        if isinstance(fragment, dict):
            fragment["index"] = 9
            fragment["name"] = "scribbled"

    inner.push = scribble  # type: ignore[method-assign]
    return inner


def test_a_collector_that_changes_its_fragments_cannot_change_the_case(cases: list[CollectCase]) -> None:
    some = cases[:80]
    before = [(c.id, c.request_line()) for c in some]
    assert judged("tests.test_collectors:_mutating", some) == {}
    assert [(c.id, c.request_line()) for c in some] == before
