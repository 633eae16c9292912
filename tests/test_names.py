"""Name rules against V8 itself: the engine is the oracle for IdentifierName and reserved words."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from py_mini_racer import MiniRacer

from reference.names import RESERVED_WORDS, is_identifier_name, is_tool_name
from strategies import ODD_IDENTIFIERS, identifier_names

_ORACLE = r"""
(name) => {
  // IdentifierName: a method name in a literal that reads back as exactly the name (a method, because
  // `__proto__: 0` would set a prototype), and member access `o.name`
  let identifierName = false;
  try {
    const keys = Reflect.ownKeys(new Function("return ({ " + name + "() {} })")());
    new Function("o", "return (o." + name + ")");
    identifierName = keys.length === 1 && keys[0] === name;
  } catch (e) {}
  // a tool name must also be usable as an identifier in strict, async, generator code: a label there
  let toolName = false;
  try {
    new Function("return async function* f() { 'use strict'; " + name + ": ; }");
    toolName = identifierName;
  } catch (e) {}
  return JSON.stringify([identifierName, toolName]);
}
"""


@pytest.fixture(scope="module")
def v8() -> MiniRacer:
    ctx = MiniRacer()
    ctx.eval("globalThis.oracle = " + _ORACLE)
    return ctx


def _oracle(v8: MiniRacer, name: str) -> tuple[bool, bool]:
    ident, tool = json.loads(v8.eval(f"oracle(JSON.parse({json.dumps(json.dumps(name))}))"))
    return ident, tool


names = st.one_of(
    identifier_names(),
    st.sampled_from(sorted(RESERVED_WORDS)),
    st.sampled_from(ODD_IDENTIFIERS),
    st.text(max_size=6),
    st.text(alphabet=st.characters(categories=("L", "M", "N", "Pc", "Cf", "Zs", "Sm")), min_size=1, max_size=4),
).filter(lambda s: "\\" not in s and all(not 0xD800 <= ord(c) <= 0xDFFF for c in s))


@settings(max_examples=600)
@given(names)
def test_name_rules_agree_with_v8(v8: MiniRacer, name: str) -> None:
    assert (is_identifier_name(name), is_tool_name(name)) == _oracle(v8, name)


@pytest.mark.parametrize("word", sorted(RESERVED_WORDS))
def test_every_reserved_word_is_rejected_by_v8_as_a_tool_name(v8: MiniRacer, word: str) -> None:
    assert _oracle(v8, word) == (True, False)
    assert is_identifier_name(word) and not is_tool_name(word)


@pytest.mark.parametrize("name", ["__proto__", "constructor", "toString", "$", "_", "\u00fcber", "\U0001d4b3", "a\u200cb", "eval", "arguments", "undefined", "let_", "async"])
def test_awkward_but_valid_tool_names(v8: MiniRacer, name: str) -> None:
    assert is_tool_name(name)
    assert _oracle(v8, name) == (True, True)


@pytest.mark.parametrize("name", ["", "1a", "a-b", "a b", "\u200cx", "a;b", "x\ud800"])
def test_not_identifiers(name: str) -> None:
    assert not is_identifier_name(name)
