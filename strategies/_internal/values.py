"""Names, strings and numbers that break naive compilers and frontends."""

from __future__ import annotations

from functools import cache

from hypothesis import strategies as st

from reference.jsonio import MAX_SAFE_INTEGER
from reference.names import RESERVED_WORDS, is_identifier_name, is_tool_name

#: Property names that collide with what every object inherits, or that set a prototype.
OBJECT_NAMES = (
    "__proto__",
    "constructor",
    "toString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "__defineGetter__",
    "__lookupSetter__",
    "prototype",
    "then",
    "length",
    "name",
)

#: Identifiers that are legal but unusual: `$`, `_`, non-ASCII letters, ZWNJ/ZWJ, astral letters.
ODD_IDENTIFIERS = (
    "$",
    "_",
    "$$",
    "_$",
    "\u00fcber",
    "\u540d\u524d",
    "\u0394elta",
    "a\u200cb",
    "a\u200db",
    "\U0001d4b3",
    "x\u0301",
    "eval",
    "arguments",
    "undefined",
    "NaN",
    "Infinity",
    "async",
    "of",
    "get",
    "set",
)

#: Strings that end a literal, a comment, a template or a script element, or that JSON and JS disagree on.
ADVERSARIAL_STRINGS = (
    "",
    '"',
    "'",
    "\\",
    '\\"',
    "`",
    "${tools}",
    "`${1}`",
    "*/",
    "/*",
    "//",
    "\u2028",
    "\u2029",
    "\ud800",
    "\udfff",
    "\udc00\ud800",
    "a\ud83d",
    "\U0001f600",
    "</script>",
    "<!--",
    "-->",
    "\x00",
    "\x00\x01\x1f\x7f",
    "\n\r\t",
    "\u0085",
    "\ufeff",
    "\u202e",
    "__proto__",
    "\\u0041",
    "\"); globalThis.pwned = 1; (\"",
    "'); globalThis.pwned = 1; ('",
)

#: Numbers at JavaScript's edges that are still exact (valid in a plan).
EDGE_NUMBERS = (
    0,
    1,
    -1,
    MAX_SAFE_INTEGER,
    -MAX_SAFE_INTEGER,
    MAX_SAFE_INTEGER - 1,
    2**31,
    -(2**31) - 1,
    2**32,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    0.1,
    0.2,
    1e-7,
    123456789.125,
    4503599627370495.5,
    -0.5,
    0.0,  # written 0.0: a number whose JSON text has a fraction although it is an integer
    100.0,
)

#: JSON number texts that are not exact JavaScript numbers (invalid in a plan or an instruction).
INEXACT_NUMBER_TEXTS = (
    "9007199254740992",
    "-9007199254740992",
    "9007199254740993",
    "1e21",
    "1e16",
    "1e400",
    "-1e400",
    "0.30000000000000001",
    "0.1000000000000000055511151231257827",
    "123456789012345678901234567890",
    "2.50000000000000000001",
)


#: Words tame names are made of; realistic, so names read like real tools and arguments.
WORDS = (
    "list", "get", "find", "search", "create", "send", "fetch", "read", "update", "count", "users",
    "user", "team", "city", "weather", "orders", "order", "invoice", "email", "message", "query",
    "limit", "page", "status", "region", "date", "price", "items", "repo", "issues", "files", "path",
    "title", "body", "id", "score", "flag", "open", "closed", "tag", "owner", "project", "amount",
)


@cache
def tame_names() -> st.SearchStrategy[str]:
    """Lower-case ASCII identifiers such as ``list_users``; shrinks towards ``"list"``."""
    word = st.sampled_from(WORDS)
    return st.one_of(
        word,
        st.tuples(word, word).map("_".join),
        st.tuples(word, st.integers(0, 9)).map(lambda t: f"{t[0]}{t[1]}"),
    )


@cache
def identifier_names(*, adversarial: bool = True) -> st.SearchStrategy[str]:
    """ECMAScript IdentifierNames (reserved words included): tame names, and with ``adversarial`` the
    object-property traps, odd identifiers, reserved words and random Unicode identifiers."""
    if not adversarial:
        return tame_names()
    unicode_names = st.text(
        alphabet=st.characters(codec="utf-8", categories=("Lu", "Ll", "Lo", "Nl")),
        min_size=1,
        max_size=4,
    ).filter(is_identifier_name)
    return st.one_of(
        tame_names(),
        tame_names(),
        st.just("__proto__"),
        st.sampled_from(OBJECT_NAMES),
        st.sampled_from(ODD_IDENTIFIERS),
        st.sampled_from(sorted(RESERVED_WORDS)),
        unicode_names,
    )


@cache
def tool_names(*, adversarial: bool = True) -> st.SearchStrategy[str]:
    """Valid tool names: IdentifierNames that are not reserved words."""
    return identifier_names(adversarial=adversarial).filter(is_tool_name)


@cache
def strings(*, adversarial: bool = True) -> st.SearchStrategy[str]:
    """String values: short words, and with ``adversarial`` the literal-breaking strings above and
    arbitrary text including lone surrogates; shrinks towards ``""``."""
    tame = st.from_regex(r"[a-z]{0,8}", fullmatch=True)
    if not adversarial:
        return tame
    return st.one_of(
        tame,
        st.sampled_from(ADVERSARIAL_STRINGS),
        st.sampled_from(ADVERSARIAL_STRINGS),
        st.text(max_size=12),
        st.text(alphabet=st.characters(codec=None, categories=("Cs", "Zl", "Zp", "Cc")), max_size=4),
    ).map(utf16_canonical)


def utf16_canonical(text: str) -> str:
    """``text`` with every high-low surrogate pair joined into its code point: the one Python string
    for a given sequence of UTF-16 code units (what JSON and JavaScript see)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


@cache
def numbers(*, adversarial: bool = True) -> st.SearchStrategy[int | float]:
    """Exact JavaScript numbers: small integers, and with ``adversarial`` safe-integer edges, subnormals
    and fractions whose shortest form matters; shrinks towards ``0``."""
    small = st.integers(min_value=-1000, max_value=1000)
    if not adversarial:
        return small
    fractions = st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda f: not f.is_integer() and f != 0
    )
    return st.one_of(
        small,
        st.sampled_from(EDGE_NUMBERS),
        st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER),
        fractions,
    )


@cache
def json_values(*, max_leaves: int = 6) -> st.SearchStrategy[object]:
    """Arbitrary JSON values (tool results): shrinks towards ``null``."""
    scalars = st.one_of(st.none(), st.booleans(), numbers(), strings())
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(identifier_names(), inner, max_size=3),
        ),
        max_leaves=max_leaves,
    )
