"""Expectations: the CI gate (``codemode certify --expect FILE``, ``--update-expectations``).

An expectations file lists what is known to fail and the floors scored clauses must stay at or above::

    {
      "format": 1,
      "role": "pipeline",
      "failures": {"JS-ORDER": "calls start before the previous one settles (tracked in #12)",
                   "case:9f2c0a1b7d3e4f56": "an unterminated-string case we diagnose late"},
      "floors": {"PL-ACCURACY": 0.93, "PL-REJECT:recall": 0.9, "PL-REJECT:false-diagnosis": 0.05}
    }

A key of ``failures`` is a clause id (the clause may fail) or ``case:<id>`` (that case may fail; a clause
whose every failing case is listed counts as known). A floor is a lower bound on a rate, except for
``PL-REJECT:false-diagnosis``, where it is an upper bound. The gate fails on

* a **new failure**: a gating clause that failed or errored and is not known to;
* a **rate past its floor**;
* a **stale expectation**: a listed clause that passed, or a listed case that was judged and passed,

so the file can only tighten: fixing something forces it out of the list. ``--update-expectations``
writes the run's failures and rates as the new file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.registry import registry

FORMAT = 1
#: a floor key (a scored clause's metric key) -> (clause record, metric in its ``metrics``)
FLOOR_KEYS = {m.key: (cid, m.name) for cid, c in registry().items() for m in c.metrics}
#: the keys whose floor is a ceiling (an ``at most`` metric, such as the false-diagnosis rate)
UPPER_BOUNDS = frozenset(m.key for c in registry().values() for m in c.metrics if m.bound == "at most")


class BadExpectations(ValueError):
    """An expectations file that cannot be used (unreadable, not valid against its schema, wrong role)."""


@dataclass(slots=True)
class Expectations:
    role: str | None = None
    failures: dict[str, str] = field(default_factory=dict)
    floors: dict[str, float] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Expectations:
        from conformance import schema

        try:
            raw = schema.read("expectations", path)
        except schema.BadFile as err:
            raise BadExpectations(str(err)) from err
        unknown = sorted(set(raw.get("floors", {})) - set(FLOOR_KEYS))
        if unknown:
            raise BadExpectations(f"{path}: {unknown[0]!r} is not a scored metric (one of {', '.join(FLOOR_KEYS)})")
        return cls(role=raw.get("role"), failures=dict(raw.get("failures", {})), floors=dict(raw.get("floors", {})))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": FORMAT}
        if self.role is not None:
            out["role"] = self.role
        out["failures"] = dict(sorted(self.failures.items()))
        out["floors"] = dict(sorted(self.floors.items()))
        return out

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=True) + "\n", encoding="utf-8")


@dataclass(slots=True)
class Verdict:
    """What the gate found; ``ok`` when nothing new failed, no rate passed its floor, nothing is stale."""

    new_failures: list[str] = field(default_factory=list)  # clause ids
    past_floor: list[str] = field(default_factory=list)  # floor keys, with the rate in the message
    stale: list[str] = field(default_factory=list)  # failure keys that now pass
    known: list[str] = field(default_factory=list)  # clauses that failed as expected
    messages: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.new_failures or self.past_floor or self.stale)


def rate(report: dict[str, Any], key: str) -> float | None:
    cid, metric = FLOOR_KEYS[key]
    for record in report["clauses"]:
        if record["clause"] == cid:
            value = record.get("metrics", {}).get(metric, {}).get("rate")
            return None if value is None else float(value)
    return None


def gate(report: dict[str, Any], expected: Expectations, *, passed: set[str] | frozenset[str] = frozenset()) -> Verdict:
    """Judge a certification report (``conformance.report.json_report``) against expectations; ``passed``
    holds the ids of the cases that passed in the run (a listed case among them is stale)."""
    if expected.role is not None and expected.role != report["role"]:
        raise BadExpectations(f"the expectations are for role {expected.role}, the run is {report['role']}")
    verdict = Verdict()
    failing_cases: dict[str, set[str]] = {}
    for record in report["clauses"]:
        cid = record["clause"]
        failing_cases[cid] = set(record.get("failed_case_ids", ()))
        bad = record["status"] in ("failed", "errored")
        if not record.get("gating", True):
            continue
        listed = cid in expected.failures
        cases_listed = bool(failing_cases[cid]) and all(f"case:{c}" in expected.failures for c in failing_cases[cid])
        if bad and (listed or cases_listed):
            verdict.known.append(cid)
        elif bad:
            verdict.new_failures.append(cid)
            verdict.messages.append(f"NEW FAILURE {cid}: {record['status']} ({_why(record)})")
        elif listed and record["status"] == "passed":
            verdict.stale.append(cid)
            verdict.messages.append(f"STALE {cid}: listed as failing, but it passed; remove it from the expectations")
    for key in expected.failures:
        if key.startswith("case:") and key[5:] in passed:
            verdict.stale.append(key)
            verdict.messages.append(f"STALE {key}: listed as failing, but it passed; remove it from the expectations")
    for key, floor in sorted(expected.floors.items()):
        value = rate(report, key)
        if value is None:
            continue
        upper = key in UPPER_BOUNDS
        if (value > floor) if upper else (value < floor):
            verdict.past_floor.append(key)
            bound = "ceiling" if upper else "floor"
            verdict.messages.append(f"BELOW FLOOR {key}: {value:.4f} is past its {bound} {floor}")
    return verdict


def from_report(report: dict[str, Any], previous: Expectations | None = None) -> Expectations:
    """Expectations that let this run's report through exactly: its failing clauses and its rates. Notes
    a previous file gave a still-failing clause are kept."""
    notes = previous.failures if previous else {}
    out = Expectations(role=report["role"])
    for record in report["clauses"]:
        if record.get("gating", True) and record["status"] in ("failed", "errored"):
            out.failures[record["clause"]] = notes.get(record["clause"]) or f"{record['status']}: {_why(record)}"
    for key in FLOOR_KEYS:
        value = rate(report, key)
        if value is not None:
            # 4 decimals, rounded towards the looser side so the run itself passes its own floors
            scaled = value * 10_000
            out.floors[key] = (int(-(-scaled // 1)) if key in UPPER_BOUNDS else int(scaled // 1)) / 10_000
    return out


def _why(record: dict[str, Any]) -> str:
    if "counterexample" in record:
        return str(record["counterexample"]["message"])[:200]
    if "error" in record:
        return str(record["error"]["reason"])[:200]
    for name, metric in record.get("metrics", {}).items():
        if isinstance(metric, dict) and metric.get("meets") is False:
            return f"{name} {metric['rate']} against {metric['threshold']}"
    return f"{record.get('failed', 0)} failed, {record.get('errored', 0)} errored of {record.get('cases', 0)} cases"
