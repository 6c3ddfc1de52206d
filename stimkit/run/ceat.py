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


MAX_SAMPLES = 100_000  # CEAT's N at most (STIMKIT_MAX_CEAT_SAMPLES): Guo & Caliskan drew 10,000


def check_samples(samples: int) -> None:
    """--samples: CEAT's N, 2 to the bound (each draw is a WEAT over every word)."""
    from ..choices import limit
    from ..errors import UsageError

    bound = limit("max_ceat_samples", MAX_SAMPLES)
    if not 2 <= samples <= bound:
        raise UsageError(f"--samples must be between 2 and {bound:,} (raise the bound with STIMKIT_MAX_CEAT_SAMPLES), "
                         f"not {samples}")


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
    single_context_words: int = 0          # words with one context: the same vector in every draw
    note: str | None = None                # what the figure's label must say
    ces_variance: float | None = None
    q: float | None = None
    seed: int = 0
    fingerprint: str = ""
    run_id: str | None = None
    role_versions: str | None = None       # the set versions that played X, Y, A, B (stimuli.sets.role_versions)

    def record(self) -> dict:
        """The row of `ceat_results` (db/025)."""
        wx, wy, wa, wb = self.words
        return {"ceat_id": f"{self.run_id}/{self.test}/{self.fingerprint}", "run_id": self.run_id, "test": self.test,
                "encoder": self.encoder, "fingerprint": self.fingerprint, "context": self.context,
                "n_samples": self.n_samples, "seed": self.seed, "words_x": wx, "words_y": wy, "words_a": wa,
                "words_b": wb, "contexts_min": self.contexts_min, "contexts_max": self.contexts_max,
                "single_context_words": self.single_context_words, "ces": self.ces, "ces_variance": self.ces_variance,
                "ces_p": self.ces_p, "tau2": self.tau2, "q": self.q, "d": self.d, "p_value": self.p,
                "crossed_d": self.crossed_d, "note": self.note, "role_versions": self.role_versions}


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


def single_context_note(sizes: list[int]) -> str | None:
    """The label a CES needs when some words have one context: those words are the same in every
    draw, so the draws vary less than the contexts would make them (CEAT's p pools the draws as
    independent studies). Every word with one context is refused before (stats.ceat)."""
    single = sum(1 for n in sizes if n == 1)
    if not single:
        return None
    return (f"{single} of {len(sizes)} words have one context (the same in every draw): the CES and its p "
            "understate the contexts' variation")


def ceat_one(con, planned: PlannedTest, enc, n_samples: int, seed: int, run_id: str | None = None
             ) -> tuple[CeatRow, CombinedEffect]:
    opts = planned.options
    prep = association.prepare(con, planned, enc, opts)
    vectors = word_vectors(prep)
    ce = combined_effect_size(vectors, n_samples, rng_for(seed, planned.name, enc.fingerprint, "ceat"),
                              what=f"test {planned.name!r}, encoder {enc.spec!r}")
    out = association.compute(prep, opts, planned.name, enc.fingerprint, enc.spec)
    fit = crossed.columns(prep, out["association"], opts, planned.name, enc.fingerprint)
    sizes = [len(w) for role in vectors for w in role]
    row = CeatRow(planned.name, enc.spec, association.context_of(planned.test, enc), n_samples,
                  tuple(len(r) for r in vectors), min(sizes), max(sizes), ce.ces, ce.p, ce.tau2,
                  float(out["effect_size"]), float(out["p_value"]), fit.get("crossed_d"),
                  sum(1 for n in sizes if n == 1), single_context_note(sizes), ce.variance, ce.q, seed,
                  enc.fingerprint, run_id, planned.role_versions)
    return row, ce


def run(con, pairs, n_samples: int, seed: int, command: str, run_fields: dict | None = None,
        on_row=None) -> tuple[str, list[CeatRow]]:
    """CEAT of every (planned test, encoder) pair in one run, stored in `ceat_results` with the
    run (its study, alpha and correction: `run_fields`); all or nothing."""
    from .. import store

    rows = []
    with store.transaction(con):
        run_id = store.start_run(con, command, seed, **(run_fields or {}))
        for pt, enc in pairs:
            row, _ = ceat_one(con, pt, enc, n_samples, seed, run_id)
            rows.append(row)
            if on_row:
                on_row(row)
        store.insert(con, "ceat_results", [r.record() for r in rows])
    return run_id, rows
