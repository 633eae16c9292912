"""A misbehaving implementation is errored, never a pass and never a crash of the kit; nothing of it is left
running; every answer of an exchange belongs to its request (the fence), or the exchange is errored."""

from __future__ import annotations

import os
import resource
import shlex
import shutil
import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.adapters import Errored, PythonAdapter, SubprocessAdapter
from conformance.engine import CompilerJudge
from conformance.process import _SHELL_WORDS, IUTProcess, processes_with_token, shell_line
from conformance.v8host import V8Host
from reference import jsonio
from tests.conftest import ROOT, python_module_command
from tests.faulty.broken import START

GOOD = {
    "plan": {"mode": "single", "calls": [{"tool": "t", "args": {}}], "output": {"kind": "last"}},
    "tools": [{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}],
}
PAST_START = START - 1  # requests answered well before the misbehaviour (the fence is the last of START)


def _adapter(how: str, timeout: float = 3.0, prefix: str = "") -> SubprocessAdapter:
    adapter = SubprocessAdapter(prefix + python_module_command("tests.faulty.broken", how), timeout=timeout)
    # what a compiler judge gives it (see CompilerJudge.is_fence), cheaper: the broken compilers answer
    # with the reference's js, which spells every string value as JSON text
    adapter.fence_check = lambda nonce, js: jsonio.dumps(nonce) in js
    return adapter


def _warm(adapter: SubprocessAdapter) -> None:
    """Spend the first START requests (the implementation misbehaves only after them)."""
    answers = adapter.exchange([GOOD] * PAST_START)
    assert all(isinstance(a, dict) for a in answers), answers


def test_a_process_killed_by_a_signal_is_errored_and_the_report_names_the_signal() -> None:
    adapter = _adapter("killed")
    _warm(adapter)
    answers = adapter.exchange([GOOD] * 2)
    adapter.close()
    assert all(isinstance(a, Errored) for a in answers)
    assert answers[0].reason == "was killed by SIGKILL before answering request 1 of 2", answers  # type: ignore[union-attr]


def test_a_good_process_answers_every_request_in_order() -> None:
    adapter = _adapter("none")
    answers = adapter.exchange([GOOD] * 50)
    adapter.close()
    assert len(answers) == 50 and all(isinstance(a, dict) and "js" in a for a in answers)
    assert adapter.faults == []


def test_crash_errors_the_rest_with_stderr_and_restarts() -> None:
    adapter = _adapter("crash")
    _warm(adapter)
    answers = adapter.exchange([GOOD] * 4)
    assert all(isinstance(a, Errored) for a in answers)
    assert "status 3" in answers[0].reason and "fell over" in answers[0].stderr  # type: ignore[union-attr]
    again = adapter.exchange([GOOD])
    adapter.close()
    assert isinstance(again[0], dict) and adapter.starts == 2


def test_hang_is_a_timeout_and_its_process_is_gone() -> None:
    adapter = _adapter("hang", timeout=1.0)
    _warm(adapter)
    token = adapter._proc.token  # type: ignore[union-attr]
    answers = adapter.exchange([GOOD] * 3)
    assert isinstance(answers[0], Errored) and "within 1s" in answers[0].reason
    assert processes_with_token(token) == []
    adapter.close()


@pytest.mark.parametrize("how", ["garbage", "array"])
def test_garbage_lines_are_errored_alone(how: str) -> None:
    adapter = _adapter(how)
    _warm(adapter)
    answers = adapter.exchange([GOOD] * 13)  # its closing request (the 22nd) is answered well
    adapter.close()
    assert len(answers) == 13
    bad = [a for a in answers if isinstance(a, Errored)]
    assert bad and len(bad) < 13 and all("not" in a.reason for a in bad)


@pytest.mark.parametrize("how", ["extra-line", "two-lines"])
def test_an_extra_line_errors_the_whole_exchange_and_is_a_stream_fault(how: str) -> None:
    adapter = _adapter(how)
    _warm(adapter)
    answers = adapter.exchange([GOOD] * 20)
    adapter.close()
    # the line read as the answer to the kit's closing request is an answer to another request
    assert all(isinstance(a, Errored) and "closing request" in a.reason for a in answers)
    assert adapter.faults and "out of step" in adapter.faults[0][1]


def test_a_line_written_late_is_found_before_the_next_exchange() -> None:
    adapter = _adapter("late-extra")
    _warm(adapter)
    first = adapter.exchange([GOOD])
    assert isinstance(first[0], dict)  # its fence was answered at once; the extra line comes 0.3 s later
    time.sleep(0.6)
    again = adapter.exchange([GOOD])
    adapter.close()
    assert isinstance(again[0], dict) and adapter.starts == 2  # a fresh process answered it
    assert adapter.faults and "line after the last answer" in adapter.faults[0][1]


def test_the_fence_of_a_compiler_that_spells_no_string_is_recognized_by_running_its_js() -> None:
    # the outside compiler writes every string as UTF-16 code units: its js never holds the fence's value
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed")
    adapter = SubprocessAdapter(f"node {ROOT / 'tests' / 'outside' / 'compiler_combinators.mjs'}", timeout=5.0)
    with V8Host() as host:
        CompilerJudge(adapter, host)  # gives the adapter its fence check
        answers = adapter.exchange([GOOD] * 5)
    adapter.close()
    assert all(isinstance(a, dict) and "js" in a for a in answers) and adapter.faults == []


def test_answers_out_of_step_with_as_many_lines_as_requests_are_errored() -> None:
    # one request answered twice, the fence never: the count is right, the answers are not theirs
    adapter = _adapter("shift")
    _warm(adapter)
    answers = adapter.exchange([GOOD] * 6)
    adapter.close()
    assert all(isinstance(a, Errored) for a in answers), answers
    assert adapter.faults and "not its answer" in adapter.faults[0][1]


def test_answers_of_an_exchange_never_closed_are_errored_not_judged() -> None:
    # answers written out of order (swapped in pairs), then a crash at the kit's closing request: nothing
    # shows the lines to be in step, so none is judged, and each says why
    adapter = _adapter("swap-crash")
    _warm(adapter)
    answers = adapter.exchange([GOOD] * 4)
    adapter.close()
    assert all(isinstance(a, Errored) and a.unmatched and "status 3" in a.reason for a in answers), answers
    assert "cannot be matched to its request" in answers[0].reason  # type: ignore[union-attr]
    # a request the crash left unanswered is the error a report names, before one answered out of step
    from conformance.plan_cases import PlanCase
    from conformance.results import CaseResult, Run
    from conformance.search import PROFILES

    run = Run(role="compiler", profile=PROFILES["quick"], seed=0, clauses=("JS-FORM",))
    case = PlanCase(instruction="x", tools=[], expect={"diagnostic": True}, family="single")
    for errored in (answers[0], Errored(reason="no answer to request 3 of 4 within 3s")):
        run.record(CaseResult(case=case, exercised=("JS-FORM",), errored=errored))  # type: ignore[arg-type]
    assert run.tallies["JS-FORM"].first_error.errored.reason.startswith("no answer to request 3")


@pytest.mark.parametrize("answer", ["this is not JSON", '{"diagnostic": "no"}', '{"js": "return 1;"}'])
def test_a_wrong_answer_to_the_fence_errors_the_exchange(answer: str) -> None:
    script = ("import sys\nfrom reference.cli import compile_line\n"
              "for line in sys.stdin:\n"
              f"    out = {answer!r} if 'codemode_fence' in line else compile_line(line)\n"
              "    print(out, flush=True)\n")
    adapter = SubprocessAdapter(f"{sys.executable} -c {shlex.quote(script)}", timeout=5.0)
    with V8Host() as host:
        CompilerJudge(adapter, host)
        answers = adapter.exchange([GOOD] * 3)
    adapter.close()
    assert all(isinstance(a, Errored) and "closing request" in a.reason for a in answers), answers


@pytest.mark.parametrize("prefix", ["", "cd . && PLANNER_MODE=x "])
def test_an_implementation_that_closes_stdout_and_keeps_running_is_errored(prefix: str) -> None:
    adapter = _adapter("close-stdout", prefix=prefix)
    _warm(adapter)
    token = adapter._proc.token  # type: ignore[union-attr]
    started = time.monotonic()
    answers = adapter.exchange([GOOD] * 2)
    # seen as closed at once (the shell runs the command, the last of a list too, through exec, so it
    # holds no copy of the command's stdout), not as silence until the timeout
    assert isinstance(answers[0], Errored) and "closed its stdout" in answers[0].reason, answers
    assert time.monotonic() - started < adapter.timeout
    assert processes_with_token(token) == []
    adapter.close()


@pytest.mark.parametrize(("command", "line"), [
    ("python -m my_planner --flag 'a b'", "exec python -m my_planner --flag 'a b'"),
    ("./planner --home $HOME \"x;y\"", "exec ./planner --home $HOME \"x;y\""),
    ("./planner $(cat args)", "./planner $(cat args)"),
    ("cd dir && ./planner", "cd dir && exec ./planner"),
    ("cd 'a b' && X=\"1 2\" ./p --x 'y;z'", "cd 'a b' && X=\"1 2\" exec ./p --x 'y;z'"),
    ("./a; ./b", "./a; exec ./b"),
    ("./p || echo 'x && y'", "./p || exec echo 'x && y'"),
    ("a\\;b&&./p", "a\\;b&&exec ./p"),
    ("./a & ./b", "./a & ./b"),
    ("./planner `cat args`", "./planner `cat args`"),
    ("cd dir && exec ./p", "cd dir && exec ./p"),
    ("if true; then ./planner; fi; ./other", "if true; then ./planner; fi; exec ./other"),
    ("MODEL=small", "MODEL=small"),
    ("./planner --x 1 # a note; not run", "exec ./planner --x 1 # a note; not run"),
    ("# a comment alone", "# a comment alone"),
    ("./planner 2>/dev/null", "./planner 2>/dev/null"),
    ("./a | ./b", "./a | ./b"),
    ("(./planner)", "(./planner)"),
    ("MODEL=small ./planner", "MODEL=small exec ./planner"),
    ("exec ./planner", "exec ./planner"),
    ("if true; then ./planner; fi", "if true; then ./planner; fi"),
    ("./planner 'unclosed", "./planner 'unclosed"),
    ("./a\n./b", "./a\n./b"),
])
def test_the_last_of_a_list_of_simple_commands_is_run_through_exec_and_any_other_line_as_written(command: str, line: str) -> None:
    assert shell_line(command) == line


_WORD = st.one_of(
    st.text("abc./-_;&|$ ", min_size=1, max_size=6).map(shlex.quote),  # quoted: operators inside are words
    st.from_regex(r"[a-z./][a-z0-9./_-]{0,5}", fullmatch=True),
    st.from_regex(r"[a-z]{1,3}\\;[a-z]{0,2}", fullmatch=True),  # an escaped operator
)
_SIMPLE = st.tuples(
    st.lists(st.tuples(st.from_regex(r"[A-Z_][A-Z0-9_]{0,4}", fullmatch=True), _WORD).map("=".join), max_size=2),
    st.lists(_WORD, min_size=1, max_size=3).filter(lambda ws: ws[0] not in _SHELL_WORDS),
)


@given(st.lists(st.tuples(_SIMPLE, st.sampled_from(["&&", "||", ";", " && ", " ; "])), min_size=1, max_size=3))
def test_exec_goes_right_before_the_last_simple_commands_command_word(parts) -> None:  # type: ignore[no-untyped-def]
    line = ""
    for k, ((assignments, words), operator) in enumerate(parts):
        at = len(line) + sum(len(a) + 1 for a in assignments)  # where this command's words begin
        line += " ".join(assignments + words) + (operator if k < len(parts) - 1 else "")
    assert shell_line(line) == line[:at] + "exec " + line[at:]


def _answers_and_growth(how: str, n: int, timeout: float) -> tuple[list[object], int]:
    """Answers of ``n`` requests to a warmed misbehaving process, and how much the kit's peak memory grew
    meanwhile (KiB)."""
    adapter = _adapter(how, timeout=timeout)
    _warm(adapter)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    answers = adapter.exchange([GOOD] * n)
    adapter.close()
    return list(answers), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before


def test_an_overlong_line_is_errored_and_not_kept() -> None:
    answers, growth = _answers_and_growth("huge-line", 12, 10.0)
    assert any(isinstance(a, Errored) and "over the" in a.reason for a in answers)
    assert sum(isinstance(a, dict) for a in answers) >= 10
    assert growth < 100 << 10  # KiB: it held no 20 MB line


def test_endless_output_without_a_newline_costs_the_kit_nothing() -> None:
    answers, growth = _answers_and_growth("endless", 2, 3.0)
    assert all(isinstance(a, Errored) for a in answers)
    assert growth < 100 << 10


@pytest.mark.parametrize("how", ["child", "daemon"])
def test_children_that_keep_stdout_open_are_killed_with_it(how: str) -> None:
    proc = IUTProcess(python_module_command("tests.faulty.broken", how))
    time.sleep(0.5)  # let the child start
    assert len(processes_with_token(proc.token)) >= 2
    started = time.monotonic()
    proc.kill()
    assert processes_with_token(proc.token) == []
    assert time.monotonic() - started < 10


def test_huge_stderr_is_drained_and_only_its_tail_kept() -> None:
    adapter = _adapter("huge-stderr", timeout=10.0)
    answers = adapter.exchange([GOOD] * 60)
    assert all(isinstance(a, dict) for a in answers)
    tail = adapter.stderr_tail(10**9)
    assert len(tail) <= (16 << 10) + 100 and tail.startswith("[") and "earlier bytes not kept" in tail
    adapter.close()


def test_python_adapter_errors_exceptions_and_non_json() -> None:
    adapter = PythonAdapter("tests.test_adapters:_explode")
    (answer,) = adapter.exchange([GOOD])
    assert isinstance(answer, Errored) and "ZeroDivisionError" in answer.stderr
    adapter.close()


def _explode(line: str) -> str:
    return str(1 / 0)


def test_certify_exits_2_for_an_implementation_that_cannot_start(tmp_path: object) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "certify", "--role", "compiler", "--cmd", python_module_command("tests.faulty.broken", "dead")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "smoke test failed" in proc.stderr and "cannot load model" in proc.stderr


def _batched(many: object) -> PythonAdapter:
    from reference.cli import compile_line

    def line(text: str) -> str:
        calls.append("one")
        return compile_line(text)

    line.many = many  # type: ignore[attr-defined]
    calls: list[str] = []
    adapter = PythonAdapter.of(line, "batched", timeout=1.0)
    adapter.calls = calls  # type: ignore[attr-defined]
    return adapter


def test_a_batch_form_answers_whole_batches_and_a_bad_batch_is_retried_line_by_line() -> None:
    from reference.cli import compile_line

    batches: list[int] = []

    def good(lines: list[str]) -> list[str]:
        batches.append(len(lines))
        return compile_line.many(lines)  # type: ignore[attr-defined]

    adapter = _batched(good)
    answers = adapter.exchange([GOOD] * 5)
    assert batches == [5] and adapter.calls == []  # type: ignore[attr-defined]
    assert all(isinstance(a, dict) and "js" in a for a in answers)
    adapter.close()

    def hangs(lines: list[str]) -> list[str]:
        time.sleep(5)  # past the batch's budget: 3 lines at 1 s each
        return []

    for bad in (lambda lines: 1 / 0, lambda lines: compile_line.many(lines)[:-1], hangs):  # type: ignore[attr-defined]
        adapter = _batched(bad)
        answers = adapter.exchange([GOOD] * 3)
        assert adapter.calls == ["one"] * 3  # type: ignore[attr-defined]
        assert all(isinstance(a, dict) and "js" in a for a in answers)
        adapter.close()


def test_no_process_of_the_kit_is_left_at_exit() -> None:
    # a command that ignores EOF and keeps a child: a Python process that makes one and exits without
    # closing it still leaves nothing behind (the atexit hook kills it)
    code = ("from conformance.process import IUTProcess; import sys; "
            f"p = IUTProcess({python_module_command('tests.faulty.broken', 'child')!r}); print(p.token)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=dict(os.environ))
    token = out.stdout.strip()
    assert token and processes_with_token(token) == [], out.stderr
