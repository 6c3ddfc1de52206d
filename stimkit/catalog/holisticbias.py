"""HolisticBias as published (Smith, Hall, Kambadur, Presani & Williams 2022, EMNLP; v1.1 of
facebookresearch/ResponsibleNLP, CC BY-SA 4.0): its four JSON files as word lists and a
multi-slot template set named `holisticbias` (stimuli.slots).

    descriptors.json             -> a list per axis and bucket, `hb_<axis>_<bucket>`: each
                                    descriptor with its axis, bucket, reviewer preference and
                                    article as tags, its gender where it has one
    standalone_noun_phrases.json -> a list per axis, `hb_<axis>_phrases`: "a {noun} who uses a
                                    wheelchair" (the words around the noun) and "a wheelchair
                                    user" (a phrase with its own noun)
    nouns.json                   -> `hb_nouns`: 32 nouns with plural and gender group
    sentence_templates.json      -> `holisticbias/default.j2` (17 templates) and
                                    `holisticbias/must_be_noun.j2` (the 9 that need a noun)

The set `descriptor=*@holisticbias` is the dataset's own product (its generator's rules:
a noun alone, a descriptor alone, a descriptor with each noun of its gender, each
standalone phrase), 566,608 sentences from v1.1: the generator's 566,625 rows less the
17 of one phrase the file lists twice ("a Rasta", plurals "Rastas" and "Rastafari"; a word
list holds a word once, so the first is kept and the import says so).

The conversion is written as files into a folder the user names (`wordlists/`,
`templates/holisticbias/`, `SOURCE.md`): plain inputs like any study's, readable and
editable, under the user's version control. The store then holds what they generate: set
versions are content hashes of those files, so a version is immutable, and importing the
same JSON again writes the same files and makes no new version.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, UsageError
from ..stimuli.inputs import read_text
from .sentbias import replace_file

FILES = ("descriptors.json", "nouns.json", "sentence_templates.json", "standalone_noun_phrases.json")
TEMPLATE_SET = "holisticbias"
NOUNS = "hb_nouns"
CITATION = ("Smith, Hall, Kambadur, Presani & Williams 2022, \"I'm sorry to hear that: Finding New Biases in "
            "Language Models with a Holistic Descriptor Dataset\" (EMNLP 2022)")
LICENSE = "CC BY-SA 4.0"
_NAME = re.compile(r"[a-z0-9_]+")


@dataclass
class Converted:
    files: dict[str, str]                          # path inside the output folder -> text
    notes: list[str] = field(default_factory=list)  # what the conversion changed, one line each
    counts: dict[str, int] = field(default_factory=dict)


def article(text: str) -> str:
    """HolisticBias's indefinite article: 'an' before a vowel letter, else 'a' (its generator's
    rule, not stimkit's grammar: "an European", "an upper-class")."""
    return "an" if text[:1].lower() in "aeiou" else "a"


def _load(src: Path) -> dict:
    src = Path(src)
    if not src.is_dir():
        raise UsageError(f"{src}: no such folder (it should hold {', '.join(FILES)})")
    data = {}
    for name in FILES:
        path = src / name
        if not path.is_file():
            raise InputError(f"{path}: missing (a HolisticBias folder holds {', '.join(FILES)})")
        try:
            data[name] = json.loads(read_text(path))
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None
        _check_schema(name, data[name], path)
    return data


# What each file holds (HolisticBias v1.1), as types: a file of another shape is refused with
# its path and the item, before anything is converted ("Deaf" as a bucket is not four descriptors).
def _schemas() -> dict:
    from typing import Optional, Union

    from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr, TypeAdapter

    class Entry(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

    class Descriptor(Entry):
        descriptor: StrictStr
        gender: Optional[StrictStr] = None
        preference: Optional[StrictStr] = None
        article: Optional[StrictStr] = None

    class Phrase(Entry):
        noun_phrase: StrictStr
        plural_noun_phrase: Optional[StrictStr] = None
        preference: Optional[StrictStr] = None

    class Flags(Entry):
        must_be_noun: StrictBool = False
        first_turn_only: StrictBool = False

    return {
        "descriptors.json": (TypeAdapter(dict[str, dict[str, list[Union[StrictStr, Descriptor]]]]),
                             '{axis: {bucket: [descriptor, or {"descriptor", "gender", "preference", "article"}]}}'),
        "standalone_noun_phrases.json": (TypeAdapter(dict[str, list[Union[StrictStr, Phrase]]]),
                                         '{axis: [phrase, or {"noun_phrase", "plural_noun_phrase", "preference"}]}'),
        "nouns.json": (TypeAdapter(dict[str, list[tuple[StrictStr, StrictStr]]]), "{group: [[singular, plural]]}"),
        "sentence_templates.json": (TypeAdapter(dict[str, Flags]),
                                    '{template: {"must_be_noun": true/false, "first_turn_only": true/false}}'),
    }


_SCHEMAS: dict = {}


def _check_schema(name: str, value, path: Path) -> None:
    """`value` (the JSON of file `name`) has the file's shape, or one line naming the file, the
    item (as a JSON path) and what was expected there."""
    from pydantic import ValidationError

    if not _SCHEMAS:
        _SCHEMAS.update(_schemas())
    adapter, shape = _SCHEMAS[name]
    try:
        adapter.validate_python(value)
    except ValidationError as e:
        errors = e.errors()
        # a union (a string or an object) fails on each member: report the deepest, member names left out
        first = max(errors, key=lambda err: len(err["loc"]))
        members = ("str", "Descriptor", "Phrase")  # the member of a list item's union pydantic tried
        loc = [p for i, p in enumerate(first["loc"]) if not (p in members and i and isinstance(first["loc"][i - 1], int))]
        item = "".join(f"[{p}]" if isinstance(p, int) else f"[{json.dumps(p, ensure_ascii=False)}]" for p in loc)
        got = json.dumps(first["input"], ensure_ascii=False) if not isinstance(first["input"], (dict, list)) \
            else type(first["input"]).__name__.replace("dict", "an object").replace("list", "a list")
        raise InputError(f"{path}: {'item ' + item if item else 'the file'}: {first['msg'].lower()} (found "
                         f"{got[:60]}); expected {shape}") from None


def _q(value) -> str:
    """A TOML value: strings as JSON writes them (a valid TOML basic string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_q(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_q(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _list_name(*parts: str, where: str) -> str:
    name = "_".join(("hb",) + parts)
    if not _NAME.fullmatch(name):
        raise InputError(f"{where}: {name!r} is not a usable list name (lower-case letters, digits, _)")
    return name


def _table(name: str, category: str, description: str, source: str, words: list[dict]) -> str:
    lines = [f"[{name}]", f"category = {_q(category)}", f"description = {_q(description)}", f"source = {_q(source)}",
             "words = ["] + [f"  {_q(w)}," for w in words] + ["]", ""]
    return "\n".join(lines)


def convert(src: Path) -> Converted:
    """The word lists, template set and SOURCE.md for the HolisticBias files in `src`."""
    src = Path(src)
    data = _load(src)
    digest = {n: hashlib.sha256((src / n).read_bytes()).hexdigest()[:16] for n in FILES}
    out = Converted({})
    where = {n: str(src / n) for n in FILES}
    tables, lists = [], []

    descriptors = data["descriptors.json"]
    if not isinstance(descriptors, dict):
        raise InputError(f"{where['descriptors.json']}: expected axes, each with buckets of descriptors")
    n_descriptors = 0
    for axis, buckets in descriptors.items():
        if not isinstance(buckets, dict):
            raise InputError(f"{where['descriptors.json']}: axis {axis!r}: expected buckets of descriptors")
        for bucket, entries in buckets.items():
            name = _list_name(axis, bucket, where=f"{where['descriptors.json']}: axis {axis!r}, bucket {bucket!r}")
            words = []
            for entry in entries:
                entry = {"descriptor": entry} if isinstance(entry, str) else entry
                if not isinstance(entry, dict) or not isinstance(entry.get("descriptor"), str):
                    raise InputError(f"{where['descriptors.json']}: axis {axis!r}, bucket {bucket!r}: "
                                     f"a descriptor must be a string or have one, not {entry!r}")
                text = entry["descriptor"]
                tags = {"axis": axis, "bucket": bucket, "form": "descriptor",
                        "article": entry.get("article", article(text))}
                if "preference" in entry:
                    tags["preference"] = entry["preference"]
                word = {"word": text, "kind": "adjective", "person": False}
                if entry.get("gender"):
                    word["gender"] = entry["gender"]
                word["tags"] = tags
                words.append(word)
            n_descriptors += len(words)
            tables.append(_table(name, f"HolisticBias {axis}: {bucket}",
                                 f"HolisticBias v1.1 descriptors, axis {axis}, bucket {bucket}",
                                 f"{CITATION}; descriptors.json {digest['descriptors.json']}; {LICENSE}", words))
            lists.append(name)

    phrases = data["standalone_noun_phrases.json"]
    n_phrases = 0
    for axis, entries in phrases.items():
        name = _list_name(axis, "phrases", where=f"{where['standalone_noun_phrases.json']}: axis {axis!r}")
        words, seen = [], {}
        for entry in entries:
            entry = {"noun_phrase": entry} if isinstance(entry, str) else entry
            phrase = entry.get("noun_phrase") if isinstance(entry, dict) else None
            if not isinstance(phrase, str):
                raise InputError(f"{where['standalone_noun_phrases.json']}: axis {axis!r}: not a noun phrase: {entry!r}")
            plural = entry.get("plural_noun_phrase", phrase)
            n_phrases += 1
            if "{noun}" in phrase:  # the words around a noun: "a {noun} who uses a wheelchair"
                for form in (phrase, plural):
                    if not form.startswith("{article} {noun} "):
                        raise InputError(f"{where['standalone_noun_phrases.json']}: axis {axis!r}: {form!r} does not "
                                         "start with '{article} {noun} '")
                text = phrase.format(article="", noun="").lstrip()
                word = {"word": text, "kind": "adjective", "person": False,
                        "plural": plural.format(article="", noun="").lstrip(),
                        "tags": {"axis": axis, "form": "noun_phrase"}}
            else:  # a phrase with its own noun: "a wheelchair user"
                text = phrase
                word = {"word": text, "kind": "count_noun", "person": True, "singular": phrase, "plural": plural,
                        "tags": {"axis": axis, "form": "fixed_phrase"}}
            if "preference" in entry:
                word["tags"]["preference"] = entry["preference"]
            if text in seen:
                out.notes.append(f"{where['standalone_noun_phrases.json']}: axis {axis!r}: {phrase!r} is listed twice "
                                 f"(plurals {seen[text]!r} and {plural!r}): kept the first")
                continue
            seen[text] = plural
            words.append(word)
        tables.append(_table(name, f"HolisticBias {axis}: standalone noun phrases",
                             f"HolisticBias v1.1 standalone noun phrases, axis {axis}",
                             f"{CITATION}; standalone_noun_phrases.json {digest['standalone_noun_phrases.json']}; {LICENSE}",
                             words))
        lists.append(name)

    nouns = []
    for group, pairs in data["nouns.json"].items():
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
                raise InputError(f"{where['nouns.json']}: group {group!r}: expected [singular, plural], not {pair!r}")
            word = {"word": pair[0], "kind": "count_noun", "person": True, "plural": pair[1]}
            if group in ("female", "male"):
                word["gender"] = group
            word["tags"] = {"group": group, "article": article(pair[0])}
            nouns.append(word)
    tables.append(_table(NOUNS, "HolisticBias nouns", "HolisticBias v1.1 nouns (female, male, neutral)",
                         f"{CITATION}; nouns.json {digest['nouns.json']}; {LICENSE}", nouns))

    templates = data["sentence_templates.json"]
    lines = {"default": [], "must_be_noun": []}
    for text, flags in templates.items():
        if not isinstance(flags, dict):
            raise InputError(f"{where['sentence_templates.json']}: template {text!r}: flags must be an object")
        if re.search(r"\{[{%#]|[}%#]\}", text) or ("{noun_phrase}" in text) == ("{plural_noun_phrase}" in text):
            raise InputError(f"{where['sentence_templates.json']}: template {text!r}: expected one {{noun_phrase}} or "
                             "{plural_noun_phrase} and no Jinja syntax")
        line = text.replace("{noun_phrase}", "{{ np }}").replace("{plural_noun_phrase}", "{{ nps }}")
        if flags.get("first_turn_only"):
            line += "  {# first_turn_only #}"
        lines["must_be_noun" if flags.get("must_be_noun") else "default"].append(line)

    # no path here: a set's version covers these files, and must not depend on where the JSON was read
    header = (f"# HolisticBias v1.1 ({CITATION}), {LICENSE}.\n# Written by `stimkit import holisticbias` from "
              + ", ".join(f"{n} (sha256 {d}...)" for n, d in digest.items()) + "; see SOURCE.md.\n")
    out.files["wordlists/holisticbias.toml"] = header + "\n" + "\n".join(tables)
    folder = f"templates/{TEMPLATE_SET}"
    out.files[f"{folder}/_set.toml"] = SET_TOML.format(header=header, lists=_q(lists), nouns=_q([NOUNS]))
    out.files[f"{folder}/_np.j2"] = NOUN_PHRASES
    out.files[f"{folder}/default.j2"] = ("{# HolisticBias sentence templates (sentence_templates.json); np and nps: "
                                         "the noun phrase, _set.toml #}\n" + "\n".join(lines["default"]) + "\n")
    out.files[f"{folder}/must_be_noun.j2"] = ("{# the templates HolisticBias marks must_be_noun #}\n"
                                              + "\n".join(lines["must_be_noun"]) + "\n")
    out.files["SOURCE.md"] = SOURCE_MD.format(citation=CITATION, license=LICENSE, src=src,
                                              digests="\n".join(f"- `{n}`: sha256 {d}..." for n, d in digest.items()))
    out.counts = {"descriptors": n_descriptors, "standalone phrases": n_phrases, "nouns": len(nouns),
                  "templates": len(templates), "descriptor lists": len(lists) - len(phrases)}
    return out


def write(folder: Path, converted: Converted, force: bool = False) -> list[Path]:
    """The converted files under `folder`. A folder holding other files is refused unless
    `force` (then files of the same name are replaced, each written beside its target and
    renamed over it, so a link is replaced, never followed)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    root = folder.resolve()
    for rel in converted.files:  # where each file really goes, links followed: nowhere outside unless forced
        real = (folder / rel).parent.resolve() / Path(rel).name
        if not real.is_relative_to(root) and not force:
            raise UsageError(f"{folder / rel}: leads outside {folder} (to {real}); remove the link, or pass --force "
                             "to write there")
    if folder.is_dir() and not force:
        present = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        differing = [p for p in present if p not in converted.files or (folder / p).read_bytes() !=
                     converted.files[p].encode()]
        if differing:
            raise UsageError(f"{folder}: holds other files ({differing[0]}, ...); choose an empty folder or pass --force")
    written = []
    try:
        for rel, text in converted.files.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_file() and not path.is_symlink() and path.read_bytes() == text.encode():
                written.append(path)
                continue
            replace_file(path, text)
            written.append(path)
    except OSError as e:
        raise InputError(f"{e.filename or folder}: cannot write: {e.strerror or e}") from None
    return written


def import_files(src: Path, folder: Path, force: bool = False) -> dict:
    """convert `src` and write it into `folder`: the files written, the counts read and the
    conversion's notes (what `stimkit import holisticbias --no-generate` reports)."""
    converted = convert(Path(src))
    return {"files": write(Path(folder), converted, force), "counts": converted.counts, "notes": converted.notes}


SET_TOML = """{header}
description = "HolisticBias v1.1: descriptors x nouns x 26 sentence templates, as its generator combines them"

# The descriptor: every descriptor bucket and every axis's standalone noun phrases. Optional:
# a noun alone ("I'm a woman.") is a HolisticBias sentence too.
[slots.descriptor]
lists = {lists}
optional = true

# The noun. Optional: a descriptor alone ("I'm Deaf.") and the phrases with their own noun
# ("I'm a wheelchair user.").
[slots.noun]
lists = {nouns}
optional = true

# The noun phrase, singular and plural, built once per descriptor and noun (_np.j2)
[phrases]
np = '{{% from "holisticbias/_np.j2" import np %}}{{{{ np(descriptor, noun) }}}}'
nps = '{{% from "holisticbias/_np.j2" import nps %}}{{{{ nps(descriptor, noun) }}}}'

[[constraints]]
why = "a descriptor with a gender (descriptors.json `gender`) fits only that gender's nouns"
require = "not (descriptor.gender and noun) or noun.gender == descriptor.gender"

[[constraints]]
why = "templates marked must_be_noun (sentence_templates.json) need a noun"
files = ["must_be_noun"]
require = "noun"

[[constraints]]
why = "every sentence names someone: a descriptor, a noun or both"
require = "descriptor or noun"

[[constraints]]
why = "a phrase with its own noun ('a wheelchair user') takes no other; one around a noun ('a {{noun}} who uses a wheelchair') needs one"
require = "not descriptor or descriptor.tags.form == 'descriptor' or (descriptor.tags.form == 'noun_phrase') == (noun != '')"
"""

NOUN_PHRASES = """{# HolisticBias's noun phrases, as its generator builds them: "{article} {descriptor} {noun}",
   a descriptor alone, a noun alone, a standalone phrase around a noun or with its own.
   np: singular ("a Deaf grandmother"); nps: plural ("Deaf grandmothers"). #}
{% macro np(descriptor, noun) -%}
{%- if not descriptor -%}{{ noun.tags.article }} {{ noun }}
{%- elif descriptor.tags.form == "fixed_phrase" -%}{{ descriptor }}
{%- elif descriptor.tags.form == "noun_phrase" -%}{{ noun.tags.article }} {{ noun }} {{ descriptor }}
{%- elif noun -%}{{ descriptor.tags.article }} {{ descriptor }} {{ noun }}
{%- else -%}{{ descriptor }}
{%- endif -%}
{%- endmacro %}
{% macro nps(descriptor, noun) -%}
{%- if not descriptor -%}{{ noun.plural }}
{%- elif descriptor.tags.form == "fixed_phrase" -%}{{ descriptor.plural }}
{%- elif descriptor.tags.form == "noun_phrase" -%}{{ noun.plural }} {{ descriptor.plural }}
{%- elif noun -%}{{ descriptor }} {{ noun.plural }}
{%- else -%}{{ descriptor }}
{%- endif -%}
{%- endmacro %}
"""

SOURCE_MD = """# HolisticBias v1.1, converted by stimkit

- Source: {citation}; the files `descriptors.json`, `nouns.json`, `sentence_templates.json` and
  `standalone_noun_phrases.json` of facebookresearch/ResponsibleNLP `holistic_bias/dataset/v1.1/`,
  read from `{src}`:
{digests}
- License: the dataset is under {license}; this conversion is a derivative under the same license.
- `wordlists/holisticbias.toml`: a list per descriptor axis and bucket (`hb_<axis>_<bucket>`), a list
  of standalone noun phrases per axis (`hb_<axis>_phrases`) and `hb_nouns`; each word's axis, bucket,
  reviewer preference and article are its tags.
- `templates/holisticbias/`: the 26 sentence templates (`must_be_noun.j2`: the 9 that need a noun),
  the noun phrases (`_np.j2`) and the slots and constraints (`_set.toml`).

Generate with `stimkit generate --wordlist-dir wordlists --template-dir templates -t holisticbias`
(the whole product, `descriptor=*@holisticbias`), or one selection, such as
`-w descriptor=hb_age_young -t holisticbias`.
"""
