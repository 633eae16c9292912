"""How the kit talks to an implementation under test (IUT): one ``exchange`` method, two transports.

``SubprocessAdapter`` runs a command that speaks the JSONL protocol (DESIGN §3): long-lived, requests
pipelined (a writer thread feeds stdin while answers are read), a per-request timeout, a fence that
proves every answer of an exchange belongs to its request, and a restart after a crash, a hang or an
answer out of step. ``PythonAdapter`` calls ``module:function`` in-process. Both turn every
misbehaviour of the IUT into an :class:`Errored` answer, never an exception.
"""

from __future__ import annotations

import importlib
import secrets
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import IO, Any, Protocol

from conformance.process import MAX_LINE_BYTES, CannotStart, IUTProcess, Overlong, _EOF, exit_said
from reference import jsonio

__all__ = ["Adapter", "Answer", "CannotStart", "Errored", "PythonAdapter", "SubprocessAdapter", "make_adapter",
           "parse_answer"]

#: the most answer text one exchange may bring back (hundreds of requests, each at most MAX_LINE_BYTES)
MAX_EXCHANGE_BYTES = 256 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Errored:
    """The IUT did not give a usable answer: it crashed, hung, or spoke garbage."""

    reason: str
    stderr: str = ""
    #: the class of an HTTP planner's condition (``refused``, ``unavailable``, …: see
    #: ``conformance.openai.driver.CONDITIONS``); None for a command's or a function's failure
    condition: str | None = None
    #: an answer that came, in an exchange whose closing request was never answered (a crash or hang after
    #: it): it cannot be told to be its own request's answer, so it is not judged; a report names the
    #: request that went unanswered before it names such a case
    unmatched: bool = False


Answer = dict[str, Any] | Errored


class Adapter(Protocol):
    """Sends requests and returns one answer per request, in order."""

    description: str

    def exchange(self, requests: Sequence[dict[str, Any]]) -> list[Answer]: ...

    def close(self) -> None: ...


def parse_answer(line: str | bytes) -> Answer:
    """One response line (a final CR is allowed) as a JSON object, or why it is garbage."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as err:
            return Errored(reason=f"answered a line that is not UTF-8 (byte {err.start})")
    line = line.removesuffix("\r")
    try:
        value = jsonio.loads(line)
    except RecursionError:
        return Errored(reason="answered a line nested deeper than the kit's JSON reader follows (about a thousand"
                       f" levels): {line[:200]!r}")
    except ValueError as err:
        return Errored(reason=f"answered a line that is not JSON ({err}): {line[:200]!r}")
    if not isinstance(value, dict):
        return Errored(reason=f"answered {type(value).__name__} JSON, not an object: {line[:200]!r}")
    return value


# --- subprocess ------------------------------------------------------------------------------------


FENCE_TOOLS = [{"name": "codemode_fence", "arguments": {"nonce": "string"}, "required": ["nonce"],
                "returns": {"kind": "text"}}]


def fence_plan(nonce: str) -> dict[str, Any]:
    return {"mode": "single", "calls": [{"tool": "codemode_fence", "args": {"nonce": nonce}}], "output": {"kind": "last"}}


def _fence_request(kind: str, nonce: str) -> dict[str, Any]:
    if kind == "plan":
        return {"instruction": f'call codemode_fence with nonce "{nonce}"', "tools": FENCE_TOOLS}
    if kind == "collect":
        fragment = {"index": 0, "name": "codemode_fence", "arguments": jsonio.dumps({"nonce": nonce})}
        return {"collect": {"tools": FENCE_TOOLS, "fragments": [fragment], "maxOutputChars": None}}
    return {"plan": fence_plan(nonce), "tools": FENCE_TOOLS}


#: whether a js is the compiled fence plan of a nonce (it calls codemode_fence with exactly that value):
#: for a compiler whose js never spells its string values; set by a judge that can run js
FenceCheck = Callable[[str, str], bool]


class SubprocessAdapter:
    """A long-lived IUT process (see :class:`conformance.process.IUTProcess`); restarted after it crashes,
    hangs or answers out of step.

    Every exchange ends with a *fence*: one more request, of the role's kind, carrying a fresh nonce in a
    quoted value. Its answer is read like the others, and must be the fence's own: its text holds the
    nonce, or (for a compiler whose js spells no string value) ``fence_check`` finds that its js calls
    the fence's tool with exactly the nonce. Then every line before it answered its own request. An
    answer that is not the fence's means the command wrote more or fewer lines than requests (or
    answered the kit's own request wrongly): no answer of the exchange can be matched to its request, so
    all are errored and the run reports the stream fault. A diagnostic to a planner's fence cannot be
    told from another diagnostic; then the adapter waits a moment for a line more, which would mean more
    lines than requests. A line that comes later still is found before the next exchange is written, and
    reported the same way. An exchange whose fence is never answered (a crash, hang or closed stdout first)
    is errored whole: nothing shows the answers that came before to be in step."""

    def __init__(self, command: str, *, timeout: float = 10.0, cwd: str | None = None, fence: str = "compile") -> None:
        self.command = command
        self.description = command
        self.timeout = timeout
        self.cwd = cwd
        self.fence = fence  # "compile", "plan" or "collect": the kind of request the role's IUT answers
        self.starts = 0
        #: stream faults seen while exchanging: (the request lines of the exchange, what went wrong, the kind
        #: of CLI-STREAM violation: "extra-lines", or "lost" for an exit with status 0 before every answer)
        self.faults: list[tuple[tuple[str, ...], str, str]] = []
        self._proc: IUTProcess | None = None
        self._fence_seconds = 0.0  # the slowest fence answer seen: how long a line more may take to come
        self._last: tuple[str, ...] = ()
        self._sent = 0  # the requests the running process was sent before this exchange's (closing ones too)
        self.fence_check: FenceCheck | None = None

    def _start(self) -> IUTProcess:
        proc = IUTProcess(self.command, cwd=self.cwd)
        self.starts += 1
        self._sent = 0
        self._proc = proc
        return proc

    def stderr_tail(self, limit: int = 2000) -> str:
        return self._proc.stderr_tail(limit) if self._proc is not None else ""

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()

    def close(self) -> None:
        """Close stdin (EOF ends the IUT), give it a moment to exit, then make sure it and its children are
        gone; a line it wrote after its last answer is a stream fault too."""
        proc = self._proc
        if proc is not None:
            proc.close_stdin()
            proc.wait(2)
            late = proc.lines.get(0)
            if isinstance(late, (bytes, Overlong)):
                self._fault(self._last, f"wrote a line after its last answer: {_show(late)}")
        self._kill()

    def _fault(self, lines: Sequence[str], what: str, kind: str = "extra-lines") -> None:
        self.faults.append((tuple(lines), what, kind))

    # -- talking ------------------------------------------------------------------------------------

    def exchange(self, requests: Sequence[dict[str, Any]]) -> list[Answer]:
        """One answer per request. A garbage line errors its own request; a crash or hang errors the whole
        batch (the rest for what happened, the answers before as unmatched), as does an extra line, and the
        process is restarted for the next one."""
        return self.exchange_lines([jsonio.dumps(r) for r in requests])

    def exchange_lines(self, lines: Sequence[str]) -> list[Answer]:
        if not lines:
            return []
        proc = self._proc
        if proc is not None:
            stale = proc.lines.get(0)
            if isinstance(stale, (bytes, Overlong)):  # a line the last exchange did not ask for
                self._fault(self._last, f"wrote more lines than requests (a line after the last answer: {_show(stale)})")
                self._kill()
                proc = None
            elif stale is not None:
                proc.lines.unget(stale)
        if proc is None or proc.poll() is not None:
            self._kill()
            proc = self._start()
        self._last = tuple(lines)
        before, self._sent = self._sent, self._sent + len(lines) + 1
        nonce = "f" + secrets.token_hex(8)
        fence = jsonio.dumps(_fence_request(self.fence, nonce))
        payload = b"".join(line.encode("utf-8", "surrogatepass") + b"\n" for line in (*lines, fence))
        proc.write(payload)
        answers: list[Answer] = []
        total = 0
        last = time.monotonic()
        for index in range(len(lines) + 1):
            item = proc.lines.get(self.timeout)
            what = "the kit's closing request" if index == len(lines) else f"request {index + 1} of {len(lines)}"
            if item is None:
                return self._fail(answers, len(lines), f"no answer to {what} within {self.timeout:g}s")
            if isinstance(item, _EOF):
                status = proc.wait(0.5)
                if status is None:
                    reason = f"closed its stdout before answering {what}, and kept running"
                else:
                    reason = f"{exit_said(status)} before answering {what}"
                    if status == 0:  # a stream fault (CLI-STREAM), not only a crash: nothing said it failed
                        self._fault(lines, reason + " of this exchange" + (
                            f", after {before} earlier requests to the same process (a replay of this exchange"
                            " alone, on a new process, may not show it)" if before else ""), kind="lost")
                return self._fail(answers, len(lines), reason)
            if index == len(lines):
                self._fence_seconds = max(self._fence_seconds, time.monotonic() - last)
                verdict = self._fence_answer(item, nonce)
                if verdict == "unsure":
                    extra = proc.lines.get(min(2.0, max(0.05, 3 * self._fence_seconds)))
                    if isinstance(extra, (bytes, Overlong)):
                        self._fault(lines, f"wrote more lines than requests (a line more: {_show(extra)})")
                        return self._fail([], len(lines), "wrote more lines than requests, so no answer of this"
                                          f" exchange can be matched to its request (a line more: {_show(extra)})")
                    if isinstance(extra, _EOF):
                        proc.lines.unget(extra)
                elif verdict != "fence":
                    what = (f"answered the kit's closing request (a valid {self.fence} request for codemode_fence with"
                            f" the value {nonce!r}) with {_show(item)}, which is not its answer")
                    self._fault(lines, what + ": its answers were out of step with their requests")
                    return self._fail([], len(lines), what + ", so no answer of this exchange can be trusted to"
                                      " belong to its request")
                break
            last = time.monotonic()
            if isinstance(item, Overlong):
                answers.append(Errored(reason=f"answered a line of {item.size} bytes, over the {MAX_LINE_BYTES}-byte"
                                       " limit of a response"))
                continue
            total += len(item)
            if total > MAX_EXCHANGE_BYTES:
                return self._fail(answers, len(lines), f"answered more than {MAX_EXCHANGE_BYTES >> 20} MiB to"
                                  f" {len(lines)} requests")
            answers.append(parse_answer(item))
        return answers

    def _fence_answer(self, item: object, nonce: str) -> str:
        """``fence`` when ``item`` is the fence's own answer, ``unsure`` when it cannot be told (a
        diagnostic to a planner's fence), ``other`` when it is not."""
        if isinstance(item, bytes) and nonce.encode() in item:
            return "fence"
        answer = parse_answer(item) if isinstance(item, bytes) else None
        if not isinstance(answer, dict):
            return "other"
        if self.fence == "collect":
            result = answer.get("result")
            call = result.get("call") if isinstance(result, dict) else None
            args = call.get("args") if isinstance(call, dict) else None
            return "fence" if isinstance(args, dict) and args.get("nonce") == nonce else "other"
        if self.fence == "plan":
            if set(answer) == {"diagnostic"}:
                return "unsure"
            plan = answer.get("plan")
            calls = plan.get("calls") if isinstance(plan, dict) else None
            first = calls[0] if isinstance(calls, list) and calls else None
            args = first.get("args") if isinstance(first, dict) else None
            return "fence" if isinstance(args, dict) and args.get("nonce") == nonce else "other"
        js = answer.get("js")
        if set(answer) == {"js"} and isinstance(js, str):
            if self.fence_check is None:  # nothing here can run js yet (the smoke stage): a line more tells
                return "unsure"
            return "fence" if self.fence_check(nonce, js) else "other"
        return "other"

    def _fail(self, answers: list[Answer], total: int, reason: str) -> list[Answer]:
        """Every request of an exchange errored: the unanswered ones for ``reason``; those answered before
        (``answers``) because the exchange was never closed, so their lines cannot be told to be in step
        (an IUT that answers out of order and then crashes or hangs)."""
        stderr = self.stderr_tail()
        self._kill()
        unmatched = Errored(reason=f"{reason}; this answer came before that, but the exchange was never closed by"
                            " the answer to the kit's closing request, so it cannot be matched to its request",
                            stderr=stderr, unmatched=True)
        return [unmatched] * len(answers) + [Errored(reason=reason, stderr=stderr)] * (total - len(answers))


def _show(item: object) -> str:
    if isinstance(item, Overlong):
        return f"a line of {item.size} bytes"
    assert isinstance(item, bytes)
    return repr(item[:120].decode("utf-8", "backslashreplace"))


# --- in-process ------------------------------------------------------------------------------------


def load_function(target: str) -> Callable[..., Any]:
    """The callable ``module:function`` names (``CannotStart`` saying why when there is none)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise CannotStart(f"{target!r} is not module:function")
    try:
        function = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise CannotStart(f"{target!r} cannot be imported: {err}") from err
    if not callable(function):
        raise CannotStart(f"{target!r} is not callable")
    return function


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
        function = load_function(target)
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


def make_adapter(*, command: str | None = None, python: str | None = None, timeout: float = 10.0,
                 role: str = "compiler", cwd: str | None = None) -> Adapter:
    if (command is None) == (python is None):
        raise CannotStart("give exactly one of --cmd and --python")
    if command is not None:
        return SubprocessAdapter(command, timeout=timeout, cwd=cwd, fence="plan" if role == "planner" else "compile")
    assert python is not None
    return PythonAdapter(python, timeout=timeout)
