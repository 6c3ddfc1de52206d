"""Counterfactual sentence pairs: one template line rendered with each word of a word pair.

SentenceDebias (Liang et al. 2020) finds a bias subspace from sentences that differ only in
the words of a pair ("This is a woman." / "This is a man."). Liang et al. took the sentences
from corpora; stimkit renders its own template sets instead, so the pairs are versioned like
every other stimulus: a pair is the same line of the same template file rendered with word a
and with word b. A pair whose two words take different template files (a pronoun and a
noun) has no common line and gives no sentence; a line that renders to nothing for either
word is left out.
"""

from __future__ import annotations

from .templates import TemplateSet, load_set
from .wordlists import _resolve_word, load_lexicon

DEFAULT_TEMPLATES = "may2019_fixed"


def sentence_pairs(word_pairs: list[tuple[str, str]], template_set: str = DEFAULT_TEMPLATES,
                   ) -> tuple[list[tuple[str, str, int]], str]:
    """([(sentence with a, sentence with b, index of the word pair)], the template set's digest
    of the files used).
    Multi-word tokens of word2vec lists ("Catholic_priest") are written with a space."""
    tset: TemplateSet = load_set(template_set)
    lexicon = load_lexicon()
    out, files = [], set()
    for i, (a, b) in enumerate(word_pairs):
        wa, wb = (tset.inflected(_resolve_word({"word": w.replace("_", " "), "kind": _kind(w, lexicon)}, {}, lexicon,
                                               f"pair ({a!r}, {b!r})")) for w in (a, b))
        fa, fb = tset.file_for(wa), tset.file_for(wb)
        if fa != fb:
            continue
        files.add(fa)
        for template in tset.templates(fa):
            ra, rb = template.render(wa), template.render(wb)
            if ra is not None and rb is not None and ra[0] != rb[0]:
                out.append((ra[0], rb[0], i))
    return out, tset.digest(sorted(files))


def _kind(word: str, lexicon) -> str | None:
    """A multi-word item needs a kind (the word-list rule): a two-word noun of a pair list is a count noun."""
    return "count_noun" if "_" in word or " " in word else None


def sentences(words: list[str], template_set: str = DEFAULT_TEMPLATES) -> list[str]:
    """Every line of the template set rendered with each word (its file by the word's kind)."""
    tset: TemplateSet = load_set(template_set)
    lexicon = load_lexicon()
    out = []
    for w in words:
        word = tset.inflected(_resolve_word({"word": w, "kind": _kind(w, lexicon)}, {}, lexicon, f"word {w!r}"))
        out += [r[0] for t in tset.templates(tset.file_for(word)) if (r := t.render(word)) is not None]
    return list(dict.fromkeys(out))
