"""Publication figures with matplotlib: static, vector, one column wide, colour-blind-safe.

Figures are built on `matplotlib.figure.Figure` (no pyplot: no global state, no GUI backend)."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib import rc_context
from matplotlib.figure import Figure

from ..seeding import rng_for

# Okabe & Ito (2008): distinguishable under the common colour-vision deficiencies.
X_COLOUR, Y_COLOUR, ACCENT, GREY = "#0072B2", "#E69F00", "#009E73", "#555555"
DIVERGING = "RdBu_r"  # ColorBrewer RdBu: colour-blind safe, white at d = 0
COLUMN_IN = 3.5       # one column of a two-column paper, in inches
STYLE = {
    "font.size": 7, "axes.titlesize": 8, "axes.labelsize": 7, "xtick.labelsize": 6.5, "ytick.labelsize": 6.5,
    "legend.fontsize": 6.5, "axes.spines.top": False, "axes.spines.right": False,
    "svg.fonttype": "path",      # glyphs as paths: the SVG needs no font, the page makes no request
    "svg.hashsalt": "stimkit",   # stable element ids: same store, same SVG
    "pdf.fonttype": 42,
}
SVG_NS = "http://www.w3.org/2000/svg"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")


def new_figure(width: float, height: float) -> Figure:
    with rc_context(STYLE):
        return Figure(figsize=(width, height), layout="constrained")


def significance_matrix(d: np.ndarray, labels: list[list[str]], tests: list[str], encoders: list[str], title: str) -> Figure:
    """Tests x encoders, coloured by d on a diverging scale, each cell labelled with d and its marks."""
    with rc_context(STYLE):
        fig = new_figure(max(COLUMN_IN, 1.6 + 0.75 * len(encoders)), 1.6 + 0.17 * len(tests))
        ax = fig.add_subplot()
        limit = max(1.0, float(np.nanmax(np.abs(d)))) if np.isfinite(d).any() else 1.0
        # pcolormesh, not imshow: cells stay vector shapes in SVG and PDF (imshow embeds a bitmap)
        im = ax.pcolormesh(np.ma.masked_invalid(d), cmap=DIVERGING, vmin=-limit, vmax=limit, edgecolors="white", linewidth=0.5)
        for i, row in enumerate(labels):
            for j, text in enumerate(row):
                if text:
                    dark = np.isfinite(d[i, j]) and abs(d[i, j]) > 0.6 * limit
                    ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=5.5, color="white" if dark else "black")
        ax.set_xticks(np.arange(len(encoders)) + 0.5, encoders, rotation=30, ha="left")
        ax.xaxis.tick_top()  # encoder names above the first rows, where a long matrix is read from
        ax.set_yticks(np.arange(len(tests)) + 0.5, tests)
        ax.invert_yaxis()
        ax.tick_params(length=0)
        ax.spines[:].set_visible(False)
        fig.suptitle(title, x=0.01, ha="left", fontsize=8)  # over the whole figure: long test names take the left
        bar = fig.colorbar(im, ax=ax, location="bottom", shrink=0.6, aspect=30, pad=0.02, label="effect size d (unitless)")
        bar.solids.set_rasterized(False)  # matplotlib rasterizes long colour bars; keep the figure all vector
        return fig


def strip(items: pl.DataFrame, test: str, target_names: tuple[str, str] = ("X", "Y")) -> tuple[Figure, dict[str, str]]:
    """s(w) of X and Y stimuli per encoder; returns the figure and a tooltip per point id."""
    encoders = items["encoder"].unique(maintain_order=True).to_list()
    tips: dict[str, str] = {}
    with rc_context(STYLE):
        fig = new_figure(COLUMN_IN, 0.6 + 0.9 * len(encoders))
        axes = fig.subplots(len(encoders), 1, sharex=True, squeeze=False)[:, 0]
        for ax, enc in zip(axes, encoders):
            rows = items.filter(pl.col("encoder") == enc)
            for level, (role, colour) in enumerate([("Y", Y_COLOUR), ("X", X_COLOUR)]):  # X on top
                part = rows.filter(pl.col("role") == role)
                s = part["association"].to_numpy()
                jitter = rng_for(0, "report-strip", test, enc, role).uniform(-0.25, 0.25, len(s))  # cosmetic only
                for k, (x, y, stim) in enumerate(zip(s, level + jitter, part["stimulus"].to_list())):
                    gid = f"pt-{slug(test)}-{slug(enc)}-{role}-{k}"
                    ax.plot([x], [y], "o", ms=3, alpha=0.7, color=colour, mec="none", gid=gid)
                    tips[gid] = f"{role}: {stim}  s(w) = {x:+.4f}"
                if len(s):
                    ax.vlines(float(np.mean(s)), level - 0.35, level + 0.35, color=colour, lw=1.5)
            ax.axvline(0, color=GREY, lw=0.5, ls=":")
            ax.set_yticks([0, 1], list(target_names)[::-1])
            ax.set_ylim(-0.6, 1.6)
            ax.set_title(enc, loc="left", fontsize=7)
        axes[-1].set_xlabel("s(w, A, B): mean cosine to A minus mean cosine to B")
        fig.suptitle(f"{test}: association of each target stimulus (bar: mean)", fontsize=8, x=0.02, ha="left")
        return fig, tips


def forest(a: dict, templates: pl.DataFrame) -> Figure:
    """Per template: d alone with its 95% CI, d with it left out, and the random-effects pooled d."""
    alone = templates.filter(pl.col("analysis") == "alone").sort("effect_size")
    left = {r["frame"]: r["effect_size"] for r in templates.filter(pl.col("analysis") == "left_out").iter_rows(named=True)}
    frames = alone["frame"].to_list()
    with rc_context(STYLE):
        fig = new_figure(COLUMN_IN * 1.3, 1.8 + 0.2 * (len(frames) + 2))
        ax = fig.add_subplot()
        y = np.arange(len(frames))[::-1] + 2
        d = alone["effect_size"].to_numpy()
        half = 1.959964 * np.sqrt(alone["variance"].to_numpy())
        ax.errorbar(d, y, xerr=half, fmt="s", ms=3, color=X_COLOUR, ecolor=X_COLOUR, lw=0.8, label="template alone (95% CI)")
        lo = np.array([left.get(f, np.nan) for f in frames])
        ax.plot(lo, y, "D", ms=3, mfc="none", color=Y_COLOUR, label="template left out")
        if a.get("pooled_d") is not None:
            pd, cl, ch = a["pooled_d"], a["ci_low"], a["ci_high"]
            ax.fill([cl, pd, ch, pd], [0, 0.3, 0, -0.3], color=ACCENT, label="random-effects pooled d (95% CI)")
            if a.get("pi_low") is not None and np.isfinite(a["pi_low"]):
                ax.hlines(0, a["pi_low"], a["pi_high"], color=ACCENT, lw=0.8, ls="--", label="prediction interval")
        ax.axvline(a["full_d"], color=GREY, lw=0.8, label=f"full test d = {a['full_d']:+.2f}")
        ax.axvline(0, color=GREY, lw=0.5, ls=":")
        ax.set_yticks([0, *y], ["pooled", *frames])
        ax.set_xlabel("effect size d (unitless)")
        tau2 = "n/a" if a.get("tau2") is None else f"{a['tau2']:.3f}"
        flips = "n/a" if a.get("decision_flip_share") is None else f"{a['decision_flip_share']:.0%}"
        signs = "n/a" if a.get("sign_flip_share") is None else f"{a['sign_flip_share']:.0%}"
        ax.set_title(f"{a['test']} / {a['encoder']} / templates {a['template_set']}\n"
                     f"tau² = {tau2}, decision flips {flips}, sign flips {signs}", loc="left")
        fig.legend(loc="outside lower center", ncols=2, frameon=False)
        return fig


def cut_spread(cuts: pl.DataFrame) -> Figure:
    """d across cuts per test and encoder, with the uncut test's d."""
    keys = cuts.select("test", "encoder").unique(maintain_order=True).rows()
    with rc_context(STYLE):
        fig = new_figure(COLUMN_IN * 1.4, 0.8 + 0.22 * len(keys))
        ax = fig.add_subplot()
        for i, (t, e) in enumerate(keys):
            part = cuts.filter((pl.col("test") == t) & (pl.col("encoder") == e))
            d = part["effect_size"].to_numpy()
            rej = part["rejected"].fill_null(False).to_numpy()
            ax.plot(d[rej], np.full(rej.sum(), i), "o", ms=3, color=X_COLOUR, alpha=0.7)
            ax.plot(d[~rej], np.full((~rej).sum(), i), "o", ms=3, mfc="none", color=Y_COLOUR, alpha=0.9)
            ax.plot([part["d_full"][0]], [i], "|", ms=8, color=GREY)
        ax.set_yticks(range(len(keys)), [f"{t} / {e}" for t, e in keys])
        ax.invert_yaxis()
        ax.set_xlabel("effect size d across cuts (unitless); filled: rejected, |: full test")
        ax.set_title("Cut spread", loc="left")
        return fig


def wefat_scatter(r: dict, items: pl.DataFrame) -> Figure:
    """s(w) against the property, the regression line, r and p, each point labelled with its word."""
    with rc_context(STYLE):
        fig = new_figure(COLUMN_IN, COLUMN_IN * 0.8)
        ax = fig.add_subplot()
        x, s = items["property"].to_numpy(), items["association"].to_numpy()
        ax.plot(x, s, "o", ms=3, color=X_COLOUR)
        for xi, si, w in zip(x, s, items["word"].to_list()):
            ax.annotate(w, (xi, si), xytext=(2, 2), textcoords="offset points", fontsize=5)
        if len(x) and r.get("slope") is not None:
            grid = np.linspace(np.nanmin(x), np.nanmax(x), 2)
            ax.plot(grid, r["intercept"] + r["slope"] * grid, color=Y_COLOUR, lw=1)
        ax.set_xlabel("property")
        ax.set_ylabel("s(w, A, B)")
        ax.set_title(f"{r['name']} / {r['encoder']}: r = {r['r']:+.3f}, p = {r['p_value']:.3g}, n = {r['n']}", loc="left")
        return fig


def slug(text: str) -> str:
    """A name safe in file names and element ids."""
    return "".join(c if c.isalnum() else "_" for c in text)


def save(fig: Figure, folder: Path, name: str, formats: list[str]) -> list[Path]:
    """Write the figure as each of svg, png (300 dpi), pdf; metadata dates left out so files are reproducible."""
    paths = []
    with rc_context(STYLE):
        for fmt in formats:
            path = folder / f"{name}.{fmt}"
            meta = {"svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}}.get(fmt, {})
            fig.savefig(path, format=fmt, dpi=300, metadata=meta)
            paths.append(path)
    return paths


def inline_svg(fig: Figure, figure_id: str, tips: dict[str, str] | None = None) -> str:
    """The figure as an <svg> element for the page: no XML prolog, an id, and a <title> per tooltip id."""
    buf = io.StringIO()
    with rc_context(STYLE):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    root = ET.fromstring(buf.getvalue())
    for meta in root.findall(f"{{{SVG_NS}}}metadata"):  # the file keeps its RDF metadata; the page needs none
        root.remove(meta)
    root.set("id", figure_id)
    root.set("role", "img")
    for el in root.iter(f"{{{SVG_NS}}}g"):
        tip = (tips or {}).get(el.get("id", ""))
        if tip:
            title = ET.Element(f"{{{SVG_NS}}}title")
            title.text = tip
            el.insert(0, title)
    return ET.tostring(root, encoding="unicode")
