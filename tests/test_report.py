"""`stimkit report`: files, figures that parse, numbers equal to the store's, bad input."""

import hashlib
import re
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from stimkit import report, store
from stimkit.cli import app
from stimkit.report import figures

pytest.importorskip("matplotlib", reason="the report needs matplotlib (pip install 'stimkit[report]')")

cli = CliRunner()
SVG = "{http://www.w3.org/2000/svg}"

# Tables other branches add; created here only where this store lacks them, to fill by hand.
EXTRA_TABLES = """
CREATE TABLE IF NOT EXISTS result_cuts (result_id VARCHAR, cut INTEGER, effect_size DOUBLE, p_value DOUBLE, rejected BOOLEAN);
CREATE TABLE IF NOT EXISTS wefat_results (result_id VARCHAR, name VARCHAR, encoder VARCHAR, r DOUBLE, p_value DOUBLE,
                                          n INTEGER, slope DOUBLE, intercept DOUBLE);
CREATE TABLE IF NOT EXISTS wefat_items (result_id VARCHAR, word VARCHAR, association DOUBLE, property DOUBLE);
"""
WEFAT_WORDS = [("nurse", 0.12, 90.0), ("engineer", -0.08, 10.0), ("teacher", 0.05, 70.0), ("carpenter", -0.10, 2.0)]


def invoke(*args):
    return cli.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def report_db(catalog_db, tmp_path_factory):
    """A store with an audit of sent-weat6, then a run of weat6 and sent-weat6 (the latest family),
    and hand-made cut and WEFAT rows."""
    path = tmp_path_factory.mktemp("report") / "store.duckdb"
    shutil.copy(catalog_db, path)
    r = invoke("--db", path, "audit", "templates", "-t", "sent-weat6", "-e", "glove-6b-50d", "--budget", 2000)
    assert r.exit_code == 0, r.output
    r = invoke("--db", path, "test", "weat6", "sent-weat6", "-e", "glove-6b-50d", "--budget", 2000)
    assert r.exit_code == 0, r.output
    con = store.connect(path)
    con.execute(EXTRA_TABLES)
    run_id = store.one(con, "SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1")[0]
    rid = store.one(con, "SELECT result_id FROM results WHERE run_id = ? AND test = 'sent-weat6'", [run_id])[0]
    for cut, d in enumerate([1.2, 1.5, 1.7]):
        con.execute("INSERT INTO result_cuts (result_id, cut, cut_seed, effect_size, p_value, rejected) VALUES (?, ?, ?, ?, ?, ?)",
                    [rid, cut, cut, d, 0.001 * (cut + 1), cut != 2])
    con.execute("INSERT INTO wefat_results (result_id, run_id, name, source, encoder, model, fingerprint, context, property, "
                "r, p_value, n, slope, intercept, ci_level, stimkit_version) VALUES ('w1/occupations/fp', 'w1', 'occupations', "
                "'adhoc', 'glove-6b-50d', 'glove-6b-50d', 'fp', 'word', 'hand-made', 0.9, 0.04, 4, 0.0025, -0.1, 0.95, 'x')")
    for i, (w, s, p) in enumerate(WEFAT_WORDS):
        con.execute("INSERT INTO wefat_items (result_id, ordinal, word, n_stimuli, association, property) "
                    "VALUES ('w1/occupations/fp', ?, ?, 1, ?, ?)", [i, w, s, p])
    con.close()
    return path, run_id


@pytest.fixture(scope="module")
def built(report_db, tmp_path_factory):
    path, run_id = report_db
    out = tmp_path_factory.mktemp("out") / "report"
    r = invoke("--db", path, "report", "-o", out, "--test", "sent-weat6", "--audit")
    assert r.exit_code == 0, r.output
    return out, path, run_id


def test_files_exist_and_parse(built):
    out, _, _ = built
    names = {"significance-matrix", "strip-sent_weat6", "forest-sent_weat6-glove_6b_50d-may2019", "cut-spread",
             "wefat-occupations-glove_6b_50d"}
    assert {p.stem for p in (out / "figures").iterdir()} == names
    for name in names:
        root = ET.parse(out / "figures" / f"{name}.svg").getroot()
        assert root.tag == f"{SVG}svg" and float(root.get("width").rstrip("pt")) > 0
        assert (out / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / "figures" / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    html = (out / "report.html").read_text()
    for name in names:  # every figure is inline in the page
        assert f'id="fig-{name}"' in html
    # self-contained: no URL to fetch, no external stylesheet, script or image
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#)""", html)
    without_namespaces = re.sub(r'xmlns(:\w+)?="[^"]*"', "", html)
    assert "http://" not in without_namespaces and "https://" not in without_namespaces


def holm(p: np.ndarray, alpha: float) -> np.ndarray:
    """The step-down rule, literally: reject in order of p until p(k) > alpha / (m - k + 1)."""
    reject = np.zeros(len(p), bool)
    for rank, i in enumerate(np.argsort(p, kind="stable")):
        if p[i] > alpha / (len(p) - rank):
            break
        reject[i] = True
    return reject


def test_latex_numbers_equal_the_store(built):
    out, path, run_id = built
    con = store.connect(path, read_only=True)
    rows = store.frame(con, "SELECT test, encoder, effect_size, p_value, ci_low, ci_high FROM results WHERE run_id = ?",
                       [run_id])
    con.close()
    rejected = holm(rows["p_value"].to_numpy(), 0.01)
    marks = {r["test"]: "**" if rej else "*" if r["p_value"] <= 0.01 else "" for r, rej in zip(rows.iter_rows(named=True), rejected)}
    expected = {r["test"]: f"{r['effect_size']:+.2f}" + marks[r["test"]] + f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
                for r in rows.iter_rows(named=True)}
    tex = (out / "tables" / "table4.tex").read_text()
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    body = tex.split(r"\midrule")[1].split(r"\bottomrule")[0]
    cells = dict(tuple(c.strip() for c in line.rstrip("\\ ").split("&")) for line in body.strip().splitlines())
    assert cells == expected
    md = (out / "tables" / "table4.md").read_text()
    assert all(f"| {t} | {v.replace('*', chr(92) + '*')} |" in md for t, v in expected.items())
    csv = pl.read_csv(out / "tables" / "results.csv")
    assert dict(zip(csv["test"], csv["effect_size"])) == dict(zip(rows["test"], rows["effect_size"]))


def test_d_carries_its_interval_in_the_page(built):
    """Wherever the page shows d (Table 4, the matrix's cells and their tooltips) it shows the
    stored 95% interval with it."""
    out, path, run_id = built
    con = store.connect(path, read_only=True)
    rows = store.frame(con, "SELECT test, effect_size, ci_low, ci_high, p_value FROM results WHERE run_id = ?", [run_id])
    con.close()
    html = (out / "report.html").read_text()
    table = re.search(r'<table class="sortable" id="table4-table">.*?</table>', html, re.S).group(0)
    root = ET.fromstring(re.search(r'<svg[^>]*id="fig-significance-matrix".*?</svg>', html, re.S).group(0))
    tips = sorted(t.text for t in root.iter(f"{SVG}title"))
    assert len(tips) == rows.height
    for r in rows.iter_rows(named=True):
        d, interval = re.escape(f"{r['effect_size']:+.2f}"), re.escape(f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]")
        assert re.search(rf'<td>{r["test"]}</td><td class="num">{d}\**(†)? {interval}</td>', table), r["test"]
        assert (f"{r['test']} / glove-6b-50d: d = {r['effect_size']:+.3f}, 95% CI [{r['ci_low']:.3f}, {r['ci_high']:.3f}], "
                f"p = {r['p_value']:.3g}") in " ".join(tips)


def test_each_point_names_its_stimulus(built):
    out, path, run_id = built
    con = store.connect(path, read_only=True)
    stimuli = store.frame(con, """SELECT i.role, i.stimulus, i.association, s.category FROM result_items i
        JOIN results r USING (result_id) JOIN stimulus_sets s ON s.version = i.set_version
        WHERE r.run_id = ? AND r.test = 'sent-weat6' AND i.role IN ('X', 'Y') AND i.dropped IS NULL""", [run_id])
    con.close()
    root = ET.fromstring(re.search(r'<svg[^>]*id="fig-strip-sent_weat6".*?</svg>', (out / "report.html").read_text(), re.S).group(0))
    titles = sorted(t.text for t in root.iter(f"{SVG}title"))
    assert set(stimuli["category"]) - {"X", "Y"}  # the word lists' own names, e.g. male names
    assert titles == sorted(f"{r['category']} ({r['role']}): {r['stimulus']}  s(w) = {r['association']:+.4f}"
                            for r in stimuli.iter_rows(named=True))


def test_forest_draws_the_audit(report_db):
    path, _ = report_db
    con = store.connect(path, read_only=True)
    (a, templates), = report.data.latest_audits(con, ["sent-weat6"])
    con.close()
    ax = figures.forest(a, templates).axes[0]
    alone = templates.filter(pl.col("analysis") == "alone").sort("effect_size")
    squares = next(line for line in ax.lines if line.get_marker() == "s")
    assert np.allclose(squares.get_xdata(), alone["effect_size"].to_numpy())
    bars = ax.collections[0].get_segments()  # the 95% CI of each template alone: d -+ 1.96 sqrt(v)
    half = 1.959964 * np.sqrt(alone["variance"].to_numpy())
    assert np.allclose([s[0][0] for s in bars], alone["effect_size"].to_numpy() - half)
    diamond = ax.patches[0].get_xy()[:, 0]
    assert min(diamond) == pytest.approx(a["ci_low"]) and max(diamond) == pytest.approx(a["ci_high"])
    assert f"tau² = {a['tau2']:.3f}" in ax.get_title(loc="left")


def test_wefat_line_and_labels(report_db):
    path, _ = report_db
    con = store.connect(path, read_only=True)
    (r, items), = report.data.wefat(con)
    con.close()
    ax = figures.wefat_scatter(r, items).axes[0]
    x, y = ax.lines[1].get_data()
    assert list(x) == [2.0, 90.0] and np.allclose(y, -0.1 + 0.0025 * np.array([2.0, 90.0]))
    assert sorted(t.get_text() for t in ax.texts) == sorted(w for w, _, _ in WEFAT_WORDS)
    assert "r = +0.900, p = 0.04" in ax.get_title(loc="left")


def test_sections_only_where_rows_exist(report_db, tmp_path):
    path, _ = report_db
    bare = tmp_path / "bare.duckdb"
    shutil.copy(path, bare)
    con = store.connect(bare)
    con.execute("DELETE FROM result_cuts; DELETE FROM wefat_results")
    con.close()
    r = invoke("--db", bare, "report", "-o", tmp_path / "r", "--format", "html", "--format", "svg")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "r" / "figures").iterdir()) == ["significance-matrix.svg"]
    html = (tmp_path / "r" / "report.html").read_text()
    assert 'id="cuts"' not in html and 'id="wefat"' not in html and 'id="audits"' not in html
    assert 'id="consistency"' in html and 'id="provenance"' in html


def test_store_is_not_written_and_output_is_reproducible(report_db, tmp_path):
    path, _ = report_db
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for out in ("a", "b"):
        r = invoke("--db", path, "report", "-o", tmp_path / out, "--test", "sent-weat6", "--audit", "--format", "svg")
        assert r.exit_code == 0, r.output
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    for svg in (tmp_path / "a" / "figures").iterdir():
        assert svg.read_bytes() == (tmp_path / "b" / "figures" / svg.name).read_bytes(), svg.name


def test_rerun_command_reproduces_the_result(report_db, tmp_path):
    """The provenance line, run as written, gives the same d and p."""
    import shlex
    path, run_id = report_db
    copy = tmp_path / "copy.duckdb"
    shutil.copy(path, copy)
    con = store.connect(copy, read_only=True)
    row = store.frame(con, "SELECT * FROM results WHERE run_id = ? AND test = 'weat6'", [run_id]).row(0, named=True)
    con.close()
    argv = shlex.split(report.data.rerun_command(row))
    assert argv[:3] == ["stimkit", "test", "weat6"]
    r = invoke("--db", copy, *argv[1:])
    assert r.exit_code == 0, r.output
    con = store.connect(copy, read_only=True)
    again = store.one(con, "SELECT effect_size, p_value FROM results WHERE test = 'weat6' ORDER BY created_at DESC LIMIT 1")
    con.close()
    assert again == (row["effect_size"], row["p_value"])


def test_empty_store_has_nothing_to_report(tmp_path):
    store.connect(tmp_path / "empty.duckdb").close()
    r = invoke("--db", tmp_path / "empty.duckdb", "report", "-o", tmp_path / "r")
    assert r.exit_code == 2
    assert r.output.strip() == "error: nothing to report: run `stimkit test` first"
    assert not (tmp_path / "r").exists()


def test_non_empty_folder_needs_force(report_db, tmp_path):
    path, _ = report_db
    out = tmp_path / "r"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    r = invoke("--db", path, "report", "-o", out, "--format", "html")
    assert r.exit_code == 1 and "not empty" in r.output and "--force" in r.output
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    r = invoke("--db", path, "report", "-o", out, "--format", "html", "--force")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == [".stimkit-report.json", "figures", "notes.txt", "report.html", "tables"]
    assert (out / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("args, message, code", [
    (["--test", "no-such-test"], "--test no-such-test: no result", 1),
    (["--format", "gif"], "unknown format 'gif'", 2),  # usage errors exit 2
    (["--correct", "bonferonni"], "--correct 'bonferonni': unknown correction", 2),
    (["--where", "no_such_column = 1"], "--where", 1),
])
def test_bad_input_is_one_line(report_db, tmp_path, args, message, code):
    path, _ = report_db
    r = invoke("--db", path, "report", "-o", tmp_path / "r", *args)
    assert r.exit_code == code and message in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_strip_takes_the_latest_result_per_encoder(report_db, tmp_path):
    """The audit's and the run's sent-weat6 on GloVe are one hypothesis: the family keeps the
    run's (the latest), and the strip plots its items once."""
    path, run_id = report_db
    con = store.connect(path, read_only=True)
    data = report.gather(con, where="true", tests=["sent-weat6"])
    n = store.one(con, """SELECT count(*) FROM result_items i JOIN results r USING (result_id)
        WHERE r.run_id = ? AND r.test = 'sent-weat6' AND i.role IN ('X', 'Y') AND i.dropped IS NULL""", [run_id])[0]
    con.close()
    assert data.results.filter(pl.col("test") == "sent-weat6").height == 1
    assert data.strips["sent-weat6"].height == n


def test_cut_spread_draws_each_cut(report_db):
    path, run_id = report_db
    con = store.connect(path, read_only=True)
    rid, d_full = store.one(con, "SELECT result_id, effect_size FROM results WHERE run_id = ? AND test = 'sent-weat6'", [run_id])
    cuts = report.data.cut_spread(con, [rid])
    con.close()
    ax = figures.cut_spread(cuts).axes[0]
    filled, hollow, full = ax.lines  # rejected cuts, the others, the uncut test's d
    assert list(filled.get_xdata()) == [1.2, 1.5] and list(hollow.get_xdata()) == [1.7]
    assert list(full.get_xdata()) == [d_full]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["sent-weat6 / glove-6b-50d"]
