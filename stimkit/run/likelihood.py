"""A test on a scoring encoder (encoders.scoring): its likelihood form, the minimal pairs of its
targets (stimuli.minimal_pairs), through the machinery every association test uses.

Each target sentence (word w of X or Y in frame t) has a score s: its log-probability under
the model, every token scored (the token table's `sum` variant, encoders.token_scores). X
against Y is then WEAT's contrast on s, computed by the code that computes it on s(w, A, B)
(run.association.from_associations): d between X's and Y's sentences, its p over the test's
units (whole words moved together under words as units: the result generalises to other
words), the p with words as units whatever the test's units, the interval of d with words as
units, and the crossed model of words x templates (run.crossed: the crossed d and its
interval). A and B are not read: the result's n_a and n_b are 0 and their items say why.
The per-pair difference log P(s_x) - log P(s_y) of each minimal pair is the paired view,
stored in result_pairs (db/032) and drawn by template in the report.

No balance policy applies: the pairs decide which sentences take part (a sentence with no
partner in its frame takes none), and unequal X and Y compare means (mean difference).

The test `crows-pairs` (imported CrowS-Pairs: pairs given, not rendered) has its own runner
(run.crows); execute routes it there before this module (`handles`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from ..catalog.definitions import ROLES
from ..encoders import Encoder
from ..errors import StimkitError, first_line
from ..seeding import rng_for
from ..stimuli.minimal_pairs import MATCHING, MinimalPairs, minimal_pairs
from . import association, crossed
from .association import MINIMAL_PAIRS
from .options import Options
from .plan import Plan, PlannedTest
from .rows import Failure, Generalisation, Interval, Result

VARIANT = "sum"          # a sentence's score: the sum of its tokens' log-probabilities (nats)
CROWS = "crows-pairs"    # the imported CrowS-Pairs test: run.crows, not the minimal pairs of this module


def scores(enc: Encoder) -> bool:
    """Whether the encoder scores texts (a language model) instead of embedding them."""
    from ..encoders.scoring import is_scoring

    return is_scoring(enc)


def handles(planned: PlannedTest, enc: Encoder) -> bool:
    """Whether this module runs the pair: a test on a scoring encoder, CrowS-Pairs aside."""
    return scores(enc) and planned.name != CROWS


@dataclass
class Scored:
    """A test's target sentences with their scores: the fields of run.association.Prepared that
    the shared parts read (sets_of, items, crossed.columns), and the minimal pairs."""
    frames: dict[str, pl.DataFrame]       # every selected stimulus per role, with a `dropped` column
    kept: dict[str, pl.DataFrame]         # the sentences in a pair (X, Y); A and B empty (not read)
    scores: dict[str, np.ndarray]         # x, y: each kept sentence's score
    pairs: MinimalPairs
    policy: str = "none"
    n_shared_vectors: int = 0
    vectors: dict = field(default_factory=dict)


def pairs_of(planned: PlannedTest) -> MinimalPairs:
    return minimal_pairs(planned.sets["x"], planned.sets["y"], f"test {planned.name!r}")


def texts_of(planned: PlannedTest) -> list[str]:
    """The sentences the test's likelihood form scores: those of its minimal pairs."""
    mp = pairs_of(planned)
    return list(dict.fromkeys(mp.pairs["x_stimulus"].to_list() + mp.pairs["y_stimulus"].to_list()))


def checked(plan: Plan) -> Plan:
    """The plan less the likelihood pairs whose minimal pairs are refused (no shared frame, a pair
    that does not differ), each a failure of the plan: refused before anything is scored, so
    the store is unchanged by them."""
    keep, refused = [], []
    for planned, enc in plan.pairs:
        if handles(planned, enc):
            try:
                pairs_of(planned)
            except StimkitError as e:
                refused.append(Failure(planned.name, getattr(enc, "base_spec", enc.spec), first_line(e), e))
                continue
        keep.append((planned, enc))
    if not refused:
        return plan
    return replace(plan, pairs=tuple(keep), refused=plan.refused + tuple(refused))


def encodings(plan: Plan) -> list[tuple[Encoder, list[str]]]:
    """Per scoring encoder, the texts the plan scores: its tests' minimal pairs, and the
    sentences of their matched baselines' drawn words."""
    found: dict[str, tuple[Encoder, list[str]]] = {}
    for planned, enc in plan.pairs:
        if handles(planned, enc):
            found.setdefault(enc.fingerprint, (enc, []))[1].extend(texts_of(planned))
    for b in plan.baselines:
        if b.draws is not None and handles(b.planned, b.encoder):
            found.setdefault(b.encoder.fingerprint, (b.encoder, []))[1].extend(
                texts_of(b.planned) + b.draws.stimuli["stimulus"].to_list())
    return [(enc, list(dict.fromkeys(texts))) for enc, texts in found.values()]


def sentence_scores(con, enc: Encoder, texts: list[str]) -> np.ndarray:
    """Each text's log-probability from the token table (the `sum` variant)."""
    from ..encoders import token_scores

    return token_scores.totals(con, enc.fingerprint, texts, VARIANT)


def prepare(con, planned: PlannedTest, enc: Encoder) -> Scored:
    """The test's minimal pairs and the scores of their sentences."""
    mp = pairs_of(planned)
    rows = {"x": mp.x_rows, "y": mp.y_rows}
    frames, kept, found = {}, {}, {}
    for role in ROLES:
        f = planned.sets[role].with_row_index("ordinal_in_set")
        if role in rows:
            paired = set(rows[role])
            reason = pl.Series([None if i in paired else "no minimal pair" for i in range(f.height)], dtype=pl.String)
            kept[role] = f[rows[role]]
        else:
            reason = pl.Series(["not read (minimal pairs)"] * f.height, dtype=pl.String)
            kept[role] = f.head(0)
        frames[role] = f.with_columns(dropped=reason)
    for role in ("x", "y"):
        found[role] = sentence_scores(con, enc, kept[role]["stimulus"].to_list())
    return Scored(frames, kept, found, mp)


def pair_rows(result_id: str, scored: Scored) -> pl.DataFrame:
    """result_pairs: each minimal pair with its two sentences' scores and their difference."""
    p = scored.pairs.pairs
    at = {r: {int(row): i for i, row in enumerate(scored.kept[r]["ordinal_in_set"].to_list())} for r in ("x", "y")}
    sx = np.array([scored.scores["x"][at["x"][int(r)]] for r in p["x_row"].to_list()], dtype=np.float64)
    sy = np.array([scored.scores["y"][at["y"][int(r)]] for r in p["y_row"].to_list()], dtype=np.float64)
    return p.select("frame", "x_word", "y_word", "x_stimulus", "y_stimulus", "exact").with_columns(
        pl.lit(result_id).alias("result_id"), pl.Series("pair", range(p.height), dtype=pl.Int32),
        pl.lit(VARIANT).alias("variant"), pl.Series("x_score", sx), pl.Series("y_score", sy),
        pl.Series("difference", sx - sy))


def compute(scored: Scored, opts: Options, test_name: str, fingerprint: str, enc_spec: str) -> dict:
    """d, p (over the test's units and over words) and the interval of d on the sentences' scores."""
    moved = association.permutation_units(scored, opts)
    words = moved if moved[0] is not None else association.word_groups(scored.kept)
    return association.from_associations(
        scored.scores["x"], scored.scores["y"], opts, f"test {test_name!r}, encoder {enc_spec!r}",
        lambda: rng_for(opts.seed, test_name, fingerprint, "permutation"),
        rng_for(opts.seed, test_name, fingerprint, "interval"), moved, words, True)


def result(run_id: str, planned: PlannedTest, enc: Encoder, scored: Scored, opts: Options, started: float,
           kind: str = "test") -> Result:
    test = planned.test
    out = compute(scored, opts, test.name, enc.fingerprint, enc.spec)
    result_id = f"{run_id}/{test.name}/{enc.fingerprint}"
    s = np.concatenate([scored.scores["x"], scored.scores["y"]])
    iv = out["ci"]
    sets = association.sets_of(planned, scored, opts, association.items(result_id, scored, s))
    return Result(
        identity=association.identity_of(result_id, run_id, planned, enc, kind),
        sets=replace(sets, pairs=pair_rows(result_id, scored)),
        inference=association.inference_of(
            opts, statistic=out["statistic"], statistic_kind=f"{out['statistic_kind']} of log P ({VARIANT}, nats)",
            effect_size=out["effect_size"], p_value=out["p_value"], p_method=out["p_method"], samples=out["samples"],
            min_p=out["min_p"], log10_partitions=out["log10_partitions"]),
        interval=(Interval(iv.low, iv.high, opts.ci_level, opts.bootstrap or None, iv.method, iv.scheme) if iv
                  else Interval(bootstrap=opts.bootstrap or None)),
        generalisation=Generalisation(p_words=out["p_words"], p_words_method=out["p_words_method"],
                                      p_words_min=out["p_words_min"],
                                      **crossed.columns(scored, s, opts, test.name, enc.fingerprint)),
        provenance=association.provenance_of(opts, started, association.result_key(planned, enc, opts, kind)),
    )


def run_one(con, run_id: str, planned: PlannedTest, enc: Encoder, opts: Options, kind: str = "test",
            pending: list[Result] | None = None) -> list[Result]:
    """The likelihood form of one test on one scoring encoder: its minimal pairs' result (one
    metric: d of the sentences' log P). The caller owns the transaction (as association.run_one)."""
    started = time.perf_counter()
    found = [result(run_id, planned, enc, prepare(con, planned, enc), opts, started, kind)]
    if pending is None:
        association.write(con, found)
    else:
        pending.extend(found)
    return found


FORM = f"{MINIMAL_PAIRS}: log P of each target sentence ({VARIANT}), X vs Y; pairs {MATCHING}"
