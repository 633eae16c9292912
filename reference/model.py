"""The Tiny Codemode CNN: instruction tokens + catalog -> per-token tags and per-instruction classes.

One file, read top to bottom: the features, the network, and loading the shipped weights.

Features make the model see an instruction *relative to its catalog*, and nothing of what it must not
see. A token is its kind (word, string, number, boolean, punctuation); a word or punctuation that is not a
catalog name is also its identity: its entry in the lexicon of words seen in training (lower-cased), or its
stem's, or the unknown word (:class:`Lexicon`), plus a capital-letter bit and its shape. A
word that *is* a catalog name carries no identity at all, only what the catalog says of it: a tool name
(and what it returns), an argument of the tool mentioned before / after it or of any tool (and its type,
whether it is required), a return property. A string token is the bare fact "a string": its content is
invisible by construction, so quoted text can never change the plan (PL-OPAQUE), and renaming tools or
arguments consistently, or permuting the catalog, cannot change a feature (PL-INVARIANT). A number is
"a number", plus whether it is an integer and whether it lies in 0..100 (a row limit).

The network is a stack of residual dilated kernel-3 1-D convolutions over the tokens (no attention, nothing
pretrained), with two heads: a tag per token (see ``strategies`` for the tag set) and, from masked mean,
max and attention pooling (a learnt score per token, softmaxed over the tokens: where the evidence for
refusing or for a schedule is), the schedule (reject / sequential / parallel) and the output kind (all /
last / default).
Padding sends nothing to real tokens and is left out of the pooling, so a token's outputs do not depend on
how much padding its batch has.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from reference.catalog import Catalog
from reference.lexer import Token

TAGS = ("O", "CALL", "ARG<", "ARG>", "VAL<", "VAL>", "FIELD", "LIMIT", "AGAIN", "SHARE")
SCHEDULES = ("reject", "sequential", "parallel")
OUTPUTS = ("all", "last", "default")
KINDS = ("word", "string", "number", "boolean", "punct")

# token ids: specials, then the lexicon's identities
PAD, STRING, NUMBER, BOOLEAN, NAME, UNKNOWN = range(6)
SPECIALS = 8
N_FEATURES = 29


@dataclass(frozen=True)
class Config:
    #: the lexicon: the identities with an embedding of their own (see :class:`Lexicon`)
    words: tuple[str, ...] = ()
    channels: int = 64
    dilations: tuple[int, ...] = (1, 2, 4, 8, 16, 1)


STEM = 4  # the letters of a word's stem ("~sort" for sorted, sorting, sorts)


def stem(text: str) -> str | None:
    """The stem identity of a lower-cased word of at least ``STEM + 1`` characters that starts with
    ``STEM`` letters: ``"~"`` and those letters (no token's text starts with ``~`` and goes on)."""
    if len(text) > STEM and text[:STEM].isalpha():
        return "~" + text[:STEM]
    return None


class Lexicon:
    """The words (and punctuation) the network knows, each with an embedding of its own: the lower-cased
    texts seen in at least a few training instructions, and the stems of the words seen (``~sort``).

    A word of the lexicon is its own identity; another word is its stem's, when the lexicon has that
    stem ("sortable" reads as "sort..."), or else the unknown word: a word never seen in training is never
    read as some other word that happens to share its hash (most of people's English is such words)."""

    def __init__(self, words: tuple[str, ...]) -> None:
        self.words = words
        self.index = {w: SPECIALS + k for k, w in enumerate(words)}
        self.cache: dict[str, tuple[int, int]] = {}

    def __len__(self) -> int:
        return len(self.words)

    def identity(self, text: str) -> int:
        low = text.lower()
        found = self.index.get(low)
        if found is None:
            s = stem(low)
            found = self.index.get(s, UNKNOWN) if s is not None else UNKNOWN
        return found

    def entry(self, text: str, kind: str) -> tuple[Any, int]:
        """A word's or punctuation's id and its features (its text says its kind: words and punctuation
        never share one), cached."""
        entry = self.cache.get(text)
        if entry is None:
            entry = (self.identity(text), identity_bits(text, kind))
            if len(text) <= _CACHED_LENGTH and len(self.cache) < 65536:  # a request line may hold a word of
                self.cache[text] = entry  # megabytes: not kept
        return entry


class Texts(Lexicon):
    """What the lexicon is made from: each identity's lower-cased text in place of its id (training data
    is featurized with it first, and the lexicon made from the texts seen)."""

    def __init__(self) -> None:
        super().__init__(())

    def identity(self, text: str) -> Any:
        return text.lower()


def identity_bits(text: str, kind: str) -> int:
    """The features of a word or punctuation that is no catalog name: its kind, a capital first letter, and
    its shape (an underscore, a capital inside it, a digit: how identifiers look, such as a tool that is not
    in the catalog)."""
    bits = _KIND_BIT[kind]
    if text[:1].isupper():
        bits |= _CAPITAL
    if kind == "word":
        if "_" in text:
            bits |= 1 << 26
        if any(c.isupper() for c in text[1:]) and any(c.islower() for c in text):
            bits |= 1 << 27
        if any(c.isdigit() for c in text):
            bits |= 1 << 28
    return bits


def featurize(tokens: tuple[Token, ...], catalog: Catalog, lexicon: Lexicon) -> tuple[list[int], list[int]]:
    """Token ids of an instruction against its catalog, and each token's binary features as one integer
    (bit ``f`` set when feature ``f`` is on; a token has a handful of the ``N_FEATURES``)."""
    tools = {t.name: t for t in catalog.tools}
    any_args: dict[str, int] = {}  # argument name -> the type bits of every tool that declares it
    required: set[str] = set()
    props: set[str] = set()
    for t in catalog.tools:
        for a, kind in t.arguments:
            any_args[a] = any_args.get(a, 0) | 1 << (16 + _TYPE_INDEX[kind])
        required.update(t.required)
        props.update(t.returns.properties or ())
    names = tools.keys() | any_args.keys() | props
    ids: list[int] = []
    codes: list[int] = []
    pt = None  # the tool mentioned nearest before
    tool_at: list[int] | None = None  # where tools are mentioned (found when first needed)
    after = 0  # the features "a tool was mentioned before" (and "it returns an array")
    for i, tok in enumerate(tokens):
        kind, text = tok.kind, tok.text
        if kind == "punct" or (kind == "word" and text not in names):  # most tokens: an identity
            entry = lexicon.entry(text, kind)
            ids.append(entry[0])
            codes.append(entry[1] | after)
            continue
        code = _KIND_BIT[kind] | after
        if kind == "string":
            ids.append(STRING)
        elif kind == "boolean":
            ids.append(BOOLEAN)
        elif kind == "number":
            ids.append(NUMBER)
            value = tok.value
            if isinstance(value, int) or value.is_integer():  # type: ignore[union-attr]
                code |= 1 << 5
                if 0 <= value <= 100:  # type: ignore[operator]
                    code |= 1 << 6
        else:  # a word that is a catalog name (a one-character name such as U+2118 lexes as punctuation,
            # and is an identity like any other)
            ids.append(NAME)
            tool = tools.get(text)
            if tool is not None:
                code |= 1 << 7 | 1 << (8 + _RETURN_INDEX[tool.returns.kind])
                if tool.returns.properties:
                    code |= 1 << 11
                if tool.arguments:
                    code |= 1 << 12
            if text in any_args or text in props:
                if tool_at is None:
                    tool_at = [j for j, t in enumerate(tokens) if t.kind == "word" and t.text in tools]
                k = bisect_right(tool_at, i)
                nt = tools[tokens[tool_at[k]].text] if k < len(tool_at) else None  # the next tool mentioned
                if text in any_args:
                    code |= 1 << 13
                    kind_of = None
                    if pt is not None and (kind_of := pt.argument_type(text)):
                        code |= 1 << 14
                    if nt is not None and (k2 := nt.argument_type(text)):
                        code |= 1 << 15
                        kind_of = kind_of or k2
                    # its type where a tool beside it declares it, else the types of every tool that does (in
                    # no catalog order: the first tool's would make a permuted catalog another instruction)
                    code |= 1 << (16 + _TYPE_INDEX[kind_of]) if kind_of else any_args[text]
                    if text in required:
                        code |= 1 << 19
                if text in props:
                    code |= 1 << 20
                    if pt is not None and text in (pt.returns.properties or ()):
                        code |= 1 << 21
                    if nt is not None and text in (nt.returns.properties or ()):
                        code |= 1 << 22
            if tool is not None:
                pt = tool
                after = _AFTER_ARRAY if tool.returns.kind == "array" else _AFTER
        codes.append(code)
    return ids, codes


_CACHED_LENGTH = 64  # the longest word kept in a lexicon's cache (at most 65,536 words: 4 MiB of text)


_KIND_BIT = {k: 1 << i for i, k in enumerate(KINDS)}  # features 0-4: the token's kind
_RETURN_INDEX = {"text": 0, "object": 1, "array": 2}
_TYPE_INDEX = {"string": 0, "number": 1, "boolean": 2}
_CAPITAL = 1 << 23
_AFTER, _AFTER_ARRAY = 1 << 25, 1 << 25 | 1 << 24


def batch_arrays(rows: list[tuple[list[int], list[int]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pad featurized instructions to the longest of them: ids (B, L) int64, features (B, L, F) and mask
    (B, L) float32, as numpy arrays."""
    if len(rows) == 1 and rows[0][0]:  # one instruction (the latency path): nothing to pad
        ids = np.array([rows[0][0]], dtype=np.int64)
        codes = np.array([rows[0][1]], dtype="<u4")
        mask = np.ones(ids.shape, dtype=np.float32)
    else:
        lengths = np.fromiter((len(ids) for ids, _ in rows), dtype=np.int64, count=len(rows))
        total = int(lengths.sum())
        real = np.arange(max(1, int(lengths.max()))) < lengths[:, None]  # (B, L): row-major, as the rows run
        ids = np.zeros(real.shape, dtype=np.int64)  # PAD is 0
        ids[real] = np.fromiter(itertools.chain.from_iterable(r[0] for r in rows), dtype=np.int64, count=total)
        codes = np.zeros(real.shape, dtype="<u4")
        codes[real] = np.fromiter(itertools.chain.from_iterable(r[1] for r in rows), dtype="<u4", count=total)
        mask = real.astype(np.float32)
    bits = np.unpackbits(codes.view(np.uint8).reshape(*codes.shape, 4), axis=2, count=N_FEATURES, bitorder="little")
    return ids, bits.astype(np.float32), mask


def batch(rows: list[tuple[list[int], list[int]]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`batch_arrays` as tensors: ids (B, L), features (B, L, F), mask (B, L)."""
    ids, feats, mask = batch_arrays(rows)
    return torch.from_numpy(ids), torch.from_numpy(feats), torch.from_numpy(mask)


class Block(nn.Module):
    """``x + conv(gelu(x))`` for a dilated kernel-3 convolution along the tokens, in (batch, tokens,
    channels) layout: one matrix product makes the three taps' contributions, which are then added in,
    shifted by the dilation. The same function as a dilated ``Conv1d``, without its slow paths (dilated
    kernels at batch 1, padded copies of wide tensors).

    With a ``mask``, what a padding position sends to its neighbours is multiplied by 0 on the way (one
    fused multiply-add per tap), so no real token ever receives anything from padding; what padding
    positions themselves hold is never read."""

    def __init__(self, channels: int, dilation: int) -> None:
        super().__init__()
        self.channels = channels
        self.dilation = dilation
        self.taps = nn.Linear(channels, 3 * channels)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        c, d, length = self.channels, self.dilation, x.shape[1]
        z = self.taps(F.gelu(x))  # (B, L, 3C): what each token sends to t+d, t, t-d
        y = x + z[:, :, c : 2 * c]
        if d < length:
            if mask is None:
                y[:, d:, :] += z[:, : length - d, :c]
                y[:, : length - d, :] += z[:, d:, 2 * c :]
            else:  # padding sends nothing (not even the bias)
                y[:, d:, :].addcmul_(z[:, : length - d, :c], mask[:, : length - d])
                y[:, : length - d, :].addcmul_(z[:, d:, 2 * c :], mask[:, d:])
        return y


class TinyCodemode(nn.Module):
    def __init__(self, config: Config | None = None) -> None:
        super().__init__()
        self.config = config or Config()
        c = self.config.channels
        self.lexicon = Lexicon(self.config.words)
        self.embed = nn.Embedding(SPECIALS + len(self.lexicon), c, padding_idx=PAD)
        self.features = nn.Linear(N_FEATURES, c)
        self.blocks = nn.ModuleList(Block(c, d) for d in self.config.dilations)
        self.norm = nn.LayerNorm(c)
        self.tag_head = nn.Linear(c, len(TAGS))
        self.attend = nn.Linear(c, 1)  # how much each token says about the whole request
        self.pool = nn.Sequential(nn.Linear(3 * c, c), nn.GELU())
        self.schedule_head = nn.Linear(c, len(SCHEDULES))
        self.output_head = nn.Linear(c, len(OUTPUTS))

    def forward(self, ids: torch.Tensor, feats: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """ids (B, L), feats (B, L, N_FEATURES), mask (B, L) -> tag logits (B, L, T), schedule (B, 3), output (B, 3)."""
        m = mask.unsqueeze(2)  # (B, L, 1)
        full = bool(mask.all())  # no padding: nothing to mask
        x = self.embed(ids) + self.features(feats)  # (B, L, C)
        for block in self.blocks:
            x = block(x, None if full else m)
        x = self.norm(x)
        tags = self.tag_head(x)
        count = m.sum(dim=1).clamp(min=1.0)
        mean = (x if full else x * m).sum(dim=1) / count  # padding is not averaged in
        peak = (x if full else x.masked_fill(m == 0, -1e4)).amax(dim=1)
        score = self.attend(x)  # (B, L, 1): pooled by a softmax over the tokens, padding left out
        weight = torch.softmax(score if full else score.masked_fill(m == 0, -1e4), dim=1)
        focus = (weight * x).sum(dim=1)
        pooled = self.pool(torch.cat([mean, peak, focus], dim=1))
        return tags, self.schedule_head(pooled), self.output_head(pooled)


WEIGHTS = "tiny_codemode.pt"


def save(model: TinyCodemode, path: str) -> None:
    state = {k: v.to(torch.float16) if v.is_floating_point() else v for k, v in model.state_dict().items()}
    config = asdict(model.config)
    torch.save({"config": config, "state": state}, path)


def load(path: str | None = None) -> TinyCodemode:
    """The model with the shipped weights (``reference/weights/tiny_codemode.pt``), or those at ``path``."""
    if path is None:
        ref = resources.files("reference").joinpath("weights", WEIGHTS)
        with resources.as_file(ref) as p:
            blob = torch.load(p, map_location="cpu", weights_only=True)
    else:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    config = Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in blob["config"].items()})
    model = TinyCodemode(config)
    model.load_state_dict({k: v.to(torch.float32) if v.is_floating_point() else v for k, v in blob["state"].items()})
    model.eval()
    return model
