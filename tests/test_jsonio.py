from __future__ import annotations

import pytest

from reference.jsonio import MAX_SAFE_INTEGER, InexactNumber, dumps, is_exact_number, loads


@pytest.mark.parametrize("text", ["0.1", "1.50", "1e2", "5e-324", "-9007199254740991", "9007199254740991", "-0", "0.5", "1e-7"])
def test_exact_numbers(text: str) -> None:
    assert is_exact_number(loads(text))


@pytest.mark.parametrize("text", ["0.30000000000000001", "9007199254740992", "1e21", "1e400", "-1e400", "1e16", "123456789012345678901234567890", "1e-400", "123e-10000000"])
def test_inexact_numbers(text: str) -> None:
    value = loads(text)
    assert not is_exact_number(value)
    assert loads(dumps(value)) == value


@pytest.mark.parametrize("text", ["1" * 5000, "-" + "9" * 4301])
def test_integers_longer_than_python_converts_are_inexact_literals(text: str) -> None:
    value = loads(f"[{text}]")[0]
    assert isinstance(value, InexactNumber) and not is_exact_number(value)
    assert dumps([value]) == f"[{text}]"


def test_inexact_literals_survive_a_round_trip() -> None:
    value = loads('{"a": [0.30000000000000001, 1e400, "\\ud800"]}')
    assert isinstance(value["a"][0], InexactNumber)
    assert dumps(value) == '{"a":[0.30000000000000001,1e400,"\\ud800"]}'


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": 1, "a": 2}', "{", "[1,]"])
def test_not_json(text: str) -> None:
    with pytest.raises(ValueError):
        loads(text)


def test_dumps_is_ascii_and_keeps_lone_surrogates() -> None:
    text = dumps({"k": "\ud800\u2028\u00e9"})
    assert text.isascii()
    assert loads(text) == {"k": "\ud800\u2028\u00e9"}
    assert MAX_SAFE_INTEGER == 9007199254740991


def test_long_integers_are_inexact_even_where_python_would_convert_them() -> None:
    """The digit limit is the module's own: a process that lifts Python's (``set_int_max_str_digits(0)``)
    does not make ``loads`` convert 7 million digits in quadratic time."""
    import sys

    was = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        value = loads("7" * 5000)
    finally:
        sys.set_int_max_str_digits(was)
    assert isinstance(value, InexactNumber) and dumps(value) == "7" * 5000


@pytest.mark.parametrize("text", ["0e99999999999999999999", "-0.000e-99999999999999999999", "0E+400"])
def test_zero_is_exact_whatever_its_exponent(text: str) -> None:
    value = loads(text)
    assert value == 0 and is_exact_number(value)
