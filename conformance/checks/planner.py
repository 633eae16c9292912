"""Checks of plan answers: ``PL-RESPONSE``, the plan clauses, ``PL-OPAQUE``, the ``IN-*`` diagnostics, the
at-limit side of ``IN-LENGTH``, ``PL-INVARIANT`` pairs, and the scores of ``PL-ACCURACY`` and ``PL-REJECT``.

Each check is a plain function of a case and an answer (a parsed JSON object) returning violations; the
scored clauses add :class:`Score` records instead. Nothing here talks to the IUT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.plan_cases import PlanCase, catalog_of, transform_plan
from reference import jsonio
from reference.jsonio import json_equal
from reference.lexer import lex
from reference.plan import validate_plan
from reference.violations import Violation

PLAN_CLAUSES = ("PL-SCHEMA", "PL-MODE", "PL-TOOL", "PL-ARGS", "PL-SHAPE")
OWN_TOKENIZER_LIMIT = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class Score:
    """One case's contribution to a scored clause: ``metric`` is ``accuracy``, ``recall`` or
    ``false-diagnosis``; ``ok`` is a hit, a diagnosed unsupported request, or a supported request that
    was (wrongly) diagnosed."""

    clause: str
    metric: str
    family: str
    ok: bool


def is_diagnostic(answer: dict[str, Any]) -> bool:
    return set(answer) == {"diagnostic"} and isinstance(answer["diagnostic"], str) and bool(answer["diagnostic"])


def response_form(answer: dict[str, Any], *, role: str) -> list[Violation]:
    """PL-RESPONSE: exactly ``{"plan"}`` (``{"plan", "js"}`` in the pipeline role) or ``{"diagnostic"}``."""
    keys = set(answer)
    if keys == {"diagnostic"}:
        d = answer["diagnostic"]
        if isinstance(d, str) and d:
            return []
        return [Violation(clause="PL-RESPONSE", message=f"the diagnostic is {'empty' if d == '' else 'not a string'}",
                          expected="a non-empty string", actual=jsonio.dumps(d)[:200])]
    want = {"plan", "js"} if role == "pipeline" else {"plan"}
    if keys == want and (role != "pipeline" or isinstance(answer["js"], str)):
        return []
    if role == "pipeline" and keys == want:
        return [Violation(clause="PL-RESPONSE", message="js is not a string", actual=jsonio.dumps(answer["js"])[:200])]
    return [Violation(
        clause="PL-RESPONSE",
        message=f"the answer has members {sorted(keys)}",
        expected=f"exactly {sorted(want)} or ['diagnostic']",
        actual=jsonio.dumps(answer)[:300],
    )]


def string_values(instruction: str) -> set[str] | None:
    """The values of the instruction's string tokens (``None`` if it does not lex cleanly)."""
    lexed = lex(instruction, max_tokens=10**6)
    if not lexed.ok:
        return None
    return {str(t.value) for t in lexed.tokens if t.kind == "string"}


def plan_checks(case: PlanCase, plan: Any) -> list[Violation]:
    """PL-SCHEMA..PL-SHAPE and PL-OPAQUE on a plan answered to a request with a valid catalog."""
    catalog = catalog_of(case)
    assert catalog is not None
    found = validate_plan(plan, catalog)
    values = string_values(case.instruction)
    if values is not None and isinstance(plan, dict) and isinstance(plan.get("calls"), list):
        for k, call in enumerate(plan["calls"]):
            args = call.get("args") if isinstance(call, dict) else None
            if not isinstance(args, dict):
                continue
            for name, value in args.items():
                if isinstance(value, str) and value not in values:
                    found.append(Violation(
                        clause="PL-OPAQUE",
                        message=f"calls[{k}].args.{name} is not the value of any quoted string of the instruction",
                        expected=f"one of {jsonio.dumps(sorted(values))[:300]}",
                        actual=jsonio.dumps(value)[:200],
                    ))
                    break
    return found


def _refused(clause: str, message: str, answer: dict[str, Any]) -> list[Violation]:
    if is_diagnostic(answer):
        return []
    return [Violation(clause=clause, message=message, expected='{"diagnostic": ...}', actual=jsonio.dumps(answer)[:300])]


Check = Callable[[PlanCase, dict[str, Any]], list[Violation]]


def _named(check: Check, clause: str, doc: str) -> Check:
    """``check`` under its clause's name (``pl_schema`` for PL-SCHEMA) with its docstring."""
    check.__name__ = clause.lower().replace("-", "_")
    check.__doc__ = f"{clause}: {doc}"
    return check


def _catalog_check(clause: str, contract: str) -> Check:
    def check(case: PlanCase, answer: dict[str, Any]) -> list[Violation]:
        return _refused(clause, f"a request whose catalog breaks {clause} was not answered with a diagnostic", answer)

    return _named(check, clause, f"{contract} A request whose catalog breaks it gets exactly a diagnostic.")


in_count = _catalog_check("IN-COUNT", '"`tools`: 1-8 catalog entries"')
in_keys = _catalog_check("IN-KEYS", '"each containing exactly `name`, `arguments`, `required`, and `returns`"')
in_name = _catalog_check("IN-NAME", '"Tool names must be JavaScript identifiers."')
in_unique = _catalog_check("IN-UNIQUE", '"an English string explicitly naming catalog tools and arguments" (names are unique)')
in_args = _catalog_check("IN-ARGS", '"Argument schemas contain at most four properties of type `string`, `number` or `boolean`"')
in_required = _catalog_check("IN-REQUIRED", '"Required argument names must exist in the schema."')
in_returns = _catalog_check("IN-RETURNS", '"Return kinds are `text`, `object` or `array`"')


def at_limit_twin(case: PlanCase) -> dict[str, Any] | None:
    """The 127-token twin of an at-limit case: its request less the instruction's last token (the
    generator ends every at-limit instruction with a neutral word). ``None`` for any other case."""
    if case.family != "at-limit":
        return None
    tokens = lex(case.instruction, max_tokens=10**6).tokens
    if len(tokens) != 128:
        return None
    return {"instruction": case.instruction[: tokens[-1].start].rstrip(), "tools": case.tools}


def in_length(case: PlanCase, answer: dict[str, Any], *, tokenizer: str = "reference", twin: Any = None) -> list[Violation]:
    """IN-LENGTH: "The frontend diagnoses inputs over 128 tokens rather than truncating them." Over the
    limit: a diagnostic, whatever the first 128 tokens ask. At exactly 128 tokens: a diagnostic that its
    127-token twin (``twin``, the answer to :func:`at_limit_twin`) does not get, since only the length
    told them apart; a request diagnosed at 127 tokens too was refused for its content, which
    PL-REJECT's false-diagnosis rate counts."""
    if case.expected_clause == "IN-LENGTH":
        return _refused("IN-LENGTH", "an instruction over the token limit was not diagnosed (was it truncated?)", answer)
    if case.family == "at-limit" and tokenizer == "reference" and "diagnostic" in answer \
            and isinstance(twin, dict) and "diagnostic" not in twin:
        return [Violation(clause="IN-LENGTH", message="an instruction of exactly 128 tokens was diagnosed, and the same"
                          " instruction less its last token (127 tokens) was not; 128 is within the limit",
                          expected='{"plan": ...}', actual=jsonio.dumps(answer)[:300])]
    return []


def in_string(case: PlanCase, answer: dict[str, Any]) -> list[Violation]:
    """IN-STRING: "Quoted values use JSON string syntax and remain opaque." A malformed quoted string
    gets a diagnostic."""
    return _refused("IN-STRING", "an instruction holding a malformed quoted string was not diagnosed", answer)


def in_number(case: PlanCase, answer: dict[str, Any]) -> list[Violation]:
    """IN-NUMBER: "Numbers must be finite and compatible with exact JavaScript numeric handling." A number
    token that is not finite and exact gets a diagnostic."""
    return _refused("IN-NUMBER", "an instruction holding a number that is not finite and exact was not diagnosed", answer)


def pl_response(case: PlanCase, answer: dict[str, Any], *, role: str = "planner") -> list[Violation]:
    """PL-RESPONSE: "Rejected requests return a `diagnostic` string instead of a plan." Exactly a plan
    (with js in the pipeline role) or a non-empty diagnostic."""
    return response_form(answer, role=role)


def _plan_clause(clause: str, contract: str) -> Check:
    def check(case: PlanCase, answer: dict[str, Any]) -> list[Violation]:
        catalog = catalog_of(case)
        if catalog is None or "plan" not in answer:
            return []
        return [v for v in validate_plan(answer["plan"], catalog) if v.clause == clause]

    return _named(check, clause, f"{contract} Judged on every plan answered, against the request's catalog.")


pl_schema = _plan_clause("PL-SCHEMA", '"A successful response contains a `plan`"; its schema is reference/plan.schema.json.')
pl_mode = _plan_clause("PL-MODE", '"Supported schedules are one call, or 2-3 independent calls sequentially or in parallel."')
pl_tool = _plan_clause("PL-TOOL", '"The model does not discover tools or interpret free-form tool descriptions."')
pl_args = _plan_clause("PL-ARGS", '"Required argument names must exist in the schema."; args are declared, typed, exact.')
pl_shape = _plan_clause("PL-SHAPE", '"For one array-returning call only, optional `fields` projects 1-3 declared properties"')


def pl_opaque(case: PlanCase, answer: dict[str, Any]) -> list[Violation]:
    """PL-OPAQUE: "Quoted values use JSON string syntax and remain opaque." Every string argument value
    is, code unit for code unit, the value of one of the instruction's string tokens."""
    catalog = catalog_of(case)
    if catalog is None or "plan" not in answer:
        return []
    return [v for v in plan_checks(case, answer["plan"]) if v.clause == "PL-OPAQUE"]


def pl_invariant(case: PlanCase, answer: dict[str, Any], base: dict[str, Any]) -> list[Violation]:
    """PL-INVARIANT: "an English string explicitly naming catalog tools and arguments": the answer does
    not change with catalog order, quoted content, or a consistent renaming of tools and arguments."""
    return invariant_check(case, answer, base)


def pl_determinism(request_line: str, first: Any, again: Any, *, role: str) -> list[Violation]:
    """PL-DETERMINISM: "This describes supported structures, not a guarantee that English intent will be
    recognized correctly." The same request gets the same answer, wherever it is sent."""
    if not isinstance(first, dict) or not isinstance(again, dict):
        return []
    same = True
    if "diagnostic" in first or "diagnostic" in again:
        same = ("diagnostic" in first) == ("diagnostic" in again)
    else:
        if "plan" in first or "plan" in again:
            same = json_equal(first.get("plan"), again.get("plan"))
        if same and ("js" in first or "js" in again):
            same = first.get("js") == again.get("js")
    if same:
        return []
    return [Violation(clause="PL-DETERMINISM", message="the same request got a different answer when sent again",
                      expected=jsonio.dumps(first)[:300], actual=jsonio.dumps(again)[:300])]


def pl_accuracy(case: PlanCase, answer: dict[str, Any]) -> list[Score]:
    """PL-ACCURACY: "Valid plans can be semantically wrong even when schema checks pass." A supported
    instruction's answer is an exact match when it is a plan equal to the known plan."""
    if case.expected_plan is None:
        return []
    from strategies._internal.instructions import plan_family_json

    hit = set(answer) >= {"plan"} and "diagnostic" not in answer and json_equal(answer["plan"], case.expected_plan)
    return [Score(clause="PL-ACCURACY", metric="accuracy", family=plan_family_json(case.expected_plan), ok=hit)]


def pl_reject(case: PlanCase, answer: dict[str, Any]) -> list[Score]:
    """PL-REJECT: "Dependencies, mixed serial/parallel groups, conditions, retries, loops and arbitrary
    code generation are unsupported." Recall over unsupported requests; false diagnoses of supported ones."""
    if case.expected_clause == "PL-REJECT":
        return [Score(clause="PL-REJECT", metric="recall", family=case.family, ok=is_diagnostic(answer))]
    if case.expected_plan is not None:
        from strategies._internal.instructions import plan_family_json

        return [Score(clause="PL-REJECT", metric="false-diagnosis", family=plan_family_json(case.expected_plan),
                      ok="diagnostic" in answer)]
    return []


CATALOG_CHECKS = {c.__name__.upper().replace("_", "-"): c for c in (in_count, in_keys, in_name, in_unique, in_args, in_required, in_returns)}
PLAN_CHECKS = {c.__name__.upper().replace("_", "-"): c for c in (pl_schema, pl_mode, pl_tool, pl_args, pl_shape, pl_opaque)}


def judge_answer(case: PlanCase, answer: dict[str, Any], *, role: str, tokenizer: str,
                 twin: Any = None) -> tuple[list[Violation], list[Score], list[str]]:
    """Violations, scores and the clauses exercised for one answered plan case (``twin``: the answer to
    its :func:`at_limit_twin`, if any)."""
    exercised = ["PL-RESPONSE"]
    found = pl_response(case, answer, role=role)
    clause = case.expected_clause
    if catalog_of(case) is None:
        assert clause is not None
        exercised.append(clause)
        return found + CATALOG_CHECKS[clause](case, answer), [], exercised
    if "plan" in answer:
        exercised += PLAN_CHECKS  # one validation does them all
        found += plan_checks(case, answer["plan"])
    if clause == "IN-LENGTH" and tokenizer == "own":
        if len(lex(case.instruction, max_tokens=10**9).tokens) > OWN_TOKENIZER_LIMIT:
            exercised.append(clause)
            found += in_length(case, answer, tokenizer=tokenizer)
    elif clause == "IN-LENGTH" or (case.family == "at-limit" and tokenizer == "reference"):
        exercised.append("IN-LENGTH")
        found += in_length(case, answer, tokenizer=tokenizer, twin=twin)
    elif clause == "IN-STRING":
        exercised.append(clause)
        found += in_string(case, answer)
    elif clause == "IN-NUMBER":
        exercised.append(clause)
        found += in_number(case, answer)
    scores = pl_accuracy(case, answer) + pl_reject(case, answer)
    if tokenizer == "own" and len(lex(case.instruction, max_tokens=10**9).tokens) >= 128:
        scores = []  # at or over 128 reference tokens: not scored under --tokenizer own (SPEC.md IN-LENGTH)
    exercised += list(dict.fromkeys(s.clause for s in scores))
    return found, scores, exercised


def invariant_check(case: PlanCase, answer: dict[str, Any], base: dict[str, Any]) -> list[Violation]:
    """PL-INVARIANT: the transformed request's answer is the base answer transformed."""
    assert case.pair is not None
    transform = case.pair["transform"]
    base_diag, diag = "diagnostic" in base, "diagnostic" in answer
    if base_diag and diag:
        return []
    if base_diag != diag:
        return [Violation(
            clause="PL-INVARIANT",
            message=f"after a {transform['kind']} transform one request got a plan and the other a diagnostic",
            expected=jsonio.dumps(base)[:300],
            actual=jsonio.dumps(answer)[:300],
        )]
    want = transform_plan(base.get("plan"), transform)
    if json_equal(want, answer.get("plan")):
        return []
    return [Violation(
        clause="PL-INVARIANT",
        message=f"after a {transform['kind']} transform the plan is not the transformed plan",
        expected=jsonio.dumps(want)[:300],
        actual=jsonio.dumps(answer.get("plan"))[:300],
    )]
