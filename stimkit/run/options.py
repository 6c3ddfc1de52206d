"""Options of a run: checked when made, so an invalid Options cannot exist."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import DEFAULT_BUDGET
from ..catalog.definitions import TestDef
from ..choices import UNITS, WORD_P_METHODS, check_alpha, check_level, limit
from ..errors import UsageError
from ..stats import ALTERNATIVES, METHODS
from ..stats.centering import parse_method
from ..stats.metrics import metric
from ..stimuli.balance import BALANCE_POLICIES

MASKED_ONLY = ("pll", "aul")  # built-in variants with no row for a causal LM's text (queries/likelihood)
# Bounds on work that a typo could make endless (raise them with STIMKIT_MAX_CUTS, STIMKIT_MAX_BOOTSTRAP,
# STIMKIT_MAX_BUDGET).
MAX_CUTS = 1_000
MAX_BOOTSTRAP = 100_000
MAX_BUDGET = 10_000_000


def _check_seed(name: str, value: int) -> None:
    if not 0 <= value < 2 ** 63:
        raise UsageError(f"--{name.replace('_', '-')} must be between 0 and 2^63 - 1, not {value}")


def check_budget(budget: int) -> None:
    """The permutation sample budget: at least 2, at most the bound (a typo of 1e9 would run for hours)."""
    if budget < 2:
        raise UsageError("the sample budget must be at least 2")
    if budget > limit("max_budget", MAX_BUDGET):
        raise UsageError(f"--budget {budget} is over the limit of {limit('max_budget', MAX_BUDGET):,} "
                         "(raise it with STIMKIT_MAX_BUDGET)")


def _check_replicates(bootstrap: int) -> None:
    if bootstrap < 0:
        raise UsageError(f"--bootstrap must be 0 (none) or a number of replicates, not {bootstrap}")
    if bootstrap > limit("max_bootstrap", MAX_BOOTSTRAP):
        raise UsageError(f"--bootstrap {bootstrap} is over the limit of {limit('max_bootstrap', MAX_BOOTSTRAP):,} "
                         "(raise it with STIMKIT_MAX_BOOTSTRAP)")


@dataclass(frozen=True)
class Options:
    budget: int = DEFAULT_BUDGET
    method: str = "auto"          # auto | exact | sampled | parametric
    alternative: str | None = None  # greater | less | two-sided; None: the test's own, else greater
    seed: int = 0                 # permutation samples and bootstrap draws only
    ddof: int = 1
    clustered: bool = False       # the old name of units="words" (kept for scripts); resolved: whole words permuted
    bootstrap: int = 0            # replicates for a CI of d; 0 = none
    ci_level: float = 0.95
    balance: str | None = None    # None: the test's own policy
    cut_seed: int = 0             # which items balance=cut drops: part of the test, never --seed
    cuts: int = 1                 # > 1: also run K independent cuts and store their spread
    alpha: float = 0.01           # for the share of cuts that reject, and the power warning
    metrics: tuple[str, ...] | None = None  # association metrics (stats.metrics), one result each;
                                            # None: the test's own, else weat
    center: str | None = None     # mean | abtt:K: remove the reference's mean (and top K directions) first
    center_ref: str = "test"      # the reference: the test's own four sets, or a set name or SELECT
    units: str | None = None      # sentences | words: what the permutation moves in a sentence test;
                                  # None: the test's own, else words (a word test's unit is always the word);
                                  # on a scoring encoder words, whatever the test's own (run.likelihood)
    variant: str | None = None    # a likelihood test's scoring variant (encoders.likelihood, kind text);
                                  # None: the encoder's own (sum; pll on a masked LM). Resolved per pair
    variant_folders: tuple[str, ...] = ()  # a study's own variants (its queries/likelihood/); set by the library

    def __post_init__(self):
        """Refuse values and combinations that have no meaning, before any work."""
        if self.method not in METHODS:
            raise UsageError(f"unknown p-value method {self.method!r} (known: {', '.join(METHODS)})")
        if self.alternative is not None and self.alternative not in ALTERNATIVES:
            raise UsageError(f"unknown alternative {self.alternative!r} (known: {', '.join(ALTERNATIVES)})")
        check_budget(self.budget)
        if self.balance is not None and self.balance not in BALANCE_POLICIES:
            raise UsageError(f"unknown balance policy {self.balance!r} (known: {', '.join(BALANCE_POLICIES)})")
        if self.units is not None and self.units not in UNITS:
            raise UsageError(f"unknown units {self.units!r} (known: {', '.join(UNITS)})")
        if self.clustered and self.units == "sentences":
            raise UsageError("--clustered is --units words: it cannot go with --units sentences")
        if self.clustered and self.method == "parametric":
            raise UsageError("--clustered has no parametric form (it takes words as units): use --method auto, exact or "
                             "sampled, or --units sentences for the normal fit")
        if self.clustered and self.units is None:  # the old flag, as the new option says it
            object.__setattr__(self, "units", "words")
        _check_replicates(self.bootstrap)
        if self.cuts < 1:
            raise UsageError(f"--cuts must be at least 1, not {self.cuts}")
        if self.cuts > limit("max_cuts", MAX_CUTS):
            raise UsageError(f"--cuts {self.cuts} is over the limit of {limit('max_cuts', MAX_CUTS):,} "
                             "(raise it with STIMKIT_MAX_CUTS)")
        check_alpha(self.alpha)
        check_level(self.ci_level)
        _check_seed("seed", self.seed)
        _check_seed("cut_seed", self.cut_seed)
        if isinstance(self.metrics, list):  # from a study file: a TOML array
            object.__setattr__(self, "metrics", tuple(self.metrics))
        if self.metrics is not None and (isinstance(self.metrics, str) or not self.metrics):
            raise UsageError("metrics must be a list of metric names (e.g. weat, ripa, ect)")
        for name in self.metrics or ():
            metric(name)  # an unknown name is one line naming the known ones
        if self.center is not None:
            parse_method(self.center)  # mean | abtt:K, or one line
        if isinstance(self.variant_folders, (list, str)):
            object.__setattr__(self, "variant_folders", tuple([self.variant_folders] if isinstance(
                self.variant_folders, str) else self.variant_folders))
        if self.variant is not None:
            self.scoring_variant()  # an unknown name, or a pair variant, is one line before any work
        if self.center is None and self.center_ref != "test":
            raise UsageError("--center-ref names the reference of --center mean|abtt:K: give --center too")
        if self.cuts > 1 and self.metrics not in (None, ("weat",)):
            raise UsageError("--cuts measures WEAT's d across cuts: run other metrics without --cuts")

    @property
    def centering(self) -> str | None:
        """The centring as recorded on a result (part of its hypothesis): 'mean ref=test'."""
        return None if self.center is None else f"{self.center} ref={self.center_ref}"

    def scoring_variant(self):
        """The variant named (encoders.likelihood.Variant): a text variant, built in or the study's."""
        from ..encoders.likelihood import variant
        from ..errors import StimkitError

        try:
            found = variant(self.variant, self.variant_folders)
        except UsageError:
            raise
        except StimkitError as e:  # an unknown name, or a study's file that does not parse
            raise UsageError(f"--variant: {str(e).splitlines()[0]}") from None
        if found.kind != "text":
            raise UsageError(f"--variant {self.variant!r} scores the two sides of a pair ({found.path.name}): a "
                             "likelihood test scores each sentence alone, so it takes a variant of kind text")
        return found

    def for_scoring(self, test: TestDef, score_kind: str) -> Options:
        """The options a test runs under on a scoring encoder whose score kind is `score_kind`
        (causal | pll): its words are the units unless the run (or the study's table for it) gave
        units, whatever the test's own (the issue: whole words permuted, so the result generalises
        to other words); the variant given, else sum (causal) or pll (masked). `self` is the run's
        options before `resolved`."""
        own = replace(self, variant=self.variant or ("pll" if score_kind == "pll" else "sum"))
        if score_kind != "pll" and own.variant in MASKED_ONLY:  # refused before anything is scored or written
            raise UsageError(f"--variant {own.variant} reads a masked LM's passes: a causal model scores with sum or "
                             "mean (or a study's own variant)")
        return own.resolved(replace(test, units=None), scoring=True)  # a published test's `sentences`: its embedding form's

    def resolved(self, test: TestDef, scoring: bool = False) -> Options:
        """The options one test runs under: its own alternative, units and metrics unless the run
        gave some. A sentence test's unit is the word unless it (or the run) says sentences; a
        word test has one stimulus a word, so its unit is the word whatever the run says: a
        study-wide setting never breaks its word tests. `clustered` then says whether whole
        words move with their sentences."""
        metrics = self.metrics or test.metrics or ("weat",)
        for name in metrics:
            metric(name)
        units = "words" if test.context == "word" else (self.units or test.units or "words")
        if units == "words" and test.context != "word" and self.method == "parametric":
            raise UsageError(f"test {test.name!r}: words as units{'' if self.units else ' (its default)'} have no "
                             "parametric form: use --method auto, exact or sampled, or --units sentences for the "
                             "normal fit over sentences")
        return replace(self, alternative=self.alternative or test.alternative or "greater", metrics=tuple(metrics),
                       units=units, clustered=units == "words" and test.context != "word",
                       # a variant is a likelihood test's (for_scoring): none on an embedding, whose key it leaves alone
                       **({} if scoring else {"variant": None, "variant_folders": ()}))

    def for_test(self, test: TestDef) -> str:
        """The balance policy this test runs under; refuses options that make no sense for it."""
        policy = self.balance or test.balance
        if self.cuts > 1 and policy == "none":
            raise UsageError(f"test {test.name!r}: --cuts needs a random balance (cut or drop-words), not balance=none")
        return policy


@dataclass(frozen=True)
class WefatOptions:
    method: str = "auto"              # per-word p: auto | exact | sampled
    budget: int = DEFAULT_BUDGET
    seed: int = 0
    bootstrap: int = 0                # replicates for a CI of r; 0 = none
    ci_level: float = 0.95
    ddof: int = 1
    drop_least_typical: float | None = None   # None: the definition's own

    def __post_init__(self):
        if self.method not in WORD_P_METHODS:
            raise UsageError(f"unknown per-word p-value method {self.method!r} (known: {', '.join(WORD_P_METHODS)})")
        check_budget(self.budget)
        _check_replicates(self.bootstrap)
        if self.drop_least_typical is not None and not 0 <= self.drop_least_typical < 1:
            raise UsageError(f"--drop-least-typical must be in [0, 1), got {self.drop_least_typical}")
        check_level(self.ci_level)
        _check_seed("seed", self.seed)


# What an analysis takes from the study in force, besides its tests: the run's options (Options
# keywords), the encoders, and the study's name, alpha and correction recorded on the run.
ANALYSIS_DROPS = ("cuts", "metrics", "bootstrap")  # a run's extras that an audit's one d and p does not use


@dataclass(frozen=True)
class Procedure:
    """The procedure one command runs under, resolved once (`procedure`): the study's [options]
    and alpha, then what the user typed over them; the study's per-test tables under a flag the
    user typed; the encoders typed, else the study's, else the command's own."""
    values: dict                          # Options keywords (the library's defaults fill the rest)
    encoders: tuple[str, ...]
    study: str | None = None              # the study's name: recorded on the run
    correction: str | None = None
    per_test_tables: tuple = ()           # the study's (pattern, {units, alternative}), in file order
    typed: frozenset = frozenset()        # the keys the user typed: a per-test table never overrides them

    @property
    def alpha(self) -> float | None:
        """The alpha typed or the study's; None: the command's own default."""
        return self.values.get("alpha")

    @property
    def seed(self) -> int:
        return self.values.get("seed", Options.seed)

    def options(self, drop: tuple[str, ...] = (), **extra) -> Options:
        """The Options of the run (`extra`: a command's own values, None left out; `drop`: keys it
        does not use)."""
        values = {k: v for k, v in self.values.items() if k not in drop}
        return Options(**{**values, **{k: v for k, v in extra.items() if v is not None}})

    def analysis(self, alpha: float | None = None) -> Options:
        """The Options of an analysis that computes one d and p a test (audits, CEAT, debias):
        the run's, less its extras (cuts, other metrics, bootstrap), at `alpha`."""
        return self.options(ANALYSIS_DROPS, alpha=alpha)

    def for_test(self, name: str) -> dict:
        """The option values the study's [options."<pattern>"] give the test `name` (later
        tables win), less those the user typed."""
        from fnmatch import fnmatchcase

        found: dict = {}
        for pattern, values in self.per_test_tables:
            if fnmatchcase(name, pattern):
                found.update(values)
        return {k: v for k, v in found.items() if k not in self.typed}

    def per_test(self, name_of=None):
        """run.plan.make's per_test: a test's own values (`name_of(test)`: the name it has in the
        study, e.g. a re-templated test's original); None without per-test tables."""
        if not self.per_test_tables:
            return None
        return lambda t: self.for_test(name_of(t) if name_of else t.name)

    def run_fields(self, alpha: float | None = None) -> dict:
        """What the run row records: the study's name, the alpha in force and the correction."""
        return {"study": self.study, "alpha": alpha if alpha is not None else self.alpha,
                "correction": self.correction}


def procedure(study=None, typed: dict | None = None, encoders=None, fallback=("glove-6b-50d",)) -> Procedure:
    """The one resolution of a command's procedure: `study` (a study.Study, or None), then what
    the user typed (`typed`: option -> value, None or False where not typed), then the
    library's defaults. Every command that runs tests takes it: test, baseline, run, the audits,
    CEAT, debias, wefat."""
    values: dict = {}
    if study is not None:
        values.update(study.options)
        values["alpha"] = study.alpha
        from ..encoders.likelihood import study_folders

        folders = study_folders(study)  # its own scoring variants, beside the built-in ones
        if folders:
            values["variant_folders"] = tuple(str(f) for f in folders)
    given = {k: v for k, v in (typed or {}).items() if v is not None and v is not False}
    values.update(given)
    chosen = (tuple(encoders) if encoders else
              tuple(study.encoders) if study is not None and study.encoders else tuple(fallback))
    typed_keys = set(given) | ({"units"} if given.get("clustered") else set())
    return Procedure(values, chosen, study.name if study is not None else None,
                     study.correction if study is not None else None,
                     tuple(study.per_test) if study is not None else (), frozenset(typed_keys))
