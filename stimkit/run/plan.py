"""A run is a plan, made once: what it computes, on what, and what it refuses.

`make` resolves the encoders, selects every test's four sets (generating the sets that are
missing, and saying so), refuses what the selected stimuli alone show to be meaningless,
checks c-word token spans, and reads WEFAT properties: once. Nothing after it re-resolves
or re-fetches: encoding reads `Plan.encodings`, execution reads `Plan.pairs` and
`Plan.wefats`. A plan is plain data (frozen dataclasses; frames are the selected stimuli).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb
from typing import Callable

import polars as pl

from ..catalog.tests import TestDef, fetch_sets
from ..catalog.wefat import ROLES as WEFAT_ROLES, WefatDef
from ..encoders import Encoder, resolve
from ..encoders.embeddings import stimuli_of
from ..errors import StimkitError
from ..stats import check_exact
from ..stimuli.properties import PropertyTable, read_property
from ..stimuli.sets import SetSpec, fetch, versions
from . import cword
from .options import Options, WefatOptions
from .rows import Failure


@dataclass(frozen=True)
class PlannedTest:
    test: TestDef                       # its context resolved (c-word applied)
    sets: dict[str, pl.DataFrame]       # the four selected sets, fetched once
    options: Options                    # the run's options as this test runs them (its alternative)

    @property
    def name(self) -> str:
        return self.test.name

    @property
    def versions(self) -> list[str]:
        return versions(self.sets.values())


@dataclass(frozen=True)
class PlannedWefat:
    wefat: WefatDef
    frames: dict[str, pl.DataFrame]     # targets, a, b
    values: dict[str, float]            # lower-cased word -> property value
    table: PropertyTable | None         # the property file to store with the result (None: SQL)


@dataclass(frozen=True)
class Plan:
    options: Options
    tests: tuple[PlannedTest, ...]
    encoders: tuple[Encoder, ...]                        # resolved, as named
    pairs: tuple[tuple[PlannedTest, Encoder], ...]       # (test, encoder) results, in order
    wefats: tuple[tuple[PlannedWefat, Encoder], ...] = ()
    wefat_options: WefatOptions | None = None
    refused: tuple[Failure, ...] = ()                     # what will not run, and why
    notes: tuple[str, ...] = ()                           # what did not apply or was done for it
    n_tests: int = 0
    n_encoders: int = 0

    @property
    def encodings(self) -> list[tuple[Encoder, pl.DataFrame]]:
        """Per encoder (c-word variants apart), the stimuli its pairs read: what to encode."""
        frames: dict[str, tuple[Encoder, list]] = {}
        for t, enc in self.pairs:
            frames.setdefault(enc.fingerprint, (enc, []))[1].extend(t.sets.values())
        for w, enc in self.wefats:
            frames.setdefault(enc.fingerprint, (enc, []))[1].extend(w.frames.values())
        return [(enc, stimuli_of(fs)) for enc, fs in frames.values()]

    def without(self, failed: dict[str, str]) -> tuple[Plan, list[Failure]]:
        """The plan less the encoders (by fingerprint) that failed to encode, and their failures."""
        if not failed:
            return self, []
        gone = [Failure("*", getattr(e, "base_spec", e.spec), failed[e.fingerprint])
                for e in {e.fingerprint: e for _, e in self.pairs + self.wefats}.values() if e.fingerprint in failed]
        return Plan(self.options, self.tests, self.encoders,
                    tuple(p for p in self.pairs if p[1].fingerprint not in failed),
                    tuple(w for w in self.wefats if w[1].fingerprint not in failed), self.wefat_options,
                    self.refused, self.notes, self.n_tests, self.n_encoders), gone


def refuse_early(test: TestDef, sets: dict[str, pl.DataFrame], opts: Options) -> None:
    """What the selected stimuli alone show to be meaningless, refused before anything is
    encoded or written (the rest is checked on the vectors: stats.check_inputs)."""
    from ..stats import InvalidInput

    policy = opts.for_test(test)
    x, y = sets["x"], sets["y"]
    for role, f in (("X", x), ("Y", y)):
        if f.height < 2:
            raise InvalidInput(f"set {role} has {f.height} item; d needs at least 2 per target set "
                               "(with 1 a side |d| = sqrt(2) whatever the data)")
    if sorted(x["stimulus"].to_list()) == sorted(y["stimulus"].to_list()):
        raise InvalidInput("X and Y hold the same items: there is nothing to compare")
    if opts.method == "exact":
        n_x, n_y = (x.height, y.height) if policy == "none" else (min(x.height, y.height),) * 2
        if opts.clustered:
            n_x, n_y = x["word"].n_unique(), y["word"].n_unique()
        check_exact(comb(n_x + n_y, n_x))


def first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def make(con, tests: list[TestDef], encoder_specs: list[str], options: Options, *, wefats: list[WefatDef] = (),
         wefat_options: WefatOptions | None = None, cword_optional: bool = False,
         generate_missing: Callable[[list[SetSpec]], list[str]] | None = None) -> Plan:
    """The plan for `tests` (and `wefats`) on each encoder.

    cword_optional: an encoder without token vectors is a note (NA, as Tan & Celis's tables
    show it) for c-word tests rather than a failure. generate_missing(specs) renders the
    sets the tests name that the store lacks and returns notes (None: a missing set is the
    test's failure)."""
    refused, notes = [], []
    encs = []
    for spec in dict.fromkeys(encoder_specs):
        try:
            encs.append(resolve(spec))
        except StimkitError as e:
            refused.append(Failure("*", spec, first_line(e), e))
    if encs and generate_missing is not None:
        wanted = [s for t in tests for s in t.set_specs()] + [s for w in wefats for s in w.set_specs()]
        notes += generate_missing(list(dict.fromkeys(wanted)))

    planned = []
    for t in tests:
        try:
            sets = fetch_sets(con, t)
            refuse_early(t, sets, options)
        except StimkitError as e:
            refused.append(Failure(t.name, "*", first_line(e), e))
            continue
        planned.append(PlannedTest(t, sets, options.resolved(t)))
    plain = [p for p in planned if p.test.context != "c-word"]
    in_cword = [p for p in planned if p.test.context == "c-word"]
    pairs = [(p, enc) for enc in encs for p in plain]
    for enc in encs if in_cword else []:
        try:
            token = cword.variant(enc, [(p.test, p.sets) for p in in_cword])
        except StimkitError as e:
            if cword_optional:
                notes.append(f"{enc.spec}: no c-word vectors (NA)")
            else:
                refused.append(Failure("*", enc.spec, first_line(e), e))
            continue
        pairs += [(p, token) for p in in_cword]

    planned_wefats = []
    for w in wefats:
        try:
            frames = {role: fetch(con, w.sql(role), f"WEFAT {w.name!r} {role}") for role in WEFAT_ROLES}
            values, table = read_property(con, w.property)
        except StimkitError as e:
            refused.append(Failure(w.name, "*", first_line(e), e))
            continue
        planned_wefats.append(PlannedWefat(w, frames, values, table))
    return Plan(options, tuple(planned), tuple(encs), tuple(pairs),
                tuple((w, enc) for enc in encs for w in planned_wefats), wefat_options or WefatOptions(),
                tuple(refused), tuple(notes), len(tests) + len(wefats), len(list(dict.fromkeys(encoder_specs))))

