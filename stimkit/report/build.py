"""Write a report: report.html (one self-contained file), figures/*.{svg,png,pdf}, tables/*."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import numpy as np
import polars as pl

from .. import StimkitError, UsageError
from ..choices import REPORT_FORMATS as FORMATS
from ..views import table4, text
from ..views.results import has_ci, results_view
from . import figures
from .data import ReportData
from .debias import before_after_figure

FIGURE_FORMATS = ("svg", "png", "pdf")
OWN = ("report.html", "figures", "tables")  # what --force replaces; nothing else in the folder is touched
RESULT_COLUMNS = ["test", "encoder", "display", "context", "language", "metric", "alternative", "units", "n", "n_x", "n_y",
                  "n_a", "n_b", "effect_size", "ci_low", "ci_high", "ci_method", "ci_scheme", "p_value", "p_method",
                  "p_adjusted", "rejected", "p_words", "p_words_method", "sentences_only", "influential_word",
                  "influential_d", "influential_p", "flags", "crossed_d", "crossed_ci_low", "crossed_ci_high",
                  "crossed_p", "n_templates", "crossed_scheme"]


@dataclass
class Written:
    html: Path | None
    figures: list[Path]
    tables: list[Path]
    notes: list[str] = field(default_factory=list)   # what was asked for but is not in the store


# An empty value in the report (a cell with no number, a run with no seed) is a dash, as in a
# terminal's table (views.emit.EMPTY): never the word "None".
EMPTY = "–"
ENV = jinja2.Environment(loader=jinja2.PackageLoader("stimkit.report", "templates"),
                         autoescape=jinja2.select_autoescape(["html"]), keep_trailing_newline=True,
                         finalize=lambda value: EMPTY if value is None else value)
ENV.globals["EMPTY"] = EMPTY


MANIFEST = ".stimkit-report.json"  # what the last report wrote here: the only files --force may replace


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prepare_dir(out_dir: Path, force: bool) -> None:
    """Refuse a non-empty folder unless forced. Forced, remove only the files the manifest
    says an earlier report wrote, unchanged since: a file of the user's (or one edited)
    inside report.html, figures/ or tables/ refuses the whole command before anything is
    removed. Files elsewhere in the folder are never touched."""
    if out_dir.exists() and not out_dir.is_dir():
        raise StimkitError(f"{out_dir}: exists and is not a folder")
    if out_dir.exists() and any(out_dir.iterdir()):
        if not force:
            raise StimkitError(f"{out_dir}: folder is not empty (pass --force to overwrite the report in it)")
        written = read_manifest(out_dir)
        ours = []
        for name in OWN:
            p = out_dir / name
            found = [q for q in sorted(p.rglob("*")) if not q.is_dir()] if p.is_dir() and not p.is_symlink() else \
                ([p] if p.exists() or p.is_symlink() else [])
            for q in found:
                rel = q.relative_to(out_dir).as_posix()
                if q.is_symlink() or written.get(rel) != _sha256(q):
                    raise StimkitError(f"{q}: not written by stimkit report (or changed since); --force replaces only "
                                       f"the report's own files: move it, or choose another folder")
                ours.append(q)
        for q in ours:
            q.unlink()
        for name in OWN:
            p = out_dir / name
            if p.is_dir():
                for d in sorted((d for d in p.rglob("*") if d.is_dir()), reverse=True):
                    d.rmdir()
                p.rmdir()
        (out_dir / MANIFEST).unlink(missing_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)


def read_manifest(out_dir: Path) -> dict[str, str]:
    """{relative path: sha256} of what the report wrote; {} if there is none or it is unreadable."""
    try:
        files = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return files if isinstance(files, dict) else {}


def write_manifest(out_dir: Path) -> None:
    """Record every file now under report.html, figures/ and tables/ with its hash."""
    files = {}
    for name in OWN:
        p = out_dir / name
        for q in ([p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else []):
            files[q.relative_to(out_dir).as_posix()] = _sha256(q)
    (out_dir / MANIFEST).write_text(json.dumps({"written_by": "stimkit report", "files": files}, indent=1, sort_keys=True),
                                    encoding="utf-8")


def matrix(t4: table4.Table4, names: dict[str, str]) -> tuple[np.ndarray, list[list[str]], list[list[str | None]]]:
    """d per hypothesis row (t4.rows: a test with results in two contexts or alternatives has
    a row for each) and encoder, each cell's label (d with * and ** marks over its 95% interval
    where one was computed) and each cell's tooltip."""
    d = np.array([[t4.d.get((r, e), np.nan) for e in t4.encoders] for r in t4.rows], dtype=float).reshape(len(t4.rows), len(t4.encoders))
    labels = [[t4.cell(r, e, sep="\n") or "" for e in t4.encoders] for r in t4.rows]  # the interval under d
    tips = [[t4.tooltip(r, e, names.get(e)) for e in t4.encoders] for r in t4.rows]
    return d, labels, tips


def ci_text(data: ReportData) -> str:
    """How the intervals were made, for the page: each method once (each result's scheme, in words,
    is in its ci_scheme column)."""
    methods = sorted(set(data.results["ci_method"].drop_nulls())) if "ci_method" in data.results.columns else []
    return (f"method: {', '.join(methods)}; attributes fixed, targets sampled; each result's scheme is in the "
            "ci_scheme column of the exact numbers" if methods else "no interval was computed")


SENTENCES_ONLY_TEXT = f"{text.SENTENCES_ONLY} significant only with sentences as units (not with whole words as units)"


def correction_text(data: ReportData, sentences_only: bool = True) -> str:
    """The marks in words (`sentences_only`: with the ^ mark's, where the family has sentence units)."""
    said = (f"* p <= {data.alpha}; ** also after {data.correction} correction" if data.correction != "none"
            else f"* p <= {data.alpha}, no correction")
    return said + (f"; {SENTENCES_ONLY_TEXT}" if sentences_only and sentence_units(data) else "")


def sentence_units(data: ReportData) -> bool:
    return "units" in data.results.columns and bool((data.results["units"] == "sentences").any())


def left_out_line(left_out: pl.DataFrame, shown: int) -> str:
    """One line on what the report leaves out: how many, why, and where it lists them."""
    counts = {why: int((left_out["why"] == why).sum()) for why in ("stale", "retired", "failed")}
    parts = [f"{n} {why}" for why, n in counts.items() if n]
    return (f"left out: {left_out.height} of the {left_out.height + shown} results in scope ({', '.join(parts)}); "
            "the report's 'Left out' section names each and why")


def caption(data: ReportData, grid: table4.Table4View | None = None) -> str:
    """Table 4's caption in its files: the marks its cells carry (`grid`; None: every mark)."""
    cells = None if grid is None else [v for r in grid.rows for k, v in r.items() if k != grid.columns[0]]
    return table4.file_caption(data.source, data.correction, data.alpha, sentence_units(data), data.tested,
                               data.results.height, data.family, cells)


def write_tables(data: ReportData, grid: table4.Table4View, folder: Path,
                 written: Written) -> tuple[list[str], list[dict], pl.DataFrame]:
    """Table 4 as markdown and LaTeX (booktabs) under the encoders' display names, every result's
    exact numbers as CSV (and CEAT's rows and the debias checks, where present)."""
    folder.mkdir()
    for name, fmt in (("table4.md", "markdown"), ("table4.tex", "latex")):
        (folder / name).write_text(table4.render(grid.t4, fmt, caption(data, grid), grid.names, grid.heads))
        written.tables.append(folder / name)
    view = results_view(data.results)
    results = view.select([c for c in RESULT_COLUMNS if c in view.columns])
    results.write_csv(folder / "results.csv")
    written.tables.append(folder / "results.csv")
    for name, df in (("ceat.csv", data.ceat), ("debias_checks.csv", data.debias_checks), ("crows.csv", data.crows)):
        if df is not None and df.height:  # the sections' exact numbers, where they are shown
            df.write_csv(folder / name)
            written.tables.append(folder / name)
    return grid.columns, grid.rows, results


SIGNED = ("d", "ces", "crossed_d")  # effect sizes: always with their sign


def _cell(column: str, value) -> str:
    """A table cell as the page prints it: numbers to 3 significant digits, an effect size with
    its sign, none blank."""
    if value is None or isinstance(value, float) and np.isnan(value):
        return ""
    if isinstance(value, float):
        return f"{value:+.3g}" if column in SIGNED else f"{value:.3g}"
    return str(value)


def shown_rows(df: pl.DataFrame | None) -> list[dict]:
    """A section's rows as the page prints them."""
    if df is None or df.height == 0:
        return []
    return [{k: _cell(k, v) for k, v in r.items()} for r in df.to_dicts()]


def write_report(data: ReportData, out_dir: Path, formats: list[str] | None = None, force: bool = False) -> Written:
    """Figures (files, and inline SVG for the page), tables, and report.html when "html" is among the formats."""
    formats = list(formats or FORMATS)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise UsageError(f"unknown format {unknown[0]!r} (known: {', '.join(FORMATS)})")
    prepare_dir(out_dir, force)
    fig_formats = [f for f in FIGURE_FORMATS if f in formats]
    (out_dir / "figures").mkdir()
    written = Written(None, [], [])
    inline: dict[str, str] = {}

    def emit_figure(fig, name: str, tips: dict | None = None) -> str:
        written.figures += figures.save(fig, out_dir / "figures", name, fig_formats)
        inline[name] = figures.inline_svg(fig, f"fig-{name}", tips) if "html" in formats else ""
        return inline[name]

    m = data.results.height
    family = f"family: {data.family}"
    left_out = data.left_out if data.left_out is not None else pl.DataFrame()
    if left_out.height:
        written.notes.append(left_out_line(left_out, m))
    # the matrix, the page's and the files' Table 4: the views layer's, as `run` and `results --table` print it
    view = table4.table4(data.results, data.alpha, data.tests, data.encoders, names=data.names or None,
                         categories=data.categories or None)
    t4, names = view.t4, view.names
    d, labels, cell_tips = matrix(t4, names)
    fig, tips = figures.significance_matrix(d, labels, t4.rows, [names.get(e, e) for e in t4.encoders],
                                            "d by test and encoder" + (" [95% interval]" if has_ci(data.results) else "")
                                            + f"\n{correction_text(data, sentences_only=False)} (m = {m}, a cell each)"
                                            + (f"\n{text.SENTENCES_ONLY} significant only with sentences as units"
                                               if sentence_units(data) else ""),
                                            cell_tips)
    emit_figure(fig, "significance-matrix", tips)
    strips = []
    for test, items in data.strips.items():
        fig, tips = figures.strip(items, test)
        name = f"strip-{figures.slug(test)}"
        strips.append({"svg": emit_figure(fig, name, tips),
                       "caption": f"s(w) of {test}'s target stimuli, X ({figures.category_name(items, 'X')}) above "
                                  f"Y ({figures.category_name(items, 'Y')}), per encoder."})
    forests = []
    for a, templates in data.audits:
        name = f"forest-{figures.slug(a['test'])}-{figures.slug(a['encoder'])}-{figures.slug(a['template_set'])}"
        forests.append({"svg": emit_figure(figures.forest(a, templates), name),
                        "caption": f"{a['test']}, {a['encoder']}, templates {a['template_set']}: {a['n_templates']} templates, "
                                   f"pooled d from the crossed model (words and templates as random factors); "
                                   "share of the per-template spread due to templates I² = "
                                   + ("n/a" if a.get("i2") is None else f"{a['i2']:.0%}") + "."})
    wording_svg = ""
    if data.wording is not None:
        n_rows = data.wording.select("test", "encoder").n_unique()
        wording_svg = {"svg": emit_figure(figures.wording(data.wording), "wording"),
                       "caption": f"Wording audits ({n_rows} test x encoder): d of each test under every meaning-preserving "
                                  "rewording of its templates (stimkit audit perturb), filled where p <= the audit's alpha; "
                                  "the bar is the original wording's d. Fragile: a rewording changes the conclusion."}
    baselines = []
    for b, draws in data.baselines:
        name = f"baseline-{figures.slug(b['test'])}-{figures.slug(b['encoder'])}"
        fig = figures.baseline_histogram(draws["effect_size"].to_numpy(), b["d"], f"{b['test']} / {names.get(b['encoder'], b['encoder'])}")
        baselines.append({"svg": emit_figure(fig, name),
                          "caption": f"{b['test']} on {names.get(b['encoder'], b['encoder'])}: d = {b['d']:+.2f} lies at the "
                                     f"{b['baseline_percentile']:.1f}th percentile of {b['k']:,} random pairs of target sets, "
                                     f"each word matched to a target word on frequency (Zipf within {b['tolerance']:g}) and "
                                     f"subword count, through the same templates and procedure; "
                                     f"{b['baseline_fpr']:.1%} of the random pairs reach p <= {data.alpha:g} (the procedure's "
                                     f"false-positive rate here). X against its own random words: d = {b['d_x']:+.2f}; "
                                     f"Y against its own: d = {b['d_y']:+.2f}."})
    pair_figures = []
    for r, pairs in data.pairs:
        shown_as = names.get(r["encoder"], r["encoder"])
        name = f"pairs-{figures.slug(r['test'])}-{figures.slug(r['encoder'])}"
        fig = figures.pair_differences(pairs, f"{r['test']} / {shown_as}: minimal pairs by template")
        crossed = ("" if r.get("crossed_d") is None else
                   f" Crossed d (words and templates random) = {r['crossed_d']:+.2f} "
                   f"[{r['crossed_ci_low']:+.2f}, {r['crossed_ci_high']:+.2f}].")
        pair_figures.append({"svg": emit_figure(fig, name),
                             "caption": f"{r['test']} on {shown_as}: {pairs.height} minimal pairs (a template line with "
                                        f"a word of X and a word of Y), each pair's difference in log-probability "
                                        f"({pairs['variant'][0]}, nats), by template; above 0 the model finds the X "
                                        f"sentence more probable. d = {r['effect_size']:+.2f}, p (words as units) = "
                                        f"{r['p_words']:.3g}.{crossed}"})
    diagnostic_rows = data.diagnostics.to_dicts() if data.diagnostics is not None else []
    cuts_svg = emit_figure(figures.cut_spread(data.cuts), "cut-spread") if data.cuts is not None and data.cuts.height else ""
    layers_svg = emit_figure(figures.layer_sweep(data.layers), "layer-sweep") if data.layers is not None else ""
    debias_svg = emit_figure(before_after_figure(data.debias), "debias-before-after") if data.debias else ""
    metric_rows = data.metrics.to_dicts() if data.metrics is not None else []
    replicates_svg = (emit_figure(figures.replicate_strip(data.replicates), "replicates")
                      if data.replicates is not None and data.replicates.height else "")
    reliability_rows = shown_rows(data.reliability)
    ceat_rows = shown_rows(data.ceat)
    check_rows = shown_rows(data.debias_checks)
    crows_rows = shown_rows(data.crows)
    wefats = []
    for r, items in data.wefat:
        name = f"wefat-{figures.slug(r['name'])}-{figures.slug(r['encoder'])}"
        wefats.append({"svg": emit_figure(figures.wefat_scatter(r, items), name),
                       "caption": f"WEFAT {r['name']} on {r['encoder']}: s(w) against the property, least-squares line."})

    t4_columns, t4_rows, results = write_tables(data, view, out_dir / "tables", written)
    if "html" in formats:
        cons = data.consistency if data.consistency is not None else pl.DataFrame()
        sections = [("matrix", "Significance matrix"), ("table4", "Table 4")] + ([("left-out", "Left out")] if left_out.height else [])
        sections += [(k, t) for k, t, on in (("tests", "Per test", strips), ("stimuli", "Stimuli", diagnostic_rows),
                                             ("baselines", "Baselines", baselines),
                                             ("pairs", "Minimal pairs", pair_figures), ("audits", "Template audits", forests),
                                             ("wording", "Wording audits", wording_svg),
                                             ("cuts", "Cut spread", cuts_svg), ("layers", "By layer", layers_svg),
                                             ("debias", "Before and after debiasing", debias_svg),
                                             ("ceat", "CEAT", ceat_rows), ("debias-checks", "Debiasing checks", check_rows),
                                             ("crows", "CrowS-Pairs", crows_rows),
                                             ("metrics", "Metrics", metric_rows),
                                             ("replicates", "Replicates", replicates_svg),
                                             ("reliability", "Reliability", reliability_rows),
                                             ("wefat", "WEFAT", wefats)) if on]
        sections += [("consistency", "Consistency checks"), ("provenance", "Provenance")]
        html = ENV.get_template("report.html.j2").render(
            family=family, m=m, matrix_note=t4.note, alpha=data.alpha, correction=data.correction, correction_text=correction_text(data),
            tested=data.tested, settings=data.settings,
            flagged=[r for r in results.to_dicts() if r.get("flags")],
            sections=sections, matrix_svg=inline["significance-matrix"], t4_columns=t4_columns, t4_rows=t4_rows,
            ci_text=ci_text(data), left_out_columns=left_out.columns, left_out_rows=left_out.to_dicts(),
            result_columns=results.columns, result_rows=results.to_dicts(), strips=strips, forests=forests, wording=wording_svg,
            baselines=baselines, pair_figures=pair_figures, diagnostic_rows=diagnostic_rows,
            replicates_svg=replicates_svg, reliability_rows=reliability_rows,
            cuts_svg=cuts_svg, layers_svg=layers_svg, debias_svg=debias_svg, ceat_rows=ceat_rows, check_rows=check_rows, crows_rows=crows_rows, metric_rows=metric_rows, wefats=wefats, consistency_columns=cons.columns, consistency_rows=cons.to_dicts(),
            consistency_counts={v: (cons["verdict"] == v).sum() if cons.height else 0
                                for v in ("violation", "note", "not comparable")},
            provenance=data.provenance)
        written.html = out_dir / "report.html"
        written.html.write_text(html, encoding="utf-8")
    write_manifest(out_dir)
    return written
