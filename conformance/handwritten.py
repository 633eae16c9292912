"""Hand-written training cases for the reference planner, with per-token truth found by decoding.

``corpora/train/`` holds planner cases written by people, one at a time, in the record format of the
independent corpora (``{"id", "family", "instruction", "tools", "expect"}``); those trained on ship with the
kit as ``conformance/handwritten/`` (links into ``corpora/train/``, whose README says which). A case says
the plan, not which word is which, so its per-token tags are *found*: :func:`align` tags the plan's tool,
argument, value, field and limit tokens as the grammar would (the nearest name and value that belong
together, on the side they are said), tries the few readings where a case leaves a choice (which mention of
a tool is the call, a tool named once for repeated calls, an argument said once for every call), and keeps
the first reading that the reference planner's own decoder turns into exactly the expected plan. A case no
reading decodes is left out of training and counted, never guessed.

A supported case's output kind is trained as the default (``default``) wherever it is the kind an instruction
that names none gets (``last`` for one call, ``all`` for several): so the network learns that most people's
requests name no output kind, and ``last`` for several calls only where a case asks for it. (A case may say
the default in so many words, "send me both results"; the default decodes to the same kind.)

Unsupported cases train only the schedule (``reject``): their families are refused for what they ask
(conditions, loops, ...), or for an argument the tool does not have said with a value (which the decoder
would otherwise read as said in passing, and plan without it). The families that are refused by validation
(a required argument missing, a value not written as one) are left out: their words look supported, and the
grammar's own renderings of them teach the tags they have.

These cases are training data only: the kit never certifies with them, and no corpus a planner is measured
on (``conformance/english/``, ``corpora/dev/``) is among them.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from reference import jsonio
from reference.catalog import Catalog
from reference.jsonio import json_equal
from reference.lexer import Token, lex

#: unsupported families whose requests are refused for what they ask: trained as ``reject``
REJECTED = frozenset({
    "aggregation", "filtering", "sorting", "condition", "loop", "retry", "dependency", "mixed", "code",
    "nested-args", "too-many-calls", "unknown-tool", "filter-sort-aggregate", "unknown-argument",
})
SUPPORTED = frozenset({"single", "sequential", "parallel", "shaping"})
#: words that start another call of the tool before them ("once with …", "and again with …")
AGAIN = ("once", "again")
#: words that give the argument before them to every call ("for both", "for all three", "each time")
SHARE = ("both", "all", "each", "every")
#: readings tried per case, at most
MAX_READINGS = 96


def folder() -> Path:
    """Where the hand-written training cases ship."""
    return Path(__file__).resolve().parent / "handwritten"


def _value_tokens(tokens: Sequence[Token], value: Any) -> list[int]:
    out = []
    for i, t in enumerate(tokens):
        if t.kind not in ("string", "number", "boolean"):
            continue
        if isinstance(value, bool) != (t.kind == "boolean") or isinstance(value, str) != (t.kind == "string"):
            continue
        v = t.value
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
            v = int(v)
        if json_equal(v, value):
            out.append(i)
    return out


def _words(tokens: Sequence[Token], text: str) -> list[int]:
    return [i for i, t in enumerate(tokens) if t.kind == "word" and t.text == text]


def _starts(tokens: Sequence[Token], calls: Sequence[dict[str, Any]]) -> Iterator[list[tuple[int | None, str]]]:
    """Where each call starts: a mention of its tool (``CALL``), a word that repeats the call before
    (``AGAIN``), or nowhere (``None``: another call of the tool before, told apart by its arguments), in
    increasing order of position."""
    options: list[list[tuple[int | None, str]]] = []
    for k, call in enumerate(calls):
        opts: list[tuple[int | None, str]] = [(i, "CALL") for i in _words(tokens, call["tool"])]
        if k and calls[k - 1]["tool"] == call["tool"]:
            opts += [(i, "AGAIN") for i, t in enumerate(tokens) if t.kind == "word" and t.text.lower() in AGAIN]
            opts.append((None, ""))
        options.append(opts)
    count = 0
    for combo in itertools.product(*options):
        at = [i for i, _ in combo if i is not None]
        if combo[0][0] is None or at != sorted(set(at)):
            continue
        yield list(combo)
        count += 1
        if count >= 24:
            return


def _reading(tokens: Sequence[Token], calls: Sequence[dict[str, Any]], starts: Sequence[tuple[int | None, str]],
             output: dict[str, Any], field_pick: int, limit_pick: int, share: bool) -> list[str] | None:
    tags = ["O"] * len(tokens)
    for i, tag in starts:
        if i is not None:
            tags[i] = tag
    # each call's anchor: its own start, or the start of the call it repeats
    anchors: list[int] = []
    for i, _ in starts:
        anchors.append(i if i is not None else anchors[-1])
    explicit = sorted(i for i, _ in starts if i is not None)
    used: dict[int, tuple[str, Any]] = {}  # token -> (name, value) it stands for
    floor = -1  # a call told apart by its arguments says them after the call before it said its own
    # an argument given to several calls with its value said fewer times: said once for all of them
    given = Counter((name, jsonio.dumps(value)) for call in calls for name, value in call["args"].items())
    once = {key for key, n in given.items() if n > 1 and len(_value_tokens(tokens, jsonio.loads(key[1]))) < n}
    shared: list[int] = []  # the value tokens said once for several calls
    named: dict[str, list[int]] = {}  # argument name -> its name tokens tagged so far
    for k, call in enumerate(calls):
        anchor = anchors[k]
        nxt = next((j for j in explicit if j > anchor), len(tokens))
        prev = max((j for j in explicit if j < anchor), default=-1)
        lo = floor if starts[k][0] is None else -1
        last = lo
        for name, value in call["args"].items():
            key = (name, jsonio.dumps(value))
            if key in once and any(used.get(v) == (name, value) for v in _value_tokens(tokens, value)):
                continue
            bound = -1 if key in once else lo
            names = [n for n in _words(tokens, name) if n > bound and n not in used]
            values = [v for v in _value_tokens(tokens, value) if v > bound and v not in used]
            if not values:
                return None
            if not names:
                # a list of values after one name ("symbol "A", "B" and "C"): one call each
                if not named.get(name) or starts[k][0] is not None:
                    return None
                v = values[0]
                used[v] = (name, value)
                tags[v] = "VAL<"
                last = max(last, v)
                continue

            def score(pair: tuple[int, int]) -> tuple[float, int]:
                n, v = pair
                inside = prev < n < nxt
                between = any(n < j < v or v < j < n for j in explicit)
                return (abs(n - v) + (0 if inside else 20) + (30 if between else 0), n)

            n, v = min(itertools.product(names, values), key=score)
            used[n] = used[v] = (name, value)
            named.setdefault(name, []).append(n)
            tags[n] = "ARG<" if n > anchor else "ARG>"
            tags[v] = "VAL<" if v > n else "VAL>"
            if key in once:
                shared.append(v)
            else:
                last = max(last, n, v)
        floor = max(floor, last)
    if share:
        if not shared:
            return None
        for v in sorted(set(shared)):
            word = next((j for j in range(v + 1, min(v + 7, len(tokens)))
                         if tokens[j].kind == "word" and tokens[j].text.lower() in SHARE), None)
            if word is None:
                return None
            tags[word] = "SHARE"
    for f in output.get("fields", ()):
        spots = [i for i in _words(tokens, f) if i not in used and tags[i] == "O"]
        if not spots:
            return None
        tags[spots[0] if field_pick == 0 else spots[-1]] = "FIELD"
    if "limit" in output:
        spots = [i for i in _value_tokens(tokens, output["limit"]) if i not in used and tags[i] == "O"]
        if limit_pick >= len(spots):
            return None
        tags[spots[-1 - limit_pick]] = "LIMIT"
    return tags


def labels(plan: dict[str, Any]) -> tuple[str, str]:
    """The schedule class and the output kind to decode ``plan`` with (``default`` where the kind is the
    one an instruction that names none gets)."""
    n = len(plan["calls"])
    kind = plan["output"]["kind"]
    return ("parallel" if plan["mode"] == "parallel" else "sequential",
            "default" if kind == ("last" if n == 1 else "all") else kind)


def align(instruction: str, tools: Any, plan: dict[str, Any]) -> list[str] | None:
    """Per-token tags of a hand-written supported case: the first reading the reference decoder turns into
    exactly ``plan`` (``None`` when none does)."""
    from reference.planner import decode
    from reference.plan import validate_plan

    lexed = lex(instruction)
    if not lexed.ok:
        return None
    tokens = lexed.tokens
    catalog = Catalog.from_json(tools)
    calls = plan["calls"]
    schedule, output = labels(plan)
    tried = 0
    for starts in _starts(tokens, calls):
        for share, field_pick, limit_pick in itertools.product((False, True), (0, 1), (0, 1)):
            if (field_pick and not plan["output"].get("fields")) or (limit_pick and "limit" not in plan["output"]):
                continue
            tags = _reading(tokens, calls, starts, plan["output"], field_pick, limit_pick, share)
            if tags is None:
                continue
            tried += 1
            raw = decode(tokens, tags, schedule, output, catalog)
            if not isinstance(raw, str) and not validate_plan(raw, catalog) and json_equal(raw, plan):
                return tags
            if tried >= MAX_READINGS:
                return None
    return None


def read(paths: Sequence[Path] | None = None) -> list[dict[str, Any]]:
    """The hand-written training cases (every ``*.jsonl`` of :func:`folder` unless ``paths`` are given)."""
    rows = []
    for path in paths if paths is not None else sorted(folder().glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    rows.append(jsonio.loads(line))
                except ValueError as err:
                    raise ValueError(f"{path}:{n}: not JSON ({err})") from err
    return rows


def examples(rows: Sequence[dict[str, Any]], *, log: Any = None) -> list[Any]:
    """Training examples of the cases that can be used: supported ones a reading decodes, unsupported ones
    of :data:`REJECTED` families. Counts what was used and left out to ``log``."""
    from reference.train import example

    out = []
    kept: Counter[str] = Counter()
    left: Counter[str] = Counter()
    for row in rows:
        family, expect = row["family"], row["expect"]
        catalog = Catalog.from_json(row["tools"])
        if "plan" in expect:
            tags = align(row["instruction"], row["tools"], expect["plan"])
            if tags is None:
                left[family] += 1
                continue
            schedule, output = labels(expect["plan"])
            out.append(example(row["instruction"], catalog, tags=tags, schedule=schedule,
                               output=output, family=f"hand:{family}"))
        elif family in REJECTED and lex(row["instruction"]).ok:
            out.append(example(row["instruction"], catalog, tags=None, schedule="reject", output=None,
                               family=f"hand:{family}"))
        else:
            left[family] += 1
            continue
        kept[family] += 1
    if log is not None:
        print(f"hand-written cases: {sum(kept.values())} used {dict(sorted(kept.items()))}, "
              f"{sum(left.values())} left out {dict(sorted(left.items()))}", file=log)
    return out
