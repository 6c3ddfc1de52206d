"""WEATHub (Mukherjee et al. 2023, EMNLP) as it is published: WEAT categories in 24 languages.

Its `data/` folder holds one folder per language and variant, `<lang>_<variant>`, each with
files in the published SEAT format (read by catalog.sentbias):

    en          Caliskan et al.'s English originals (weat1-weat10)
    de_human    translated by native speakers            translation = human, from en
    de_gt       machine translated (Google Translate)   translation = machine, from en
    de_all      human and machine translations pooled   translation = mixed, from en
    de_new      culture-specific tests (weat11-weat15), written by native speakers with their
    de_india    India-specific tests (weat16-weat26)    English versions (en_new, en_india):
                                                         translation = human, direction unstated

Each file becomes a word-level test `weathub:<folder>:<file stem>` (`weathub:de_human:weat1`)
whose four sets record the folder's language (normalised: `tl` is `fil`) and provenance, the
licence of the data (CC BY 4.0, the authors' dataset card) and the citation. Items are words:
the test's context is `word`. A multi-word item ("schwarze Fliege") stays one item, encoded
as the phrase it is (a static encoder averages its words' vectors). Where two words of a
list translated to one (jerk, moron -> Idiot: 531 of the 694 files), the repeat is left out,
so no word counts twice, and the import names each one it left out.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import Path

from ..errors import UsageError
from ..stimuli.language import Provenance, normalise
from ..stimuli.limits import Limits
from . import sentbias

FOLDER = re.compile(r"^([a-z]{2,3})(?:_(human|gt|all|new|india))?$")
TRANSLATION = {None: "original", "human": "human", "gt": "machine", "all": "mixed", "new": "human", "india": "human"}
LICENCE = "CC-BY-4.0"
CITATION = "WEATHub (Mukherjee, Raj, Zhu, Lertvittayakumjorn & Anastasopoulos 2023, EMNLP), data/{folder}"
PREFIX = "weathub:{folder}:"


def provenance(folder: str) -> Provenance:
    """The language and provenance a WEATHub folder's name says."""
    match = FOLDER.match(folder)
    if match is None:
        raise UsageError(f"{folder}: not a WEATHub folder (<lang>_<variant>: de_human, de_gt, de_all, de_new, "
                         "hi_india, or en)")
    lang, variant = match.groups()
    english = lang == "en"
    translation = "original" if english else TRANSLATION[variant]
    # _human, _gt and _all translate Caliskan et al.'s English lists; _new and _india were
    # written beside their English versions, in a direction the authors do not state
    origin = "en" if translation in ("human", "machine", "mixed") and variant in ("human", "gt", "all") else None
    return Provenance(normalise(lang, folder), translation, origin, LICENCE, CITATION.format(folder=folder))


def folders(directory: Path, only: list[str] | None = None) -> list[Path]:
    """The WEATHub folders of `directory` (or of its `data/`), those matching a pattern of
    `only` (shell-style: 'de_*', '*_human'); a pattern matching none is an error."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such folder")
    root = directory / "data" if (directory / "data").is_dir() else directory
    found = sorted(p for p in root.iterdir() if p.is_dir() and FOLDER.match(p.name))
    if not found:
        raise UsageError(f"{root}: no WEATHub folders (<lang>_<variant>: de_human, de_gt, ..., en)")
    for pattern in only or []:
        if not any(fnmatchcase(p.name, pattern) for p in found):
            raise UsageError(f"--only {pattern!r} matches no folder of {root}")
    return [p for p in found if not only or any(fnmatchcase(p.name, pat) for pat in only)]


def import_dir(con, directory: Path, only: list[str] | None = None, *, limits: Limits = Limits()) -> list[dict]:
    """Every WEATHub file of the chosen folders as a word test with its language and
    provenance; every file is read and checked before anything is written, then all are
    stored in one transaction."""
    tests = [t for folder in folders(directory, only)
             for t in sentbias.parse_dir(folder, PREFIX.format(folder=folder.name), origin=provenance(folder.name),
                                         context="word", drop_repeats=True, limits=limits)]
    return sentbias.write_tests(con, tests)
