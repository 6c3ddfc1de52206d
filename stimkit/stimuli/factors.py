"""What a template-rendered stimulus is a sample of: its word, and the context the word sits
in. Words and contexts are the random factors of the crossed model (stats.crossed) and the
units of the template audit (run.audit); both read them from here.

The context of a one-slot template is its frame: the template with the word written X, so
"This is {{ word }}." (names, mass nouns, adjectives) and "This is {{ singular|a }}." (count
nouns) are one frame, "This is X.", and targets of different kinds meet in the frames they
share. A stimulus of a multi-slot template set (stimuli.slots) carries its context: its
`context_id`, the template line and the other slots' words ("holisticbias/default:3 |
noun=grandmother"), so the word is the selecting slot's and the other slots are crossed
factors beside the template.
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
    """The context of each selected stimulus (a multi-slot stimulus' context_id, else its
    template's frame, else its template id where the text is missing), or None when a stimulus
    has none of them (imported or ad-hoc sets)."""
    n = stimuli.height
    column = lambda name: stimuli[name].to_list() if name in stimuli.columns else [None] * n  # noqa: E731
    found = [c if c is not None else frame(t) if t is not None else i
             for c, t, i in zip(column("context_id"), column("template_text"), column("template_id"))]
    return None if any(c is None for c in found) else found


def word_and_context(stimuli: pl.DataFrame) -> tuple[list[str], list[str]] | None:
    """(word, context) per row of a set's selected stimuli, or None when the rows carry no
    words or no templates."""
    found = contexts(stimuli)
    if found is None or "word" not in stimuli.columns or stimuli["word"].null_count():
        return None
    return stimuli["word"].to_list(), found
