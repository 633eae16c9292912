"""Supported instructions rendered from plans, along independent axes, with per-token truth.

Every choice goes through a :class:`Chooser` (Hypothesis draws shrink towards the first, plainest option of
each; the random driver makes the same choices at training speed). Each rendering records the *axes* it
used, ``axis=form`` labels such as ``arg=back`` ("blue" for team), ``tool=trailing`` (... using get_weather)
or ``frame=question``: ``codemode train`` holds out whole forms to measure generalization to unseen
phrasing, and reports say which phrasings a planner misses.

The axes: ``arg`` (each argument: name-value, name=value, name:value, connector, back, bare-back,
paren-name, measure, flag), ``args`` (uniform or mixed forms within a call), ``tool`` (verb, args-first,
trailing, paren, sentence, lead, cli, call-syntax, with-lead, purpose, repeat), ``schedule`` (none, prefix,
suffix, connect, list, plain, arrow), ``output`` (default, first, middle, last), ``frame`` (plain, polite,
question, preamble, near-miss, distractor), ``aside`` (reason: a sentence after the request; inline: words
between a tool and its arguments), ``noise`` (typo, sprinkle). A tool's name may be written in backticks. The tables of words are in ``vocabulary.py``.

Tags (one per lexer token): ``O`` other; ``CALL`` a tool name that is a call, in call order; ``AGAIN`` a
word that starts another call of the tool of the call before it ("once", "again": one mention for
repeated calls); ``ARG<`` / ``ARG>`` an argument name that belongs to the call mentioned before / after it;
``VAL<`` / ``VAL>`` the value of the nearest argument name before / after it; ``FIELD`` a projected return
property (in order); ``LIMIT`` the row limit; ``SHARE`` the word that gives the argument before it to every
call of that tool ("year 2025 for *all* three", "pharmacy "CVS" for *both*"). Calls of one tool may also be
told apart by their arguments alone: an argument named again ("X for city "Paris" and city "Rome"") or a list
of values after one name ("X for city "Paris", "Rome" and "Berlin"") starts the next call.

Truth is kept by construction and checked: a rendering in which a word the renderer wrote as a connector
is also an argument name of the catalog and stands beside a value (where a reader could not tell which it
is), or in which a tool's name appears as anything but a call, is refused (``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from reference import jsonio
from reference.catalog import MAX_TOOLS, Catalog, Returns, Tool
from reference.lexer import MAX_TOKENS, lex
from reference.names import is_identifier_name, is_tool_name
from reference.plan import Call, Output, Plan, Value
from strategies._internal.choosers import Chooser
from strategies._internal.vocabulary import (
    _ALL, _ALL_THREE, _ALL_TWO, _ARG_INTRO, _ARGS_FIRST_INTRO, _CLOSE, _FIELDS_AFTER, _FIELDS_BEFORE, _LAST,
    _LEAD_VERBS, _LIMIT_FORMS, _NAME_NOUNS, _NAME_VERBS, _ODD_NAMES, _PAR_CONNECT, _PAR_PREFIX, _PAR_SUFFIX,
    _PAR_INLINE, _PLAIN_CONNECT, _POLITE, _SEQ_CONNECT, _SEQ_FINAL, _SEQ_INLINE, _SEQ_LIST, _SEQ_PREFIX, _SEQ_SUFFIX,
    _TOOL_SUFFIX, _VERBS,
    ARG_ADJECTIVES, ARG_BACK_CONNECTORS, ASIDES, ARG_CONNECTORS, ARG_JOIN, COMMON_ARG_NAMES, DISTRACTOR_AFTER,
    DISTRACTOR_BEFORE, DOMAIN_TOOLS, FLAGS, MEASURE_BEFORE, MEASURE_JOIN, MORE_PREAMBLES, NEAR_MISS, NEAR_MISS_AFTER, NEAR_MISS_FRAMES, NEAR_MISS_NOUNS, NEUTRAL,
    PAREN_TOOL, PHRASE_WORDS, QUESTIONS, REASONS, REPEAT_AGAIN, REPEAT_COUNT, REPEAT_LIST_JOIN, REPEAT_NAMES_JOIN,
    RESTATEMENTS, SENTENCE_TOOL, SHAPE_FIRST_END, SHARE_INTRO, SHARE_THREE, SHARE_TWO, SITUATION_SLOTS, SITUATIONS,
    TOOL_LEAD, TRAILING_LEAD, TRAILING_TOOL, UNITS, UNSEEN, ARROWS, TOOL_PURPOSE, TOOL_WITH, WRITTEN_ASIDES,
)

TAGS = ("O", "CALL", "ARG<", "ARG>", "VAL<", "VAL>", "FIELD", "LIMIT", "AGAIN", "SHARE")
SUPPORTED = ("single", "sequential", "parallel", "shaping")

#: every axis and its forms (what ``Instruction.axes`` holds, as ``axis=form``)
AXES: dict[str, tuple[str, ...]] = {
    "arg": ("name-value", "name=value", "name:value", "connector", "back", "bare-back", "paren-name", "measure",
            "flag"),
    "args": ("uniform", "mixed"),
    "tool": ("verb", "args-first", "trailing", "paren", "sentence", "lead", "cli", "call-syntax", "with-lead", "purpose",
             "repeat", "repeat-names", "repeat-list"),
    "shared": ("once",),
    "schedule": ("none", "prefix", "suffix", "connect", "list", "plain", "arrow", "inline", "after-tool"),
    "output": ("default", "first", "middle", "last"),
    "shape": ("first",),
    "frame": ("plain", "polite", "question", "preamble", "situation", "near-miss", "distractor"),
    "aside": ("reason", "situation", "inline"),
    "noise": ("typo", "sprinkle"),
}


# --- names and catalogs ----------------------------------------------------------------------------------


def _name(ch: Chooser, *, tool: bool, adversarial: bool) -> str:
    style = ch.integer(0, 10)
    verb, noun = ch.choice(_NAME_VERBS), ch.choice(_NAME_NOUNS)
    if not tool and style < 5:
        name = noun
    elif style < 4:
        name = f"{verb}_{noun}"
    elif style < 6:
        name = verb + noun[0].upper() + noun[1:]
    elif style == 6:
        name = f"{noun}_{ch.choice(_NAME_NOUNS)}"
    elif style == 7:
        name = f"{verb}{ch.integer(1, 9)}" if tool else f"{noun}{ch.integer(1, 9)}"
    elif style == 8 and adversarial:
        name = ch.choice(_ODD_NAMES)
    elif style == 9 and not tool:
        name = ch.choice(COMMON_ARG_NAMES)  # an ordinary word: "to", "from", "type", "limit"
    else:
        name = f"{noun}_{verb}" if tool else noun
    return name


@lru_cache(maxsize=1 << 14)
def usable_name(name: str, *, tool: bool) -> bool:
    """Can an instruction name ``name``: one word token and, for a tool, not an English word the renderer
    writes (an argument or a property may be an ordinary word such as ``to`` or ``type``)."""
    if not (is_tool_name(name) if tool else is_identifier_name(name)):
        return False
    tokens = lex(name).tokens
    if len(tokens) != 1 or tokens[0].kind != "word":
        return False
    return name in COMMON_ARG_NAMES if name.lower() in PHRASE_WORDS and not tool else name.lower() not in PHRASE_WORDS


def _unique_names(ch: Chooser, n: int, *, tool: bool, adversarial: bool, avoid: set[str]) -> list[str]:
    names: list[str] = []
    for _ in range(n * 6):
        if len(names) == n:
            break
        name = _name(ch, tool=tool, adversarial=adversarial)
        if name not in names and name not in avoid and usable_name(name, tool=tool):
            names.append(name)
    return names


def _domain_tool(ch: Chooser, taken: set[str]) -> Tool | None:
    name, arguments, kind, props = ch.choice(DOMAIN_TOOLS)
    if name in taken:
        return None
    args = tuple(a for a in arguments if ch.chance(80)) or arguments[:1]
    required = tuple(a for a, _ in args if ch.chance(50))
    properties = tuple(p for p in props if ch.chance(85)) if kind != "text" else None
    if kind == "array" and not properties:
        properties = props[:1]
    return Tool(name=name, arguments=args, required=required, returns=Returns(kind=kind, properties=properties))


def render_catalog(ch: Chooser, *, adversarial: bool = True, min_tools: int = 1, max_tools: int = MAX_TOOLS) -> Catalog:
    """A valid catalog whose names an instruction can mention unambiguously: made-up names, or tools of
    realistic domains (whose argument names are often ordinary words: ``from``, ``to``, ``type``)."""
    n = ch.integer(min_tools, max_tools)
    domain = ch.chance(40)
    tools: list[Tool] = []
    names = _unique_names(ch, n, tool=True, adversarial=adversarial, avoid=set())
    while len(names) < min_tools:
        names.append(f"tool{len(names)}x")
    for name in names:
        if domain and ch.chance(75):
            tool = _domain_tool(ch, {t.name for t in tools} | set(names))
            if tool is not None:
                tools.append(tool)
                continue
        arg_names = _unique_names(ch, ch.integer(0, 4), tool=False, adversarial=adversarial, avoid={name})
        arguments = tuple((a, ch.choice(("string", "string", "number", "boolean"))) for a in arg_names)
        required = tuple(a for a in arg_names if ch.chance(50))
        kind = ch.choice(("array", "text", "object", "array"))
        props = None
        if kind != "text" and ch.chance(85):
            props = tuple(_unique_names(ch, ch.integer(1 if kind == "array" else 0, 4), tool=False,
                                        adversarial=adversarial, avoid=set()))
        tools.append(Tool(name=name, arguments=arguments, required=required, returns=Returns(kind=kind, properties=props)))
    return Catalog(tools=tuple(tools))


def instruction_catalog_ok(catalog: Catalog) -> bool:
    """Every name of ``catalog`` is one an instruction can mention (see :func:`usable_name`), and no
    argument or property is named like a tool."""
    tools = {t.name for t in catalog.tools}
    return all(
        usable_name(t.name, tool=True)
        and all(usable_name(a, tool=False) and a not in tools for a, _ in t.arguments)
        and all(usable_name(p, tool=False) and p not in tools for p in (t.returns.properties or ()))
        for t in catalog.tools
    )


# --- the instruction and its pieces -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Instruction:
    """An instruction over a catalog and its ground truth.

    ``plan`` is the expected plan (``None`` when a diagnostic is expected); ``family`` is a supported
    family, an unsupported family or an adversarial one; ``clause`` is the clause a diagnostic is due
    under (``PL-REJECT`` for unsupported requests, ``IN-*`` for invalid input); ``tags`` has one tag per
    token (``None`` where the rendering has none); ``schedule`` and ``output`` are the per-instruction
    labels the model learns (``reject``/``sequential``/``parallel``; ``all``/``last``/``default``);
    ``axes`` are the phrasing forms used (``axis=form``, see ``AXES``).
    """

    text: str
    catalog: Catalog
    plan: Plan | None
    family: str
    clause: str | None = None
    tags: tuple[str, ...] | None = None
    schedule: str = "reject"
    output: str = "default"
    axes: tuple[str, ...] = ()

    def request(self) -> dict[str, Any]:
        return {"instruction": self.text, "tools": self.catalog.to_json()}


@lru_cache(maxsize=1 << 16)
def _token_count(piece: str) -> int:
    return len(lex(piece).tokens)


_VALUE_KINDS = frozenset(("string", "number", "boolean"))


class Ambiguous(Exception):
    """A rendering a careful reader could read two ways (see the module docstring)."""


class _Pieces:
    """Instruction text built from pieces, each one token with a tag or an untagged phrase; ``filler``
    pieces are words said in passing (the only ones a typo may touch)."""

    _GLUE_LEFT = frozenset(",.;:!?)")

    def __init__(self) -> None:
        self.parts: list[tuple[str, str, bool, bool]] = []
        self.axes: list[str] = []

    def axis(self, name: str, form: str) -> None:
        label = f"{name}={form}"
        if label not in self.axes:
            self.axes.append(label)

    def word(self, text: str, tag: str = "O", *, glue: bool = False) -> None:
        self.parts.append((text, tag, glue, False))

    def phrase(self, text: str, *, filler: bool = False) -> None:
        if text:
            self.parts.append((text, "O", text[0] in self._GLUE_LEFT, filler))

    def sprinkle(self, ch: Chooser, percent: int) -> None:
        """Insert a few neutral words, or stand-ins for words never seen (``UNSEEN``), into some gaps that
        are not inside an argument, field or limit."""
        parts: list[tuple[str, str, bool, bool]] = []
        for k, part in enumerate(self.parts):
            parts.append(part)
            nxt = self.parts[k + 1] if k + 1 < len(self.parts) else None
            if (part[1] in ("O", "CALL") and (nxt is None or (nxt[1] in ("O", "CALL") and not nxt[2]))
                    and ch.chance(percent)):
                parts.append((" ".join(filler_words(ch)), "O", False, True))
        self.parts = parts

    def typo(self, ch: Chooser) -> bool:
        """Misspell one word of one filler piece (swap, drop or double a letter); whether one was."""
        fillers = [k for k, part in enumerate(self.parts) if part[3]]
        if not fillers:
            return False
        k = ch.choice(fillers)
        text, tag, glue, _ = self.parts[k]
        words = text.split(" ")
        j = ch.integer(0, len(words) - 1)
        w = words[j]
        if len(w) < 4 or not w.isalpha():
            return False
        i = ch.integer(1, len(w) - 2)
        how = ch.integer(0, 2)
        words[j] = w[:i] + w[i + 1] + w[i] + w[i + 2:] if how == 0 else w[:i] + w[i + 1:] if how == 1 else w[:i] + w[i] + w[i:]
        self.parts[k] = (" ".join(words), tag, glue, True)
        return True

    def build(self, catalog: Catalog | None = None) -> tuple[str, tuple[str, ...]]:
        out: list[str] = []
        tags: list[str] = []
        for text, tag, glue, _ in self.parts:
            if out and not glue:
                out.append(" ")
            out.append(text)
            n = _token_count(text)
            if tag != "O" and n != 1:
                raise AssertionError(f"tagged piece {text!r} is {n} tokens")
            tags.extend([tag] * n)
        text = "".join(out)
        tokens = lex(text, max_tokens=10**6).tokens
        if len(tokens) != len(tags):
            raise AssertionError(f"pieces of {text!r} do not lex on their own")
        if catalog is not None:
            _check_unambiguous(tokens, tags, catalog)
        return text, tuple(tags)


def filler_words(ch: Chooser) -> list[str]:
    """One to four words said in passing: neutral ones, or stand-ins for words never seen (``UNSEEN``),
    which the training-time augmentation scatters into renderings."""
    pool = UNSEEN if ch.chance(35) else NEUTRAL
    return [ch.choice(pool) for _ in range(ch.integer(1, 4))]


def situation(ch: Chooser) -> str:
    """The asker's situation, with its times and numbers ("my friends are coming at 8"): one of
    ``SITUATIONS`` with its slots filled, its first letter capital or not; or one or two
    sentences of ``WRITTEN_ASIDES``, as people wrote them."""
    if ch.chance(60):
        said = ch.choice(WRITTEN_ASIDES)
        return said + " " + ch.choice(WRITTEN_ASIDES) if ch.chance(25) and said[-1] in ".!?" else said
    slots = {k: ch.choice(v) for k, v in SITUATION_SLOTS.items()}
    return _capital(ch.choice(SITUATIONS).format(n=ch.integer(1, 12), **slots), ch)


def _check_unambiguous(tokens: Sequence[Any], tags: Sequence[str], catalog: Catalog) -> None:
    tools = {t.name for t in catalog.tools}
    args = {a for t in catalog.tools for a, _ in t.arguments}
    for i, (tok, tag) in enumerate(zip(tokens, tags)):
        if tag != "O" or tok.kind != "word":
            continue
        if tok.text in tools:
            raise Ambiguous(f"{tok.text!r} is written but is no call")
        if tok.text in args:
            near = [tokens[j] for j in (i - 1, i + 1) if 0 <= j < len(tokens)]
            if any(t.kind in _VALUE_KINDS for t in near):
                raise Ambiguous(f"the word {tok.text!r} is an argument's name and stands beside a value")


def _value_text(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return jsonio.dumps(value)


def _capital(text: str, ch: Chooser) -> str:
    return text[:1].upper() + text[1:] if text and ch.chance(50) else text


# --- arguments ---------------------------------------------------------------------------------------------

_NAME_FIRST = ("name-value", "name=value", "name:value", "connector", "measure", "flag")


def _arg_form(ch: Chooser, value: Value, *, flags: bool, back: bool) -> str:
    if flags:
        return "flag"
    forms = ["name-value", "name-value", "name=value", "name:value", "connector", "connector", "connector"]
    if back:
        forms += ["back", "back", "bare-back", "paren-name"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        forms += ["measure", "measure"]
    forms.append("flag")
    return ch.choice(forms)


def _render_arg(p: _Pieces, ch: Chooser, name: str, value: Value, form: str, side: str) -> None:
    vt = _value_text(value)
    arg = "ARG" + side
    if form == "name-value":  # team "blue"
        p.word(name, arg)
        p.word(vt, "VAL<")
    elif form == "name=value":  # team="blue", a = 1
        tight = ch.chance(60)
        p.word(name, arg)
        p.word(ch.choice(("=", "=", ":=")) if not tight else "=", glue=tight)
        p.word(vt, "VAL<", glue=tight)
    elif form == "name:value":  # city: "Paris"
        p.word(name, arg)
        p.word(":", glue=True)
        p.word(vt, "VAL<")
    elif form == "connector":  # the new team set to "blue"
        article = ch.choice(("", "", "the", "its", "a", "with"))
        p.phrase(article)
        if article in ("the", "a") and ch.chance(25):
            p.phrase(ch.choice(ARG_ADJECTIVES))
        p.word(name, arg)
        p.phrase(ch.choice(ARG_CONNECTORS))
        p.word(vt, "VAL<")
    elif form == "back":  # "blue" for team
        p.word(vt, "VAL>")
        p.phrase(ch.choice(ARG_BACK_CONNECTORS))
        p.word(name, arg)
    elif form == "bare-back":  # the 2021 season, "Fantasy" genre
        p.phrase(ch.choice(("", "the", "a")))
        p.word(vt, "VAL>")
        p.word(name, arg)
    elif form == "paren-name":  # "Paris" (city)
        p.word(vt, "VAL>")
        p.word("(")
        p.word(name, arg, glue=True)
        p.word(")", glue=True)
    elif form == "measure":  # a radius of 10 units, weight is 70 kg
        p.phrase(ch.choice(MEASURE_BEFORE))
        p.word(name, arg)
        p.phrase(ch.choice(MEASURE_JOIN))
        p.word(vt, "VAL<")
        if ch.chance(70):
            p.phrase(ch.choice(UNITS))
    else:  # --ticketId "T-1009"
        flag = ch.choice(FLAGS)
        p.phrase(flag)
        p.word(name, arg, glue=True)
        if ch.chance(20):
            p.word("=", glue=True)
            p.word(vt, "VAL<", glue=True)
        else:
            p.word(vt, "VAL<")


def _render_args(p: _Pieces, ch: Chooser, args: Sequence[tuple[str, Value]], side: str, *, flags: bool = False,
                 back: bool = True) -> None:
    """Arguments of a call; ``side`` is ``<`` when the call's tool was mentioned before them, else ``>``."""
    forms = [_arg_form(ch, value, flags=flags, back=back) for _, value in args]
    if len(set(forms)) > 1:
        p.axis("args", "mixed")
    elif len(forms) > 1:
        p.axis("args", "uniform")
    for k, ((name, value), form) in enumerate(zip(args, forms)):
        p.axis("arg", form)
        if k:
            if forms[k - 1] in _NAME_FIRST and form in _NAME_FIRST and ch.chance(25 if not flags else 90):
                pass  # a=1 b=2, --a 1 --b 2
            else:
                p.phrase(ch.choice(ARG_JOIN))
        _render_arg(p, ch, name, value, form, side)


# --- calls ---------------------------------------------------------------------------------------------------


def _render_call(p: _Pieces, ch: Chooser, call: Call, *, first: bool, args_first: bool = True) -> None:
    """One call; ``args_first``: its arguments may come before its tool (where nothing before them could
    claim them: at the start, or after a sentence break)."""
    forms = ["verb"] * 6 + ["lead", "cli", "with-lead", "purpose"]
    if call.args:
        forms.append("call-syntax")
    if call.args and args_first:
        forms += ["args-first", "trailing", "trailing", "paren", "sentence"]
    form = ch.choice(forms) if call.args else ch.choice(("verb", "verb", "verb", "lead", "trailing", "paren"))
    if form in ("trailing", "paren") and not call.args and not args_first:
        form = "verb"
    if form == "sentence" and not call.args:
        form = "trailing"
    p.axis("tool", form)
    if form == "args-first":  # for team "blue", call list_users
        p.phrase(_capital(ch.choice(_ARGS_FIRST_INTRO), ch) if first else ch.choice(_ARGS_FIRST_INTRO))
        _render_args(p, ch, call.args, ">")
        p.phrase(ch.choice((",", "", ", please")))
        p.phrase(ch.choice(_VERBS[:-1]))
        p.word(call.tool, "CALL")
        return
    if form in ("trailing", "paren", "sentence"):  # get the area for radius 10 using calculate_area / (use X)
        lead = ch.choice(TRAILING_LEAD)
        p.phrase(_capital(lead, ch) if first else lead)
        if call.args:
            p.phrase(ch.choice(("for", "with", "", "", "of")))
            _render_args(p, ch, call.args, ">")
        if form == "trailing":
            p.phrase(ch.choice(TRAILING_TOOL))
            p.word(call.tool, "CALL")
        elif form == "sentence":  # ... for radius 10. Use calculate_area for that.
            before, after = ch.choice(SENTENCE_TOOL)
            p.phrase(before)
            p.word(call.tool, "CALL")
            p.phrase(after)
        else:
            before, after = ch.choice(PAREN_TOOL)
            p.phrase(before)
            p.word(call.tool, "CALL", glue=before == "(" or before == "[")
            if after:
                p.word(after, glue=True)
        return
    if form == "call-syntax":  # get_weather(city="Paris", units="metric")
        if ch.chance(40):
            p.phrase(_capital(ch.choice(_VERBS[:8]), ch) if first else ch.choice(_VERBS[:8]))
        p.word(call.tool, "CALL")
        p.word("(", glue=True)
        for k, (name, value) in enumerate(call.args):
            p.axis("arg", "name=value")
            if k:
                p.word(",", glue=True)
            p.word(name, "ARG<", glue=k == 0)
            p.word(ch.choice(("=", ":")), glue=True)
            p.word(_value_text(value), "VAL<", glue=ch.chance(70))
        p.word(")", glue=True)
        return
    if form == "with-lead":  # With get_weather, look up city "Paris"
        p.phrase(ch.choice(TOOL_WITH) if first else ch.choice(TOOL_WITH).lower())
        p.word(call.tool, "CALL")
        p.phrase(ch.choice((",", ",", "", " -")))
        p.phrase(ch.choice(TRAILING_LEAD))
        if call.args:
            p.phrase(ch.choice(("for", "with", "", "")))
            _render_args(p, ch, call.args, "<", back=False)
        return
    if form == "purpose":  # use get_weather to check city "Paris"
        verb = ch.choice(("use", "run", "call", "try", "use the", "go with"))
        p.phrase(_capital(verb, ch) if first else verb)
        p.word(call.tool, "CALL")
        p.phrase(ch.choice(TOOL_PURPOSE))
        if call.args:
            p.phrase(ch.choice(("for", "with", "", "", "the")))
            _render_args(p, ch, call.args, "<")
        return
    if form in ("lead", "cli"):  # get_weather: city "Paris" / get_weather --city "Paris"
        if ch.chance(30):
            p.phrase(_capital(ch.choice(_VERBS[:8]), ch) if first else ch.choice(_VERBS[:8]))
        p.word(call.tool, "CALL")
        if form == "lead":
            lead = ch.choice(TOOL_LEAD)
            if lead == "()":
                p.word("(", glue=True)
                p.word(")", glue=True)
            elif lead:
                p.word(lead, glue=lead in (":",))
        if call.args:
            _render_args(p, ch, call.args, "<", flags=form == "cli", back=False)
        return
    verb = ch.choice(_VERBS)
    p.phrase(_capital(verb, ch) if first else verb)
    if ch.chance(10):
        p.phrase("the")
    if ch.chance(8):  # call `get_weather`
        p.word("`")
        p.word(call.tool, "CALL", glue=True)
        p.word("`", glue=True)
    else:
        p.word(call.tool, "CALL")
    suffix = ch.choice(_TOOL_SUFFIX)
    if suffix == "()":
        p.word("(", glue=True)
        p.word(")", glue=True)
    else:
        p.phrase(suffix)
    if call.args and ch.chance(6):  # call get_weather (it's for my trip) with city "Paris"
        p.phrase(ch.choice(ASIDES))
        p.axis("aside", "inline")
    if call.args:
        p.phrase(ch.choice(_ARG_INTRO))
        _render_args(p, ch, call.args, "<")


def _render_repeat(p: _Pieces, ch: Chooser, calls: Sequence[Call], *, first: bool, parallel: bool,
                   schedule_words: str = "") -> None:
    """Calls of one tool named once: "run X twice, once with a "1" and once with a "2"", "X with a "1",
    and again with a "2"" (every call after the first starts with an ``AGAIN`` word), or told apart by
    their arguments alone: "X for a "1" and a "2"" (each call after the first starts with an argument the
    call before it has) or "X for a "1", "2" and "3"" (one argument, a list of values). How many times may be
    said after the tool ("X twice for …"), and so may ``schedule_words`` ("X twice in parallel: …", "X
    concurrently for …")."""
    names = [[a for a, _ in c.args] for c in calls]
    values = {_value_text(c.args[0][1]) for c in calls if c.args}
    listed = all(len(n) == 1 for n in names) and len({n[0] for n in names}) == 1 and len(values) == len(calls)
    # (a call the same as the one before it would read as its arguments said twice)
    said = [sorted((a, _value_text(v)) for a, v in c.args) for c in calls]
    by_names = all(any(a in names[k] for a in n) and said[k + 1] != said[k] for k, n in enumerate(names[1:]))
    form = "repeat-list" if listed and ch.chance(40) else "repeat-names" if by_names and ch.chance(45) else "repeat"
    count = ch.choice(REPEAT_COUNT[len(calls)]) if len(calls) in REPEAT_COUNT and ch.chance(50) else ""
    verb = ch.choice(_VERBS[:12])
    p.phrase(_capital(verb, ch) if first else verb)
    p.word(calls[0].tool, "CALL")
    p.phrase(count)  # "X twice, once with …", "X twice in parallel: …", "X three times for …"
    p.phrase(schedule_words)
    p.axis("tool", form)
    if form == "repeat-list":
        p.phrase(ch.choice(("for", "with", "", ":", "on")))
        name = names[0][0]
        joins = [j for j in REPEAT_LIST_JOIN if not (parallel and "then" in j)]
        p.word(name, "ARG<")
        p.phrase(ch.choice(("", "", "=", ":")))
        for k, call in enumerate(calls):
            if k:
                p.phrase(ch.choice(joins) if k < len(calls) - 1 or len(calls) == 2 else ch.choice(("and", ", and", "&")))
            p.word(_value_text(call.args[0][1]), "VAL<")
        return
    if form == "repeat-names":
        p.phrase(ch.choice(_ARG_INTRO[:4]))
        joins = [j for j in REPEAT_NAMES_JOIN if not (parallel and "then" in j)]
        for k, call in enumerate(calls):
            args = list(call.args)
            if k:
                p.phrase(ch.choice(joins))
                # the call starts with an argument the call before it has: that name said again is the new call
                j = next(j for j, (a, _) in enumerate(args) if a in names[k - 1])
                args.insert(0, args.pop(j))
            _render_args(p, ch, args, "<", back=True)
        return
    if count:  # "X twice, once with … and once with …"
        p.phrase(ch.choice((",", ":", "", "--")))
        for k, call in enumerate(calls):
            if k:
                p.phrase(ch.choice(("and", ",", ", and", ";")) if k == len(calls) - 1 else ch.choice((",", ";")))
            p.word("once", "AGAIN" if k else "O")
            p.phrase(ch.choice(("with", "with", "for", "using", "")))
            _render_args(p, ch, call.args, "<", back=False)
        return
    p.phrase(ch.choice(_ARG_INTRO[:4]))
    _render_args(p, ch, calls[0].args, "<", back=False)
    for call in calls[1:]:
        before, again = ch.choice(REPEAT_AGAIN)
        p.phrase(before)
        p.word(again, "AGAIN")
        p.phrase(ch.choice(("with", "with", "for", "using", "but with", "this time with")))
        _render_args(p, ch, call.args, "<", back=False)


def shared_args(calls: Sequence[Call]) -> tuple[tuple[str, Value], ...]:
    """The arguments every call (of one tool, two or three calls) has with the same value, when each call
    also has another argument of its own (so the calls are told apart without them)."""
    if len(calls) < 2 or len({c.tool for c in calls}) != 1:
        return ()
    first = calls[0].args
    shared = tuple((a, v) for a, v in first
                   if all(any(b == a and jsonio.dumps(w) == jsonio.dumps(v) and type(w) is type(v) for b, w in c.args)
                          for c in calls[1:]))
    names = {a for a, _ in shared}
    if not shared or any(all(a in names for a, _ in c.args) for c in calls):
        return ()
    return shared


def _render_shared(p: _Pieces, ch: Chooser, shared: Sequence[tuple[str, Value]], n: int) -> None:
    """Arguments said once for every call of one tool, after the last: "..., with year 2025 for all three"."""
    p.axis("shared", "once")
    p.phrase(ch.choice(SHARE_INTRO))
    _render_args(p, ch, shared, "<", back=False)
    before, word, after = ch.choice(SHARE_TWO if n == 2 else SHARE_THREE)
    p.phrase(before)
    p.word(word, "SHARE")
    p.phrase(after)


def _render_output(p: _Pieces, ch: Chooser, kind: str, n: int) -> None:
    if kind == "all":
        options = _ALL + (_ALL_TWO if n == 2 else _ALL_THREE if n == 3 else ())
    else:
        options = _LAST
    p.phrase(ch.choice((", and", ".", ",", "and", ";")))
    p.phrase(ch.choice(options))


def _render_shaping(p: _Pieces, ch: Chooser, output: Output, *, lead: bool = False) -> None:
    """The fields and limit of a single call's output, after the call, or (``lead``) said before it."""
    parts: list[Callable[[], None]] = []
    if output.fields:
        def fields() -> None:
            p.phrase(ch.choice(_FIELDS_BEFORE))
            for k, f in enumerate(output.fields or ()):
                if k:
                    p.phrase("and" if k == len(output.fields or ()) - 1 and ch.chance(60) else ",")
                p.word(f, "FIELD")
            p.phrase(ch.choice(_FIELDS_AFTER))
        parts.append(fields)
    if output.limit is not None:
        def limit() -> None:
            before, after = ch.choice(_LIMIT_FORMS)
            p.phrase(before)
            p.word(str(output.limit), "LIMIT")
            p.phrase(after)
        parts.append(limit)
    if len(parts) == 2 and ch.chance(50):
        parts.reverse()
    for k, part in enumerate(parts):
        if k:
            p.phrase(ch.choice((",", "and", ", and", ";", "")))
        elif lead:
            p.phrase(ch.choice(("", "", "Please", "I need", "Can I get", "Just")))
        else:
            p.phrase(ch.choice((",", "", ";", "and", ", then")))
        part()
    if lead:
        p.phrase(ch.choice(SHAPE_FIRST_END))


def _frame(p: _Pieces, ch: Chooser, plan: Plan) -> tuple[str, str]:
    """What is said before the request; the frame and the closing words it calls for. A situation or a
    distractor may say one of the plan's own values in passing ("I need 1250.75 pounds in dollars:",
    "About "B-5531":"), before it is said with its name."""
    own = [v for c in plan.calls for _, v in c.args]
    frame = ch.choice(("plain", "plain", "plain", "plain", "polite", "polite", "question", "preamble", "situation",
                       "near-miss", "distractor"))
    p.axis("frame", frame)
    if frame == "polite":
        p.phrase(ch.choice(_POLITE[3:]), filler=True)
        return frame, ch.choice(_CLOSE)
    if frame == "question":
        ask, mark = ch.choice(QUESTIONS)
        p.phrase(ask, filler=True)
        return frame, mark
    if frame == "preamble":
        if ch.chance(50):
            p.phrase(ch.choice(MORE_PREAMBLES), filler=True)
            if ch.chance(30):
                p.phrase(ch.choice(MORE_PREAMBLES), filler=True)
        else:
            p.phrase(ch.choice(_LEAD_VERBS) + " " + " ".join(ch.choice(NEUTRAL) for _ in range(ch.integer(1, 3))),
                     filler=True)
            p.phrase(ch.choice((".", ":", "--", ";")))
        p.phrase(ch.choice(_POLITE), filler=True)
        return frame, ch.choice(_CLOSE)
    if frame == "situation":  # "My friends are coming at 8, so" / "The huddle starts at 3."
        numbers = [v for v in own if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if numbers and ch.chance(35):
            said = _capital(ch.choice(RESTATEMENTS), ch).split("{v}")
            p.phrase(said[0].strip(), filler=True)
            p.word(_value_text(ch.choice(numbers)))
            p.phrase(said[1].format(u=ch.choice(UNITS)).strip())  # a unit after the number, then the rest
        else:
            p.phrase(situation(ch), filler=True)
        p.phrase(ch.choice(_POLITE), filler=True)
        return frame, ch.choice(_CLOSE)
    if frame == "near-miss":  # said before the request, or after it
        said = ch.choice(NEAR_MISS) if ch.chance(50) else ch.choice(NEAR_MISS_FRAMES).format(w=ch.choice(NEAR_MISS_NOUNS))
        if ch.chance(60):
            p.phrase(said, filler=True)
            return frame, ch.choice(_CLOSE)
        after = ch.choice(NEAR_MISS_AFTER) if ch.chance(50) else said.rstrip(":") + ("" if said[-1] in ".!" else ".")
        return frame, (ch.choice(("", ".", "!", ", thanks.")) + " " + after).strip()
    if frame == "distractor":
        p.phrase(ch.choice(DISTRACTOR_BEFORE), filler=True)
        strings = [v for v in own if isinstance(v, str)]
        p.word(jsonio.dumps(ch.choice(strings) if strings and ch.chance(30) else ch.string()))
        p.phrase(ch.choice(DISTRACTOR_AFTER))
        return frame, ch.choice(_CLOSE)
    return frame, ch.choice(_CLOSE[:6])


def render(ch: Chooser, catalog: Catalog, plan: Plan, *, explicit_output: int = 35) -> Instruction | None:
    """An English instruction whose expected plan is ``plan`` (its defaults applied), with its tags and
    axes; ``None`` when the rendering came out ambiguous (see the module docstring)."""
    p = _Pieces()
    n = len(plan.calls)
    frame, close = _frame(p, ch, plan)
    framed = frame in ("polite", "question", "preamble", "situation")
    schedule = "parallel" if plan.mode == "parallel" else "sequential"
    same = n > 1 and len({c.tool for c in plan.calls}) == 1 and all(c.args for c in plan.calls)
    repeat = same and ch.chance(40)
    marker = "none" if n == 1 else "plain"
    if plan.mode == "parallel":
        marker = (ch.choice(("prefix", "suffix", "suffix", "inline", "after-tool")) if repeat
                  else ch.choice(("prefix", "suffix", "suffix", "connect", "inline")))
    elif plan.mode == "sequential":
        marker = (ch.choice(("none", "prefix", "suffix", "inline", "after-tool")) if repeat
                  else ch.choice(("plain", "plain", "connect", "connect", "connect", "prefix", "suffix", "list", "arrow",
                                  "inline")))
    if marker == "prefix" and frame == "question":  # "Can you In parallel, ..." is no sentence
        marker = "suffix"
    p.axis("schedule", marker)
    if marker == "prefix":
        p.phrase(ch.choice(_PAR_PREFIX if plan.mode == "parallel" else _SEQ_PREFIX))
    default_kind = "last" if n == 1 else "all"
    say_output = plan.output.kind != default_kind or ch.chance(explicit_output)
    where = "default"
    if say_output:
        where = ch.choice(("first", "last", "last", "last", "middle") if n > 1 and not repeat else ("first", "last", "last"))
    p.axis("output", where)
    if where == "first":
        p.phrase(_capital(ch.choice(_ALL if plan.output.kind == "all" else _LAST), ch))
        p.phrase(ch.choice((":", ",", "--", ". To get it,")))
    shared = shared_args(plan.calls) if ch.chance(70) else ()
    shared = (ch.choice(shared),) if shared else ()  # one, said once: a SHARE word gives the argument before it
    names = {a for a, _ in shared}
    calls = [Call(tool=c.tool, args=tuple(a for a in c.args if a[0] not in names)) for c in plan.calls]
    shaped = n == 1 and (plan.output.fields or plan.output.limit is not None)
    shape_first = shaped and ch.chance(20)  # "Only name and clinic, maximum 10. find_doctors …"
    if shape_first:
        p.axis("shape", "first")
        _render_shaping(p, ch, plan.output, lead=True)
    if marker == "inline":  # "concurrently fetch_invoice …", "Fan out get_contract: …"
        said = ch.choice(_PAR_INLINE if plan.mode == "parallel" else _SEQ_INLINE)
        p.phrase(_capital(said, ch) if not framed and where != "first" and not shape_first else said)
    if repeat:
        after_tool = ""  # "run X twice in parallel: …", "Ask X concurrently for …"
        if marker == "after-tool":
            after_tool = ch.choice(_PAR_INLINE if plan.mode == "parallel" else _SEQ_INLINE)
        _render_repeat(p, ch, calls, first=not framed and marker not in ("prefix", "inline") and where != "first",
                       parallel=plan.mode == "parallel", schedule_words=after_tool)
    for k, call in enumerate(() if repeat else calls):
        connector = ""
        if k:
            if where == "middle" and k == 1:
                opening, closing = ch.choice((("--", "--"), ("(", ")"), (",", ","), ("\u2014", "\u2014")))
                p.phrase(opening)
                p.phrase(ch.choice(_ALL if plan.output.kind == "all" else _LAST))
                p.phrase(closing)
            if plan.mode == "parallel":
                connector = ch.choice(_PAR_CONNECT[:1] if marker == "connect" else _PAR_CONNECT)
                p.phrase(connector)
                if marker == "connect" and k == n - 1:
                    p.phrase(ch.choice(("at the same time", "in parallel", "concurrently", "simultaneously")))
            elif marker == "list":
                connector = ch.choice((";\n", ".\n", ",\n", ";", ".", ","))  # the lexer drops the newline
                p.phrase(connector)
            elif marker == "arrow":
                connector = ch.choice(ARROWS)
                p.phrase(connector)
            elif marker == "connect":
                connector = ch.choice(_SEQ_FINAL) if k == 2 and ch.chance(40) else ch.choice(_SEQ_CONNECT)
                p.phrase(connector)
            else:
                connector = ch.choice(_PLAIN_CONNECT)
                p.phrase(connector)
        # arguments before their tool only where a sentence break ends the call before (after "then" or
        # "next" a reader cannot tell whose arguments they are), and never in a numbered list
        clear = k == 0 or (marker not in ("list", "arrow") and any(w in connector for w in (".", ";")))
        if marker == "list":
            p.phrase(ch.choice(_SEQ_LIST).format(n=k + 1))
        _render_call(p, ch, call, first=k == 0 and not framed and marker not in ("prefix", "inline") and where != "first"
                     and not shape_first, args_first=clear)
        if shaped and not shape_first:
            _render_shaping(p, ch, plan.output)
    if shared:
        _render_shared(p, ch, shared, n)
    if marker == "suffix":
        p.phrase(ch.choice(_PAR_SUFFIX if plan.mode == "parallel" else _SEQ_SUFFIX))
    if where == "last":
        _render_output(p, ch, plan.output.kind, n)
    if close:
        p.phrase(close, filler=close not in ("?", ".", "!"))
    if ch.chance(12):  # a sentence after the request: why, or thanks
        if not close or close[-1] not in ".!?":
            p.phrase(".")
        p.phrase(ch.choice(REASONS), filler=True)
        p.axis("aside", "reason")
    elif ch.chance(8):  # or the asker's situation ("— need it for the karaoke thing tonight")
        if not close or close[-1] not in ".!?":
            p.phrase(ch.choice((".", "\u2014", "--", ",", ".", "!")))
        p.phrase(situation(ch), filler=True)
        p.axis("aside", "situation")
    if ch.chance(12) and p.typo(ch):
        p.axis("noise", "typo")
    if getattr(ch, "augment", False) and ch.chance(40):
        p.sprinkle(ch, 12)  # training-time augmentation, not a phrasing: certification never does this
        p.axis("noise", "sprinkle")
    try:
        text, tags = p.build(catalog)
    except Ambiguous:
        return None
    out_label = plan.output.kind if say_output else "default"
    return Instruction(text=text, catalog=catalog, plan=plan, family=plan_family(plan), tags=tags, schedule=schedule,
                       output=out_label, axes=tuple(p.axes))


def plan_family(plan: Plan) -> str:
    """The PL-ACCURACY family of a plan: single, sequential, parallel or shaping."""
    if plan.mode == "single":
        return "shaping" if plan.output.fields or plan.output.limit is not None else "single"
    return plan.mode


def choose_plan(ch: Chooser, catalog: Catalog, family: str) -> Plan | None:
    """A plan of ``family`` over ``catalog`` (``None`` when the catalog cannot have one)."""
    if family == "shaping":
        shapeable = [t for t in catalog.tools if t.returns.kind == "array"]
        if not shapeable:
            return None
        tool = ch.choice(shapeable)
        props = tool.returns.properties or ()
        fields = limit = None
        what = ch.integer(0, 2) if props else 1
        if what != 1:
            k = ch.integer(1, min(3, len(props)))
            pool = list(props)
            fields = tuple(pool.pop(ch.integer(0, len(pool) - 1)) for _ in range(k))
        if what != 0:
            limit = ch.choice((ch.integer(0, 100), ch.integer(1, 20), 10, 5))
        kind = "all" if ch.chance(25) else "last"
        return Plan(mode="single", calls=(_call(ch, tool),), output=Output(kind=kind, fields=fields, limit=limit))
    n = 1 if family == "single" else ch.integer(2, 3)
    takers = [t for t in catalog.tools if t.arguments]
    if n > 1 and takers and ch.chance(22):  # one tool called with different arguments
        tool = ch.choice(takers)
        tools = [tool] * n
        calls = tuple(_call(ch, tool, least=1) for _ in tools)
        if len(tool.arguments) > 1 and ch.chance(35):  # one of them the same in every call
            name, kind = ch.choice(tool.arguments)
            value = _value(ch, kind)
            same = tuple(Call(tool=c.tool, args=tuple(a for a in c.args if a[0] != name) + ((name, value),)) for c in calls)
            if all(len(c.args) > 1 for c in same) and len({jsonio.dumps(c.to_json()) for c in same}) == n:
                calls = same
    else:
        tools = [ch.choice(catalog.tools) for _ in range(n)]
        calls = tuple(_call(ch, t) for t in tools)
    default_kind = "last" if n == 1 else "all"
    kind = default_kind if ch.chance(70) else ("all" if default_kind == "last" else "last")
    return Plan(mode=family if n > 1 else "single", calls=calls, output=Output(kind=kind))


def _call(ch: Chooser, tool: Tool, *, drop: str | None = None, least: int = 0) -> Call:
    args = []
    names = [a for a in tool.arguments if a[0] != drop]
    if ch.chance(30):  # mention order differs from declaration order
        names = [names.pop(ch.integer(0, len(names) - 1)) for _ in range(len(names))]
    for k, (name, kind) in enumerate(names):
        if name in tool.required or ch.chance(50) or (len(args) < least and k == len(names) - 1):
            args.append((name, _value(ch, kind)))
    return Call(tool=tool.name, args=tuple(args))


def _value(ch: Chooser, kind: str) -> Value:
    if kind == "string":
        return ch.string()
    if kind == "number":
        return ch.number()
    return ch.chance(50)


def supported(ch: Chooser, catalog: Catalog, family: str) -> Instruction | None:
    """An instruction of ``family`` over ``catalog`` (``None`` when the catalog cannot have one, or no
    rendering of its plan fits in 128 tokens)."""
    plan = choose_plan(ch, catalog, family)
    if plan is None:
        return None
    for _ in range(20):  # another rendering of the plan, when one came out ambiguous or too long
        inst = render(ch, catalog, plan)
        if inst is not None and len(inst.tags or ()) <= MAX_TOKENS:
            return inst
    return None
