"""Word lists: human-edited TOML files, one table per list, validated on load.

    [flowers]
    category = "Flowers"
    description = "Flowers (Caliskan et al. 2017, C1)"
    source = "Caliskan et al. 2017, Table 1 row C1; Greenwald et al. 1998"
    words = ["aster", "clover", { word = "friend", kind = "count_noun", person = true }]

A list may set `kind`, `person` or `gender` for all its words; a word entry may set
`kind`, `person`, `gender`, `singular` and `plural`. Untagged words get the default
inference of `grammar.infer_kind` (May et al. 2019's generator).

Rules that derive a list from its source as published (Tan & Celis 2019's WinoBias
occupations): `split = true` makes each word of a multi-word entry a word of its own,
`lowercase = true` lower-cases them, `drop = [...]` leaves words out (to cut to size).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import StimkitError, grammar
from .paths import data_dir

LIST_KEYS = {"category", "description", "source", "words", "kind", "person", "gender", "split", "lowercase", "drop"}
WORD_KEYS = {"word", "kind", "person", "gender", "singular", "plural"}
GENDERS = {"male", "female"}
PRONOUNS = {
    "male": {"he": "he", "him": "him", "his": "his"},
    "female": {"he": "she", "him": "her", "his": "her"},
}


@dataclass(frozen=True)
class Word:
    text: str
    kind: str
    person: bool
    singular: str
    plural: str
    gender: str | None = None

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("text", "kind", "person", "singular", "plural", "gender")}


@dataclass(frozen=True)
class WordList:
    name: str
    category: str
    description: str
    source: str
    path: str
    words: tuple[Word, ...] = field(default=())


def _line_of(text: str, needle: str, after: int = 0) -> int:
    lines = text.splitlines()
    for i in range(after, len(lines)):
        if needle in lines[i]:
            return i + 1
    return after + 1 if after else 1


def load_lexicon(directory: Path | None = None) -> dict[str, frozenset[str]]:
    path = (directory or data_dir("wordlists")) / "_lexicon.toml"
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    return {k: frozenset(v) for k, v in raw.items()}


def _check_keys(table: dict, allowed: set[str], where: str) -> None:
    unknown = set(table) - allowed
    if unknown:
        raise StimkitError(f"{where}: unknown key {sorted(unknown)[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _resolve_word(entry, defaults: dict, lexicon, where) -> Word:
    if isinstance(entry, str):
        entry = {"word": entry}
    if not isinstance(entry, dict):
        raise StimkitError(f"{where}: a word must be a string or a table, got {entry!r}")
    _check_keys(entry, WORD_KEYS, f"{where}: word {entry.get('word')!r}")
    text = entry.get("word")
    if not isinstance(text, str) or not text.strip():
        raise StimkitError(f"{where}: empty word")
    text = text.strip()
    kind = entry.get("kind", defaults.get("kind")) or grammar.infer_kind(text, lexicon)
    if kind not in grammar.KINDS:
        raise StimkitError(f"{where}: unknown kind {kind!r} for word {text!r} (known: {', '.join(grammar.KINDS)})")
    person = entry.get("person", defaults.get("person"))
    if person is None:
        person = grammar.is_person(text)
    gender = entry.get("gender", defaults.get("gender"))
    if gender is not None and gender not in GENDERS:
        raise StimkitError(f"{where}: unknown gender {gender!r} for word {text!r} (known: male, female)")
    if "singular" in entry or "plural" in entry:
        singular, plural = entry.get("singular", text), entry.get("plural", text)
    elif text in lexicon.get("plural_count_noun", ()):
        singular, plural = grammar.singular(text), text
    else:
        singular, plural = text, grammar.plural(text)
    return Word(text, kind, bool(person), singular, plural, gender)


def _derive(entries: list, body: dict, where: str) -> list:
    """Apply the list's split / lowercase / drop rules to its plain-string words."""
    if not any(k in body for k in ("split", "lowercase", "drop")):
        return entries
    if not all(isinstance(e, str) for e in entries):
        raise StimkitError(f"{where}: split, lowercase and drop need plain string words")
    words = [w for e in entries for w in (e.split() if body.get("split") else [e.strip()])]
    words = [w.lower() for w in words] if body.get("lowercase") else words
    drop = body.get("drop", [])
    if not isinstance(drop, list) or not all(isinstance(d, str) for d in drop):
        raise StimkitError(f"{where}: `drop` must be a list of words")
    absent = [d for d in drop if d not in words]
    if absent:
        raise StimkitError(f"{where}: drop names {absent[0]!r}, which is not in the list")
    return [w for w in words if w not in drop]


def parse_file(path: Path, lexicon=None) -> list[WordList]:
    path = Path(path)
    lexicon = lexicon if lexicon is not None else load_lexicon()
    text = path.read_text(encoding="utf-8")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StimkitError(f"{path}: not valid TOML: {e}") from None
    lists = []
    for name, body in raw.items():
        header = _line_of(text, f"[{name}]")
        where = f"{path}:{header}: list {name!r}"
        if not isinstance(body, dict):
            raise StimkitError(f"{where}: expected a table with a `words` array")
        _check_keys(body, LIST_KEYS, where)
        entries = body.get("words")
        if not isinstance(entries, list) or not entries:
            raise StimkitError(f"{where}: empty word list (give a non-empty `words` array)")
        entries = _derive(entries, body, where)
        defaults = {k: body[k] for k in ("kind", "person", "gender") if k in body}
        words, seen = [], {}
        for entry in entries:
            label = entry if isinstance(entry, str) else (entry.get("word") if isinstance(entry, dict) else entry)
            line = _line_of(text, f'"{label}"', header - 1)
            word = _resolve_word(entry, defaults, lexicon, f"{path}:{line}: list {name!r}")
            if word.text in seen:
                raise StimkitError(f"{path}:{line}: list {name!r}: duplicate word {word.text!r}")
            seen[word.text] = line
            words.append(word)
        lists.append(
            WordList(
                name=name,
                category=body.get("category", name),
                description=body.get("description", ""),
                source=body.get("source", ""),
                path=str(path),
                words=tuple(words),
            )
        )
    return lists


def load_all(directory: Path | None = None) -> dict[str, WordList]:
    """Every list in every `*.toml` of the folder (files starting with `_` are not lists)."""
    directory = Path(directory or data_dir("wordlists"))
    if not directory.is_dir():
        raise StimkitError(f"{directory}: no such word-list folder")
    lexicon = load_lexicon(directory) if (directory / "_lexicon.toml").exists() else load_lexicon()
    found: dict[str, WordList] = {}
    for path in sorted(directory.glob("*.toml")):
        if path.name.startswith("_"):
            continue
        for wl in parse_file(path, lexicon):
            if wl.name in found:
                raise StimkitError(f"{path}: list {wl.name!r} is defined twice (also in {found[wl.name].path})")
            found[wl.name] = wl
    return found
