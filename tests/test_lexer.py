"""The 128-token frontend: token rules, the limit, and JSONTestSuite's strings and numbers.

JSONTestSuite (tests/data/JSONTestSuite, MIT, see its LICENSE and SOURCE) wraps each value in an
array: ``["abc"]``, ``[1.5]``. Each file's inner text is put into an instruction. The decisions:

* ``y_string_*``: accepted, and the string token decodes exactly as Python's ``json`` decodes it.
* ``y_number_*``: accepted when the number is exact for JavaScript; ``123e65``, ``1E22``, ``123e45``
  and ``123.456e78`` are JSON but integer-valued beyond 2^53-1, so IN-NUMBER diagnoses them.
* Most files wrap the value in an array; a few hold a bare value, used whole.
* ``n_*``: diagnosed (IN-STRING, IN-NUMBER) whenever the bad text is read as a string or number token.
  Under the token rules much of it is not: ``+1`` is ``+`` and ``1``, ``0x1`` and ``1eE2`` are words,
  ``'single quote'`` is punctuation and words, ``""x`` is a valid empty string and a word. Such an
  instruction holds no bad string or number token, so there is nothing to diagnose; the test asserts
  exactly that: no token is the whole bad text read as a string or number.
* ``i_number_*``: overflow, huge integers and underflow (``123e-10000000`` is not 0 although its
  nearest double is) are not exact: IN-NUMBER.
* ``i_string_*`` with ``\\u`` escapes of lone or mis-ordered surrogates: accepted, the lone surrogates
  kept (quoted values are opaque; SPEC.md "Tokens").
* ``i_string_*`` that are not UTF-8 (Latin-1, UTF-16, overlong or truncated sequences): no instruction
  can hold them; a request line carrying them is answered with a diagnostic by the protocol layer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.cli import compile_handler
from reference.lexer import MAX_TOKENS, WHITE_SPACE, lex
from reference.protocol import respond

SUITE = Path(__file__).parent / "data" / "JSONTestSuite" / "test_parsing"
FILES = sorted(p.name for p in SUITE.iterdir())
INEXACT_Y_NUMBERS = {"y_number.json", "y_number_real_capital_e.json", "y_number_real_exponent.json", "y_number_real_fraction_exponent.json"}
PREFIX = "find q "


def inner(name: str) -> str:
    """The value's text: inside the wrapping array, or the whole document for a bare value."""
    doc = (SUITE / name).read_bytes().decode("utf-8").strip()
    return doc[1:-1] if doc.startswith("[") and doc.endswith("]") else doc


def expected(name: str) -> object:
    value = json.loads((SUITE / name).read_text(encoding="utf-8"))
    return value[0] if isinstance(value, list) else value


def canonical(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def _utf8(name: str) -> bool:
    try:
        (SUITE / name).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("name", [f for f in FILES if f.startswith("y_string")])
def test_y_strings_are_accepted_and_decode_like_python_json(name: str) -> None:
    text = inner(name).strip()
    lexed = lex(PREFIX + text)
    assert lexed.ok, lexed.violations
    (token,) = lexed.tokens[2:]
    assert token.kind == "string"
    assert token.value == canonical(expected(name))


@pytest.mark.parametrize("name", [f for f in FILES if f.startswith("y_number")])
def test_y_numbers_are_accepted_when_exact(name: str) -> None:
    lexed = lex(PREFIX + inner(name))
    (token,) = lexed.tokens[2:]
    assert token.kind == "number"
    if name in INEXACT_Y_NUMBERS:
        assert [v.clause for v in lexed.violations] == ["IN-NUMBER"]
    else:
        assert lexed.ok, lexed.violations
        assert token.value == expected(name)


@pytest.mark.parametrize("name", [f for f in FILES if f.startswith("n_") and _utf8(f)])
def test_n_files_are_diagnosed_or_hold_no_bad_token(name: str) -> None:
    text = inner(name)
    lexed = lex(PREFIX + text)
    if lexed.ok:
        whole = text.strip()
        assert all(t.text != whole for t in lexed.tokens if t.kind in ("string", "number")), name
        for t in lexed.tokens:
            if t.kind == "string":
                json.loads(t.text)  # every string token that got through is valid JSON
    else:
        assert {v.clause for v in lexed.violations} <= {"IN-STRING", "IN-NUMBER"}


@pytest.mark.parametrize("name", [f for f in FILES if f.startswith("i_number")])
def test_i_numbers_are_not_exact(name: str) -> None:
    assert [v.clause for v in lex(PREFIX + inner(name)).violations] == ["IN-NUMBER"]


@pytest.mark.parametrize("name", [f for f in FILES if f.startswith("i_string") and _utf8(f)])
def test_i_strings_with_lone_surrogates_are_kept(name: str) -> None:
    lexed = lex(PREFIX + inner(name))
    assert lexed.ok
    (token,) = lexed.tokens[2:]
    assert token.value == canonical(expected(name))


@pytest.mark.parametrize("name", [f for f in FILES if not _utf8(f)])
def test_bytes_that_are_not_utf8_get_a_diagnostic_at_the_protocol(name: str) -> None:
    raw = (SUITE / name).read_bytes().strip().strip(b"[]")
    line = b'{"instruction": "find q ' + raw.replace(b'"', b'\\"') + b'", "tools": []}'
    answer = respond(line, compile_handler)
    assert set(answer) == {"diagnostic"}


def test_the_limit_is_128_tokens_never_truncated() -> None:
    assert lex(" ".join(["w"] * MAX_TOKENS)).ok
    over = lex(" ".join(["w"] * (MAX_TOKENS + 1)))
    assert [v.clause for v in over.violations] == ["IN-LENGTH"]
    assert len(over.tokens) == over.count == MAX_TOKENS + 1  # scanned whole


def test_over_the_limit_every_token_is_counted_and_the_first_129_kept() -> None:
    over = lex(" ".join(["w"] * 1000))
    assert over.count == 1000 and len(over.tokens) == MAX_TOKENS + 1
    assert over.violations[0].message.startswith("1000 tokens is over the limit of 128")
    wide = lex(" ".join(["w"] * 1000), max_tokens=10**6)  # callers that want every token ask for them
    assert wide.ok and wide.count == len(wide.tokens) == 1000


@pytest.mark.parametrize("short", [True, False])
def test_a_long_instruction_is_scanned_whole_without_an_object_per_token(short: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the limit, a bad string and an inexact number past the 100,000th token are still diagnosed,
    and the scan allocates far less than the instruction (no list of a match per token, no token past
    the 129th). Both scans (``findall`` for short instructions, one match at a time for long ones) agree."""
    import tracemalloc

    if short:
        monkeypatch.setattr("reference.lexer._FINDALL_CHARS", 10**9)
    text = "w " * 100_000 + '"\\q \\x" 1e400 end'
    tracemalloc.start()
    try:
        lexed = lex(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [v.clause for v in lexed.violations] == ["IN-LENGTH", "IN-STRING", "IN-NUMBER"]
    assert lexed.count == 100_003 and len(lexed.tokens) == MAX_TOKENS + 1
    assert "offset 200001" in lexed.violations[1].message and "offset 200008" in lexed.violations[2].message
    if not short:
        assert peak < len(text) // 4, peak  # was 100 times the instruction


def test_a_huge_integer_is_inexact_without_being_converted(monkeypatch: pytest.MonkeyPatch) -> None:
    """More digits than 2^53-1 has is inexact as written: nothing converts it (Python's int() of 7
    million digits is quadratic where its digit limit is lifted)."""
    from reference import jsonio

    def no_conversion(text: str) -> object:
        raise AssertionError(f"converted {text[:20]}...")

    monkeypatch.setattr(jsonio, "loads", no_conversion)
    for digits in ("9007199254740992" + "0", "7" * 7_000_000, "-" + "1" * 17):
        lexed = lex(f"limit {digits} rows")
        assert [v.clause for v in lexed.violations] == ["IN-NUMBER"]
        assert lexed.tokens[1].kind == "number" and lexed.tokens[1].text == digits


@pytest.mark.parametrize(
    ("number", "exact"),
    [("1e-" + "0" * 100_000 + "1", True), ("1." + "0" * 100_000, True), ("0e" + "9" * 30, True), ("1." + "0" * 100_000 + "1", False)],
)
def test_long_number_literals_are_judged_by_their_value(number: str, exact: bool) -> None:
    lexed = lex(f"limit {number}")
    assert lexed.ok is exact


def test_an_integer_longer_than_python_converts_is_diagnosed_not_raised() -> None:
    lexed = lex("limit " + "7" * 5000 + " rows")
    assert [v.clause for v in lexed.violations] == ["IN-NUMBER"]
    assert len(lexed.violations[0].message) < 200  # the literal is shortened, not echoed whole
    assert [t.kind for t in lexed.tokens] == ["word", "number", "word"]


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("5px 0x10", ["word", "word"]),
        ("1-2", ["number", "number"]),
        ('team "blue"', ["word", "string"]),
        ("limit 5.", ["word", "number", "punct"]),
        ("true false True", ["boolean", "boolean", "word"]),
        ("a\U0001f600b", ["word", "punct", "word"]),
        ("$x _y", ["word", "word"]),
    ],
)
def test_token_rules(text: str, kinds: list[str]) -> None:
    assert [t.kind for t in lex(text).tokens] == kinds


def test_separators_are_unicode_white_space_only() -> None:
    assert "\x1c" not in WHITE_SPACE and "\u3000" in WHITE_SPACE
    assert [t.text for t in lex("a\u3000b\x1cc").tokens] == ["a", "b", "\x1c", "c"]


@given(st.text(alphabet=st.characters(codec=None), max_size=300))
def test_lexing_never_raises_and_tokens_are_in_order(text: str) -> None:
    lexed = lex(text)
    ends = [0] + [t.end for t in lexed.tokens]
    for t, previous_end in zip(lexed.tokens, ends):
        assert t.start >= previous_end and t.end > t.start
        assert text[t.start : t.end] == t.text
