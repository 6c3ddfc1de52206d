"""What a template set is, for choosing one: its `_set.toml` (a description line) and the list
of every set, built-in and yours, that `stimkit templates` prints. Light on purpose (no Jinja):
a listing renders nothing.

    # templates/word_first/_set.toml
    description = "word-order perturbation: the word first (\"The X is here.\")"

The file is metadata: it renders nothing, so it is not part of a set's version, and a set of
yours that differs from a built-in one only in it does not replace it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from ..errors import InputError, UsageError
from ..paths import data_dir
from .grammar import refuse_markers
from .inputs import inside, read_text

SET_FILE = "_set.toml"
SET_KEYS = {"description": "one line: what the set is, or what it changes against the set it perturbs",
            "language": "the BCP 47 tag of the set's own words (default en); `*` for a set with none, which serves a list "
                        "in any language",
            "grammar": "inflect (the default) or may2019 (the published SEAT generator's rules, slips included): how the "
                       "English filters make plurals, singulars and articles; never inherited",
            "source": "where the set comes from (a citation)",
            "slots": "tables [slots.<name>] with `lists` and `optional`: a template with several slots (stimuli.slots)",
            "constraints": "[[constraints]] with `require` (a Jinja expression over the slots), `why`, `files`",
            "phrases": "[phrases] name = a Jinja template rendered once per combination of the slots",
            "perturb": "[perturb] your rewording rules, hand-written paraphrases and the family's bound (stimuli.perturb)"}
STRING_KEYS = ("description", "language", "grammar", "source")  # the rest: the slots' tables, read by stimuli.slots


def info(folder: Path) -> dict:
    """A set folder's `_set.toml` as {key: value} ({} without one); an unknown key, or a
    string key whose value is not a string, is an error naming the file (the slots' tables are
    checked by stimuli.slots.declaration)."""
    path = Path(folder) / SET_FILE
    if not path.exists():
        return {}
    inside(path, Path(folder), "`_set.toml` file")
    text = read_text(path)
    refuse_markers(text, str(path))
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: not valid TOML: {e}") from None
    _no_markers(raw, path, "")
    unknown = sorted(set(raw) - set(SET_KEYS))
    if unknown:
        raise InputError(f"{path}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(SET_KEYS))})")
    bad = next((k for k in STRING_KEYS if k in raw and not isinstance(raw[k], str)), None)
    if bad is not None:
        raise InputError(f"{path}: `{bad}` must be a string")
    return raw


def _no_markers(value, path: Path, key: str) -> None:
    """Every string of the file, as TOML decoded it ("\\ue002" is the marker itself), free of
    the characters that mark spans (grammar.refuse_markers)."""
    if isinstance(value, str):
        refuse_markers(value, f"{path}: `{key}`")
    elif isinstance(value, dict):
        for k, v in value.items():
            _no_markers(k, path, key)
            _no_markers(v, path, f"{key}.{k}" if key else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _no_markers(v, path, f"{key}[{i}]")


def listing(user_root: Path | None = None) -> list[dict]:
    """Every template set: yours (`user_root`) first, then the built-in ones, each with its
    description, the set it inherits from (`_base`), its template files and where it comes from
    (yours replacing a built-in set of the same name says so)."""
    builtin = data_dir("templates")
    roots = [(Path(user_root), "yours")] if user_root is not None else []
    if user_root is not None and not Path(user_root).is_dir():
        raise UsageError(f"{user_root}: no such template folder")
    rows, seen = [], set()
    for root, source in [*roots, (builtin, "built-in")]:
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
            if folder.name in seen:
                continue
            seen.add(folder.name)
            base = folder / "_base"
            rows.append({"set": folder.name,
                         "description": info(folder).get("description", ""),
                         "inherits": read_text(base).strip() if base.is_file() else "",
                         "files": " ".join(sorted(p.stem for p in folder.glob("*.j2") if not p.name.startswith("_"))),
                         "source": source if source == "built-in" or not (builtin / folder.name).is_dir()
                         else "yours (replaces the built-in set)"})
    return rows
