"""``CLI-STREAM`` and ``CLI-BAD-RECORD``: the protocol itself, probed on a freshly started IUT.

The kit writes a whole stream (requests of the role mixed with bad records) without reading, then reads
one line per request with a per-request time limit and stdin held open. Only then is stdin closed, and
whatever the IUT does next is watched too: more lines, a withheld line appearing late (unflushed output),
an exit status. Invalid UTF-8 and other raw bytes are written as bytes.
"""

from __future__ import annotations

import hashlib
import queue
import random
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from conformance.adapters import Errored, parse_answer
from conformance.engine import CaseResult
from reference import jsonio
from reference.violations import Violation

#: Lines that are not plan or compile requests, each with why.
BAD_RECORDS: tuple[bytes, ...] = (
    b"{",
    b"hello",
    b"[1, 2",
    b"[]",
    b"1",
    b"null",
    b'"instruction"',
    b"{}",
    b'{"instruction": "call ping"}',
    b'{"tools": []}',
    b'{"instruction": 5, "tools": []}',
    b'{"instruction": "call ping", "tools": [], "extra": 1}',
    b'{"plan": {}, "tools": [], "instruction": "x"}',
    b'{"foo": "bar"}',
    b"\xff\xfe not utf-8",
    b'{"instruction": "\xc3\x28", "tools": []}',
    b"NaN",
    b'{"instruction": "call ping", "tools": [] } trailing',
    b"\x00",
    b"   ",
)

PING_TOOLS = [{"name": "ping", "arguments": {}, "required": [], "returns": {"kind": "text"}}]


def _good(role: str, k: int) -> bytes:
    if role == "compiler" or (role == "pipeline" and k % 2):
        request: dict[str, Any] = {
            "plan": {"mode": "single", "calls": [{"tool": "ping", "args": {}}], "output": {"kind": "last"}},
            "tools": PING_TOOLS,
        }
    else:
        request = {"instruction": "call ping", "tools": PING_TOOLS}
    return jsonio.dumps(request).encode("ascii")


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamCase:
    """A stream of raw lines; ``bad`` marks the bad records."""

    lines: tuple[bytes, ...]
    bad: tuple[bool, ...]

    def request_line(self) -> str:
        return " \\n ".join(line.decode("utf-8", "backslashreplace") for line in self.lines)

    def to_json(self) -> dict[str, Any]:
        return {"stream": [line.decode("utf-8", "backslashreplace") for line in self.lines]}

    @property
    def id(self) -> str:
        return hashlib.sha256(b"\n".join(self.lines)).hexdigest()[:12]


def stream_cases(role: str, *, seed: int, count: int = 4, length: int = 24) -> list[StreamCase]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        lines, bad = [], []
        for k in range(length):
            if rng.random() < 0.4:
                lines.append(rng.choice(BAD_RECORDS))
                bad.append(True)
            else:
                lines.append(_good(role, k))
                bad.append(False)
        out.append(StreamCase(lines=tuple(lines), bad=tuple(bad)))
    # every bad record at least once, each followed by a good request
    lines, bad = [], []
    for record in BAD_RECORDS:
        lines += [record, _good(role, len(lines))]
        bad += [True, False]
    out.append(StreamCase(lines=tuple(lines), bad=tuple(bad)))
    return out


StreamResult = CaseResult  # a judged stream


def probe(command: str, case: StreamCase, *, timeout: float) -> StreamResult:
    """Run ``command`` fresh on the stream ``case`` and judge CLI-STREAM and CLI-BAD-RECORD."""
    exercised = ("CLI-STREAM", "CLI-BAD-RECORD")
    stderr = tempfile.TemporaryFile()
    try:
        proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    except OSError as err:
        return StreamResult(case=case, exercised=exercised, errored=Errored(reason=f"cannot start: {err}"))
    lines: queue.Queue[bytes | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def write() -> None:
        assert proc.stdin is not None
        try:
            for line in case.lines:
                proc.stdin.write(line + b"\n")
                proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    threading.Thread(target=read, daemon=True).start()
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    n = len(case.lines)
    got: list[bytes] = []
    eof = False
    withheld = False
    while len(got) < n:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            withheld = True
            break
        if line is None:
            eof = True
            break
        got.append(line)
    writer.join(timeout=timeout)
    try:
        assert proc.stdin is not None
        proc.stdin.close()
    except OSError:
        pass
    late: list[bytes] = []
    deadline = time.monotonic() + timeout
    while not eof and time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            eof = True
            break
        late.append(line)
    try:
        status = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        status = None
    stderr.seek(0)
    err_text = stderr.read().decode("utf-8", "replace")[-4000:]
    stderr.close()
    obs = StreamObservation(got=tuple(got), late=tuple(late), withheld=withheld, status=status, stderr=err_text,
                            timeout=timeout)
    problem = cli_stream(case, obs)
    if isinstance(problem, Errored):
        return StreamResult(case=case, exercised=exercised, errored=problem)
    if problem:
        return StreamResult(case=case, exercised=exercised, violations=tuple(problem))
    bad = cli_bad_record(case, obs)
    if isinstance(bad, Errored):
        return StreamResult(case=case, exercised=exercised, errored=bad)
    return StreamResult(case=case, exercised=exercised, violations=tuple(bad))


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamObservation:
    got: tuple[bytes, ...]  # lines read while stdin was open
    late: tuple[bytes, ...]  # lines read after stdin was closed
    withheld: bool  # the per-request time limit passed with stdin open
    status: int | None  # exit status (None: it did not exit)
    stderr: str
    timeout: float


def cli_stream(case: StreamCase, obs: StreamObservation) -> list[Violation] | Errored:
    """CLI-STREAM: "Each JSONL record is an object with:" one response line per request, in order,
    flushed, nothing else; exit 0 on EOF. Crashes and hangs are errored, not failures."""
    n = len(case.lines)
    answered = obs.got + obs.late

    def failed(message: str, expected: str | None = None, actual: str | None = None) -> list[Violation]:
        return [Violation(clause="CLI-STREAM", message=message, expected=expected, actual=actual)]

    if obs.withheld and obs.late:
        return failed(f"{len(obs.got)} of {n} responses came while stdin was open; more came only after it was"
                      " closed (output not flushed after each line)")
    if obs.status is None:
        return Errored(reason=f"answered {len(answered)} of {n} requests, then neither answered nor exited within"
                       f" {obs.timeout:g}s", stderr=obs.stderr)
    if len(answered) > n:
        return failed(f"wrote {len(answered)} lines for {n} requests", f"{n} lines",
                      answered[n].decode("utf-8", "replace")[:200])
    if len(answered) < n:
        if obs.status == 0:
            return failed(f"exited with status 0 after answering {len(answered)} of {n} requests (a response was lost)")
        return Errored(reason=f"exited with status {obs.status} after answering {len(answered)} of {n} requests",
                       stderr=obs.stderr)
    if obs.status != 0:
        return failed(f"answered every request but exited with status {obs.status} on EOF", "status 0", str(obs.status))
    return []


def cli_bad_record(case: StreamCase, obs: StreamObservation) -> list[Violation] | Errored:
    """CLI-BAD-RECORD: "Each JSONL record is an object with:" a line that is not a plan or compile
    request gets exactly a diagnostic, and the stream goes on."""
    for k, (line, is_bad) in enumerate(zip(obs.got + obs.late, case.bad)):
        answer = parse_answer(line.decode("utf-8", "surrogateescape").rstrip("\r\n"))
        if isinstance(answer, Errored):
            return Errored(reason=f"response {k + 1}: {answer.reason}", stderr=obs.stderr)
        if is_bad:
            d = answer.get("diagnostic")
            if set(answer) != {"diagnostic"} or not isinstance(d, str) or not d:
                return [Violation(
                    clause="CLI-BAD-RECORD",
                    message=f"line {k + 1} is a bad record ({case.lines[k][:60]!r}) and was not answered with a diagnostic",
                    expected='{"diagnostic": "..."}',
                    actual=jsonio.dumps(answer)[:200],
                )]
        elif "plan" not in answer and "js" not in answer:
            return [Violation(
                clause="CLI-BAD-RECORD",
                message=f"line {k + 1} is a valid request after bad records and was not answered (the stream did not go on)",
                expected='{"plan": ...} or {"js": ...}',
                actual=jsonio.dumps(answer)[:200],
            )]
    return []
