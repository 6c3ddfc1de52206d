"""Debiased encoders: a base encoder's vectors through a map derived from word lists.

    glove-6b-50d,debias=hard                 Hard Debias (Bolukbasi et al. 2016), gender lists
    glove-6b-50d,debias=inlp                 INLP (Ravfogel et al. 2020)
    minilm,debias=sentencedebias:gender      SentenceDebias (Liang et al. 2020)
    glove-6b-50d,debias=hsr                  Half-Sibling Regression (Yang & Feng 2020)
    glove-6b-50d,debias=hard:wordlists/religion.toml   a dimension of one's own

`debias=<method>[:<dimension>]`; the dimension is a TOML file in wordlists/debias/ (by name,
default `gender`: Bolukbasi et al.'s published lists) or a path. It names its lists:
`definitional` pairs (they define the direction), `equalize` pairs (Hard Debias),
`specific` words (left out of neutralizing). Options (all change the vectors, so all enter
the fingerprint with the lists' versions and the method's):

    debias_variant=V      Hard Debias: debiaswe (default: equalize reads the neutralised vectors, as
                          Bolukbasi et al.'s code) or wefe (WEFE 1.0.1: equalize reads the original
                          vectors; a definitional pair the vocabulary lacks as written is dropped)
    debias_recipe=R       INLP: the recipe the options below start from (default `scaled`):
                          ravfogel  Ravfogel et al. 2020 as published: 7500 words a class from the
                                    150,000 most frequent, the direction pair (he - she), 35 classifiers
                          scaled    the same, with Ravfogel's 35 classifiers per 300 dimensions scaled
                                    to the base's (6 on GloVe 50d: 35 would leave 5 of its 50 dimensions)
                          stopping  stimkit's first recipe: 2500 a class from 50,000, the definitional
                                    pairs' principal direction, stop within 0.05 of chance (at most 35)
    debias_iterations=N   INLP: remove N classifiers (a fixed count)
    debias_tol=T          INLP: stop early, at the first classifier whose held-out accuracy is
                          within T of chance (the `stopping` recipe's 0.05; the others: no early stop)
    debias_words=N        INLP: words of each class
    debias_vocab=N        INLP: the N most frequent words it draws them from
    debias_direction=D    INLP: pair (the dimension's direction pair: he - she) or pca
    debias_alpha=A        Half-Sibling Regression: the ridge constant (default 60, WEFE's)
    debias_components=K   SentenceDebias: the subspace's dimension (default 1, as Liang et al.)
    debias_templates=SET  SentenceDebias: the template set of the counterfactual pairs (may2019_fixed)

Hard Debias and INLP map a static vocabulary (every stored word vector of glove-6b-50d or a
`vectors:` file) once, and the encoder then reads the mapped vocabulary exactly as the base
does (CBoW for sentences). SentenceDebias projects whatever vectors the base gives, so it
takes any encoder that can encode its counterfactual sentences. Hard Debias is a projection
for every word but the equalized pairs (and renormalizes); INLP and SentenceDebias are one
projection matrix.

Everything a list can get wrong is refused when the encoder is built, in one line, before
anything is written: a definitional word the vocabulary lacks, a dimension of one pair, an
INLP that does not converge, a method the base cannot take.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import StimkitError
from ..paths import data_dir
from .base import Encoded, Encoder
from .wordvectors import WordVectorEncoder, WordVectors

METHODS = ("hard", "inlp", "hsr", "sentencedebias")
STATIC_ONLY = ("hard", "inlp", "hsr")  # inlp: over a static vocabulary, else over counterfactual sentences
OPTION_KEYS = ("debias", "debias_iterations", "debias_tol", "debias_words", "debias_vocab", "debias_components",
               "debias_templates", "debias_alpha", "debias_recipe", "debias_direction", "debias_variant")
# 2: the specific list matched as published (no case-folding), equalize from the neutralised
# vectors (debiaswe), INLP's recipes (Ravfogel et al.'s data, a fixed number of classifiers)
VERSION = "stimkit-debias/2"  # bump when a method's arithmetic changes in a way its inputs do not show
# INLP's recipes: where each option starts from (an option given in the spec overrides it).
# iterations 0: Ravfogel et al.'s 35 classifiers per 300 dimensions, scaled to the base's; tol 0: no early stop.
INLP_RECIPES = {
    "ravfogel": {"iterations": 35, "tol": 0.0, "words": 7500, "vocab": 150000, "direction": "pair"},
    "scaled": {"iterations": 0, "tol": 0.0, "words": 7500, "vocab": 150000, "direction": "pair"},
    "stopping": {"iterations": 35, "tol": 0.05, "words": 2500, "vocab": 50000, "direction": "pca"},
}
DEFAULTS = {"inlp": {"recipe": "scaled", **INLP_RECIPES["scaled"]},
            "sentencedebias": {"components": 1, "templates": "may2019_fixed"},
            "hard": {"variant": "debiaswe"}, "hsr": {"alpha": 60.0}}
CHOICES = {"recipe": tuple(INLP_RECIPES), "direction": ("pair", "pca"), "variant": ("debiaswe", "wefe")}
NEUTRAL_COS = 0.03  # Ravfogel et al.'s neutral words: |cos(w, direction)| below this

Pair = tuple[str, str]
_FITS: dict[str, dict] = {}  # what a map's fit found (direction, accuracies), by the encoder's fingerprint


# ------------------------------------------------------------------ the lists

@dataclass(frozen=True)
class Dimension:
    """A bias dimension: the word lists that define it, with where they came from."""
    name: str
    path: str
    description: str
    source: str
    definitional: tuple[Pair, ...]
    equalize: tuple[Pair, ...]
    specific: tuple[str, ...]
    direction: Pair | None = None   # the pair whose cosine difference ranks words (gender: he, she)

    @property
    def bias_pair(self) -> Pair:
        """The pair (a, b) of a word's bias cos(w, a) - cos(w, b): the `direction` pair, else the
        first definitional pair."""
        return self.direction or self.definitional[0]

    def versions(self) -> dict[str, str]:
        """Each list's version: a hash of its words as written (in order)."""
        keys = ("definitional", "equalize", "specific") + (("direction",) if self.direction else ())
        return {k: hashlib.sha256(json.dumps(getattr(self, k)).encode()).hexdigest()[:16] for k in keys}


def dimension_dirs() -> list[Path]:
    """Where a dimension named without a path is found: the word-list folder in use (a user's
    STIMKIT_WORDLISTS_DIR), then stimkit's own, so `gender` is always there."""
    from .. import paths

    bundled = paths._PACKAGE / "_data" / "wordlists" / "debias"
    own = bundled if bundled.is_dir() else paths._PACKAGE.parent / "wordlists" / "debias"
    return list(dict.fromkeys([data_dir("wordlists") / "debias", own]))


def dimension_path(name: str) -> Path:
    if name.endswith(".toml") or "/" in name:
        path = Path(name).expanduser()
    else:
        path = next((d / f"{name}.toml" for d in dimension_dirs() if (d / f"{name}.toml").is_file()),
                    dimension_dirs()[0] / f"{name}.toml")
    if not path.is_file():
        known = sorted({p.stem for d in dimension_dirs() for p in d.glob("*.toml")})
        raise StimkitError(f"debias dimension {name!r}: no file {path} (built in: {', '.join(known)}; "
                           "or give a path to a TOML file with definitional, equalize and specific lists)")
    return path


def load_dimension(name: str = "gender") -> Dimension:
    path = dimension_path(name)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise StimkitError(f"{path}: not valid TOML: {e}") from None
    unknown = set(raw) - {"description", "source", "licence", "definitional", "equalize", "specific", "direction"}
    if unknown:
        raise StimkitError(f"{path}: unknown key {sorted(unknown)[0]!r} (allowed: description, source, licence, "
                           "definitional, equalize, specific, direction)")
    if "definitional" not in raw:
        raise StimkitError(f"{path}: no `definitional` pairs (they define the direction)")
    definitional = _pairs(_list(raw["definitional"], path, "definitional"), path, "definitional")
    if len(definitional) < 2:
        raise StimkitError(f"{path}: `definitional` has {len(definitional)} pair; a direction needs at least 2 pairs "
                           "(one pair's difference is the direction itself, with nothing to separate it from noise)")
    equalize = _pairs(_list(raw["equalize"], path, "equalize"), path, "equalize") if "equalize" in raw else definitional
    specific = _list(raw.get("specific", []), path, "specific")
    if not all(isinstance(w, str) and w.strip() for w in specific):
        raise StimkitError(f"{path}: `specific` must be a list of words")
    direction = _pairs([raw["direction"]], path, "direction")[0] if "direction" in raw else None
    return Dimension(path.stem, str(path), raw.get("description", ""), raw.get("source", ""), definitional, equalize,
                     tuple(specific), direction)


def _list(value, path: Path, key: str) -> list:
    """A list written in the TOML, or the name of a JSON file beside it that holds one."""
    if isinstance(value, str):
        file = (path.parent / value)
        try:
            value = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise StimkitError(f"{path}: `{key}` = {file}: cannot read a JSON list ({type(e).__name__}: {e})") from None
    if not isinstance(value, list):
        raise StimkitError(f"{path}: `{key}` must be a list (or the name of a JSON file holding one)")
    return value


def _pairs(items: list, path: Path, key: str) -> tuple[Pair, ...]:
    for i, p in enumerate(items, start=1):
        if not (isinstance(p, list) and len(p) == 2 and all(isinstance(w, str) and w.strip() for w in p)):
            raise StimkitError(f"{path}: `{key}` item {i} must be a pair of two words, not {p!r}")
    check_pairs(items, path, key)
    return tuple((a, b) for a, b in items)


def check_pairs(items: list, path: Path, key: str) -> None:
    """A pair of one word twice has no difference (it would remove an arbitrary direction: with
    GloVe, the first coordinate), and a pair given twice (in either order) weighs twice: each is
    refused, naming it. Words are compared as written: Bolukbasi et al.'s lists pair a word's
    cased forms on purpose (a vocabulary may hold both)."""
    seen: dict[frozenset, int] = {}
    for i, (a, b) in enumerate(items, start=1):
        if a.strip() == b.strip():
            raise StimkitError(f"{path}: `{key}` item {i} {[a, b]!r} pairs a word with itself: a pair needs two words")
        both = frozenset((a.strip(), b.strip()))
        if both in seen:
            raise StimkitError(f"{path}: `{key}` item {i} {[a, b]!r} repeats item {seen[both]}: give each pair once")
        seen[both] = i


# ------------------------------------------------------------------ words in a vocabulary

def lookup(word: str, wv: WordVectors) -> int | None:
    """The row of a pair's word: as written, else lower-cased in a lower-case vocabulary (GloVe 6B:
    "Mary" is "mary"). Pairs only: a specific word is matched as written (specific_rows)."""
    row = wv.index.get(word)
    if row is None and wv.lower:
        row = wv.index.get(word.lower())
    return row


def definitional_rows(dim: Dimension, wv: WordVectors, where: str, fold: bool = True) -> np.ndarray:
    """(pairs, 2) rows; a word the vocabulary lacks is an error naming it (the direction would
    silently rest on fewer pairs than the list says). `fold=False` is WEFE's reading: each word
    as written, a pair the vocabulary lacks dropped (on GloVe 6B, Mary/John)."""
    rows = []
    for i, pair in enumerate(dim.definitional, start=1):
        found = [lookup(w, wv) if fold else wv.index.get(w) for w in pair]
        if not fold:
            if None not in found:
                rows.append(found)
            continue
        for w, r in zip(pair, found):
            if r is None:
                raise StimkitError(f"encoder {where!r}: {dim.path}: definitional pair {i} {list(pair)}: "
                                   f"the vocabulary has no word {w!r}")
        rows.append(found)
    if len(rows) < 2:
        raise StimkitError(f"encoder {where!r}: {dim.path}: {len(rows)} definitional pair(s) in the vocabulary as "
                           "written; a direction needs at least 2")
    return np.array(rows, dtype=np.int64)


def pair_rows(pair: Pair, dim: Dimension, wv: WordVectors, where: str) -> tuple[int, int]:
    found = [lookup(w, wv) for w in pair]
    for w, r in zip(pair, found):
        if r is None:
            raise StimkitError(f"encoder {where!r}: {dim.path}: direction pair {list(pair)}: "
                               f"the vocabulary has no word {w!r}")
    return found[0], found[1]


def equalize_rows(dim: Dimension, wv: WordVectors) -> np.ndarray:
    """Pairs to equalize, as Bolukbasi et al.'s code finds them: each pair in lower case, title
    case and upper case, kept where the vocabulary has both words; duplicates once."""
    seen, rows = set(), []
    for a, b in dim.equalize:
        for fa, fb in ((a.lower(), b.lower()), (a.title(), b.title()), (a.upper(), b.upper())):
            ra, rb = wv.index.get(fa), wv.index.get(fb)
            if ra is not None and rb is not None and (ra, rb) not in seen:
                seen.add((ra, rb))
                rows.append((ra, rb))
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


def specific_rows(dim: Dimension, wv: WordVectors) -> np.ndarray:
    """The specific words the vocabulary has as written, as debiaswe and WEFE match them: no
    case-folding ("NeW" in Bolukbasi's list is not GloVe's "new"; 131 GloVe words would otherwise
    skip neutralizing)."""
    return np.array(sorted({r for w in dim.specific if (r := wv.index.get(w)) is not None}), dtype=np.int64)


# ------------------------------------------------------------------ the maps (pure)

def normalize(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.where(norms == 0, 1, norms)


def pair_subspace(a: np.ndarray, b: np.ndarray, components: int = 1) -> np.ndarray:
    """(components, dim): the principal directions of the normalised pair vectors minus their
    pair's mean (Bolukbasi et al. 2016 for words; Liang et al. 2020 for sentences)."""
    from sklearn.decomposition import PCA

    a, b = normalize(np.asarray(a, dtype=np.float64)), normalize(np.asarray(b, dtype=np.float64))
    mean = (a + b) / 2
    return PCA(n_components=components).fit(np.concatenate([a - mean, b - mean])).components_


def hard_debias(matrix: np.ndarray, definitional: np.ndarray, equalize: np.ndarray, specific: np.ndarray,
                variant: str = "debiaswe") -> tuple[np.ndarray, np.ndarray]:
    """Hard Debias (Bolukbasi et al. 2016) of a whole vocabulary: (the new unit vectors, the
    direction). Every word but the specific ones loses its component along the direction
    (neutralize); each equalize pair becomes two unit vectors symmetric about the direction,
    their common part the pair's neutralized mean (equalize). Rows are normalised before,
    between and after, as the published code does. Equalize reads the pair's vectors after
    neutralizing (`debiaswe`, as debiaswe's debias.py: E.v(a) after E.normalize()) or before
    (`wefe`, as WEFE 1.0.1, which takes them at fit time); the two differ only for a pair word
    that is not specific (with the gender lists none on GloVe 6B)."""
    x = normalize(np.asarray(matrix, dtype=np.float32))
    g = pair_subspace(x[definitional[:, 0]], x[definitional[:, 1]])[0]
    keep = np.zeros(len(x), dtype=bool)
    keep[specific] = True
    out = x.copy()
    moved = ~keep
    out[moved] -= np.outer(out[moved] @ g, g).astype(np.float32)
    out = normalize(out)
    read = out.copy() if variant == "debiaswe" else x  # a copy: an equalized pair must not feed a later one
    for ia, ib in equalize:
        ea, eb = read[ia].astype(np.float64), read[ib].astype(np.float64)
        mu = (ea + eb) / 2
        nu = mu - g * (mu @ g)
        z = np.sqrt(max(1 - nu @ nu, 0.0))
        # oriented by the original vectors: after neutralizing, a pair of two non-specific words has
        # no difference along g, and debiaswe's sign test ((E.v(a) - E.v(b)) . g < 0) reads rounding noise
        z = -z if (x[ia].astype(np.float64) - x[ib]) @ g < 0 else z
        out[ia], out[ib] = nu + z * g, nu - z * g
    return normalize(out).astype(np.float32), g


def half_sibling_regression(matrix: np.ndarray, specific: np.ndarray, alpha: float) -> np.ndarray:
    """Half-Sibling Regression (Yang & Feng 2020): every word but the specific ones loses what
    a ridge regression on the specific words' vectors predicts of it. With V the specific
    words' vectors (rows), the prediction of x is V^T (V V^T + alpha I)^-1 V x, which is
    G (G + alpha I)^-1 x for G = V^T V (the push-through identity): one d x d map,
    x -> alpha (G + alpha I)^-1 x. Vectors are not normalised (as the published method)."""
    x = np.asarray(matrix, dtype=np.float64)
    v = x[specific]
    keep = np.asarray(alpha * np.linalg.inv(v.T @ v + alpha * np.eye(x.shape[1])))
    out = x @ keep.T
    out[specific] = x[specific]
    return out.astype(np.float32)


def rowspace_projection(w: np.ndarray) -> np.ndarray:
    """The orthogonal projection onto the row space of w."""
    from scipy.linalg import orth

    basis = np.zeros_like(w.T) if np.allclose(w, 0) else orth(w.T)
    return basis @ basis.T


def nullspace_projection(rowspaces: list[np.ndarray], dim: int) -> np.ndarray:
    """The projection onto the intersection of the classifiers' null spaces: I minus the
    projection onto the row space of their rowspace projections' sum (Ben-Israel 2013)."""
    if not rowspaces:
        return np.eye(dim)
    return np.eye(dim) - rowspace_projection(np.sum(rowspaces, axis=0))


@dataclass(frozen=True)
class InlpFit:
    projection: np.ndarray    # (dim, dim)
    accuracies: list[float]   # held-out accuracy of each classifier, in order
    removed: int              # classifiers whose row space was removed
    converged: bool
    chance: float             # the held-out share of the most common class


def inlp(x_train, y_train, x_dev, y_dev, iterations: int, tol: float | None = None) -> InlpFit:
    """INLP (Ravfogel et al. 2020): train a linear classifier of the protected class, project
    every vector onto its null space, train again on the projected vectors, and so on; the
    final map projects onto the intersection of the null spaces. Classifier: a linear SVM
    without intercept (scikit-learn's LinearSVC, primal, random_state 0), as Ravfogel et al.'s
    and Meade et al.'s (bias-bench) code. With `tol`, it stops at the first classifier whose
    held-out accuracy is within tol of chance (that classifier found nothing to remove); without,
    it removes `iterations` classifiers, as the published code does."""
    from sklearn.svm import LinearSVC

    x_train, x_dev = np.asarray(x_train, dtype=np.float64), np.asarray(x_dev, dtype=np.float64)
    dim = x_train.shape[1]
    _, counts = np.unique(y_dev, return_counts=True)
    chance = float(counts.max() / counts.sum())
    rowspaces, accuracies = [], []
    p = np.eye(dim)
    for _ in range(iterations):
        clf = LinearSVC(fit_intercept=False, class_weight=None, dual=False, random_state=0)
        clf.fit(x_train @ p.T, y_train)
        acc = float(clf.score(x_dev @ p.T, y_dev))
        accuracies.append(acc)
        if tol is not None and acc <= chance + tol:
            return InlpFit(p, accuracies, len(rowspaces), True, chance)
        w = clf.coef_ if clf.coef_.ndim == 2 else clf.coef_[None, :]
        rowspaces.append(rowspace_projection(w))
        p = nullspace_projection(rowspaces, dim)
    return InlpFit(p, accuracies, len(rowspaces), tol is None, chance)


def split(x: np.ndarray, y: np.ndarray):
    """Train, dev and test parts (0.49, 0.21, 0.3), as bias-bench splits INLP's data (sklearn's
    train_test_split, random_state 0, twice)."""
    from sklearn.model_selection import train_test_split

    x_td, x_test, y_td, y_test = train_test_split(x, y, test_size=0.3, random_state=0)
    x_train, x_dev, y_train, y_dev = train_test_split(x_td, y_td, test_size=0.3, random_state=0)
    return x_train, x_dev, x_test, y_train, y_dev, y_test


def listed_rows(dim: Dimension, wv: WordVectors) -> set[int]:
    """The rows of every word in the dimension's lists (pairs as lookup finds them, specific words as written)."""
    pairs = dim.definitional + dim.equalize + ((dim.direction,) if dim.direction else ())
    listed = {r for pair in pairs for w in pair if (r := lookup(w, wv)) is not None}
    return listed | set(specific_rows(dim, wv).tolist())


def candidate_rows(wv: WordVectors, dim: Dimension, vocab: int) -> np.ndarray:
    """stimkit's first rule (the `projection` checks, the `stopping` INLP recipe): the `vocab`
    most frequent words (the file's order) that are plain lower-case words, none of them in the
    dimension's lists."""
    listed = listed_rows(dim, wv)
    return np.array([i for i, w in enumerate(wv.words[:vocab]) if w.isalpha() and w.islower() and i not in listed],
                    dtype=np.int64)


def _plain_token(w: str) -> bool:
    """Gonen & Goldberg's and Ravfogel et al.'s filter of a vocabulary: under 20 characters, no
    digit, no ASCII punctuation (but '_' joining clean parts, word2vec's phrases)."""
    import string

    if len(w) >= 20 or any(c in "0123456789" for c in w):
        return False
    return not any(c in string.punctuation for c in w.replace("_", ""))


def plain_rows(wv: WordVectors, vocab: int, exclude: set[int] = frozenset(), filter_first: bool = False,
               lower: bool = True) -> np.ndarray:
    """Plain words (_plain_token; lower-case where `lower`) outside `exclude`. Gonen & Goldberg
    filter the `vocab` most frequent words (`filter_first=False`); Ravfogel et al. keep the
    `vocab` most frequent of the filtered vocabulary (`filter_first=True`)."""
    words = wv.words if filter_first else wv.words[:vocab]
    rows = [i for i, w in enumerate(words) if _plain_token(w) and (not lower or w == w.lower()) and i not in exclude]
    return np.array(rows[:vocab] if filter_first else rows, dtype=np.int64)


def cosine_bias(x: np.ndarray, rows: np.ndarray, a: int, b: int) -> np.ndarray:
    """cos(w, a) - cos(w, b) of each row (Gonen & Goldberg 2019's bias of a word, a = he, b = she)."""
    u = normalize(np.asarray(x[rows], dtype=np.float64))
    ua, ub = normalize(np.asarray(x[[a, b]], dtype=np.float64))
    return u @ ua - u @ ub


def oriented_direction(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The first direction of the definitional pairs, signed so that the pairs' first words
    project above their second (for gender: woman, girl, she ... above man, boy, he)."""
    g = pair_subspace(x[rows[:, 0]], x[rows[:, 1]])[0]
    return g if ((x[rows[:, 0]] - x[rows[:, 1]]) @ g).mean() >= 0 else -g


def pair_sides(a: np.ndarray, b: np.ndarray, word_pair: np.ndarray) -> np.ndarray:
    """1 where a sentence pair's first sentence is on the positive side of the pairs' first
    principal direction, by the mean over its word pair's sentences (a word pair's sentences
    share one orientation; a sentence's own sign would label noise), else 0."""
    v = pair_subspace(a, b)[0]
    lean = (np.asarray(a, dtype=np.float64) - b) @ v
    means = {w: lean[word_pair == w].mean() for w in np.unique(word_pair)}
    return np.array([1 if means[w] >= 0 else 0 for w in word_pair])


def inlp_classes(x: np.ndarray, candidates: np.ndarray, g: np.ndarray, words: int, neutral: str = "least",
                 seed: int = 0):
    """INLP's data for word vectors: the `words` candidates most biased towards the direction's
    positive side (label 1), towards its negative side (0), and `words` neutral ones (-1), by
    the cosine of each vector with g. Neutral: the least biased (`least`, stimkit's first
    recipe), or, as Ravfogel et al., drawn at random among those with |cos| < 0.03 (`random`:
    without replacement, numpy seed `seed`; theirs draws with replacement, unseeded, and keeps
    the distinct words). Returns (rows, labels)."""
    bias = normalize(np.asarray(x[candidates], dtype=np.float64)) @ (g / np.linalg.norm(g))
    order = np.argsort(bias, kind="stable")
    first, second = order[::-1][:words], order[:words]
    if neutral == "least":
        neutral = np.argsort(np.abs(bias), kind="stable")[:words]
    else:
        near = np.flatnonzero(np.abs(bias) < NEUTRAL_COS)
        if len(near) < words:
            raise StimkitError(f"INLP needs {words} neutral words (|cos| < {NEUTRAL_COS}) and the candidates "
                               f"have {len(near)}: lower debias_words")
        neutral = np.sort(np.random.default_rng(seed).choice(near, words, replace=False))
    rows = np.concatenate([candidates[first], candidates[second], candidates[neutral]])
    labels = np.concatenate([np.ones(words, int), np.zeros(words, int), -np.ones(words, int)])
    return rows, labels


# ------------------------------------------------------------------ the encoders

@dataclass(frozen=True)
class Recipe:
    method: str
    dimension: Dimension
    params: dict

    def describe(self) -> dict:
        """What the fingerprint holds: method, parameters, the lists' versions."""
        return {"method": self.method, "dimension": self.dimension.name, "params": self.params,
                "lists": self.dimension.versions(), "version": VERSION}


def parse_options(spec: str, options: dict) -> tuple[dict, Recipe | None]:
    """Split a spec's options into the base encoder's and the debiaser's recipe (None: no debias=)."""
    mine = {k: options.pop(k) for k in OPTION_KEYS if k in options}
    if "debias" not in mine:
        if mine:
            raise StimkitError(f"encoder {spec!r}: {sorted(mine)[0]} needs debias=<method>")
        return options, None
    method, _, dim_name = mine.pop("debias").partition(":")
    method = method.strip().lower()
    if method not in METHODS:
        raise StimkitError(f"encoder {spec!r}: unknown debias method {method!r} (known: {', '.join(METHODS)})")
    params = dict(DEFAULTS[method])
    given = {}
    for key, value in mine.items():
        name = key.removeprefix("debias_")
        if name not in params:
            raise StimkitError(f"encoder {spec!r}: {key} is no option of debias={method} "
                               f"(its options: {', '.join('debias_' + k for k in params) or 'none'})")
        given[name] = _typed(value, params[name], key, spec)
    params = {**recipe_defaults(method, {**params, **given}), **given}
    return options, Recipe(method, load_dimension(dim_name.strip() or "gender"), params)


def _typed(value: str, default, key: str, spec: str):
    try:
        typed = type(default)(value)
    except ValueError:
        raise StimkitError(f"encoder {spec!r}: {key} must be a {type(default).__name__}, not {value!r}") from None
    if isinstance(typed, (int, float)) and not (typed > 0 and math.isfinite(typed)):
        raise StimkitError(f"encoder {spec!r}: {key} must be a finite number above 0, not {value!r}")
    name = key.removeprefix("debias_")
    if name in CHOICES and typed not in CHOICES[name]:
        raise StimkitError(f"encoder {spec!r}: {key} must be one of {', '.join(CHOICES[name])}, not {value!r}")
    return typed


def recipe_defaults(method: str, params: dict) -> dict:
    """What each option is when the spec does not give it: the method's defaults, for INLP its recipe's."""
    return {**DEFAULTS[method], **INLP_RECIPES[params["recipe"]]} if method == "inlp" else DEFAULTS[method]


def inlp_iterations(params: dict, dim: int) -> int:
    """The classifiers to remove: the count given, else Ravfogel et al.'s 35 per 300 dimensions
    scaled to `dim` (at least 1): a 3-class linear SVM removes up to 2 dimensions a classifier
    (3 one-vs-rest rows summing near 0), so 35 of them leave GloVe 50d 5 of its 50 dimensions."""
    return params["iterations"] or max(1, round(35 * dim / 300))


def derive(base: Encoder, recipe: Recipe, spec: str) -> Encoder:
    """The debiased encoder of `base`; the lists are checked against it now."""
    if len(base.layer_encoders()) > 1:
        raise StimkitError(f"encoder {spec!r}: debias takes one layer, not layer=all")
    if recipe.method in STATIC_ONLY and not (recipe.method == "inlp" and not base.static):
        if not isinstance(base, WordVectorEncoder):
            raise StimkitError(f"encoder {spec!r}: debias={recipe.method} maps a vocabulary of stored word vectors, "
                               f"and {base.spec!r} has none (glove-6b-50d or vectors:<file> have one; "
                               "for a sentence encoder use debias=sentencedebias or debias=inlp)")
        return DebiasedWordEncoder(base, recipe, spec)
    from .imported import ImportedEncoder

    if isinstance(base, ImportedEncoder):
        raise StimkitError(f"encoder {spec!r}: imported vectors have no model to encode the counterfactual "
                           "sentences that SentenceDebias needs")
    return DebiasedEncoder(base, recipe, spec)


def _options(base: Encoder, recipe: Recipe) -> dict:
    """The spec's options: the base's, the method (with its dimension unless gender), the non-default parameters."""
    dim = recipe.dimension
    builtin = any(Path(dim.path) == d / f"{dim.name}.toml" for d in dimension_dirs())
    value = recipe.method if dim.name == "gender" and builtin else f"{recipe.method}:{dim.name if builtin else dim.path}"
    defaults = recipe_defaults(recipe.method, recipe.params)
    extra = {f"debias_{k}": v for k, v in recipe.params.items() if v != defaults[k]}
    return {**base.options, "debias": value, **extra}


class DebiasedWordEncoder(WordVectorEncoder):
    """Hard Debias or INLP over a static vocabulary: the mapped vocabulary, read like the base's."""

    def __init__(self, base: WordVectorEncoder, recipe: Recipe, spec: str):
        self.base, self.recipe, self.where = base, recipe, spec
        self.fit: dict = {}
        identity = {"base": base.identity(), "base_fingerprint": base.fingerprint, "debias": recipe.describe()}
        super().__init__(base.name, self._mapped, identity, base.options.get("pooling", "cbow"), base.dim)
        self.options = _options(base, recipe)
        self.languages = base.languages
        self.vectors  # noqa: B018  (mapped now: a list or a fit that fails is refused before anything is written)
        self.fit = _FITS.setdefault(self.fingerprint, self.fit)  # mapped once a process (wordvectors._LOADED)

    def content(self) -> dict:
        """The fingerprint's: the base's options and the recipe (the lists by content), not the spec's
        spelling of them (a dimension of one's own is named there by its path)."""
        return {**self.details(), "options": self.base.options}

    def _mapped(self) -> WordVectors:
        wv = self.base.vectors
        dim = self.recipe.dimension
        definitional = definitional_rows(dim, wv, self.where)
        if self.recipe.method == "hard":
            variant = self.recipe.params["variant"]
            if variant == "wefe":
                definitional = definitional_rows(dim, wv, self.where, fold=False)
            matrix, g = hard_debias(wv.matrix, definitional, equalize_rows(dim, wv), specific_rows(dim, wv), variant)
            self.fit = {"direction": g, "definitional": len(definitional)}
        elif self.recipe.method == "hsr":
            specific = specific_rows(dim, wv)
            if len(specific) < 2:
                raise StimkitError(f"encoder {self.where!r}: {dim.path}: Half-Sibling Regression regresses on the "
                                   f"`specific` words, and the vocabulary has {len(specific)} of them")
            matrix = half_sibling_regression(wv.matrix, specific, self.recipe.params["alpha"])
        else:
            matrix = self._inlp(wv, definitional)
        return WordVectors(wv.words, matrix)

    def _inlp(self, wv: WordVectors, definitional: np.ndarray) -> np.ndarray:
        p = self.recipe.params
        dim = self.recipe.dimension
        x = np.asarray(wv.matrix, dtype=np.float32)
        if p["direction"] == "pair":  # Ravfogel et al.: he - she of the raw vectors
            a, b = pair_rows(dim.bias_pair, dim, wv, self.where)
            g = x[a].astype(np.float64) - x[b]
        else:
            g = oriented_direction(x, definitional)
        if p["recipe"] == "stopping":  # stimkit's first rule: plain words outside the lists
            candidates, neutral = candidate_rows(wv, dim, p["vocab"]), "least"
        else:  # Ravfogel et al.'s vecs.filtered.txt: the filtered vocabulary's most frequent, listed words kept
            candidates, neutral = plain_rows(wv, p["vocab"], filter_first=True, lower=False), "random"
        if len(candidates) < 3 * p["words"]:
            raise StimkitError(f"encoder {self.where!r}: INLP needs {3 * p['words']} candidate words "
                               f"(debias_words={p['words']} of each class) among the {p['vocab']} most frequent, "
                               f"and the vocabulary gives {len(candidates)}: lower debias_words")
        rows, labels = inlp_classes(x, candidates, g, p["words"], neutral)
        r_train, r_dev, _, y_train, y_dev, _ = split(rows, labels)
        n = inlp_iterations(p, x.shape[1])
        fit = inlp(x[r_train], y_train, x[r_dev], y_dev, n, p["tol"] or None)
        if not fit.converged:
            raise StimkitError(f"encoder {self.where!r}: INLP did not converge: held-out accuracy "
                               f"{fit.accuracies[-1]:.3f} after {n} classifiers (chance {fit.chance:.3f} "
                               f"+ debias_tol {p['tol']}): raise debias_iterations or debias_tol")
        # trained: the words INLP fitted on (train and dev parts), which a check must not score
        self.fit = {"direction": g / np.linalg.norm(g), "accuracies": fit.accuracies, "removed": fit.removed,
                    "chance": fit.chance, "trained": np.sort(np.concatenate([r_train, r_dev])), "rows": rows,
                    "labels": labels, "projection": fit.projection}
        return (x @ fit.projection.T).astype(np.float32)


class DebiasedEncoder(Encoder):
    """SentenceDebias or INLP over any encoder that can encode sentences: one linear map of the
    base's vectors, fitted on the base's vectors of the counterfactual sentence pairs. SentenceDebias
    removes their principal subspace (found on first use); INLP trains its classifiers to tell a
    pair's two sides apart (binary, as bias-bench's INLP for race and religion; fitted when the
    encoder is built, so a fit that does not converge is refused before anything is written)."""

    static = False

    def __init__(self, base: Encoder, recipe: Recipe, spec: str):
        from ..stimuli.counterfactual import DEFAULT_TEMPLATES, sentence_pairs

        self.base, self.recipe, self.where = base, recipe, spec
        self.name, self.uses_span, self.languages = base.name, base.uses_span, base.languages
        self.options = _options(base, recipe)
        words = [(a, b) for a, b in dict.fromkeys((a.lower(), b.lower())
                                                   for a, b in recipe.dimension.definitional + recipe.dimension.equalize)]
        templates = recipe.params.get("templates", DEFAULT_TEMPLATES)
        self.pairs, self.templates_digest = sentence_pairs(words, templates)
        if len(self.pairs) < 2:
            raise StimkitError(f"encoder {spec!r}: the template set {templates!r} gives "
                               f"{len(self.pairs)} counterfactual sentence pair from {recipe.dimension.path}")
        k = recipe.params.get("components", 1)
        if k > min(2 * len(self.pairs), base.dim):
            raise StimkitError(f"encoder {spec!r}: debias_components={k} is more than the "
                               f"{min(2 * len(self.pairs), base.dim)} directions {len(self.pairs)} sentence pairs of "
                               f"{base.dim}-d vectors have")
        self.fit: dict = {}
        self._map: np.ndarray | None = None
        if recipe.method == "inlp":
            self.matrix  # noqa: B018

    @property
    def dim(self) -> int:
        return self.base.dim

    def _recipe(self) -> dict:
        return {**self.recipe.describe(), "templates_digest": self.templates_digest}

    def identity(self) -> dict:  # the base's fingerprint: what the report pairs a debiased result with
        return {"base": self.base.identity(), "base_fingerprint": self.base.fingerprint, "debias": self._recipe()}

    def content(self) -> dict:
        return {"base": self.base.content(), "debias": self._recipe()}

    def subword_counts(self, words):
        return self.base.subword_counts(words)

    def pair_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """The base's vectors of the counterfactual pairs' two sides."""
        texts = [p[0] for p in self.pairs] + [p[1] for p in self.pairs]
        v = self.base.encode(texts, [None] * len(texts)).vectors
        return v[: len(self.pairs)], v[len(self.pairs):]

    @property
    def word_pairs(self) -> np.ndarray:
        """The word pair each sentence pair renders."""
        return np.array([p[2] for p in self.pairs])

    def fit_map(self, a: np.ndarray, b: np.ndarray, word_pair: np.ndarray) -> np.ndarray:
        """The (dim, dim) map fitted on these pairs (all of them for the encoder; part for a
        cross-fitted check)."""
        if self.recipe.method == "sentencedebias":
            subspace = pair_subspace(a, b, self.recipe.params["components"])
            self.fit.setdefault("subspace", subspace)
            return np.eye(a.shape[1]) - subspace.T @ subspace
        p = self.recipe.params
        side = pair_sides(a, b, word_pair)
        x = np.concatenate([a, b])
        x_train, x_dev, _, y_train, y_dev, _ = split(x, np.concatenate([side, 1 - side]))
        n = inlp_iterations(p, x.shape[1])
        fit = inlp(x_train, y_train, x_dev, y_dev, n, p["tol"] or None)
        if not fit.converged:
            raise StimkitError(f"encoder {self.where!r}: INLP did not converge: held-out accuracy "
                               f"{fit.accuracies[-1]:.3f} after {n} classifiers (chance {fit.chance:.3f} "
                               f"+ debias_tol {p['tol']}): raise debias_iterations or debias_tol")
        self.fit.setdefault("accuracies", fit.accuracies)
        self.fit.setdefault("removed", fit.removed)
        self.fit.setdefault("chance", fit.chance)
        return fit.projection

    @property
    def matrix(self) -> np.ndarray:
        if self._map is None:
            a, b = self.pair_vectors()
            self._map = self.fit_map(a, b, self.word_pairs)
        return self._map

    @property
    def subspace(self) -> np.ndarray:
        """SentenceDebias's subspace (components, dim)."""
        self.matrix  # noqa: B018
        return self.fit["subspace"]

    def project(self, vectors: np.ndarray) -> np.ndarray:
        return (np.asarray(vectors, dtype=np.float64) @ self.matrix.T).astype(np.float32)

    def encode(self, texts, spans) -> Encoded:
        out = self.base.encode(texts, spans)
        return Encoded(self.project(out.vectors), out.oov, out.notes)

    def encode_stream(self, texts, spans):
        for rows, out in self.base.encode_stream(texts, spans):
            yield rows, Encoded(self.project(out.vectors), out.oov, out.notes)
