"""``codemode compile`` speaks the JSONL protocol: one response per line, in order, never a crash; a line
over the cap is one diagnostic, read in linear time and never held whole; torch is needed only to plan."""

from __future__ import annotations

import io
import json
import select
import subprocess
import sys
import threading
import time

import pytest

from reference import jsonio, protocol
from reference.cli import compile_handler, compile_line
from reference.protocol import MAX_LINE_BYTES, LongLine, respond, respond_many

GOOD = jsonio.dumps(
    {
        "plan": {"mode": "single", "calls": [{"tool": "t", "args": {}}], "output": {"kind": "last"}},
        "tools": [{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}],
    }
).encode()

BAD = [
    b"",
    b"not json",
    b"[]",
    b'"a string"',
    b"{}",
    b'{"plan": {}, "tools": [], "extra": 1}',
    b'{"instruction": "list users", "tools": []}',
    b'{"instruction": 5, "tools": []}',
    b"\xff\xfe",
    b'{"a": NaN}',
    b'{"a": 1, "a": 2}',
    b"[" * 100000,
    b'{"plan": {"mode": "single"}, "tools": "nope"}',
]


def test_every_line_gets_one_answer_in_order() -> None:
    lines = [GOOD, *BAD, GOOD]
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "compile"],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == len(lines)
    assert "js" in answers[0] and "js" in answers[-1]
    for answer in answers[1:-1]:
        assert set(answer) == {"diagnostic"} and answer["diagnostic"]
    assert proc.stdout.isascii()


# --- the request line cap -------------------------------------------------------------------------

# A child that serves a trivial handler (every request gets {"ok": <its keys>}): the plain loop, or the
# batched one (``many``) that ``codemode plan`` uses; on EOF it reports its peak RSS on stderr (Linux's
# VmHWM, that of this program alone: getrusage's maxrss keeps the forked parent's across exec), 0 if
# there is no /proc.
SERVE = """
import sys
from reference.protocol import serve
answer = lambda request: {"ok": sorted(request) if isinstance(request, dict) else None}
rc = serve(answer, many=(lambda requests: [answer(r) for r in requests]) if sys.argv[1] == "many" else None)
try:
    peak = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
except OSError:
    peak = 0
print(peak, file=sys.stderr)
sys.exit(rc)
"""


def _serve(mode: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", SERVE, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


@pytest.mark.parametrize("mode", ["plain", "many"])
def test_a_line_over_the_cap_gets_one_diagnostic_and_is_never_held_whole(mode: str) -> None:
    """A 48 MiB line is answered with its length and the limit, the lines around it as usual, and the
    process never holds it: its peak RSS stays under the line's own length."""
    long = 48 << 20
    good = b'{"a": 1}'
    proc = _serve(mode)

    def write() -> None:
        assert proc.stdin is not None
        proc.stdin.write(good + b"\n")
        piece = b"x" * (1 << 20)
        for _ in range(long >> 20):
            proc.stdin.write(piece)
        proc.stdin.write(b"\r\n" + good + b"\n")
        proc.stdin.close()

    writer = threading.Thread(target=write)
    start = time.monotonic()
    writer.start()
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()  # the answers are a few lines: the child never blocks on a full pipe
    err = proc.stderr.read()
    writer.join()
    proc.wait(timeout=60)
    seconds = time.monotonic() - start
    assert proc.returncode == 0, err
    answers = [json.loads(line) for line in out.splitlines()]
    assert answers == [
        {"ok": ["a"]},
        {"diagnostic": f"a request line of {long + 1} bytes is over the limit of {MAX_LINE_BYTES} bytes"
                       " (it is discarded unparsed, never truncated)"},
        {"ok": ["a"]},
    ]
    assert int(err.decode().split()[-1]) < long  # the line was never held whole
    assert seconds < 10  # linear: concatenating each 64 KiB read to the line so far took 30 s here


def test_the_cap_does_not_wait_for_eof_and_the_stream_goes_on() -> None:
    """Discarding a long line answers it as soon as its LF arrives, with stdin still open."""
    proc = _serve("many")
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"y" * (MAX_LINE_BYTES + 1) + b"\n" + b'{"b": 2}\n')
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready
        first = json.loads(proc.stdout.readline())
        assert str(MAX_LINE_BYTES + 1) in first["diagnostic"] and str(MAX_LINE_BYTES) in first["diagnostic"]
        assert json.loads(proc.stdout.readline()) == {"ok": ["b"]}
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0


def test_a_line_at_the_cap_is_read_as_a_request() -> None:
    at = b'{"a": "' + b"z" * (MAX_LINE_BYTES - 10) + b'"}'
    assert len(at) == MAX_LINE_BYTES - 1
    at += b" "  # exactly the limit
    answers = [respond(at, lambda r: {"ok": sorted(r)}), respond_many([at], lambda rs: [{"ok": sorted(r)} for r in rs])[0]]
    assert answers == [{"ok": ["a"]}] * 2


def test_in_process_entry_points_hold_a_whole_line_to_the_cap() -> None:
    over = b" " * (MAX_LINE_BYTES + 1)
    expected = {"diagnostic": f"a request line of {MAX_LINE_BYTES + 1} bytes is over the limit of {MAX_LINE_BYTES} bytes"
                              " (it is discarded unparsed, never truncated)"}
    assert respond(over, compile_handler) == expected
    assert respond_many([GOOD, over, GOOD], lambda rs: [compile_handler(r) for r in rs])[1] == expected
    assert json.loads(compile_line(over.decode())) == expected


@pytest.mark.parametrize("pieces", [1, 3, 7])
def test_the_splitter_cuts_lines_across_reads(pieces: int) -> None:
    """However a stream is cut into reads, the lines are the same: CRLF and a last line without LF
    included, and a line over the limit (10 bytes here) is only its length."""
    stream = b"abc\r\n\n0123456789\n01234567890\nlong line, very long\r\nx\nlast one, also too long"
    size = -(-len(stream) // pieces)
    splitter = protocol._Splitter(limit=10)
    lines: list[object] = []
    for k in range(0, len(stream), size):
        lines += splitter.feed(stream[k : k + size])
    lines += splitter.close()
    assert lines == [b"abc", b"", b"0123456789", LongLine(11), LongLine(21), b"x", LongLine(23)]


def test_batches_stop_at_the_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocol, "MAX_BATCH_BYTES", 10)
    batches = list(protocol._line_batches(io.BytesIO(b"12345\n12345\n1\n123456789012\n1\n")))
    assert batches == [[b"12345", b"12345"], [b"1"], [b"123456789012"], [b"1"]]


# --- PyTorch is needed only to plan -----------------------------------------------------------------

TORCH_FREE = ["reference.cli", "reference.protocol", "reference.compiler", "reference.catalog", "reference.plan",
              "reference.lexer", "reference.jsonio"]
NO_TORCH = "import sys; sys.modules['torch'] = None  # any import of torch now raises ImportError\n"
PLAN = jsonio.dumps({"instruction": 'list_users for team "blue"', "tools": json.loads(GOOD)["tools"]})


def _python(code: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, timeout=120)


def test_certifying_a_compiler_never_imports_torch() -> None:
    code = f"import {', '.join(TORCH_FREE)}, sys\nassert 'torch' not in sys.modules, 'torch was imported'\n"
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr.decode()
    # and where torch cannot be imported at all, the compiler side still answers
    code = NO_TORCH + f"import {', '.join(TORCH_FREE)}\nfrom reference.cli import compile_line\nprint(compile_line({GOOD.decode()!r}))"
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "js" in json.loads(proc.stdout)


def test_codemode_plan_without_torch_exits_2_saying_what_to_install() -> None:
    from reference.cli import NEEDS_TORCH

    proc = _python(NO_TORCH + "from reference.cli import plan_main\nsys.exit(plan_main())", stdin=PLAN.encode() + b"\n" + GOOD + b"\n")
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert proc.stderr.decode() == f"codemode plan: {NEEDS_TORCH}\n"  # one line, no traceback
    assert "pip install 'codemode-conformance-kit[planner]'" in NEEDS_TORCH


def test_the_in_process_planner_without_torch_answers_plan_requests_with_the_reason() -> None:
    from reference.cli import NEEDS_TORCH

    code = NO_TORCH + (
        "from reference.cli import plan_line, pipeline_line\n"
        f"for f in (plan_line, pipeline_line):\n"
        f"    print(f({PLAN!r}))\n"
        f"    print(f({GOOD.decode()!r}))\n"
        f"print(*plan_line.many([{PLAN!r}, {GOOD.decode()!r}]), sep='\\n')\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr.decode()
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert answers[0::2] == [{"diagnostic": NEEDS_TORCH}] * 3  # plan requests: the reason
    assert all(set(a) == {"js"} for a in answers[1::2])  # compile requests: compiled as ever
