"""The one record every rule in the kit reports: which clause broke, and how."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    """A broken clause: ``clause`` is a SPEC.md id such as ``IN-NAME`` or ``JS-PARALLEL``.

    ``message`` is one sentence leading with the offending value; ``expected`` and ``actual`` are
    optional JSON-able renderings for reports. ``kind`` is the fault's stable name within its clause
    (``rows-length``, ``started-late``): what stays the same across every case one bug breaks, so that a
    fuzzing campaign files one bug once, whatever values its cases hold.
    """

    clause: str
    message: str
    expected: Any = None
    actual: Any = None
    kind: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"clause": self.clause, "message": self.message}
        if self.expected is not None:
            out["expected"] = self.expected
        if self.actual is not None:
            out["actual"] = self.actual
        if self.kind:
            out["kind"] = self.kind
        return out


class InvalidRecord(ValueError):
    """Raised by ``from_json`` when a catalog or plan breaks one or more clauses."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = tuple(violations)
        super().__init__("; ".join(f"{v.clause}: {v.message}" for v in violations))

    def diagnostic(self) -> str:
        """The text a CLI answers with: every broken clause, first one first."""
        return "; ".join(f"{v.message} [{v.clause}]" for v in self.violations)
