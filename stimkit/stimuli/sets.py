"""Set names and the SQL that selects a set.

A generated set is named `<wordlist>@<template set>[/<template file>]`, or, from a template
set with several slots (stimuli.slots), `<slot>=<wordlist>@<template set>[/<file>]`: the
sentences whose `slot` comes from that list (`*`: every list the slot declares). A test or
WEFAT names its sets this way or gives a SELECT of its own, which can only read."""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb
import polars as pl

from ..choices import suggest
from ..errors import InputError, UsageError
from ..store import frame, usersql

_SQL = re.compile(r"^\s*(select|with|from|\()\b", re.I)


@dataclass(frozen=True)
class SetSpec:
    wordlist: str
    template_set: str
    template_file: str | None = None
    slot: str | None = None          # the slot the list fills, in a multi-slot template set

    @property
    def name(self) -> str:
        suffix = f"/{self.template_file}" if self.template_file else ""
        slot = f"{self.slot}=" if self.slot else ""
        return f"{slot}{self.wordlist}@{self.template_set}{suffix}"

    @classmethod
    def parse(cls, name: str) -> "SetSpec":
        wordlist, sep, rest = name.partition("@")
        slot, eq, listed = wordlist.partition("=")
        if not sep or not wordlist or not rest or (eq and not (slot and listed)):
            raise UsageError(f"bad set name {name!r}: expected [<slot>=]<wordlist>@<template set>[/<file>]")
        template_set, _, file = rest.partition("/")
        return cls(listed, template_set, file or None, slot) if eq else cls(wordlist, template_set, file or None)


def is_sql(ref: str) -> bool:
    return bool(_SQL.match(ref))


def specs_of(refs) -> list[SetSpec]:
    """The generated sets among references (set names; SQL and bare names name none)."""
    return [SetSpec.parse(r) for r in refs if not is_sql(r) and "@" in r]


def set_sql(ref: str) -> str:
    """The SQL that selects a set: a set name becomes a query on current_stimuli."""
    if is_sql(ref):  # a query a user typed can only read: exactly one SELECT (DuckDB's parser decides)
        return usersql.check_select(ref, f"set query {ref!r}")
    name = ref.replace("'", "''")
    return f"SELECT * FROM current_stimuli WHERE set_name = '{name}' ORDER BY ordinal"


def fetch(con, sql: str, what: str = "set", ref: str | None = None) -> pl.DataFrame:
    """The stimuli a set query selects (with span columns, None when the query has none).
    `ref`: the set name the query came from, to suggest the closest ones when it selects nothing."""
    try:
        df = frame(con, sql)
    except duckdb.Error as e:
        raise InputError(f"{what}: query failed: {usersql.first_line(e)} -- in: {sql}") from None
    if "stimulus" not in df.columns:
        raise InputError(f"{what}: query must return a `stimulus` column -- in: {sql}")
    if df.height == 0:
        if ref is not None and not is_sql(ref):
            known = [n for (n,) in con.execute("SELECT name FROM current_sets").fetchall()]
            raise InputError(f"{what}: no set named {ref!r} in the store" + (suggest(ref, known) or
                             " (a word list of that name? `stimkit generate --wordlist-dir DIR`)"))
        raise InputError(f"{what}: selects no stimuli -- in: {sql} (run `stimkit generate`?)")
    # A hand-written query may return text alone: no span means "the whole text".
    missing = [c for c in ("span_start", "span_end") if c not in df.columns]
    return df.with_columns(pl.lit(None, dtype=pl.Int32).alias(c) for c in missing) if missing else df


def versions(frames) -> list[str]:
    """The set versions behind selected stimuli (sorted)."""
    return sorted({v for f in frames if "set_version" in f.columns for v in f["set_version"].unique().to_list() if v})


ROLE_ORDER = ("x", "y", "a", "b")


def role_versions(frames: dict) -> str:
    """Which set versions play X, Y, A and B: 'X:v|Y:v|A:v|B:v' (a role's versions sorted and
    comma-joined; empty for a query over no generated set). `versions` sorts the four together
    and loses the roles: a test with A and B swapped would look the same."""
    return "|".join(f"{r.upper()}:{','.join(versions([frames[r]]))}" for r in ROLE_ORDER if r in frames)
