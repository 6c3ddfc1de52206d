"""One number, one rendering (issue 48) and empty cells (issue 53): --alpha recomputes the
baselines' false-positive share in `results`; a legend explains only the marks its cells
carry; n is written in its units everywhere; `check` signs d; a display name given for a model
names each of its poolings; rows headed by category keep the test's name; the report's HTML
shows a dash, never "None", in an empty cell."""

from __future__ import annotations

import csv
import io
import re
import shutil
from types import SimpleNamespace

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from stimkit.cli import app
from stimkit.cli.association import table4_view
from stimkit.views import table4, text


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def rows_of(r) -> list[dict]:
    assert r.exit_code == 0, r.output
    return list(csv.DictReader(io.StringIO(r.stdout)))


@pytest.fixture(scope="module")
def small_db(catalog_db, tmp_path_factory):
    """weat6 and sent-weat6 on GloVe, and weat6's matched baseline of 20 pairs stored at alpha 0.05."""
    path = tmp_path_factory.mktemp("renderings") / "store.duckdb"
    shutil.copy(catalog_db, path)
    r = invoke("--db", path, "test", "weat6", "sent-weat6", "-e", "glove-6b-50d", "--budget", 500, "-q", "-f", "csv")
    assert r.exit_code == 0, r.output
    r = invoke("--db", path, "baseline", "weat6", "-e", "glove-6b-50d", "-k", 20, "--budget", 200, "--alpha", 0.05)
    assert r.exit_code == 0, r.output
    return path


def draws_p(path) -> list[float]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return [p for (p,) in con.execute("SELECT p_value FROM baseline_draws WHERE effect_size IS NOT NULL").fetchall()]
    finally:
        con.close()


@pytest.mark.parametrize("alpha", [0.5, 0.05, 0.001])
def test_results_alpha_recomputes_the_baselines_fpr(small_db, alpha):
    """results --alpha A: the share of the baseline's random pairs with p <= A, by hand from the
    stored draws, and as `baseline --alpha A` prints it."""
    got = rows_of(invoke("--db", small_db, "results", "--alpha", alpha, "-f", "csv", "--columns", "test,baseline_fpr"))
    fpr = {r["test"]: r["baseline_fpr"] for r in got}
    p = draws_p(small_db)
    assert len(p) > 0 and float(fpr["weat6"]) == sum(x <= alpha for x in p) / len(p)
    assert fpr["sent-weat6"] == ""  # no baseline
    base = rows_of(invoke("--db", small_db, "baseline", "weat6", "-e", "glove-6b-50d", "-k", 20, "--budget", 200,
                          "--alpha", alpha))
    assert float(base[0]["fpr"]) == float(fpr["weat6"])


def test_check_signs_d(small_db):
    rows = rows_of(invoke("--db", small_db, "check", "-f", "csv"))
    row = next(r for r in rows if r["check_name"] == "word vs sentence")
    d = {r["test"]: float(r["effect_size"]) for r in rows_of(invoke("--db", small_db, "results", "-f", "csv"))}
    assert row["detail"].startswith(f"d {d['weat6']:+.2f} [") and f" / {d['sent-weat6']:+.2f} [" in row["detail"]


def test_n_in_its_units_in_test_results_and_the_report(small_db, tmp_path):
    r = invoke("--db", small_db, "test", "weat6", "-e", "glove-6b-50d", "--budget", 500, "-f", "csv",
               "--columns", "test,n")
    assert r.exit_code == 0, r.output
    assert "n 8/8/8/8 words" in r.stderr and rows_of(r) == [{"test": "weat6", "n": "8/8/8/8 words"}]
    results = {x["test"]: x["n"] for x in rows_of(invoke("--db", small_db, "results", "-f", "csv", "--columns", "test,n"))}
    assert results["weat6"] == "8/8/8/8 words" and results["sent-weat6"].endswith(" sentences")
    out = tmp_path / "report"
    assert invoke("--db", small_db, "report", "-o", out, "--format", "html").exit_code == 0
    in_report = {x["test"]: x["n"] for x in csv.DictReader((out / "tables" / "results.csv").open())}
    assert in_report == results


def test_the_report_shows_a_dash_never_none(small_db, tmp_path):
    out = tmp_path / "report"
    r = invoke("--db", small_db, "report", "-o", out)
    assert r.exit_code == 0, r.output
    html = (out / "report.html").read_text()
    shown = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    shown = re.sub(r"<svg\b.*?</svg>", " ", shown, flags=re.S)
    shown = re.sub(r"<[^>]+>", " ", shown)
    assert not re.search(r"\bNone\b", shown)
    assert "<td>–</td>" in html  # an empty cell (a word test's p_words, a consistent check's reason)
    # the caption of table4.md explains only the marks its cells carry
    md = (out / "tables" / "table4.md").read_text()
    cells = md.split("Table:")[0]
    caption = md.split("Table:")[1]
    assert ("†" in caption) == ("†" in cells)
    assert ("** also significant" in caption) == ("\\*\\*" in cells and re.search(r"\d\\\*(?!\\\*)", cells) is not None)


def family(**kw):
    return SimpleNamespace(units=(("word", "words", 1),), **kw)


def test_a_legend_explains_only_the_marks_its_cells_carry():
    f = family()
    assert text.mark_note("holm", 0.01, f, ["+1.20**", "+0.90**"]) == "** p <= 0.01 and significant after Holm correction"
    assert text.mark_note("holm", 0.01, f, ["+1.20*"]) == "* p <= 0.01 (not significant after Holm correction)"
    assert text.mark_note("holm", 0.01, f, ["+1.20**", "+0.5*"]) == "* p <= 0.01; ** also significant after Holm correction"
    assert text.mark_note("holm", 0.01, f, ["+0.20"]) == "no result significant at p <= 0.01"
    caption = table4.file_caption("", "holm", 0.01, False, "greater", 2, "fam", ["+1.20**"])
    assert "†" not in caption and not re.search(r"(?<!\*)\* p <=", caption)
    assert "** p <= 0.01 and significant" in caption
    assert "† cannot reach p <= 0.01" in table4.file_caption("", "holm", 0.01, False, "greater", 2, "fam",
                                                              ["+0.10†"])


def frame(rows):
    base = {"context": "word", "alternative": "greater", "ci_low": None, "ci_high": None, "p_value": 0.001,
            "p_adjusted": 0.002, "rejected": True, "can_reject": True, "sentences_only": False, "p_method": "exact"}
    return pl.DataFrame([{**base, **r} for r in rows])


def test_a_display_name_for_a_model_names_each_of_its_poolings():
    df = frame([{"test": "weat6", "encoder": "minilm,pooling=mean", "effect_size": 1.0},
                {"test": "weat6", "encoder": "glove-6b-50d", "effect_size": 0.5}])
    view = table4_view(None, df, 0.01, ["weat6"], study=SimpleNamespace(heads="test", display={"minilm": "MiniLM",
                                                                                              "glove-6b-50d": "GloVe"}))
    assert sorted(view.columns) == ["GloVe", "MiniLM", "test"]
    assert text.study_names(["minilm,pooling=mean", "minilm,pooling=cls"], {"minilm": "MiniLM"}) == \
        {"minilm,pooling=mean": "MiniLM (pooling=mean)", "minilm,pooling=cls": "MiniLM (pooling=cls)"}
    assert text.study_names(["minilm,pooling=cls"], {"minilm": "MiniLM", "minilm,pooling=cls": "MiniLM-CLS"}) == \
        {"minilm,pooling=cls": "MiniLM-CLS"}  # a full spec's own name wins


def test_rows_headed_by_category_keep_the_test_name():
    df = frame([{"test": "weat6", "encoder": "glove-6b-50d", "effect_size": 1.0, "p_method": "exact"},
                {"test": "weat6", "encoder": "minilm,pooling=mean", "effect_size": 0.8, "p_method": "sampled"},
                {"test": "weat7", "encoder": "glove-6b-50d", "effect_size": 0.4}])
    view = table4.table4(df, 0.01, categories={"weat6": "Male vs Female / Career vs Family",
                                               "weat7": "Math vs Arts / Male vs Female"})
    heads = [r["test"] for r in view.rows]
    assert heads == ["Male vs Female / Career vs Family [weat6 (exact)]",
                     "Male vs Female / Career vs Family [weat6 (sampled)]", "Math vs Arts / Male vs Female [weat7]"]
