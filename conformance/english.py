"""People's English: how a planner does on independent, hand-written corpora.

Generated English (PL-ACCURACY, PL-REJECT) is as broad as the phrasing grammar; these corpora were
written by people who never saw it (``corpora/heldout/README.md``, ``corpora/people/README.md``), so
their rates say how a planner does on English nobody here generated. They are reported beside the
verdicts, never as one: a corpus is a measurement, not a contract clause, and its cases have no
shrinking or replay. The corpora ship with the kit (``conformance/english/``).

A corpus is JSON Lines of ``{"id", "family", "instruction", "tools", "expect"}`` where ``expect`` is
``{"plan": PLAN}`` (the only right answer, compared as SPEC.md's "Two plans are equal") or
``{"diagnostic": true}`` (any diagnostic is right). Supported families are single, sequential, parallel
and shaping; any other family is an unsupported one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reference import jsonio
from reference.jsonio import json_equal

SUPPORTED = ("single", "sequential", "parallel", "shaping")
CHUNK = 64  # requests per exchange


def shipped() -> list[Path]:
    """The independent corpora that ship with the kit."""
    folder = Path(__file__).resolve().parent / "english"
    return sorted(p for p in folder.glob("*.jsonl") if p.is_file())


def read(path: Path) -> list[dict[str, Any]]:
    """The cases of a corpus file; ``ValueError`` naming the first bad line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read the corpus {path}: {err}") from err
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = jsonio.loads(line)
        except ValueError as err:
            raise ValueError(f"{path}:{n}: not JSON ({err})") from err
        expect = row.get("expect") if isinstance(row, dict) else None
        if not (isinstance(row, dict) and isinstance(row.get("instruction"), str) and isinstance(row.get("family"), str)
                and "tools" in row and isinstance(expect, dict) and (set(expect) == {"plan"} or expect == {"diagnostic": True})):
            raise ValueError(f"{path}:{n}: a case is {{family, instruction, tools, expect: {{plan}} or {{diagnostic: true}}}}")
        rows.append(row)
    return rows


def evaluate(adapter: Any, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Send every case's plan request through ``adapter`` and count: exact plans per supported family,
    diagnoses per unsupported family, false diagnoses; an errored answer is counted apart, in no rate."""
    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    errored = false_diagnosis = 0
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        answers = adapter.exchange([{"instruction": r["instruction"], "tools": r["tools"]} for r in chunk])
        for row, answer in zip(chunk, answers):
            if not isinstance(answer, dict) or not (("plan" in answer) ^ ("diagnostic" in answer)):
                errored += 1
                continue
            family = row["family"]
            total[family] += 1
            expected = row["expect"].get("plan")
            if expected is None:
                hit[family] += "diagnostic" in answer
            elif "diagnostic" in answer:
                false_diagnosis += 1
            else:
                hit[family] += json_equal(answer["plan"], expected)
    supported = [f for f in total if f in SUPPORTED]
    others = [f for f in total if f not in SUPPORTED]
    n_sup, n_un = sum(total[f] for f in supported), sum(total[f] for f in others)
    return {
        "cases": len(rows),
        "errored": errored,
        "supported": {"cases": n_sup, "exact": sum(hit[f] for f in supported) / n_sup if n_sup else None},
        "unsupported": {"cases": n_un, "diagnosed": sum(hit[f] for f in others) / n_un if n_un else None},
        "false_diagnosis": false_diagnosis / n_sup if n_sup else None,
        "families": {f: {"cases": total[f], "rate": hit[f] / total[f]} for f in sorted(total)},
    }


def text(results: dict[str, dict[str, Any]]) -> list[str]:
    """The report's lines for ``results`` (corpus name -> :func:`evaluate`)."""
    if not results:
        return []
    lines = ["", "People's English (independent hand-written corpora; measured, not a clause):"]
    for name, r in results.items():
        rate = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        lines.append(f"  {name}: exact plans {rate(r['supported']['exact'])} of {r['supported']['cases']} supported,"
                     f" {rate(r['unsupported']['diagnosed'])} of {r['unsupported']['cases']} unsupported diagnosed,"
                     f" false diagnoses {rate(r['false_diagnosis'])}" + (f", {r['errored']} errored" if r["errored"] else ""))
        fams = ", ".join(f"{f} {v['rate']:.2f}" for f, v in r["families"].items() if f in SUPPORTED)
        lines.append(f"    {fams}")
    return lines
