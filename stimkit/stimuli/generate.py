"""Render word lists through template sets into versioned stimulus sets.

A set is named `<wordlist>@<template set>[/<template file>]` (from a multi-slot template
set, `<slot>=<wordlist>@...`: stimuli.slots). Its version is a content hash of the resolved
words, the template files used and GENERATOR_VERSION, so regenerating unchanged input is a
no-op and any change makes a new version beside the old one. The hash covers the list's
language and provenance where they are not the defaults (English, original): every set
hashed before they existed keeps its version.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Callable, Iterator

import polars as pl
import pyarrow as pa

from ..choices import suggest
from .. import StimkitError, store
from . import grammar, keys
from .language import Provenance
from .sets import SetSpec  # noqa: F401  (generate.SetSpec: a set to render)
from .product import SlotPlan
from .limits import Limits
from .templates import TemplateSet, check_language
from .wordlists import WordList

# Bump when rendering changes in a way the hashed inputs do not show.
GENERATOR_VERSION = "stimkit-generate/1"

STIMULUS_COLUMNS = (
    "ordinal", "wordlist", "word_ordinal", "word", "kind", "person",
    "template_id", "template_text", "stimulus", "span_start", "span_end", "grammatical_gender",
)  # a multi-slot set's rows: product.STIMULUS_COLUMNS (its context_id, no grammatical gender)


@dataclass
class RenderedSet:
    spec: SetSpec
    wordlist: WordList
    version: str
    rows: dict[str, list] | None                # None: a multi-slot set, rendered chunk by chunk as it is written
    provenance: dict | None = None  # what built-in input a user's input replaced (--override)
    chunks: Callable[[], Iterator[tuple[dict, dict]]] | None = None  # multi-slot: (stimuli, stimulus_slots) columns
    slot_words: dict[str, list] | None = None   # multi-slot sets: the words that filled each slot (slot_words)
    n_words: int | None = None
    written: int | None = None                  # multi-slot: the stimuli written (or stored already)

    @property
    def n_stimuli(self) -> int:
        return len(self.rows["stimulus"]) if self.rows is not None else self.written

    def materialize(self) -> tuple[dict[str, list], dict[str, list] | None]:
        """All rows at once, (stimuli, stimulus_slots) columns: a multi-slot set's chunks joined."""
        if self.chunks is None:
            return self.rows, None
        parts = list(self.chunks())
        join = lambda i: {c: [v for p in parts for v in p[i][c]] for c in parts[0][i]} if parts else {}  # noqa: E731
        rows = join(0)
        self.written = len(rows.get("ordinal", []))
        return rows, join(1)


def template_set(spec: SetSpec, template_sets: dict[str, TemplateSet]) -> TemplateSet:
    if spec.template_set not in template_sets:
        template_sets[spec.template_set] = TemplateSet(spec.template_set)
    return template_sets[spec.template_set]


def render(spec: SetSpec, wordlists: dict[str, WordList], template_sets: dict[str, TemplateSet], *,
           limits: Limits = Limits()) -> RenderedSet:
    """One set rendered, within `limits` (the caller's: a Store's; else the defaults)."""
    tset = template_set(spec, template_sets)
    if tset.declaration is not None:
        return render_slots(spec, wordlists, tset, limits=limits)
    if spec.slot is not None:
        raise StimkitError(f"set {spec.name!r}: template set {tset.name!r} has one slot, the word: "
                           f"name the set {spec.wordlist}@{spec.template_set}")
    if spec.wordlist not in wordlists:
        raise StimkitError(f"set {spec.name!r}: unknown word list {spec.wordlist!r}{suggest(spec.wordlist, wordlists)}")
    wl = wordlists[spec.wordlist]
    if not wl.words:
        raise StimkitError(f"set {spec.name!r}: word list {wl.name!r} ({wl.path}) has no words")
    language = wl.provenance.language
    tset.check_same_language(spec.name, wl)
    where = f"{wl.name!r} ({wl.path}:{wl.line})"
    rows: dict[str, list] = {c: [] for c in STIMULUS_COLUMNS}
    files_used = []
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
    return RenderedSet(spec, wl, version, rows, _provenance([wl], tset))


def _provenance(lists: list[WordList], tset: TemplateSet) -> dict | None:
    """What built-in input the user's lists and template sets replaced (--override), if any."""
    replaced = [{"word_list": wl.name, "builtin": wl.overrides, "user": f"{wl.path}:{wl.line}"} for wl in lists if wl.overrides]
    replaced += [{"template_set": s.name, "builtin": s.overrides, "user": str(s.path)} for s in tset.chain() if s.overrides]
    return {"overrides": replaced} if replaced else None


def render_slots(spec: SetSpec, wordlists: dict[str, WordList], tset: TemplateSet, *,
                 limits: Limits = Limits()) -> RenderedSet:
    """A set of a multi-slot template set (stimuli.product): its version comes from its inputs
    alone, so its sentences are rendered as they are written, a chunk at a time (half a million
    of them never sit in memory at once), and not at all when the version is stored already."""
    plan = SlotPlan(spec, wordlists, tset, limits)
    return RenderedSet(spec, plan.first_list, plan.version(GENERATOR_VERSION), None,
                       _provenance(list(plan.lists.values()), tset),
                       plan.rows, plan.slot_words(), plan.n_words)


def count_slots(spec: SetSpec, wordlists: dict[str, WordList], template_sets: dict[str, TemplateSet], *,
                limits: Limits = Limits()) -> int:
    """How many sentences a multi-slot set has, without rendering a line (SlotPlan.count)."""
    return SlotPlan(spec, wordlists, template_set(spec, template_sets), limits).count()


def write(con, rendered: list[RenderedSet]) -> list[dict]:
    """Insert the sets that are new and log every set as current; one transaction."""
    report = []
    with store.transaction(con):
        seq = store.next_seq(con)
        for r in rendered:
            exists = store.one(con, "SELECT n_stimuli FROM stimulus_sets WHERE version = ?", [r.version])
            if exists and r.rows is None:
                r.written = exists[0]
            elif not exists:
                insert_set(con, r.version, r.spec.name, r.wordlist.name, r.spec.template_set, r.spec.template_file,
                           r.wordlist.category, r.wordlist.path, r.n_words if r.n_words is not None else len(r.wordlist.words),
                           r.rows, r.provenance, r.wordlist.provenance, slot=r.spec.slot, chunks=r.chunks,
                           slot_words=r.slot_words, on_count=lambda n, r=r: setattr(r, "written", n))
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
               provenance: dict | None = None, origin: Provenance = Provenance(), *, slot: str | None = None,
               chunks=None, slot_words: dict | None = None, on_count=None):
    """A new set version: its stimuli (`rows`, or a multi-slot set's `chunks`, appended as they
    are rendered, with their stimulus_slots), then its row in stimulus_sets with the count
    (see set_record and insert_sets). The caller owns the transaction."""
    if chunks is None:
        insert_sets(con, [(set_record(version, name, wordlist, template_set, template_file, category, source, n_words,
                                      len(rows["stimulus"]), provenance, origin), rows)])
        return
    n = 0
    for stimuli, slotted in chunks():
        _append(con, "stimuli", version, stimuli)
        _append(con, "stimulus_slots", version, slotted)
        n += len(stimuli["ordinal"])
    _append(con, "slot_words", version, slot_words)
    if on_count:
        on_count(n)
    record = set_record(version, name, wordlist, template_set, template_file, category, source, n_words, n,
                        provenance, origin)
    record["slot"] = slot  # db/017: the slot a multi-slot set is named by
    store.insert(con, "stimulus_sets", [record])


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
        store.insert(con, "stimulus_sets", records)
    marked = any(any(rows.get("grammatical_gender") or ()) for _, rows in sets)
    columns = [c for c in STIMULUS_COLUMNS if c != "grammatical_gender" or marked]  # the column where marked
    table = {"set_version": [record["version"] for record, rows in sets for _ in rows["stimulus"]]}
    for c in columns:
        table[c] = [v for _, rows in sets for v in rows.get(c, [None] * len(rows["stimulus"]))]
    store.insert(con, "stimuli", pa.table(table))


def _append(con, table: str, version: str, columns: dict[str, list]) -> None:
    """One Arrow append of a set's rows (with its version) to `table` (through polars, which
    builds Arrow columns without importing pandas as pa.array does)."""
    n = len(next(iter(columns.values())))
    if n:
        frame = pl.DataFrame(columns, strict=False, infer_schema_length=None)
        store.insert(con, table, frame.with_columns(pl.lit(version, pl.String).alias("set_version")))


def generate(con, specs: list[SetSpec], wordlists: dict[str, WordList], template_sets=None, *,
             limits: Limits = Limits()) -> list[dict]:
    """Render every spec first (so a bad template fails before the store is touched), then write.
    `limits`: the bounds on the rendering (a Store passes its own)."""
    template_sets = template_sets if template_sets is not None else {}
    rendered = [render(s, wordlists, template_sets, limits=limits) for s in dict.fromkeys(specs)]
    with store.transaction(con):
        report = write(con, rendered)
        keys.record(con, rendered, wordlists, lambda name: template_set(SetSpec("", name), template_sets),
                    GENERATOR_VERSION)
    return report


def plan(lists: dict, wordlist_names: list[str] | None = None, template_sets: list[str] | None = None,
         default_names: list[str] | None = None, default_specs: list[SetSpec] = ()) -> list[SetSpec]:
    """The sets to generate: named lists (default: `default_names`, or every list) under
    named template sets ('set' or 'set/file'; default word and may2019), or, with nothing
    named, every catalog set and every list under `word` and `may2019`."""
    from .inputs import check_name

    if not (wordlist_names or template_sets or default_names):
        return list(default_specs)
    names = wordlist_names or default_names or list(lists)
    slotted = [n.partition("=") if "=" in n else ("", "", n) for n in names]  # `-w descriptor=young`: its slot
    unknown = [n for _, _, n in slotted if n not in lists and n != "*"]
    if unknown:
        raise StimkitError(f"unknown word list {unknown[0]!r}" + (suggest(unknown[0], lists) or " (see wordlists/*.toml)"))
    specs = []
    for t in template_sets or ["word", "may2019"]:
        tset, _, file = t.partition("/")
        check_name(tset, "template set", f"-t {t!r}")
        specs += [SetSpec(n, tset, file or None, slot or None) for slot, _, n in slotted]
    return specs


def for_template_sets(specs: list[SetSpec], template_sets: dict[str, TemplateSet], named: bool) -> list[SetSpec]:
    """The specs as their template sets take them. A multi-slot set takes `slot=list`: a list
    named without its slot goes to the one slot that declares it; with no list named, the
    set is the whole product (`<first slot>=*`)."""
    out = []
    for s in specs:
        decl = template_set(s, template_sets).declaration
        if decl is None or s.slot is not None:
            out.append(s)
        elif not named:
            out.append(SetSpec("*", s.template_set, s.template_file, decl.names[0]))
        else:
            owners = [x.name for x in decl.slots if s.wordlist in x.lists]
            if len(owners) != 1:
                raise StimkitError(f"-w {s.wordlist}: template set {s.template_set!r} has slots {', '.join(decl.names)}; "
                                   f"name the slot it fills: -w {decl.names[0]}={s.wordlist}")
            out.append(SetSpec(s.wordlist, s.template_set, s.template_file, owners[0]))
    return list(dict.fromkeys(out))
