"""The kit as users get it: the built wheel, installed into a fresh virtual environment without PyTorch,
certifies a compiler from another directory, through its command and through its pytest plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _run(*args: str | Path, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    # the installed kit only: nothing of this checkout on the path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the kit's wheel and its dependencies (not torch): its bin directory."""
    work = tmp_path_factory.mktemp("install")
    dist = work / "dist"
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dist, ROOT, cwd=work)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "warning" not in (built.stdout + built.stderr).lower(), (built.stdout + built.stderr)[-3000:]
    (wheel,) = dist.glob("*.whl")
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    pip = _run(bin_dir / "python", "-m", "pip", "install", "--quiet", wheel, cwd=work)
    assert pip.returncode == 0, pip.stderr[-3000:]
    return bin_dir


def test_the_wheel_installs_without_torch(installed: Path) -> None:
    proc = _run(installed / "python", "-c", "import importlib.util; print(importlib.util.find_spec('torch'))", cwd=installed)
    assert proc.stdout.strip() == "None"


def test_the_installed_kit_certifies_a_compiler_from_another_directory(installed: Path, tmp_path: Path) -> None:
    compiler = tmp_path / "compiler.py"
    compiler.write_text("from reference.cli import compile_main\nraise SystemExit(compile_main())\n")
    proc = _run(installed / "codemode", "certify", "--role", "compiler", "--cmd", f"{installed / 'python'} compiler.py",
                "--profile", "quick", "--examples", "40", "--report", "report.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["summary"]["failed"] == report["summary"]["errored"] == 0 and report["summary"]["passed"] == 19
    # the curated corpus installed with the kit is replayed first, as in a checkout
    from conformance import corpus

    curated = len(corpus.discover(ROOT / "corpora", "compiler"))
    assert curated
    assert f"({curated} from the corpora)" in proc.stdout, proc.stdout[:600]
    record = next(c for c in report["clauses"] if c["clause"] == "JS-PARALLEL")
    assert record["rule"].startswith("In parallel mode") and record["spec"].endswith("#js-parallel")
    assert not (tmp_path / ".hypothesis").exists()


def test_the_installed_plugin_certifies_inside_pytest(installed: Path, tmp_path: Path) -> None:
    proc = _run(installed / "python", "-m", "pytest", "-p", "no:cacheprovider", "--codemode-cmd",
                f"{installed / 'codemode'} compile", "--codemode-role", "compiler", "--codemode-examples", "20",
                "-q", cwd=tmp_path)
    assert proc.returncode == 0 and "INTERNALERROR" not in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "19 passed" in proc.stdout, proc.stdout[-2000:]


def test_the_planner_needs_its_extra_and_says_so(installed: Path, tmp_path: Path) -> None:
    proc = _run(installed / "codemode", "plan", cwd=tmp_path)
    assert proc.returncode == 2 and "codemode-conformance-kit[planner]" in proc.stderr and "Traceback" not in proc.stderr


def test_http_planners_need_their_extras_and_say_so(installed: Path, tmp_path: Path) -> None:
    proc = _run(installed / "codemode", "certify", "--openai", "http://127.0.0.1:9/v1", "--model", "m", cwd=tmp_path)
    assert proc.returncode == 2 and "codemode-conformance-kit[openai]" in proc.stderr and "Traceback" not in proc.stderr
    proc = _run(installed / "codemode", "serve", "--port", "0", cwd=tmp_path)
    assert proc.returncode == 2 and "codemode-conformance-kit[serve]" in proc.stderr and "Traceback" not in proc.stderr
    # the versioned prompt ships in the wheel
    proc = _run(installed / "python", "-c", "from conformance.openai.prompt import Prompt; print(Prompt.shipped().digest)",
                cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("sha256:"), proc.stderr[-2000:]


def test_the_installed_kit_certifies_collectors_from_another_directory(installed: Path, tmp_path: Path) -> None:
    # the JavaScript reference collector as shipped in the wheel, in V8 through the shipped harness
    find = _run(installed / "python", "-c", "from importlib import resources;"
                " print(resources.files('reference').joinpath('collector.js'))", cwd=tmp_path)
    shipped = find.stdout.strip()
    assert find.returncode == 0 and Path(shipped).is_file(), find.stderr[-2000:]
    for target in (["--js-collector", shipped], ["--role", "collector", "--python", "reference.transports:prepare"]):
        proc = _run(installed / "codemode", "certify", *target, "--profile", "quick", "--examples", "40",
                    "--report", "report.json", cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["role"] == "collector" and report["summary"]["passed"] == 10
