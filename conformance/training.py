"""Training data for the reference planner, rendered by ``strategies``: ``codemode train`` and the held-out
evaluations.

Training instructions come from seeds ``TRAIN_SEED_BASE`` upwards; held-out evaluation uses seeds below
it, so the two never share a rendering seed. The loop itself is ``reference.train``; this module lives
above ``reference`` so that ``reference`` imports nothing from ``strategies``.
"""

from __future__ import annotations

import multiprocessing
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TRAIN_SEED_BASE = 1_000_000
EVAL_SEED_BASE = 0

#: (kind, family, weight) of the training mixture; family None draws among all of that kind.
MIXTURE = (
    ("supported", "single", 14),
    ("supported", "sequential", 16),
    ("supported", "parallel", 16),
    ("supported", "shaping", 14),
    ("unsupported", None, 30),
    ("adversarial", "injection", 4),
    ("adversarial", "at-limit", 6),
)


def _example(seed: int, hold_out: frozenset[str] = frozenset()) -> Any:
    from reference.train import example
    from strategies._internal.instructions import sample

    rng = random.Random(seed)
    kind, family, _ = rng.choices(MIXTURE, weights=[w for *_, w in MIXTURE])[0]
    inst = sample(rng, kind, family)
    if inst is None or hold_out.intersection(inst.axes):
        return None
    output = inst.output if inst.plan is not None or inst.schedule != "reject" else None
    return example(inst.text, inst.catalog, tags=inst.tags, schedule=inst.schedule, output=output,
                   family=inst.family)


def _examples(args: tuple[int, int, frozenset[str]]) -> list[Any]:
    start, stop, hold_out = args
    return [e for seed in range(start, stop) if (e := _example(seed, hold_out)) is not None]


def generate(n: int, *, base: int, workers: int = 2, hold_out: frozenset[str] = frozenset()) -> list[Any]:
    """``n`` seeds' worth of training examples, made by ``workers`` processes (order is deterministic);
    an instruction phrased with any ``hold_out`` form (``axis=form``) is left out."""
    step = 2000
    parts = [(s, min(s + step, base + n), hold_out) for s in range(base, base + n, step)]
    if workers <= 1:
        chunks = [_examples(p) for p in parts]
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            chunks = pool.map(_examples, parts)
    return [e for chunk in chunks for e in chunk]


#: how many times each hand-written training case is seen per epoch (each time with its own word dropout)
HAND_REPEAT = 6


def train(*, examples: int = 180_000, out: str | None = None, seed: int = 0, workers: int = 2,
          hold_out: Sequence[str] = (), hand: Sequence[Path] | None = None, log: Any = sys.stderr,
          **options: Any) -> Any:
    """Render ``examples`` seeds of training data, add the hand-written training cases (``hand``: their
    files; default: those that ship, ``conformance.handwritten``), each ``HAND_REPEAT`` times, and train the
    Tiny Codemode CNN on them (the shipped recipe); ``hold_out`` phrasing forms (``axis=form``, see
    ``strategies._internal.rendering.AXES``) are kept out of the training data, to measure generalization
    to phrasing never seen: hand-written cases are not labelled with the forms they use, so with
    ``hold_out`` none of them is trained on unless ``hand`` names their files; ``options`` go to
    :func:`reference.train.train`."""
    from conformance import handwritten
    from reference.train import train as fit
    from strategies._internal.vocabulary import UNSEEN

    check_forms(hold_out)
    t0 = time.time()
    data = generate(examples, base=TRAIN_SEED_BASE, workers=workers, hold_out=frozenset(hold_out))
    print(f"generated {len(data)} examples in {time.time() - t0:.0f}s", file=log)
    if hold_out and hand is None:
        hand = []
        print("hand-written cases left out: which phrasing forms they use is not known", file=log)
    written = handwritten.examples(handwritten.read(hand), log=log)
    data += written * HAND_REPEAT  # the same objects: the lexicon counts each case once
    return fit(data, seed=seed, out=out, log=log, reserved=UNSEEN, **options)


def held_out(n: int, *, base: int = EVAL_SEED_BASE, augment: bool = False) -> list[Any]:
    """``n`` seeds of evaluation instructions (seeds below the training base), every family, rendered as
    certification renders them; ``augment`` adds the training-only noise (neutral words scattered in)."""
    from strategies._internal.instructions import SUPPORTED, UNSUPPORTED, sample

    out = []
    families = [("supported", f) for f in SUPPORTED] + [("unsupported", f) for f in UNSUPPORTED] + [
        ("adversarial", "injection"), ("adversarial", "at-limit")
    ]
    for seed in range(base, base + n):
        rng = random.Random(seed)
        kind, family = families[seed % len(families)]
        inst = sample(rng, kind, family, augment=augment)
        if inst is not None:
            out.append(inst)
    return out


def check_forms(forms: Sequence[str]) -> None:
    """Raise ``ValueError`` unless every one of ``forms`` is an ``axis=form`` of the grammar."""
    from strategies._internal.rendering import AXES

    for label in forms:
        axis, _, form = label.partition("=")
        if form not in AXES.get(axis, ()):
            known = ", ".join(f"{a}={f}" for a, fs in AXES.items() for f in fs)
            raise ValueError(f"{label!r} is not a phrasing form; the forms are: {known}")


def by_form(n: int, forms: Sequence[str], *, base: int = EVAL_SEED_BASE) -> list[Any]:
    """Supported evaluation instructions (seeds below the training base) phrased with at least one of
    ``forms``: what a model trained with them held out has never seen."""
    from strategies._internal.instructions import SUPPORTED, sample

    wanted = frozenset(forms)
    out = []
    for seed in range(base, base + n * 20):
        inst = sample(random.Random(seed), "supported", SUPPORTED[seed % len(SUPPORTED)], augment=False)
        if inst is not None and wanted.intersection(inst.axes):
            out.append(inst)
            if len(out) == n:
                break
    return out
