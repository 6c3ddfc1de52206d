"""A set's input key: a hash of the files it is rendered from, computed without rendering.

A set's version is a hash of what it renders (stimuli.generate); rendering is slow (inflect
alone takes a second to import), hashing its inputs is not. The key covers its word list's
entries as parsed (every list for a multi-slot set), the template files its words' kinds pick
with the set's helpers and what they import (from other sets too), its grammar, the generator
and inflect's version; not where the files lie (a study's folder may move). `set_inputs` maps
each key to the version it rendered (`record`), so a key seen before needs no rendering
(stimuli.current).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from .. import store
from .sets import SetSpec

KEY_VERSION = "set-inputs/1"  # bump when what a key covers changes


@lru_cache(maxsize=None)
def _inflect_version() -> str:
    try:
        return metadata.version("inflect")
    except metadata.PackageNotFoundError:  # pragma: no cover - a dependency
        return "none"


def _files_digest(files, root_of) -> str:
    h = hashlib.sha256()
    for p in sorted(set(files)):
        h.update(str(p.relative_to(root_of(p))).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


# A template's reach beyond its own set: `{% import/include/from/extends "other/_m.j2" %}`.
_REACH = re.compile(r"\{%-?\s*(?:import|include|from|extends)\s+(\S+)")
_LITERAL = re.compile(r"""^["']([^"']+)["']$""")


def _templates_digest(tset, used: set[str] | None = None) -> str:
    """The template files a set renders with (`used`: the files its words' kinds pick; None: every
    file of its folder), the `_*` files of its folder and of the sets it inherits from, and every
    file a template there names in an import or include (resolved through the set's roots, as
    Jinja does). A template that names one by an expression could reach any file: then every
    root is hashed."""
    roots = [r.resolve() for r in tset.roots]

    def root_of(p: Path) -> Path:
        return next((r for r in roots if p.is_relative_to(r)), p.parent)

    if used is None:
        files = [p.resolve() for s in tset.chain() for p in s.path.rglob("*") if p.is_file()]
    else:
        files = [(tset.owner(f).path / f"{f}.j2").resolve() for f in used]
        files += [p.resolve() for s in tset.chain() for p in s.path.glob("_*") if p.is_file()]
    seen, i = set(files), 0
    while i < len(files):  # what the files reach, and what that reaches in turn
        p, i = files[i], i + 1
        if not (p.suffix == ".j2" or p.name.startswith("_")):
            continue
        for target in _REACH.findall(p.read_text(encoding="utf-8", errors="replace")):
            literal = _LITERAL.match(target)
            if literal is None:  # an expression: any file of the roots
                return _files_digest([q.resolve() for r in roots if r.is_dir() for q in r.rglob("*") if q.is_file()],
                                     root_of)
            found = next((r / literal.group(1) for r in roots if (r / literal.group(1)).is_file()), None)
            if found is not None and found.resolve() not in seen:
                seen.add(found.resolve())
                files.append(found.resolve())
    return _files_digest(files, root_of)


def _list_entry(wl) -> str:
    """A parsed list as the render reads it (words, kinds, forms, language, provenance), without
    where its file lies (a study's folder may move: its sets stay what they were)."""
    return repr(dataclasses.replace(wl, path="", line=0, overrides=wl.overrides is not None))


def set_key(spec: SetSpec, lists: dict, tset, generator: str) -> str:
    """The input key of one set: a hash of the files it renders from, computed without rendering
    (`generator`: stimuli.generate.GENERATOR_VERSION, which a key covers as a version does)."""
    files = None  # a product's lines, or a kind without a file (its render says so): every file
    if spec.slot is not None or tset.declaration is not None:
        used = [_list_entry(lists[n]) for n in sorted(lists)]  # a product reads the lists its slots declare
    else:
        wl = lists[spec.wordlist]
        used = [_list_entry(wl)]
        with contextlib.suppress(Exception):  # a template file is picked by the word's kind alone
            files = {tset.file_for(w, spec.template_file) for w in wl.words}
    payload = {"key": KEY_VERSION, "generator": generator, "inflect": _inflect_version(), "set": spec.name,
               "grammar": tset.grammar, "lists": used, "templates": _templates_digest(tset, files),
               "chain": [s.name for s in tset.chain()], "overrides": [s.overrides for s in tset.chain()]}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]


# A set whose "template set" is a source an importer names (a corpus: `<list>@corpus:<name>`) is
# versioned by its import, not rendered from files.
IMPORTED = ("corpus:",)


def renderable(specs, lists) -> list[SetSpec]:
    """The specs rendered from word lists (known ones, or a product's `*`) through a template set;
    imported and corpus sets are versioned by their import, and an unknown list fails where it
    is used."""
    return [s for s in specs if (s.wordlist in lists or (s.slot and s.wordlist == "*"))
            and not s.template_set.startswith(IMPORTED)]


def record(con, rendered, lists: dict, template_set, generator: str) -> None:
    """The input keys of sets just rendered (stimuli.generate), so that a later command finds them
    by key without rendering again. The caller owns the transaction."""
    if not store.one(con, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'set_inputs'")[0]:
        return  # a store held at a schema before db/024 (a migration test): no keys to record
    keys = [{"input_key": set_key(r.spec, lists, template_set(r.spec.template_set), generator), "name": r.spec.name,
             "version": r.version} for r in rendered if renderable([r.spec], lists)]
    store.insert(con, "set_inputs", keys, keep_stored=True)
