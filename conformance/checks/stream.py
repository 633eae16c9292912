"""The Stream clauses, ``CLI-STREAM`` and ``CLI-BAD-RECORD``: the protocol itself, judged on what a freshly
started IUT wrote for a whole raw stream (``conformance.stream`` writes it and watches)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.observations import StreamObservation
from conformance.registry import Family
from reference import jsonio
from reference.violations import Violation

FAMILY = Family("stream", order=10, subject="stream")


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace")[:200]


@FAMILY.clause("CLI-STREAM", summary="one response line per request, in order, flushed, nothing lost; exit 0 on EOF")
def cli_stream(obs: StreamObservation) -> Iterator[Violation]:
    """"Each JSONL record is an object with:" one response line per request, in order, flushed, nothing
    else; exit 0 on EOF. (Crashes and hangs are errored, not failures: see ``conformance.stream``.)"""
    n = len(obs.case.lines)
    answered = obs.got + obs.late
    if obs.withheld and obs.late:
        yield Violation(clause="CLI-STREAM", kind="unflushed",
                        message=f"{len(obs.got)} of {n} responses came while stdin was open; more came only after it"
                        " was closed (output not flushed after each line)")
    elif len(answered) > n:
        yield Violation(clause="CLI-STREAM", kind="extra-lines", message=f"wrote {len(answered)} lines for {n} requests",
                        expected=f"{n} lines", actual=_text(answered[n]))
    elif len(answered) < n and obs.status == 0:
        yield Violation(clause="CLI-STREAM", kind="lost", message=f"exited with status 0 after answering"
                        f" {len(answered)} of {n} requests (a response was lost)")
    elif len(answered) == n and obs.status not in (0, None):
        yield Violation(clause="CLI-STREAM", kind="exit-status", expected="status 0", actual=str(obs.status),
                        message=f"answered every request but exited with status {obs.status} on EOF")


def _same(first: dict[str, Any], again: dict[str, Any]) -> bool:
    """Two answers to one request agree: both diagnostics, or the same members with equal plan and js."""
    from reference.jsonio import json_equal

    if "diagnostic" in first or "diagnostic" in again:
        return ("diagnostic" in first) == ("diagnostic" in again)
    return set(first) == set(again) and json_equal(first.get("plan"), again.get("plan")) and first.get("js") == again.get("js")


@FAMILY.clause("CLI-BAD-RECORD", summary="bad records get a diagnostic and the stream goes on")
def cli_bad_record(obs: StreamObservation) -> Iterator[Violation]:
    """"Each JSONL record is an object with:" a line that is not a plan or compile request gets exactly a
    diagnostic, and the stream goes on: every request after it is answered as it is without bad records
    (the kit sends the same request again and again, and its first answer comes before any bad record).

    A diagnostic is an answer: an IUT that diagnoses every request answers them all the same way."""
    from conformance.stream import parse_line

    answers = obs.got + obs.late
    if len(answers) != len(obs.case.lines):
        return  # out of step: CLI-STREAM's to report, and no answer can be matched to its request
    first: dict[bytes, tuple[int, dict[str, Any]]] = {}
    for k, (line, is_bad, raw) in enumerate(zip(obs.case.lines, obs.case.bad, answers)):
        answer = parse_line(raw)
        if is_bad:
            d = answer.get("diagnostic")
            if set(answer) != {"diagnostic"} or not isinstance(d, str) or not d:
                yield Violation(
                    clause="CLI-BAD-RECORD", kind="not-diagnosed",
                    message=f"line {k + 1} is a bad record ({line[:60]!r}) and was not answered with a diagnostic",
                    expected='{"diagnostic": "..."}', actual=jsonio.dumps(answer)[:200],
                )
                return
            continue
        j, seen = first.setdefault(line, (k, answer))
        if not _same(seen, answer):
            yield Violation(
                clause="CLI-BAD-RECORD", kind="stream-changed",
                message=f"line {k + 1} repeats the request of line {j + 1}, answered before any bad record, and got"
                " another answer after bad records (the stream did not go on as before)",
                expected=jsonio.dumps(seen)[:200], actual=jsonio.dumps(answer)[:200],
            )
            return
