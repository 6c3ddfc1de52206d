"""What a set of stimuli is made of, beyond its meaning: word frequency (wordfreq's Zipf
scale), subword length under a tokenizer, OOV share under a static vocabulary; and words
drawn at random to match a set's words on those, for a matched random baseline.

A permutation test's null ("the targets are exchangeable") does not remove confounds that
come with the words: frequent words against rare ones reach |d| > 0.8 a quarter of the time
on GloVe with no social content at all (spec/STATISTICS.md, "Confounds"). So X and Y are
described here side by side, a gap is a warning, and a baseline draws random words that
match each target word, so that d can be read against what random words like these give.

Frequencies come from `wordfreq` (Speer 2022), offline: `zipf_frequency` is log10 of a
word's frequency per billion words (7: "the"; 3: "branding"; 1: very rare; 0: unknown).
Subword counts come from the encoder (`Encoder.subword_counts`): this module takes them
as arrays and never loads a model.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InputError, UsageError
from .inputs import read_text
from .wordlists import fold

DEFAULT_LANGUAGE = "en"
GAP_ZIPF = 0.5          # warn when X and Y differ by more than this in mean Zipf frequency
GAP_PIECES = 0.5        # ... or in mean subword count


# ------------------------------------------------------------------------------ frequency

@lru_cache(maxsize=None)
def has_frequencies(language: str) -> bool:
    """Whether wordfreq has a word list of its own for `language` (else it would answer from
    "the nearest match", Telugu from English: a frequency of nothing)."""
    import wordfreq

    return language in wordfreq.available_languages()


@lru_cache(maxsize=65536)
def _zipf(word: str, language: str) -> float:
    import wordfreq

    try:
        return float(wordfreq.zipf_frequency(word, language))
    except ImportError:  # a language whose tokenizer is an optional package (ja, ko: MeCab): the word as listed
        freq = _frequencies(language).get(word.lower(), 0.0)
        return round(float(np.log10(freq)) + 9, 2) if freq > 0 else 0.0


@lru_cache(maxsize=8)
def _frequencies(language: str) -> dict:
    import wordfreq

    return wordfreq.get_frequency_dict(language)


def zipf(words, language: str = DEFAULT_LANGUAGE) -> np.ndarray:
    """Zipf frequency of each word (a multi-word item: wordfreq's estimate for the phrase;
    0 for a word wordfreq has never seen; NaN for every word of a language wordfreq lacks)."""
    if not has_frequencies(language):
        return np.full(len(list(words)), np.nan)
    return np.array([_zipf(str(w), language) for w in words], dtype=np.float64)


@dataclass(frozen=True)
class Vocabulary:
    """The words a baseline draws from, with their Zipf frequencies."""
    words: tuple[str, ...]
    zipf: np.ndarray
    source: str          # what the list is: 'wordfreq 3.1.1 en' or 'file <name> sha256:<hash>'
    language: str


@lru_cache(maxsize=4)
def reference_vocabulary(language: str = DEFAULT_LANGUAGE, path: str | None = None) -> Vocabulary:
    """The reference vocabulary: wordfreq's whole word list for `language` (alphabetic words of
    two letters or more, most frequent first), or the words of a file (one a line, `#` starts a
    comment; duplicates after case folding kept once) with their wordfreq frequencies."""
    import wordfreq

    if path is None:
        if not has_frequencies(language):
            raise UsageError(f"wordfreq has no word list for language {language!r}: give the words to draw from "
                             "(--vocabulary FILE, one word a line)")
        try:
            listed = wordfreq.top_n_list(language, 10_000_000)
            freq = wordfreq.get_frequency_dict(language)
        except (LookupError, ValueError) as e:
            raise UsageError(f"wordfreq has no word list for language {language!r}: {e}") from None
        words = [w for w in listed if len(w) > 1 and w.isalpha()]
        # zipf_frequency of a single lower-case word is this lookup, rounded as wordfreq rounds it
        values = np.round(np.log10(np.fromiter((freq[w] for w in words), dtype=np.float64, count=len(words))) + 9, 2)
        from importlib.metadata import version

        return Vocabulary(tuple(words), values, f"wordfreq {version('wordfreq')} {language}", language)
    text = read_text(path)
    words, seen = [], set()
    for line in text.splitlines():
        word = unicodedata.normalize("NFC", line.split("#", 1)[0].strip())
        if word and fold(word) not in seen:
            seen.add(fold(word))
            words.append(word)
    if not words:
        raise InputError(f"{path}: no words in the reference vocabulary (one word a line)")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    from pathlib import Path

    return Vocabulary(tuple(words), zipf(words, language), f"file {Path(path).name} sha256:{digest}", language)


NAMES = "names"  # a Vocabulary.source that starts so: given names (every word is a name)


@lru_cache(maxsize=4)
def names_vocabulary(language: str = DEFAULT_LANGUAGE) -> Vocabulary:
    """Given names to draw a name list's stand-ins from: the Names Corpus (wordlists/names/, 7,944
    names; see its SOURCE.md), with wordfreq's frequencies where it knows a name (else Zipf 0)."""
    from ..paths import data_dir

    folder = data_dir("wordlists") / "names"
    text = "".join((folder / f).read_text(encoding="utf-8") for f in ("female.txt", "male.txt"))
    words, seen = [], set()
    for line in text.splitlines():
        word = line.strip()
        if word and fold(word) not in seen:
            seen.add(fold(word))
            words.append(word)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return Vocabulary(tuple(words), zipf(words, language), f"{NAMES} (Names Corpus 1.3) sha256:{digest}", language)


# ------------------------------------------------------------------------------ a set described

@dataclass(frozen=True)
class SetProfile:
    """One target set's words, described: what `sets --diagnose`, `test` and the report show."""
    n_words: int
    zipf_mean: float
    zipf_sd: float
    pieces_mean: float | None = None     # mean subword count under a tokenizer (None: no tokenizer)
    oov_share: float | None = None       # share of its words a static vocabulary lacks
    reliability: float | None = None     # split-half (Spearman-Brown), where a result gives vectors


def profile(words, language: str = DEFAULT_LANGUAGE, pieces: np.ndarray | None = None,
            static: bool = False) -> SetProfile:
    """Zipf mean and SD (ddof 1) over the distinct words; with `pieces` (their subword counts),
    the mean count for a tokenizer, or for a static vocabulary (0 = not in it) the OOV share."""
    words = list(dict.fromkeys(words))
    z = zipf(words, language)
    sd = float(z.std(ddof=1)) if len(z) > 1 else float("nan")
    if pieces is None:
        return SetProfile(len(words), float(z.mean()), sd)
    pieces = np.asarray(pieces, dtype=np.float64)
    if static:
        return SetProfile(len(words), float(z.mean()), sd, oov_share=float((pieces == 0).mean()))
    return SetProfile(len(words), float(z.mean()), sd, pieces_mean=float(pieces.mean()))


def gaps(x: SetProfile, y: SetProfile, test: str = "", encoder: str = "") -> list[str]:
    """A warning line for each way X and Y differ more than a confound allows: mean Zipf (a
    fact of the words: the line names the test), mean subword count (of the tokenizer: it
    names the encoder too)."""
    lead = f"test {test}: " if test else ""
    found = []
    if abs(x.zipf_mean - y.zipf_mean) > GAP_ZIPF:
        found.append(f"{lead}X and Y differ in word frequency: mean Zipf {x.zipf_mean:.2f} vs {y.zipf_mean:.2f} "
                     f"(a gap over {GAP_ZIPF} moves d by itself; `stimkit baseline` gives d's matched random baseline)")
    if x.pieces_mean is not None and y.pieces_mean is not None and abs(x.pieces_mean - y.pieces_mean) > GAP_PIECES:
        where = f"test {test}, encoder {encoder}: " if test else ""
        found.append(f"{where}X and Y differ in subword length: mean {x.pieces_mean:.2f} vs {y.pieces_mean:.2f} "
                     f"pieces (a gap over {GAP_PIECES})")
    return found


# ------------------------------------------------------------------------------ matched draws

def lexicon_kinds(words, lexicon: dict[str, frozenset[str]]) -> list[str | None]:
    """The kind the lexicon gives each word, or None where it does not know the word."""
    kinds = {}
    for kind, listed in lexicon.items():
        if kind == "plural_count_noun":
            continue
        for w in listed:
            kinds.setdefault(w, kind)
    return [kinds.get(w) for w in words]


def eligible(target_zipf: np.ndarray, cand_zipf: np.ndarray, tolerance: float) -> np.ndarray:
    """(targets, candidates): candidate within `tolerance` of the target on the Zipf scale."""
    return np.abs(cand_zipf[None, :] - np.asarray(target_zipf)[:, None]) <= tolerance + 1e-9


def draw(allowed: np.ndarray, k: int, rng: np.random.Generator, names: list[str], what: list[str],
         max_rounds: int = 100) -> np.ndarray:
    """K matched draws: (targets, K) candidate indices, each drawn uniformly among the
    candidates `allowed` for its target (a (targets, candidates) boolean matrix), the words of
    one draw (a column) all different. names/what: each target word and its criteria, for the
    message when none matches."""
    pools = [np.flatnonzero(row) for row in allowed]
    for i, pool in enumerate(pools):
        if pool.size == 0:
            raise InputError(f"no word of the reference vocabulary matches target word {names[i]!r} ({what[i]}): "
                             "widen --tolerance or give --vocabulary FILE")
    T = len(pools)
    idx = np.empty((T, k), dtype=np.int64)
    for i, pool in enumerate(pools):
        idx[i] = pool[rng.integers(pool.size, size=k)]
    for _ in range(max_rounds):  # a word drawn twice in one draw is drawn again (its own pool)
        order = np.argsort(idx, axis=0, kind="stable")
        ranked = np.take_along_axis(idx, order, axis=0)
        repeat = np.zeros_like(idx, dtype=bool)
        np.put_along_axis(repeat, order[1:], ranked[1:] == ranked[:-1], axis=0)
        if not repeat.any():
            return idx
        for i in np.flatnonzero(repeat.any(axis=1)):
            cols = np.flatnonzero(repeat[i])
            idx[i, cols] = pools[i][rng.integers(pools[i].size, size=cols.size)]
    raise InputError(f"the reference vocabulary holds too few matching words to draw {T} different words at once "
                     f"(smallest pool: {min(p.size for p in pools)} words): widen --tolerance or give --vocabulary FILE")
