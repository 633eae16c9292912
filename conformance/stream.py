"""Stream cases: the protocol itself (``CLI-STREAM``, ``CLI-BAD-RECORD``), probed on a freshly started IUT.

The kit writes a whole stream (requests of the role mixed with bad records) without reading, then reads
one line per request with a per-request time limit and stdin held open. Only then is stdin closed, and
whatever the IUT does next is watched too: more lines, a withheld line appearing late (unflushed output),
an exit status. Invalid UTF-8 and other raw bytes are written as bytes. The IUT is then killed with every
process it started. The checks are in ``conformance.checks.stream``; a crash, a hang or a garbage line is
errored here, never judged.
"""

from __future__ import annotations

import base64
import hashlib
import random
import time
from dataclasses import dataclass
from typing import Any

from conformance.adapters import Errored, parse_answer
from conformance.observations import StreamObservation
from conformance.process import EOF, MAX_LINE_BYTES, CannotStart, IUTProcess, Overlong, exit_said
from conformance.registry import judge
from conformance.results import CaseResult
from reference import jsonio

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
    """A stream of raw lines; ``bad`` marks the bad records. In JSON a line is a string, or
    ``{"base64": ...}`` when it is not UTF-8."""

    lines: tuple[bytes, ...]
    bad: tuple[bool, ...]

    def request_line(self) -> str:
        return " \\n ".join(line.decode("utf-8", "backslashreplace") for line in self.lines)

    def to_json(self) -> dict[str, Any]:
        out: list[Any] = []
        for line in self.lines:
            try:
                out.append(line.decode("utf-8"))
            except UnicodeDecodeError:
                out.append({"base64": base64.b64encode(line).decode("ascii")})
        return {"stream": out, "bad": list(self.bad)}

    @classmethod
    def from_json(cls, raw: Any) -> StreamCase:
        if not isinstance(raw, dict) or set(raw) != {"stream", "bad"} or not isinstance(raw["stream"], list) \
                or not isinstance(raw["bad"], list) or len(raw["stream"]) != len(raw["bad"]):
            raise ValueError("a stream case is an object with stream (its lines) and bad (which are bad records)")
        lines = []
        for line in raw["stream"]:
            if isinstance(line, str):
                lines.append(line.encode("utf-8", "surrogatepass"))
            elif isinstance(line, dict) and set(line) == {"base64"} and isinstance(line["base64"], str):
                lines.append(base64.b64decode(line["base64"]))
            else:
                raise ValueError("a stream line is a string or {\"base64\": ...}")
        if any(b"\n" in line for line in lines):
            raise ValueError("a stream line holds no line feed")
        return cls(lines=tuple(lines), bad=tuple(bool(b) for b in raw["bad"]))

    @property
    def id(self) -> str:
        return hashlib.sha256(b"\n".join(self.lines)).hexdigest()[:12]


def stream_cases(role: str, *, seed: int, count: int = 4, length: int = 24) -> list[StreamCase]:
    """Streams of good requests of the role mixed with bad records; each starts with a good request, so
    that request's answer before any bad record is known (CLI-BAD-RECORD compares the later ones to it)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        lines, bad = [_good(role, 0)], [False]
        for k in range(1, length):
            if rng.random() < 0.4:
                lines.append(rng.choice(BAD_RECORDS))
                bad.append(True)
            else:
                lines.append(_good(role, k))
                bad.append(False)
        out.append(StreamCase(lines=tuple(lines), bad=tuple(bad)))
    # every bad record at least once, each followed by a good request
    lines, bad = [_good(role, 0), _good(role, 1)], [False, False]
    for record in BAD_RECORDS:
        lines += [record, _good(role, len(lines))]
        bad += [True, False]
    out.append(StreamCase(lines=tuple(lines), bad=tuple(bad)))
    return out


def parse_line(raw: bytes) -> dict[str, Any]:
    """A response line already known to be a JSON object."""
    answer = parse_answer(raw)
    assert isinstance(answer, dict)
    return answer


def probe(command: str, case: StreamCase, *, timeout: float, cwd: str | None = None) -> CaseResult:
    """Run ``command`` fresh on the stream ``case``, then judge the Stream clauses on what it wrote."""
    try:
        proc = IUTProcess(command, cwd=cwd)
    except CannotStart as err:
        return _result(StreamObservation(case=case, answer=None), Errored(reason=str(err)))
    try:
        proc.write(b"".join(line + b"\n" for line in case.lines))
        n = len(case.lines)
        # one line per request with stdin held open, each within the per-request limit; then, stdin closed,
        # whatever else comes within one more limit
        got, ended, overlong = _lines(proc, n, lambda: timeout)
        withheld = len(got) < n and not ended
        proc.close_stdin()
        late: list[bytes] = []
        deadline = time.monotonic() + timeout
        if not ended:
            late, ended, more = _lines(proc, n + 1, lambda: deadline - time.monotonic())
            overlong = overlong or ((more[0] + len(got), more[1]) if more else None)
        status = proc.wait(max(0.1, deadline - time.monotonic()))
        stderr = proc.stderr_tail()
    finally:
        proc.kill()
    obs = StreamObservation(case=case, answer={"lines": len(got) + len(late)}, got=tuple(got), late=tuple(late),
                            withheld=withheld, status=status, stderr=stderr, timeout=timeout)
    errored = stream_errored(obs, overlong)
    if overlong is not None and errored is None:
        errored = _overlong(overlong, stderr)
    return _result(obs, errored)


def _overlong(overlong: tuple[int, Overlong], stderr: str) -> Errored:
    """The stream's line at ``overlong[0]`` was over the limit of a response: errored, and said so."""
    k, line = overlong
    return Errored(reason=f"response {k + 1}: a line of {line.size} bytes, over the {MAX_LINE_BYTES}-byte limit of a"
                   " response", stderr=stderr)


def _lines(proc: IUTProcess, most: int, wait: Any) -> tuple[list[bytes], bool, tuple[int, Overlong] | None]:
    """Up to ``most`` stdout lines, each within ``wait()`` seconds: the lines (an overlong one counts as an
    empty line), whether stdout ended, and the first overlong line with its place among the lines."""
    out: list[bytes] = []
    overlong = None
    while len(out) < most:
        seconds = wait()
        line = proc.lines.get(max(0.01, seconds)) if seconds > 0 else None
        if line is None:
            return out, False, overlong
        if line is EOF:
            return out, True, overlong
        if isinstance(line, Overlong):
            overlong = overlong or (len(out), line)
            line = b""
        out.append(line)  # type: ignore[arg-type]
    return out, False, overlong


def stream_errored(obs: StreamObservation, overlong: tuple[int, Overlong] | None = None) -> Errored | None:
    """Why the stream cannot be judged (it hung, crashed, or answered garbage, or a line over the limit of a
    response: ``overlong``, its place among the lines and what came), or None."""
    n = len(obs.case.lines)
    answered = obs.got + obs.late
    if obs.withheld and obs.late:
        return None  # unflushed output: CLI-STREAM's to judge
    if obs.status is None:
        return Errored(reason=f"answered {len(answered)} of {n} requests, then neither answered nor exited within"
                       f" {obs.timeout:g}s", stderr=obs.stderr)
    if len(answered) < n and obs.status != 0:
        return Errored(reason=f"{exit_said(obs.status)} after answering {len(answered)} of {n} requests",
                       stderr=obs.stderr)
    if len(answered) == n:
        for k, raw in enumerate(answered):
            if overlong is not None and k == overlong[0]:
                return _overlong(overlong, obs.stderr)
            answer = parse_answer(raw)
            if isinstance(answer, Errored):
                return Errored(reason=f"response {k + 1}: {answer.reason}", stderr=obs.stderr)
    return None


def _result(obs: StreamObservation, errored: Errored | None) -> CaseResult:
    verdict = judge("stream", obs, judged=errored is None)
    return CaseResult(case=obs.case, exercised=verdict.exercised, violations=verdict.violations, errored=errored)
