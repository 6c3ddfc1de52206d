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

# Bounds on work that a typo could make endless (raise them with STIMKIT_MAX_CUTS, STIMKIT_MAX_BOOTSTRAP).
MAX_CUTS = 1_000
MAX_BOOTSTRAP = 100_000


def _check_seed(name: str, value: int) -> None:
    if not 0 <= value < 2 ** 63:
        raise UsageError(f"--{name.replace('_', '-')} must be between 0 and 2^63 - 1, not {value}")


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
                                  # None: the test's own, else words (a word test's unit is always the word)

    def __post_init__(self):
        """Refuse values and combinations that have no meaning, before any work."""
        if self.method not in METHODS:
            raise UsageError(f"unknown p-value method {self.method!r} (known: {', '.join(METHODS)})")
        if self.alternative is not None and self.alternative not in ALTERNATIVES:
            raise UsageError(f"unknown alternative {self.alternative!r} (known: {', '.join(ALTERNATIVES)})")
        if self.budget < 2:
            raise UsageError("the sample budget must be at least 2")
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
        if self.center is None and self.center_ref != "test":
            raise UsageError("--center-ref names the reference of --center mean|abtt:K: give --center too")
        if self.cuts > 1 and self.metrics not in (None, ("weat",)):
            raise UsageError("--cuts measures WEAT's d across cuts: run other metrics without --cuts")

    @property
    def centering(self) -> str | None:
        """The centring as recorded on a result (part of its hypothesis): 'mean ref=test'."""
        return None if self.center is None else f"{self.center} ref={self.center_ref}"

    def resolved(self, test: TestDef) -> Options:
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
                       units=units, clustered=units == "words" and test.context != "word")

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
        if self.budget < 2:
            raise UsageError("the sample budget must be at least 2")
        _check_replicates(self.bootstrap)
        if self.drop_least_typical is not None and not 0 <= self.drop_least_typical < 1:
            raise UsageError(f"--drop-least-typical must be in [0, 1), got {self.drop_least_typical}")
        check_level(self.ci_level)
        _check_seed("seed", self.seed)
