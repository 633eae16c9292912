"""Faulty collectors: each breaks one Transport clause the way hand-written collectors do, and the kit
must flag it there. Each is the reference collector (``reference.transports``) with one behaviour
changed, offered as a ``prepare`` function (``--role collector --python tests.faulty.collectors:NAME``).
``CLAUSE_OF`` maps each to the clause it must be caught under."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from reference import jsonio
from reference.transports import Collector, Selection, Stage


def _make(cls: type[Collector]) -> Any:
    def prepare(stage: Stage, *, max_output_chars: float = math.inf) -> Collector:
        return cls(stage, max_output_chars=max_output_chars)

    return prepare


class _SplitPairs(Collector):
    """Joins fragments as they are: a surrogate pair split between two fragments stays two lone halves."""

    def finish(self) -> Any:
        import reference.transports as t

        joined = t._joined
        t._joined = "".join  # type: ignore[assignment]
        try:
            return super().finish()
        finally:
            t._joined = joined


class _CountsBytes(Collector):
    """Counts UTF-8 bytes, not UTF-16 units."""

    def _count(self, text: str) -> None:
        self.output_chars += len(text.encode("utf-8", "surrogatepass"))
        if self.output_chars > self.max_output_chars:
            raise self._fail("output_limit", "over the limit")


class _FractionalCount(Collector):
    """Reports its count as a float halfway through (an average it keeps)."""

    @property  # type: ignore[override]
    def output_chars(self) -> Any:
        return self._n + 0.5 if self._n else 0

    @output_chars.setter
    def output_chars(self, value: int) -> None:
        self._n = value


class _LimitOffByOne(Collector):
    """Rejects output that reaches the limit, not only output past it."""

    def _count(self, text: str) -> None:
        super()._count(text)
        if self.output_chars >= self.max_output_chars and text:
            raise self._fail("output_limit", "at the limit")


class _NoLimit(Collector):
    """Never enforces maxOutputChars."""

    def _count(self, text: str) -> None:
        from reference.transports import utf16_length

        self.output_chars += utf16_length(text)


class _LaxFragments(Collector):
    """Takes a delta without an index as call 0, and coerces non-string fields to strings."""

    def push(self, fragment: Any) -> None:
        if isinstance(fragment, Mapping):
            fragment = {"index": 0, **{k: (str(v) if k in ("id", "name", "arguments") and v is not None else v)
                                       for k, v in fragment.items() if k != "index"}}
            if not fragment.get("id", "x"):
                fragment.pop("id")
        elif isinstance(fragment, (list, int, float)) or fragment is None:
            return
        super().push(fragment)


class _FirstCallOnly(Collector):
    """Keeps the first call and quietly drops the deltas of any other."""

    def push(self, fragment: Any) -> None:
        index = fragment.get("index") if isinstance(fragment, Mapping) else None
        if isinstance(index, int) and not isinstance(index, bool) and index != 0:
            return
        super().push(fragment)


class _KeepsFirstId(Collector):
    """Keeps the first id it sees and ignores any other."""

    def push(self, fragment: Any) -> None:
        if isinstance(fragment, Mapping) and self._id is not None and fragment.get("id") not in (None, self._id):
            fragment = {k: v for k, v in fragment.items() if k != "id"}
        super().push(fragment)


class _DropsBody(Collector):
    """Drops body text that comes with a call (a common "be lenient" choice)."""

    def push(self, fragment: Any) -> None:
        if isinstance(fragment, str) and fragment and (self._call or self._pending_call(fragment)):
            return
        super().push(fragment)
        if isinstance(fragment, Mapping) and self._text:
            self._text.clear()

    def _pending_call(self, fragment: str) -> bool:
        return False


class _AnyTool(Collector):
    """Resolves a call of an unknown tool as the stage's first tool."""

    def finish(self) -> Any:
        from reference.transports import _joined

        name = _joined(self._name)
        if self._call and self.stage.get(name) is None and self.stage.tools:
            self._name = [self.stage.tools[0].id]
        return super().finish()


class _MendsArguments(Collector):
    """Closes arguments cut short with the brackets they lack, and skips the tool's parse."""

    def finish(self) -> Any:
        if not self._call:
            return super().finish()
        self._done = True
        if self._error is not None:
            raise self._error
        from reference.transports import _joined

        name = _joined(self._name)
        tool = self.stage.get(name)
        if tool is None:
            raise self._fail("unknown_tool", name or "no name")
        text = _joined(self._arguments)
        for suffix in ("", "}", '"}', "}}"):
            try:
                value = jsonio.loads(text + suffix)
                break
            except ValueError:
                continue
        else:
            raise self._fail("arguments_invalid", "not JSON")
        if not isinstance(value, dict):
            raise self._fail("arguments_invalid", "not an object")
        return Selection(tool_id=name, input=value, call=tool.resolve(value), call_id=self._id)


class _ResolvesFirst(Collector):
    """Resolves the tool as soon as the arguments parse as JSON, before the tool's own parse."""

    def finish(self) -> Any:
        if self._call and self._error is None:
            from reference.transports import _joined

            tool = self.stage.get(_joined(self._name))
            if tool is not None:
                try:
                    tool.resolve(jsonio.loads(_joined(self._arguments)))
                except (ValueError, TypeError, AttributeError):
                    pass
        return super().finish()


split_pairs = _make(_SplitPairs)
counts_bytes = _make(_CountsBytes)
fractional_count = _make(_FractionalCount)
limit_off_by_one = _make(_LimitOffByOne)
no_limit = _make(_NoLimit)
lax_fragments = _make(_LaxFragments)
first_call_only = _make(_FirstCallOnly)
keeps_first_id = _make(_KeepsFirstId)
drops_body = _make(_DropsBody)
any_tool = _make(_AnyTool)
mends_arguments = _make(_MendsArguments)
resolves_first = _make(_ResolvesFirst)

CLAUSE_OF = {
    "split_pairs": "TR-ASSEMBLE",
    "counts_bytes": "TR-COUNT",
    "fractional_count": "TR-COUNT",
    "limit_off_by_one": "TR-LIMIT",
    "no_limit": "TR-LIMIT",
    "lax_fragments": "TR-FRAGMENT",
    "first_call_only": "TR-SINGLE",
    "keeps_first_id": "TR-ID",
    "drops_body": "TR-MIXED",
    "any_tool": "TR-TOOL",
    "mends_arguments": "TR-ARGS",
    "resolves_first": "TR-RESOLVE",
}


def main(argv: list[str]) -> int:
    """``python -m tests.faulty.collectors NAME``: that faulty collector over the collector role's JSON Lines
    protocol (as ``codemode collect`` serves the reference)."""
    from reference.protocol import serve
    from reference.transports import collect_request

    make = globals()[argv[1]]
    return serve(lambda request: collect_request(request, make=make))


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv))
