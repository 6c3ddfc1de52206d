"""WEFAT definitions (queries/wefat.toml, or ad hoc): targets, attributes A and B, a property."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..choices import WEFAT_CONTEXTS
from ..errors import UsageError
from ..paths import data_dir
from ..stimuli.inputs import read_toml
from ..stimuli.sets import SetSpec, is_sql, set_sql, specs_of

ROLES = ("targets", "a", "b")


@dataclass(frozen=True)
class WefatDef:
    """A WEFAT: targets, attributes A and B (set names, bare word-list names, or SQL) and a
    property (a property table's name or path, or SQL returning `word` and `value`)."""
    name: str
    targets: str
    a: str
    b: str
    property: str
    context: str = "word"            # word | sentence: the template set bare list names go through
    templates: str = "may2019"       # the sentence context's template set
    drop_least_typical: float = 0.0
    source: str = "catalog"

    def ref(self, role: str) -> str:
        ref = {"targets": self.targets, "a": self.a, "b": self.b}[role]
        if is_sql(ref) or "@" in ref:
            return ref
        return f"{ref}@{'word' if self.context == 'word' else self.templates}"

    def sql(self, role: str) -> str:
        return set_sql(self.ref(role))

    def set_specs(self) -> list[SetSpec]:
        return specs_of(self.ref(r) for r in ROLES)


def load_catalog(path=None) -> dict[str, WefatDef]:
    path = path or data_dir("queries") / "wefat.toml"
    raw = read_toml(path)
    known = {"targets", "a", "b", "property", "context", "templates", "drop_least_typical", "description"}
    found = {}
    for name, body in raw.items():
        missing = {"targets", "a", "b", "property"} - set(body)
        if missing or set(body) - known:
            raise UsageError(f"{path}: entry {name!r}: needs targets, a, b, property "
                             f"(unknown keys: {', '.join(sorted(set(body) - known)) or 'none'})")
        found[name] = WefatDef(name, body["targets"], body["a"], body["b"], body["property"],
                               body.get("context", "word"), body.get("templates", "may2019"),
                               float(body.get("drop_least_typical", 0.0)))
    return found


def get(name: str) -> WefatDef:
    entries = load_catalog()
    if name not in entries:
        raise UsageError(f"unknown WEFAT {name!r} (known: {', '.join(entries)})")
    return entries[name]


def define(name: str | None = None, targets: str | None = None, a: str | None = None, b: str | None = None,
           prop: str | None = None, label: str = "adhoc", context: str | None = None,
           templates: str = "may2019") -> WefatDef:
    """A catalog WEFAT by name, or an ad-hoc one from all four of targets, a, b and a property;
    `context` (word | sentence) overrides the definition's, sentences through `templates`."""
    adhoc = [targets, a, b, prop]
    if name:
        if any(adhoc):
            raise UsageError("give a catalog name or --targets --a --b --property, not both")
        test = get(name)
    elif all(adhoc):
        test = WefatDef(label, targets, a, b, prop, source="adhoc")
    else:
        raise UsageError("name a WEFAT (wefat-occupations, wefat-names) or give all of --targets --a --b --property")
    if context is not None:
        if context not in WEFAT_CONTEXTS:
            raise UsageError(f"unknown context {context!r} (known: {', '.join(WEFAT_CONTEXTS)})")
        test = dataclasses.replace(test, context=context, templates=templates)
    return test
