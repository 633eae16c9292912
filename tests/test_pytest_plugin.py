"""The pytest plugin as a user runs it: one item per clause, failures with a minimal request and a replay
command, errored implementations never passing, xdist and JUnit as usual."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import python_module_command

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _kit_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytester runs pytest in a scratch folder; the faulty implementations live in this repo's tests/."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def test_the_reference_compiler_passes_clause_by_clause(pytester: pytest.Pytester) -> None:
    junit = pytester.path / "codemode.xml"
    result = pytester.runpytest_subprocess(
        "--codemode-python", "reference.cli:compile_line", "--codemode-role", "compiler",
        "--codemode-examples", "40", f"--junitxml={junit}", "-p", "no:cacheprovider", "-n", "2",
    )
    result.assert_outcomes(passed=17, skipped=2)  # CLI-STREAM and CLI-BAD-RECORD need a process
    names = {case.get("name") for case in ET.parse(junit).getroot().iter("testcase")}
    assert {"JS-ORDER", "CO-VALIDATE", "PL-DETERMINISM"} <= names


def test_under_xdist_the_implementation_is_certified_once_not_once_per_worker(pytester: pytest.Pytester) -> None:
    def requests(*xdist: str) -> int:
        log = pytester.path / f"requests{len(xdist)}.log"
        result = pytester.runpytest_subprocess(
            "--codemode-cmd", python_module_command("tests.faulty.broken", f"counting={log}"),
            "--codemode-role", "compiler", "--codemode-examples", "30", "-p", "no:cacheprovider", *xdist,
        )
        result.assert_outcomes(passed=19)
        return len(log.read_text().splitlines())

    alone = requests()
    assert alone > 100 and requests("-n", "2") == alone  # the same seeded run, once, shared by both workers


def test_a_faulty_compiler_fails_its_clause_with_a_minimal_request(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--codemode-cmd", python_module_command("tests.faulty.compilers", "staggered-parallel"),
        "--codemode-role", "compiler", "--codemode-examples", "60", "-k", "JS-PARALLEL or CO-VALIDATE",
        "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*JS-PARALLEL failed on*", "*minimal request: {*", "*replay: *codemode certify*"])


def test_an_implementation_that_crashes_is_never_a_pass(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--codemode-cmd", python_module_command("tests.faulty.broken", "crash"), "--codemode-role", "compiler",
        "--codemode-examples", "20", "-k", "JS-ORDER", "-p", "no:cacheprovider",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 0 and outcomes.get("failed", 0) == 1
    result.stdout.fnmatch_lines(["*JS-ORDER errored*"])


def test_without_options_the_plugin_adds_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_mine():\n    from strategies import catalogs\n    assert catalogs()\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
