"""Corpora: cases kept as JSON Lines, replayed by ``certify`` before it generates new ones, and by
``codemode replay``.

One line per case::

    {"id": "3f2a9c0d81b7", "kind": "compile", "clause": "JS-ORDER", "expect": "pass",
     "source": "curated", "note": "...", "case": {...}}

``id`` is the case's content hash (the same id reports and expectations use), so a line cannot be edited
without the id saying so. ``kind`` is ``compile`` or ``plan``; ``clause`` is the clause the case is kept
for; ``expect`` is what the implementation it was found on did (``pass`` for a curated case every
conforming implementation passes, ``fail`` for a failure a campaign found and minimized). ``source`` is
``curated`` (``corpora/curated/``) or ``regression`` (``corpora/regressions/``, written by
``codemode fuzz``). Replaying a case says **FIXED** (it passes now), **FAILED** (it breaks a clause) or
**ERRORED** (no usable answer).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.cases import CompileCase
from conformance.plan_cases import PlanCase

KINDS_OF_ROLE = {"compiler": ("compile",), "planner": ("plan",), "pipeline": ("plan", "compile"), "collector": ("collect",)}


class BadCorpus(ValueError):
    """A corpus file with a line that is not a corpus entry (the message names the file and line)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    kind: str  # "compile", "plan" or "collect"
    clause: str
    expect: str  # "pass" or "fail"
    case: Any  # CompileCase or PlanCase
    source: str = "curated"
    note: str = ""

    @property
    def id(self) -> str:
        return str(self.case.id)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "clause": self.clause, "expect": self.expect,
                "source": self.source, "note": self.note, "case": self.case.to_json()}

    @classmethod
    def from_json(cls, raw: Any) -> Entry:
        from conformance import schema

        found = schema.problems("corpus-line", raw)
        if found:
            raise ValueError(found[0])
        from conformance.collect import CollectCase

        case = {"compile": CompileCase, "plan": PlanCase, "collect": CollectCase}[raw["kind"]].from_json(raw["case"])
        if case.id != raw["id"]:
            raise ValueError(f"id {raw['id']} is not the hash of its case ({case.id}); was the case edited?")
        return cls(kind=raw["kind"], clause=raw["clause"], expect=raw["expect"], case=case,
                   source=raw.get("source", "curated"), note=raw.get("note", ""))

    @classmethod
    def of(cls, case: Any, clause: str, *, expect: str, source: str, note: str = "") -> Entry:
        from conformance.collect import CollectCase

        kind = "plan" if isinstance(case, PlanCase) else "collect" if isinstance(case, CollectCase) else "compile"
        return cls(kind=kind, clause=clause, expect=expect, case=case, source=source, note=note)


def read(path: Path) -> list[Entry]:
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(Entry.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError) as err:
            raise BadCorpus(f"{path}:{number}: {err}") from err
    return out


def write(path: Path, entries: Iterable[Entry]) -> int:
    """Add ``entries`` to the corpus file ``path`` (created if missing), skipping ids already there;
    returns how many were added. Lines are sorted by clause then id, so the file diffs well."""
    existing = read(path) if path.exists() else []
    known = {e.id for e in existing}
    added = [e for e in entries if e.id not in known and not known.add(e.id)]  # type: ignore[func-returns-value]
    if not added:
        return 0
    everything = sorted(existing + added, key=lambda e: (e.clause, e.id))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e.to_json(), ensure_ascii=True, separators=(", ", ": ")) + "\n"
                            for e in everything), encoding="utf-8")
    return len(added)


def default_root() -> Path | None:
    """``corpora/`` in the working directory, else the one beside the kit's source (a checkout), else the
    curated corpora installed with the kit (``conformance/curated/``, the checkout's ``corpora/curated/``)."""
    here = Path(__file__).resolve().parent
    for root in (Path("corpora"), here.parent / "corpora", here):
        if (root / "curated").is_dir() or (root / "regressions").is_dir():
            return root
    return None


def _entries(root: Path | None) -> list[Entry]:
    """Every entry of every ``*.jsonl`` under ``root``'s ``curated/`` and ``regressions/``."""
    out: list[Entry] = []
    for sub in ("curated", "regressions"):
        folder = root / sub if root is not None else None
        for path in sorted(folder.glob("*.jsonl")) if folder is not None and folder.is_dir() else ():
            out += read(path)
    return out


def discover(root: Path | None, role: str) -> list[Entry]:
    """Every entry under ``root``'s ``curated/`` and ``regressions/`` that ``role`` is judged on."""
    return [e for e in _entries(root) if e.kind in KINDS_OF_ROLE[role]]


def find(root: Path | None, ident: str) -> list[Entry]:
    """Entries whose id starts with ``ident`` (an id or a prefix of one)."""
    return [e for e in _entries(root) if e.id.startswith(ident)]


def judge(entries: Sequence[Entry], *, compile_judge: Any = None, plan_judge: Any = None,
          collect_judge: Any = None) -> list[Any]:
    """Each entry's :class:`conformance.engine.CaseResult`, in order (each kind batched apart); an entry
    whose kind has no judge is skipped (``None``)."""
    out: list[Any] = [None] * len(entries)
    for kind, judge_ in (("compile", compile_judge), ("plan", plan_judge), ("collect", collect_judge)):
        picked = [k for k, e in enumerate(entries) if e.kind == kind]
        if judge_ is None or not picked:
            continue
        for k, result in zip(picked, judge_.evaluate([entries[k].case for k in picked])):
            out[k] = result
    return out


def outcome(result: Any) -> str:
    """FIXED, FAILED or ERRORED: how a replayed case did."""
    if result.errored is not None:
        return "ERRORED"
    return "FAILED" if result.violations else "FIXED"
