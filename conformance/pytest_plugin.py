"""The pytest plugin (entry point ``pytest11``: ``codemode``): certification inside your own pytest.

    pytest --codemode-cmd './my-planner --jsonl' --codemode-role pipeline -n auto --junitxml=codemode.xml

adds one test item per clause of the role, ``codemode::<CLAUSE>``: it passes when the clause passed, fails
with the minimal request (one JSONL line) and the command that replays it, fails when the implementation
errored (crashed, hung, answered garbage: never a pass), and is skipped when the clause was not judged.
The certification runs once per session: under xdist the first worker that needs a verdict certifies and
shares the report through a file; the others wait for it (the implementation is not asked everything once
per worker, which matters when every answer costs money). The per-clause work (finding a minimal case)
is what xdist spreads.
``-k``, ``--junitxml``, ``-x`` and the rest of pytest work as usual.

The public strategies (``strategies``: catalogs, plans, behaviours, instructions...) are importable for
your own property tests.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest

ROLES = ("compiler", "planner", "pipeline")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("codemode", "Codemode conformance certification")
    group.addoption("--codemode-cmd", default=None, help="the command of the implementation under test")
    group.addoption("--codemode-python", default=None, metavar="MODULE:FUNCTION",
                    help="an in-process implementation: request line in, response line out")
    group.addoption("--codemode-role", default="pipeline", choices=(*ROLES, "collector"))
    group.addoption("--codemode-profile", default="quick", choices=("quick", "standard", "deep"))
    group.addoption("--codemode-seed", type=int, default=0)
    group.addoption("--codemode-examples", type=int, default=None, help="override the profile's example count")
    group.addoption("--codemode-tokenizer", default="reference", choices=("reference", "own"))
    group.addoption("--codemode-timeout", type=float, default=10.0, help="seconds to wait for each answer")
    group.addoption("--codemode-cwd", default=None, metavar="DIR",
                    help="where the command runs (default: the directory pytest was started in)")
    # a fuzzing campaign's worker side (``codemode fuzz`` runs pytest with these; see conformance.fuzz)
    group.addoption("--codemode-fuzz", default=None, metavar="DIR", help=argparse_suppress())
    group.addoption("--codemode-fuzz-deadline", type=float, default=0.0, help=argparse_suppress())
    group.addoption("--codemode-fuzz-regressions", default="corpora/regressions", help=argparse_suppress())
    group.addoption("--codemode-fuzz-db", default=None, help=argparse_suppress())
    group.addoption("--codemode-fuzz-workers", type=int, default=1, help=argparse_suppress())
    group.addoption("--codemode-fuzz-hypothesis-share", type=float, default=0.1, help=argparse_suppress())


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("codemode_cmd") or config.getoption("codemode_python"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _enabled(config):
        return
    from conformance.registry import role_clauses

    collector = CodemodeCollector.from_parent(session, name="codemode")
    if config.getoption("codemode_fuzz"):
        items.append(FuzzItem.from_parent(collector, name="fuzz"))  # run on every worker (--dist each)
        return
    for cid in role_clauses(config.getoption("codemode_role")):
        items.append(ClauseItem.from_parent(collector, name=cid, clause=cid))


class CodemodeCollector(pytest.Collector):
    def collect(self) -> list[Any]:  # the items are made by pytest_collection_modifyitems
        return []


class ClauseFailed(Exception):
    pass


class ClauseItem(pytest.Item):
    def __init__(self, *, clause: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.clause = clause
        self.add_marker(pytest.mark.codemode)

    def runtest(self) -> None:
        state = _state(self.config)
        status, message = state.verdict(self.clause)
        if status == "skipped":
            pytest.skip(message)
        if status != "passed":
            raise ClauseFailed(message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ClauseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"codemode {self.clause}"


class FuzzItem(pytest.Item):
    """One worker's share of a fuzzing campaign (``codemode fuzz``); it fails only if the worker could
    not do its share (found bugs are the campaign's result, written as regression files)."""

    def runtest(self) -> None:
        from pathlib import Path

        from conformance.fuzz import WorkerOptions, work

        config = self.config
        worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
        status = work(
            WorkerOptions(
                campaign=Path(config.getoption("codemode_fuzz")),
                role=config.getoption("codemode_role"),
                command=config.getoption("codemode_cmd"),
                python=config.getoption("codemode_python"),
                deadline=config.getoption("codemode_fuzz_deadline"),
                seed=config.getoption("codemode_seed"),
                db=config.getoption("codemode_fuzz_db"),
                regressions=Path(config.getoption("codemode_fuzz_regressions")),
                timeout=config.getoption("codemode_timeout"),
                tokenizer=config.getoption("codemode_tokenizer"),
                hypothesis_share=config.getoption("codemode_fuzz_hypothesis_share"),
                cwd=config.getoption("codemode_cwd"),
            ),
            int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0,
        )
        if status["errors"]:
            raise ClauseFailed("the fuzzing worker stopped early: " + "; ".join(status["errors"]))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ClauseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, "codemode fuzz"


class _State:
    """One certification per pytest process, made on first use; minimal cases found per failed clause."""

    def __init__(self, config: pytest.Config) -> None:
        from conformance.adapters import make_adapter
        from conformance.search import PROFILES
        from conformance.v8host import V8Host

        self.role = config.getoption("codemode_role")
        self.command = config.getoption("codemode_cmd")
        self.python = config.getoption("codemode_python")
        self.timeout = config.getoption("codemode_timeout")
        self.tokenizer = config.getoption("codemode_tokenizer")
        self.seed = config.getoption("codemode_seed")
        profile = PROFILES[config.getoption("codemode_profile")]
        if config.getoption("codemode_examples"):
            profile = dataclasses.replace(profile, examples=config.getoption("codemode_examples"))
        self.profile = profile
        self.target = f"--cmd {_quote(self.command)}" if self.command else f"--python {self.python}"
        self.cwd = config.getoption("codemode_cwd") or str(config.invocation_params.dir)
        self.host = V8Host()
        self.adapter = self.fresh()
        self._run: Any = None
        self._report: dict[str, Any] | None = None
        # under xdist, the folder the controller made for the session's one report (see pytest_configure);
        # a remote worker (``--tx ssh=...``) does not see it and certifies on its own
        shared = getattr(config, "workerinput", {}).get("codemode_shared")
        self.shared: str | None = shared if shared and os.path.isdir(shared) else None

    def close(self) -> None:
        self.adapter.close()
        self.host.close()

    def fresh(self) -> Any:
        from conformance.adapters import make_adapter

        if self.role == "collector":
            from conformance.collect import CollectorAdapter, StdioCollectorAdapter

            if self.command:
                return StdioCollectorAdapter(self.command, timeout=self.timeout, cwd=self.cwd)
            return CollectorAdapter(str(self.python), timeout=self.timeout)
        return make_adapter(command=self.command, python=self.python, timeout=self.timeout, role=self.role,
                            cwd=self.cwd)

    def report(self) -> dict[str, Any]:
        if self._report is None:
            self._report = self._shared(self.shared) if self.shared else self._certify()
        if "smoke" in self._report:
            raise pytest.UsageError(f"codemode: smoke test failed, nothing was certified: {self._report['smoke']}")
        return self._report

    def _certify(self) -> dict[str, Any]:
        from conformance.certify import certify_role
        from conformance.cli import smoke
        from conformance.report import json_report

        problem = smoke(self.adapter, self.role) if self.role != "collector" else None
        if problem is not None:
            return {"smoke": problem[0]}
        self._run = certify_role(
            self.role, self.adapter, self.host, profile=self.profile, seed_value=self.seed,
            command=self.command, cwd=self.cwd, fresh=self.fresh if self.command else None, timeout=self.timeout,
            tokenizer=self.tokenizer, shrink=False,
        )
        return json_report(self._run, implementation=self.adapter.description, target=self.target)

    def _shared(self, folder: str) -> dict[str, Any]:
        """The session's one report: made by whichever worker takes the lock first, read by the rest."""
        import fcntl
        import json
        from pathlib import Path

        path = Path(folder) / "report.json"
        with open(Path(folder) / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes (or the worker dies)
            if path.exists():
                return json.loads(path.read_text(encoding="utf-8"))
            report = self._certify()
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(report), encoding="utf-8")
            os.replace(tmp, path)
            return report

    def verdict(self, clause: str) -> tuple[str, str]:
        record = next(r for r in self.report()["clauses"] if r["clause"] == clause)
        status = record["status"]
        if status == "skipped":
            return status, record.get("reason", "not judged in this run")
        if status == "passed":
            return status, ""
        lines = [f"{clause} {status} on {record['failed'] or record['errored']} of {record['cases']} cases: {record['summary']}"]
        for metric, m in record.get("metrics", {}).items():
            if isinstance(m, dict) and "meets" in m:
                lines.append(f"  {metric}: {m['rate']} ({m['bound']} {m['threshold']})"
                             + ("" if m["meets"] else "  <-- misses it"))
        minimal = self._minimal(clause) if status == "failed" and record["kind"] == "hard" else None
        if minimal is not None or "counterexample" in record:
            from conformance.report import replay_command

            case, violation = minimal if minimal is not None else (None, None)
            if case is None:
                cx = record["counterexample"]
                lines += [f"  {cx['message']}", f"  request: {cx['request']}", f"  replay: {cx['replay']}"]
            else:
                lines += [f"  {violation.message}", f"  minimal request: {case.request_line()}",
                          f"  replay: {replay_command(self.target, self.role, case.to_json())}"]
        if "error" in record:
            lines += [f"  errored: {record['error']['reason']}", f"  request: {record['error']['request']}"]
        return status, "\n".join(lines)

    def _minimal(self, clause: str) -> Any:
        from conformance.certify import UNHUNTED, hunt_compile, hunt_plan
        from conformance.engine import CompilerJudge
        from conformance.plan_engine import PlannerJudge
        from conformance.registry import clause as clause_of

        if clause in UNHUNTED:
            return None
        found = None
        if clause_of(clause).subject == "compile" and self.role != "planner":
            found = hunt_compile(CompilerJudge(self.adapter, self.host), clause, profile=self.profile, seed_value=self.seed)
            if found is None and self.role == "compiler":
                return None
        if found is None:
            judge = PlannerJudge(self.adapter, self.host, role=self.role, tokenizer=self.tokenizer)
            found = hunt_plan(judge, clause, profile=self.profile, seed_value=self.seed)
        return None if found is None else (found.case, found.violation)


def _state(config: pytest.Config) -> _State:
    state = getattr(config, "_codemode_state", None)
    if state is None:
        state = _State(config)
        config._codemode_state = state  # type: ignore[attr-defined]
        config.add_cleanup(state.close)
    return state


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "codemode: a clause of the codemode conformance certification")
    distributed = config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None)
    if _enabled(config) and distributed and not hasattr(config, "workerinput") and not config.getoption("codemode_fuzz"):
        try:
            import fcntl  # noqa: F401 - the report is shared under a POSIX file lock
        except ImportError:  # pragma: no cover - elsewhere every worker certifies on its own
            return
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="codemode-pytest-")
        config._codemode_shared = folder  # type: ignore[attr-defined]
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist (controller side): tell each worker where the session's one report is shared."""
    folder = getattr(node.config, "_codemode_shared", None)
    if folder is not None:
        node.workerinput["codemode_shared"] = folder


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
