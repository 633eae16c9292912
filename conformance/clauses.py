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
from conformance.checks.planner import (
    CATALOG_CHECKS,
    PLAN_CHECKS,
    in_length,
    in_number,
    in_string,
    pl_accuracy,
    pl_determinism,
    pl_invariant,
    pl_reject,
    pl_response,
)
from conformance.stream import cli_bad_record, cli_stream

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

CHECKS: dict[str, Callable[..., Any]] = {
    "CLI-STREAM": cli_stream,
    "CLI-BAD-RECORD": cli_bad_record,
    **CATALOG_CHECKS,
    "IN-LENGTH": in_length,
    "IN-STRING": in_string,
    "IN-NUMBER": in_number,
    "PL-RESPONSE": pl_response,
    **PLAN_CHECKS,
    "PL-INVARIANT": pl_invariant,
    "PL-DETERMINISM": pl_determinism,
    "PL-ACCURACY": pl_accuracy,
    "PL-REJECT": pl_reject,
    "CO-VALIDATE": co_validate,
    **JS_CHECKS,
}

#: Clauses of SPEC.md the kit does not judge yet, and why; reported as skipped.
PENDING: dict[str, str] = {}

CLAUSES: dict[str, Clause] = {cid: Clause(id=cid, kind=_KINDS.get(cid, "hard"), check=CHECKS.get(cid)) for cid in ORDER}

COMPILER_CLAUSES = tuple(cid for cid in ORDER if cid == "CO-VALIDATE" or cid.startswith("JS-"))
JS_CLAUSES = tuple(cid for cid in ORDER if cid.startswith("JS-"))
PLANNER_CLAUSES = tuple(cid for cid in ORDER if cid.startswith(("CLI-", "IN-", "PL-")))
#: Clauses judged per role (PL-DETERMINISM also covers compile requests).
ROLE_CLAUSES = {
    "compiler": ("CLI-STREAM", "CLI-BAD-RECORD", "PL-DETERMINISM", *COMPILER_CLAUSES),
    "planner": PLANNER_CLAUSES,
    "pipeline": ORDER,
}


def spec_clauses(path: Path | None = None) -> dict[str, str]:
    """``{id: kind}`` as SPEC.md states them (kind is ``hard`` or ``scored``)."""
    text = (path or Path(__file__).resolve().parent.parent / "SPEC.md").read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for match in re.finditer(r"^### ([A-Z]+(?:-[A-Z]+)+)\s*\n+\*\*Kind:\*\* (\w+)", text, re.M):
        out[match.group(1)] = match.group(2)
    return out


def spec_thresholds(path: Path | None = None) -> dict[str, float]:
    """The default thresholds SPEC.md states: ``PL-ACCURACY``, ``PL-REJECT:recall`` and
    ``PL-REJECT:false-diagnosis``."""
    text = (path or Path(__file__).resolve().parent.parent / "SPEC.md").read_text(encoding="utf-8")
    out: dict[str, float] = {}
    for match in re.finditer(r"^### (PL-ACCURACY|PL-REJECT)\s*\n(.*?)(?=^### |^## )", text, re.M | re.S):
        cid, body = match.group(1), match.group(2)
        for line in re.findall(r"^\*\*Threshold:\*\* (.*)$", body, re.M):
            found = re.search(r"(exact-match rate|recall|false-diagnosis rate) at (?:least|most) ([0-9.]+)", line)
            if found:
                metric = {"exact-match rate": "", "recall": ":recall", "false-diagnosis rate": ":false-diagnosis"}[found.group(1)]
                out[cid + metric] = float(found.group(2))
    return out


THRESHOLDS = spec_thresholds()
