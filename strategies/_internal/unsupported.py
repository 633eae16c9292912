"""Unsupported requests: the families a planner must refuse (PL-REJECT), phrased as templates over
rendered calls and in ordinary prose, and the structural ones (too many calls, an unknown tool, a
required argument left out) phrased exactly like supported instructions."""

from __future__ import annotations

from dataclasses import replace

from reference.catalog import Catalog
from reference.lexer import MAX_TOKENS, lex
from reference.plan import Call, Output, Plan
from strategies._internal.choosers import Chooser
from strategies._internal.rendering import (
    Instruction, _call, _capital, _Pieces, _render_call, _unique_names, filler_words, render, situation, usable_name,
)
from strategies._internal.vocabulary import (
    _CLOSE, _CODE, _CONDITION, _DEPENDENCY, _FILTER, _LOOP, _MIXED, _NAME_NOUNS, _POLITE, _RETRY, _UNKNOWN_NAMES,
    MORE_PREAMBLES, PROSE_UNSUPPORTED, REASONS,
)

UNSUPPORTED = (
    "dependency",
    "mixed",
    "condition",
    "retry",
    "loop",
    "code",
    "filter-sort-aggregate",
    "too-many-calls",
    "unknown-tool",
    "nested-args",
    "missing-required",
)

#: the terse templates of each family (the ordinary-prose ones are ``PROSE_UNSUPPORTED``'s); a request
#: made from one is labelled ``unsupported=terse`` or ``unsupported=prose``
TERSE = {
    "dependency": _DEPENDENCY, "mixed": _MIXED, "condition": _CONDITION, "retry": _RETRY, "loop": _LOOP,
    "code": _CODE, "filter-sort-aggregate": _FILTER,
}



def _call_text(ch: Chooser, call: Call, *, first: bool = False) -> str:
    p = _Pieces()
    _render_call(p, ch, call, first=first, args_first=False)
    return p.build()[0]


def unsupported(ch: Chooser, catalog: Catalog, family: str) -> Instruction | None:
    """A request of unsupported ``family`` over ``catalog``, expected to get a diagnostic."""
    tools = catalog.tools
    pick = lambda: _call(ch, ch.choice(tools))  # noqa: E731
    if family in ("too-many-calls", "unknown-tool", "missing-required"):
        return _structural(ch, catalog, family)
    if family == "nested-args":
        takers = [t for t in tools if t.arguments]
        if not takers:
            return None
        tool = ch.choice(takers)
        call = _call(ch, tool)
        name = ch.choice(tool.arguments)[0]
        bad = ch.choice((
            '["a", "b"]', "[1, 2, 3]", '{"team": "blue"}', "null", "[]", "{}", '[{"id": 1}]', '{"a": [1]}',
        ))
        text = _call_text(ch, call, first=True)
        joiner = ch.choice((" with", " and", ",", " and with"))
        form = ch.choice((f"{name} {bad}", f"{name} = {bad}", f"{name}: {bad}", f"{name} set to {bad}"))
        return _rejected(text + joiner + " " + form, catalog, family)
    calls = [pick() for _ in range(3)]
    fill = {
        "A": _call_text(ch, calls[0], first=True),
        "B": _call_text(ch, calls[1]),
        "C": _call_text(ch, calls[2]),
        "a": calls[0].tool,
        "b": calls[1].tool,
        "p": _some_property(ch, catalog),
        "n": str(ch.integer(4, 20)),  # a number in the prose ("over and over like 10 times"): never a count of calls
    }
    prose = PROSE_UNSUPPORTED.get(family, ())
    style = "prose" if prose and ch.chance(50) else "terse"
    template = ch.choice(prose if style == "prose" else TERSE[family])
    text = template.format(**fill)
    text = _capital(ch.choice(_POLITE) + " " + text if ch.chance(30) else text, ch).strip()
    if ch.chance(15):  # said as people say it: why, before the request
        text = ch.choice(MORE_PREAMBLES) + " " + text
    elif ch.chance(8):  # or the asker's situation, as supported requests have it
        text = situation(ch) + " " + text
    close = ch.choice(_CLOSE)
    text += " " + close if close and close[0] not in ",.!" else close
    if ch.chance(12):  # and after it
        text += ("" if text[-1] in ".!?" else ".") + " " + ch.choice(REASONS)
    elif ch.chance(8):
        text += ("" if text[-1] in ".!?" else ".") + " " + situation(ch)
    if getattr(ch, "augment", False) and ch.chance(40):
        text = _sprinkled(ch, text)
    inst = _rejected(text, catalog, family)
    return None if inst is None else replace(inst, axes=(f"unsupported={style}",))


def _sprinkled(ch: Chooser, text: str) -> str:
    """``text`` with a few neutral words, or stand-ins for words never seen, put between some of its words
    (training-time augmentation, as for supported renderings: an unfamiliar word is no signal either way)."""
    words = text.split(" ")
    out: list[str] = []
    for k, word in enumerate(words):
        out.append(word)
        if k + 1 < len(words) and ch.chance(10):
            out.extend(filler_words(ch))
    return " ".join(out)


def _some_property(ch: Chooser, catalog: Catalog) -> str:
    props = [p for t in catalog.tools for p in (t.returns.properties or ())]
    return ch.choice(props) if props else ch.choice(("name", "date", "score"))


def _rejected(text: str, catalog: Catalog, family: str, tags: tuple[str, ...] | None = None) -> Instruction | None:
    lexed = lex(text)
    if not lexed.ok:
        return None
    return Instruction(text=text, catalog=catalog, plan=None, family=family, clause="PL-REJECT", tags=tags)


def _structural(ch: Chooser, catalog: Catalog, family: str) -> Instruction | None:
    """Unsupported requests phrased like supported ones: 4-5 calls, a tool not in the catalog, or a
    required argument left out. They keep their tags (decoding and validation refuse them)."""
    mode = ch.choice(("sequential", "parallel"))
    if family == "too-many-calls":
        calls = tuple(_call(ch, ch.choice(catalog.tools)) for _ in range(ch.integer(4, 5)))
        plan = Plan(mode=mode, calls=calls, output=Output(kind="all"))
        schedule = "reject"
    elif family == "unknown-tool":
        names = {t.name for t in catalog.tools}
        made_up = _unique_names(ch, 3, tool=True, adversarial=False, avoid=names)  # named like the catalog's
        unknown = [u for u in _UNKNOWN_NAMES + tuple(f"{v}_{n}" for v in ("get", "list") for n in _NAME_NOUNS)
                   + tuple(made_up) * 20 if u not in names and usable_name(u, tool=True)]
        n = ch.integer(1, 3)
        calls = [_call(ch, ch.choice(catalog.tools)) for _ in range(n)]
        calls[ch.integer(0, n - 1)] = Call(tool=ch.choice(unknown), args=())
        plan = Plan(mode=mode if n > 1 else "single", calls=tuple(calls), output=Output(kind="all" if n > 1 else "last"))
        schedule = "reject"
    else:
        takers = [t for t in catalog.tools if t.required]
        if not takers:
            return None
        tool = ch.choice(takers)
        call = _call(ch, tool, drop=ch.choice(tool.required))
        plan = Plan(mode="single", calls=(call,), output=Output(kind="last"))
        schedule = "sequential"  # the words look supported: validation refuses it
    inst = render(ch, catalog, plan)
    if inst is None or len(inst.tags or ()) > MAX_TOKENS:
        return None
    return replace(inst, plan=None, family=family, clause="PL-REJECT", schedule=schedule)
