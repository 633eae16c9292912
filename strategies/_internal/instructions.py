"""English instructions with known answers, as Hypothesis strategies and as a seeded sampler.

The phrasing grammar lives beside this module: ``vocabulary.py`` (the tables of words and forms),
``rendering.py`` (supported instructions along independent axes, with per-token truth), ``unsupported.py``
(the families a planner must refuse) and ``transforms.py`` (adversarial inputs and the metamorphic
transforms of PL-INVARIANT). The choosers are in ``choosers.py``. Every rendering carries its ground truth:
the plan (or the unsupported family), a tag for each token and the phrasing axes it used.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from reference.catalog import Catalog
from strategies._internal.choosers import DrawChooser, RandomChooser
from strategies._internal.errors import InvalidArgument
from strategies._internal.rendering import (  # noqa: F401  (the grammar's public face)
    AXES, SUPPORTED, TAGS, Instruction, choose_plan, instruction_catalog_ok, plan_family, render, render_catalog,
    supported, usable_name,
)
from strategies._internal.transforms import (  # noqa: F401
    ADVERSARIAL_INVALID, ADVERSARIAL_SUPPORTED, adversarial, catalog_names, fresh_names, pad, permute_catalog, rename,
    substitute_strings,
)
from strategies._internal.unsupported import UNSUPPORTED, unsupported  # noqa: F401
from strategies._internal.vocabulary import AT_LIMIT_WORD, NEUTRAL, PHRASE_WORDS  # noqa: F401


def _check_families(families: Sequence[str], known: Sequence[str]) -> None:
    if not families or any(f not in known for f in families):
        raise InvalidArgument(f"Cannot have families={families!r}: each must be one of {tuple(known)}")


def _rendered(inst: Instruction | None) -> Instruction:
    """``inst``, or a Hypothesis rejection when the draw could not render one (too long, no such tool)."""
    assume(inst is not None)
    assert inst is not None
    return inst


@st.composite
def instruction_catalogs(draw: st.DrawFn, *, adversarial: bool = True, min_tools: int = 1) -> Catalog:
    """Valid catalogs whose every name an instruction can mention as one word token."""
    return render_catalog(DrawChooser(draw, adversarial=adversarial), adversarial=adversarial, min_tools=min_tools)


@st.composite
def instructions(
    draw: st.DrawFn, catalog: Catalog | None = None, *, families: Sequence[str] = SUPPORTED, adversarial: bool = True
) -> Instruction:
    """Supported instructions rendered from known plans, with the plan, per-token tags and the phrasing
    forms used (``Instruction.axes``, each an ``axis=form`` of ``AXES``).

    Shrinks towards a plain ``call TOOL`` over a one-tool catalog."""
    _check_families(families, SUPPORTED)
    ch = DrawChooser(draw, adversarial=adversarial)
    if catalog is None:
        catalog = render_catalog(ch, adversarial=adversarial)
    elif not instruction_catalog_ok(catalog):
        raise InvalidArgument("Cannot render instructions over a catalog with names that are not one word token")
    family = ch.choice(families)
    inst = supported(ch, catalog, family)
    if inst is None and family == "shaping":
        inst = supported(ch, catalog, "single")
    return _rendered(inst)


@st.composite
def unsupported_requests(draw: st.DrawFn, catalog: Catalog | None = None, *, families: Sequence[str] = UNSUPPORTED) -> Instruction:
    """Unsupported requests over ``catalog``, each labelled with its family (``Instruction.family``)."""
    _check_families(families, UNSUPPORTED)
    ch = DrawChooser(draw, adversarial=False)
    if catalog is None:
        catalog = render_catalog(ch, adversarial=False)
    inst = unsupported(ch, catalog, ch.choice(families))
    return _rendered(inst)


@st.composite
def adversarial_instructions(draw: st.DrawFn, catalog: Catalog | None = None, *,
                             families: Sequence[str] = ADVERSARIAL_SUPPORTED + tuple(ADVERSARIAL_INVALID)) -> Instruction:
    """Instructions crafted to break frontends: injection text in quoted values, exactly 128 tokens,
    over-length, malformed strings and inexact numbers; ``plan`` or ``clause`` says what is expected."""
    ch = DrawChooser(draw)
    if catalog is None:
        catalog = render_catalog(ch)
    inst = adversarial(ch, catalog, ch.choice(tuple(families)))
    return _rendered(inst)


def sample(
    rng: random.Random, kind: str, family: str | None = None, *, adversarial_names: bool = True, augment: bool = True
) -> Instruction | None:
    """One instruction drawn with ``rng`` (no Hypothesis): ``kind`` is supported, unsupported or adversarial."""
    # one rendering in five leans to the plainest options (what shrinking reaches: one tool, bare verbs,
    # repeated calls of one tool without arguments), so the corners are learnt as well as the middle
    ch = RandomChooser(rng, plain=rng.choice((0, 0, 0, 0, 35)), augment=augment)
    catalog = render_catalog(ch, adversarial=adversarial_names)
    if kind == "supported":
        return supported(ch, catalog, family or ch.choice(SUPPORTED))
    if kind == "unsupported":
        return unsupported(ch, catalog, family or ch.choice(UNSUPPORTED))
    return adversarial(ch, catalog, family or ch.choice(ADVERSARIAL_SUPPORTED + tuple(ADVERSARIAL_INVALID)))


def plan_family_json(plan: Any) -> str:
    """:func:`plan_family` of a plan given as raw JSON."""
    output = plan.get("output", {}) if isinstance(plan, dict) else {}
    if isinstance(plan, dict) and plan.get("mode") == "single":
        return "shaping" if isinstance(output, dict) and ("fields" in output or "limit" in output) else "single"
    return str(plan.get("mode")) if isinstance(plan, dict) else "single"
