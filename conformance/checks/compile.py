"""The Compile clause, ``CO-VALIDATE``: invalid plans and catalogs get a diagnostic, valid plans get ``js``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.observations import CompileObservation
from conformance.registry import Family
from reference.violations import Violation

FAMILY = Family("compile", order=60, subject="compile", roles=("compiler", "pipeline"))


def is_diagnostic(answer: Any) -> bool:
    return set(answer) == {"diagnostic"} and isinstance(answer["diagnostic"], str) and bool(answer["diagnostic"])


def _brief(value: Any, limit: int = 120) -> str:
    text = repr(dict(value) if hasattr(value, "items") else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@FAMILY.clause("CO-VALIDATE", applies=lambda obs: obs.source == "compile",
               summary="invalid plans get a diagnostic, valid plans get `js`")
def co_validate(obs: CompileObservation) -> Iterator[Violation]:
    """"The compiler escapes names and values mechanically and validates structural constraints."

    An invalid plan or catalog gets exactly ``{"diagnostic": non-empty string}``; a valid plan never
    gets a diagnostic."""
    answer, case = obs.answer, obs.case
    if answer is None:
        return
    if case.breaks is not None:
        if not is_diagnostic(answer):
            yield Violation(
                clause="CO-VALIDATE", kind=f"accepts-{case.breaks}",
                message=f"{_brief(answer)} answers a request whose plan or catalog breaks {case.breaks}"
                ' (expected exactly {"diagnostic": "..."})',
                expected={"diagnostic": "<non-empty string>"},
                actual=dict(answer),
            )
    elif "diagnostic" in answer:
        yield Violation(clause="CO-VALIDATE", message=f"{_brief(answer)} diagnoses a valid plan",
                        expected={"js": "<string>"}, actual=dict(answer), kind="diagnoses-valid")
