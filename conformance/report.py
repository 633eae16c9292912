"""Reports of a certification run: the terminal table, a JSON report, JSON Lines, JUnit XML, Markdown and
a badge.

Every failure carries its clause, the minimal request as one JSONL line, what was expected and seen,
and the command that replays it (with the absolute path of the kit's command, so it runs outside the
kit's virtual environment). Each clause record quotes its rule from SPEC.md, so a report read in another
repository needs no link; ``spec`` is a link to the clause's heading (``CODEMODE_SPEC_URL`` names where
SPEC.md is published; by default, the copy installed with the kit). Every text the kit writes survives
lone surrogates: JSON is written in ASCII, XML and Markdown escape them visibly.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.registry import clause as clause_of
from conformance.registry import spec_rule
from conformance.results import Run
from reference import __version__, jsonio


def kit_command() -> str:
    """How to run this kit's ``codemode`` from anywhere: the script beside this interpreter (a virtual
    environment's ``bin/codemode``) by its absolute path, else ``python -m conformance``."""
    script = Path(sys.executable).with_name("codemode")
    if script.is_file() and os.access(script, os.X_OK):
        return shlex.quote(str(script))
    return shlex.join([sys.executable, "-m", "conformance"])


def replay_command(target: str, role: str, case_json: dict[str, Any]) -> str:
    """The command line that re-runs one case; ``target`` is ``--cmd '...'`` or ``--python m:f``."""
    return _replay(target, role, jsonio.dumps(case_json))


def replay_file_command(target: str, role: str, path: str) -> str:
    """The command line that re-runs the case written (as its JSON) to the file at ``path``."""
    return _replay(target, role, "@" + path)


def _replay(target: str, role: str, case: str) -> str:
    return f"{kit_command()} certify --role {role} {target} --case {shlex.quote(case)}"


#: the longest replay command the terminal prints whole; a longer one (a stream case of dozens of requests,
#: a request with a long string) replays its case from a file the caller of :func:`text_report` writes, so
#: that it stays one line a reader can copy and a shell can run. The reports keep every command whole.
REPLAY_CHARS = 8000


def spec_link(cid: str) -> str:
    """A link to clause ``cid``'s heading in SPEC.md (see the module docstring)."""
    base = os.environ.get("CODEMODE_SPEC_URL")
    if not base:
        from importlib import resources

        base = Path(str(resources.files("conformance").joinpath("SPEC.md"))).resolve().as_uri()
    return f"{base}#{clause_of(cid).anchor}"


def clause_records(run: Run, target: str) -> list[dict[str, Any]]:
    out = []
    for cid in run.clauses:
        clause = clause_of(cid)
        tally = run.tallies[cid]
        status = run.status(cid)
        record: dict[str, Any] = {
            "clause": cid,
            "kind": clause.kind,
            "status": status,
            "cases": tally.cases,
            "failed": tally.failed,
            "errored": tally.errored,
            "summary": clause.summary,
            "rule": spec_rule(cid),
            "spec": spec_link(cid),
            "gating": run.gating.get(cid, True),
        }
        if tally.failed_ids:
            record["failed_case_ids"] = tally.failed_ids[:MAX_IDS]
        if clause.kind == "scored":
            record["metrics"] = _metrics(run, cid, target)
        if cid in run.skipped:
            record["reason"] = run.skipped[cid]
        example = tally.minimal or tally.first_failure
        if status == "failed" and example is not None:
            case, violation = example
            record["counterexample"] = {
                "case_id": case.id,
                "message": violation.message,
                "expected": violation.expected,
                "actual": violation.actual,
                "request": case.request_line(),
                "case": case.to_json(),
                "replay": replay_command(target, run.role, case.to_json()),
                "minimal": tally.minimal is not None,
            }
            if tally.minimal_note:
                record["counterexample"]["note"] = tally.minimal_note
        if tally.errored and tally.first_error is not None and tally.first_error.errored is not None:
            err = tally.first_error
            assert err.errored is not None
            record["error"] = {
                "reason": err.errored.reason,
                "stderr": err.errored.stderr,
                "request": err.case.request_line(),
            }
        out.append(record)
    return out


def _metrics(run: Run, cid: str, target: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric, (rate, threshold, meets) in run.metrics(cid).items():
        tally = run.scores.get(metric)
        families = {}
        if tally is not None:
            for family in sorted(tally.total):
                families[family] = {"rate": tally.rate(family), "ok": tally.ok[family], "cases": tally.total[family]}
        declared = next(m for m in clause_of(cid).metrics if m.name == metric)
        entry: dict[str, Any] = {
            "rate": rate,
            "threshold": threshold,
            "bound": declared.bound,
            "meets": meets,
            "cases": sum(tally.total.values()) if tally else 0,
            "families": families,
        }
        failing = run.failing_families(declared)  # each credibly past the threshold on its own
        if failing:
            entry["failing_families"] = failing
        apart = {f: {"ok": a[0], "cases": a[1]} for f in families if (a := run.apart(metric, f)) is not None}
        if apart:  # families judged again on cases drawn apart from those explored, and on those alone
            entry["apart"] = apart
        if metric in run.settled:
            entry["settled"] = {"explored": run.settled[metric], "drawn": entry["cases"] - run.settled[metric],
                                "undecided": run.undecided(declared)}
        if tally is not None and tally.axes_total:
            entry["phrasings"] = {label: {"rate": tally.axes_ok[label] / n, "ok": tally.axes_ok[label], "cases": n}
                                  for label, n in sorted(tally.axes_total.items())}
        if tally is not None and tally.first_miss:
            # the miss shown is of a family that fails on its own, else of the family with the most misses
            family = min(tally.first_miss, key=lambda f: (f not in failing, tally.ok[f] - tally.total[f], f))
            case, answer = tally.first_miss[family]
            entry["example_miss"] = {"family": family, "request": case.request_line(), "case": case.to_json(),
                                     "expected": case.expect, "answer": answer,
                                     "replay": replay_command(target, run.role, case.to_json())}
        out[metric] = entry
    if cid == "PL-REJECT":
        recall = run.scores.get("recall")
        false = run.scores.get("false-diagnosis")
        diagnosed_unsupported = sum(recall.ok.values()) if recall else 0
        diagnosed_supported = sum(false.ok.values()) if false else 0
        total = diagnosed_unsupported + diagnosed_supported
        out["precision"] = {"rate": diagnosed_unsupported / total if total else None, "diagnosed": total}
    return out


MAX_IDS = 100  # failing case ids listed per clause in the JSON report (the JSON Lines report has all)


def json_report(
    run: Run, *, implementation: str, target: str, manifest: dict[str, Any] | None = None
) -> dict[str, Any]:
    records = clause_records(run, target)
    summary = {s: sum(1 for r in records if r["status"] == s) for s in ("passed", "failed", "errored", "skipped")}
    return {
        "kit": {"name": "codemode-conformance-kit", "version": __version__},
        "implementation": implementation,
        "manifest": manifest or {},
        "target": target,
        "role": run.role,
        "profile": run.profile.name,
        "seed": run.seed,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(run.started)),
        "seconds": round(run.seconds, 3),
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": _cpus()},
        "cases": run.cases,
        "corpus_cases": run.replayed,
        **({"errored_by_class": dict(sorted(run.conditions.items()))} if run.conditions else {}),
        "budget_seconds": run.profile.seconds,
        "stopped": run.stopped,
        **({"settle_stopped": run.settle_stopped} if run.settle_stopped else {}),
        "repeat": run.profile.repeat,
        "clauses": records,
        "flaky": [
            {
                "case_id": case.id,
                "request": case.request_line(),
                "case": case.to_json(),
                "outcomes": [_repeat_label(r) for r in repeats],
                "clauses": sorted({v.clause for r in repeats for v in r.violations}
                                  | {sc.clause for r in repeats for sc in r.scores}),
                "replay": replay_command(target, run.role, case.to_json()),
            }
            for case, repeats in run.flaky
        ],
        "summary": {**summary, "flaky cases": len(run.flaky)},
    }


def _repeat_label(result: Any) -> str:
    """One repeat of a flaky case: its outcome, and its scored verdicts (which may be all that changed)."""
    scores = result.scores
    if not scores:
        return str(result.outcome)
    return f"{result.outcome} ({', '.join(f'{sc.metric} {sc.ok}'.lower() for sc in scores)})"


def _cpus() -> int:
    return os.cpu_count() or 0


def junit_xml(report: dict[str, Any]) -> str:
    """One ``testcase`` per clause, named by its id."""
    records = report["clauses"]
    suite = ET.Element(
        "testsuite",
        name=f"codemode certify ({report['role']})",
        tests=str(len(records)),
        failures=str(report["summary"]["failed"]),
        errors=str(report["summary"]["errored"]),
        skipped=str(report["summary"]["skipped"]),
        time=f"{report['seconds']:.3f}",
        timestamp=report["started"],
    )
    props = ET.SubElement(suite, "properties")
    for name in ("implementation", "profile", "seed"):
        ET.SubElement(props, "property", name=name, value=str(report[name]))
    for r in records:
        case = ET.SubElement(suite, "testcase", classname=f"codemode.{report['role']}", name=r["clause"])
        ET.SubElement(case, "system-out").text = _xml_safe(f"{r['cases']} cases; {r['clause']}: {r['rule']}")
        if r["status"] == "failed" and "counterexample" in r:
            cx = r["counterexample"]
            node = ET.SubElement(case, "failure", message=_xml_safe(cx.get("message", "failed")), type=r["clause"])
            node.text = _xml_safe(
                f"{r['failed']} of {r['cases']} cases failed.\n"
                f"{'minimal' if cx.get('minimal') else 'first failing'} request: {cx.get('request')}\n"
                f"replay: {cx.get('replay')}"
            )
        elif r["status"] == "failed":  # a scored clause: its rates, and one miss of each rate short of its threshold
            rates = {name: m for name, m in r.get("metrics", {}).items() if isinstance(m, dict) and "meets" in m}
            short = [name for name, m in rates.items() if not m["meets"]]
            message = "; ".join(f"{name} {_rate(rates[name]['rate'])} ({rates[name]['bound']}"
                                f" {_rate(rates[name]['threshold'])} required)" for name in short) or "failed"
            node = ET.SubElement(case, "failure", message=_xml_safe(message), type=r["clause"])
            text = [f"{name}: {_rate(m['rate'])} of {m['cases']} cases, {m['bound']} {_rate(m['threshold'])} required"
                    + ("" if m["meets"] else " (MISSED)") + "".join(f"; {why}" for why in _failing_families(m))
                    for name, m in rates.items()]
            for name in short:
                miss = rates[name].get("example_miss")
                if miss:
                    text += [f"one miss of {name}, family {miss['family']}:", f"  request: {miss['request']}",
                             f"  expected: {jsonio.dumps(miss['expected'])}", f"  answer: {jsonio.dumps(miss['answer'])}"]
                    if miss.get("replay"):
                        text.append(f"  replay: {miss['replay']}")
            node.text = _xml_safe("\n".join(text))
        elif r["status"] == "errored":
            err = r.get("error", {})
            node = ET.SubElement(case, "error", message=_xml_safe(err.get("reason", "errored")))
            node.text = _xml_safe(f"request: {err.get('request')}\nstderr:\n{err.get('stderr', '')}")
        elif r["status"] == "skipped":
            ET.SubElement(case, "skipped", message=r.get("reason", "no case exercised this clause"))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


#: how much of a counterexample's expected and actual text the terminal and Markdown reports show (the JSON
#: report and the replay have all of it)
EXCERPT_CHARS = 400


def _failing_families(m: dict[str, Any]) -> list[str]:
    """Why a rate that meets its threshold overall may still miss it: each family that misses it on its own;
    and each family that did so over the cases explored but not over as many drawn apart from them."""
    out = []
    side = "below" if m["bound"] == "at least" else "above"
    apart = m.get("apart", {})
    for f in m.get("failing_families", []):
        v, a = m["families"][f], apart.get(f)
        over = f"{a['ok']} of {a['cases']} drawn apart from its other cases" if a else f"{v['ok']} of {v['cases']}"
        out.append(f"family {shown(f)} misses it on its own: {over}, its 95% interval all {side} {m['threshold']}")
    for f, a in apart.items():
        if f not in m.get("failing_families", []):
            v = m["families"][f]
            out.append(f"family {shown(f)} missed it on its own over its other cases"
                       f" ({v['ok'] - a['ok']} of {v['cases'] - a['cases']}), not over {a['cases']} drawn apart from"
                       f" them ({a['ok']} of {a['cases']}): judged on those")
    return out


def _excerpt_text(text: str, limit: int = EXCERPT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


#: the most of a request the terminal shows (a plan request with its catalog is well under it)
REQUEST_CHARS = 2000


def request_text(text: str) -> str:
    """A request on the terminal: whole, as one JSONL line, up to ``REQUEST_CHARS`` (a stream case's dozens of
    requests, or a request with a long string, in part: the replay and the reports have it whole)."""
    return _excerpt_text(shown(text), REQUEST_CHARS)


def _rate(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _xml_safe(text: str) -> str:
    # XML 1.0 cannot hold most control characters or lone surrogates: escape them visibly
    out = []
    for ch in text:
        cp = ord(ch)
        if cp in (0x9, 0xA, 0xD) or 0x20 <= cp <= 0xD7FF or 0xE000 <= cp <= 0xFFFD or cp > 0xFFFF:
            out.append(ch)
        else:
            out.append(f"\\u{cp:04x}")
    return "".join(out)


def text_report(report: dict[str, Any], *, case_file: Callable[[dict[str, Any]], str] | None = None) -> str:
    """The terminal's report. Requests are shown up to ``REQUEST_CHARS``, what was expected and answered up to
    ``EXCERPT_CHARS``; a replay command over ``REPLAY_CHARS`` replays its case from the file
    ``case_file(case)`` writes and names, or, with no ``case_file``, is shown in part, pointing at the JSON
    report, which has it whole."""

    def replay(command: str, case: dict[str, Any] | None) -> str:
        if len(command) <= REPLAY_CHARS:
            return command
        if case_file is not None and case is not None:
            return replay_file_command(report["target"], report["role"], case_file(case))
        return command[:EXCERPT_CHARS] + f"… ({len(command)} characters; the JSON report has the whole command)"

    lines = [
        f"codemode certify — {report['role']}: {report['implementation']}",
        f"profile {report['profile']}, seed {report['seed']}, {report['cases']} cases"
        f" ({report.get('corpus_cases', 0)} from the corpora) in {report['seconds']:.1f}s",
        *([f"STOPPED EARLY: {report['stopped']} ({report['budget_seconds']:g}s); the verdicts below judge the"
           " cases run so far"] if report.get("stopped") else []),
        *([f"SETTLING STOPPED EARLY: {report['settle_stopped']}; undecided rates are judged on the cases run so far"]
          if report.get("settle_stopped") else []),
        "",
        f"{'clause':<15} {'result':<8} {'cases':>6} {'failed':>7} {'errored':>8}",
    ]
    for r in report["clauses"]:
        status = r["status"].upper() if r["status"] in ("failed", "errored") else r["status"]
        note = "" if r.get("gating", True) else "  (reported, not gating)"
        if r.get("reason") and r["status"] == "skipped":
            note = f"  ({r['reason']})"
        failed = "-" if r.get("kind") == "scored" else r["failed"]  # a scored clause is judged by its rates, below
        lines.append(f"{r['clause']:<15} {status:<8} {r['cases']:>6} {failed:>7} {r['errored']:>8}{note}")
        for metric, m in r.get("metrics", {}).items():
            if metric == "precision":
                if m["rate"] is not None:
                    lines.append(f"{'':<15}   precision of diagnosing {m['rate']:.4f} over {m['diagnosed']} diagnosed")
                continue
            rate = "n/a" if m["rate"] is None else f"{m['rate']:.4f}"
            lines.append(f"{'':<15}   {metric} {rate} ({m['bound']} {m['threshold']}) over {m['cases']} cases"
                         + ("" if m["meets"] else "  <-- MISSES THRESHOLD"))
            lines += [f"{'':<15}     {text}" for text in _failing_families(m)]
            if "settled" in m:
                s = m["settled"]
                lines.append(f"{'':<15}     settled: over the {s['explored']} cases explored its 95% interval held the"
                             f" threshold, so {s['drawn']} more were drawn"
                             + ("; still undecided at the most cases, judged by the rate" if s["undecided"] else ""))
            fams = ", ".join(f"{f} {v['ok']}/{v['cases']}" for f, v in m["families"].items())
            if fams:
                lines.append(f"{'':<15}     {fams}")
            # the phrasing forms with the most misses for their cases (a miss: a case short of a hit, or, for an
            # "at most" rate such as false diagnoses, a case it counts)
            misses = {label: (v["ok"] if m["bound"] == "at most" else v["cases"] - v["ok"], v["cases"])
                      for label, v in m.get("phrasings", {}).items()}
            worst = sorted((-bad / n, label) for label, (bad, n) in misses.items() if bad)[:4]
            if worst:
                lines.append(f"{'':<15}     phrasings with most misses: "
                             + ", ".join(f"{label} {misses[label][0]} of {misses[label][1]}" for _, label in worst))
    for r in report["clauses"]:
        miss = next((m.get("example_miss") for m in r.get("metrics", {}).values() if isinstance(m, dict) and not m.get("meets", True) and m.get("example_miss")), None)
        if r["status"] == "failed" and miss:
            lines += ["", f"{r['clause']} misses its threshold; one miss, family {shown(miss['family'])}:",
                      f"  request: {request_text(miss['request'])}",
                      f"  expected: {_excerpt_text(jsonio.dumps(miss['expected']))}",
                      f"  answer:   {_excerpt_text(jsonio.dumps(miss['answer']))}"]
            if miss.get("replay"):
                lines.append(f"  replay: {replay(miss['replay'], miss.get('case'))}")
        if r["status"] == "failed" and "counterexample" in r:
            cx = r["counterexample"]
            lines += [
                "",
                f"{r['clause']} failed on {r['failed']} of {r['cases']} cases: {r['summary']}",
                f"  {shown(cx['message'])}",
                f"  {'minimal' if cx.get('minimal') else 'first failing'} request: {request_text(cx['request'])}",
            ]
            for label in ("expected", "actual"):  # what the clause wanted and what the implementation did
                if cx.get(label) is not None:
                    lines.append(f"  {label}: {_excerpt_text(shown(str(cx[label])))}")
            lines.append(f"  replay: {replay(cx['replay'], cx.get('case'))}")
            if cx.get("note"):
                lines.append(f"  ({cx['note']})")
        elif r["status"] == "errored" and "error" in r:
            err = r["error"]
            lines += ["", f"{r['clause']} errored on {r['errored']} case{'s' if r['errored'] != 1 else ''}: {shown(err['reason'])}", f"  request: {request_text(err['request'])}"]
            if err["stderr"].strip():
                tail = err["stderr"].strip()[-800:].split("\n")
                lines.append("  stderr: " + "\n          ".join(shown(line) for line in tail))
    for flaky in report.get("flaky", [])[:10]:
        lines += ["", f"FLAKY case {flaky['case_id']}: outcomes {', '.join(flaky['outcomes'])} over"
                  f" {report['repeat']} repeats ({', '.join(flaky['clauses']) or 'no clause named'})",
                  f"  request: {request_text(flaky['request'])}", f"  replay: {replay(flaky['replay'], flaky.get('case'))}"]
    lines += _driver_text(report)
    from conformance import english

    lines += english.text(report.get("english", {}))
    s = report["summary"]
    lines += ["", f"{s['passed']} passed, {s['failed']} failed, {s['errored']} errored, {s['skipped']} skipped"
              + (f"; {s['flaky cases']} flaky cases (judged differently on repeats, reported apart from failures)"
                 if s.get("flaky cases") else "")]
    return "\n".join(lines)


def _driver_text(report: dict[str, Any]) -> list[str]:
    """What the text report says of an HTTP planner's driver and of errored cases by class."""
    lines: list[str] = []
    if report.get("errored_by_class"):
        lines += ["", "errored cases by class: " + ", ".join(f"{k} {v}" for k, v in report["errored_by_class"].items())]
    d = report.get("driver")
    if not d:
        return lines
    lines += ["", f"driver: {shown(d['url'])} model {shown(d['model'])}, mode {d['mode']}, prompt {shown(d['prompt']['name'])}"
              f" {d['prompt']['digest']}, {d['attempts']} attempt(s) of {d['timeout']:g}s, concurrency {d['concurrency']}"
              + (", answers as streamed tool calls" if d.get("wire") == "tools" else ""),
              f"  answers: {d['answers']['first_try']} at the first try, {d['answers']['repaired']} after a repair"
              + ("; conditions: " + ", ".join(f"{k} {v}" for k, v in d["conditions"].items()) if d["conditions"] else "")]
    if "record" in d:
        lines.append(f"  recorded to {shown(d['record']['file'])}")
    if "replay" in d:
        r = d["replay"]
        lines.append(f"  replayed from {shown(r['file'])}: {r['unused']} recorded answers unused"
                     + (f" ({', '.join(u[:19] + '…' for u in r['unused_requests'][:5])})" if r["unused"] else ""))
    fake = d.get("fake")
    if fake:
        lines.append(f"  the fake: {fake.get('served', 0)} requests served; fake_exhausted {fake.get('exhausted', 0)};"
                     f" fake_unused {len(fake.get('unused', []))}"
                     + (f" ({', '.join(shown(str(u)) for u in fake['unused'][:8])})" if fake.get("unused") else ""))
    return lines


def dump(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=True)


def jsonl_report(run: Run, report: dict[str, Any]) -> str:
    """JSON Lines: a header, one record per judged case (in order), one per clause, and a summary; each
    line is valid against ``conformance/schemas/report-line.schema.json``."""
    header = {k: report[k] for k in ("kit", "implementation", "manifest", "target", "role", "profile", "seed",
                                       "started", "machine")}
    lines = [{"type": "header", **header}]
    for entry in run.log:
        case, outcome = entry.case, entry.outcome
        line: dict[str, Any] = {"type": "case", "id": case.id, "outcome": outcome}
        if entry.missed:  # passed every hard clause it exercised, but is a miss of a scored rate: what was
            line["missed"] = list(entry.missed)  # expected of it, and the phrasing forms its request was in
            line["expected"] = case.expect
            if getattr(case, "axes", None):
                line["axes"] = list(case.axes)
        if outcome != "passed" or entry.missed:
            line["request"] = case.request_line()
            line["violations"] = [
                {"clause": v.clause, "message": v.message, "expected": _text(v.expected), "actual": _text(v.actual)}
                for v in entry.violations
            ]
            if entry.answer is not None:
                line["answer"] = entry.answer
            if entry.error is not None:
                line["error"] = {"reason": entry.error.reason, **({"class": entry.error.condition}
                                                                  if entry.error.condition else {})}
            line["replay"] = replay_command(report["target"], run.role, case.to_json())
        lines.append(line)
    for record in report["clauses"]:
        lines.append({"type": "clause", **record})
    summary = {k.replace(" ", "_"): v for k, v in report["summary"].items()}
    lines.append({"type": "summary", "cases": report["cases"], "seconds": report["seconds"], **summary})
    return "".join(json.dumps(line, ensure_ascii=True, separators=(",", ":")) + "\n" for line in lines)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def badge(report: dict[str, Any]) -> dict[str, Any]:
    """A shields.io endpoint badge: ``N/M clauses``, green when every judged clause passed."""
    s = report["summary"]
    judged = s["passed"] + s["failed"] + s["errored"]
    color = "brightgreen" if judged and s["passed"] == judged else ("yellow" if s["passed"] else "red")
    return {"schemaVersion": 1, "label": f"codemode {report['role']}", "message": f"{s['passed']}/{judged} clauses",
            "color": color}


def markdown_report(report: dict[str, Any], verdict: Any = None) -> str:
    """A summary fit for a CI job summary (GitHub's ``$GITHUB_STEP_SUMMARY``): the outcome, one row per
    clause, and each failure with its minimal request and replay command."""
    s = report["summary"]
    icon = {"passed": "✅", "failed": "❌", "errored": "⚠️", "skipped": "➖"}
    name = report["manifest"].get("name") or report["implementation"]
    version = report["manifest"].get("version")
    lines = [
        f"## codemode certify: {name}{f' {version}' if version else ''} ({report['role']})",
        "",
        f"**{s['passed']} passed, {s['failed']} failed, {s['errored']} errored, {s['skipped']} skipped** — "
        f"profile `{report['profile']}`, seed `{report['seed']}`, {report['cases']} cases in {report['seconds']:.0f}s, "
        f"kit {report['kit']['version']}",
        "",
    ]
    if verdict is not None:
        lines += [f"Expectations gate: **{'passed' if verdict.ok else 'FAILED'}**"
                  + (f" ({len(verdict.known)} known failures)" if verdict.known else ""), ""]
        lines += [f"- {m}" for m in verdict.messages]
        lines.append("")
    known = set(verdict.known) if verdict is not None else set()
    lines += ["| clause | result | cases | failed | errored | notes |", "|---|---|---:|---:|---:|---|"]
    for r in report["clauses"]:
        notes = []
        for metric, m in r.get("metrics", {}).items():
            if metric != "precision" and m.get("rate") is not None:
                notes.append(f"{metric} {m['rate']:.4f} ({m['bound']} {m['threshold']})"
                             + "".join(f"; {why}" for why in _failing_families(m)))
        if not r.get("gating", True):
            notes.append("not gating")
        if r["status"] == "skipped" and r.get("reason"):
            notes.append(r["reason"])
        result = f"{icon.get(r['status'], '')} {r['status']}"
        if r["status"] in ("failed", "errored") and r.get("gating", True) and verdict is not None:
            # in a gated run, what the expectations already list is not news; what they do not list is
            result = f"☑️ {r['status']} (known)" if r["clause"] in known else f"{icon[r['status']]} **{r['status'].upper()} (new)**"
        failed = "-" if r.get("kind") == "scored" else r["failed"]  # judged by its rates (the notes)
        lines.append(f"| {_link(r)} | {result} | {r['cases']} | {failed} | {r['errored']} | {_md('; '.join(notes))} |")
    for r in report["clauses"]:
        tag = " (known)" if r["clause"] in known else (" (new)" if verdict is not None and r.get("gating", True) else "")
        if r["status"] == "failed" and "counterexample" in r:
            cx = r["counterexample"]
            lines += ["", f"### {r['clause']} failed{tag} ({r['failed']} of {r['cases']} cases)", "", f"> {_md(r['rule'])}", "",
                      _md(cx["message"]), "", "Minimal request:" if cx.get("minimal") else "First failing request:", "",
                      *_fenced(cx["request"], "json")]
            for label in ("expected", "actual"):
                if cx.get(label) is not None:
                    lines += ["", f"{label.capitalize()}:", "", *_fenced(_excerpt_text(str(cx[label])), "text")]
            lines += ["", "Replay:", "", *_fenced(cx["replay"], "sh")]
        elif r["status"] == "errored" and "error" in r:
            lines += ["", f"### {r['clause']} errored{tag}", "", _md(r["error"]["reason"]), "", *_fenced(r["error"]["request"], "json")]
    if report.get("stopped"):
        lines += ["", f"**Stopped early:** {report['stopped']} ({report['budget_seconds']:g}s); the verdicts judge the"
                  " cases run so far."]
    return _xml_safe("\n".join(lines) + "\n")


def _link(record: dict[str, Any]) -> str:
    spec = str(record["spec"])
    # a file: link is dead anywhere but the machine that wrote it (a CI job summary): only real URLs link
    return f"[{record['clause']}]({spec})" if spec.startswith(("http://", "https://")) else record["clause"]


_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def shown(text: str) -> str:
    """``text`` from an implementation, safe to print: every control character (line breaks, escape
    sequences, bidirectional overrides) and lone surrogate as a visible escape, so what an implementation
    wrote can neither move the terminal's cursor nor forge a line of the report."""
    return _CONTROLS.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _md(text: str) -> str:
    """Text for a Markdown table cell or paragraph: escaped controls, no HTML, no table break."""
    return shown(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def _fenced(text: str, lang: str) -> list[str]:
    """A Markdown code block holding ``text``, with a fence longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, shown(text), fence]

