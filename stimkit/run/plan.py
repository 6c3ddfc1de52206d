"""A run is a plan, made once: what it computes, on what, and what it refuses.

`make` resolves the encoders, selects every test's four sets (generating the sets that are
missing, and saying so), refuses what the selected stimuli alone show to be meaningless
(and a test whose sets are in different languages, or in a language an encoder does not
read), checks c-word token spans, and reads WEFAT properties: once. Nothing after it re-resolves
or re-fetches: encoding reads `Plan.encodings`, execution reads `Plan.pairs` and
`Plan.wefats`. A plan is plain data (frozen dataclasses; frames are the selected stimuli).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import comb
from typing import Callable

import polars as pl

from ..catalog.definitions import TestDef, fetch_sets, likelihood_only
from ..catalog.wefat import ROLES as WEFAT_ROLES, WefatDef
from ..encoders import Encoder, layers, resolve
from ..encoders.embeddings import stimuli_of
from ..errors import StimkitError, first_line
from ..stats import check_exact
from ..stimuli import language as languages
from ..stimuli.properties import PropertyTable, read_property
from ..stimuli.sets import SetSpec, fetch, role_versions, set_sql, specs_of, versions
from . import cword
from .options import Options, WefatOptions
from .rows import Failure


@dataclass(frozen=True)
class PlannedTest:
    test: TestDef                       # its context resolved (c-word applied)
    sets: dict[str, pl.DataFrame]       # the four selected sets, fetched once
    options: Options                    # the run's options as this test runs them (its alternative)
    language: str | None = None         # its sets' language ("en+de": cross-lingual); None: not recorded
    # a replicate family's cut to the stimuli all its replicates read (run.replicates): a hash of
    # the words left out, part of the results' input key; None: the sets as selected
    restricted: str | None = None

    @property
    def name(self) -> str:
        return self.test.name

    @property
    def versions(self) -> list[str]:
        return versions(self.sets.values())

    @property
    def role_versions(self) -> str:
        """Which selected versions play X, Y, A and B (stimuli.sets.role_versions)."""
        return role_versions(self.sets)


def corpus_notes(test: TestDef, sets: dict[str, pl.DataFrame]) -> list[str]:
    """How many contexts each word of a test's corpus sets has (catalog.corpus: a sentence a
    context), fewest first: a word with few contexts weighs as much as one with many. And,
    when every context of its targets (X and Y: the sets the crossed model reads) comes from
    one document, that the crossed model has one level, and how to get more."""
    from ..catalog.corpus import PREFIX

    counts, documents = {}, set()
    for role, f in sets.items():
        if "template_id" not in f.columns or "word" not in f.columns:
            continue
        mine = f.filter(pl.col("template_id").str.starts_with(PREFIX))
        for word, n in mine.group_by("word").len().iter_rows():
            counts[(role.upper(), word)] = n
        if role in ("x", "y") and "context_id" in mine.columns:
            documents.update(mine["context_id"].drop_nulls().to_list())
    if not counts:
        return []
    order = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]))
    notes = [f"test {test.name!r} reads contexts from a corpus; contexts a word: "
             + ", ".join(f"{w} ({r}) {n}" for (r, w), n in order)]
    if len(documents) == 1:
        notes.append(f"test {test.name!r}: every context of X and Y comes from one document ({next(iter(documents))}), "
                     "so the crossed model has one level of documents and no crossed d; import the corpus with "
                     "--document record (a line or row a document) or --document FIELD, or from more files")
    return notes


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
    # A layer sweep (layer=all) encodes once for all its layers: layer fingerprint -> the sweep
    sweeps: dict[str, Encoder] = field(default_factory=dict)
    reference: pl.DataFrame | None = None                 # --center-ref SET: its stimuli, selected once
    baselines: tuple = ()                                 # run.baseline.PlannedBaseline: matched random baselines

    def source(self, enc: Encoder) -> Encoder:
        """The encoder that encodes what `enc` reads (a layer's sweep, or itself)."""
        return self.sweeps.get(enc.fingerprint, enc)

    @property
    def encodings(self) -> list[tuple[Encoder, pl.DataFrame]]:
        """Per encoder (c-word variants apart; a layer sweep once), the stimuli its pairs read."""
        frames: dict[str, tuple[Encoder, list]] = {}
        extra = [self.reference] if self.reference is not None else []
        for t, enc in self.pairs:
            frames.setdefault(self.source(enc).fingerprint, (self.source(enc), list(extra)))[1].extend(t.sets.values())
        for w, enc in self.wefats:
            frames.setdefault(enc.fingerprint, (enc, []))[1].extend(w.frames.values())
        for b in self.baselines:  # a baseline to compute reads the test's stimuli and its drawn ones
            if b.draws is not None:
                frames.setdefault(self.source(b.encoder).fingerprint, (self.source(b.encoder), list(extra)))[1].extend(
                    [*b.planned.sets.values(), b.draws.stimuli])
        return [(enc, stimuli_of(fs)) for enc, fs in frames.values()]

    def without(self, failed: dict[str, str]) -> tuple[Plan, list[Failure]]:
        """The plan less the encoders (by the fingerprint they encode with) that failed to
        encode, and their failures."""
        if not failed:
            return self, []
        dead = lambda enc: self.source(enc).fingerprint in failed  # noqa: E731
        gone = {self.source(e).fingerprint: Failure("*", getattr(e, "base_spec", self.source(e).spec),
                                                    failed[self.source(e).fingerprint])
                for e in [e for _, e in self.pairs + self.wefats] + [b.encoder for b in self.baselines] if dead(e)}
        return replace(self, pairs=tuple(p for p in self.pairs if not dead(p[1])),
                       wefats=tuple(w for w in self.wefats if not dead(w[1])),
                       baselines=tuple(b for b in self.baselines if b.draws is None or not dead(b.encoder))), \
            list(gone.values())


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



def test_language(con, test: TestDef, sets: dict[str, pl.DataFrame]) -> str | None:
    """The language of a test's sets (their versions' `language`), refused in one line when
    they differ and the test is not cross-lingual (stimuli.language.language_of)."""
    found = {role: versions([f]) for role, f in sets.items()}
    every = sorted({v for vs in found.values() for v in vs})
    tags = dict(con.execute("SELECT version, language FROM stimulus_sets WHERE version IN (SELECT unnest(?))",
                            [every]).fetchall()) if every else {}
    named = {role: (ref if len(ref) <= 60 else ref[:57] + "...", sorted({tags[v] for v in found[role] if tags.get(v)}))
             for role, ref in zip(("x", "y", "a", "b"), test.sets)}
    return languages.language_of(test.name, named, test.cross_lingual)


def read_languages(pairs):
    """The (test, encoder) pairs whose encoder reads the test's language, and a refusal for
    each other: a static English vocabulary on a German list is a wrong question, not 100% OOV."""
    kept, refused = [], []
    for p, enc in pairs:
        if p.language is None or languages.covers(enc.languages, p.language):
            kept.append((p, enc))
        else:
            spec = getattr(enc, "base_spec", enc.spec)
            refused.append(Failure(p.name, spec, f"encoder {spec!r} reads {', '.join(sorted(enc.languages))} only, and "
                                                 f"the test is in {p.language} (a multilingual encoder such as use-m3 "
                                                 f"reads it; lang= declares an encoder's languages)"))
    return kept, refused


def grammatical_gender_notes(test: TestDef, sets: dict[str, pl.DataFrame]) -> list[str]:
    """A warning when X's and Y's words differ in grammatical gender composition (where the
    lists mark it): WEAT then partly measures grammatical gender (stimuli.language)."""
    if "grammatical_gender" not in sets["x"].columns or "grammatical_gender" not in sets["y"].columns:
        return []
    x, y = (sets[r].unique("word", keep="first", maintain_order=True)["grammatical_gender"].to_list()
            if "word" in sets[r].columns else sets[r]["grammatical_gender"].to_list() for r in ("x", "y"))
    found = languages.gender_composition(x, y)
    if found is None or not found.imbalanced:
        return []
    return [f"warning: test {test.name!r}: X and Y differ in grammatical gender ({found.text()}): d may measure "
            "grammatical gender (Omrani Sabbaghi & Caliskan 2022); see `stimkit check`"]


def make(con, tests: list[TestDef], encoder_specs: list[str], options: Options, *, wefats: list[WefatDef] = (),
         wefat_options: WefatOptions | None = None, cword_optional: bool = False,
         generate_missing: Callable[[list[SetSpec]], list[str]] | None = None,
         per_test: Callable[[TestDef], dict] | None = None) -> Plan:
    """The plan for `tests` (and `wefats`) on each encoder.

    cword_optional: an encoder without token vectors is a note (NA, as Tan & Celis's tables
    show it) for c-word tests rather than a failure. generate_missing(specs) renders the
    sets the tests name that the store lacks and returns notes (None: a missing set is the
    test's failure). per_test(test): option values for this test alone (a study's
    [options."pattern"] tables), over the run's."""
    refused, notes = [], []
    encs, sweeps = [], {}
    for spec in dict.fromkeys(encoder_specs):
        try:
            enc = resolve(spec, con)  # con: a trained: encoder reads its vectors from the store
        except StimkitError as e:
            refused.append(Failure("*", spec, first_line(e), e))
            continue
        each = layers(enc)  # layer=all: the test runs on every layer, from one forward pass
        encs += each
        if len(each) > 1:
            sweeps.update((e.fingerprint, enc) for e in each)
    if not encs:  # no encoder to run on: the encoders' refusals say it all
        return Plan(options, (), (), (), refused=tuple(refused), n_tests=len(tests) + len(wefats),
                    n_encoders=len(list(dict.fromkeys(encoder_specs))))
    if generate_missing is not None:
        wanted = [s for t in tests for s in t.set_specs()] + [s for w in wefats for s in w.set_specs()]
        if options.center is not None and options.center_ref != "test":
            wanted += specs_of([options.center_ref])
        notes += generate_missing(list(dict.fromkeys(wanted)))

    planned, before = [], {}  # before: each test's options before `resolved` (its scoring form resolves its own)
    for t in tests:
        try:
            own = options
            if per_test and per_test(t):  # the test's own units replace the run's, old flag included
                values = per_test(t)
                own = replace(options, **({"clustered": False} if "units" in values else {}), **values)
            before[t.name] = own
            opts = own.resolved(t)
            sets = fetch_sets(con, t)
            if t.context == "c-word" and t.cword_slot:
                sets = cword.slot_sets(con, t, sets)
            refuse_early(t, sets, opts)
            language = test_language(con, t, sets)
        except StimkitError as e:
            refused.append(Failure(t.name, "*", first_line(e), e))
            continue
        planned.append(PlannedTest(t, sets, opts, language))
        notes += grammatical_gender_notes(t, sets)
        notes += corpus_notes(t, sets)
    plain = [p for p in planned if p.test.context != "c-word"]
    in_cword = [p for p in planned if p.test.context == "c-word"]
    pairs = []
    for enc in encs:
        for p in plain:
            if not getattr(enc, "scores", False) and likelihood_only(p.test):
                refused.append(Failure(p.name, enc.spec, f"test {p.name!r} reads attribute probabilities: run it on a "
                                       "language model (-e smollm2-135m, or hf:PATH,score=causal|pll)", None))
                continue
            if getattr(enc, "scores", False):  # a language model: the likelihood form's units and variant
                try:
                    p = replace(p, options=before[p.name].for_scoring(p.test, enc.score_kind))
                except StimkitError as e:
                    refused.append(Failure(p.name, enc.spec, first_line(e), e))
                    continue
            pairs.append((p, enc))
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
    pairs, unread = read_languages(pairs)
    refused += unread

    planned_wefats = []
    for w in wefats:
        try:
            frames = {role: fetch(con, w.sql(role), f"WEFAT {w.name!r} {role}") for role in WEFAT_ROLES}
            values, table = read_property(con, w.property)
        except StimkitError as e:
            refused.append(Failure(w.name, "*", first_line(e), e))
            continue
        planned_wefats.append(PlannedWefat(w, frames, values, table))
    reference = None
    if options.center is not None and options.center_ref != "test" and planned:
        reference = fetch(con, set_sql(options.center_ref), "--center-ref", options.center_ref)
    return Plan(options, tuple(planned), tuple(encs), tuple(pairs),
                tuple((w, enc) for enc in encs if enc.fingerprint not in sweeps for w in planned_wefats),
                wefat_options or WefatOptions(), tuple(refused), tuple(notes), len(tests) + len(wefats),
                len(list(dict.fromkeys(encoder_specs))), sweeps, reference)

