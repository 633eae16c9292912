"""Independent streaming tool-call collector (Python), written from SPEC.md's
Transport section and the seed contract only.

prepare(stage, *, max_output_chars) -> collector with push(fragment),
finish() and output_chars.
"""

import json
import math
from collections.abc import Mapping

MAX_SAFE_INTEGER = 2 ** 53 - 1


class CollectorError(Exception):
    """Raised for every rejection."""


class Result:
    """What finish() gives back: either a call or a text answer."""

    __slots__ = ("kind", "tool_id", "input", "call", "text")

    def __init__(self, kind, *, tool_id=None, input=None, call=None, text=None):
        self.kind = kind
        self.tool_id = tool_id
        self.input = input
        self.call = call
        self.text = text

    @property
    def value(self):
        return self.call

    def __repr__(self):
        if self.kind == "text":
            return "Result(text=%r)" % (self.text,)
        return "Result(tool_id=%r, input=%r, call=%r)" % (self.tool_id, self.input, self.call)


def _utf16_units(s):
    # A code point above the BMP is two UTF-16 code units; a lone surrogate
    # (possible in Python strings) is one.
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _join_surrogates(s):
    # Python keeps "\ud83d" + "\ude00" as two lone surrogates; reading the
    # string as UTF-16 code units and back turns each adjacent high/low pair
    # into one code point, while lone surrogates stay as they are.
    try:
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    except UnicodeError:  # pragma: no cover - surrogatepass never fails here
        return s


def _normalize_value(v):
    # Strings inside the parsed arguments get the same UTF-16 view (a raw high
    # surrogate followed by an escaped low one is one code point in JS).
    if isinstance(v, str):
        return _join_surrogates(v)
    if isinstance(v, list):
        return [_normalize_value(x) for x in v]
    if isinstance(v, dict):
        return {_join_surrogates(k): _normalize_value(x) for k, x in v.items()}
    return v


def _reject_constant(name):
    raise CollectorError("arguments are not JSON (%s)" % name)


def _parse_int(s):
    try:
        return int(s)
    except ValueError:  # beyond Python's int-string digit limit
        return float(s)


def _parse_json_text(s):
    """Exactly one complete JSON text (RFC 8259), surrounding JSON whitespace
    allowed, nothing else."""
    try:
        return json.loads(s, parse_constant=_reject_constant, parse_int=_parse_int)
    except CollectorError:
        raise
    except (ValueError, RecursionError) as exc:
        raise CollectorError("arguments are not one complete JSON text: %s" % exc) from None


def _is_zero_index(v):
    """Classify a delta's index: returns True for the integer 0, False for
    another integer, raises for anything that is not an integer."""
    if isinstance(v, bool):
        raise CollectorError("delta index is a boolean")
    if isinstance(v, int):
        return v == 0
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        # JSON `0.0` is the integer 0 in JavaScript; treat it alike here.
        return v == 0
    raise CollectorError("delta index is not an integer")


class _Collector:
    def __init__(self, stage, limit):
        self._stage = stage
        self._limit = limit
        self._count = 0
        self._text_parts = []
        self._nonempty_text = False
        self._saw_delta = False
        self._call_id = None
        self._name_parts = []
        self._arg_parts = []
        self._state = "open"  # open | failed | finished

    # ---- output counter -------------------------------------------------
    @property
    def output_chars(self):
        return self._count

    # ---- helpers ---------------------------------------------------------
    def _fail(self, message):
        self._state = "failed"
        raise CollectorError(message)

    def _add_output(self, units):
        if units == 0:
            return
        total = self._count + units
        if total > MAX_SAFE_INTEGER:
            self._fail("output exceeds the largest safe integer")
        self._count = total
        if total > self._limit:
            self._fail("output of %d UTF-16 code units passes max_output_chars" % total)

    def _check_open(self):
        if self._state == "failed":
            raise CollectorError("collector already rejected the stream")
        if self._state == "finished":
            raise CollectorError("collector already finished")

    # ---- push ------------------------------------------------------------
    def push(self, fragment):
        self._check_open()
        try:
            if isinstance(fragment, str):
                self._push_text(fragment)
            elif isinstance(fragment, Mapping):
                self._push_delta(fragment)
            else:
                self._fail("fragment is neither a string nor a function-call delta: %s"
                           % type(fragment).__name__)
        except CollectorError:
            self._state = "failed"
            raise
        except Exception as exc:  # a misbehaving fragment object
            self._state = "failed"
            raise CollectorError("bad fragment: %r" % (exc,)) from None

    def _push_text(self, text):
        self._add_output(_utf16_units(text))
        if text:
            self._text_parts.append(text)
            self._nonempty_text = True
            if self._saw_delta:
                self._fail("body text mixed with a function call")

    def _push_delta(self, delta):
        # --- shape (TR-FRAGMENT) ---
        if "index" not in delta:
            self._fail("delta without index")
        is_first_call = _is_zero_index(delta["index"])
        frag_id = None
        if "id" in delta:
            frag_id = delta["id"]
            if not isinstance(frag_id, str) or frag_id == "":
                self._fail("delta id must be a non-empty string")
        name = None
        if "name" in delta:
            name = delta["name"]
            if not isinstance(name, str):
                self._fail("delta name must be a string")
        args = None
        if "arguments" in delta:
            args = delta["arguments"]
            if not isinstance(args, str):
                self._fail("delta arguments must be a string")

        # --- protocol (TR-SINGLE, TR-ID, TR-MIXED) ---
        if not is_first_call:
            self._fail("delta of a second call (index is not 0)")
        if frag_id is not None:
            if self._call_id is None:
                self._call_id = frag_id
            elif self._call_id != frag_id:
                self._fail("conflicting call ids")
        self._saw_delta = True
        if self._nonempty_text:
            self._fail("function call mixed with body text")

        # --- output (TR-COUNT, TR-LIMIT) ---
        units = 0
        if name:
            units += _utf16_units(name)
            self._name_parts.append(name)
        if args:
            units += _utf16_units(args)
            self._arg_parts.append(args)
        self._add_output(units)

    # ---- finish ----------------------------------------------------------
    def finish(self):
        self._check_open()
        try:
            return self._finish()
        except CollectorError:
            self._state = "failed"
            raise
        except Exception as exc:  # tool.parse rejecting, stage misbehaving
            self._state = "failed"
            raise CollectorError("rejected: %r" % (exc,)) from None

    def _finish(self):
        if self._count > self._limit:
            self._fail("output passes max_output_chars")
        if not self._saw_delta:
            text = "".join(self._text_parts)
            if text == "":
                self._fail("empty answer: no text and no call")
            self._state = "finished"
            self._text_parts = []
            return Result("text", text=_join_surrogates(text))

        if self._nonempty_text:  # already caught in push; kept for safety
            self._fail("body text mixed with a function call")
        name = _join_surrogates("".join(self._name_parts))
        if name == "":
            self._fail("call names no tool")
        tool = self._stage.get(name)
        if tool is None:
            self._fail("call names a tool outside the stage: %r" % (name,))
        raw = "".join(self._arg_parts)
        value = _normalize_value(_parse_json_text(_join_surrogates(raw)))
        parsed = tool.parse(value)  # raises for input the tool rejects
        # Everything is validated: resolve exactly once.
        self._state = "finished"
        self._name_parts = []
        self._arg_parts = []
        call = tool.resolve(parsed)
        return Result("call", tool_id=name, input=parsed, call=call)


def prepare(stage, *, max_output_chars):
    limit = max_output_chars
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit != limit or limit < 0:
        raise CollectorError("max_output_chars must be a non-negative integer or infinity")
    if isinstance(limit, float) and math.isfinite(limit) and not limit.is_integer():
        raise CollectorError("max_output_chars must be an integer or infinity")
    return _Collector(stage, limit)
