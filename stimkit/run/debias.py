"""The checks of a debiased encoder: is the bias recoverable (Gonen & Goldberg 2019), and what
did debiasing cost (word similarity, neighbours)? Each figure on the base encoder and on the
debiased one, with its interval and chance level (stats.recover).

Word vectors (Hard Debias, INLP), protocol `gonen-goldberg` (the default, as Gonen & Goldberg
2019 and the functions of Double-Hard Debias's utils.py): the words are the 50,000 most
frequent, plain (under 20 characters, no digit or punctuation), lower-case and in none of the
dimension's lists; a word's original bias is cos(w, he) - cos(w, she) in the base space (the
dimension's direction pair; its first definitional pair if it names none). For INLP the words
it trained on are left out: a check never scores them.

    clustering          k-means (k = 2) of the N most biased words of each side (N = 500)
    classifier (RBF)    an RBF SVM (SVC, gamma 'auto') trained on 500 + 500 of the 2500 most biased
                        words of each side, tested on the other 4000
    classifier (linear) a linear SVM on the same split
    neighbours          r(original bias, share of male-biased words among the 100 nearest
                        neighbours), for the 2N words
    wordsim353, simlex999   Spearman rho of human ratings and cosines (the pairs gensim ships)

Protocol `projection` (stimkit's first, kept for comparison): words ranked by the projection
of the normalised vector on the definitional pairs' principal direction (the one Hard Debias
removes), isalpha lower-case words, a linear SVM on 1000 words drawn from the 5000, the
neighbours' mean original bias (INLP's training words left out here too).

Sentence encoders (SentenceDebias, INLP over sentences): the classifier over the counterfactual sentences (labelled
by the word of the pair, each word pair oriented by the base's direction over its sentences;
split by word pair, the map refitted on the training half), the word
similarity of the words encoded alone, and the neighbour overlap of template sentences
(the share of each sentence's 10 nearest neighbours kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import StimkitError
from ..errors import UsageError
from ..encoders import debias
from ..stats import recover

PROTOCOLS = ("gonen-goldberg", "projection")
SIMILARITY_SETS = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}


@dataclass(frozen=True)
class CheckRow:
    encoder: str          # the debiased encoder's spec
    check: str
    items: str            # what was checked, in words
    before: float         # on the base encoder
    before_low: float
    before_high: float
    after: float          # on the debiased encoder
    after_low: float
    after_high: float
    chance: float
    n: int
    interval: str         # how the intervals were made
    protocol: str = "gonen-goldberg"   # how the words were chosen and scored (PROTOCOLS; "" for the cost rows)


# Bounds on the checks' work (raise them with STIMKIT_MAX_DEBIAS_WORDS, STIMKIT_MAX_RESAMPLES): the
# neighbour check compares each of the 2N words with the whole candidate vocabulary, so N sets
# the memory (N = 10,000,000 filled 24 GB); each resample reruns k-means.
MAX_WORDS = 2_500
MAX_RESAMPLES = 10_000


def check_counts(n: int, resamples: int) -> None:
    """--n and --resamples within their bounds, or one line (a usage error: exit 2)."""
    from ..choices import limit

    for flag, value, low, name, default in (("--n", n, 2, "max_debias_words", MAX_WORDS),
                                            ("--resamples", resamples, 10, "max_resamples", MAX_RESAMPLES)):
        bound = limit(name, default)
        if not low <= value <= bound:
            raise UsageError(f"{flag} must be between {low} and {bound:,} (raise the bound with "
                             f"STIMKIT_{name.upper()}), not {value}")


def records(rows: list[CheckRow], run_id: str, enc, n: int, resamples: int) -> list[dict]:
    """The rows of `debias_checks` (db/025) for one debiased encoder's checks."""
    from ..store import as_record

    return [{**as_record(r), "run_id": run_id, "fingerprint": enc.fingerprint, "base": enc.base.spec, "n_words": n,
             "resamples": resamples} for r in rows]


def compare(con, plan, command: str, run_fields: dict | None = None) -> tuple[str, list]:
    """Every test on the base and on each debiased encoder (`plan`), in one run, stored as results
    of kind 'debias': exploratory, they join no family of the study's tests (`results --kind
    debias` reads them). All or nothing."""
    from .. import store
    from . import association

    if plan.refused:
        raise plan.refused[0].as_error()
    pending: list = []
    with store.transaction(con):
        run_id = store.start_run(con, command, plan.options.seed, **(run_fields or {}))
        for planned, enc in plan.pairs:
            association.run_one(con, run_id, planned, enc, planned.options, kind="debias", reference=plan.reference,
                                pending=pending)
        association.write(con, pending)
    return run_id, pending


def _row(enc, check: str, items: str, before: recover.Figure, after: recover.Figure,
         protocol: str = "gonen-goldberg") -> CheckRow:
    return CheckRow(enc.spec, check, items, before.value, before.low, before.high, after.value, after.low, after.high,
                    after.chance, after.n, after.method, protocol)


def similarity_pairs(name: str) -> list[tuple[str, str, float]]:
    """The word pairs and human ratings gensim ships (gensim/test/test_data), '#' lines skipped."""
    from gensim.test.utils import datapath

    path = Path(datapath(SIMILARITY_SETS[name]))
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        a, b, score = line.split("\t")[:3]
        out.append((a, b, float(score)))
    return out


def similarity(enc, base, name: str) -> CheckRow:
    """Spearman rho on the pairs both encoders can encode (a static vocabulary may lack a word)."""
    pairs = similarity_pairs(name)
    words = sorted({w for a, b, _ in pairs for w in (a, b)})
    found = [e.encode(words, [None] * len(words)).vectors for e in (base, enc)]
    ok = np.isfinite(found[0]).all(axis=1) & np.isfinite(found[1]).all(axis=1)
    at = {w: i for i, w in enumerate(words) if ok[i]}
    kept = [(at[a], at[b], s) for a, b, s in pairs if a in at and b in at]
    ia, ib, ratings = (np.array(c) for c in zip(*kept))
    figures = [recover.spearman(ratings, np.sum(recover.unit(v[ia]) * recover.unit(v[ib]), axis=1)) for v in found]
    return _row(enc, name, f"{len(kept)} of {len(pairs)} pairs (gensim's {SIMILARITY_SETS[name]})", *figures, "")


def checks(enc, n: int = 500, seed: int = 0, resamples: int = 200, vocab: int = 50000,
           protocol: str = "gonen-goldberg") -> list[CheckRow]:
    """Every check of a debiased encoder (`encoders.resolve("...,debias=...")`)."""
    check_counts(n, resamples)
    if isinstance(enc, debias.DebiasedWordEncoder):
        rows = (word_checks if protocol == "gonen-goldberg" else projection_checks)(enc, n, seed, resamples, vocab)
    elif isinstance(enc, debias.DebiasedEncoder):
        rows = sentence_checks(enc, seed)
    else:
        raise UsageError(f"encoder {enc.spec!r} is not debiased: name one with debias=<method> "
                           "(e.g. glove-6b-50d,debias=hard)")
    return rows + [similarity(enc, enc.base, name) for name in SIMILARITY_SETS]


def word_bias(enc) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(base matrix, debiased matrix, candidate rows, original bias of every row (0 off the candidates))."""
    base_wv, wv = enc.base.vectors, enc.vectors
    x0 = np.asarray(base_wv.matrix, dtype=np.float32)
    rows = debias.definitional_rows(enc.recipe.dimension, base_wv, enc.where)
    g = debias.oriented_direction(x0, rows)
    return x0, np.asarray(wv.matrix), rows, g


def gg_words(enc, vocab: int = 50000) -> tuple[np.ndarray, np.ndarray]:
    """(candidate rows, original bias of every row (0 off the candidates)): Gonen & Goldberg's
    vocabulary and bias, INLP's training words left out."""
    base_wv, dim = enc.base.vectors, enc.recipe.dimension
    a, b = debias.pair_rows(dim.bias_pair, dim, base_wv, enc.where)
    exclude = debias.listed_rows(dim, base_wv) | set(np.asarray(enc.fit.get("trained", []), dtype=int).tolist())
    candidates = debias.plain_rows(base_wv, vocab, exclude, lower=base_wv.lower)
    bias = np.zeros(len(base_wv.words))
    bias[candidates] = debias.cosine_bias(np.asarray(base_wv.matrix), candidates, a, b)
    return candidates, bias


def extremes(bias: np.ndarray, candidates: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The m most positive and the m most negative candidates (labels 1 and 0)."""
    order = candidates[np.argsort(bias[candidates], kind="stable")]
    m = min(m, len(order) // 2)
    return np.concatenate([order[::-1][:m], order[:m]]), np.concatenate([np.ones(m, int), np.zeros(m, int)]), m


def word_checks(enc, n: int, seed: int, resamples: int, vocab: int) -> list[CheckRow]:
    """Gonen & Goldberg's checks (the module's doc)."""
    x0, x1 = np.asarray(enc.base.vectors.matrix, dtype=np.float32), np.asarray(enc.vectors.matrix)
    candidates, bias = gg_words(enc, vocab)
    if len(candidates) < 40:
        raise StimkitError(f"encoder {enc.spec!r}: the checks need at least 40 plain lower-case words outside the "
                           f"dimension's lists among the {vocab} most frequent; the vocabulary has {len(candidates)}")
    left = " (INLP's training words left out)" if "trained" in enc.fit else ""
    a, b = enc.recipe.dimension.bias_pair
    by = f"by cos(w, {a}) - cos(w, {b}){left}"
    items, labels, m = extremes(bias, candidates, n)
    out = [_row(enc, "clustering", f"{m} most biased words of each side {by}",
                *(recover.cluster_accuracy(x[items], labels, seed, resamples) for x in (x0, x1)))]
    wide, wide_labels, mw = extremes(bias, candidates, 2500)
    train = min(500, mw // 5)
    for kernel in ("rbf", "linear"):
        name = "RBF SVM" if kernel == "rbf" else "linear SVM"
        out.append(_row(enc, f"classifier ({kernel})",
                        f"{name}: {mw} most biased words of each side {by}, {train} of each trained on",
                        *(recover.classifier_accuracy(x[wide], wide_labels, train, seed, kernel=kernel, balanced=True)
                          for x in (x0, x1))))
    k = min(100, len(candidates) - 1)
    out.append(_row(enc, "neighbours", f"{m} most biased words of each side, share of male-biased ({a}) among "
                    f"{k} neighbours in {len(candidates)}",
                    *(recover.neighbour_share_correlation(x, bias, items, candidates, k) for x in (x0, x1))))
    return out


def projection_checks(enc, n: int, seed: int, resamples: int, vocab: int) -> list[CheckRow]:
    """stimkit's first protocol (the module's doc), for comparison."""
    x0, x1, _, g = word_bias(enc)
    candidates = debias.candidate_rows(enc.base.vectors, enc.recipe.dimension, vocab)
    candidates = candidates[~np.isin(candidates, enc.fit.get("trained", []))]  # never a word INLP trained on
    if len(candidates) < 40:
        raise StimkitError(f"encoder {enc.spec!r}: the checks need at least 40 plain lower-case words outside the "
                           f"dimension's lists among the {vocab} most frequent; the vocabulary has {len(candidates)}")
    bias = np.zeros(len(x0))
    bias[candidates] = recover.unit(x0[candidates]) @ g
    left = " (INLP's training words left out)" if "trained" in enc.fit else ""
    by, p = f"by projection on the definitional pairs' principal direction{left}", "projection"
    items, labels, m = extremes(bias, candidates, n)
    out = [_row(enc, "clustering", f"{m} most biased words of each side {by}",
                *(recover.cluster_accuracy(x[items], labels, seed, resamples) for x in (x0, x1)), p)]
    wide, wide_labels, mw = extremes(bias, candidates, 2500)
    train = min(1000, mw)
    out.append(_row(enc, "classifier (linear)", f"linear SVM: {mw} most biased words of each side {by}, "
                    f"{train} trained on", *(recover.classifier_accuracy(x[wide], wide_labels, train, seed)
                                              for x in (x0, x1)), p))
    k = min(100, len(candidates) - 1)
    out.append(_row(enc, "neighbours", f"{m} most biased words of each side, mean original bias of {k} neighbours "
                    f"among {len(candidates)}",
                    *(recover.neighbour_correlation(x, bias, items, candidates, k) for x in (x0, x1)), p))
    return out


def sentence_checks(enc, seed: int) -> list[CheckRow]:
    from ..stimuli import counterfactual, wordlists

    a, b = enc.pair_vectors()
    word_pair = enc.word_pairs
    held = np.isin(word_pair, np.random.default_rng(seed).permutation(np.unique(word_pair))[::2])
    side = debias.pair_sides(a, b, word_pair)
    # Cross-fitted: the map the held-out sentences go through is fitted on the other word pairs
    # only, as a word check's words are none of the lists' (fitted on every pair, SentenceDebias
    # empties the held-out pairs' mean difference and the classifier scores below chance).
    fitted = enc.fit_map(a[~held], b[~held], word_pair[~held])

    def part(x, rows):
        return np.concatenate([x[0][rows], x[1][rows]]), np.concatenate([side[rows], 1 - side[rows]])

    after = [v @ fitted.T for v in (a, b)]
    figures = [recover.split_classifier_accuracy(*part(x, ~held), *part(x, held), seed) for x in ((a, b), after)]
    out = [_row(enc, "classifier", f"{len(enc.pairs)} counterfactual sentence pairs, split by word pair, "
                "the map fitted on the training half", *figures)]
    lists = wordlists.load_all()
    words = [w.text for name in sorted(lists) if lists[name].path.endswith("caliskan2017.toml")
             for w in lists[name].words]
    texts = counterfactual.sentences(words, enc.recipe.params.get("templates", counterfactual.DEFAULT_TEMPLATES))
    texts = [texts[i] for i in sorted(np.random.default_rng(seed).permutation(len(texts))[:1000])]
    base = enc.base.encode(texts, [None] * len(texts)).vectors
    overlap = recover.neighbour_overlap(base, enc.project(base), 10)
    same = recover.Figure(1.0, 1.0, 1.0, overlap.chance, overlap.n, "the base against itself")
    out.append(_row(enc, "neighbour overlap", f"{len(texts)} sentences of Caliskan et al.'s words, 10 neighbours",
                    same, overlap))
    return out
