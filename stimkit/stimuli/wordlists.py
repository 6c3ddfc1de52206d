"""Word lists: human-edited TOML files, one table per list, validated on load.

    [flowers]
    category = "Flowers"
    description = "Flowers (Caliskan et al. 2017, C1)"
    source = "Caliskan et al. 2017, Table 1 row C1; Greenwald et al. 1998"
    words = ["aster", "clover", { word = "friend", kind = "count_noun", person = true }]

A list may set `kind`, `person`, `gender` or `grammatical_gender` for all its words; a word
entry may set `kind`, `person`, `gender`, `grammatical_gender`, `singular`, `plural` and `tags`
(a table of strings: where the word came from, such as HolisticBias's axis, bucket and
preference; templates read them as `descriptor.tags.axis`). Untagged words of an English list get the default inference of `grammar.infer_kind` (May et
al. 2019's generator).

Language and provenance (stimuli.language): `language` (BCP 47, default "en"), `translation`
(original | human | machine | mixed), `translated_from`, `licence`, beside `source`:

    [blumen]
    language = "de"
    translation = "human"
    translated_from = "en"
    licence = "CC-BY-4.0"
    source = "WEATHub (Mukherjee et al. 2023), de_human/weat1"
    words = [{ word = "Rose", grammatical_gender = "feminine", plural = "Rosen" }, ...]

English grammar is English: in a list in another language, a word's kind is its own or the
list's (else count_noun), `person` is false unless given, and its plural is the `plural` it
gives (none otherwise; a template that uses it names the word). `gender` is natural gender
(the pronouns he/she of the templates); `grammatical_gender` is the word's grammatical
gender (masculine, feminine, neuter, common), which `check` compares between X and Y.

Rules that derive a list from its source as published (Tan & Celis 2019's WinoBias
occupations): `split = true` makes each word of a multi-word entry a word of its own,
`lowercase = true` lower-cases them, `drop = [...]` leaves words out (to cut to size).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import re
import tomllib
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .. import StimkitError
from ..errors import UsageError
from . import grammar
from .inputs import check_name, inside, read_text
from .language import GRAMMATICAL_GENDERS, Provenance, inflected
from ..paths import data_dir

LIST_KEYS = {"category", "description", "source", "words", "kind", "person", "gender", "split", "lowercase", "drop",
             "grammatical_gender", *Provenance.KEYS}
WORD_KEYS = {"word", "kind", "person", "gender", "singular", "plural", "grammatical_gender", "tags"}
_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
GENDERS = {"male", "female"}
# Unicode categories refused in words: controls, invisible format characters (zero-width
# space and joiners, direction marks, soft hyphen), line and paragraph separators, unassigned.
BAD_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cn", "Cs"}
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
    plural: str | None            # None: a list outside English that gives no plural
    gender: str | None = None
    grammatical_gender: str | None = None
    forms_given: bool = False  # the list gave `singular`/`plural` itself: every grammar keeps them
    # (not in as_dict: a set's version covers the forms rendered, never how they were found)
    tags: tuple[tuple[str, str], ...] = ()   # sorted (key, value) pairs

    def as_dict(self) -> dict:
        """What a set version hashes of the word (grammatical gender and tags only where given,
        so every list hashed before they existed keeps its version)."""
        out = {k: getattr(self, k) for k in ("text", "kind", "person", "singular", "plural", "gender")}
        if self.grammatical_gender:
            out["grammatical_gender"] = self.grammatical_gender
        if self.tags:
            out["tags"] = dict(self.tags)
        return out


@dataclass(frozen=True)
class WordList:
    name: str
    category: str
    description: str
    source: str
    path: str
    words: tuple[Word, ...] = field(default=())
    line: int = 1
    overrides: str | None = None  # `file:line` of the built-in list this user list replaces (--override)
    provenance: Provenance = Provenance()  # its language, translation, licence and source


_STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'")


class _Lines:
    """Line numbers of a file's entries. Every one-line string literal is indexed once by
    its value, so finding a word's next occurrence is a lookup, not a scan: linear in the
    file, and a repeated word is found at its own (second) occurrence."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.strings: dict[str, list[int]] = defaultdict(list)
        for m in _STRING.finditer(text):
            raw = m.group(0)
            self.strings[_unquote(raw)].append(m.start())

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def header(self, name: str) -> int:
        """Offset of the table header `[name]` (0 if not found)."""
        found = [i for n in (f"[{name}]", f"[{json.dumps(name)}]", f"['{name}']") if (i := self.text.find(n)) >= 0]
        return min(found, default=0)

    def next_string(self, value, start: int) -> int | None:
        """Offset of the first string literal equal to `value` at or after `start`."""
        offsets = self.strings.get(value) if isinstance(value, str) else None
        i = bisect.bisect_left(offsets, start) if offsets else 0
        return offsets[i] if offsets and i < len(offsets) else None


def _unquote(raw: str) -> str:
    if raw[0] == "'" or "\\" not in raw:
        return raw[1:-1]
    try:  # TOML basic-string escapes are JSON's, bar \U and \e: good enough to find a line
        return json.loads(raw)
    except ValueError:
        return raw[1:-1]


def load_lexicon(directory: Path | None = None) -> dict[str, frozenset[str]]:
    path = (directory or data_dir("wordlists")) / "_lexicon.toml"
    try:
        raw = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as e:
        raise StimkitError(f"{path}: not valid TOML: {e}") from None
    for kind, words in raw.items():
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise StimkitError(f"{path}: `{kind}` must be a list of words")
    return {k: frozenset(unicodedata.normalize("NFC", w) for w in v) for k, v in raw.items()}


def _check_keys(table: dict, allowed: set[str], where: str) -> None:
    unknown = set(table) - allowed
    if unknown:
        raise StimkitError(f"{where}: unknown key {sorted(unknown)[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _resolve_word(entry, defaults: dict, lexicon, where, language: str = "en") -> Word:
    if isinstance(entry, str):
        entry = {"word": entry}
    if not isinstance(entry, dict):
        raise StimkitError(f"{where}: a word must be a string or a table, got {entry!r}")
    _check_keys(entry, WORD_KEYS, f"{where}: word {entry.get('word')!r}")
    text = entry.get("word")
    if not isinstance(text, str) or not text.strip():
        raise StimkitError(f"{where}: empty word")
    text = clean_text(text.strip(), where, "word")
    kind = entry.get("kind", defaults.get("kind"))
    english = inflected(language)
    if kind is None and not english:
        kind = "count_noun"  # English's inference (capitals, lexicon) says nothing of another language
    if kind is None and " " in text and grammar.infer_kind(text, lexicon) == "count_noun" \
            and not text.endswith("American") and not any(text in words for words in lexicon.values()):
        # "data scientist" is not "a thing" because nothing said otherwise: ask, do not guess
        raise StimkitError(f"{where}: the multi-word item {text!r} has no kind the lexicon knows: write it as "
                           f"{{ word = {text!r}, kind = \"count_noun\", person = true }} (kinds: {', '.join(grammar.KINDS)}), "
                           "or give the list a `kind`")
    kind = kind or grammar.infer_kind(text, lexicon)
    if not isinstance(kind, str) or kind not in grammar.KINDS:
        raise StimkitError(f"{where}: unknown kind {kind!r} for word {text!r} (known: {', '.join(grammar.KINDS)})")
    person = entry.get("person", defaults.get("person"))
    if person is None:
        person = grammar.is_person(text) if english else False
    if not isinstance(person, bool):
        raise StimkitError(f"{where}: `person` must be true or false for word {text!r}, not {person!r}")
    gender = entry.get("gender", defaults.get("gender"))
    if gender is not None and (not isinstance(gender, str) or gender not in GENDERS):
        raise StimkitError(f"{where}: unknown gender {gender!r} for word {text!r} (known: male, female; "
                           "grammatical gender is `grammatical_gender`)")
    genus = entry.get("grammatical_gender", defaults.get("grammatical_gender"))
    if genus is not None and genus not in GRAMMATICAL_GENDERS:
        raise StimkitError(f"{where}: unknown grammatical_gender {genus!r} for word {text!r} "
                           f"(known: {', '.join(GRAMMATICAL_GENDERS)})")
    if "singular" in entry or "plural" in entry:
        singular, plural = entry.get("singular", text), entry.get("plural", text)
        for form in (singular, plural):
            if not isinstance(form, str) or not form.strip():
                raise StimkitError(f"{where}: word {text!r}: singular and plural must be non-empty strings, not {form!r}")
        singular, plural = clean_text(singular, where, "form"), clean_text(plural, where, "form")
    elif not english:  # the forms a list in another language gives, or none
        singular, plural = text, None
    elif text in lexicon.get("plural_count_noun", ()):
        singular, plural = grammar.singular(text), text
    else:
        singular, plural = text, grammar.plural(text)
    return Word(text, kind, person, singular, plural, gender, genus,
                forms_given="singular" in entry or "plural" in entry, tags=_tags(entry.get("tags"), text, where))


def fold(text: str) -> str:
    """The key under which two words are one: Unicode compatibility forms and case folded
    (NFKC of the case-folded NFKC, Unicode's caseless match), so "Senior" and "senior", or
    "ﬁle" and "file", are the same word."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def _tags(tags, text: str, where: str) -> tuple[tuple[str, str], ...]:
    if tags is None:
        return ()
    if not isinstance(tags, dict) or not all(isinstance(k, str) and _TAG.fullmatch(k) and isinstance(v, str)
                                             for k, v in tags.items()):
        raise StimkitError(f"{where}: word {text!r}: `tags` must be a table of names to strings "
                           "(e.g. tags = {{ axis = \"age\" }})")
    return tuple(sorted((k, clean_text(v, where, "tag")) for k, v in tags.items()))


def clean_text(text: str, where: str, what: str) -> str:
    """`text` in Unicode NFC, or a one-line error: control and invisible format characters
    (a zero-width space, a direction mark) make two words that look the same differ; the
    private markers would corrupt the word's span. The zero-width joiner and non-joiner are
    spelling between two letters of a script that shapes its letters (Devanagari, Telugu,
    Persian: "अ\u200dॅन"), and are kept there."""
    bad = next((c for i, c in enumerate(text) if (unicodedata.category(c) in BAD_CATEGORIES and not _joins(text, i))
                or grammar.is_marker(c)), None)
    if bad is not None:
        name = unicodedata.name(bad, "control character").lower()
        raise StimkitError(f"{where}: {what} {text!r} holds the character U+{ord(bad):04X} ({name})")
    return unicodedata.normalize("NFC", text)


def _joins(text: str, i: int) -> bool:
    """Whether text[i] is a zero-width (non-)joiner between two letters or marks of a script
    other than Latin, where it changes how the letters join (and so is seen)."""
    def shaped(c: str) -> bool:
        return unicodedata.category(c)[0] in "LM" and not unicodedata.name(c, "").startswith("LATIN")

    return text[i] in ("\u200c", "\u200d") and 0 < i < len(text) - 1 and shaped(text[i - 1]) and shaped(text[i + 1])


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
    text = read_text(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StimkitError(f"{path}: not valid TOML: {e}") from None
    lines = _Lines(text)
    lists = []
    for name, body in raw.items():
        at = lines.header(name)
        header = lines.line(at)
        where = f"{path}:{header}: list {name!r}"
        check_name(name, "word list", f"{path}:{header}", forbid="@=*")  # set names: [slot=]list@templates
        if not isinstance(body, dict):
            raise StimkitError(f"{where}: expected a table with a `words` array")
        _check_keys(body, LIST_KEYS, where)
        entries = body.get("words")
        if not isinstance(entries, list) or not entries:
            raise StimkitError(f"{where}: empty word list (give a non-empty `words` array)")
        for key in ("category", "description", "source"):
            if not isinstance(body.get(key, ""), str):
                raise StimkitError(f"{where}: `{key}` must be a string")
        entries = _derive(entries, body, where)
        provenance = Provenance.parse(body, where, body.get("source", ""))
        defaults = {k: body[k] for k in ("kind", "person", "gender", "grammatical_gender") if k in body}
        words, seen, folded = [], {}, {}
        for entry in entries:
            label = entry if isinstance(entry, str) else (entry.get("word") if isinstance(entry, dict) else entry)
            found = lines.next_string(label, at)
            at = at if found is None else found + 1
            line = lines.line(at if found is None else found)
            word = _resolve_word(entry, defaults, lexicon, f"{path}:{line}: list {name!r}", provenance.language)
            if word.text in seen:
                raise StimkitError(f"{path}:{line}: list {name!r}: duplicate word {word.text!r} (first at line {seen[word.text]})")
            first = folded.get(fold(word.text))
            if first is not None:  # "Senior" and "senior": one GloVe vector, counted twice
                raise StimkitError(f"{path}:{line}: list {name!r}: duplicate word {word.text!r}: the same as {first!r} "
                                   f"(line {seen[first]}) after case folding and Unicode normalisation")
            seen[word.text] = line
            folded[fold(word.text)] = word.text
            words.append(word)
        lists.append(
            WordList(
                name=name,
                category=body.get("category", name),
                description=body.get("description", ""),
                source=body.get("source", ""),
                path=str(path),
                words=tuple(words),
                line=header,
                provenance=provenance,
            )
        )
    return lists


def load_all(directory: Path | None = None) -> dict[str, WordList]:
    """Every list in every `*.toml` of the folder (files starting with `_` are not lists)."""
    directory = Path(directory or data_dir("wordlists"))
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such word-list folder")  # a mistyped flag, as a missing catalog folder
    for path in directory.glob("*.toml"):
        inside(path, directory, "word-list file")
    lexicon = load_lexicon(directory) if (directory / "_lexicon.toml").exists() else load_lexicon()
    found: dict[str, WordList] = {}
    files = [p for p in sorted(directory.glob("*.toml")) if not p.name.startswith("_")]
    if not files:
        raise StimkitError(f"{directory}: no word-list files (*.toml) in this folder")
    for path in files:
        for wl in parse_file(path, lexicon):
            if wl.name in found:
                raise StimkitError(f"{path}: list {wl.name!r} is defined twice (also in {found[wl.name].path})")
            found[wl.name] = wl
    return found


def merge(builtin: dict[str, WordList], user: dict[str, WordList], override: bool = False) -> dict[str, WordList]:
    """The built-in lists plus the user's. A user list that would replace a built-in list
    of the same name with other words is refused unless `override`; then it is marked
    (`WordList.overrides`) so the sets made from it record it."""
    merged = dict(builtin)
    for name, wl in user.items():
        base = builtin.get(name)
        if base is not None and (base.category, base.words, base.provenance.hashed()) != (wl.category, wl.words, wl.provenance.hashed()):
            if not override:
                raise UsageError(f"{wl.path}:{wl.line}: list {name!r} would replace the built-in list of that name "
                                   f"({base.path}:{base.line}); rename it, or pass --override (a study file: override = true)")
            wl = dataclasses.replace(wl, overrides=f"{base.path}:{base.line}")
        merged[name] = wl
    return merged
