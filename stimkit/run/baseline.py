"""Matched random baselines as planned jobs: draw, render, encode (with the plan), compute, store.

For a test on an encoder: K random pairs of target sets (X~, Y~) from a reference vocabulary,
each drawn word matched to the target word it stands for on frequency (wordfreq's Zipf scale,
within `tolerance`), on subword count under the encoder's tokenizer (a static vocabulary: the
word is in it), and on word kind where the lexicon knows the drawn word's kind. Each drawn word
takes its target word's place sentence for sentence: rendered through the same template lines
(with the target word's kind, person and gender, in the set's grammar), so the drawn sets have
the test's rows in the test's order, and the test's own procedure (its resolved Options: units,
alternative, balance and cut, budget and method, ddof) applies to them unchanged: the same
items are dropped and cut, the same words are the permutation units.

Planning (`plan`) draws and renders once, so the plan's encodings include the new stimuli;
a baseline already stored under the same id (test, encoder fingerprint, set versions by role, K,
seed, procedure) is reused, not drawn again. Executing (`execute_one`) computes the test's own
d and, for all K pairs at once, s(w) of every drawn stimulus, d, p (stats.baseline) and d of X
and of Y against their own matched random sets; `write` stores the summary and the draws.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl

from .. import __version__, stats, store
from ..choices import limit
from ..encoders import Encoder
from ..encoders.embeddings import load
from ..errors import InputError, StimkitError, UsageError, first_line
from ..seeding import rng_for
from ..stats import baseline as bstats
from ..stimuli import diagnostics, grammar
from ..stimuli.sets import SetSpec
from ..stimuli.limits import Limits
from ..stimuli.wordlists import Word, fold, load_lexicon
from . import association, diagnose, likelihood
from .options import Options
from .plan import Plan, PlannedTest
from .rows import BaselineRow, Failure

VERSION = "matched-baseline/1"      # bump when drawing or matching changes: part of every baseline's id
SAMPLER = "indicator/argpartition"  # how sampled p-values draw partitions for all pairs at once
MAX_SETS = 100_000                  # --sets K beyond this is a typo (STIMKIT_MAX_BASELINE_SETS)
# Options that do not decide a result's d or p (or that a baseline does not use): left out of its id.
NOT_PROCEDURE = ("seed", "bootstrap", "ci_level", "cuts", "alpha", "metrics")


@dataclass(frozen=True)
class BaselineOptions:
    """How a baseline draws: K pairs, its seed, the Zipf tolerance, the reference vocabulary."""
    sets: int                       # K random pairs of target sets
    seed: int = 0
    tolerance: float = 0.25         # Zipf distance allowed between a drawn word and its target word
    vocabulary: str | None = None   # a file of words (one a line); None: wordfreq's list for the language
    language: str | None = None     # the words' language (wordfreq's code); None: each test's targets' language

    def __post_init__(self):
        if isinstance(self.sets, bool) or not isinstance(self.sets, int) or self.sets < 2:
            raise UsageError(f"--sets must be a whole number of random pairs, at least 2, not {self.sets!r}")
        if self.sets > limit("max_baseline_sets", MAX_SETS):
            raise UsageError(f"--sets {self.sets} is over the limit of {limit('max_baseline_sets', MAX_SETS):,} "
                             "(raise it with STIMKIT_MAX_BASELINE_SETS)")
        if not 0 <= self.seed < 2 ** 63:
            raise UsageError(f"--seed must be between 0 and 2^63 - 1, not {self.seed}")
        if not isinstance(self.tolerance, (int, float)) or not 0 < self.tolerance <= 3:
            raise UsageError(f"--tolerance must be a Zipf distance in (0, 3], not {self.tolerance!r}")
        if self.vocabulary is not None and not Path(self.vocabulary).is_file():
            raise UsageError(f"--vocabulary {self.vocabulary}: no such file")

    def for_test(self, planned: PlannedTest) -> BaselineOptions:
        """These options for one test: in its targets' language unless a language was given."""
        return self if self.language else replace(self, language=diagnose.wordfreq_language(planned.language))


@dataclass(frozen=True)
class Inputs:
    """Where drawn words are rendered from: the template sets and word lists of the store's
    command (the user's folders before the built-in ones), within its render limits."""
    template_set: Callable[[str], object]   # name -> stimuli.templates.TemplateSet
    wordlists: Callable[[], dict]           # -> {name: WordList}
    limits: Limits = Limits()               # the store's bounds on each render


@dataclass(frozen=True)
class Draws:
    """K pairs of drawn sets, as rows standing for the test's selected X and Y rows."""
    stimuli: pl.DataFrame                   # distinct rendered stimuli: stimulus, span_start, span_end
    index: dict[str, np.ndarray]            # x, y: (rows of the selected set, K) -> row of `stimuli`
    words: dict[str, list[list[str]]]       # x, y: per draw, the drawn words in the order of the targets'
    n_candidates: int
    min_pool: int


@dataclass(frozen=True)
class PlannedBaseline:
    planned: PlannedTest
    encoder: Encoder
    options: BaselineOptions
    baseline_id: str
    procedure: str
    vocabulary: str
    draws: Draws | None = None              # None: stored already (reused)
    stored: BaselineRow | None = field(default=None, compare=False)


def procedure_of(opts: Options, b: BaselineOptions, vocabulary: str, context: str | None = None) -> str:
    """The canonical JSON of what decides a baseline's d and p beyond its stimuli and encoder:
    every option of the test but those that do not (NOT_PROCEDURE), and how words are matched;
    a c-word context too (c-word and c-word:<slot> read other spans of the same sentences; the
    other contexts' ids stay as they were)."""
    chosen = {k: v for k, v in association.key_options(opts).items() if k not in NOT_PROCEDURE}
    fields = {"options": chosen, "tolerance": float(b.tolerance), "vocabulary": vocabulary,
              "language": b.language, "matching": "zipf+subwords+kind", "version": VERSION, "sampler": SAMPLER}
    if context and context.startswith("c-word"):
        fields["context"] = context
    return json.dumps(fields, sort_keys=True, default=str)


def baseline_id(test: str, fingerprint: str, role_versions: str, k: int, seed: int, procedure: str) -> str:
    """By role (stimuli.sets.role_versions): a test with A and B swapped, or X and Y, is another
    baseline (its observed d has the other sign), never the stored one."""
    key = json.dumps([test, fingerprint, role_versions, k, seed, procedure])
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def stored(con, bid: str) -> BaselineRow | None:
    """The baseline stored under this id, or None."""
    df = store.frame(con, "SELECT * EXCLUDE (created_at) FROM baselines WHERE baseline_id = ?", [bid])
    if df.height == 0:
        return None
    row = df.row(0, named=True)
    row["set_versions"] = list(row["set_versions"] or [])
    return BaselineRow(**row)


def at_alpha(con, row: BaselineRow, alpha: float) -> BaselineRow:
    """A stored baseline as seen at `alpha`: its share of random pairs rejected, recomputed
    from its stored draws' p where it was stored at another alpha (one figure, one alpha)."""
    if row.alpha == alpha:
        return row
    p = np.array([p for (p,) in store.rows(con, "SELECT p_value FROM baseline_draws WHERE baseline_id = ? "
                                                "AND effect_size IS NOT NULL", [row.baseline_id])], dtype=np.float64)
    return replace(row, fpr=bstats.rejection_rate(p, alpha), alpha=alpha)


# ----------------------------------------------------------------------------- planning

def plan(con, run_plan: Plan, b: BaselineOptions, inputs: Inputs) -> tuple[tuple[PlannedBaseline, ...], list[Failure]]:
    """A planned baseline for every (test, encoder) pair of the plan: reused when stored, else
    drawn and rendered now (so that encoding the plan encodes the drawn stimuli too)."""
    vocabs: dict[str, diagnostics.Vocabulary] = {}
    out, failed = [], []
    given = b
    for planned, enc in run_plan.pairs:
        try:
            opts = planned.options
            if opts.center is not None:
                raise UsageError("a matched baseline of a centred test is not supported yet: run it without --center")
            b = given.for_test(planned)
            # a test of given names draws given names (unless a vocabulary was named): not words
            names = b.vocabulary is None and _all_names(planned)
            if (b.language, names) not in vocabs:
                vocabs[(b.language, names)] = (diagnostics.names_vocabulary(b.language) if names else
                                               diagnostics.reference_vocabulary(b.language, b.vocabulary))
            vocab = vocabs[(b.language, names)]
            procedure = procedure_of(opts, b, vocab.source, association.context_of(planned.test, enc))
            bid = baseline_id(planned.name, enc.fingerprint, planned.role_versions, b.sets, b.seed, procedure)
            found = stored(con, bid)
            if found is not None:
                out.append(PlannedBaseline(planned, enc, b, bid, procedure, vocab.source, None, found))
                continue
            source = run_plan.source(enc)  # a layer sweep's layers share one tokenizer: one draw, encoded once
            # the words drawn depend on what matching reads, never on the test's procedure: with the
            # same seed, sentence and word units meet the same random words (and encode them once)
            rng = rng_for(b.seed, "baseline-draw", planned.name, source.fingerprint, *sorted(planned.versions),
                          b.tolerance, vocab.source, b.language, VERSION)
            draws = draw_sets(planned, enc, vocab, b, inputs, rng, slots_of(con, planned))
            out.append(PlannedBaseline(planned, enc, b, bid, procedure, vocab.source, draws))
        except StimkitError as e:
            failed.append(Failure(planned.name, getattr(enc, "base_spec", enc.spec), f"baseline: {first_line(e)}", e))
    return tuple(out), failed


def refuse_corpus_tests(run_plan: Plan) -> None:
    """A test whose sets come from a corpus has no matched baseline (its contexts are the words'
    own sentences: there is no template to render a drawn word through): refused before
    anything runs, so no result is stored without the baseline the command asked for."""
    from ..catalog.corpus import PREFIX

    for planned, _ in run_plan.pairs:
        for role, f in planned.sets.items():
            if "template_id" in f.columns and f["template_id"].str.starts_with(PREFIX).any():
                raise UsageError(f"test {planned.name!r}: set {role.upper()} comes from a corpus, and a matched "
                                 "baseline renders drawn words through templates: run it with --baseline 0 (a "
                                 "study's [baseline] applies to every test run in its folder)")


def with_baselines(con, run_plan: Plan, b: BaselineOptions, inputs: Inputs, keep_tests: bool = True) -> Plan:
    """The plan with a matched baseline planned for each of its (test, encoder) pairs (and, with
    keep_tests False, those baselines alone: `stimkit baseline` stores no test result)."""
    from dataclasses import replace

    refuse_corpus_tests(run_plan)
    planned, failed = plan(con, run_plan, b, inputs)
    return replace(run_plan, baselines=planned, refused=run_plan.refused + tuple(failed),
                   pairs=run_plan.pairs if keep_tests else ())


@dataclass
class _Target:
    role: str
    word: str
    kind: str
    person: bool
    set_name: str
    rows: np.ndarray           # row indices in the selected set
    template_ids: tuple[str | None, ...]   # None: a word-level item (the stimulus is the word itself)
    keys: tuple[tuple[str, int], ...] = ()  # (set_version, ordinal) of each row: a multi-slot row's other slots


def _all_names(planned: PlannedTest) -> bool:
    """Whether every target word of the test (X and Y) is a given name (word kind `name`)."""
    sets = [planned.sets[r] for r in ("x", "y")]
    return all("kind" in f.columns and f.height and bool((f["kind"] == "name").all()) for f in sets)


def _targets(planned: PlannedTest) -> list[_Target]:
    """The target words of X and Y with the rows (and template lines) each fills."""
    found = []
    for role in ("x", "y"):
        f = planned.sets[role]
        missing = [c for c in ("set_name", "word") if c not in f.columns]
        if "template_id" not in f.columns:
            f = f.with_columns(template_id=pl.lit(None, pl.String))
        # a row without a template line stands for its word only where it is that word (an imported word test)
        loose = f.filter(pl.col("template_id").is_null() & (pl.col("stimulus") != pl.col("word"))) if not missing else f
        if missing or loose.height:
            raise InputError(f"set {role.upper()} is not selected from generated sets (it lacks "
                             f"{', '.join(missing) or 'template ids'}): a baseline renders drawn words through the "
                             "templates of the test's own sets")
        f = f.with_row_index("_row")
        keys = f.select("set_name", "word").unique(maintain_order=True)
        for set_name, word in keys.iter_rows():
            rows = f.filter((pl.col("set_name") == set_name) & (pl.col("word") == word))
            kind = rows["kind"][0] if "kind" in rows.columns else "count_noun"
            person = bool(rows["person"][0]) if "person" in rows.columns and rows["person"][0] is not None else False
            keys = tuple(zip(rows["set_version"].cast(pl.String).to_list(), rows["ordinal"].to_list())) \
                if {"set_version", "ordinal"} <= set(rows.columns) else ()
            found.append(_Target(role, word, kind, person, set_name, rows["_row"].to_numpy(),
                                 tuple(rows["template_id"].to_list()), keys))
    return found


def _forms(words: list[str], kinds: list[str]) -> list[str]:
    """A drawn word as it stands for a target of each kind: a name takes a capital letter."""
    return [grammar.capfirst(w) if k == "name" else w for w, k in zip(words, kinds)]


def draw_sets(planned: PlannedTest, enc: Encoder, vocab: diagnostics.Vocabulary, b: BaselineOptions, inputs: Inputs,
              rng: np.random.Generator, slot_words: dict | None = None) -> Draws:
    """Draw K matched pairs and render them where the test's words stood (`slot_words`: the
    other slots' words of multi-slot rows, slots_of)."""
    b = b.for_test(planned)
    targets = _targets(planned)
    words = [t.word for t in targets]
    tz = diagnostics.zipf(words, b.language)
    tp = enc.subword_counts(words)
    # Target words the encoder does not represent (a static vocabulary lacks them) stay as they
    # are in every draw: the test drops their stimuli (or, in a CBoW sentence, averages the rest),
    # and the drawn sets then do exactly the same.
    represented = np.ones(len(targets), bool) if tp is None else tp > 0
    near = diagnostics.eligible(tz[represented], vocab.zipf, b.tolerance).any(axis=0)
    test_words = {fold(str(w)) for f in planned.sets.values() if "word" in f.columns
                  for w in f["word"].cast(pl.String).to_list() if w}
    test_words |= {fold(w) for w in words}
    at = np.array([i for i in np.flatnonzero(near) if fold(vocab.words[i]) not in test_words], dtype=np.int64)
    cand, cand_zipf = [vocab.words[i] for i in at], vocab.zipf[at]
    if not cand:
        raise InputError("no word of the reference vocabulary lies within the Zipf tolerance of the target words")
    cand_kinds = np.array(["name"] * len(cand) if vocab.source.startswith(diagnostics.NAMES)
                          else diagnostics.lexicon_kinds(cand, load_lexicon()), dtype=object)
    unknown = np.array([k is None for k in cand_kinds], dtype=bool)  # a kind the lexicon does not know fits any
    rows = [i for i in range(len(targets)) if represented[i]]
    need_names = any(targets[i].kind == "name" for i in rows)
    pieces = {"plain": enc.subword_counts(cand)}
    if need_names:
        pieces["name"] = enc.subword_counts(_forms(cand, ["name"] * len(cand)))
    allowed = np.zeros((len(rows), len(cand)), dtype=bool)
    what = []
    for j, i in enumerate(rows):
        t = targets[i]
        ok = diagnostics.eligible(tz[i:i + 1], cand_zipf, b.tolerance)[0]
        ok &= unknown | (cand_kinds == t.kind)
        cp = pieces["name" if t.kind == "name" else "plain"]
        criteria = [f"Zipf {tz[i]:.2f} +/- {b.tolerance:g}", f"kind {t.kind}"]
        if cp is not None:
            ok &= (cp > 0) if enc.static else (cp == tp[i])
            criteria.append(f"in {enc.spec}'s vocabulary" if enc.static else f"{tp[i]} pieces under {enc.spec}")
        allowed[j] = ok
        what.append(", ".join(criteria))
    picks = diagnostics.draw(allowed, b.sets, rng, [targets[i].word for i in rows], what)
    pools = allowed.sum(axis=1)
    return _render(planned, targets, rows, picks, cand, b.sets, inputs, int(np.flatnonzero(allowed.any(axis=0)).size),
                   int(pools.min()) if len(pools) else 0, slot_words)


def _render(planned: PlannedTest, targets: list[_Target], rows: list[int], picks: np.ndarray, cand: list[str], k: int,
            inputs: Inputs, n_candidates: int, min_pool: int, slot_words: dict | None = None) -> Draws:
    """Each drawn word through its target word's template lines: the drawn sets' rows, and
    the distinct stimuli they hold. A multi-slot row keeps its other slots' words
    (`slot_words`), the drawn word taking its set's slot; a word-level item is the drawn word."""
    lists = None
    prepared: dict = {}  # a multi-slot template set's phrases and lines, compiled once
    test = planned.test
    span_slot = test.cword_slot if test.context == "c-word" and getattr(test, "cword_slot", None) else None
    tsets: dict[str, object] = {}
    rendered: dict[tuple, list[tuple[str, int | None, int | None]]] = {}
    texts: dict[tuple[str, int | None, int | None], int] = {}

    def stimulus_id(item) -> int:
        return texts.setdefault(item, len(texts))

    index = {r: np.empty((planned.sets[r].height, k), dtype=np.int64) for r in ("x", "y")}
    words = {r: [[] for _ in range(k)] for r in ("x", "y")}
    pick_of = {i: picks[j] for j, i in enumerate(rows)}
    for i, t in enumerate(targets):
        frame = planned.sets[t.role]
        if i not in pick_of:  # not represented: the target itself, in every draw
            own = [stimulus_id((frame["stimulus"][int(r)], frame["span_start"][int(r)], frame["span_end"][int(r)]))
                   for r in t.rows]
            index[t.role][t.rows] = np.array(own)[:, None]
            for d in range(k):
                words[t.role][d].append(t.word)
            continue
        drawn = _forms([cand[c] for c in pick_of[i]], [t.kind] * k)
        if all(tid is None for tid in t.template_ids):  # a word-level item: the drawn word is the stimulus
            for d, form in enumerate(drawn):
                index[t.role][t.rows, d] = [stimulus_id(_as_item(form, frame, int(r))) for r in t.rows]
                words[t.role][d].append(form)
            continue
        spec = SetSpec.parse(t.set_name)
        if spec.template_set not in tsets:
            tsets[spec.template_set] = inputs.template_set(spec.template_set)
        tset = tsets[spec.template_set]
        if lists is None:
            lists = inputs.wordlists()
        listed = next((w for w in getattr(lists.get(spec.wordlist), "words", ()) if w.text == t.word), None)
        gender = listed.gender if listed is not None else None
        multi = getattr(tset, "declaration", None) is not None
        for d, form in enumerate(drawn):
            key = (form, t.kind, t.person, gender, t.set_name, t.template_ids, t.keys if multi else ())
            if key not in rendered:
                rendered[key] = _render_slots(tset, spec, form, t, gender, lists, slot_words, span_slot, prepared,
                                              inputs.limits) if multi \
                    else _render_word(tset, spec, form, t, gender, inputs.limits)
            index[t.role][t.rows, d] = [stimulus_id(item) for item in rendered[key]]
            words[t.role][d].append(form)
    order = sorted(texts.items(), key=lambda kv: kv[1])
    stimuli = pl.DataFrame({"stimulus": [s for (s, _, _), _ in order],
                            "span_start": pl.Series([a for (_, a, _), _ in order], dtype=pl.Int32),
                            "span_end": pl.Series([e for (_, _, e), _ in order], dtype=pl.Int32)})
    return Draws(stimuli, index, words, n_candidates, min_pool)


def slots_of(con, planned: PlannedTest) -> dict:
    """{(set_version, ordinal): {slot: (wordlist, word)}} of the X and Y rows of multi-slot
    sets (stimulus_slots), which a drawn word's sentence keeps; {} without any."""
    from ..stimuli.slots import row_slots

    return row_slots(con, [f for r, f in planned.sets.items() if r in ("x", "y")])


def _as_item(form: str, frame: pl.DataFrame, row: int) -> tuple[str, int | None, int | None]:
    """A drawn word as a word-level item, its span as the target's (the whole item, or none)."""
    start = frame["span_start"][row] if "span_start" in frame.columns else None
    return (form, 0, len(form)) if start is not None else (form, None, None)


def _render_slots(tset, spec: SetSpec, form: str, t: _Target, gender: str | None, lists: dict, slot_words: dict | None,
                  span_slot: str | None, prepared: dict, limits: Limits):
    """A drawn word in its target's multi-slot sentences: each row's template line over the
    row's own words in the other slots (its phrases rebuilt around them), the drawn word in
    the set's slot; the span the test reads (its slot's, or c-word:<slot>'s)."""
    from ..stimuli.product import phrases_of
    from ..stimuli.slots import SlotValue
    decl = tset.declaration
    names = decl.names
    own = spec.slot or names[0]
    read = span_slot if span_slot in names else own
    if tset.name not in prepared:
        prepared[tset.name] = (phrases_of(decl, tset)[0],
                               {tpl.id: tpl for f in tset.file_names for tpl in tset.templates(f)})
    phrases, by_id = prepared[tset.name]
    word = tset.inflected(Word(form, t.kind, t.person, form, grammar.plural(form), gender))
    out = []
    for template_id, key in zip(t.template_ids, t.keys or [None] * len(t.template_ids)):
        tpl = by_id.get(template_id)
        if tpl is None:
            raise InputError(f"template line {template_id} of set {t.set_name!r} is no longer in template set "
                             f"{spec.template_set!r}: regenerate the set")
        filled = (slot_words or {}).get(key, {})
        ctx = {}
        for i, name in enumerate(names):
            if name == own:
                ctx[name] = SlotValue(word, i)
                continue
            wordlist, text = filled.get(name, (None, None))
            other = next((w for w in getattr(lists.get(wordlist), "words", ()) if w.text == text), None)
            if text is not None and other is None:
                raise InputError(f"set {t.set_name!r}: slot {name!r}'s word {text!r} is no longer in list {wordlist!r}: "
                                 "regenerate the set")
            ctx[name] = SlotValue(tset.inflected(other) if other is not None else None, i, wordlist or "")
        what = f"the drawn word {form!r} (standing for {t.word!r})"
        ctx.update((p.id, p._generate(ctx, limits, what)) for p in phrases)
        got = tpl.render_slots(ctx, names, limits, what, list(range(len(names))))
        if got is None:
            raise InputError(f"template line {template_id} renders nothing for the drawn word {form!r} "
                             f"(standing for {t.word!r}): its condition depends on the word itself")
        text, spans = got
        out.append((text, *spans[names.index(read)]))
    return out


def _render_word(tset, spec: SetSpec, form: str, t: _Target, gender: str | None, limits: Limits):
    """A drawn word rendered by the template lines its target word's rows came from."""
    word = tset.inflected(Word(form, t.kind, t.person, form, grammar.plural(form), gender))
    file = tset.file_for(word, spec.template_file)
    by_id = {tpl.id: tpl for tpl in tset.templates(file)}
    out = []
    for template_id in t.template_ids:
        tpl = by_id.get(template_id)
        if tpl is None:
            raise InputError(f"template line {template_id} of set {t.set_name!r} is no longer in template set "
                             f"{spec.template_set!r}: regenerate the set")
        got = tpl.render(word, limits)
        if got is None:
            raise InputError(f"template line {template_id} renders nothing for the drawn word {form!r} "
                             f"(standing for {t.word!r}): its condition depends on the word itself")
        out.append(got)
    return out


# ----------------------------------------------------------------------------- execution

def execute_one(con, run_id: str, pb: PlannedBaseline, reference: pl.DataFrame | None = None) -> BaselineRow:
    """The test's own d, then K random pairs through the same procedure, all pairs at once."""
    started = time.perf_counter()
    planned, enc, opts = pb.planned, pb.encoder, pb.planned.options
    name = planned.name
    if likelihood.handles(planned, enc):  # a language model: log P of the test's and the drawn sentences
        prep = likelihood.prepare(con, planned, enc)  # the test's own minimal pairs, or its WEAT form's cells
        sx, sy = prep.scores["x"], prep.scores["y"]
        lp = likelihood.sentence_scores(con, enc, pb.draws.stimuli["stimulus"].to_list(), opts)
        SX, SY = (likelihood.drawn_scores(prep, r, lp, pb.draws.index[r]) for r in ("x", "y"))
    else:
        prep = association.prepare(con, planned, enc, opts, reference)  # the test's own stimuli, dropped and cut
        A, B = prep.vectors["a"], prep.vectors["b"]
        stats.check_inputs(*(prep.vectors[r] for r in ("x", "y", "a", "b")), f"test {name!r}, encoder {enc.spec!r}")
        sx, sy = (stats.association(prep.vectors[r], A, B) for r in ("x", "y"))
        vectors, _ = load(con, enc, pb.draws.stimuli)
        s_all = stats.association(vectors, A, B)
        kept = {r: prep.kept[r]["ordinal_in_set"].to_numpy() for r in ("x", "y")}
        SX, SY = (s_all[pb.draws.index[r][kept[r]]] for r in ("x", "y"))
        bad = ~np.isfinite(np.concatenate([SX, SY]))
        if bad.any():
            row = int(np.concatenate([pb.draws.index[r][kept[r]] for r in ("x", "y")])[bad][0])
            raise InputError(f"test {name!r}, encoder {enc.spec!r}: the drawn stimulus "
                             f"{pb.draws.stimuli['stimulus'][row]!r} has no vector")
    S = np.concatenate([SX, SY])
    rng = rng_for(pb.options.seed, "baseline-p", name, enc.fingerprint, pb.procedure)
    units = association.permutation_units(prep, opts)  # the test's own units
    pv = association.unit_p(S, len(SX), units, opts, rng)
    d = bstats.effect_sizes(SX, SY, opts.ddof)
    d_x = bstats.effect_sizes(np.repeat(sx[:, None], SX.shape[1], axis=1), SX, opts.ddof)
    d_y = bstats.effect_sizes(np.repeat(sy[:, None], SY.shape[1], axis=1), SY, opts.ddof)
    summary = bstats.summarize(stats.effect_size(sx, sy, opts.ddof), d, pv.p, d_x, d_y, opts.alpha)
    draws = pl.DataFrame({
        "baseline_id": [pb.baseline_id] * summary.k, "draw": pl.Series(range(summary.k), dtype=pl.Int32),
        "effect_size": d, "p_value": pv.p, "d_x": d_x, "d_y": d_y,
        "x_words": pb.draws.words["x"], "y_words": pb.draws.words["y"],
    }).with_columns(pl.col(c).fill_nan(None) for c in ("effect_size", "p_value", "d_x", "d_y"))
    return BaselineRow(
        baseline_id=pb.baseline_id, run_id=run_id, test=name, encoder=getattr(enc, "base_spec", enc.spec),
        fingerprint=enc.fingerprint,
        context=(likelihood.form_of(con, planned) if likelihood.handles(planned, enc)
                 else association.context_of(planned.test, enc)), set_versions=association.set_versions_of(prep),
        role_versions=planned.role_versions,
        k=summary.k, seed=pb.options.seed, procedure=pb.procedure, alternative=opts.alternative, balance=prep.policy,
        cut_seed=opts.cut_seed if prep.policy != "none" else None, clustered=units[0] is not None, ddof=opts.ddof,
        centering=opts.centering, p_method=pv.method, samples=pv.samples, tolerance=float(pb.options.tolerance),
        vocabulary=pb.vocabulary, language=pb.options.language, n_candidates=pb.draws.n_candidates,
        min_pool=pb.draws.min_pool, observed_d=summary.observed_d, percentile=summary.percentile, fpr=summary.fpr,
        alpha=summary.alpha, d_median=summary.d_median, d_low=summary.d_low, d_high=summary.d_high, d_x=summary.d_x,
        d_y=summary.d_y, stimkit_version=__version__, seconds=time.perf_counter() - started, draws=draws)


def write(con, row: BaselineRow) -> None:
    from ..store import insert

    insert(con, "baselines", [row])
    insert(con, "baseline_draws", row.draws)
