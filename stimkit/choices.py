"""Value checks that options and queries share (no imports: `stimkit results` starts fast)."""

from __future__ import annotations

import os

from .errors import UsageError

# Every enumerated option value, in one place: the code that checks a value and the help text
# that lists the values both read these (tests/test_cli_startup.py holds each help to its list).
ALTERNATIVES = ("greater", "less", "two-sided")
UNITS = ("sentences", "words")  # what a sentence test's permutation moves: its unit of inference
CORRECTIONS = ("holm", "bonferroni", "bh", "by", "none")  # queries/<name>.sql, and none
P_METHODS = ("auto", "exact", "sampled", "parametric")  # a test's p-value procedure
WORD_P_METHODS = ("auto", "exact", "sampled")  # a WEFAT's per-word p
BALANCE_POLICIES = ("cut", "drop-words", "none")
CONTEXTS = ("word", "sentence", "c-word")
WEFAT_CONTEXTS = ("word", "sentence")
SOURCES = ("catalog", "imported")  # where a test is defined
RESULT_KINDS = ("test", "audit", "compare", "debias", "all")  # which results a family reads
LAYOUTS = ("tan-celis",)  # results' tables besides Table 4
ENGINES = ("local", "ray")  # where encode runs the model
REPORT_FORMATS = ("html", "svg", "png", "pdf")
CENTERINGS = ("mean", "abtt:K")  # --center: the mean, or the mean and the top K directions
# stats.metrics.METRICS, in its order (tests/test_metrics.py holds the two equal)
METRIC_NAMES = ("weat", "gweat", "ripa", "rnd", "semaxis", "ect", "rnsb", "mac", "same", "direct_bias")


def choices(values) -> str:
    """The values an option takes, as its help lists them: `cut | drop-words | none`."""
    return " | ".join(values)


def check_correction(method: str) -> str:
    """--correct checked before any work: a wrong name is a usage error (exit 2)."""
    if method not in CORRECTIONS:
        raise UsageError(f"--correct {method!r}: unknown correction (known: {', '.join(CORRECTIONS)})")
    return method


def check_choice(value: str, values, option: str, what: str = "value") -> str:
    """An enumerated option's value, checked before any work: a usage error names the known ones."""
    if value not in values:
        raise UsageError((f"{option}: " if option else "") + f"unknown {what} {value!r} (known: {', '.join(values)})")
    return value


def suggest(name: str, known, n: int = 3) -> str:
    """' (did you mean a, b?)' for the known names closest to a mistyped one, else ''."""
    import difflib

    known = list(known)
    by_case = {}  # names that differ only in case are close: `-e MiniLM` means minilm
    for k in known:
        by_case.setdefault(k.casefold(), k)
    close = difflib.get_close_matches(name, known, n=n, cutoff=0.6) or \
        [by_case[c] for c in difflib.get_close_matches(name.casefold(), list(by_case), n=n, cutoff=0.6)]
    return f" (did you mean {', '.join(close)}?)" if close else ""


def check_alpha(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1 (exclusive), not {alpha}")
    return float(alpha)


def check_level(level: float, what: str = "the CI level") -> float:
    if not 0 < level < 1:
        raise UsageError(f"{what} must be between 0 and 1 (exclusive), not {level}")
    return float(level)


def limit(name: str, default: int) -> int:
    """A bound on work (STIMKIT_<NAME>, documented in docs/guarantees.md), so a typo
    cannot start an hour-long or memory-filling computation."""
    raw = os.environ.get(f"STIMKIT_{name.upper()}")
    try:
        return int(raw) if raw else default
    except ValueError:
        raise UsageError(f"STIMKIT_{name.upper()} must be a whole number, not {raw!r}") from None
