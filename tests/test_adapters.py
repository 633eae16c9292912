"""A misbehaving implementation is errored, never a pass and never a crash of the kit."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conformance.adapters import Errored, PythonAdapter, SubprocessAdapter
from tests.conftest import python_module_command

GOOD = {
    "plan": {"mode": "single", "calls": [{"tool": "t", "args": {}}], "output": {"kind": "last"}},
    "tools": [{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}],
}


def _run(how: str, n: int = 8, timeout: float = 3.0) -> tuple[list[object], SubprocessAdapter]:
    adapter = SubprocessAdapter(python_module_command("tests.faulty.broken", how), timeout=timeout)
    answers = adapter.exchange([GOOD] * n)
    return answers, adapter


def test_a_good_process_answers_every_request_in_order() -> None:
    answers, adapter = _run("none", n=50)
    adapter.close()
    assert len(answers) == 50 and all(isinstance(a, dict) and "js" in a for a in answers)


def test_crash_errors_the_rest_with_stderr_and_restarts() -> None:
    answers, adapter = _run("crash")
    assert all(isinstance(a, dict) for a in answers[:4])
    assert all(isinstance(a, Errored) for a in answers[4:])
    err = answers[4]
    assert isinstance(err, Errored) and "status 3" in err.reason and "fell over" in err.stderr
    again = adapter.exchange([GOOD])
    adapter.close()
    assert isinstance(again[0], dict) and adapter.starts == 2


def test_hang_is_a_timeout() -> None:
    answers, adapter = _run("hang", timeout=1.0)
    adapter.close()
    assert isinstance(answers[4], Errored) and "within 1s" in answers[4].reason


@pytest.mark.parametrize("how", ["garbage", "array"])
def test_garbage_lines_are_errored_alone(how: str) -> None:
    answers, adapter = _run(how)
    adapter.close()
    bad = [a for a in answers if isinstance(a, Errored)]
    assert bad and all(isinstance(a, dict) or isinstance(a, Errored) for a in answers)
    assert len(answers) == 8


def test_an_extra_line_errors_the_batch() -> None:
    adapter = SubprocessAdapter(python_module_command("tests.faulty.broken", "extra-line"))
    answers = []
    for _ in range(4):
        answers += adapter.exchange([GOOD])
    adapter.close()
    assert any(isinstance(a, Errored) and "more lines" in a.reason for a in answers)


def test_python_adapter_errors_exceptions_and_non_json() -> None:
    adapter = PythonAdapter("tests.test_adapters:_explode")
    (answer,) = adapter.exchange([GOOD])
    assert isinstance(answer, Errored) and "ZeroDivisionError" in answer.stderr
    adapter.close()


def _explode(line: str) -> str:
    return str(1 / 0)


def test_certify_exits_2_for_an_implementation_that_cannot_start(tmp_path: object) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "certify", "--role", "compiler", "--cmd", python_module_command("tests.faulty.broken", "dead")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "smoke test failed" in proc.stderr and "cannot load model" in proc.stderr


def test_certify_reports_a_crashing_implementation_as_errored() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "certify", "--role", "compiler", "--profile", "quick", "--cmd", python_module_command("tests.faulty.broken", "crash"), "--timeout", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ERRORED" in proc.stdout and "fell over" in proc.stdout
    assert "Traceback" not in proc.stderr


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
    import time

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
