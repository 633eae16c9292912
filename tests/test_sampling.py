"""The campaign's samplers: seeded, fast, and drawing the same kinds of cases the strategies draw.

Sampled cases are judged by the same checks as Hypothesis's, so they must be as well formed: a valid
compile case compiles and its expectation can be derived, a broken one breaks the clause it names, and
every kind of case (each invalid-plan and invalid-catalog clause, each behaviour, each plan family) is
drawn.
"""

from __future__ import annotations

import random
from collections import Counter

from conformance.cases import expect, sample_compile_cases
from conformance.plan_cases import sample_plan_cases
from reference.catalog import Catalog, validate_catalog
from reference.compiler import compile_request
from reference.plan import validate_plan
from strategies import SUPPORTED, UNSUPPORTED
from strategies._internal.instructions import ADVERSARIAL_INVALID, ADVERSARIAL_SUPPORTED


def test_the_same_seed_samples_the_same_cases() -> None:
    assert [c.id for c in sample_compile_cases(random.Random(3), 50)] == [c.id for c in sample_compile_cases(random.Random(3), 50)]
    assert [c.id for c in sample_plan_cases(random.Random(3), 50)] == [c.id for c in sample_plan_cases(random.Random(3), 50)]
    assert len({c.id for c in sample_compile_cases(random.Random(4), 300)}) > 290


def test_sampled_compile_cases_are_what_they_claim_and_cover_every_kind() -> None:
    cases = sample_compile_cases(random.Random(7), 1500)
    breaks: Counter[str] = Counter()
    behaviours: Counter[str] = Counter()
    modes: Counter[str] = Counter()
    for case in cases:
        answer = compile_request(case.plan, case.tools)
        if case.breaks is None:
            assert answer.js is not None, (case.to_json(), answer)
            exp = expect(case, answer.js)
            modes[exp.mode + ("-shaped" if exp.shaped else "")] += 1
            behaviours.update(b.kind for b in case.behaviours)
        else:
            assert answer.js is None and answer.diagnostic, case.to_json()
            broken = validate_catalog(case.tools) or validate_plan(case.plan, Catalog.from_json(case.tools))
            assert case.breaks in {v.clause for v in broken}, (case.breaks, broken)
            breaks[case.breaks] += 1
    assert set(breaks) == {"PL-SCHEMA", "PL-MODE", "PL-TOOL", "PL-ARGS", "PL-SHAPE", "IN-COUNT", "IN-KEYS", "IN-NAME",
                           "IN-UNIQUE", "IN-ARGS", "IN-REQUIRED", "IN-RETURNS"}, breaks
    assert set(behaviours) == {"resolve", "return", "reject", "throw", "never", "absent", "notfn"}, behaviours
    assert {"single", "sequential", "parallel", "single-shaped"} <= set(modes), modes


def test_sampled_plan_cases_cover_every_family() -> None:
    cases = sample_plan_cases(random.Random(8), 1500)
    families = Counter(c.family for c in cases)
    wanted = set(SUPPORTED) | set(UNSUPPORTED) | set(ADVERSARIAL_SUPPORTED) | set(ADVERSARIAL_INVALID)
    wanted |= {"invariant-permute", "invariant-values", "invariant-rename", "IN-COUNT", "IN-ARGS", "IN-RETURNS"}
    assert wanted <= set(families), wanted - set(families)
    for case in cases:
        if case.family.startswith("IN-"):
            assert case.family in {v.clause for v in validate_catalog(case.tools)}
        elif case.expected_plan is not None:
            assert not validate_catalog(case.tools)


def test_a_seed_draws_the_same_cases_whatever_code_is_loaded(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Hypothesis draws constants from the source of the local modules loaded; the kit's draws take none, so an
    in-process implementation's code (here a module full of string and number constants, imported between two
    draws) does not change the cases of a seed."""
    import importlib
    import sys

    from conformance.cases import compile_cases
    from conformance.plan_cases import plan_cases
    from conformance.search import drawn

    def cases() -> list[str]:
        return [c.id for c in drawn(compile_cases(), 150, seed_value=3) + drawn(plan_cases(), 150, seed_value=3)]

    before = cases()
    module = tmp_path / "iut_with_constants.py"
    module.write_text("".join(f"C{k} = {'zq-marker-%d' % k!r}, {7_000_000 + k}, {k + 0.125}\n" for k in range(300)))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("iut_with_constants")
    try:
        assert cases() == before
    finally:
        sys.modules.pop("iut_with_constants", None)
