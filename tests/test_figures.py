"""Figures that fit their names: with a 60-character encoder and a 40-character test every label
lies inside its figure, no title overlaps a label, and matplotlib warns about nothing."""

import warnings

import numpy as np
import polars as pl
import pytest

pytest.importorskip("matplotlib", reason="the report needs matplotlib (pip install 'stimkit[report]')")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from stimkit.report import figures  # noqa: E402

LONG_ENCODER = "hf:sentence-transformers/paraphrase-multilingual-mpnet-base-v2-x"[:60]
LONG_TEST = "angry-black-woman-stereotype-sentences-b"


def labels_inside(fig) -> list:
    """Draw the figure with every warning an error; return the texts whose box leaves the figure."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a constrained-layout warning fails the test
        canvas = FigureCanvasAgg(fig)
        figures.settle(fig)  # as figures.save does before writing
        canvas.draw()
    renderer = canvas.get_renderer()
    box = fig.bbox
    undrawn = set()  # tick labels of ticks outside the view interval: matplotlib keeps them, draws none
    for ax in fig.axes:
        for axis, coord in ((ax.xaxis, 0), (ax.yaxis, 1)):
            low, high = sorted(axis.get_view_interval())
            for t in axis.get_ticklabels(which="both"):
                if not low - 1e-9 <= t.get_position()[coord] <= high + 1e-9:
                    undrawn.add(id(t))
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in undrawn]
    tight = fig.get_tightbbox(renderer)  # in inches: everything drawn lies in the figure
    assert tight.x0 >= -0.01 and tight.y0 >= -0.01 and tight.x1 <= fig.get_figwidth() + 0.01 \
        and tight.y1 <= fig.get_figheight() + 0.01, (tight.extents, fig.get_size_inches())
    outside = []
    for t in texts:
        b = t.get_window_extent(renderer)
        if b.x0 < box.x0 - 1 or b.y0 < box.y0 - 1 or b.x1 > box.x1 + 1 or b.y1 > box.y1 + 1:
            outside.append((t.get_text(), tuple(round(v) for v in b.extents), tuple(box.extents)))
    return outside, renderer


def overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_wrap_keeps_every_character_and_the_width():
    for text, width in ((LONG_ENCODER, 16), (LONG_TEST, 30), ("a" * 50, 16), ("weat6", 16)):
        lines = figures.wrap(text, width).split("\n")
        assert all(len(line) <= width for line in lines) and "".join(lines) == text
    assert figures.wrap(LONG_ENCODER, 16).split("\n")[0] == "hf:sentence-"  # broken at the name's own separators


@pytest.mark.parametrize("n_tests,n_encoders", [(1, 1), (3, 3), (12, 5)])
def test_significance_matrix_fits_long_names(n_tests, n_encoders):
    tests = [LONG_TEST] + [f"weat{i}" for i in range(1, n_tests)]
    encoders = [LONG_ENCODER] + [f"glove-6b-{i}d" for i in range(1, n_encoders)]
    d = np.linspace(-1.5, 1.8, n_tests * n_encoders).reshape(n_tests, n_encoders)
    labels = [[f"{v:+.2f}**\n[{v - 0.41:.2f}, {v + 0.33:.2f}]" for v in row] for row in d]  # d over its interval
    tips = [[f"{t} / {e}: d = {v:+.3f}" for e, v in zip(encoders, row)] for t, row in zip(tests, d)]
    fig, cell_tips = figures.significance_matrix(d, labels, tests, encoders,
                                                 "d by test and encoder\n* p <= 0.01; ** also after holm (m = 9)", tips)
    outside, renderer = labels_inside(fig)
    assert outside == []
    cells = [t for t in fig.axes[0].texts if "[" in t.get_text()]
    assert len(cells) == n_tests * n_encoders
    to_display = fig.axes[0].transData.transform
    for t in cells:  # each label (d and its interval) lies inside its own cell
        (x, y), b = t.get_position(), t.get_window_extent(renderer)
        (cx0, cy0), (cx1, cy1) = to_display((x - 0.5, y - 0.5)), to_display((x + 0.5, y + 0.5))
        assert min(cx0, cx1) <= b.x0 and b.x1 <= max(cx0, cx1) and min(cy0, cy1) <= b.y0 and b.y1 <= max(cy0, cy1), t.get_text()
    assert sorted(cell_tips.values()) == sorted(tip for row in tips for tip in row)
    svg = figures.inline_svg(fig, "m", cell_tips)  # every cell says itself in full on hover
    assert all(f"<svg:title>{tip}</svg:title>" in svg or f"<title>{tip}</title>" in svg for row in tips for tip in row)
    ax = fig.axes[0]
    ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    title = fig._suptitle.get_window_extent(renderer)
    assert not any(overlaps(title, t) for t in ticks)
    xticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
    assert not any(overlaps(a, b) for i, a in enumerate(xticks) for b in xticks[i + 1:])  # encoder names apart
    assert "".join(ax.get_xticklabels()[0].get_text().split("\n")) == LONG_ENCODER


def test_strip_names_rows_by_category_and_fits():
    rng = np.random.default_rng(0)
    rows = []
    for enc in (LONG_ENCODER, "glove-6b-50d"):
        for role, cat in (("X", "European American male names"), ("Y", "African American female names")):
            for k in range(6):
                rows.append({"encoder": enc, "role": role, "word": f"w{k}", "stimulus": f"This is w{k}.",
                             "association": float(rng.normal()), "category": cat})
    fig, tips = figures.strip(pl.DataFrame(rows), LONG_TEST)
    outside, _ = labels_inside(fig)
    assert outside == [], outside
    ticks = [" ".join(t.get_text().split("\n")) for t in fig.axes[0].get_yticklabels()]
    assert ticks == ["African American female names", "European American male names"]  # Y below, X above
    assert all(tip.startswith(("European American male names (X): ", "African American female names (Y): ")) for tip in tips.values())
    # without categories the roles' letters
    fig, _ = figures.strip(pl.DataFrame(rows).drop("category"), "weat6")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["Y", "X"]
    assert "to A (A) minus" in " ".join(fig.axes[-1].get_xlabel().split())
    # the axis names A and B by their categories (issue 38)
    named = pl.DataFrame(rows).with_columns(pl.lit("Pleasant").alias("a_category"), pl.lit("Unpleasant").alias("b_category"))
    fig, _ = figures.strip(named, "weat6")
    assert "to A (Pleasant) minus mean cosine to B (Unpleasant)" in " ".join(fig.axes[-1].get_xlabel().split())
    assert labels_inside(fig)[0] == []


def test_cut_spread_forest_and_wefat_fit_long_names():
    cuts = pl.DataFrame({"test": [LONG_TEST] * 3 + ["weat6"] * 3, "encoder": [LONG_ENCODER] * 3 + ["glove-6b-50d"] * 3,
                         "d_full": [1.0] * 3 + [0.5] * 3, "cut": [0, 1, 2] * 2, "effect_size": [0.9, 1.1, 1.2, 0.4, 0.5, 0.7],
                         "p_value": [0.001] * 6, "rejected": [True, False, True] * 2})
    outside, _ = labels_inside(figures.cut_spread(cuts))
    assert outside == [], outside
    templates = pl.DataFrame({"analysis": ["alone", "left_out"] * 3, "frame": [f"This is {{}} a rather long template {i}." for i in range(3) for _ in range(2)],
                              "effect_size": [0.5, 0.6, 0.8, 0.4, 1.0, 0.3], "variance": [0.04] * 6})
    audit = {"test": LONG_TEST, "encoder": LONG_ENCODER, "template_set": "may2019", "pooled_d": 0.7, "ci_low": 0.4,
             "ci_high": 1.0, "pi_low": 0.1, "pi_high": 1.3, "full_d": 0.65, "tau2": 0.01, "decision_flip_share": 0.2,
             "sign_flip_share": 0.0}
    outside, _ = labels_inside(figures.forest(audit, templates))
    assert outside == [], outside
    items = pl.DataFrame({"word": ["nurse", "engineer"], "association": [0.1, -0.1], "property": [90.0, 10.0]})
    r = {"name": LONG_TEST, "encoder": LONG_ENCODER, "r": 0.9, "p_value": 0.04, "n": 2, "slope": 0.0025, "intercept": -0.1}
    outside, _ = labels_inside(figures.wefat_scatter(r, items))
    assert outside == [], outside
