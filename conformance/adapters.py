"""How the kit talks to an implementation under test (IUT): one ``exchange`` method, two transports.

``SubprocessAdapter`` runs a command that speaks the JSONL protocol (DESIGN §3): long-lived, requests
pipelined (a writer thread feeds stdin while answers are read), a per-request timeout, and a restart
after a crash or hang. ``PythonAdapter`` calls ``module:function`` in-process. Both turn every
misbehaviour of the IUT into an :class:`Errored` answer, never an exception.
"""

from __future__ import annotations

import importlib
import os
import queue
import signal
import subprocess
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import IO, Any, Protocol

from reference import jsonio


@dataclass(frozen=True, slots=True, kw_only=True)
class Errored:
    """The IUT did not give a usable answer: it crashed, hung, or spoke garbage."""

    reason: str
    stderr: str = ""


Answer = dict[str, Any] | Errored


class CannotStart(RuntimeError):
    """The IUT cannot be started or does not answer at all (a usage problem, exit status 2)."""


class Adapter(Protocol):
    """Sends requests and returns one answer per request, in order."""

    description: str

    def exchange(self, requests: Sequence[dict[str, Any]]) -> list[Answer]: ...

    def close(self) -> None: ...


def parse_answer(line: str) -> Answer:
    """One response line as a JSON object, or why it is garbage."""
    try:
        value = jsonio.loads(line)
    except (ValueError, RecursionError) as err:
        return Errored(reason=f"answered a line that is not JSON ({err}): {line[:200]!r}")
    if not isinstance(value, dict):
        return Errored(reason=f"answered {type(value).__name__} JSON, not an object: {line[:200]!r}")
    return value


# --- subprocess ------------------------------------------------------------------------------------

_EOF = object()


class SubprocessAdapter:
    """A long-lived IUT process; restarted after it crashes, hangs or answers out of step."""

    def __init__(self, command: str, *, timeout: float = 10.0, cwd: str | None = None) -> None:
        self.command = command
        self.description = command
        self.timeout = timeout
        self.cwd = cwd
        self.starts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[object] = queue.Queue()
        self._stderr: IO[bytes] | None = None

    # -- process lifecycle --------------------------------------------------------------------------

    def _start(self) -> subprocess.Popen[bytes]:
        self._stderr = tempfile.TemporaryFile()
        self._lines = queue.Queue()
        try:
            proc = subprocess.Popen(
                self.command,
                shell=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                cwd=self.cwd,
                start_new_session=True,
            )
        except OSError as err:
            raise CannotStart(f"{self.command!r} could not be started: {err}") from err
        self.starts += 1
        threading.Thread(target=self._read, args=(proc.stdout, self._lines), daemon=True).start()
        self._proc = proc
        return proc

    @staticmethod
    def _read(stdout: IO[bytes], lines: queue.Queue[object]) -> None:
        try:
            for raw in stdout:
                lines.put(raw)
        except (OSError, ValueError):
            pass
        lines.put(_EOF)

    def stderr_tail(self, limit: int = 2000) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass

    def close(self) -> None:
        """Close stdin (EOF ends the IUT), give it a moment to exit 0, then make sure it is gone."""
        proc = self._proc
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()

    # -- talking ------------------------------------------------------------------------------------

    def exchange(self, requests: Sequence[dict[str, Any]]) -> list[Answer]:
        """One answer per request. A crash, hang or extra line errors the rest of the batch, and the
        process is restarted for the next one."""
        return self.exchange_lines([jsonio.dumps(r) for r in requests])

    def exchange_lines(self, lines: Sequence[str]) -> list[Answer]:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            self._kill()
            proc = self._start()
        payload = b"".join(line.encode("utf-8", "surrogatepass") + b"\n" for line in lines)
        writer = threading.Thread(target=self._write, args=(proc, payload), daemon=True)
        writer.start()
        answers: list[Answer] = []
        for index in range(len(lines)):
            try:
                raw = self._lines.get(timeout=self.timeout)
            except queue.Empty:
                reason = f"no answer to request {index + 1} of {len(lines)} within {self.timeout:g}s"
                return self._fail(answers, len(lines), reason)
            if raw is _EOF:
                code = proc.wait(timeout=5) if proc.poll() is None else proc.returncode
                reason = f"exited with status {code} before answering request {index + 1} of {len(lines)}"
                return self._fail(answers, len(lines), reason)
            assert isinstance(raw, bytes)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                answers.append(Errored(reason=f"answered a line that is not UTF-8 (byte {err.start})"))
                continue
            answers.append(parse_answer(text.rstrip("\r\n")))
        writer.join(timeout=self.timeout)
        extra = self._extra_line()
        if extra is not None:
            reason = f"answered more lines than requests (an extra line: {extra[:120]!r})"
            return self._fail([], len(lines), reason)
        return answers

    def _extra_line(self) -> str | None:
        try:
            raw = self._lines.get_nowait()
        except queue.Empty:
            return None
        if raw is _EOF:
            self._lines.put(_EOF)
            return None
        assert isinstance(raw, bytes)
        return raw.decode("utf-8", "replace")

    def _fail(self, answers: list[Answer], total: int, reason: str) -> list[Answer]:
        self._kill()
        stderr = self.stderr_tail()
        return answers + [Errored(reason=reason, stderr=stderr)] * (total - len(answers))

    @staticmethod
    def _write(proc: subprocess.Popen[bytes], payload: bytes) -> None:
        try:
            assert proc.stdin is not None
            proc.stdin.write(payload)
            proc.stdin.flush()
        except (OSError, ValueError):
            pass  # the reader sees EOF and reports the crash


# --- in-process ------------------------------------------------------------------------------------


class PythonAdapter:
    """Calls ``module:function`` with each request line (``str``); it returns the response line or a
    ``dict``. An exception, a hang past ``timeout`` or a non-JSON answer is errored.

    A function may also offer a batch form as its ``many`` attribute: a list of request lines in, a
    list of answers (lines or dicts) out, in order. The adapter then sends whole batches through it; a
    batch of n lines has n times ``timeout`` (the budget of n answers, as it cannot be watched line by
    line), and a batch that raises, runs past that or answers the wrong number of times is sent again
    one line at a time, so each line gets its own answer or its own error."""

    def __init__(self, target: str, *, timeout: float = 10.0) -> None:
        self.description = f"--python {target}"
        self.timeout = timeout
        module_name, sep, attr = target.partition(":")
        if not sep or not module_name or not attr:
            raise CannotStart(f"{target!r} is not module:function")
        try:
            module = importlib.import_module(module_name)
            function = getattr(module, attr)
        except (ImportError, AttributeError) as err:
            raise CannotStart(f"{target!r} cannot be imported: {err}") from err
        if not callable(function):
            raise CannotStart(f"{target!r} is not callable")
        self.function: Callable[[str], Any] = function
        many = getattr(function, "many", None)
        self.many: Callable[[list[str]], Any] | None = many if callable(many) else None
        self._pool = ThreadPoolExecutor(max_workers=1)

    @classmethod
    def of(cls, function: Callable[[str], Any], description: str, *, timeout: float = 10.0) -> PythonAdapter:
        """An adapter around a function object (for tests and embedding)."""
        self = cls.__new__(cls)
        self.description = description
        self.timeout = timeout
        self.function = function
        many = getattr(function, "many", None)
        self.many = many if callable(many) else None
        self._pool = ThreadPoolExecutor(max_workers=1)
        return self

    def exchange(self, requests: Sequence[dict[str, Any]]) -> list[Answer]:
        return self.exchange_lines([jsonio.dumps(r) for r in requests])

    def exchange_lines(self, lines: Sequence[str]) -> list[Answer]:
        if self.many is not None and len(lines) > 1:
            results = self._call(self.many, list(lines), timeout=self.timeout * len(lines))
            if isinstance(results, list) and len(results) == len(lines):
                return [self._answer(result) for result in results]
        return [self._one(line) for line in lines]

    def _one(self, line: str) -> Answer:
        result = self._call(self.function, line)
        return result if isinstance(result, Errored) else self._answer(result)

    def _call(self, function: Callable[[Any], Any], argument: Any, *, timeout: float | None = None) -> Any:
        """``function(argument)`` on the worker thread, or why it gave nothing."""
        timeout = self.timeout if timeout is None else timeout
        future = self._pool.submit(function, argument)
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = ThreadPoolExecutor(max_workers=1)  # the hung call keeps its thread
            return Errored(reason=f"no answer within {timeout:g}s")
        except Exception:
            return Errored(reason="raised an exception", stderr=traceback.format_exc(limit=8))

    @staticmethod
    def _answer(result: Any) -> Answer:
        if isinstance(result, str):
            return parse_answer(result)
        if isinstance(result, dict):
            try:
                return parse_answer(jsonio.dumps(result))
            except (TypeError, ValueError) as err:
                return Errored(reason=f"returned a dict that is not JSON: {err}")
        return Errored(reason=f"returned {type(result).__name__}, not a response line or dict")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def make_adapter(*, command: str | None = None, python: str | None = None, timeout: float = 10.0) -> Adapter:
    if (command is None) == (python is None):
        raise CannotStart("give exactly one of --cmd and --python")
    if command is not None:
        return SubprocessAdapter(command, timeout=timeout)
    assert python is not None
    return PythonAdapter(python, timeout=timeout)
