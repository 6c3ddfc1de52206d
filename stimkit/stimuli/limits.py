"""Bounds on the work rendering may do (a sentence's length and time, a file's and a set's
sentences, a multi-slot set's combinations): one value passed down from the top, never a
module global. A Store holds its own (`Store(limits=...)`, else the environment's, read once);
`Store.generate(limits=...)` overrides it for one call; every function that renders takes it
as an argument, and one not given any uses the defaults below."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from ..errors import StimkitError


@dataclass(frozen=True)
class Limits:
    """Bounds on the work one `generate` may do; each names its option and variable to raise it.
    They refuse, never change, what is rendered, so they are not part of a set's version."""

    sentence_chars: int = 2_000      # characters in one rendered sentence
    per_template: int = 100_000      # sentences one template file yields in one set
    per_set: int = 1_000_000         # sentences in one set
    render_seconds: float = 5.0      # time to render one sentence
    combinations: int = 10_000_000   # combinations of slot words in a multi-slot set, before its constraints

    OPTIONS = {"sentence_chars": ("--max-sentence-chars", "STIMKIT_MAX_SENTENCE_CHARS"),
               "per_template": ("--max-per-template", "STIMKIT_MAX_PER_TEMPLATE"),
               "per_set": ("--max-per-set", "STIMKIT_MAX_PER_SET"),
               "render_seconds": ("--max-render-seconds", "STIMKIT_MAX_RENDER_SECONDS"),
               "combinations": ("--max-combinations", "STIMKIT_MAX_COMBINATIONS")}

    @classmethod
    def from_env(cls) -> Limits:
        """The defaults, with each variable set in the environment in place of its own."""
        values = {}
        for f in fields(cls):
            raw = os.environ.get(cls.OPTIONS[f.name][1])
            if raw is not None:
                values[f.name] = _positive(raw, f.type, cls.OPTIONS[f.name][1])
        return cls(**values)

    def how_to_raise(self, name: str) -> str:
        option, variable = self.OPTIONS[name]
        return f"raise it with `generate {option}` or {variable}"


def _positive(raw, kind, name: str):
    try:
        value = (float if kind in (float, "float") else int)(str(raw).strip())
    except ValueError:
        value = 0
    if not value > 0:
        raise StimkitError(f"{name} must be a number > 0, not {raw!r}")
    return value
