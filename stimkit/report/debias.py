"""The figure of before and after (analysis.debias.BeforeAfter rows): per test, d with its
interval on the base and on each debiased encoder (left), and the change in d from the base
with its paired interval (right)."""

from __future__ import annotations

from matplotlib import rc_context
from matplotlib.figure import Figure

from .figures import COLUMN_IN, GREY, STYLE

# Okabe & Ito, after figures.py's X and Y colours: base first, then each debiased encoder.
COLOURS = ("#000000", "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00")


def _err(value, low, high):
    return [[value - low if low is not None else 0], [high - value if high is not None else 0]]


def before_after_figure(rows) -> Figure:
    tests = list(dict.fromkeys(r.test for r in rows))
    encs = list(dict.fromkeys(r.encoder for r in rows))
    step = 0.8 / max(len(encs), 1)
    with rc_context(STYLE):
        fig = Figure(figsize=(2 * COLUMN_IN, 0.45 * len(tests) * len(encs) + 0.9))
        left, right = fig.subplots(1, 2, sharey=True)
        for r in rows:
            i, j = tests.index(r.test), encs.index(r.encoder)
            y = i + (j - (len(encs) - 1) / 2) * step
            colour = COLOURS[j % len(COLOURS)]
            left.errorbar([r.d], [y], xerr=_err(r.d, r.d_low, r.d_high), fmt="o", color=colour, ms=3, capsize=2,
                          label=r.encoder if i == 0 else None)
            if r.change is not None:
                right.errorbar([r.change], [y], xerr=_err(r.change, r.change_low, r.change_high), fmt="s",
                               color=colour, ms=3, capsize=2)
        for ax, title in ((left, "d (95% interval)"), (right, "change in d from the base (paired, 95%)")):
            ax.axvline(0, color=GREY, lw=0.6)
            ax.set_title(title)
        left.set_yticks(range(len(tests)), tests)
        left.invert_yaxis()
        fig.legend(*left.get_legend_handles_labels(), loc="lower center", ncol=min(len(encs), 3), frameon=False)
        fig.tight_layout(rect=(0, 0.1 if len(encs) <= 3 else 0.16, 1, 1))
    return fig
