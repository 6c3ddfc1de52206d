"""CEAT's combined effect size (stats.ceat) of a planned test, beside stimkit's own estimates.

A word's contexts are its stimuli in the test's sets (a corpus set: up to N sentences a word,
catalog.corpus); with context c-word each is the word's own token vector. CEAT draws one
context a word per sample; stimkit's d pools every context; the crossed model takes words and
contexts (documents) as random factors. All three come from the same prepared vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..seeding import rng_for
from ..stats.ceat import CombinedEffect, combined_effect_size
from . import association, crossed
from .plan import PlannedTest

ROLES = ("x", "y", "a", "b")


@dataclass(frozen=True)
class CeatRow:
    test: str
    encoder: str
    context: str
    n_samples: int
    words: tuple[int, int, int, int]       # words with a context, X Y A B
    contexts_min: int                      # contexts a word, fewest and most
    contexts_max: int
    ces: float
    ces_p: float
    tau2: float
    d: float                               # stimkit's d over every context (the test's own)
    p: float
    crossed_d: float | None                # words x contexts as random factors


def word_vectors(prep) -> list[list[np.ndarray]]:
    """[X, Y, A, B]: per word (in its list's order), the matrix of its contexts' vectors (X and Y
    before any balancing: CEAT samples from every context)."""
    out = []
    for role in ROLES:
        frame, vectors = prep.unbalanced[role] if role in prep.unbalanced else (prep.kept[role], prep.vectors[role])
        if "word" not in frame.columns:
            raise InputError(f"set {role.upper()} has no words: CEAT samples contexts a word")
        order = frame["word_ordinal"].to_list() if "word_ordinal" in frame.columns else list(range(frame.height))
        words = frame["word"].to_list()
        by_word: dict[tuple, list[int]] = {}
        for i, (k, w) in enumerate(zip(order, words)):
            by_word.setdefault((k, w), []).append(i)
        out.append([vectors[idx] for _, idx in sorted(by_word.items())])
    return out


def ceat_one(con, planned: PlannedTest, enc, n_samples: int, seed: int) -> tuple[CeatRow, CombinedEffect]:
    opts = planned.options
    prep = association.prepare(con, planned, enc, opts)
    vectors = word_vectors(prep)
    ce = combined_effect_size(vectors, n_samples, rng_for(seed, planned.name, enc.fingerprint, "ceat"))
    out = association.compute(prep, opts, planned.name, enc.fingerprint, enc.spec)
    fit = crossed.columns(prep, out["association"], opts, planned.name, enc.fingerprint)
    sizes = [len(w) for role in vectors for w in role]
    row = CeatRow(planned.name, enc.spec, association.context_of(planned.test, enc), n_samples,
                  tuple(len(r) for r in vectors), min(sizes), max(sizes), ce.ces, ce.p, ce.tau2,
                  float(out["effect_size"]), float(out["p_value"]), fit.get("crossed_d"))
    return row, ce
