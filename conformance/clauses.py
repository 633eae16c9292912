"""The clause registry: every id of SPEC.md, its kind, and the check that judges it.

SPEC.md is the normative text; ``spec_clauses`` reads its ``### ID`` headings and ``**Kind:**`` lines so
a test can hold this registry and the document to each other. A clause with no check yet is listed in
``PENDING`` with the reason, and is reported as *skipped*, never as passed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.checks.compiler import JS_CHECKS, co_validate

SPEC_URL = "SPEC.md"


@dataclass(frozen=True, slots=True, kw_only=True)
class Clause:
    id: str
    kind: str  # "hard" or "scored"
    check: Callable[..., Any] | None

    @property
    def anchor(self) -> str:
        return f"{SPEC_URL}#{self.id.lower()}"


_KINDS = {
    "PL-ACCURACY": "scored",
    "PL-REJECT": "scored",
}

ORDER = (
    "CLI-STREAM CLI-BAD-RECORD IN-COUNT IN-KEYS IN-NAME IN-UNIQUE IN-ARGS IN-REQUIRED IN-RETURNS "
    "IN-LENGTH IN-STRING IN-NUMBER PL-RESPONSE PL-SCHEMA PL-MODE PL-TOOL PL-ARGS PL-SHAPE PL-OPAQUE "
    "PL-INVARIANT PL-DETERMINISM PL-ACCURACY PL-REJECT CO-VALIDATE JS-FORM JS-CALLS JS-PARALLEL "
    "JS-SEQUENTIAL JS-AWAIT JS-SYNC-THROW JS-RECORD JS-ALL JS-LAST JS-SHAPE JS-PROJECT JS-LIMIT JS-ORDER "
    "JS-ESCAPE JS-PURE"
).split()

CHECKS: dict[str, Callable[..., Any]] = {"CO-VALIDATE": co_validate, **JS_CHECKS}

#: Clauses of SPEC.md the kit does not judge yet, and why; reported as skipped.
PENDING = {
    cid: "planner clauses are certified with --role planner or pipeline, which this kit version does not run yet"
    for cid in ORDER
    if cid.startswith(("CLI-", "IN-", "PL-"))
}

CLAUSES: dict[str, Clause] = {cid: Clause(id=cid, kind=_KINDS.get(cid, "hard"), check=CHECKS.get(cid)) for cid in ORDER}

COMPILER_CLAUSES = tuple(cid for cid in ORDER if cid == "CO-VALIDATE" or cid.startswith("JS-"))


def spec_clauses(path: Path | None = None) -> dict[str, str]:
    """``{id: kind}`` as SPEC.md states them (kind is ``hard`` or ``scored``)."""
    text = (path or Path(__file__).resolve().parent.parent / "SPEC.md").read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for match in re.finditer(r"^### ([A-Z]+(?:-[A-Z]+)+)\s*\n+\*\*Kind:\*\* (\w+)", text, re.M):
        out[match.group(1)] = match.group(2)
    return out
