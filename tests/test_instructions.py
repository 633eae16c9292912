"""strategies.instructions: every rendering carries its truth, and the transforms keep it."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from reference import model as M
from reference.catalog import Catalog
from reference.lexer import MAX_TOKENS, lex
from reference.plan import validate_plan
from reference.planner import decode
from strategies._internal.instructions import (
    SUPPORTED,
    UNSUPPORTED,
    DrawChooser,
    adversarial_instructions,
    fresh_names,
    instructions,
    permute_catalog,
    rename,
    substitute_strings,
    unsupported_requests,
)


def _decoded(inst):  # type: ignore[no-untyped-def]
    tokens = lex(inst.text).tokens
    return decode(tokens, inst.tags, inst.schedule, inst.output, inst.catalog)


@settings(max_examples=150)
@given(instructions())
def test_a_rendering_decodes_to_its_plan_with_its_own_tags(inst) -> None:  # type: ignore[no-untyped-def]
    lexed = lex(inst.text)
    assert lexed.ok and len(lexed.tokens) <= MAX_TOKENS
    assert inst.tags is not None and len(inst.tags) == len(lexed.tokens)
    assert inst.family in SUPPORTED
    assert validate_plan(inst.plan.to_json(), inst.catalog) == []
    assert _decoded(inst) == inst.plan.to_json()
    strings = {t.value for t in lexed.tokens if t.kind == "string"}
    for call in inst.plan.calls:
        for _, value in call.args:
            if isinstance(value, str):
                assert value in strings


@settings(max_examples=80)
@given(unsupported_requests())
def test_unsupported_requests_are_labelled_and_lex(inst) -> None:  # type: ignore[no-untyped-def]
    assert inst.family in UNSUPPORTED and inst.plan is None and inst.clause == "PL-REJECT"
    assert lex(inst.text).ok


@settings(max_examples=60)
@given(adversarial_instructions())
def test_adversarial_instructions_expect_what_the_lexer_says(inst) -> None:  # type: ignore[no-untyped-def]
    lexed = lex(inst.text)
    if inst.clause is None:
        assert lexed.ok and inst.plan is not None
        if inst.family == "at-limit":
            assert len(lexed.tokens) == MAX_TOKENS
        assert _decoded(inst) == inst.plan.to_json()
    else:
        assert inst.clause in {v.clause for v in lexed.violations}


LEXICON = M.Lexicon(("call", "please", "~plea", "with", "and", ",", "the", "for", "then", "~call"))


@settings(max_examples=80)
@given(instructions(), st.data())
def test_transforms_keep_the_truth_and_the_features(inst, data) -> None:  # type: ignore[no-untyped-def]
    ch = DrawChooser(data.draw)
    tokens = lex(inst.text).tokens
    features = M.featurize(tokens, inst.catalog, LEXICON)
    # (a) a permuted catalog: same features, same decoding
    permuted = permute_catalog(ch, inst.catalog)
    Catalog.from_json(permuted.to_json())
    assert M.featurize(tokens, permuted, LEXICON) == features
    # (b) other quoted values: same features; the plan's values follow
    rng = random.Random(data.draw(st.integers(0, 1000)))
    mapping: dict[str, str] = {}
    text, plan = substitute_strings(inst.text, inst.plan, lambda v: mapping.setdefault(v, f"v{len(mapping)}{rng.random()}"))
    new_tokens = lex(text).tokens
    assert M.featurize(new_tokens, inst.catalog, LEXICON) == features
    assert decode(new_tokens, inst.tags, inst.schedule, inst.output, inst.catalog) == plan.to_json()
    # (c) consistent renaming: same features; the plan's names follow
    names = fresh_names(ch, inst.text, inst.catalog)
    text, catalog, plan = rename(inst.text, inst.catalog, inst.plan, names)
    new_tokens = lex(text).tokens
    assert len(new_tokens) == len(tokens)
    assert M.featurize(new_tokens, catalog, LEXICON) == features
    assert decode(new_tokens, inst.tags, inst.schedule, inst.output, catalog) == plan.to_json()
