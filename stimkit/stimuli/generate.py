"""Render word lists through template sets into versioned stimulus sets.

A set is named `<wordlist>@<template set>[/<template file>]`. Its version is a content
hash of the resolved words, the template files used and GENERATOR_VERSION, so
regenerating unchanged input is a no-op and any change makes a new version beside
the old one. The hash covers the list's language and provenance where they are not the
defaults (English, original): every set hashed before they existed keeps its version.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import pyarrow as pa

from ..checks import suggest
from .. import StimkitError, store
from . import grammar
from .language import ANY, Provenance, same_language
from .sets import SetSpec  # noqa: F401  (generate.SetSpec: a set to render)
from .templates import TemplateSet, check_language, current_limits
from .wordlists import WordList

# Bump when rendering changes in a way the hashed inputs do not show.
GENERATOR_VERSION = "stimkit-generate/1"

STIMULUS_COLUMNS = (
    "ordinal", "wordlist", "word_ordinal", "word", "kind", "person",
    "template_id", "template_text", "stimulus", "span_start", "span_end", "grammatical_gender",
)


@dataclass
class RenderedSet:
    spec: SetSpec
    wordlist: WordList
    version: str
    rows: dict[str, list]
    provenance: dict | None = None  # what built-in input a user's input replaced (--override)

    @property
    def n_stimuli(self) -> int:
        return len(self.rows["stimulus"])


def render(spec: SetSpec, wordlists: dict[str, WordList], template_sets: dict[str, TemplateSet]) -> RenderedSet:
    if spec.wordlist not in wordlists:
        raise StimkitError(f"set {spec.name!r}: unknown word list {spec.wordlist!r}{suggest(spec.wordlist, wordlists)}")
    wl = wordlists[spec.wordlist]
    if not wl.words:
        raise StimkitError(f"set {spec.name!r}: word list {wl.name!r} ({wl.path}) has no words")
    if spec.template_set not in template_sets:
        template_sets[spec.template_set] = TemplateSet(spec.template_set)
    tset = template_sets[spec.template_set]
    language = wl.provenance.language
    check_same_language(spec, wl, tset)
    where = f"{wl.name!r} ({wl.path}:{wl.line})"
    rows: dict[str, list] = {c: [] for c in STIMULUS_COLUMNS}
    files_used = []
    limits = current_limits()
    per_file: dict[str, int] = {}
    words = [tset.inflected(w) for w in wl.words]  # the singular and plural of the set's grammar
    for word_ordinal, word in enumerate(words):
        file = tset.file_for(word, spec.template_file)
        files_used.append(file)
        produced = 0
        for template in tset.templates(file):
            check_language(template, word, language, where)
            rendered = template.render(word, limits)
            if rendered is None:
                continue
            produced += 1
            per_file[file] = per_file.get(file, 0) + 1
            if per_file[file] > limits.per_template:
                raise StimkitError(f"set {spec.name!r}: template file {tset.owner(file).path / (file + '.j2')} yields over "
                                   f"{limits.per_template} sentences (at word {word.text!r}; {limits.how_to_raise('per_template')})")
            if len(rows["ordinal"]) >= limits.per_set:
                raise StimkitError(f"set {spec.name!r}: over {limits.per_set} sentences (at word {word.text!r}, "
                                   f"{template.id}; {limits.how_to_raise('per_set')})")
            text, start, end = rendered
            values = (len(rows["ordinal"]), wl.name, word_ordinal, word.text, word.kind, word.person,
                      template.id, template.text, text, start, end, word.grammatical_gender)
            for column, value in zip(STIMULUS_COLUMNS, values):
                rows[column].append(value)
        if not produced:
            raise StimkitError(f"{tset.owner(file).path / (file + '.j2')}: every line renders empty for word "
                               f"{word.text!r} (list {wl.name!r}, {wl.path}:{wl.line})")
    payload = {
        "generator": GENERATOR_VERSION,
        "wordlist": {"name": wl.name, "category": wl.category, "words": [w.as_dict() for w in words]},
        "template_set": spec.template_set,
        "template_file": spec.template_file,
        "templates": tset.digest(files_used),
    }
    if wl.provenance.hashed():
        payload["language"] = wl.provenance.hashed()
    if tset.grammar != grammar.PAPER_GRAMMAR:  # the paper's rules were the only grammar before sets chose:
        payload["grammar"] = tset.grammar      # their versions stay as they were
    version = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    replaced = [{"word_list": wl.name, "builtin": wl.overrides, "user": f"{wl.path}:{wl.line}"}] if wl.overrides else []
    replaced += [{"template_set": s.name, "builtin": s.overrides, "user": str(s.path)} for s in tset.chain() if s.overrides]
    provenance = {"overrides": replaced} if replaced else None
    return RenderedSet(spec, wl, version, rows, provenance)


def check_same_language(spec: SetSpec, wl: WordList, tset: TemplateSet) -> None:
    """A list is rendered only through templates in its language, or through a set with no
    words of its own (`*`, as `word`): a sentence is in one language."""
    if not same_language(tset.language, wl.provenance.language):
        raise StimkitError(f"set {spec.name!r}: word list {wl.name!r} ({wl.path}:{wl.line}) is in "
                           f"{wl.provenance.language}, template set {tset.name!r} ({tset.path}) in {tset.language}: "
                           f"use a template set in {wl.provenance.language} (its _set.toml: language = "
                           f"\"{wl.provenance.language}\"), or one with no words of its own (language = \"{ANY}\", as `word`)")


def write(con, rendered: list[RenderedSet]) -> list[dict]:
    """Insert the sets that are new and log every set as current; one transaction."""
    report = []
    with store.transaction(con):
        seq = store.next_seq(con)
        for r in rendered:
            exists = store.one(con, "SELECT 1 FROM stimulus_sets WHERE version = ?", [r.version])
            if not exists:
                insert_set(con, r.version, r.spec.name, r.wordlist.name, r.spec.template_set, r.spec.template_file,
                           r.wordlist.category, r.wordlist.path, len(r.wordlist.words), r.rows, r.provenance,
                           r.wordlist.provenance)
            current = store.one(con, 
                "SELECT version FROM current_sets WHERE name = ?", [r.spec.name]
            )
            changed = current is None or current[0] != r.version
            if changed:
                con.execute("INSERT INTO set_log (name, version, seq) VALUES (?, ?, ?)", [r.spec.name, r.version, seq])
                seq += 1
            status = "new" if not exists else ("restored" if changed else "unchanged")
            report.append({"name": r.spec.name, "version": r.version, "status": status, "n_stimuli": r.n_stimuli})
    return report


def insert_set(con, version, name, wordlist, template_set, template_file, category, source, n_words, rows,
               provenance: dict | None = None, origin: Provenance = Provenance()):
    """One set version and its stimuli (see set_record and insert_sets)."""
    insert_sets(con, [(set_record(version, name, wordlist, template_set, template_file, category, source, n_words,
                                  len(rows["stimulus"]), provenance, origin), rows)])


def set_record(version, name, wordlist, template_set, template_file, category, source, n_words, n_stimuli,
               provenance: dict | None = None, origin: Provenance = Provenance()) -> dict:
    """A stimulus_sets row. provenance: what built-in input the set replaced (JSON); origin:
    its language, translation, licence and citation (their own columns, named only where they
    are not the defaults, as provenance only where there is one)."""
    values = {"version": version, "name": name, "wordlist": wordlist, "template_set": template_set,
              "template_file": template_file, "category": category, "source": source,
              "generator_version": GENERATOR_VERSION, "n_words": n_words, "n_stimuli": n_stimuli}
    default = Provenance().columns()  # the columns' defaults (db/016)
    values.update({k: v for k, v in origin.columns().items() if v != default[k]})
    if provenance:  # the column comes with db/010; plain sets leave it NULL
        values["provenance"] = json.dumps(provenance, sort_keys=True)
    return values


def insert_sets(con, sets: list[tuple[dict, dict[str, list]]]) -> None:
    """Set versions (set_record rows) with their stimuli (STIMULUS_COLUMNS lists), one append
    per table and kind of row: an importer's thousands of sets in a few statements."""
    groups: dict[tuple, list[dict]] = {}
    for record, _ in sets:
        groups.setdefault(tuple(record), []).append(record)
    for records in groups.values():
        store.insert(con, "stimulus_sets", pa.Table.from_pylist(records))
    marked = any(any(rows.get("grammatical_gender") or ()) for _, rows in sets)
    columns = [c for c in STIMULUS_COLUMNS if c != "grammatical_gender" or marked]  # the column where marked
    table = {"set_version": [record["version"] for record, rows in sets for _ in rows["stimulus"]]}
    for c in columns:
        table[c] = [v for _, rows in sets for v in rows.get(c, [None] * len(rows["stimulus"]))]
    store.insert(con, "stimuli", pa.table(table))


def generate(con, specs: list[SetSpec], wordlists: dict[str, WordList], template_sets=None) -> list[dict]:
    """Render every spec first (so a bad template fails before the store is touched), then write."""
    template_sets = template_sets if template_sets is not None else {}
    rendered = [render(s, wordlists, template_sets) for s in dict.fromkeys(specs)]
    return write(con, rendered)


def plan(lists: dict, wordlist_names: list[str] | None = None, template_sets: list[str] | None = None,
         default_names: list[str] | None = None, default_specs: list[SetSpec] = ()) -> list[SetSpec]:
    """The sets to generate: named lists (default: `default_names`, or every list) under
    named template sets ('set' or 'set/file'; default word and may2019), or, with nothing
    named, every catalog set and every list under `word` and `may2019`."""
    from .inputs import check_name

    if not (wordlist_names or template_sets or default_names):
        return list(default_specs)
    names = wordlist_names or default_names or list(lists)
    unknown = [n for n in names if n not in lists]
    if unknown:
        raise StimkitError(f"unknown word list {unknown[0]!r}" + (suggest(unknown[0], lists) or " (see wordlists/*.toml)"))
    specs = []
    for t in template_sets or ["word", "may2019"]:
        tset, _, file = t.partition("/")
        check_name(tset, "template set", f"-t {t!r}")
        specs += [SetSpec(n, tset, file or None) for n in names]
    return specs
