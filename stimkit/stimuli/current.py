"""What today's files make of a set: its input key, and the one question asked before any reuse.

Each set has an input key (stimuli.keys): a hash of the files it renders from, computed
without rendering; `set_inputs` maps each key to the version it rendered.

`ensure(con, specs, ...)` makes each set's current version the one today's files give:
looked up by key, rendered and written where the key is new, and logged as current where
another version was. Nothing is used because an older version of it exists (VERSIONING.md).
`states(con, specs, ...)` says the same without writing: what `stimkit status` lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import store
from . import generate
from .keys import renderable, set_key
from .sets import SetSpec


@dataclass(frozen=True)
class SetState:
    """A set a command needs, as today's files give it."""
    spec: SetSpec
    key: str
    version: str | None        # the version its key rendered (None: the key is new: to generate)
    current: str | None        # the version logged current for its name now (None: none)

    @property
    def status(self) -> str:
        if self.version is None:
            return "missing" if self.current is None else "outdated"
        return "current" if self.version == self.current else "restore"


def states(con, specs, lists: dict, template_set) -> list[SetState]:
    """Each renderable spec's key, the version stored for that key, and its name's current version
    (reads only). `template_set(name)` loads a template set (a Folders' or a Store's)."""
    tsets: dict = {}
    found = []
    for s in renderable(dict.fromkeys(specs), lists):
        if s.template_set not in tsets:
            tsets[s.template_set] = template_set(s.template_set)
        found.append((s, set_key(s, lists, tsets[s.template_set], generate.GENERATOR_VERSION)))
    if not found:
        return []
    keys = [k for _, k in found]
    names = [s.name for s, _ in found]
    by_key = dict(store.rows(con, "SELECT input_key, version FROM set_inputs WHERE input_key IN (SELECT unnest(?))",
                             [keys]))
    current = dict(store.rows(con, "SELECT name, version FROM current_sets WHERE name IN (SELECT unnest(?))", [names]))
    return [SetState(s, k, by_key.get(k), current.get(s.name)) for s, k in found]


def ensure(con, specs, lists: dict, template_set, limits) -> list[str]:
    """Make each set's current version the one today's files give (render what no key has seen,
    log as current what is not). One transaction; returns notes on what changed."""
    found = states(con, specs, lists, template_set)
    todo = [st for st in found if st.status != "current"]
    if not todo:
        return []
    tsets: dict = {}
    render = [st for st in todo if st.version is None]
    for st in render:
        if st.spec.template_set not in tsets:
            tsets[st.spec.template_set] = template_set(st.spec.template_set)
    rendered = {r.spec: r for r in (generate.render(st.spec, lists, tsets, limits=limits) for st in render)}
    with store.transaction(con):
        generate.write(con, list(rendered.values()))
        store.insert(con, "set_inputs", [{"input_key": st.key, "name": st.spec.name,
                                          "version": rendered[st.spec].version} for st in render], keep_stored=True)
        seq = store.next_seq(con)
        for st in todo:
            if st.version is not None:  # seen before: its version logged current again, nothing rendered
                con.execute("INSERT INTO set_log (name, version, seq) VALUES (?, ?, ?)", [st.spec.name, st.version, seq])
                seq += 1
    new = [st.spec.name for st in todo if st.current is None]
    changed = [st.spec.name for st in todo if st.current is not None]
    notes = []
    for what, names in (("generated", new), ("regenerated from changed files", changed)):
        if names:
            notes.append(f"{what}: {len(names)} set{'s' if len(names) != 1 else ''}: "
                         + ", ".join(names[:6]) + (", ..." if len(names) > 6 else ""))
    return notes
