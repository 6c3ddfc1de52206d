"""WEFAT, the Word Embedding Factual Association Test (Caliskan et al. 2017, "Methods: WEFAT").

For target words W with a real property p_w and attribute sets A, B:

    s(w, A, B) = (mean_a cos(w, a) - mean_b cos(w, b)) / std_{x in A u B} cos(w, x)   (ddof = 1)

and the null hypothesis "no association between s(w) and p_w" is tested by regressing
p_w on s(w): Pearson r with its t-test p-value (as scipy.stats.pearsonr), Spearman rho,
slope and intercept with t-based CIs. A and B may differ in size.

Per-word p-value: over the partitions of A u B into sets of sizes |A| and |B|,
Pr[s(w, A_i, B_i) >= s(w, A, B)]. The std over A u B is the same for every partition,
so the statistic orders partitions as the sum over A_i of cos(w, x) / std does, and the
WEAT machinery (stats.permutation_p: exact or sampled) applies unchanged.

Sentence context (a word with several stimuli, e.g. one per template): s(w) is the mean
over the word's sentences t of s(t, A, B), each attribute sentence an element of A or B.
That mean is mean_{A} v - mean_{B} v with v_x = mean_t cos(t, x) / std_t, so the per-word
permutation runs over v; attribute words move whole, with all their sentences
(stats.clustered_p), as the sentences of one word are not independent.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

import numpy as np
import duckdb
import polars as pl
import pyarrow as pa

from .. import StimkitError, __version__, stats, store
from ..catalog import tests as catalog
from ..encoders import embeddings
from ..stimuli import properties
from . import runner
from ..stats import sampler
from ..encoders import Encoder
from ..paths import data_dir
from ..seeding import rng_for
from ..errors import InputError
from ..store import usersql

MIN_WORDS = 3  # a correlation over fewer words has no degrees of freedom to speak of


# --------------------------------------------------------------------------- statistics

def normalized_cosines(T: np.ndarray, A: np.ndarray, B: np.ndarray, word_of: np.ndarray | None = None,
                       ddof: int = 1) -> np.ndarray:
    """v[w, x] = mean over w's stimuli t of cos(t, x) / std_{A u B} cos(t, .), x over A then B.

    T: target stimulus vectors; word_of: the word index of each row of T (None: one row per word)."""
    C = stats.unit_rows(T) @ stats.unit_rows(np.concatenate([A, B])).T
    C = C / C.std(axis=1, ddof=ddof, keepdims=True)
    if word_of is None:
        return C
    n_words = int(word_of.max()) + 1
    sums = np.zeros((n_words, C.shape[1]))
    np.add.at(sums, word_of, C)
    return sums / np.bincount(word_of, minlength=n_words)[:, None]


def association_of(v: np.ndarray, n_a: int) -> np.ndarray:
    """s(w, A, B) from normalized cosines (A's columns first)."""
    return v[:, :n_a].mean(axis=1) - v[:, n_a:].mean(axis=1)


def association(W: np.ndarray, A: np.ndarray, B: np.ndarray, ddof: int = 1) -> np.ndarray:
    """s(w, A, B) for every row w of W."""
    return association_of(normalized_cosines(W, A, B, ddof=ddof), len(A))


def word_p_values(v: np.ndarray, n_a: int, rngs: list[np.random.Generator], method: str = "auto",
                  budget: int = stats.DEFAULT_BUDGET, attr_groups: np.ndarray | None = None,
                  n_groups_a: int = 0) -> list[stats.PValue]:
    """Per word: Pr[s(w, A_i, B_i) >= s(w, A, B)] over partitions of A u B (|A_i| = |A|).

    attr_groups: an attribute-word id per column of v (A's words 0..n_groups_a-1): whole
    words move between A_i and B_i."""
    if attr_groups is None:
        return [stats.permutation_p(row, n_a, "greater", method, budget, rng) for row, rng in zip(v, rngs)]
    return [stats.clustered_p(row, attr_groups, n_groups_a, "greater", budget, rng) for row, rng in zip(v, rngs)]


def regression(s: np.ndarray, prop: np.ndarray, level: float = 0.95) -> dict:
    """Pearson r (two-sided p as scipy.stats.pearsonr), Spearman rho, and the least-squares
    line prop = intercept + slope * s with t-based CIs at `level`."""
    from scipy import stats as sps  # here: scipy.stats takes half a second to import
    n = len(s)
    pr, sr, lr = sps.pearsonr(s, prop), sps.spearmanr(s, prop), sps.linregress(s, prop)
    t = sps.t.ppf((1 + level) / 2, n - 2)
    return {
        "r": float(pr.statistic), "p_value": float(pr.pvalue),
        "rho": float(sr.statistic), "rho_p_value": float(sr.pvalue),
        "slope": float(lr.slope), "slope_ci_low": float(lr.slope - t * lr.stderr), "slope_ci_high": float(lr.slope + t * lr.stderr),
        "intercept": float(lr.intercept), "intercept_ci_low": float(lr.intercept - t * lr.intercept_stderr),
        "intercept_ci_high": float(lr.intercept + t * lr.intercept_stderr),
    }


def bootstrap_r(s: np.ndarray, prop: np.ndarray, reps: int, rng: np.random.Generator,
                level: float = 0.95) -> tuple[float, float]:
    """Percentile CI of Pearson r, resampling (s, p) pairs with replacement."""
    idx = rng.integers(len(s), size=(reps, len(s)))
    x, y = s[idx], prop[idx]
    x, y = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # a resample of one repeated pair has no r
        r = (x * y).sum(axis=1) / np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    lo, hi = np.nanquantile(r, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def least_typical(W: np.ndarray, fraction: float) -> np.ndarray:
    """Indices of the round(fraction * n) rows farthest from the targets' centroid (the
    paper's name-likeness filter). Distance is cosine distance to the mean unit vector,
    the geometry s(w) is measured in; ties keep the earlier row."""
    if not 0 <= fraction < 1:
        raise StimkitError(f"--drop-least-typical must be in [0, 1), got {fraction}")
    k = int(np.floor(fraction * len(W) + 0.5))
    if k == 0:
        return np.array([], dtype=int)
    U = stats.unit_rows(W)
    distance = 1 - U @ stats.unit_rows(U.mean(axis=0, keepdims=True))[0]
    return np.sort(np.argsort(-distance, kind="stable")[:k])


# --------------------------------------------------------------------------- definitions

@dataclass(frozen=True)
class WefatDef:
    """A WEFAT: targets, attributes A and B (set names, bare word-list names, or SQL) and a
    property (a property table's name or path, or SQL returning `word` and `value`)."""
    name: str
    targets: str
    a: str
    b: str
    property: str
    context: str = "word"            # word | sentence: the template set bare list names go through
    templates: str = "may2019"       # the sentence context's template set
    drop_least_typical: float = 0.0
    source: str = "catalog"

    def ref(self, role: str) -> str:
        ref = {"targets": self.targets, "a": self.a, "b": self.b}[role]
        if catalog.is_sql(ref) or "@" in ref:
            return ref
        return f"{ref}@{'word' if self.context == 'word' else self.templates}"

    def sql(self, role: str) -> str:
        return catalog.set_sql(self.ref(role))


def load_catalog(path=None) -> dict[str, WefatDef]:
    path = path or data_dir("queries") / "wefat.toml"
    raw = catalog.read_toml(path)
    known = {"targets", "a", "b", "property", "context", "templates", "drop_least_typical", "description"}
    found = {}
    for name, body in raw.items():
        missing = {"targets", "a", "b", "property"} - set(body)
        if missing or set(body) - known:
            raise StimkitError(f"{path}: entry {name!r}: needs targets, a, b, property "
                               f"(unknown keys: {', '.join(sorted(set(body) - known)) or 'none'})")
        found[name] = WefatDef(name, body["targets"], body["a"], body["b"], body["property"],
                               body.get("context", "word"), body.get("templates", "may2019"),
                               float(body.get("drop_least_typical", 0.0)))
    return found


def get(name: str) -> WefatDef:
    entries = load_catalog()
    if name not in entries:
        raise StimkitError(f"unknown WEFAT {name!r} (known: {', '.join(entries)})")
    return entries[name]


def define(name: str | None = None, targets: str | None = None, a: str | None = None, b: str | None = None,
           prop: str | None = None, label: str = "adhoc", context: str | None = None,
           templates: str = "may2019") -> WefatDef:
    """A catalog WEFAT by name, or an ad-hoc one from all four of targets, a, b and a property;
    `context` (word | sentence) overrides the definition's, sentences through `templates`."""
    import dataclasses

    adhoc = [targets, a, b, prop]
    if name:
        if any(adhoc):
            raise StimkitError("give a catalog name or --targets --a --b --property, not both")
        test = get(name)
    elif all(adhoc):
        test = WefatDef(label, targets, a, b, prop, source="adhoc")
    else:
        raise StimkitError("name a WEFAT (wefat-occupations, wefat-names) or give all of --targets --a --b --property")
    if context is not None:
        if context not in ("word", "sentence"):
            raise StimkitError(f"unknown context {context!r} (known: word, sentence)")
        test = dataclasses.replace(test, context=context, templates=templates)
    return test


def stored(con, where: str | None = None, words: bool = False) -> pl.DataFrame:
    """Stored results (default: the latest WEFAT run), or their per-word rows."""
    cond = where or "run_id = (SELECT run_id FROM wefat_results ORDER BY created_at DESC LIMIT 1)"
    sql = f"SELECT * FROM wefat_results WHERE {cond} ORDER BY created_at, name, encoder"
    if words:
        sql = (f"SELECT r.name, r.encoder, r.context, i.* EXCLUDE (result_id) FROM wefat_items i "
               f"JOIN ({sql}) r USING (result_id) ORDER BY r.created_at, r.name, r.encoder, i.ordinal")
    usersql.check_select(sql, f"--where {where!r}")
    try:
        return store.frame(con, sql)
    except duckdb.Error as e:  # a bad --where
        raise InputError(f"query failed: {usersql.first_line(e)} -- in: {sql}") from None


# --------------------------------------------------------------------------- running

@dataclass(frozen=True)
class Options:
    method: str = "auto"              # per-word p: auto | exact | sampled
    budget: int = stats.DEFAULT_BUDGET
    seed: int = 0
    bootstrap: int = 0                # replicates for a CI of r; 0 = none
    ci_level: float = 0.95
    ddof: int = 1
    drop_least_typical: float | None = None   # None: the definition's own

    def validate(self):
        if self.method not in ("auto", "exact", "sampled"):
            raise StimkitError(f"unknown per-word p-value method {self.method!r} (known: auto, exact, sampled)")
        if self.budget < 2:
            raise StimkitError("the sample budget must be at least 2")
        if self.drop_least_typical is not None and not 0 <= self.drop_least_typical < 1:
            raise StimkitError(f"--drop-least-typical must be in [0, 1), got {self.drop_least_typical}")
        if not 0 < self.ci_level < 1:
            raise StimkitError(f"the CI level must be in (0, 1), got {self.ci_level}")


def refuse_early(con, test: WefatDef) -> None:
    """Refuse, before anything is encoded, a WEFAT whose sets select nothing or whose
    property cannot be read (a bad file, a failing query)."""
    frames_of(con, test)
    _property(con, test.property, save=False)


def _property(con, ref: str, save: bool = True) -> tuple[dict[str, float], str | None]:
    """(lower-cased word -> value, stored version or None for SQL)."""
    if catalog.is_sql(ref):
        try:
            df = store.frame(con, ref.strip().rstrip(";"))
        except duckdb.Error as e:
            raise InputError(f"property: query failed: {usersql.first_line(e)} -- in: {ref}") from None
        if not {"word", "value"} <= set(df.columns):
            raise StimkitError(f"property: query must return `word` and `value` columns -- in: {ref}")
        return {str(w).lower(): float(v) for w, v in zip(df["word"], df["value"]) if v is not None}, None
    table = properties.load(ref)
    return table.values, properties.save(con, table) if save else None


ROLES = ("targets", "a", "b")


def frames_of(con, test: WefatDef) -> list[pl.DataFrame]:
    """The stimuli of the targets, A and B."""
    return [catalog.fetch(con, test.sql(role), f"WEFAT {test.name!r} {role}") for role in ROLES]


def _vectors(con, enc: Encoder, frames: list[pl.DataFrame], encode: bool):
    every = embeddings.stimuli_of(frames)
    if encode:
        embeddings.encode_missing(con, enc, every)
    matrix, notes = embeddings.load(con, enc, every)
    out, start = [], 0
    for f in frames:
        out.append((matrix[start:start + f.height].astype(np.float64), notes[start:start + f.height]))
        start += f.height
    return out


def _attribute(frame: pl.DataFrame, matrix: np.ndarray, notes, role: str, name: str):
    ok = np.isfinite(matrix).all(axis=1)
    if not ok.any():
        raise StimkitError(f"WEFAT {name!r}: no stimulus of set {role.upper()} has a vector (first: {notes[0]})")
    words = frame["word"] if "word" in frame.columns else frame["stimulus"]
    return matrix[ok], np.array(words.to_list(), dtype=object)[ok]


def run_wefat(con, test: WefatDef, enc: Encoder, opts: Options = Options(), run_id: str | None = None,
              encode: bool = True) -> dict:
    """Select the sets, encode what is missing, compute, and store one WEFAT result with its
    per-word rows (one transaction). Returns the stored row plus `items` (a list of dicts)."""
    opts.validate()
    started = time.perf_counter()
    frames = dict(zip(ROLES, frames_of(con, test)))
    values, prop_version = _property(con, test.property)
    (T, t_notes), (A, a_notes), (B, b_notes) = _vectors(con, enc, list(frames.values()), encode)
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
        centroids = np.stack([stats.unit_rows(T[items[k]["rows"]]).mean(axis=0) for k in kept])
        for j in least_typical(centroids, fraction):
            items[kept[j]]["dropped"] = "least typical"
        kept = [k for k in kept if items[k]["dropped"] is None]
    if len(kept) < MIN_WORDS:
        raise StimkitError(f"WEFAT {test.name!r}, encoder {enc.spec!r}: only {len(kept)} target word(s) with a vector "
                           f"and a property; at least {MIN_WORDS} are needed")

    stim_rows = [i for k in kept for i in items[k]["rows"]]
    word_of = np.array([j for j, k in enumerate(kept) for _ in items[k]["rows"]])
    v = normalized_cosines(T[stim_rows], A, B, word_of, opts.ddof)
    s = association_of(v, len(A))
    prop = np.array([items[k]["property"] for k in kept])
    one_per_word = len(set(a_words)) == len(a_words) and len(set(b_words)) == len(b_words)
    groups, n_groups_a = (None, 0) if one_per_word else _word_ids(a_words, b_words)
    rngs = [rng_for(opts.seed, test.name, enc.fingerprint, "word-p", items[k]["word"]) for k in kept]
    pvals = word_p_values(v, len(A), rngs, opts.method, opts.budget, groups, n_groups_a)
    for j, k in enumerate(kept):
        items[k].update(association=float(s[j]), word_p_value=pvals[j].p)

    summary = regression(s, prop, opts.ci_level)
    r_ci = (None, None)
    if opts.bootstrap:
        r_ci = bootstrap_r(s, prop, opts.bootstrap, rng_for(opts.seed, test.name, enc.fingerprint, "bootstrap"), opts.ci_level)
    versions = sorted({v for f in frames.values() if "set_version" in f.columns for v in f["set_version"].unique().to_list()})
    context = "token" if enc.uses_span else test.context
    with store.transaction(con):
        run_id = run_id or runner.start_run(con, f"wefat {test.name}", opts.seed)
        row = {
            "result_id": f"{run_id}/{test.name}/{context}/{enc.fingerprint}", "run_id": run_id, "name": test.name,
            "source": test.source, "encoder": enc.spec, "model": enc.name, "fingerprint": enc.fingerprint, "context": context,
            "targets_sql": test.sql("targets"), "a_sql": test.sql("a"), "b_sql": test.sql("b"), "set_versions": versions,
            "property": test.property, "property_version": prop_version,
            "n": len(kept), "n_a": len(A), "n_b": len(B),
            "dropped_words": [str(it["word"]) for it in items if it["dropped"]],
            **summary, "r_ci_low": r_ci[0], "r_ci_high": r_ci[1], "ci_level": opts.ci_level,
            "bootstrap": opts.bootstrap or None, "drop_least_typical": fraction or None,
            "word_p_method": pvals[0].method, "budget": opts.budget, "seed": opts.seed,
            "options": json.dumps({**asdict(opts), "sampler": sampler.NAME}), "stimkit_version": __version__,
            "seconds": time.perf_counter() - started,
        }
        _write(con, row, items)
    return {**row, "items": [{k: v for k, v in it.items() if k != "rows"} for it in items]}


def _word_ids(a_words, b_words) -> tuple[np.ndarray, int]:
    a_ids = {w: i for i, w in enumerate(dict.fromkeys(a_words))}
    b_ids = {w: len(a_ids) + i for i, w in enumerate(dict.fromkeys(b_words))}
    return np.array([a_ids[w] for w in a_words] + [b_ids[w] for w in b_words]), len(a_ids)


def _write(con, row: dict, items: list[dict]) -> None:
    cols = list(row)
    con.execute(f"INSERT INTO wefat_results ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", [row[c] for c in cols])
    table = pa.table({
        "result_id": [row["result_id"]] * len(items),
        "ordinal": pa.array([it["ordinal"] for it in items], pa.int32()),
        "word": [str(it["word"]) for it in items],
        "set_version": pa.array([it["set_version"] for it in items], pa.string()),
        "n_stimuli": pa.array([it["n_stimuli"] for it in items], pa.int32()),
        "template_ids": pa.array([it["template_ids"] for it in items], pa.list_(pa.string())),
        "association": pa.array([it["association"] for it in items], pa.float64()),
        "property": pa.array([it["property"] for it in items], pa.float64()),
        "word_p_value": pa.array([it["word_p_value"] for it in items], pa.float64()),
        "dropped": pa.array([it["dropped"] for it in items], pa.string()),
    })
    con.register("_wefat_items", table)
    try:
        con.execute("INSERT INTO wefat_items SELECT * FROM _wefat_items")
    finally:
        con.unregister("_wefat_items")


def run_catalog(con, encs: list[Encoder], opts: Options = Options(), run_id: str | None = None) -> list[dict]:
    """Every catalog WEFAT for every encoder, in one transaction."""
    with store.transaction(con):
        return [run_wefat(con, test, enc, opts, run_id) for enc in encs for test in load_catalog().values()]
