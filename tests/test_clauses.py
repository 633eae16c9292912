"""SPEC.md, the registry, the checks, the generators and the faulty implementations agree."""

from __future__ import annotations

import inspect
from pathlib import Path

from conformance.registry import Family, families, registry, role_clauses, spec_clauses, spec_rule, spec_thresholds, thresholds
from tests.conftest import ROOT
from tests.faulty.collectors import CLAUSE_OF as COLLECTOR_CLAUSE_OF
from tests.faulty.compilers import CLAUSE_OF
from tests.faulty.planners import CLAUSE_OF as PLANNER_CLAUSE_OF


def test_spec_and_registry_name_the_same_clauses_in_the_same_order_with_the_same_kinds() -> None:
    spec = spec_clauses()
    assert list(spec) == list(registry())
    for cid, kind in spec.items():
        assert registry()[cid].kind == kind, cid
        assert spec_rule(cid), f"{cid} has no **Rule:** paragraph in SPEC.md"


def test_the_spec_shipped_in_the_package_is_the_spec() -> None:
    from conformance.registry import spec_text

    assert spec_text() == (ROOT / "SPEC.md").read_text(encoding="utf-8")


def test_scored_thresholds_are_the_ones_spec_states() -> None:
    assert spec_thresholds() == thresholds()


def test_every_clause_has_one_check_named_after_it_that_quotes_the_contract() -> None:
    for cid, clause in registry().items():
        assert clause.check.__name__ == cid.lower().replace("-", "_")
        assert inspect.getdoc(clause.check), f"{cid}'s check quotes no contract sentence"
        assert clause.summary, f"{cid} has no summary"


def test_each_family_lives_in_one_check_module() -> None:
    for family in families():
        assert isinstance(family, Family) and family.clauses
        modules = {inspect.getmodule(c.check).__name__ for c in family.clauses}  # type: ignore[union-attr]
        assert len(modules) == 1, (family.name, modules)


def test_every_role_judges_the_stream_and_determinism() -> None:
    for role in ("compiler", "planner", "pipeline"):
        assert {"CLI-STREAM", "CLI-BAD-RECORD", "PL-DETERMINISM"} <= set(role_clauses(role))
    # the pipeline judges every clause of the inference contract; the collector those of the transport contract
    assert set(role_clauses("pipeline")) | set(role_clauses("collector")) == set(registry())
    assert not set(role_clauses("pipeline")) & set(role_clauses("collector"))
    assert all(cid.startswith("TR-") for cid in role_clauses("collector"))


def test_every_clause_has_a_faulty_implementation() -> None:
    assert set(registry()) <= set(CLAUSE_OF.values()) | set(PLANNER_CLAUSE_OF.values()) | set(COLLECTOR_CLAUSE_OF.values())


def test_the_spec_clause_index_lists_every_clause_with_its_summary() -> None:
    text = (ROOT / "SPEC.md").read_text(encoding="utf-8")
    index = text[text.index("## Clause index"):]
    for cid, clause in registry().items():
        assert f"[{cid}](#{clause.anchor})" in index, cid


def test_reference_imports_nothing_from_strategies_or_conformance() -> None:
    for path in (ROOT / "reference").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "from strategies" not in text and "import strategies" not in text, path.name
        assert "from conformance" not in text and "import conformance" not in text, path.name


def test_strategies_import_nothing_from_conformance() -> None:
    for path in Path(ROOT / "strategies").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "from conformance" not in text and "import conformance" not in text, path


def test_a_compile_answer_of_the_wrong_form_is_told_by_what_is_wrong_before_it_is_shown_cut() -> None:
    from conformance.cases import Behaviour, CompileCase
    from conformance.checks.js import js_form
    from conformance.observations import CompileObservation

    tools = [{"name": "ping", "arguments": {}, "required": [], "returns": {"kind": "text"}}]
    plan = {"mode": "single", "calls": [{"tool": "ping", "args": {}}], "output": {"kind": "last"}}
    case = CompileCase(tools=tools, plan=plan, behaviours=(Behaviour(kind="resolve", value=1),))

    def message(answer: dict[str, object]) -> str:
        (violation,) = js_form(CompileObservation(case=case, answer=answer))
        assert violation.clause == "JS-FORM" and violation.actual == answer
        return violation.message

    # a long js hides the extra key past where the answer is cut: it is named first
    long = message({"js": "return 1;" + " " * 500, "debug": True})
    assert long.startswith("an answer with the extra key 'debug': ") and "'debug'" not in long.partition(": ")[2]
    assert message({"code": "return 1;"}).startswith("an answer without the key \"js\" (its keys: 'code')")
    assert message({"js": ["return 1;"]}).startswith('an answer whose "js" is an array, not a string')
    assert message({"js": None}).startswith('an answer whose "js" is null, not a string')
    assert list(js_form(CompileObservation(case=case, answer={"js": "return 1;"}))) == []
