"""Replicate families and reliability as a person reads them: the summary of a test over a
family (a line on stderr after `test`, a table from `stimkit replicates`) and the coefficients
`stimkit reliability` stored (a table)."""

from __future__ import annotations

from .emit import default_format, emit
from .text import count

SUMMARY_COLUMNS = ["test", "encoder", "n_replicates", "d_median", "d_low", "d_high", "share_holding", "n_seed",
                   "seed_d_low", "seed_d_high", "seed_d_sd", "n_boot", "boot_d_low", "boot_d_high", "boot_d_sd",
                   "var_share_words", "var_share_replicates", "var_share_group_replicate", "n_shared_words"]
# a table's reading set (`--wide`, csv and the others: every column, the notes and result ids too)
RELIABILITY_COLUMNS = ["measure", "coefficient", "test", "role", "subjects", "raters", "n_subjects", "n_raters",
                       "value", "ci_low", "ci_high"]


def _range(low, high) -> str:
    return f"[{low:+.2f}, {high:+.2f}]" if low is not None and high is not None else "[n/a]"


def summary_line(row) -> str:
    """One family's test in words: d's median and interval over replicates, the share holding,
    seeds' and bootstrap samples' spread, the variance split."""
    r = row if isinstance(row, dict) else vars(row)
    d = f"{r['d_median']:+.2f}" if r["d_median"] is not None else "n/a"
    parts = [f"{r['test']} / {r['encoder']}: d {d} {_range(r['d_low'], r['d_high'])} over "
             f"{count(r['n_replicates'], 'replicate')}"]
    if r["share_holding"] is not None:
        parts.append(f"p <= {r['alpha']:g} in {r['share_holding']:.0%}")
    for kind in ("seed", "boot"):
        n = r[f"n_{kind}"]
        if n:
            sd = r[f"{kind}_d_sd"]
            parts.append(f"{'seeds' if kind == 'seed' else 'bootstrap'} ({n}) {_range(r[f'{kind}_d_low'], r[f'{kind}_d_high'])}"
                         + (f" sd {sd:.3f}" if sd is not None else ""))
    names = [("words", "words"), ("templates", "templates"), ("group_template", "X-Y x template"),
             ("replicates", "replicates"), ("group_replicate", "X-Y x replicate"), ("residual", "residual")]
    if r.get("context") == "word":  # a word test has no templates
        names = [n for n in names if "template" not in n[0]]
    shares = [(label, r.get(f"var_share_{name}")) for name, label in names]
    if any(v is not None for _, v in shares):
        parts.append("variance: " + ", ".join(f"{name} {v:.0%}" for name, v in shares if v is not None))
    elif r.get("var_method"):
        parts.append(f"variance split {r['var_method']}")
    return "; ".join(parts)


def show_summaries(df, fmt: str | None = None, wide: bool = False) -> None:
    fmt = fmt or default_format()
    emit(df, fmt, None if wide or fmt != "table" else SUMMARY_COLUMNS,
         keep=("test", "encoder", "d_median"))


def show_reliability(df, fmt: str | None = None, wide: bool = False) -> None:
    fmt = fmt or default_format()
    emit(df, fmt, None if wide or fmt != "table" else RELIABILITY_COLUMNS,
         keep=("measure", "coefficient", "value"))
