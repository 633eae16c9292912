"""People's English: the independent corpora ship with the kit, and a planner's rates on them are counted
as the corpus says (exact plans, diagnoses, false diagnoses; errored answers apart)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import english
from conformance.adapters import Errored

TOOLS = [{"name": "get_weather", "arguments": {"city": "string"}, "required": ["city"], "returns": {"kind": "text"}}]
PLAN = {"mode": "single", "calls": [{"tool": "get_weather", "args": {"city": "Paris"}}], "output": {"kind": "last"}}
ROWS = [
    {"id": "a", "family": "single", "instruction": 'get_weather city "Paris"', "tools": TOOLS, "expect": {"plan": PLAN}},
    {"id": "b", "family": "single", "instruction": 'weather city "Paris" via get_weather', "tools": TOOLS,
     "expect": {"plan": PLAN}},
    {"id": "c", "family": "loop", "instruction": 'get_weather for every city', "tools": TOOLS,
     "expect": {"diagnostic": True}},
    {"id": "d", "family": "single", "instruction": 'get_weather city "Rome"', "tools": TOOLS, "expect": {"plan": PLAN}},
]


class Scripted:
    """An adapter answering each instruction from a table (keys: the instruction)."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers

    def exchange(self, requests):  # type: ignore[no-untyped-def]
        return [self.answers[r["instruction"]] for r in requests]


def test_rates_count_exact_plans_diagnoses_and_false_diagnoses_and_leave_errors_out() -> None:
    adapter = Scripted({
        ROWS[0]["instruction"]: {"plan": PLAN},  # exact
        ROWS[1]["instruction"]: {"diagnostic": "no"},  # a false diagnosis
        ROWS[2]["instruction"]: {"diagnostic": "loops are unsupported"},  # diagnosed
        ROWS[3]["instruction"]: Errored(reason="hung"),  # in no rate
    })
    r = english.evaluate(adapter, ROWS)
    assert r["errored"] == 1 and r["cases"] == 4
    assert r["supported"] == {"cases": 2, "exact": 0.5}
    assert r["unsupported"] == {"cases": 1, "diagnosed": 1.0}
    assert r["false_diagnosis"] == 0.5
    assert r["families"]["single"] == {"cases": 2, "rate": 0.5}
    assert "exact plans 0.500 of 2 supported" in "\n".join(english.text({"mine": r}))


def test_the_independent_corpora_ship_with_the_kit_and_read_clean() -> None:
    names = [p.name for p in english.shipped()]
    assert names == ["heldout.jsonl", "people.jsonl"]
    sizes = [len(english.read(p)) for p in english.shipped()]
    assert sizes[0] >= 350 and sizes[1] >= 600


def test_a_bad_corpus_is_named_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(ROWS[0]) + "\n" + json.dumps({"instruction": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        english.read(bad)
    proc = subprocess.run([sys.executable, "-m", "conformance", "certify", "--role", "planner", "--cmd", "true",
                           "--english", str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "bad.jsonl:2" in proc.stderr


def test_codemode_train_counts_adversarial_families_that_expect_plans_apart_from_unsupported_ones(
        capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli import _rates

    result = {"rates": {"single": 1.0, "injection": 0.5, "loop": 1.0}, "counts": {"single": 4, "injection": 2, "loop": 3},
              "planned": ["injection", "single"], "false_diagnosis": 0.25}
    _rates(result)
    out = capsys.readouterr().out
    assert "supported, exact plan  1.0000 of 4" in out
    assert "adversarial exact plan 0.5000 of 2" in out
    assert "unsupported, diagnosed 1.0000 of 3" in out  # the loop requests only, not the injection ones
