"""``codemode compile`` speaks the JSONL protocol: one response per line, in order, never a crash."""

from __future__ import annotations

import json
import subprocess
import sys

from reference import jsonio

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
