from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Several xdist workers share the machine's cores: one OpenMP thread each (and in every process they
    # start), or their spinning threads starve one another and PyTorch runs many times slower.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)

settings.register_profile(
    "kit", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("kit")


def python_module_command(module: str, *args: str) -> str:
    """A shell command running ``python -m module args`` with this interpreter, from the repo root."""
    import shlex

    return " ".join(shlex.quote(a) for a in (sys.executable, "-m", module, *args))


@pytest.fixture(autouse=True)
def _repo_root_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
