"""The phrasing grammar: every form of every axis is reachable, renderings say how they were phrased,
repeated calls named once decode, and nothing a reader could read two ways is ever rendered."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings

from conformance import training
from reference.catalog import Catalog
from reference.lexer import lex
from reference.plan import validate_plan
from reference.planner import decode
from strategies._internal.instructions import AXES, SUPPORTED, instructions, sample
from strategies._internal.rendering import _check_unambiguous, Ambiguous

CATALOG = Catalog.from_json([
    {"name": "convert_currency", "arguments": {"amount": "number", "from": "string", "to": "string"},
     "required": ["amount"], "returns": {"kind": "object", "properties": ["result"]}},
    {"name": "get_stock_price", "arguments": {"symbol": "string"}, "required": ["symbol"],
     "returns": {"kind": "object", "properties": ["price"]}},
])


def _samples(n: int, families: tuple[str, ...] = SUPPORTED) -> list:  # type: ignore[type-arg]
    out = []
    for seed in range(n):
        inst = sample(random.Random(seed), "supported", families[seed % len(families)], augment=seed % 2 == 0)
        if inst is not None:
            out.append(inst)
    return out


def test_every_form_of_every_axis_is_rendered() -> None:
    seen = {label for inst in _samples(1500) for label in inst.axes}
    missing = [f"{axis}={form}" for axis, forms in AXES.items() for form in forms if f"{axis}={form}" not in seen]
    assert missing == []


def test_renderings_label_their_axes_with_known_forms() -> None:
    for inst in _samples(200):
        assert inst.axes, inst.text
        for label in inst.axes:
            axis, _, form = label.partition("=")
            assert form in AXES[axis], label
        assert any(label.startswith("tool=") for label in inst.axes)


def test_a_tool_named_once_for_two_calls_decodes_to_two_calls() -> None:
    text = 'run get_stock_price twice, once with symbol "NVDA" and once with symbol "AMD"'
    tokens = lex(text).tokens
    tags = ["O"] * len(tokens)
    words = [t.text for t in tokens]
    tags[1] = "CALL"
    tags[words.index("once")] = "O"
    second = len(words) - 1 - words[::-1].index("once")
    tags[second] = "AGAIN"
    for i, w in enumerate(words):
        if w == "symbol":
            tags[i], tags[i + 1] = "ARG<", "VAL<"
    plan = decode(tokens, tags, "sequential", "default", CATALOG)
    assert plan == {"mode": "sequential", "output": {"kind": "all"}, "calls": [
        {"tool": "get_stock_price", "args": {"symbol": "NVDA"}},
        {"tool": "get_stock_price", "args": {"symbol": "AMD"}},
    ]}


def test_again_with_no_call_before_it_is_a_diagnostic() -> None:
    tokens = lex('again with symbol "A"').tokens
    assert isinstance(decode(tokens, ["AGAIN", "O", "O", "O"], "sequential", "default", CATALOG), str)


def test_a_connector_that_is_an_argument_name_beside_a_value_is_refused() -> None:
    # "to" is an argument of convert_currency: written as a connector before a value, a reader cannot tell
    tokens = lex('convert_currency amount set to 5').tokens
    with pytest.raises(Ambiguous):
        _check_unambiguous(tokens, ["CALL", "ARG<", "O", "O", "VAL<"], CATALOG)
    # the same word away from any value is a plain word
    tokens = lex('send it to convert_currency with amount 5').tokens
    _check_unambiguous(tokens, ["O", "O", "O", "CALL", "O", "ARG<", "VAL<"], CATALOG)


@settings(max_examples=100)
@given(instructions())
def test_no_rendering_writes_an_argument_name_as_a_word_beside_a_value(inst) -> None:  # type: ignore[no-untyped-def]
    tokens = lex(inst.text).tokens
    args = {a for t in inst.catalog.tools for a, _ in t.arguments}
    tools = {t.name for t in inst.catalog.tools}
    for i, (tok, tag) in enumerate(zip(tokens, inst.tags)):
        if tag == "O" and tok.kind == "word":
            assert tok.text not in tools
            if tok.text in args:
                assert all(tokens[j].kind not in ("string", "number", "boolean")
                           for j in (i - 1, i + 1) if 0 <= j < len(tokens)), inst.text


def test_held_out_forms_never_reach_the_training_data() -> None:
    held = ("tool=paren", "arg=bare-back")
    kept = [training._example(seed, frozenset(held)) for seed in range(1_000_000, 1_000_400)]
    everything = [training._example(seed) for seed in range(1_000_000, 1_000_400)]
    assert sum(e is not None for e in kept) < sum(e is not None for e in everything)
    unseen = training.by_form(30, held)
    assert len(unseen) == 30 and all(set(held) & set(i.axes) for i in unseen)


def test_an_unknown_form_is_named_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="tool=paren"):
        training.check_forms(["tool=telepathy"])


def _decode(text: str, tags: list[str]):  # type: ignore[no-untyped-def]
    return decode(lex(text).tokens, tags, "sequential", "default", CATALOG)


def test_a_value_whose_name_is_taken_fills_the_name_on_its_other_side() -> None:
    # both values tagged "the name before": the second one's name before is filled, the one after is not
    text = 'convert_currency amount 5 "USD" from'
    plan = _decode(text, ["CALL", "ARG<", "VAL<", "VAL<", "ARG<"])
    assert plan["calls"][0]["args"] == {"amount": 5, "from": "USD"}


def test_an_argument_name_with_no_value_is_a_plain_word() -> None:
    # "to" tagged as an argument but given no value: left out (the plan is still valid: "to" is optional)
    plan = _decode('convert_currency amount 5 to', ["CALL", "ARG<", "VAL<", "ARG<"])
    assert plan["calls"][0]["args"] == {"amount": 5}
    # a required one left without a value is refused by validation, which follows decoding
    assert validate_plan(_decode('convert_currency amount', ["CALL", "ARG<"]), CATALOG) != []


def test_a_value_said_again_is_one_value_and_another_one_with_nothing_between_a_diagnostic() -> None:
    same = _decode('get_stock_price symbol "A" "A"', ["CALL", "ARG<", "VAL<", "VAL<"])
    assert same["calls"][0]["args"] == {"symbol": "A"}
    assert "two values" in _decode('get_stock_price symbol "A" "B"', ["CALL", "ARG<", "VAL<", "VAL<"])


def test_an_argument_named_again_starts_another_call_of_the_same_tool() -> None:
    # "get_stock_price for symbol "A" and symbol "B"": one argument is never named twice in one call
    tags = ["CALL", "ARG<", "VAL<", "O", "ARG<", "VAL<"]
    plan = _decode('get_stock_price symbol "A" and symbol "B"', tags)
    assert plan["calls"] == [{"tool": "get_stock_price", "args": {"symbol": "A"}},
                             {"tool": "get_stock_price", "args": {"symbol": "B"}}]
    assert plan["mode"] == "sequential" and plan["output"] == {"kind": "all"}
    # the value before its name ("the "A" symbol and the "B" symbol") goes with it
    plan = _decode('get_stock_price "A" symbol and "B" symbol', ["CALL", "VAL>", "ARG<", "O", "VAL>", "ARG<"])
    assert [c["args"] for c in plan["calls"]] == [{"symbol": "A"}, {"symbol": "B"}]
    # the same name said again with the same value is that argument said twice; four calls are refused
    same = _decode('get_stock_price symbol "A" ( symbol "A" )', ["CALL", "ARG<", "VAL<", "O", "ARG<", "VAL<", "O"])
    assert same["mode"] == "single" and same["calls"] == [{"tool": "get_stock_price", "args": {"symbol": "A"}}]
    four = 'get_stock_price symbol "A" , symbol "B" , symbol "C" , symbol "D"'
    assert "4 calls" in _decode(four, ["CALL"] + ["ARG<", "VAL<", "O"] * 3 + ["ARG<", "VAL<"])


def test_a_list_of_values_after_one_name_is_one_call_each() -> None:
    text = 'get_stock_price symbol "A" , "B" and "C"'
    plan = _decode(text, ["CALL", "ARG<", "VAL<", "O", "VAL<", "O", "VAL<"])
    assert [c["args"] for c in plan["calls"]] == [{"symbol": "A"}, {"symbol": "B"}, {"symbol": "C"}]
    assert {c["tool"] for c in plan["calls"]} == {"get_stock_price"}
    # a word between two values is no list joiner (an argument the tool does not have): not a list
    assert "two values" in _decode('get_stock_price symbol "A" colour "B"', ["CALL", "ARG<", "VAL<", "O", "VAL<"])
    # nor is a bracket (an array value is no list of calls), nor a fourth value
    assert isinstance(_decode('get_stock_price symbol [ "A" , "B" ]', ["CALL", "ARG<", "O", "VAL<", "O", "VAL<", "O"]), str)
    assert isinstance(_decode('get_stock_price symbol "A" , "B" , "C" , "D"',
                              ["CALL", "ARG<", "VAL<", "O", "VAL<", "O", "VAL<", "O", "VAL<"]), str)


def test_a_share_word_gives_the_argument_before_it_to_every_call_of_its_tool() -> None:
    text = 'convert_currency amount 5 and amount 6 , from "USD" for both'
    tags = ["CALL", "ARG<", "VAL<", "O", "ARG<", "VAL<", "O", "ARG<", "VAL<", "O", "SHARE"]
    plan = _decode(text, tags)
    assert [c["args"] for c in plan["calls"]] == [{"amount": 5, "from": "USD"}, {"amount": 6, "from": "USD"}]
    # a call that has the argument keeps its own value
    text = 'convert_currency amount 5 from "EUR" and amount 6 , from "USD" for both'
    tags = ["CALL", "ARG<", "VAL<", "ARG<", "VAL<", "O", "ARG<", "VAL<", "O", "ARG<", "VAL<", "O", "SHARE"]
    assert [c["args"] for c in _decode(text, tags)["calls"]] == [{"amount": 5, "from": "EUR"}, {"amount": 6, "from": "USD"}]
    assert "no argument" in _decode('convert_currency for both', ["CALL", "O", "SHARE"])


def test_a_word_that_cannot_name_a_tool_read_as_a_call_is_said_in_passing() -> None:
    # "Store 0417 reports a problem: get_stock_price symbol "A"": no catalog has a tool called 0417 (nor
    # one called by a reserved word), so it is no call, where a name like a tool's stays an unknown tool
    tokens = lex('Store 0417 reports , new get_stock_price symbol "A"').tokens
    assert [t.kind for t in tokens[:2]] == ["word", "word"]
    tags = ["O", "CALL", "O", "O", "CALL", "CALL", "ARG<", "VAL<"]
    assert _decode('Store 0417 reports , new get_stock_price symbol "A"', tags) == {
        "mode": "single", "calls": [{"tool": "get_stock_price", "args": {"symbol": "A"}}], "output": {"kind": "last"}}
    tags = ["O", "O", "CALL", "O", "O", "CALL", "ARG<", "VAL<"]
    assert "not a tool of this catalog" in _decode('Store 0417 reports , new get_stock_price symbol "A"', tags)


SLOTS = Catalog.from_json([
    {"name": "find_slots", "arguments": {"date": "string", "clinic": "string", "specialty": "string"},
     "required": ["date", "clinic"], "returns": {"kind": "array", "properties": ["time"]}},
])


def _slots(text: str, tags: list[str]):  # type: ignore[no-untyped-def]
    return decode(lex(text).tokens, tags, "parallel", "default", SLOTS)


def test_calls_of_a_tool_named_once_that_would_lack_a_required_argument_share_what_one_of_them_is_given() -> None:
    # "find_slots for date "D": clinic "A" and clinic "B"": told apart by the clinic, both on date D; an
    # optional argument said once with it goes to both as well
    text = 'find_slots date "D" specialty "S" : clinic "A" and clinic "B"'
    tags = ["CALL", "ARG<", "VAL<", "ARG<", "VAL<", "O", "ARG<", "VAL<", "O", "ARG<", "VAL<"]
    plan = _slots(text, tags)
    assert validate_plan(plan, SLOTS) == []
    assert [c["args"] for c in plan["calls"]] == [{"date": "D", "specialty": "S", "clinic": "A"},
                                                  {"clinic": "B", "date": "D", "specialty": "S"}]
    # said last, the same; so for a list of values after one name
    text = 'find_slots clinic "A" and clinic "B" , date "D"'
    tags = ["CALL", "ARG<", "VAL<", "O", "ARG<", "VAL<", "O", "ARG<", "VAL<"]
    assert [c["args"] for c in _slots(text, tags)["calls"]] == [{"clinic": "A", "date": "D"}, {"clinic": "B", "date": "D"}]
    text = 'find_slots date "D" clinic "A" , "B" and "C"'
    tags = ["CALL", "ARG<", "VAL<", "ARG<", "VAL<", "O", "VAL<", "O", "VAL<"]
    assert [c["args"]["date"] for c in _slots(text, tags)["calls"]] == ["D", "D", "D"]
    # where every call has what its tool requires, each has only what is said for it
    text = 'find_slots date "D" clinic "A" specialty "S" and date "E" clinic "B"'
    tags = ["CALL", "ARG<", "VAL<", "ARG<", "VAL<", "ARG<", "VAL<", "O", "ARG<", "VAL<", "ARG<", "VAL<"]
    assert [c["args"] for c in _slots(text, tags)["calls"]] == [{"date": "D", "clinic": "A", "specialty": "S"},
                                                                {"date": "E", "clinic": "B"}]
    # a tool named for each call, or a call said "again with ...", has only what is said for it: the
    # required date is missing from the second call, and the plan stays invalid
    text = 'find_slots date "D" clinic "A" and find_slots clinic "B"'
    tags = ["CALL", "ARG<", "VAL<", "ARG<", "VAL<", "O", "CALL", "ARG<", "VAL<"]
    assert validate_plan(_slots(text, tags), SLOTS) != []
    text = 'find_slots date "D" clinic "A" , again with clinic "B"'
    tags = ["CALL", "ARG<", "VAL<", "ARG<", "VAL<", "O", "AGAIN", "O", "ARG<", "VAL<"]
    assert validate_plan(_slots(text, tags), SLOTS) != []


def test_what_is_said_before_calls_said_once_each_is_said_for_each_of_them() -> None:
    # "find_slots twice for date "D": once with clinic "A" and once with clinic "B"": both on date D (the
    # first "once" read as another call, as people write it when something is said before it)
    text = 'find_slots twice for date "D" specialty "S" : once with clinic "A" and once with clinic "B"'
    tags = ["CALL", "O", "O", "ARG<", "VAL<", "ARG<", "VAL<", "O", "AGAIN", "O", "ARG<", "VAL<", "O", "AGAIN", "O",
            "ARG<", "VAL<"]
    plan = _slots(text, tags)
    assert validate_plan(plan, SLOTS) == []
    assert [c["args"] for c in plan["calls"]] == [{"date": "D", "specialty": "S", "clinic": "A"},
                                                  {"date": "D", "specialty": "S", "clinic": "B"}]
    # where each call has what its tool requires, the first is a call of its own (three calls)
    text = 'find_slots date "D" clinic "C" , once with date "E" clinic "A" and once with date "F" clinic "B"'
    tags = ["CALL", "ARG<", "VAL<", "ARG<", "VAL<", "O", "AGAIN", "O", "ARG<", "VAL<", "ARG<", "VAL<", "O", "AGAIN", "O",
            "ARG<", "VAL<", "ARG<", "VAL<"]
    assert [c["args"]["clinic"] for c in _slots(text, tags)["calls"]] == ["C", "A", "B"]
    # and so where a call said "once" names again an argument said before them: it is told apart by it
    text = 'find_slots date "D" , once with date "E" and once with clinic "B"'
    tags = ["CALL", "ARG<", "VAL<", "O", "AGAIN", "O", "ARG<", "VAL<", "O", "AGAIN", "O", "ARG<", "VAL<"]
    assert len(_slots(text, tags)["calls"]) == 3
    # one call said "again" after it is another call, not the same one told apart (nothing is shared)
    text = 'find_slots date "D" clinic "A" , again with clinic "B"'
    tags = ["CALL", "ARG<", "VAL<", "ARG<", "VAL<", "O", "AGAIN", "O", "ARG<", "VAL<"]
    assert len(_slots(text, tags)["calls"]) == 2


@pytest.mark.parametrize("form", ["tool=repeat-names", "tool=repeat-list", "shared=once", "shape=first", "schedule=after-tool"])
def test_the_forms_of_repeated_calls_and_shaping_decode_from_their_own_tags(form: str) -> None:
    found = [i for i in _samples(6000, families=("sequential", "parallel", "shaping")) if form in i.axes]
    assert len(found) >= 5, form
    for inst in found[:60]:
        tokens = lex(inst.text).tokens
        assert decode(tokens, inst.tags, inst.schedule, inst.output, inst.catalog) == inst.plan.to_json(), inst.text


def test_a_value_said_twice_fills_its_argument_once() -> None:
    # "fetch "A" with get_stock_price (symbol "A")": the first "A" is tagged for the name after it, which the
    # second one fills; saying the same value again is no second value, saying another one is
    text = '"A" get_stock_price symbol "A"'
    assert _decode(text, ["VAL>", "CALL", "ARG<", "VAL<"])["calls"][0]["args"] == {"symbol": "A"}
    assert "two values" in _decode('"B" get_stock_price symbol "A"', ["VAL>", "CALL", "ARG<", "VAL<"])


def test_a_value_its_name_already_has_is_said_again_before_it_fills_another_name() -> None:
    # "how much is 250 bucks? convert_currency amount 250, from "USD", to "EUR"": the first 250 (tagged for
    # the name after it) fills amount; the second is amount's own value said again, so it does not move on
    # to "from" and push every value after it one name along
    text = '250 bucks convert_currency amount 250 , from "USD" , to "EUR"'
    tags = ["VAL>", "O", "CALL", "ARG<", "VAL<", "O", "ARG<", "VAL<", "O", "ARG<", "VAL<"]
    assert _decode(text, tags)["calls"][0]["args"] == {"amount": 250, "from": "USD", "to": "EUR"}
    # another value there is no value said again: it takes the next name, and the values run out of names
    tags = ["VAL>", "O", "CALL", "ARG<", "VAL<", "O", "ARG<", "VAL<"]
    assert "two values" in _decode('250 bucks convert_currency amount 300 , from "USD"', tags)


def test_situations_say_their_times_and_numbers_in_passing() -> None:
    found = [i for i in _samples(4000) if "frame=situation" in i.axes or "aside=situation" in i.axes]
    assert len(found) >= 20
    numbers = 0
    for inst in found:
        tokens = lex(inst.text).tokens
        said = {k for k, t in enumerate(tokens) if t.kind == "number" and inst.tags[k] == "O"}
        numbers += bool(said)
        assert decode(tokens, inst.tags, inst.schedule, inst.output, inst.catalog) == inst.plan.to_json(), inst.text
    assert numbers >= len(found) // 3  # most situations say a number that is no value, limit or count


def test_the_sentence_form_names_the_tool_after_its_arguments() -> None:
    found = [i for i in _samples(3000) if "tool=sentence" in i.axes]
    assert found
    for inst in found[:50]:
        tokens = lex(inst.text).tokens
        assert decode(tokens, inst.tags, inst.schedule, inst.output, inst.catalog) == inst.plan.to_json()


def _logits(tags: list[str], second: dict[int, tuple[str, float]]) -> list[list[float]]:
    """Logits whose argmax is ``tags``, with the tag ``second[i]`` that far below it at token ``i``."""
    from reference.model import TAGS

    rows = []
    for i, tag in enumerate(tags):
        row = [-10.0] * len(TAGS)
        row[TAGS.index(tag)] = 5.0
        if i in second:
            alt, gap = second[i]
            row[TAGS.index(alt)] = 5.0 - gap
        rows.append(row)
    return rows


def test_a_reading_that_does_not_decode_is_reread_where_the_model_was_least_sure() -> None:
    from reference.planner import reread

    # "get_stock_price "A" symbol": the value read as the name before it (there is none): "A" is the
    # symbol's, the model's second guess for it
    text = 'get_stock_price "A" symbol'
    tags = ["CALL", "VAL<", "ARG<"]
    tokens = lex(text).tokens
    assert isinstance(decode(tokens, tags, "sequential", "default", CATALOG), dict)  # decodes, but...
    tags = ["CALL", "VAL<", "O"]  # ...the model did not see "symbol" as a name: the required symbol is missing
    assert validate_plan(decode(tokens, tags, "sequential", "default", CATALOG), CATALOG) != []
    plan = reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {2: ("ARG<", 1.0), 1: ("VAL>", 2.0)}))
    assert plan == {"mode": "single", "calls": [{"tool": "get_stock_price", "args": {"symbol": "A"}}],
                    "output": {"kind": "last"}}


def test_a_value_read_as_said_in_passing_is_reread_as_the_value_a_name_lacks() -> None:
    from reference.planner import reread

    # "get_stock_price, "A" symbol" with "A" read as said in passing: the symbol named has no value, and the
    # required symbol is missing; the reading in which "A" is the symbol's (the model's second guess) is the plan
    tokens = lex('get_stock_price , "A" symbol').tokens
    tags = ["CALL", "O", "O", "ARG<"]
    assert validate_plan(decode(tokens, tags, "sequential", "default", CATALOG), CATALOG) != []
    plan = reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {2: ("VAL>", 2.0)}))
    assert plan == {"mode": "single", "calls": [{"tool": "get_stock_price", "args": {"symbol": "A"}}],
                    "output": {"kind": "last"}}
    # only where the model hesitated: far below its choice, the value stays said in passing
    assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {2: ("VAL>", 8.0)})) is None


def test_a_number_read_as_a_limit_where_no_limit_can_be_is_reread_as_said_in_passing() -> None:
    from reference.planner import reread

    # "convert_currency amount 5, my friends come at 8": a limit on a tool that returns an object is no
    # valid plan; the reading in which 8 was only said in passing is
    tokens = lex('convert_currency amount 5 , friends come at 8').tokens
    tags = ["CALL", "ARG<", "VAL<", "O", "O", "O", "O", "LIMIT"]
    assert validate_plan(decode(tokens, tags, "sequential", "default", CATALOG), CATALOG) != []
    plan = reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {7: ("O", 3.0)}))
    assert plan == {"mode": "single", "calls": [{"tool": "convert_currency", "args": {"amount": 5}}],
                    "output": {"kind": "last"}}
    # a value is never reread as a limit, nor a limit as a value
    assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {7: ("VAL<", 0.1)})) is None


def test_a_reread_never_drops_a_value_or_changes_a_call() -> None:
    from reference.planner import reread

    # a value with no argument for it (an argument the tool does not have): no reading makes a plan of it
    tokens = lex('get_stock_price symbol "A" colour "red"').tokens
    tags = ["CALL", "ARG<", "VAL<", "O", "VAL<"]
    logits = _logits(tags, {4: ("O", 0.1), 3: ("ARG<", 0.1), 0: ("O", 0.1)})
    assert reread(tokens, tags, "sequential", "default", CATALOG, logits) is None
    # four calls stay four calls
    tokens = lex("get_stock_price symbol \"A\" then get_stock_price symbol \"B\" then get_stock_price symbol \"C\""
                 " then get_stock_price symbol \"D\"").tokens
    tags = ["CALL", "ARG<", "VAL<", "O"] * 3 + ["CALL", "ARG<", "VAL<"]
    assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {0: ("O", 0.1)})) is None
    # an argument name read as one keeps its value: no reading leaves "to" without one to make a plan
    tokens = lex('convert_currency amount 5 to').tokens
    tags = ["CALL", "ARG<", "VAL>", "ARG<"]  # 5 for "to" (a string): not valid; 5 for amount leaves "to" bare
    assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {2: ("VAL<", 0.1)})) is None
    # the same with "to" as likely a plain word as a name: that reading is the plan
    assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {2: ("VAL<", 0.1), 3: ("O", 0.2)})) == {
        "mode": "single", "calls": [{"tool": "convert_currency", "args": {"amount": 5}}], "output": {"kind": "last"}}


def test_values_said_before_the_first_call_or_in_a_remark_are_reread_as_said_in_passing_when_an_argument_gets_two() -> None:
    from reference.planner import reread

    # "we paid 7 last time. convert_currency amount 5": the 7 said in passing before the call, read as the
    # amount's, gives the amount two values; the reading with everything before the call said in passing is
    # the plan, however sure the model was
    tokens = lex('we paid 7 last time . convert_currency amount 5').tokens
    tags = ["O", "O", "VAL>", "O", "O", "O", "CALL", "ARG<", "VAL<"]
    assert "is given two values" in decode(tokens, tags, "sequential", "default", CATALOG)
    plan = {"mode": "single", "calls": [{"tool": "convert_currency", "args": {"amount": 5}}], "output": {"kind": "last"}}
    assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {})) == plan
    # "false alarm": a boolean said before the call, read as the amount's: the same
    tokens = lex('a false alarm : convert_currency amount 5').tokens
    tags = ["O", "VAL>", "O", "O", "CALL", "ARG<", "VAL<"]
    assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {})) == plan
    # a remark in brackets after the call with a number in it ("(we paid 7 last time)"): the same
    tokens = lex('convert_currency amount 5 ( we paid 7 last time )').tokens
    tags = ["CALL", "ARG<", "VAL<", "O", "O", "O", "VAL<", "O", "O", "O"]
    assert "is given two values" in decode(tokens, tags, "sequential", "default", CATALOG)
    assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {})) == plan
    # but brackets with a call in them are no remark ("(use convert_currency)"), and what is before the first
    # call is one (the parts a reader may take as said in passing, by token index)
    from reference.planner import _remarks

    tokens = lex('so 7 : amount 5 ( use convert_currency ) ( 7 )').tokens
    tags = ["O", "VAL>", "O", "ARG>", "VAL<", "O", "O", "CALL", "O", "O", "VAL<", "O"]
    assert _remarks(tokens, tags) == [[0, 1, 2, 3, 4, 5, 6], [10]]
    # the reading must still be a valid plan: where the value dropped leaves a required argument missing
    # (the 7 is the amount, the call names only "from"), the request stays refused
    tokens = lex('we paid 7 last time . convert_currency from "USD" , to "EUR"').tokens
    tags = ["O", "O", "VAL>", "O", "O", "O", "CALL", "ARG<", "VAL<", "O", "ARG<", "VAL<"]
    assert "is given two values" in decode(tokens, tags, "sequential", "default", CATALOG)
    assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {})) is None


def test_a_tool_named_again_after_its_call_is_reread_as_a_mention_of_it() -> None:
    from reference.planner import reread

    # "get_stock_price symbol "A", and convert_currency amount 5; I only need the get_stock_price result":
    # read as a third call, get_stock_price lacks its required symbol; as a mention of the first call, the
    # plan is the two calls, however sure the model was of the third
    tokens = lex('get_stock_price symbol "A" and convert_currency amount 5 ; only the get_stock_price result').tokens
    tags = ["CALL", "ARG<", "VAL<", "O", "CALL", "ARG<", "VAL<", "O", "O", "O", "CALL", "O"]
    assert validate_plan(decode(tokens, tags, "parallel", "last", CATALOG), CATALOG) != []
    plan = reread(tokens, tags, "parallel", "last", CATALOG, _logits(tags, {}))
    assert plan == {"mode": "parallel", "calls": [{"tool": "get_stock_price", "args": {"symbol": "A"}},
                                                 {"tool": "convert_currency", "args": {"amount": 5}}],
                    "output": {"kind": "last"}}
    # a tool named again with arguments of its own is a call: its values are never dropped
    tokens = lex('get_stock_price symbol "A" and get_stock_price symbol').tokens
    tags = ["CALL", "ARG<", "VAL<", "O", "CALL", "ARG<"]
    assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {})) is None


def test_a_word_read_as_another_call_that_says_none_is_reread_as_said_in_passing() -> None:
    from reference.planner import reread

    # "get_stock_price for symbol "A" against convert_currency amount 5": "against" read as "again" (another
    # get_stock_price call, with no symbol) is no valid plan; said in passing, it is
    tokens = lex('get_stock_price for symbol "A" against convert_currency amount 5').tokens
    tags = ["CALL", "O", "ARG<", "VAL<", "AGAIN", "CALL", "ARG<", "VAL<"]
    assert validate_plan(decode(tokens, tags, "sequential", "default", CATALOG), CATALOG) != []
    plan = reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {}))
    assert plan == {"mode": "sequential", "calls": [{"tool": "get_stock_price", "args": {"symbol": "A"}},
                                                   {"tool": "convert_currency", "args": {"amount": 5}}],
                    "output": {"kind": "all"}}
    # "once" and "again" say another call: they are reread as said in passing only where the model hesitated
    # ("…, once that's done, …")
    for word in ("again", "Once"):
        tokens = lex(f'get_stock_price for symbol "A" {word} convert_currency amount 5').tokens
        assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {})) is None
        assert reread(tokens, tags, "sequential", "default", CATALOG, _logits(tags, {4: ("O", 2.0)})) == plan


def test_a_tool_named_by_a_word_read_as_another_call_is_a_call_of_that_tool() -> None:
    # "get_stock_price for symbol "A", and then convert_currency with amount 5", with convert_currency read as
    # another get_stock_price call ("again"): a tool's own name is a call of the tool it names
    tokens = lex('get_stock_price for symbol "A" , and then convert_currency with amount 5').tokens
    tags = ["CALL", "O", "ARG<", "VAL<", "O", "O", "O", "AGAIN", "O", "ARG<", "VAL<"]
    assert decode(tokens, tags, "sequential", "default", CATALOG) == {
        "mode": "sequential", "calls": [{"tool": "get_stock_price", "args": {"symbol": "A"}},
                                        {"tool": "convert_currency", "args": {"amount": 5}}],
        "output": {"kind": "all"}}


def test_tools_named_together_share_what_is_said_after_the_last_of_them() -> None:
    catalog = Catalog.from_json([
        {"name": "get_patient", "arguments": {"mrn": "string"}, "required": ["mrn"],
         "returns": {"kind": "object", "properties": ["name"]}},
        {"name": "check_insurance", "arguments": {"mrn": "string", "payer": "string", "active": "boolean"},
         "required": ["mrn"], "returns": {"kind": "object", "properties": ["covered"]}},
        {"name": "list_wards", "arguments": {"floor": "number"}, "required": [],
         "returns": {"kind": "array", "properties": ["ward"]}},
    ])
    tokens = lex('get_patient and check_insurance for mrn "22" , payer "B"').tokens
    tags = ["CALL", "O", "CALL", "O", "ARG<", "VAL<", "O", "ARG<", "VAL<"]
    assert decode(tokens, tags, "parallel", "default", catalog) == {
        "mode": "parallel",
        "calls": [{"tool": "get_patient", "args": {"mrn": "22"}},
                  {"tool": "check_insurance", "args": {"mrn": "22", "payer": "B"}}],
        "output": {"kind": "all"}}
    # not when something else stands between the two names, nor when the first is given an argument of its
    # own or needs none: then each has what is said for it (and a call that lacks a required one is refused)
    for text, first in (('get_patient today and check_insurance for mrn "22" , payer "B"', {}),
                        ('list_wards and check_insurance for mrn "22" , payer "B"', {})):
        tokens = lex(text).tokens
        tags = ["CALL"] + ["O"] * (len(tokens) - 8) + ["CALL", "O", "ARG<", "VAL<", "O", "ARG<", "VAL<"]
        plan = decode(tokens, tags, "parallel", "default", catalog)
        assert plan["calls"][0]["args"] == first, text
    # three named together: each gets what the last was given, of its type, that its tool takes
    tokens = lex('get_patient , list_wards and check_insurance for mrn "22" , active true').tokens
    tags = ["CALL", "O", "CALL", "O", "CALL", "O", "ARG<", "VAL<", "O", "ARG<", "VAL<"]
    plan = decode(tokens, tags, "parallel", "default", catalog)
    assert [c["args"] for c in plan["calls"]] == [{}, {}, {"mrn": "22", "active": True}]  # list_wards needs none
    tokens = lex('get_patient and check_insurance and check_insurance for mrn "22" , active true').tokens
    plan = decode(tokens, tags, "parallel", "default", catalog)
    assert [c["args"] for c in plan["calls"]] == [{"mrn": "22"}, {"mrn": "22", "active": True}, {"mrn": "22", "active": True}]


def test_written_asides_are_plain_sentences_that_ask_for_nothing() -> None:
    from strategies._internal.vocabulary import WRITTEN_ASIDES

    assert len(WRITTEN_ASIDES) >= 500 and len(set(WRITTEN_ASIDES)) == len(WRITTEN_ASIDES)
    for said in WRITTEN_ASIDES:
        lexed = lex(said)
        assert not lexed.violations, said
        assert {t.kind for t in lexed.tokens} <= {"word", "number", "punct"}, said  # no strings, no booleans
        assert 2 <= len(lexed.tokens) <= 40, said
        assert not any("_" in t.text for t in lexed.tokens), said  # nothing that reads as a tool's name



def test_written_asides_are_said_around_generated_requests() -> None:
    from strategies._internal.vocabulary import WRITTEN_ASIDES

    asides = [said for said in WRITTEN_ASIDES if len(said) >= 24]
    said = 0
    for seed in range(1500):
        inst = sample(random.Random(seed), "supported", augment=True)
        if inst is not None and any(aside in inst.text for aside in asides):
            assert inst.plan is not None, inst.text
            said += 1
    assert said >= 30  # the written sentences are drawn, not only the grammar's own situations
