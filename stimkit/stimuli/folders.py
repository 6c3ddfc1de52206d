"""A store's own input folders, beside the built-in inputs: one frozen value that a Store
builds once (`stimkit.open(path, wordlist_dir=...)`) and passes to what reads them. A command
or a study that names folders of its own gets a new value (`using`), never a change to the
Store's."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Folders:
    catalog_dir: Path | None = None    # test definitions (None: STIMKIT_CATALOG_DIR, else the built-in catalog)
    wordlist_dir: Path | None = None   # word lists, joining the built-in ones
    template_dir: Path | None = None   # template sets, searched before the built-in ones
    override: bool = False             # one of yours may replace a built-in of its name (recorded in provenance)

    def using(self, **given) -> Folders:
        """These folders with each one `given` (a study's, a command's) in place of its own;
        one given as None keeps this one, and `override` holds if either says so."""
        return dataclasses.replace(self, **{k: v for k, v in given.items() if v})

    def own_lists(self) -> dict | None:
        """The word lists of `wordlist_dir` alone, None when there is none."""
        from . import wordlists

        return wordlists.load_all(self.wordlist_dir) if self.wordlist_dir else None

    def lists(self, own: dict | None = None) -> dict:
        """The built-in word lists with `wordlist_dir`'s (`own`: those, read already); one of
        yours named like a built-in list is refused unless `override`."""
        from . import wordlists

        found = wordlists.load_all()
        own = own if own is not None else self.own_lists()
        return wordlists.merge(found, own, self.override) if own is not None else found

    def template_set(self, name: str):
        """The template set `name`: from `template_dir` if it has it, else the built-in one."""
        from .templates import load_set

        return load_set(name, self.template_dir, self.override)
