"""Is the bias still there? Gonen & Goldberg's (2019) checks, and what debiasing costs.

Pure functions over arrays; each gives its figure with an interval and the figure chance
would give, so "still recoverable" is read against chance, not against 1.

- cluster_accuracy: k-means (k = 2) of the most biased words; the share of words in the
  cluster of their own side (the better of the two labellings). Interval: percentile
  bootstrap over words (k-means run again on each resample). Chance: the same share when
  the clusters are independent of the sides, E[max(K, n - K)] / n for K ~ Binomial(n, 1/2)
  (with balanced sides: every labelling is as likely).
- classifier_accuracy: an SVM (RBF kernel, as Gonen & Goldberg; or linear) trained on some
  words, its accuracy on the others. Interval: Clopper-Pearson (the test words are independent
  trials given the classifier). Chance: the test part's most common class.
- neighbour_share_correlation: Pearson r between a word's original bias and the share of its
  k nearest neighbours whose original bias is positive (Gonen & Goldberg's bias-by-neighbours:
  male-biased neighbours among 100). Interval: Fisher's z. Chance: 0.
- neighbour_correlation: the same with the mean original bias of the neighbours (stimkit's
  first rule, the `projection` protocol).
- spearman: rho of word-similarity ratings and cosines, Fisher z with Bonett & Wright's
  (2000) variance (1 + rho^2 / 2) / (n - 3).
- neighbour_overlap: the mean share of each item's k nearest neighbours kept after a map.
  Interval: t over items. Chance: k / (n - 1), what k neighbours drawn at random would keep.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Figure:
    value: float
    low: float
    high: float
    chance: float
    n: int
    method: str   # how the interval was made


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n == 0, 1, n)


KMEANS_INITS = 10  # scikit-learn's default when Gonen & Goldberg ran KMeans(n_clusters=2) (before 1.4's 'auto')


def _kmeans_accuracy(x: np.ndarray, labels: np.ndarray, seed: int) -> float:
    from sklearn.cluster import KMeans

    found = KMeans(n_clusters=2, n_init=KMEANS_INITS, random_state=seed).fit_predict(x)
    agree = float(np.mean(found == labels))
    return max(agree, 1 - agree)


def chance_cluster_accuracy(n: int) -> float:
    """E[max(K, n - K)] / n, K ~ Binomial(n, 1/2)."""
    k = np.arange(n + 1)
    return float(np.sum(stats.binom.pmf(k, n, 0.5) * np.maximum(k, n - k)) / n)


def cluster_accuracy(x: np.ndarray, labels: np.ndarray, seed: int = 0, resamples: int = 200,
                     level: float = 0.95) -> Figure:
    x, labels = unit(x), np.asarray(labels)
    value = _kmeans_accuracy(x, labels, seed)
    rng = np.random.default_rng(seed)
    boot = [_kmeans_accuracy(x[i], labels[i], seed) for i in
            (rng.integers(0, len(x), len(x)) for _ in range(resamples))]
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(boot, [tail, 100 - tail])
    return Figure(value, float(low), float(high), chance_cluster_accuracy(len(x)), len(x),
                  f"percentile bootstrap over words ({resamples})")


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    r = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return float(r.low), float(r.high)


def svm(kernel: str, seed: int = 0):
    """rbf: scikit-learn's SVC with the parameters of Gonen & Goldberg's (and Double-Hard
    Debias's) train_and_predict, `svm.SVC(gamma='auto')` (gamma 1 / features, C 1); linear:
    LinearSVC (primal)."""
    from sklearn.svm import SVC, LinearSVC

    return SVC(kernel="rbf", gamma="auto") if kernel == "rbf" else LinearSVC(dual=False, random_state=seed)


def balanced_split(labels: np.ndarray, train: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(train rows, test rows): `train` rows of each class drawn at random (numpy seed), the rest
    tested, as Gonen & Goldberg shuffle each side and train on the first of each."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(labels)
    parts = [rng.permutation(np.flatnonzero(labels == c)) for c in np.unique(labels)[::-1]]
    return np.concatenate([p[:train] for p in parts]), np.concatenate([p[train:] for p in parts])


def classifier_accuracy(x: np.ndarray, labels: np.ndarray, train: int, seed: int = 0, level: float = 0.95,
                        kernel: str = "linear", balanced: bool = False) -> Figure:
    """An SVM trained on `train` words drawn at random (`balanced`: `train` of each class), tested on the rest."""
    x, labels = unit(x), np.asarray(labels)
    if balanced:
        tr, te = balanced_split(labels, train, seed)
    else:
        order = np.random.default_rng(seed).permutation(len(x))
        tr, te = order[:train], order[train:]
    clf = svm(kernel, seed).fit(x[tr], labels[tr])
    right = int(np.sum(clf.predict(x[te]) == labels[te]))
    low, high = clopper_pearson(right, len(te), level)
    _, counts = np.unique(labels[te], return_counts=True)
    return Figure(right / len(te), low, high, float(counts.max() / counts.sum()), len(te),
                  f"Clopper-Pearson over {len(te)} held-out items ({train} trained on)")


def split_classifier_accuracy(x_train, y_train, x_test, y_test, seed: int = 0, level: float = 0.95,
                              kernel: str = "linear") -> Figure:
    """An SVM trained on one part, its accuracy on the other (as classifier_accuracy, where the
    caller splits: sentences of a word pair stay on one side)."""
    y_test = np.asarray(y_test)
    clf = svm(kernel, seed).fit(unit(x_train), y_train)
    right, n = int(np.sum(clf.predict(unit(x_test)) == y_test)), len(y_test)
    low, high = clopper_pearson(right, n, level)
    _, counts = np.unique(y_test, return_counts=True)
    return Figure(right / n, low, high, float(counts.max() / counts.sum()), n,
                  f"Clopper-Pearson over {n} held-out items ({len(y_train)} trained on)")


def fisher_interval(r: float, n: int, level: float = 0.95, var: float | None = None) -> tuple[float, float]:
    z, q = np.arctanh(np.clip(r, -0.999999, 0.999999)), stats.norm.ppf(0.5 + level / 2)
    se = np.sqrt(var if var is not None else 1 / (n - 3))
    return float(np.tanh(z - q * se)), float(np.tanh(z + q * se))


def nearest(x: np.ndarray, items: np.ndarray, pool: np.ndarray, k: int) -> np.ndarray:
    """(len(items), k): the rows of `pool` nearest (cosine) to each item, the item itself left out."""
    items, pool = np.asarray(items), np.asarray(pool)
    sims = unit(x[items]) @ unit(x[pool]).T  # only the rows needed: x may be a whole vocabulary
    at = {r: j for j, r in enumerate(pool.tolist())}
    own = [(i, at[r]) for i, r in enumerate(items.tolist()) if r in at]
    if own:
        rows, cols = zip(*own)
        sims[list(rows), list(cols)] = -np.inf
    top = np.argpartition(-sims, k, axis=1)[:, :k]
    return pool[top]


def neighbour_correlation(x: np.ndarray, bias: np.ndarray, items: np.ndarray, pool: np.ndarray, k: int = 100,
                          level: float = 0.95) -> Figure:
    """`bias`: each row's original bias (indexed like x); items: the words checked; pool: where neighbours come from."""
    neighbours = nearest(x, items, pool, k)
    r = float(stats.pearsonr(bias[items], bias[neighbours].mean(axis=1))[0])
    low, high = fisher_interval(r, len(items), level)
    return Figure(r, low, high, 0.0, len(items), f"Fisher z over {len(items)} words ({k} neighbours each)")


def neighbour_share_correlation(x: np.ndarray, bias: np.ndarray, items: np.ndarray, pool: np.ndarray, k: int = 100,
                                level: float = 0.95) -> Figure:
    """Gonen & Goldberg's bias-by-neighbours: r(a word's original bias, the share of its k nearest
    neighbours in `pool` whose original bias is above 0). `bias` is indexed like x."""
    neighbours = nearest(x, items, pool, k)
    share = (bias[neighbours] > 0).mean(axis=1)
    r = float(stats.pearsonr(bias[items], share)[0])
    low, high = fisher_interval(r, len(items), level)
    return Figure(r, low, high, 0.0, len(items), f"Fisher z over {len(items)} words ({k} neighbours each)")


def spearman(ratings: np.ndarray, cosines: np.ndarray, level: float = 0.95) -> Figure:
    rho = float(stats.spearmanr(ratings, cosines)[0])
    n = len(ratings)
    low, high = fisher_interval(rho, n, level, var=(1 + rho ** 2 / 2) / (n - 3))
    return Figure(rho, low, high, 0.0, n, "Fisher z, Bonett & Wright variance")


def neighbour_overlap(before: np.ndarray, after: np.ndarray, k: int = 10, level: float = 0.95) -> Figure:
    """The mean over items of |N_k(before) & N_k(after)| / k, neighbours among the items themselves."""
    items = np.arange(len(before))
    nb, na = nearest(before, items, items, k), nearest(after, items, items, k)
    shares = np.array([len(set(a) & set(b)) / k for a, b in zip(nb, na)])
    mean, se = float(shares.mean()), float(shares.std(ddof=1) / np.sqrt(len(shares)))
    q = stats.t.ppf(0.5 + level / 2, len(shares) - 1)
    return Figure(mean, mean - q * se, min(1.0, mean + q * se), k / (len(items) - 1), len(items),
                  f"t over {len(items)} items")
