"""Hand-written training cases: the per-token truth found for them decodes to exactly their plan, a case no
reading decodes is left out (never guessed), unsupported cases train only the refusal, and a case repeated
in training counts once for the lexicon."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")  # training needs the [planner] extra

from conformance import handwritten as H  # noqa: E402
from reference import model as M  # noqa: E402
from reference import jsonio  # noqa: E402
from reference.catalog import Catalog  # noqa: E402
from reference.jsonio import json_equal  # noqa: E402
from reference.lexer import lex  # noqa: E402
from reference.planner import decode  # noqa: E402

STOCK = {"name": "get_quote", "arguments": {"symbol": "string", "date": "string"}, "required": ["symbol"],
         "returns": {"kind": "object", "properties": ["price"]}}
ORDERS = {"name": "list_orders", "arguments": {"status": "string", "to": "string"}, "required": [],
          "returns": {"kind": "array", "properties": ["id", "status", "total"]}}
MAIL = {"name": "send_mail", "arguments": {"to": "string", "subject": "string"}, "required": ["to"],
        "returns": {"kind": "object", "properties": ["id"]}}
TOOLS = [STOCK, ORDERS, MAIL]


def call(tool: str, **args: object) -> dict[str, object]:
    return {"tool": tool, "args": args}


def plan(mode: str, *calls: dict[str, object], **output: object) -> dict[str, object]:
    n = len(calls)
    return {"mode": mode, "calls": list(calls), "output": {"kind": "last" if n == 1 else "all", **output}}


CASES = [
    ('hi! could you send_mail to "ana@x.io" with subject "Q3 numbers"? thanks, it is for 25 people',
     plan("single", call("send_mail", to="ana@x.io", subject="Q3 numbers"))),
    ('The "NVDA" symbol please, via get_quote', plan("single", call("get_quote", symbol="NVDA"))),
    ('list_orders status "open", only id and total, 5 rows max',
     plan("single", call("list_orders", status="open"), fields=["id", "total"], limit=5)),
    ('get_quote for symbol "A", "B" and "C" at the same time',
     plan("parallel", call("get_quote", symbol="A"), call("get_quote", symbol="B"), call("get_quote", symbol="C"))),
    ('run get_quote twice, once with symbol "A" and once with symbol "B", date "2024-01-02" for both',
     plan("sequential", call("get_quote", symbol="A", date="2024-01-02"), call("get_quote", symbol="B", date="2024-01-02"))),
    ('send_mail to "a@x.io", then list_orders with status "late" -- only the last result matters',
     {"mode": "sequential", "calls": [call("send_mail", to="a@x.io"), call("list_orders", status="late")],
      "output": {"kind": "last"}}),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_the_tags_found_for_a_case_decode_to_its_plan(text: str, expected: dict[str, object]) -> None:
    tags = H.align(text, TOOLS, expected)
    assert tags is not None
    tokens = lex(text).tokens
    assert len(tags) == len(tokens) and set(tags) <= set(M.TAGS)
    schedule, output = H.labels(expected)
    assert json_equal(decode(tokens, tags, schedule, output, Catalog.from_json(TOOLS)), expected)


def test_a_word_that_is_an_argument_name_but_says_no_argument_is_tagged_as_said_in_passing() -> None:
    text = 'mail this to the boss: send_mail to "boss@x.io"'
    tags = H.align(text, TOOLS, plan("single", call("send_mail", to="boss@x.io")))
    assert tags is not None
    words = [t.text for t in lex(text).tokens]
    assert tags[words.index("to")] == "O" and tags[len(words) - 2] == "ARG<"


@pytest.mark.parametrize("expected", [
    plan("single", call("send_mail", to="someone@else.io")),  # a value the instruction does not say
    plan("single", call("list_orders", status="open"), limit=7),  # a limit it does not say
    plan("sequential", call("send_mail", to="a@x.io"), call("get_quote", symbol="A")),  # calls out of order
])
def test_a_case_no_reading_decodes_is_left_out(expected: dict[str, object]) -> None:
    text = 'get_quote symbol "A" and send_mail to "a@x.io"; list_orders status "open"'
    assert H.align(text, TOOLS, expected) is None


def test_unsupported_cases_train_the_refusal_and_validation_families_are_left_out() -> None:
    rows = [
        {"family": "loop", "instruction": 'for each order, send_mail to "a@x.io"', "tools": TOOLS,
         "expect": {"diagnostic": True}},
        {"family": "missing-argument", "instruction": "send_mail please", "tools": TOOLS, "expect": {"diagnostic": True}},
        {"family": "single", "instruction": 'get_quote symbol "A"', "tools": TOOLS,
         "expect": {"plan": plan("single", call("get_quote", symbol="A"))}},
        {"family": "single", "instruction": 'get_quote symbol "A"', "tools": TOOLS,
         "expect": {"plan": plan("single", call("get_quote", symbol="B"))}},
    ]
    log = io.StringIO()
    out = H.examples(rows, log=log)
    assert [e.family for e in out] == ["hand:loop", "hand:single"]
    loop, single = out
    assert M.SCHEDULES[loop.schedule] == "reject" and set(loop.tags) == {-100} and loop.output == -100
    assert M.SCHEDULES[single.schedule] == "sequential" and M.OUTPUTS[single.output] == "default"  # names none
    assert "2 used" in log.getvalue() and "2 left out" in log.getvalue()


def test_a_case_repeated_in_training_counts_once_for_the_lexicon() -> None:
    from reference.train import MIN_COUNT, Example, identify, lexicon

    once = Example(ids=[M.STRING, "rarely"], codes=[0, 0], tags=[0, 0], schedule=1, output=0, family="hand:single")
    data = [once] * (MIN_COUNT + 2)
    words = lexicon(data)
    assert "rarely" not in words and "~rare" not in words
    identify(data, M.Lexicon(words))
    assert once.ids == [M.STRING, M.UNKNOWN] and once.stems == [M.UNKNOWN, M.UNKNOWN]


def test_most_of_the_shipped_hand_written_cases_are_used() -> None:
    files = sorted(H.folder().glob("*.jsonl"))
    assert files, "the hand-written training cases ship in conformance/handwritten/"
    rows = H.read(files)
    supported = [r for r in rows if "plan" in r["expect"]]
    used = H.examples(supported)
    assert len(used) >= 0.9 * len(supported)
    assert all(Path(f).resolve().parent.name == "train" for f in files)  # corpora/train/, nothing else


def test_a_training_that_holds_out_phrasing_forms_trains_on_no_hand_written_case_unless_told(tmp_path: Path) -> None:
    """Hand-written cases are not labelled with the phrasing forms they use: a hold-out measurement that
    trained on them could be measuring forms the network saw."""
    from conformance import training

    hand = tmp_path / "hand.jsonl"
    case = {"family": "single", "instruction": 'get_quote symbol "A" (use get_quote)', "tools": [STOCK],
            "expect": {"plan": plan("single", call("get_quote", symbol="A"))}}
    hand.write_text(jsonio.dumps(case) + "\n", encoding="utf-8")
    for hand_files, used in ((None, "0 used"), ([hand], "1 used")):
        log = io.StringIO()
        training.train(examples=40, epochs=1, workers=1, hold_out=["tool=paren"], hand=hand_files, log=log)
        assert f"hand-written cases: {used}" in log.getvalue()
