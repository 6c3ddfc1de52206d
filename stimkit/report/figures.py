"""Publication figures with matplotlib: static, vector, one column wide, colour-blind-safe.

Figures are built on `matplotlib.figure.Figure` (no pyplot: no global state, no GUI backend)."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

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


# Inches per character and per line of the tick-label font (6.5 pt): sizes a figure from its labels.
CHAR_IN, LINE_IN = 0.058, 0.115
_BREAKS = re.compile(r"(?<=[-/,:_ .=])")


def wrap(text: str, width: int) -> str:
    """A label over lines of at most `width` characters, broken after - / , : _ . = or a space
    (a name's own separators), and inside a part only where a part alone is longer."""
    lines, line = [], ""
    for part in _BREAKS.split(str(text)):
        while len(part) > width:
            if line:
                lines.append(line)
                line = ""
            lines.append(part[:width])
            part = part[width:]
        if len(line) + len(part.rstrip()) > width and line:
            lines.append(line)
            line = ""
        line += part
    lines.append(line)
    return "\n".join(x.rstrip() for x in lines if x.strip())


def _lines(labels: list[str]) -> tuple[int, int]:
    """The longest line and the most lines among wrapped labels."""
    split = [label.split("\n") for label in labels] or [[""]]
    return max(len(x) for parts in split for x in parts), max(len(parts) for parts in split)


def new_figure(width: float, height: float) -> Figure:
    with rc_context(STYLE):
        return Figure(figsize=(width, height), layout="constrained")


def significance_matrix(d: np.ndarray, labels: list[list[str]], tests: list[str], encoders: list[str], title: str,
                        cell_tips: list[list[str | None]] | None = None) -> tuple[Figure, dict[str, str]]:
    """Tests x encoders, coloured by d on a diverging scale, each cell labelled with d and its
    marks (and its interval on a second line, where the label has one); returns the figure and
    a tooltip per cell id (`cell_tips`, row by row).

    Names are wrapped (encoders over their column, tests at the left) and the figure is sized
    from the wrapped labels, so that nothing is clipped whatever their length."""
    enc_labels = [wrap(e, 16) for e in encoders]
    test_labels = [wrap(t, 30) for t in tests]
    enc_chars, enc_lines = _lines(enc_labels)
    test_chars, test_lines = _lines(test_labels)
    cell_chars, cell_lines = _lines([text for row in labels for text in row])
    title = "\n".join(wrap(line, 90) for line in title.split("\n"))
    # cell text is 5.5 pt, 5.5/6.5 of the tick labels' size
    cell_w = max(0.55, enc_chars * CHAR_IN + 0.1, cell_chars * CHAR_IN * 5.5 / 6.5 + 0.1)
    row_h = max(0.17, test_lines * LINE_IN + 0.05, cell_lines * LINE_IN * 5.5 / 6.5 + 0.05)
    tips: dict[str, str] = {}
    width = max(COLUMN_IN, test_chars * CHAR_IN + 0.35 + cell_w * len(encoders) + 0.2,
                min(len(title.split("\n")[0]), 90) * CHAR_IN * 1.2)
    height = 0.35 + 0.15 * title.count("\n") + enc_lines * LINE_IN + 0.15 + row_h * len(tests) + 0.75
    with rc_context(STYLE):
        fig = new_figure(width, height)
        ax = fig.add_subplot()
        limit = max(1.0, float(np.nanmax(np.abs(d)))) if np.isfinite(d).any() else 1.0
        # pcolormesh, not imshow: cells stay vector shapes in SVG and PDF (imshow embeds a bitmap)
        im = ax.pcolormesh(np.ma.masked_invalid(d), cmap=DIVERGING, vmin=-limit, vmax=limit, edgecolors="white", linewidth=0.5)
        for i, row in enumerate(labels):
            for j, text in enumerate(row):
                if text:
                    dark = np.isfinite(d[i, j]) and abs(d[i, j]) > 0.6 * limit
                    ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=5.5, color="white" if dark else "black",
                            linespacing=1.0)
                tip = cell_tips[i][j] if cell_tips else None
                if tip:  # a clear rectangle over the cell carries its tooltip (the mesh is one shape)
                    gid = f"cell-{i}-{j}"
                    ax.add_patch(Rectangle((j, i), 1, 1, fill=False, lw=0, zorder=5, gid=gid))  # above the text
                    tips[gid] = tip
        ax.set_xticks(np.arange(len(encoders)) + 0.5, enc_labels, rotation=0, ha="center", va="bottom")
        ax.xaxis.tick_top()  # encoder names above the first rows, where a long matrix is read from
        ax.set_yticks(np.arange(len(tests)) + 0.5, test_labels)
        ax.invert_yaxis()
        ax.tick_params(length=0)
        ax.spines[:].set_visible(False)
        fig.suptitle(title, x=0.01, ha="left", fontsize=8)  # over the whole figure: long test names take the left
        bar = fig.colorbar(im, ax=ax, location="bottom", shrink=0.6, aspect=30, pad=0.02, label="effect size d (unitless)")
        bar.solids.set_rasterized(False)  # matplotlib rasterizes long colour bars; keep the figure all vector
        return fig, tips


def _first(items: pl.DataFrame, column: str, default: str) -> str:
    """The first value of a column where the frame has one (an attribute's category), else `default`."""
    found = items[column].drop_nulls() if column in items.columns else []
    return str(found[0]) if len(found) else default


def strip(items: pl.DataFrame, test: str, target_names: tuple[str, str] | None = None) -> tuple[Figure, dict[str, str]]:
    """s(w) of X and Y stimuli per encoder; returns the figure and a tooltip per point id.

    Rows are named by the word lists' categories (an item frame's `category` column, or
    `target_names`), X and Y where neither says."""
    encoders = items["encoder"].unique(maintain_order=True).to_list()
    names = target_names or tuple(category_name(items, role) for role in ("X", "Y"))
    y_labels = [wrap(n, 18) for n in names[::-1]]
    tips: dict[str, str] = {}
    title = wrap(f"{test}: association of each target stimulus (bar: mean)", 50)
    chars, lines = _lines(y_labels)
    with rc_context(STYLE):
        fig = new_figure(max(COLUMN_IN, 2.4 + chars * CHAR_IN), 0.5 + 0.15 * title.count("\n")
                         + (0.75 + 0.1 * max(lines - 2, 0)) * len(encoders) + 0.35)
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
                    tips[gid] = f"{names[0] if role == 'X' else names[1]} ({role}): {stim}  s(w) = {x:+.4f}"
                if len(s):
                    ax.vlines(float(np.mean(s)), level - 0.35, level + 0.35, color=colour, lw=1.5)
            ax.axvline(0, color=GREY, lw=0.5, ls=":")
            ax.set_yticks([0, 1], y_labels)
            ax.set_ylim(-0.6, 1.6)
            ax.set_title(wrap(enc, 32), loc="left", fontsize=7)  # over the axes, about 2 inches wide
        a, b = (_first(items, c, n) for c, n in (("a_category", "A"), ("b_category", "B")))
        axes[-1].set_xlabel(wrap(f"s(w, A, B): mean cosine to A ({a}) minus mean cosine to B ({b})", 40))
        fig.suptitle(title, fontsize=8, x=0.02, ha="left")
        return fig, tips


def category_name(items: pl.DataFrame, role: str) -> str:
    """The category of a role's word list (stimulus_sets.category), or the role's letter."""
    if "category" in items.columns:
        found = items.filter((pl.col("role") == role) & pl.col("category").is_not_null())["category"].unique(maintain_order=True)
        if found.len():
            return " / ".join(found.to_list())
    return role


def forest(a: dict, templates: pl.DataFrame) -> Figure:
    """Per template: d alone with its 95% CI, d with it left out, and the pooled d of the crossed
    model (words and templates random) with its interval and the prediction for a new template."""
    alone = templates.filter(pl.col("analysis") == "alone").sort("effect_size")
    left = {r["frame"]: r["effect_size"] for r in templates.filter(pl.col("analysis") == "left_out").iter_rows(named=True)}
    frames = alone["frame"].to_list()
    with rc_context(STYLE):
        frame_labels = [wrap(f, 40) for f in frames]
        chars, lines = _lines(frame_labels)
        fig = new_figure(max(COLUMN_IN * 1.3, 2.8 + chars * CHAR_IN), 2.1 + max(0.2, lines * LINE_IN + 0.05) * (len(frames) + 2))
        ax = fig.add_subplot()
        y = np.arange(len(frames))[::-1] + 2
        d = alone["effect_size"].to_numpy()
        half = 1.959964 * np.sqrt(alone["variance"].to_numpy())
        ax.errorbar(d, y, xerr=half, fmt="s", ms=3, color=X_COLOUR, ecolor=X_COLOUR, lw=0.8, label="template alone (95% CI)")
        lo = np.array([left.get(f, np.nan) for f in frames])
        ax.plot(lo, y, "D", ms=3, mfc="none", color=Y_COLOUR, label="template left out")
        if a.get("pooled_d") is not None:
            pd, cl, ch = a["pooled_d"], a["ci_low"], a["ci_high"]
            ax.fill([cl, pd, ch, pd], [0, 0.3, 0, -0.3], color=ACCENT, label="pooled d, words and templates random (95% CI)")
            if a.get("pi_low") is not None and np.isfinite(a["pi_low"]):
                ax.hlines(0, a["pi_low"], a["pi_high"], color=ACCENT, lw=0.8, ls="--", label="d in a new template (95% prediction)")
        ax.axvline(a["full_d"], color=GREY, lw=0.8, label=f"full test d = {a['full_d']:+.2f}")
        ax.axvline(0, color=GREY, lw=0.5, ls=":")
        ax.set_yticks([0, *y], ["pooled", *frame_labels])
        ax.set_xlabel("effect size d (unitless)")
        tau2 = "n/a" if a.get("tau2") is None else f"{a['tau2']:.3f}"
        flips = "n/a" if a.get("decision_flip_share") is None else f"{a['decision_flip_share']:.0%}"
        signs = "n/a" if a.get("sign_flip_share") is None else f"{a['sign_flip_share']:.0%}"
        at = f" at alpha {a['alpha']:g}" if a.get("alpha") is not None else ""  # the flips' alpha: the report's
        ax.set_title(wrap(f"{a['test']} / {a['encoder']} / templates {a['template_set']}", 40) + "\n"
                     + wrap(f"tau² = {tau2}, decision flips{at} {flips}, sign flips {signs}", 40), loc="left")
        fig.legend(loc="outside lower center", ncols=2, frameon=False)
        return fig


def wording(variants: pl.DataFrame) -> Figure:
    """Wording audits: per test and encoder, d under each rewording of the templates (filled: p <=
    the audit's alpha), the original's d as a bar; the verdict in the row's label."""
    keys = variants.select("test", "encoder", "verdict").unique(maintain_order=True).rows()
    names = [wrap(f"{t} / {e} ({v})", 40) for t, e, v in keys]
    chars, lines = _lines(names)
    with rc_context(STYLE):
        fig = new_figure(max(COLUMN_IN * 1.4, 2.6 + chars * CHAR_IN), 1.1 + max(0.22, lines * LINE_IN + 0.06) * len(keys))
        ax = fig.add_subplot()
        for i, (t, e, _) in enumerate(keys):
            part = variants.filter((pl.col("test") == t) & (pl.col("encoder") == e))
            reworded = part.filter(pl.col("rule").is_not_null())
            d = reworded["effect_size"].to_numpy()
            sig = (reworded["p_value"] <= reworded["alpha"]).to_numpy()
            ax.plot(d[sig], np.full(sig.sum(), i), "o", ms=3, color=X_COLOUR, alpha=0.7)
            ax.plot(d[~sig], np.full((~sig).sum(), i), "o", ms=3, mfc="none", color=Y_COLOUR, alpha=0.9)
            original = part.filter(pl.col("rule").is_null())
            if original.height:
                ax.plot([original["effect_size"][0]], [i], "|", ms=9, color=GREY)
        ax.axvline(0, color=GREY, lw=0.5, ls=":")
        ax.set_yticks(range(len(keys)), names)
        ax.invert_yaxis()
        ax.set_xlabel(wrap("effect size d under each rewording (unitless); filled: p <= alpha, |: the original", 40))
        ax.set_title("Wording audits", loc="left")
        return fig


def _rows_of(frame: pl.DataFrame, column: str) -> tuple[list, list[str], float, int]:
    """A figure with a row per (test, `column`): the keys, their labels, the width that fits
    the labels, and the labels' lines."""
    keys = frame.select("test", column).unique(maintain_order=True).rows()
    names = [wrap(f"{t} / {e}", 40) for t, e in keys]
    chars, lines = _lines(names)
    return keys, names, max(COLUMN_IN * 1.4, 2.6 + chars * CHAR_IN), lines


def cut_spread(cuts: pl.DataFrame) -> Figure:
    """d across cuts per test and encoder, with the uncut test's d."""
    keys, names, width, lines = _rows_of(cuts, "encoder")
    with rc_context(STYLE):
        fig = new_figure(width, 0.9 + max(0.22, lines * LINE_IN + 0.06) * len(keys))
        ax = fig.add_subplot()
        for i, (t, e) in enumerate(keys):
            part = cuts.filter((pl.col("test") == t) & (pl.col("encoder") == e))
            d = part["effect_size"].to_numpy()
            rej = part["rejected"].fill_null(False).to_numpy()
            ax.plot(d[rej], np.full(rej.sum(), i), "o", ms=3, color=X_COLOUR, alpha=0.7)
            ax.plot(d[~rej], np.full((~rej).sum(), i), "o", ms=3, mfc="none", color=Y_COLOUR, alpha=0.9)
            ax.plot([part["d_full"][0]], [i], "|", ms=8, color=GREY)
        ax.set_yticks(range(len(keys)), names)
        ax.invert_yaxis()
        ax.set_xlabel(wrap("effect size d across cuts (unitless); filled: rejected, |: full test", 40))
        ax.set_title("Cut spread", loc="left")
        return fig


def replicate_strip(members: pl.DataFrame) -> Figure:
    """The d of every replicate of a family, a row per test and family: seeds as circles,
    bootstrap samples as triangles, filled where the replicate's own test rejects; the median
    as a bar and the 2.5-97.5% interval as a line."""
    keys, names, width, lines = _rows_of(members, "family")
    with rc_context(STYLE):
        fig = new_figure(width, 1.0 + max(0.3, lines * LINE_IN + 0.1) * len(keys))
        ax = fig.add_subplot()
        for i, (t, f) in enumerate(keys):
            part = members.filter((pl.col("test") == t) & (pl.col("family") == f))
            ax.plot([part["d_low"][0], part["d_high"][0]], [i, i], "-", color=GREY, lw=0.8)
            ax.plot([part["d_median"][0]], [i], "|", ms=10, color=GREY)
            for kind, marker, colour, shift in (("seed", "o", X_COLOUR, -0.12), ("boot", "^", Y_COLOUR, 0.12)):
                mine = part.filter(pl.col("kind") == kind)
                d, rej = mine["effect_size"].to_numpy().astype(float), mine["rejected"].fill_null(False).to_numpy()
                ax.plot(d[rej], np.full(rej.sum(), i + shift), marker, ms=3.5, color=colour, alpha=0.8)
                ax.plot(d[~rej], np.full((~rej).sum(), i + shift), marker, ms=3.5, mfc="none", color=colour, alpha=0.9)
        ax.axvline(0, color=GREY, lw=0.5, ls=":")
        ax.set_yticks(range(len(keys)), names)
        ax.invert_yaxis()
        ax.set_xlabel(wrap("d of each replicate (unitless): o seeds, ^ bootstrap samples; filled: p <= alpha; "
                           "|: median, line: 2.5-97.5%", 60))
        ax.set_title("Replicates", loc="left")
        return fig


def baseline_histogram(random_d: np.ndarray, observed: float, title: str) -> Figure:
    """The d of K matched random pairs as a histogram, the observed d marked."""
    random_d = np.asarray(random_d, dtype=np.float64)
    with rc_context(STYLE):
        fig = new_figure(COLUMN_IN, 1.6)
        ax = fig.add_subplot()
        low = min(float(random_d.min()) if random_d.size else -1.0, observed) - 0.1
        high = max(float(random_d.max()) if random_d.size else 1.0, observed) + 0.1
        ax.hist(random_d, bins=np.linspace(low, high, 31), color=GREY, alpha=0.6, edgecolor="white", linewidth=0.3)
        ax.axvline(observed, color=X_COLOUR, linewidth=1.2)
        right = observed < high - 0.5  # the label beside the line, on the side with room
        ax.text(observed, ax.get_ylim()[1] * 0.95, f"  d = {observed:+.2f}" if right else f"d = {observed:+.2f}  ",
                color=X_COLOUR, ha="left" if right else "right", va="top", fontsize=6.5)
        ax.set_xlabel(wrap(f"d of {random_d.size:,} matched random pairs (unitless)", 50))
        ax.set_ylabel("pairs")
        ax.set_title(wrap(title, 60), loc="left")
        return fig


def layer_sweep(layers: pl.DataFrame) -> Figure:
    """d by layer per test and model, with its interval where one was computed; filled points
    are rejected after the correction."""
    keys = layers.select("test", "model").unique(maintain_order=True).rows()
    with rc_context(STYLE):
        fig = new_figure(COLUMN_IN * 1.3, 1.2 + 0.9 * len(keys))
        axes = fig.subplots(len(keys), 1, sharex=True, squeeze=False)[:, 0]
        for ax, (t, m) in zip(axes, keys):
            part = layers.filter((pl.col("test") == t) & (pl.col("model") == m))
            x, d = part["layer"].to_numpy(), part["effect_size"].to_numpy()
            lo, hi = part["ci_low"].to_numpy().astype(float), part["ci_high"].to_numpy().astype(float)
            have = np.isfinite(lo) & np.isfinite(hi)
            ax.errorbar(x[have], d[have], yerr=[d[have] - lo[have], hi[have] - d[have]], fmt="none", ecolor=GREY, lw=0.8)
            rej = part["rejected"].fill_null(False).to_numpy()
            ax.plot(x, d, "-", color=X_COLOUR, lw=1)
            ax.plot(x[rej], d[rej], "o", ms=3.5, color=X_COLOUR)
            ax.plot(x[~rej], d[~rej], "o", ms=3.5, mfc="white", color=X_COLOUR)
            ax.axhline(0, color=GREY, lw=0.5, ls=":")
            ax.set_ylabel("d")
            ax.set_title(wrap(f"{t} / {m}", 60), loc="left", fontsize=7)
        axes[-1].set_xlabel("layer (0: the embeddings); filled: rejected after correction; bars: 95% CI of d")
        axes[-1].set_xticks(sorted(set(layers["layer"].to_list())))
        return fig


def wefat_scatter(r: dict, items: pl.DataFrame) -> Figure:
    """s(w) against the property, the regression line, r and p, each point labelled with its word."""
    with rc_context(STYLE):
        fig = new_figure(COLUMN_IN, COLUMN_IN * 0.8)
        ax = fig.add_subplot()
        x, s = items["property"].to_numpy(), items["association"].to_numpy()
        ax.plot(x, s, "o", ms=3, color=X_COLOUR)
        ax.margins(x=0.2, y=0.1)  # room for the words written right of their points
        for xi, si, w in zip(x, s, items["word"].to_list()):
            ax.annotate(w, (xi, si), xytext=(2, 2), textcoords="offset points", fontsize=5)
        if len(x) and r.get("slope") is not None:
            grid = np.linspace(np.nanmin(x), np.nanmax(x), 2)
            ax.plot(grid, r["intercept"] + r["slope"] * grid, color=Y_COLOUR, lw=1)
        ax.set_xlabel("property")
        ax.set_ylabel("s(w, A, B)")
        ax.set_title(wrap(f"{r['name']} / {r['encoder']}", 45) + f"\nr = {r['r']:+.3f}, p = {r['p_value']:.3g}, n = {r['n']}",
                     loc="left")
        return fig


def slug(text: str) -> str:
    """A name safe in file names and element ids."""
    return "".join(c if c.isalnum() else "_" for c in text)


def settle(fig: Figure) -> None:
    """Lay the figure out once before it is written: constrained layout shrinks the axes, the
    axes then choose new ticks (one can land on the edge), and the written pass makes room for them."""
    with rc_context(STYLE):
        fig.draw_without_rendering()


def save(fig: Figure, folder: Path, name: str, formats: list[str]) -> list[Path]:
    """Write the figure as each of svg, png (300 dpi), pdf; metadata dates left out so files are reproducible."""
    paths = []
    settle(fig)
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
    settle(fig)
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
            el.set("pointer-events", "all")  # a clear shape is hovered too (a painted-only default would skip it)
    return ET.tostring(root, encoding="unicode")
