"""ECMAScript name rules: IdentifierName, reserved words, and what a tool may be called.

IdentifierName is ``IdentifierStart IdentifierPart*`` where IdentifierStart is ID_Start, ``$`` or ``_``
and IdentifierPart is ID_Continue, ``$``, ZWNJ or ZWJ (ECMA-262 §12.7). The Unicode tables come from V8
itself (``_unicode_id.py``) so the kit agrees with the engine it runs compiled plans in.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

from reference._unicode_id import ID_CONTINUE, ID_START

#: ECMA-262 ReservedWord, plus the words reserved in strict mode code and in async/generator bodies.
RESERVED_WORDS = frozenset(
    """await break case catch class const continue debugger default delete do else enum export extends
    false finally for function if import in instanceof new null return super switch this throw true try
    typeof var void while with yield implements interface let package private protected public static
    """.split()
)


def _in_ranges(table: tuple[int, ...], cp: int) -> bool:
    # table is start0, end0, start1, end1, ...: an odd insertion point means cp lies in a range
    i = bisect_right(table, cp)
    return i % 2 == 1 or (i > 0 and table[i - 1] == cp)


def is_identifier_start(ch: str) -> bool:
    return ch in "$_" or _in_ranges(ID_START, ord(ch))


def is_identifier_part(ch: str) -> bool:
    return ch in "$\u200c\u200d" or _in_ranges(ID_CONTINUE, ord(ch))


_ASCII_NAME = re.compile(r"[A-Za-z$_][A-Za-z0-9$_]*\Z")


def is_identifier_name(name: object) -> bool:
    """True when ``name`` is a string spelling an ECMAScript IdentifierName (no escapes)."""
    if not isinstance(name, str) or not name:
        return False
    if _ASCII_NAME.match(name):
        return True
    return _unicode_identifier_name(name) if len(name) <= 64 else _check(name)


@lru_cache(maxsize=4096)
def _unicode_identifier_name(name: str) -> bool:
    return _check(name)


def _check(name: str) -> bool:
    return is_identifier_start(name[0]) and all(is_identifier_part(ch) for ch in name[1:])


def is_reserved_word(name: str) -> bool:
    return name in RESERVED_WORDS


def is_tool_name(name: object) -> bool:
    """A tool name is an IdentifierName that is not a reserved word (strict mode, ``await``, ``yield``)."""
    return is_identifier_name(name) and name not in RESERVED_WORDS
