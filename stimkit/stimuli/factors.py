"""What a template-rendered stimulus is a sample of: its word, and the context the word sits
in. Words and contexts are the random factors of the crossed model (stats.crossed) and the
units of the template audit (run.audit); both read them from here.

The context of a one-slot template is its frame: the template with the word written X, so
"This is {{ word }}." (names, mass nouns, adjectives) and "This is {{ singular|a }}." (count
nouns) are one frame, "This is X.", and targets of different kinds meet in the frames they
share. (A template with several slots would make the context the frame with the other slots'
words filled in: extend `contexts` here.)
"""

from __future__ import annotations

import re

import polars as pl

_EXPR = re.compile(r"\{\{(.*?)\}\}")
_TAG = re.compile(r"\{%.*?%\}")
_WORD_FORM = re.compile(r"\b(word|singular|plural)\b")


def frame(template_text: str) -> str:
    """'{{ singular|a|capfirst }} is {{ "a person" if person else "a thing" }}.' -> 'X is _.'"""
    text = _TAG.sub("", template_text)
    text = _EXPR.sub(lambda m: "X" if _WORD_FORM.search(m.group(1)) else "_", text)
    return " ".join(text.split())


def contexts(stimuli: pl.DataFrame) -> list[str] | None:
    """The context of each selected stimulus (its template's frame; its template id where the
    text is missing), or None when a stimulus has neither (imported or ad-hoc sets)."""
    texts = stimuli["template_text"].to_list() if "template_text" in stimuli.columns else [None] * stimuli.height
    ids = stimuli["template_id"].to_list() if "template_id" in stimuli.columns else [None] * stimuli.height
    found = [frame(t) if t is not None else i for t, i in zip(texts, ids)]
    return None if any(c is None for c in found) else found


def word_and_context(stimuli: pl.DataFrame) -> tuple[list[str], list[str]] | None:
    """(word, context) per row of a set's selected stimuli, or None when the rows carry no
    words or no templates."""
    found = contexts(stimuli)
    if found is None or "word" not in stimuli.columns or stimuli["word"].null_count():
        return None
    return stimuli["word"].to_list(), found
