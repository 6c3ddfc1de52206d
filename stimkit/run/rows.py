"""What a run writes, as rows with named fields (one table each; `store.insert` writes them)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import get_type_hints

import polars as pl

from ..store import column


# A result is made of parts, each built by the code that computes it (run.association and its
# helpers): a new statistic is one field in its part (and its column, db/), never a field of
# one long row. `Result.row()` flattens the parts into the `results` row (field names are
# column names, each in one part); `res.p_value` reads a column from its part.

@dataclass(frozen=True)
class Identity:
    """What was tested, on what: the hypothesis a result answers."""
    result_id: str                 # <run_id>/<test>/<encoder fingerprint>[/<metric>]
    run_id: str
    test: str
    test_source: str
    paper_test: str | None         # the test in its paper: Caliskan's row (C1..C10, C3b), +C11, ABW, ...
    encoder: str                   # as named (a c-word result names the encoder, not its token variant)
    model: str
    fingerprint: str
    context: str                   # word | sentence | token | c-word | minimal-pairs (a scoring encoder)
    kind: str = "test"             # test | audit | compare: only tests a user ran make the default family
    metric: str = "weat"           # the association metric (stats.metrics); weat: effect_size is d
    display: str | None = None     # the encoder's display name, if one was given
    language: str | None = None    # the test's language: "de", or "en+de" (targets+attributes) cross-lingual
    pair_key: str | None = None    # the test definition's `pair`: its word test and sentence test are compared


@dataclass(frozen=True)
class Sets:
    """The four sets as tested: their SQL and versions, the stimuli that took part, and those
    dropped (no vector) or cut (balance)."""
    x_sql: str
    y_sql: str
    a_sql: str
    b_sql: str
    set_versions: list[str]
    n_x: int
    n_y: int
    n_a: int
    n_b: int
    n_dropped_oov: int
    balance: str
    cut_seed: int | None
    n_balanced_away: int
    n_shared_vectors: int | None = None  # stimuli whose vector another word has too (the encoder cannot tell them apart)
    word_lists: list[str | None] | None = None  # the word list behind X, Y, A, B (None: a set given as SQL)
    role_versions: str | None = None  # which versions play X, Y, A, B (stimuli.sets.role_versions)
    items: pl.DataFrame | None = column(stored=False)  # result_items: one row per selected stimulus
    pairs: pl.DataFrame | None = column(stored=False)  # result_pairs: a likelihood test's minimal pairs (run.likelihood)


@dataclass(frozen=True)
class Inference:
    """The statistic, d and its permutation p, with the procedure that decides them."""
    statistic: float
    statistic_kind: str            # sum difference | mean difference | <metric> (<kind>)
    effect_size: float | None      # d (WEAT); None for another metric
    ddof: int
    p_value: float | None
    p_method: str | None
    budget: int
    samples: int
    min_p: float | None
    log10_partitions: float | None
    alternative: str
    seed: int
    units: str | None = None       # sentences | words: what the permutation moved (part of the hypothesis)
    centering: str | None = None   # 'mean ref=test', 'abtt:1 ref=SET': vectors centred before cosines
    p_null_reason: str | None = None  # why p_value is NULL: the metric has no permutation null


@dataclass(frozen=True)
class Interval:
    """The interval of d at ci_level (None: no interval: another metric, or no spread in X or Y)."""
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = None
    bootstrap: int | None = None   # --bootstrap N replicates
    ci_method: str | None = None   # how ci_low/ci_high were made: nct | gpq-words | bootstrap-bca
    ci_scheme: str | None = None   # what the interval models or resamples, in words


@dataclass(frozen=True)
class Generalisation:
    """d and p beyond the items tested: whole words as the permutation's units, and words and
    templates as random factors (stats.crossed; run.crossed: sentence tests over 2+ frames)."""
    p_words: float | None = None   # the p with whole words as units, whatever `units` (a word-unit result: p_value)
    p_words_method: str | None = None
    p_words_min: float | None = None
    crossed_d: float | None = None        # the estimate of the population d (Caliskan's scale)
    crossed_ci_low: float | None = None   # its interval at ci_level, generalising to new words and templates
    crossed_ci_high: float | None = None
    crossed_p: float | None = None        # the group contrast's p under the model, for `alternative`
    crossed_method: str | None = None     # anova-gpq
    crossed_df: float | None = None       # Satterthwaite df of the contrast's variance
    crossed_scheme: str | None = None     # the design in words; "not estimated: why" when the model cannot be fitted
    n_templates: int | None = None        # template frames of the target sentences
    var_share_words: float | None = None  # shares of the SD^2 d divides by: words,
    var_share_templates: float | None = None       # templates,
    var_share_group_template: float | None = None  # group x template (what moves d between templates),
    var_share_residual: float | None = None        # word x template and sentence noise
    crossed: object | None = column(None, stored=False)  # the stats.crossed.CrossedResult (the audit reads it)


@dataclass(frozen=True)
class Robustness:
    """How much d and the decision move: over --cuts K cuts of the targets, and without one
    word (stats.influence); the stimuli's diagnostics (frequency, length, reliability)."""
    cuts: int | None = None        # the spread over --cuts K cuts
    cut_d_min: float | None = None
    cut_d_median: float | None = None
    cut_d_max: float | None = None
    cut_p_min: float | None = None
    cut_p_median: float | None = None
    cut_p_max: float | None = None
    cut_reject_share: float | None = None
    cut_alpha: float | None = None
    influential_word: str | None = None  # the word that flips the decision when left out (moving d most), else
    influential_role: str | None = None  # the one moving d most; its role (X, Y, A, B), d and p without it
    influential_d: float | None = None
    influential_p: float | None = None
    fragile: bool | None = None    # the decision at influence_alpha flips when one word is left out
    influence_alpha: float | None = None
    cut_rows: tuple["CutRow", ...] = column((), stored=False)  # result_cuts
    influence: tuple["InfluenceRow", ...] = column((), stored=False)  # result_influence
    diagnostics: tuple["DiagnosticRow", ...] = column((), stored=False)  # result_diagnostics: X's and Y's words


@dataclass(frozen=True)
class Provenance:
    """How the result was made: the options (JSON, with the sampler), the version, the time."""
    options: str                   # JSON of the options and the sampler
    stimkit_version: str
    seconds: float
    clustered: bool                # units == 'words' (the column before `units`)
    input_key: str | None = None   # what it was computed from (run.association.result_key): reused while unchanged


@dataclass(frozen=True, kw_only=True)
class Result:
    """One association test on one encoder, in parts; `row()` is its row of `results`, and
    its child rows (items, cuts, influence, diagnostics) go to their tables (run.association.write)."""
    identity: Identity
    sets: Sets
    inference: Inference
    interval: Interval = field(default_factory=Interval)
    generalisation: Generalisation = field(default_factory=Generalisation)
    robustness: Robustness = field(default_factory=Robustness)
    provenance: Provenance

    def row(self) -> dict:
        """The row of `results`: every stored field of every part, by its column name."""
        return dict(zip(COLUMNS, _stored(self)))

    def event(self, done: int, total: int) -> "ResultEvent":
        """What a progress line shows of this result, the done'th of total."""
        return ResultEvent(done, total, *_shown(self))


PARTS: dict[str, type] = get_type_hints(Result)  # part name -> its class
_STORED = [(part, f.name) for part, cls in PARTS.items() for f in fields(cls) if f.metadata.get("stored", True)]
COLUMNS = tuple(name for _, name in _STORED)  # the columns of `results` a result fills, in its parts' order
_stored = attrgetter(*(f"{part}.{name}" for part, name in _STORED))
for _part, _cls in PARTS.items():  # res.p_value: the column, read from its part
    for _f in fields(_cls):
        if _f.name in PARTS or hasattr(Result, _f.name):
            raise TypeError(f"Result: {_f.name} is in two parts, or names a part or a method")
        setattr(Result, _f.name, property(attrgetter(f"{_part}.{_f.name}"), doc=f"{_part}.{_f.name}"))


@dataclass(frozen=True)
class ResultEvent:
    """One result done, as a progress line shows it: what `Store.test` and `Store.run` pass
    to on_result (fields named as the result's columns, filled by Result.event)."""
    done: int                      # results and failures so far, of
    total: int
    test: str
    encoder: str
    metric: str
    statistic: float
    effect_size: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    min_p: float | None
    p_method: str | None
    p_null_reason: str | None
    n_x: int
    n_y: int
    n_a: int
    n_b: int
    n_dropped_oov: int
    n_balanced_away: int
    balance: str
    cuts: int | None
    cut_d_min: float | None
    cut_d_max: float | None
    cut_reject_share: float | None
    fragile: bool | None
    influential_word: str | None
    influential_role: str | None
    influential_d: float | None
    influential_p: float | None
    influence_alpha: float | None
    units: str | None
    p_words: float | None
    context: str | None            # word, sentence, c-word: what n counts (views.text.n_text)
    options: str | None = None     # JSON: a likelihood result's variant is read from it (views.text.n_text)


_shown = attrgetter(*(f.name for f in fields(ResultEvent)[2:]))  # the event's fields after done and total


@dataclass(frozen=True)
class DiagnosticRow:
    """What one target set of a result is made of: a row of `result_diagnostics`."""
    result_id: str
    role: str                      # X | Y
    n_words: int
    zipf_mean: float               # wordfreq's Zipf scale, over the set's distinct words
    zipf_sd: float | None
    pieces_mean: float | None      # mean subword count under the encoder's tokenizer
    oov_share: float | None        # share of words a static vocabulary lacks
    reliability: float | None      # split-half (Spearman-Brown) of the words' association profiles
    language: str


@dataclass(frozen=True)
class BaselineRow:
    """A matched random baseline of one test on one encoder: a row of `baselines`, with its draws."""
    baseline_id: str               # hash of what decides it: test, fingerprint, set versions, K, seed, procedure
    run_id: str
    test: str
    encoder: str
    fingerprint: str
    context: str
    set_versions: list[str]
    role_versions: str | None      # which versions play X, Y, A, B: part of its id
    k: int
    seed: int
    procedure: str                 # JSON: the test's options that decide d and p, and how words were matched
    alternative: str
    balance: str | None
    cut_seed: int | None
    clustered: bool
    ddof: int
    centering: str | None
    p_method: str
    samples: int
    tolerance: float
    vocabulary: str
    language: str
    n_candidates: int              # reference words that matched some target word
    min_pool: int                  # candidates of the target word with the fewest
    observed_d: float
    percentile: float              # the observed d among the K random d (0-100, ties half)
    fpr: float                     # share of random pairs with p <= alpha
    alpha: float
    d_median: float
    d_low: float
    d_high: float
    d_x: float                     # median d of X against its matched random set
    d_y: float                     # median d of Y against its matched random set
    stimkit_version: str
    seconds: float
    draws: pl.DataFrame | None = column(stored=False)   # baseline_draws: one row per drawn pair


@dataclass(frozen=True)
class CutRow:
    """One of --cuts K independent cuts of a result: a row of `result_cuts`."""
    result_id: str
    cut: int
    cut_seed: int
    effect_size: float
    p_value: float
    p_method: str
    rejected: bool


@dataclass(frozen=True)
class InfluenceRow:
    """d and p with one target or attribute word left out: a row of `result_influence`."""
    result_id: str
    role: str
    word: str
    n_stimuli: int
    d_without: float | None
    p_without: float | None
    p_method: str | None
    decision_flip: bool | None
    p_se: float | None = None      # the Monte Carlo error of p_without (0: exact)


@dataclass(frozen=True)
class WefatItem:
    """One target word of a WEFAT: a row of `wefat_items`."""
    result_id: str
    ordinal: int
    word: str
    set_version: str | None
    n_stimuli: int
    template_ids: list[str] | None
    association: float | None
    property: float | None
    word_p_value: float | None
    dropped: str | None


@dataclass(frozen=True)
class WefatResult:
    """One WEFAT on one encoder: a row of `wefat_results`, with its words."""
    result_id: str
    run_id: str
    name: str
    source: str
    encoder: str
    model: str
    fingerprint: str
    context: str
    targets_sql: str
    a_sql: str
    b_sql: str
    set_versions: list[str]
    property: str
    property_version: str | None
    n: int
    n_a: int
    n_b: int
    dropped_words: list[str]
    r: float
    p_value: float
    rho: float
    rho_p_value: float
    slope: float
    slope_ci_low: float
    slope_ci_high: float
    intercept: float
    intercept_ci_low: float
    intercept_ci_high: float
    r_ci_low: float | None
    r_ci_high: float | None
    ci_level: float
    bootstrap: int | None
    drop_least_typical: float | None
    word_p_method: str
    budget: int
    seed: int
    options: str
    stimkit_version: str
    seconds: float
    items: tuple[WefatItem, ...] = column((), stored=False)


@dataclass(frozen=True)
class AuditTemplate:
    """A template alone or left out: a row of `audit_templates`."""
    audit_id: str
    analysis: str                  # alone | left_out
    frame: str
    template_ids: list[str]
    n_x: int
    n_y: int
    effect_size: float | None
    variance: float | None
    p_value: float | None
    p_method: str | None
    shift: float | None
    decision_flip: bool | None
    sign_flip: bool | None
    note: str | None


@dataclass(frozen=True)
class AuditWord:
    """d without one word: a row of `audit_words`."""
    audit_id: str
    role: str
    word: str
    n_stimuli: int
    d_without: float | None
    influence: float | None


@dataclass(frozen=True)
class Audit:
    """One test under one template set on one encoder: a row of `audits`, with its parts."""
    audit_id: str
    run_id: str
    test: str
    template_set: str
    encoder: str
    fingerprint: str
    alpha: float
    full_d: float
    full_p: float
    n_templates: int
    k_meta: int                    # templates in the crossed model
    pooled_d: float | None         # the crossed d (results.crossed_d); db/014_crossed.sql: what each pooled column means
    pooled_se: float | None
    ci_low: float | None
    ci_high: float | None
    pi_low: float | None
    pi_high: float | None
    tau2: float | None
    i2: float | None
    q: float | None
    decision_flip_share: float | None
    sign_flip_share: float | None
    templates: tuple[AuditTemplate, ...] = column((), stored=False)
    words: tuple[AuditWord, ...] = column((), stored=False)
    full_ci: tuple[float | None, float | None] = column((None, None), stored=False)  # stored in the full test's result row
    # the pooled columns come from the crossed model of the full test (db/014_crossed.sql)
    pooled_method: str | None = None          # anova-gpq (NULL: a DerSimonian-Laird audit from before)
    pooled_p: float | None = None
    pooled_df: float | None = None
    var_share_words: float | None = None
    var_share_templates: float | None = None
    var_share_group_template: float | None = None
    var_share_residual: float | None = None
    pooled_note: str | None = column(None, stored=False)  # why there is no pooled estimate (results.crossed_scheme)


@dataclass(frozen=True)
class Failure:
    test: str      # '*' when a whole encoder failed
    encoder: str   # '*' when a test failed for every encoder
    cause: str
    error: BaseException | None = field(default=None, compare=False, repr=False)  # what was raised

    def __str__(self) -> str:
        # a name as typed may hold a line break (a quoted template): the failure stays one line
        def shown(name): return name if name.isprintable() else repr(name)[1:-1]
        return f"test {shown(self.test)}, encoder {shown(self.encoder)}: {self.cause}"

    def as_error(self) -> BaseException:
        """The error to raise where one failure stops the whole (an audit)."""
        from ..errors import InputError

        return self.error if self.error is not None else InputError(self.cause)


@dataclass(frozen=True)
class FailureRow:
    """A failure of a stored run, as table run_failures keeps it (a report of the run names it)."""
    run_id: str
    test: str
    encoder: str
    cause: str


@dataclass
class RunReport:
    """What one run stored (results, WEFATs, audits) and what failed."""
    run_id: str | None
    results: list[Result]
    failures: list[Failure]
    alpha: float
    n_tests: int = 0
    n_encoders: int = 0
    wefats: list[WefatResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # what did not apply (an encoder without c-word vectors)
    warnings: list[str] = field(default_factory=list)  # stimulus diagnostics: X and Y differ in frequency, length
    baselines: list[BaselineRow] = field(default_factory=list)  # computed or reused
    reused: list[str] = field(default_factory=list)   # baseline_ids found stored, not computed again
    reused_results: list[str] = field(default_factory=list)  # result_ids stored under today's input keys: not recomputed
    computed: bool = True          # False: nothing changed, nothing computed (run_id names the study's latest run)
    summaries: list = field(default_factory=list)  # run.replicates.SummaryRow: a replicate family's, per test

    @property
    def cannot_reject(self) -> list[Result]:
        """Results whose smallest possible p is above alpha: they could never reject."""
        return [r for r in self.results if r.min_p is not None and r.min_p > self.alpha]
