"""The reference tool registry and streaming collector, against every split of a valid call and every
labelled way to break one."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from reference.jsonio import json_equal
from reference.transports import (CODES, ProtocolError, RegistryError, Selection, Text, ToolRegistry, prepare,
                                  utf16_length)
from strategies import FRAGMENT_BREAKS as BREAKS
from strategies import FragmentCase, broken_fragment_streams, fragment_streams

CATALOG = [
    {"name": "get_weather", "arguments": {"city": "string", "days": "number"}, "required": ["city"],
     "returns": {"kind": "object"}},
    {"name": "ping", "arguments": {}, "required": [], "returns": {"kind": "text"}},
    {"name": "list_users", "arguments": {"team": "string", "active": "boolean"}, "required": [],
     "returns": {"kind": "array", "properties": ["id"]}},
]


def collect(case: FragmentCase) -> Selection | Text:
    stage = ToolRegistry.from_catalog(case.tools).seal()
    limit = math.inf if case.max_output_chars is None else case.max_output_chars
    collector = prepare(stage, max_output_chars=limit)
    seen = [collector.output_chars]
    for fragment in case.fragments:
        collector.push(fragment)
        seen.append(collector.output_chars)
    result = collector.finish()
    assert seen == sorted(seen) and all(isinstance(n, int) and n >= 0 for n in seen)  # never decreases
    assert collector.output_chars == case.output_chars
    return result


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(fragment_streams())
def test_every_split_of_a_valid_answer_gives_its_call_or_text(case: FragmentCase) -> None:
    result = collect(case)
    if "text" in case.expect:
        assert result == Text(case.expect["text"])
    else:
        assert isinstance(result, Selection)
        assert result.tool_id == case.expect["call"]["tool"]
        assert json_equal(result.call, case.expect["call"]), (result.call, case.expect)


@pytest.mark.parametrize("rule", BREAKS)
def test_each_broken_stream_is_rejected_under_its_rule_and_resolves_nothing(rule: str) -> None:
    @settings(max_examples=60, suppress_health_check=list(HealthCheck), deadline=None)
    @given(broken_fragment_streams(breaks=rule))
    def check(case: FragmentCase) -> None:
        stage = ToolRegistry.from_catalog(case.tools).seal()
        limit = math.inf if case.max_output_chars is None else case.max_output_chars
        collector = prepare(stage, max_output_chars=limit)
        with pytest.raises(ProtocolError) as caught:
            for fragment in case.fragments:
                collector.push(fragment)
            collector.finish()
        assert caught.value.code == rule, (caught.value, case.to_json())
        # the first error stays: a later push or finish raises it again (or says the stream is finished)
        with pytest.raises(ProtocolError) as again:
            collector.finish()
        assert again.value.code in (rule, "finished")

    check()
    assert set(BREAKS) <= set(CODES)


def test_a_surrogate_pair_split_between_fragments_is_one_code_point() -> None:
    stage = ToolRegistry.from_catalog(CATALOG).seal()
    collector = prepare(stage)
    for fragment in ({"index": 0, "id": "call_1", "name": "get_"}, {"index": 0, "name": "weather"},
                     {"index": 0, "arguments": '{"city": "a\ud83d'}, {"index": 0, "arguments": '\ude00", "days": 1'},
                     {"index": 0, "arguments": "e2}"}):
        collector.push(fragment)
    result = collector.finish()
    assert isinstance(result, Selection) and result.input == {"city": "a\U0001F600", "days": 100}
    assert result.call == {"tool": "get_weather", "args": {"city": "a\U0001F600", "days": 100}} and result.call_id == "call_1"
    assert collector.output_chars == utf16_length('get_weather{"city": "a\U0001F600", "days": 1e2}')
    with pytest.raises(ProtocolError, match="after finish"):
        collector.push("x")


def test_the_output_limit_counts_utf16_units_and_infinity_keeps_counting() -> None:
    stage = ToolRegistry.from_catalog(CATALOG).seal()
    exact = prepare(stage, max_output_chars=2)
    exact.push("\U0001F600")  # two units: at the limit, not over it
    with pytest.raises(ProtocolError) as caught:
        exact.push("x")
    assert caught.value.code == "output_limit" and exact.output_chars == 3
    endless = prepare(stage, max_output_chars=math.inf)
    endless.push("x" * 10_000)
    assert endless.output_chars == 10_000 and endless.finish() == Text("x" * 10_000)
    for bad in (-1, 1.5, math.nan):
        with pytest.raises(ValueError):
            prepare(stage, max_output_chars=bad)


def test_numbers_must_be_exact_and_nothing_is_resolved_from_a_bad_input() -> None:
    stage = ToolRegistry.from_catalog(CATALOG).seal()
    for arguments in ('{"city": "x", "days": 1e400}', '{"city": "x", "days": 9007199254740993}', '{"days": 1}',
                      '{"city": "x", "extra": 1}', '{"city": "x", "city": "y"}'):
        collector = prepare(stage)
        collector.push({"index": 0, "name": "get_weather", "arguments": arguments})
        with pytest.raises(ProtocolError) as caught:
            collector.finish()
        assert caught.value.code == "arguments_invalid", arguments


def test_the_registry_seals_and_selects_stage_subsets() -> None:
    registry = ToolRegistry.from_catalog(CATALOG)
    stage = registry.seal()
    assert stage.ids() == ("get_weather", "ping", "list_users")
    read_only = stage.select(["list_users", "ping"])
    assert read_only.ids() == ("ping", "list_users")  # the stage's order
    cases: list[tuple[Any, list[Any], str]] = [
        (stage, [], "empty_selection"), (stage, ["nope"], "unknown_tool"), (stage, [5], "unknown_tool"),
        (stage, ["ping", "ping"], "duplicate_id"), (read_only, ["get_weather"], "outside_stage"),
    ]
    for where, ids, code in cases:
        with pytest.raises(RegistryError) as caught:
            where.select(ids)
        assert caught.value.code == code
    with pytest.raises(RegistryError) as caught:
        registry.add(registry.seal().tools[0])
    assert caught.value.code == "duplicate_id"
    # a call to a tool outside the selected stage is unknown to that stage's collector
    collector = prepare(read_only)
    collector.push({"index": 0, "name": "get_weather", "arguments": '{"city": "x"}'})
    with pytest.raises(ProtocolError) as caught2:
        collector.finish()
    assert caught2.value.code == "unknown_tool"
    # parse and resolve are pure: the input is a fresh value, and resolving runs nothing
    tool = stage.get("get_weather")
    given_input = {"city": "x"}
    parsed = tool.parse(given_input)
    assert parsed == given_input and parsed is not given_input
    assert tool.resolve(parsed) == {"tool": "get_weather", "args": {"city": "x"}}
    assert tool.input_schema()["additionalProperties"] is False
