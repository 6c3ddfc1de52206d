"""One WEFAT (Caliskan et al. 2017) on one encoder, from a planned WEFAT: read the vectors,
compute per-word associations and p-values and the regression on the property (the
statistics are in stats.wefat), and build its WefatResult with its words."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
import numpy as np
import polars as pl

from .. import __version__, store
from ..encoders import Encoder
from ..encoders.embeddings import load, stimuli_of
from ..errors import InputError
from ..seeding import rng_for
from ..stats import group_ids, sampler, unit_rows
from ..stats import wefat as wefat_stats
from ..stimuli import properties
from ..stimuli.sets import versions
from .options import WefatOptions
from .plan import PlannedWefat
from .rows import WefatItem, WefatResult

MIN_WORDS = 3  # a correlation over fewer words has no degrees of freedom to speak of


def _vectors(con, enc: Encoder, frames: list[pl.DataFrame]):
    matrix, notes = load(con, enc, stimuli_of(frames))
    out, start = [], 0
    for f in frames:
        out.append((matrix[start:start + f.height].astype(np.float64), notes[start:start + f.height]))
        start += f.height
    return out


def _attribute(frame: pl.DataFrame, matrix: np.ndarray, notes, role: str, name: str):
    ok = np.isfinite(matrix).all(axis=1)
    if not ok.any():
        raise InputError(f"WEFAT {name!r}: no stimulus of set {role.upper()} has a vector (first: {notes[0]})")
    words = frame["word"] if "word" in frame.columns else frame["stimulus"]
    return matrix[ok], np.array(words.to_list(), dtype=object)[ok]


def run_one(con, run_id: str, planned: PlannedWefat, enc: Encoder, opts: WefatOptions) -> WefatResult:
    """Compute one WEFAT and store it with its per-word rows (the caller owns the transaction)."""
    started = time.perf_counter()
    test, frames, values = planned.wefat, planned.frames, planned.values
    prop_version = properties.save(con, planned.table) if planned.table is not None else None
    (T, t_notes), (A, a_notes), (B, b_notes) = _vectors(con, enc, list(frames.values()))
    A, a_words = _attribute(frames["a"], A, a_notes, "a", test.name)
    B, b_words = _attribute(frames["b"], B, b_notes, "b", test.name)

    targets = frames["targets"].with_row_index("_row")
    if "word" not in targets.columns:
        targets = targets.with_columns(word=pl.col("stimulus"))
    has_vector = np.isfinite(T).all(axis=1)
    words = list(dict.fromkeys(targets["word"].to_list()))
    rows_of = {w: [] for w in words}
    for i, w in enumerate(targets["word"].to_list()):
        rows_of[w].append(i)
    items, kept = [], []  # kept: indices into items of the words that take part
    for ordinal, w in enumerate(words):
        rows = [i for i in rows_of[w] if has_vector[i]]
        first = targets.row(rows_of[w][0], named=True)
        item = {"ordinal": ordinal, "word": w, "set_version": first.get("set_version"), "rows": rows,
                "n_stimuli": len(rows), "template_ids": [targets["template_id"][i] for i in rows] if "template_id" in targets.columns else None,
                "association": None, "property": values.get(str(w).lower()), "word_p_value": None, "dropped": None}
        if not rows:
            item["dropped"] = f"oov: {t_notes[rows_of[w][0]]}"
        elif item["property"] is None:
            item["dropped"] = "no property"
        else:
            kept.append(ordinal)
        items.append(item)

    fraction = test.drop_least_typical if opts.drop_least_typical is None else opts.drop_least_typical
    if fraction and kept:
        # a word's point for the filter: the mean unit vector of its stimuli (one, in word context)
        centroids = np.stack([unit_rows(T[items[k]["rows"]]).mean(axis=0) for k in kept])
        for j in wefat_stats.least_typical(centroids, fraction):
            items[kept[j]]["dropped"] = "least typical"
        kept = [k for k in kept if items[k]["dropped"] is None]
    if len(kept) < MIN_WORDS:
        raise InputError(f"WEFAT {test.name!r}, encoder {enc.spec!r}: only {len(kept)} target word(s) with a vector "
                         f"and a property; at least {MIN_WORDS} are needed")

    stim_rows = [i for k in kept for i in items[k]["rows"]]
    word_of = np.array([j for j, k in enumerate(kept) for _ in items[k]["rows"]])
    v = wefat_stats.normalized_cosines(T[stim_rows], A, B, word_of, opts.ddof)
    s = wefat_stats.association_of(v, len(A))
    prop = np.array([items[k]["property"] for k in kept])
    one_per_word = len(set(a_words)) == len(a_words) and len(set(b_words)) == len(b_words)
    groups, n_groups_a = (None, 0) if one_per_word else group_ids(list(a_words), list(b_words))
    rngs = [rng_for(opts.seed, test.name, enc.fingerprint, "word-p", items[k]["word"]) for k in kept]
    pvals = wefat_stats.word_p_values(v, len(A), rngs, opts.method, opts.budget, groups, n_groups_a)
    for j, k in enumerate(kept):
        items[k].update(association=float(s[j]), word_p_value=pvals[j].p)

    summary = wefat_stats.regression(s, prop, opts.ci_level)
    r_ci = (None, None)
    if opts.bootstrap:
        r_ci = wefat_stats.bootstrap_r(s, prop, opts.bootstrap, rng_for(opts.seed, test.name, enc.fingerprint, "bootstrap"),
                                       opts.ci_level)
    context = "token" if enc.uses_span else test.context
    result_id = f"{run_id}/{test.name}/{context}/{enc.fingerprint}"
    res = WefatResult(
        result_id=result_id, run_id=run_id, name=test.name, source=test.source, encoder=enc.spec, model=enc.name,
        fingerprint=enc.fingerprint, context=context, targets_sql=test.sql("targets"), a_sql=test.sql("a"),
        b_sql=test.sql("b"), set_versions=versions(frames.values()), property=test.property,
        property_version=prop_version, n=len(kept), n_a=len(A), n_b=len(B),
        dropped_words=[str(it["word"]) for it in items if it["dropped"]],
        **summary, r_ci_low=r_ci[0], r_ci_high=r_ci[1], ci_level=opts.ci_level,
        bootstrap=opts.bootstrap or None, drop_least_typical=fraction or None,
        word_p_method=pvals[0].method, budget=opts.budget, seed=opts.seed,
        options=json.dumps({**asdict(opts), "sampler": sampler.NAME}), stimkit_version=__version__,
        seconds=time.perf_counter() - started,
        items=tuple(WefatItem(result_id, it["ordinal"], str(it["word"]), it["set_version"], it["n_stimuli"],
                              it["template_ids"], it["association"], it["property"], it["word_p_value"], it["dropped"])
                    for it in items),
    )
    store.insert(con, "wefat_results", [res])
    store.insert(con, "wefat_items", list(res.items))
    return res
