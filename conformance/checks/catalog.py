"""The Catalog clauses, ``IN-COUNT`` to ``IN-RETURNS``: a plan request whose catalog breaks one condition of a
valid catalog gets exactly a diagnostic.

Each is judged on the plan cases generated to break it (``strategies.invalid_catalogs``); a compile
request with an invalid catalog is CO-VALIDATE's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from conformance.observations import PlanObservation
from conformance.registry import Family
from reference import jsonio
from reference.violations import Violation

FAMILY = Family("catalog", order=20, subject="plan", roles=("planner", "pipeline"))


def is_diagnostic(answer: dict[str, object]) -> bool:
    d = answer.get("diagnostic")
    return set(answer) == {"diagnostic"} and isinstance(d, str) and bool(d)


def refused(clause: str, message: str, answer: dict[str, object] | None, *, kind: str = "not-diagnosed") -> Iterator[Violation]:
    """A violation of ``clause`` unless ``answer`` is exactly a diagnostic."""
    if answer is not None and not is_diagnostic(answer):
        yield Violation(clause=clause, message=message, expected='{"diagnostic": ...}',
                        actual=jsonio.dumps(answer)[:300], kind=kind)


def _breaks(clause: str) -> Callable[[PlanObservation], bool]:
    return lambda obs: obs.catalog is None and obs.case.expected_clause == clause


def _catalog_clause(clause: str, summary: str, contract: str) -> None:
    def check(obs: PlanObservation) -> Iterator[Violation]:
        return refused(clause, f"a request whose catalog breaks {clause} was not answered with a diagnostic", obs.answer)

    check.__name__ = clause.lower().replace("-", "_")
    check.__doc__ = f"{contract} A request whose catalog breaks it gets exactly a diagnostic."
    FAMILY.clause(clause, applies=_breaks(clause), summary=summary)(check)


_catalog_clause("IN-COUNT", "catalogs with 0 or more than 8 entries are diagnosed", '"`tools`: 1-8 catalog entries"')
_catalog_clause("IN-KEYS", "entries with other than the four keys, or `returns` with other than `kind`/`properties`, are diagnosed",
                '"each containing exactly `name`, `arguments`, `required`, and `returns`"')
_catalog_clause("IN-NAME", "tool names that are not IdentifierNames or are reserved words are diagnosed",
                '"Tool names must be JavaScript identifiers."')
_catalog_clause("IN-UNIQUE", "duplicate tool names or duplicate `required`/`properties` entries are diagnosed",
                '"an English string explicitly naming catalog tools and arguments" (names are unique)')
_catalog_clause("IN-ARGS", "more than 4 arguments, bad argument names or types other than string/number/boolean are diagnosed",
                '"Argument schemas contain at most four properties of type `string`, `number` or `boolean`"')
_catalog_clause("IN-REQUIRED", "`required` that is not an array of declared argument names is diagnosed",
                '"Required argument names must exist in the schema."')
_catalog_clause("IN-RETURNS", "bad return kinds or `properties` are diagnosed", '"Return kinds are `text`, `object` or `array`"')
