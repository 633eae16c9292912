"""The training loop of the Tiny Codemode CNN, and the rates it is judged by.

``train`` fits a model to :class:`Example` records (token ids, features, per-token tags and the two
per-instruction classes) and ``evaluate`` scores a planner on rendered instructions; where the examples
come from is the caller's business (``conformance.training`` renders them with ``strategies``, so this
package imports nothing from it). Everything is seeded (initialisation, batch order, dropout) and runs on
CPU threads only.
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn import functional as F

from reference import model as M
from reference.jsonio import json_equal
from reference.lexer import lex

IGNORE = -100


@dataclass
class Example:
    ids: list[Any]  # token ids; a word's lower-cased text until the lexicon is made (see ``lexicon``)
    codes: list[int]  # each token's features, as model.featurize gives them
    tags: list[int]
    schedule: int
    output: int
    family: str
    stems: list[int] | None = None  # each token's stem id (M.UNKNOWN: none), once identified


def example(text: str, catalog: Any, *, tags: Sequence[str] | None, schedule: str, output: str | None,
            family: str) -> Example:
    """One training example: ``text`` over ``catalog`` with its per-token tags (``None``: not tagged, as
    for an unsupported request), its schedule class and output kind. Its words are still texts: the
    lexicon is made from the whole training set (:func:`lexicon`), and ids given by :func:`identify`."""
    tokens = lex(text, max_tokens=10**6).tokens
    ids, codes = M.featurize(tokens, catalog, _TEXTS)
    tag_ids = [M.TAGS.index(t) for t in tags] if tags is not None else [IGNORE] * len(tokens)
    out = M.OUTPUTS.index(output) if output is not None else IGNORE
    return Example(ids=ids, codes=codes, tags=tag_ids, schedule=M.SCHEDULES.index(schedule), output=out, family=family)


_TEXTS = M.Texts()

#: a word (or stem) is in the lexicon when this many training instructions have it
MIN_COUNT = 3


def lexicon(data: Sequence[Example], *, reserved: Iterable[str] = ()) -> tuple[str, ...]:
    """The lexicon of a training set: the texts that at least ``MIN_COUNT`` of its instructions have, and the
    stems their words have in at least ``MIN_COUNT`` instructions, sorted; ``reserved`` texts (the augmentation's
    stand-ins for unseen words) are never in it."""
    words: Counter[str] = Counter()
    for e in _distinct(data):
        words.update({t for t in e.ids if isinstance(t, str)})
    skip = {w.lower() for w in reserved}
    known = {w for w, n in words.items() if n >= MIN_COUNT and w not in skip}
    stems: Counter[str] = Counter()
    for w, n in words.items():
        if w not in skip and (s := M.stem(w)) is not None:
            stems[s] += n
    known.update(s for s, n in stems.items() if n >= MIN_COUNT)
    return tuple(sorted(known))


def _distinct(data: Sequence[Example]) -> list[Example]:
    """Each example once, where a training set repeats some (the same object, seen more than once an epoch)."""
    return list({id(e): e for e in data}.values())


def identify(data: Sequence[Example], lex_: M.Lexicon) -> None:
    """Give every example's words their ids in ``lex_``, in place, and note each word's stem id (what word
    dropout may read it as)."""
    for e in _distinct(data):
        e.stems = [lex_.index.get(M.stem(t) or "", M.UNKNOWN) if isinstance(t, str) else M.UNKNOWN for t in e.ids]
        e.ids = [lex_.identity(t) if isinstance(t, str) else t for t in e.ids]


def _batches(examples: list[Example], size: int, rng: random.Random) -> list[list[Example]]:
    order = sorted(examples, key=lambda e: (len(e.ids), rng.random()))
    batches = [order[i : i + size] for i in range(0, len(order), size)]
    rng.shuffle(batches)
    return batches


def _tensors(batch: list[Example], rng: random.Random, dropout: float, known: int) -> tuple[torch.Tensor, ...]:
    rows = []
    for e in batch:
        ids = list(e.ids)
        if dropout:
            stems = e.stems or [M.UNKNOWN] * len(ids)
            for k, t in enumerate(ids):
                if t >= M.SPECIALS and rng.random() < dropout:
                    r = rng.random()  # read as its stem, as a word never seen, or as another known word
                    ids[k] = stems[k] if r < 0.35 else M.UNKNOWN if r < 0.85 else M.SPECIALS + rng.randrange(known)
        rows.append((ids, e.codes))
    ids, feats, mask = M.batch(rows)
    length = ids.shape[1]
    tags = torch.full((len(batch), length), IGNORE, dtype=torch.long)
    for r, e in enumerate(batch):
        tags[r, : len(e.tags)] = torch.tensor(e.tags, dtype=torch.long)
    schedule = torch.tensor([e.schedule for e in batch])
    output = torch.tensor([e.output for e in batch])
    return ids, feats, mask, tags, schedule, output


def train(
    data: list[Example],
    *,
    epochs: int = 18,
    batch_size: int = 128,
    lr: float = 2e-3,
    word_dropout: float = 0.25,
    seed: int = 0,
    reserved: Iterable[str] = (),
    out: str | None = None,
    log: Any = sys.stderr,
) -> M.TinyCodemode:
    """Train from scratch on ``data`` and return the model (saved to ``out`` when given). ``word_dropout``
    is the share of word identities replaced by their stem, the unknown word or another known one in each
    batch, so that words never seen in training (most of people's English) are not read as signals."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    config = M.Config(words=lexicon(data, reserved=reserved))
    identify(data, M.Lexicon(config.words))
    t0 = time.time()
    print(f"training on {len(data)} examples: {dict(Counter(e.family for e in data))}", file=log)
    print(f"lexicon: {len(config.words)} words and stems", file=log)
    model = M.TinyCodemode(config)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    total = epochs * math.ceil(len(data) / batch_size)
    step = 0
    for epoch in range(epochs):
        model.train()
        seen = loss_sum = 0.0
        for batch in _batches(data, batch_size, rng):
            ids, feats, mask, tags, schedule, output = _tensors(batch, rng, dropout=word_dropout, known=len(config.words))
            warm = min(1.0, (step + 1) / 300)
            for group in opt.param_groups:
                group["lr"] = lr * warm * 0.5 * (1 + math.cos(math.pi * step / total))
            tag_logits, schedule_logits, output_logits = model(ids, feats, mask)
            loss = (
                F.cross_entropy(tag_logits.reshape(-1, len(M.TAGS)), tags.reshape(-1), ignore_index=IGNORE)
                + F.cross_entropy(schedule_logits, schedule)
                + (F.cross_entropy(output_logits, output, ignore_index=IGNORE) if (output != IGNORE).any() else 0.0)
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            seen += len(batch)
            loss_sum += loss.item() * len(batch)
        print(f"epoch {epoch + 1}/{epochs}: loss {loss_sum / seen:.4f} ({time.time() - t0:.0f}s)", file=log)
    model.eval()
    if out:
        M.save(model, out)
        print(f"wrote {out}", file=log)
    return model


def evaluate(planner: Any, instructions: Iterable[Any]) -> dict[str, Any]:
    """Exact-match rate per supported family, recall per unsupported family, false-diagnosis rate."""
    items = list(instructions)
    answers = planner.respond_many([(i.text, i.catalog.to_json()) for i in items])

    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    misses: list[tuple[str, Any, Any]] = []
    false_diag = supported = 0
    for inst, answer in zip(items, answers):
        total[inst.family] += 1
        if inst.plan is None:
            if "diagnostic" in answer:
                hit[inst.family] += 1
            else:
                misses.append((inst.text, "diagnostic", answer))
            continue
        supported += 1
        if "diagnostic" in answer:
            false_diag += 1
            misses.append((inst.text, inst.plan.to_json(), answer))
            continue
        if json_equal(answer["plan"], inst.plan.to_json()):
            hit[inst.family] += 1
        else:
            misses.append((inst.text, inst.plan.to_json(), answer))
    rates = {f: hit[f] / total[f] for f in sorted(total)}
    return {
        "rates": rates,
        "counts": dict(total),
        "planned": sorted({i.family for i in items if i.plan is not None}),  # the families that expect plans
        "false_diagnosis": false_diag / supported if supported else 0.0,
        "misses": misses,
    }


def evaluate_corpus(planner: Any, path: str) -> dict[str, Any]:
    """Rates on a JSONL corpus of ``{"family", "instruction", "tools", "expect"}`` lines (such as the
    hand-written ``corpora/heldout/planner.jsonl``): exact matches per supported family, diagnosed per
    unsupported family."""

    from reference import jsonio

    rows = [jsonio.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    answers = planner.respond_many([(r["instruction"], r["tools"]) for r in rows])
    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    misses = []
    false_diag = supported = 0
    for row, answer in zip(rows, answers):
        family = row["family"]
        total[family] += 1
        expect = row["expect"]
        if "plan" in expect:
            supported += 1
            false_diag += "diagnostic" in answer
            ok = "plan" in answer and json_equal(answer["plan"], expect["plan"])
        else:
            ok = "diagnostic" in answer
        hit[family] += ok
        if not ok:
            misses.append((row.get("id"), row["instruction"], answer))
    return {
        "rates": {f: hit[f] / total[f] for f in sorted(total)},
        "counts": dict(total),
        "planned": sorted({r["family"] for r in rows if "plan" in r["expect"]}),
        "false_diagnosis": false_diag / supported if supported else 0.0,
        "misses": misses,
    }
