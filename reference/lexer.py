"""The 128-token frontend (DESIGN §4, SPEC.md "Tokens"): ``IN-LENGTH``, ``IN-STRING``, ``IN-NUMBER``.

An instruction is scanned left to right. White space separates and is no token. A ``"`` opens a
string token that ends at the first ``"`` not taken by a backslash; it must be a valid JSON string,
and its value is the decoded string (lone surrogates kept): it is opaque. The longest JSON number at a
position, when no word character follows it, is a number token, which must be finite and exact. A
maximal run of word characters (categories L, M, N, Pc, and ``$``) is a word token (``true`` and
``false`` are booleans). Any other code point is a token of its own.

Over 128 tokens is diagnosed, never truncated: the whole instruction is scanned either way, so the
diagnostic counts every token and names a bad string or number wherever it is. Only the first
``max_tokens + 1`` tokens are kept (an instruction over the limit is never planned), and a long
instruction is scanned one match at a time: memory stays a small multiple of the instruction, not a
Python object per token, and time is linear in its length.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from dataclasses import dataclass
from typing import NamedTuple

from reference import jsonio
from reference._word_chars import MARKS_AND_CONNECTORS
from reference.violations import Violation

MAX_TOKENS = 128

#: Unicode White_Space (PropList.txt); Python's str.isspace also counts U+001C..U+001F, which are not.
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
# the longest prefix of a string body in which every escape is JSON's (one scan in C, however many escapes)
_ESCAPED = re.compile(r'(?:[^\\]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+')
_WORD_CLASS = r"\w$" + MARKS_AND_CONNECTORS  # \w is L, N and _; plus $, marks and connectors
# One token per match (the groups say what each match is; see _FINDALL_CHARS for how the matches are
# taken): the white space before it, then a whole string token (atomic, so an unterminated string fails in
# one linear scan), a quote that opens a string which never ends, a number not followed by a word
# character (atomic: the longest number or none, never a shorter one), a word, any other code point, or
# the end of the instruction (which takes trailing white space in one match, and is no token).
_TOKEN = re.compile(
    "([" + "".join(sorted(WHITE_SPACE)) + "]*+)(?:"
    r'("(?>(?:[^"\\]++|\\.)*+)")'
    '|(")'
    "|((?>-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)(?![" + _WORD_CLASS + "]))"
    "|([" + _WORD_CLASS + "]+)"
    "|(.)"
    "|\\Z)",
    re.S,
)
# a string token that is its own value: no escape, no control character, no surrogate code point
_PLAIN_STRING = re.compile(r'"[^\\\x00-\x1f\ud800-\udfff]*"\Z')
# up to this many code points ``findall`` lists every match at once (the fastest for the instructions a
# planner plans); past it the matches are taken one at a time, so nothing is held per token
_FINDALL_CHARS = 4096
_GROUPS = re.Match.groups
# an integer literal of more digits than 2^53-1 (16) is not exact: it is not converted (int() of millions
# of digits takes quadratic time where Python's digit limit is lifted)
_SAFE_INTEGER_DIGITS = len(str(jsonio.MAX_SAFE_INTEGER))
_CONTROL = re.compile(r"[\x00-\x1f]")

KINDS = ("word", "string", "number", "boolean", "punct")


class Token(NamedTuple):
    """One token (a named tuple: immutable, and cheap to make, which the planner's throughput needs)."""

    kind: str  # one of KINDS
    text: str  # exactly as written
    value: str | int | float | bool  # decoded string, number, boolean; the text for words and punctuation
    start: int  # code point offsets into the instruction
    end: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Lexed:
    """The tokens of an instruction, or why it cannot be planned (one violation per broken clause).

    ``tokens`` holds every token of an instruction within the limit, and the first ``max_tokens + 1``
    of one over it; ``count`` is how many the whole instruction has."""

    tokens: tuple[Token, ...]
    violations: tuple[Violation, ...]
    count: int

    @property
    def ok(self) -> bool:
        return not self.violations


@lru_cache(maxsize=8192)
def is_word_char(ch: str) -> bool:
    category = unicodedata.category(ch)
    return ch == "$" or category[0] in "LMN" or category == "Pc"


def lex(instruction: str, *, max_tokens: int = MAX_TOKENS) -> Lexed:
    """Tokens of ``instruction``; diagnoses bad strings, inexact numbers and more than ``max_tokens``."""
    tokens: list[Token] = []
    append = tokens.append
    new = tuple.__new__  # a Token without the named tuple's Python-level constructor
    first: dict[str, Violation] = {}
    keep = max_tokens + 1  # tokens kept; past them the scan only counts and checks
    n = 0  # tokens so far
    i = 0  # the offset of the token in hand
    if len(instruction) <= _FINDALL_CHARS:
        matches = _TOKEN.findall(instruction)
    else:
        matches = map(_GROUPS, _TOKEN.finditer(instruction))  # unmatched groups are None, not ""
    for space, string, opening, number, word, other in matches:
        if space:
            i += len(space)
        if word:
            j = i + len(word)
            if n < keep:
                if word == "true" or word == "false":
                    append(new(Token, ("boolean", word, word == "true", i, j)))
                else:
                    append(new(Token, ("word", word, word, i, j)))
        elif other:
            j = i + 1
            if n < keep:
                append(new(Token, ("punct", other, other, i, j)))
        elif string:
            j = i + len(string)
            if _PLAIN_STRING.match(string):
                if n < keep:
                    append(new(Token, ("string", string, string[1:-1], i, j)))
            else:
                token, problem = _string(string, i, decode=n < keep)
                if problem is not None:
                    first.setdefault("IN-STRING", problem)
                if token is not None:
                    append(token)
        elif number:
            j = i + len(number)
            value = _number(number)
            if not jsonio.is_exact_number(value):
                first.setdefault(
                    "IN-NUMBER",
                    Violation(
                        clause="IN-NUMBER",
                        message=f"{shown(number)} at offset {i} is not an exact JavaScript number"
                        " (finite; integers within +/-(2^53-1); shortest round-trip decimals)",
                    ),
                )
            if value == 0:
                value = 0  # -0 is 0
            if n < keep:
                append(new(Token, ("number", number, value, i, j)))
        elif opening:  # an opening quote whose string never ends: the rest of the instruction is inside it
            first.setdefault(
                "IN-STRING",
                Violation(clause="IN-STRING", message=f"the quote at offset {i} opens a string that never ends"),
            )
            break
        else:  # the end of the instruction
            break
        n += 1
        i = j
    if n > max_tokens:
        first["IN-LENGTH"] = Violation(
            clause="IN-LENGTH",
            message=f"{n} tokens is over the limit of {max_tokens} (the instruction is not truncated)",
        )
    order = ("IN-LENGTH", "IN-STRING", "IN-NUMBER")
    return Lexed(tokens=tuple(tokens), violations=tuple(first[c] for c in order if c in first), count=n)


def _number(text: str) -> int | float:
    """The value of a number token, as ``jsonio`` reads it (an ``InexactNumber`` when not exact)."""
    digits = len(text) - (text[0] == "-")
    if digits > _SAFE_INTEGER_DIGITS and "." not in text and "e" not in text and "E" not in text:
        return jsonio.InexactNumber(text)
    return jsonio.loads(text)  # type: ignore[no-any-return]


def _string(raw: str, start: int, *, decode: bool = True) -> tuple[Token | None, Violation | None]:
    """The string token ``raw`` (quotes included) at offset ``start``, and what is wrong with it; without
    ``decode``, only what is wrong (no token is made)."""
    token_end = start + len(raw)
    body = raw[1:-1]
    control = _CONTROL.search(body)
    if control is not None:
        k = control.start()
        return _bad(raw, start, token_end, f"a raw U+{ord(body[k]):04X} at offset {start + 1 + k} (write it as an escape)", decode)
    k = _ESCAPED.match(body).end()  # type: ignore[union-attr]  # it always matches, maybe empty
    if k < len(body):  # body[k] is a backslash whose escape is not JSON
        return _bad(raw, start, token_end, f"the escape {body[k:k + 2]!r} at offset {start + 1 + k} is not JSON", decode)
    if not decode:
        return None, None
    value = json.loads(raw.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass"))
    return Token(kind="string", text=raw, value=value, start=start, end=token_end), None


def _bad(raw: str, start: int, end: int, why: str, decode: bool) -> tuple[Token | None, Violation]:
    token = Token(kind="string", text=raw, value=raw[1:-1], start=start, end=end) if decode else None
    literal = shown(raw, closing='"')
    return token, Violation(clause="IN-STRING", message=f"{literal} is not a JSON string: {why}")


def shown(literal: str, *, closing: str = "") -> str:
    """A literal as a diagnostic quotes it: whole up to 40 characters, else its first 37 and "..."."""
    return literal if len(literal) <= 40 else literal[:37] + "..." + closing
