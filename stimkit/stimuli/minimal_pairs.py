"""Minimal pairs of a test's targets: the same template with word x of X and with word y of Y.

A language model scores sentences, not words, so a test of targets X and Y asks whether it
finds "This is John." more probable than "This is Amy." A minimal pair is one template line
(one frame, stimuli.factors: "This is X.") rendered with a word of X and with a word of Y; the
two sentences differ in the target word only.

The pairs are derived from the test's selected X and Y sets, never stored apart: those sets
are versioned and keyed (stimuli.keys, the set versions of a result's input key), and the
pairs are a function of them and of the rule below, so a pair set has the version of the sets
it reads (and MATCHING names the rule, in every result that uses it).

Which x goes with which y (MATCHING):
- X and Y with the same number of words: by order, the i-th word of X with the i-th of Y, as
  the lists give them (as counterfactual pairs are: stimuli.counterfactual's word pairs);
- otherwise every word of X with every word of Y (nothing cut: no random choice decides a pair).
A pair exists in each frame that both of its words have a sentence in; a word with several
sentences in one frame (several template files of one frame) pairs its k-th with the other's k-th.
A sentence of a word that meets no partner in its frame takes part in no pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ..errors import InputError
from .factors import contexts

MATCHING = "minimal-pairs/1: equal word counts by order, else every x with every y; per frame"


@dataclass(frozen=True)
class MinimalPairs:
    """The pairs of a test's targets: one row a pair (frame, x_word, y_word, x_row, y_row,
    x_stimulus, y_stimulus, exact: the two sentences agree outside the target's span), and how
    the words were matched."""
    pairs: pl.DataFrame
    matching: str                # "by order" or "every x with every y"

    @property
    def x_rows(self) -> list[int]:
        """The rows of X (in the selected set) that take part in a pair, in set order."""
        return sorted(set(self.pairs["x_row"].to_list()))

    @property
    def y_rows(self) -> list[int]:
        return sorted(set(self.pairs["y_row"].to_list()))


def _words(frame: pl.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["word"].to_list()))


def _cells(frame: pl.DataFrame, frames_: list[str]) -> dict[tuple[str, str], list[int]]:
    """(word, frame) -> the rows of that word in that frame, in set order."""
    cells: dict[tuple[str, str], list[int]] = {}
    for row, (word, ctx) in enumerate(zip(frame["word"].to_list(), frames_)):
        cells.setdefault((word, ctx), []).append(row)
    return cells


def _outside(frame: pl.DataFrame, row: int) -> tuple[str, str] | None:
    """The sentence's text before and after its target's span (None: no span recorded)."""
    if "span_start" not in frame.columns or frame["span_start"][row] is None:
        return None
    text, a, b = frame["stimulus"][row], frame["span_start"][row], frame["span_end"][row]
    return text[:a], text[b:]


def minimal_pairs(x: pl.DataFrame, y: pl.DataFrame, what: str = "test") -> MinimalPairs:
    """The minimal pairs of two target sets' selected stimuli (rows with `stimulus`, `word` and
    a template: stimuli.factors.contexts). Refused in one line: sets without words or
    templates, no frame shared by X and Y, and a pair whose two sentences are the same text
    (x and y spelled alike): it does not differ, so it cannot compare X with Y."""
    found = []
    for role, f in (("X", x), ("Y", y)):
        ctx = contexts(f)
        if ctx is None or "word" not in f.columns or f["word"].null_count():
            raise InputError(f"{what}: set {role} has no template behind each stimulus (its words rendered through "
                             "template lines): a minimal pair needs one template line with a word of X and of Y")
        found.append(ctx)
    cx, cy = found
    wx, wy = _words(x), _words(y)
    by_order = len(wx) == len(wy)
    word_pairs = list(zip(wx, wy)) if by_order else [(a, b) for a in wx for b in wy]
    cells_x, cells_y = _cells(x, cx), _cells(y, cy)
    frames_ = list(dict.fromkeys(c for c in cx if c in set(cy)))
    rows = []
    for frame in frames_:
        for a, b in word_pairs:
            for rx, ry in zip(cells_x.get((a, frame), ()), cells_y.get((b, frame), ())):
                sx, sy = x["stimulus"][rx], y["stimulus"][ry]
                if sx == sy:
                    raise InputError(f"{what}: the minimal pair of {a!r} (X) and {b!r} (Y) in {frame!r} is one sentence "
                                     f"twice ({sx!r}): the pair does not differ; take the word out of one list")
                ox, oy = _outside(x, rx), _outside(y, ry)
                rows.append((frame, a, b, rx, ry, sx, sy, None if ox is None or oy is None else ox == oy))
    if not rows:
        raise InputError(f"{what}: X and Y share no template (frame) with a word on each side: no minimal pair")
    pairs = pl.DataFrame(rows, schema={"frame": pl.String, "x_word": pl.String, "y_word": pl.String,
                                       "x_row": pl.Int64, "y_row": pl.Int64, "x_stimulus": pl.String,
                                       "y_stimulus": pl.String, "exact": pl.Boolean}, orient="row")
    return MinimalPairs(pairs, "by order" if by_order else "every x with every y")
