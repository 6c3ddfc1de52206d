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

The likelihood form of WEAT (FMAT's log-probability ratio, Bao 2024) where the test's X and Y
sentences come from a two-slot template set whose slot `attribute` holds A's and B's words
(templates/fmat: "John thinks about salary"): per target word w in template line t,
    s(w, t) = mean_{a in A} log P(a | t with w) - mean_{b in B} log P(b | t with w),
and X vs Y on s as above (context `likelihood-weat`). The attribute ends the line, so
log P(a | prefix) = log P(sentence) - log P(prefix), and the prefix, the same for every
attribute of a cell, cancels between A and B: s reads the sentences' sums only. Otherwise a
test runs its minimal pairs (context `minimal-pairs`); `form_of` decides.

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
from ..errors import InputError, StimkitError, first_line
from ..seeding import rng_for
from ..stimuli.minimal_pairs import MinimalPairs, minimal_pairs
from ..stimuli.slots import row_slots
from . import association, crossed
from .association import MINIMAL_PAIRS
from .options import Options
from .plan import Plan, PlannedTest
from .rows import Failure, Generalisation, Interval, Result

VARIANT = "sum"          # a sentence's score: the sum of its tokens' log-probabilities (nats)
CROWS = "crows-pairs"    # the imported CrowS-Pairs test: run.crows, not the minimal pairs of this module
ATTRIBUTE = "attribute"  # the slot of a two-slot template set that holds A's and B's words (the WEAT form)
WEAT_FORM = "likelihood-weat"  # the WEAT form's context; the minimal pairs' is association.MINIMAL_PAIRS


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
    pairs: MinimalPairs | None            # None: the WEAT form
    policy: str = "none"
    n_shared_vectors: int = 0
    vectors: dict = field(default_factory=dict)
    cells: dict = field(default_factory=dict)  # the WEAT form: x, y -> per kept cell (A's rows, B's rows) in the set


def pairs_of(planned: PlannedTest) -> MinimalPairs:
    return minimal_pairs(planned.sets["x"], planned.sets["y"], f"test {planned.name!r}")


def attribute_sides(con, planned: PlannedTest) -> dict[str, list[str | None]] | None:
    """Per X and Y row, "a" or "b" where its `attribute` slot holds a word of A's or of B's word
    list (None: another word, or none): the WEAT form's sentences. None where the targets'
    sentences hold no attribute of both A and B on each side: the minimal-pair form applies."""
    lists = planned.test.word_lists()
    if lists[2] is None or lists[3] is None:
        return None
    slots = row_slots(con, [planned.sets["x"], planned.sets["y"]])
    if not slots:
        return None
    out = {}
    for role in ("x", "y"):
        f = planned.sets[role]
        found = [slots.get((v, o), {}).get(ATTRIBUTE, (None, None))[0]
                 for v, o in zip(f["set_version"].cast(pl.String).to_list(), f["ordinal"].to_list())]
        sides = ["a" if w == lists[2] else "b" if w == lists[3] else None for w in found]
        if "a" not in sides or "b" not in sides:
            return None
        out[role] = sides
    return out


def form_of(con, planned: PlannedTest) -> str:
    """Which likelihood form a test runs: the WEAT form where its target sentences carry A's and
    B's words in an `attribute` slot, else the minimal pairs of its targets."""
    return WEAT_FORM if attribute_sides(con, planned) is not None else MINIMAL_PAIRS


def texts_of(con, planned: PlannedTest) -> list[str]:
    """The sentences the test's likelihood form scores: its minimal pairs', or (the WEAT form)
    its target sentences with an attribute of A or B."""
    sides = attribute_sides(con, planned)
    if sides is not None:
        return list(dict.fromkeys(t for r in ("x", "y") for t, side in zip(planned.sets[r]["stimulus"], sides[r])
                                  if side is not None))
    mp = pairs_of(planned)
    return list(dict.fromkeys(mp.pairs["x_stimulus"].to_list() + mp.pairs["y_stimulus"].to_list()))


def checked(con, plan: Plan) -> Plan:
    """The plan less the likelihood pairs whose minimal pairs are refused (no shared frame, a pair
    that does not differ), each a failure of the plan: refused before anything is scored, so
    the store is unchanged by them."""
    keep, refused = [], []
    for planned, enc in plan.pairs:
        if handles(planned, enc) and form_of(con, planned) == MINIMAL_PAIRS:
            try:
                pairs_of(planned)
            except StimkitError as e:
                refused.append(Failure(planned.name, getattr(enc, "base_spec", enc.spec), first_line(e), e))
                continue
        keep.append((planned, enc))
    if not refused:
        return plan
    return replace(plan, pairs=tuple(keep), refused=plan.refused + tuple(refused))


def encodings(con, plan: Plan) -> list[tuple[Encoder, list[str]]]:
    """Per scoring encoder, the texts the plan scores: its tests' (minimal pairs, or the WEAT
    form's sentences), and the sentences of their matched baselines' drawn words."""
    found: dict[str, tuple[Encoder, list[str]]] = {}
    for planned, enc in plan.pairs:
        if handles(planned, enc):
            found.setdefault(enc.fingerprint, (enc, []))[1].extend(texts_of(con, planned))
    for b in plan.baselines:
        if b.draws is not None and handles(b.planned, b.encoder):
            found.setdefault(b.encoder.fingerprint, (b.encoder, []))[1].extend(
                texts_of(con, b.planned) + b.draws.stimuli["stimulus"].to_list())
    return [(enc, list(dict.fromkeys(texts))) for enc, texts in found.values()]


def sentence_scores(con, enc: Encoder, texts: list[str], opts: Options | None = None) -> np.ndarray:
    """Each text's score from the token table under the options' variant (resolved per pair by
    Options.for_scoring: sum, or pll on a masked LM, unless --variant names another text variant).
    A text the variant gives no score (pll or aul on a causal LM) is one line, before any write."""
    from ..encoders import token_scores

    name = (opts.variant if opts is not None else None) or VARIANT
    got = token_scores.totals(con, enc.fingerprint, texts, name, opts.variant_folders if opts is not None else ())
    if len(got) and np.isnan(got).any():
        text = texts[int(np.flatnonzero(np.isnan(got))[0])]
        raise InputError(f"scoring variant {name!r} gives no score for {text!r} on {enc.spec!r} (its score kind is "
                         f"{getattr(enc, 'score_kind', '?')}: pll and aul read a masked LM's passes)")
    return got


def prepare(con, planned: PlannedTest, enc: Encoder) -> Scored:
    """The test's likelihood form: its minimal pairs and their sentences' scores, or the WEAT
    form's s(w, t) per target word and template line."""
    sides = attribute_sides(con, planned)
    if sides is not None:
        return prepare_weat(con, planned, enc, sides)
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
        found[role] = sentence_scores(con, enc, kept[role]["stimulus"].to_list(), planned.options)
    return Scored(frames, kept, found, mp)


def prepare_weat(con, planned: PlannedTest, enc: Encoder, sides: dict[str, list[str | None]]) -> Scored:
    """The WEAT form: per (target word, template line) cell of X and of Y, s = the mean log P of
    its sentences with A's attributes less the mean with B's (the prefix cancels: module
    docstring). A cell's first row stands for it (its context the template line); the others
    are read into it; a row whose attribute is neither A's nor B's is not read."""
    frames, kept, found, rows_of = {}, {}, {}, {}
    for role in ROLES:
        f = planned.sets[role].with_row_index("ordinal_in_set")
        if role not in sides:
            frames[role], kept[role] = f.with_columns(dropped=pl.lit("not read (its words fill the attribute slot)")), \
                f.head(0)
            continue
        side = pl.Series("_side", sides[role], dtype=pl.String)
        lp = np.full(f.height, np.nan)
        read = side.is_not_null().to_numpy()
        lp[read] = sentence_scores(con, enc, f.filter(pl.Series(read))["stimulus"].to_list(), planned.options)
        cells = (f.with_columns(side, pl.Series("_lp", lp)).filter(pl.col("_side").is_not_null())
                 .group_by("word", "template_id", maintain_order=True)
                 .agg(pl.col("ordinal_in_set").first().alias("_first"),
                      pl.col("ordinal_in_set").filter(pl.col("_side") == "a").alias("_a"),
                      pl.col("ordinal_in_set").filter(pl.col("_side") == "b").alias("_b"),
                      (pl.col("_lp").filter(pl.col("_side") == "a").mean()
                       - pl.col("_lp").filter(pl.col("_side") == "b").mean()).alias("_s"))
                 .filter(pl.col("_s").is_not_null()))
        if cells.height == 0:
            raise InputError(f"test {planned.name!r}: no target word of set {role.upper()} meets an attribute of A and "
                             "one of B in a template line")
        first = set(cells["_first"].to_list())
        reason = [None if i in first else "read into its word x template cell" if s_ is not None
                  else "its attribute is in neither A nor B" for i, s_ in enumerate(sides[role])]
        frames[role] = f.with_columns(dropped=pl.Series(reason, dtype=pl.String))
        kept[role] = f[cells["_first"].to_list()].with_columns(context_id=pl.col("template_id"))  # the crossed factor
        found[role] = cells["_s"].to_numpy().astype(np.float64)
        rows_of[role] = [(np.asarray(a, np.int64), np.asarray(b, np.int64)) for a, b in cells.select("_a", "_b").rows()]
    return Scored(frames, kept, found, None, cells=rows_of)


def drawn_scores(scored: Scored, role: str, lp: np.ndarray, index: np.ndarray) -> np.ndarray:
    """A matched baseline's scores of role's kept items in each draw ((items, K)), from the drawn
    sentences' log P (`lp`) and the draws' index (set row, draw) -> drawn sentence (run.baseline):
    a minimal pair's sentence read where its target's stood; a WEAT cell's s from the drawn word's
    sentences with A's and with B's attributes."""
    if scored.pairs is not None:
        return lp[index[scored.kept[role]["ordinal_in_set"].to_numpy()]]
    return np.stack([lp[index[a]].mean(axis=0) - lp[index[b]].mean(axis=0) for a, b in scored.cells[role]])


def pair_rows(result_id: str, scored: Scored, variant: str = VARIANT) -> pl.DataFrame:
    """result_pairs: each minimal pair with its two sentences' scores and their difference."""
    p = scored.pairs.pairs
    at = {r: {int(row): i for i, row in enumerate(scored.kept[r]["ordinal_in_set"].to_list())} for r in ("x", "y")}
    sx = np.array([scored.scores["x"][at["x"][int(r)]] for r in p["x_row"].to_list()], dtype=np.float64)
    sy = np.array([scored.scores["y"][at["y"][int(r)]] for r in p["y_row"].to_list()], dtype=np.float64)
    return p.select("frame", "x_word", "y_word", "x_stimulus", "y_stimulus", "exact").with_columns(
        pl.lit(result_id).alias("result_id"), pl.Series("pair", range(p.height), dtype=pl.Int32),
        pl.lit(variant).alias("variant"), pl.Series("x_score", sx), pl.Series("y_score", sy),
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
    identity = association.identity_of(result_id, run_id, planned, enc, kind)
    weat = scored.pairs is None
    variant = opts.variant or VARIANT
    of = (("s(w) = mean log P(a | w) over A - over B" if variant == VARIANT else
           f"s(w) = mean score of the sentences with A's attributes - with B's") if weat
          else f"{'log P' if variant in ('sum', 'pll') else variant + ' log P'}, minimal pairs {scored.pairs.matching}")
    units = "words as units" if opts.clustered else "sentences as units"
    return Result(
        identity=replace(identity, context=WEAT_FORM) if weat else identity,
        sets=sets if weat else replace(sets, pairs=pair_rows(result_id, scored, variant)),
        inference=association.inference_of(
            opts, statistic=out["statistic"], statistic_kind=f"{out['statistic_kind']} of {of} ({variant}, nats; {units})",
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
