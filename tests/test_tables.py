"""Tables for terminals and for papers: `results` at 80 and 120 columns with a long hf: encoder,
--columns/--wide, machine formats with every column, LaTeX that compiles, Table 4 with display names."""

import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from stimkit.analysis import families
from stimkit.views import emit as output, table4, text as paper
from stimkit.cli import app
from stimkit.cli.common import count

cli = CliRunner()
LONG_ENCODER = "hf:sentence-transformers/paraphrase-multilingual-mpnet-base-v2-x"[:60]
LONG_TEST = "angry-black-woman-stereotype-sentences-b"  # 40 characters
BOX = re.compile("[\u2500-\u257f]")  # box-drawing characters


def invoke(*args):
    return cli.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def tables_db(catalog_db, tmp_path_factory):
    """weat6, weat7, sent-weat6 on GloVe with a bootstrap CI; the same rows again under a 60-character
    hf: encoder (half the d, three times the p) and under a 40-character test name."""
    assert len(LONG_ENCODER) == 60 and len(LONG_TEST) == 40
    path = tmp_path_factory.mktemp("tables") / "store.duckdb"
    shutil.copy(catalog_db, path)
    r = invoke("--db", path, "test", "weat6", "weat7", "sent-weat6", "-e", "glove-6b-50d", "--budget", 2000,
               "--bootstrap", 100, "-q")
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(path))
    con.execute(f"""INSERT INTO results SELECT * REPLACE (result_id || '/long' AS result_id, '{LONG_ENCODER}' AS encoder,
                    'fp-long' AS fingerprint, effect_size / 2 AS effect_size, least(p_value * 3, 1) AS p_value) FROM results""")
    con.execute(f"INSERT INTO results SELECT * REPLACE (result_id || '/t40' AS result_id, '{LONG_TEST}' AS test) "
                "FROM results WHERE test = 'weat6'")
    con.close()
    return path


def family_frame(path, correct="holm", alpha=0.01):
    con = duckdb.connect(str(path), read_only=True)
    fam = families.define_family(con, None, alpha)
    df = families.corrected(con, correct)
    con.close()
    return fam, df


def table_at(monkeypatch, path, width, *args):
    monkeypatch.setattr(output, "out", output.make_console(width=width))
    r = invoke("--db", path, "results", "-f", "table", *args)
    assert r.exit_code == 0, r.output
    return r.stdout, r.stderr


@pytest.mark.parametrize("width", [80, 120])
def test_results_at_80_and_120_columns_keep_the_decision(monkeypatch, tables_db, width):
    text, notes = table_at(monkeypatch, tables_db, width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines)
    body_at = next(i for i, line in enumerate(lines) if i and line.startswith("|-"))  # under the header
    header = " ".join(lines[1:body_at])
    # each column's header, its folded lines joined again (a stacked column's name follows its partner's)
    heads = ["".join(line.split("|")[i].strip() for line in lines[1:body_at]) for i in range(1, lines[1].count("|"))]
    for column in ("test", "encoder", "d", "ci", "p_value", "p_adjusted", "rejected"):  # d never without its CI
        assert any(column in h for h in heads), (column, header)
    _, df = family_frame(tables_db)
    assert df.height == 8 and sum(line.count(" true ") for line in lines) == int(df["rejected"].sum())
    body = lines[body_at + 1:-1]
    # the long names fold over lines rather than push the decision out: joined again, they are whole
    encoder_cells = "".join(line.split("|")[2].strip() for line in body)
    assert LONG_ENCODER in encoder_cells and LONG_TEST in "".join(line.split("|")[1].strip() for line in body)
    for r in df.iter_rows(named=True):
        assert f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]" in text
    dropped = re.search(r"not shown to fit \d+ characters .*: (.*)$", notes, re.M)
    assert dropped is None or set(dropped.group(1).split(", ")) <= {"context"}  # n stays (issue 53)
    assert notes.count("family: m = 8") == 1 and "encoder fingerprint" not in notes  # short, once
    assert not BOX.search(text)  # not a terminal: ASCII rules


def test_results_at_120_keeps_context_before_the_names_whole(monkeypatch, tables_db):
    text, notes = table_at(monkeypatch, tables_db, 120)
    assert " context " in "".join(text.splitlines()[1:3]) and "context" not in notes


def test_verbose_and_json_give_the_full_family(tables_db):
    r = invoke("--db", tables_db, "results", "--verbose", "-f", "csv")
    assert "encoder fingerprint, context" in r.stderr
    r = invoke("--db", tables_db, "results", "-f", "json")
    assert '"definition": "the latest result per hypothesis (test, encoder fingerprint' in r.stdout


def test_columns_chooses_and_wide_shows_all(monkeypatch, tables_db):
    r = invoke("--db", tables_db, "results", "--columns", "test,p_adjusted,d", "-f", "csv")
    assert r.exit_code == 0, r.output
    got = pl.read_csv(io.StringIO(r.stdout))
    _, df = family_frame(tables_db)
    assert got.columns == ["test", "p_adjusted", "d"]
    assert got["p_adjusted"].to_list() == df["p_adjusted"].to_list() and got["d"].to_list() == df["effect_size"].to_list()
    r = invoke("--db", tables_db, "results", "--columns", "test,nope")
    assert r.exit_code == 2 and "--columns: no column 'nope'" in r.stderr
    text, notes = table_at(monkeypatch, tables_db, 100_000, "--wide")
    assert " x_sql " in text.splitlines()[1] and " ci " in text.splitlines()[1]


def test_machine_formats_keep_every_column_at_full_precision(tables_db):
    _, df = family_frame(tables_db)
    r = invoke("--db", tables_db, "results", "-f", "csv")
    got = pl.read_csv(io.StringIO(r.stdout))
    assert got.columns == df.columns and not BOX.search(r.stdout)
    assert got["p_value"].to_list() == df["p_value"].to_list()  # 0.0015000000000000002 and all
    r = invoke("--db", tables_db, "results", "-f", "parquet")
    assert r.exit_code == 0, r.output
    back = pl.read_parquet(io.BytesIO(r.stdout_bytes))
    assert back.columns == df.columns and back["effect_size"].to_list() == df["effect_size"].to_list()


def test_table_rounds_what_people_read():
    frame = pl.DataFrame({"test": ["t"], "p_value": [0.00007000000000000001]})
    buf = io.StringIO()
    output.emit(frame, "table", stream=buf, notes=io.StringIO())
    assert "7e-05" in buf.getvalue() and "0.0000700" not in buf.getvalue()
    csv_value = output.render(frame, "csv").splitlines()[1].split(",")[1]
    assert float(csv_value) == 0.00007000000000000001  # machine formats keep every digit


def test_paper_numbers_and_marks():
    assert [paper.fmt_p(p) for p in (0.0004, 0.001, 0.01234, 0.5, None)] == ["<0.001", "0.001", "0.012", "0.500", ""]
    assert paper.fmt_d(1.2345) == "+1.23" and paper.fmt_d(-0.005) == "-0.01"
    assert paper.marks({"rejected": True, "p_value": 0.001}, 0.01) == "**"
    assert paper.marks({"rejected": False, "p_value": 0.01, "can_reject": False}, 0.01) == "*†"
    assert paper.marks({"rejected": False, "p_value": 0.02}, 0.01) == ""
    assert output.latex_escape("p <= 0.01 & 50%_†") == r"p $\leq$ 0.01 \& 50\%\_$^{\dagger}$"
    assert count(1, "stimulus") == "1 stimulus" and count(3, "stimulus") == "3 stimuli" and count(1, "test") == "1 test"


def test_table4_with_display_names(tables_db):
    fam, df = family_frame(tables_db)
    shown = df.with_columns(display=pl.when(pl.col("encoder") == LONG_ENCODER).then(pl.lit("MPNet (multilingual)"))
                            .otherwise(pl.lit("GloVe 50d")))
    caption = paper.caption(fam, "holm", 0.01, "Effect size d")
    tex = table4.paper(shown, 0.01, "latex", caption, order=["weat6", "weat7", "sent-weat6"])
    assert r"Test & GloVe 50d & MPNet (multilingual) \\" in tex and LONG_ENCODER not in tex
    assert r"\toprule" in tex and r"\caption{Effect size d; * p $\leq$ 0.01; ** also significant after Holm" in tex
    assert "m = 8 hypotheses" in tex
    by = {(r["test"], r["encoder"]): r for r in df.iter_rows(named=True)}
    for test in ("weat6", "weat7", "sent-weat6", LONG_TEST):
        cells = [f"{by[(test, e)]['effect_size']:+.2f}" + ("**" if by[(test, e)]["rejected"] else "")
                 + f" [{by[(test, e)]['ci_low']:.2f}, {by[(test, e)]['ci_high']:.2f}]"  # d with its interval
                 for e in ("glove-6b-50d", LONG_ENCODER)]
        assert f"{test} & {cells[0]} & {cells[1]} \\\\" in tex.replace(r"\_", "_")
    md = table4.paper(shown, 0.01, "markdown", caption)
    assert md.startswith("| Test | GloVe 50d | MPNet (multilingual) |\n|:---|---:|---:|\n") and "\nTable: Effect size d;" in md
    # without a display column the spec is the name
    assert f"| Test | glove-6b-50d | {LONG_ENCODER} |" in table4.paper(df, 0.01, "markdown", caption)


def test_table4_gives_each_hypothesis_a_row(tables_db):
    _, df = family_frame(tables_db)
    two = pl.concat([df, df.filter(pl.col("test") == "weat6").with_columns(alternative=pl.lit("two-sided"),
                                                                          effect_size=pl.lit(-0.5))])
    t4 = table4.build(two, 0.01, ["weat6"])
    assert t4.rows[:2] == ["weat6 (greater)", "weat6 (two-sided)"] and "alternative" in t4.note
    assert t4.labels[("weat6 (two-sided)", "glove-6b-50d")].startswith("-0.50")


@pytest.mark.skipif(shutil.which("pdflatex") is None,
                    reason="no TeX engine (apt-get install texlive-latex-base texlive-latex-recommended)")
def test_latex_tables_compile(tables_db, tmp_path):
    parts = []
    for args in (["-f", "latex"], ["--table", "-f", "latex"], ["--layout", "tan-celis", "-f", "latex"],
                 ["-f", "latex", "--columns", "test,encoder,d,ci,p_value,rejected,n,x_sql"]):
        r = invoke("--db", tables_db, "results", *args)
        assert r.exit_code == 0, r.output
        parts.append(r.stdout)
    assert r"\begin{tabular}" in parts[2] and r"\surd" in parts[2]
    doc = tmp_path / "doc.tex"
    doc.write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage[margin=1cm,landscape]{geometry}\n"
                   "\\begin{document}\n" + "\n".join(parts) + "\\end{document}\n")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "doc.pdf").read_bytes()[:5] == b"%PDF-"


def test_check_hides_result_ids_from_people(monkeypatch, tables_db):
    monkeypatch.setattr(output, "out", output.make_console(width=200))
    r = invoke("--db", tables_db, "check", "-f", "table")
    assert r.exit_code == 0, r.output
    assert " verdict " in r.stdout.splitlines()[1] and "result_ids" not in r.stdout
    r = invoke("--db", tables_db, "check", "-f", "csv")
    assert "result_ids" in r.stdout.splitlines()[0]


def test_usage_errors_and_help():
    r = invoke("results", "--correct", "holmes")
    assert r.exit_code == 2 and "unknown correction" in r.stderr
    r = invoke("--help")
    assert "<bool>" not in r.stdout and "--debug" in r.stdout
    r = invoke("audit", "show", "--help")
    assert '"rows": [the' in r.stdout
    r = invoke("test", "--help")
    for option in ("--y ", "--a ", "--b "):
        line = next(line for line in r.stdout.splitlines() if option in line)
        assert "Ad-hoc test" in line


def test_table4_at_80_columns_keeps_every_encoder(monkeypatch, tables_db):
    text, notes = table_at(monkeypatch, tables_db, 80, "--table")
    assert "not shown" not in notes and all(len(line) <= 80 for line in text.splitlines())
    assert "glove-6b-50d" in text and "hf:sentence-transformers/" in text.replace(" ", "").replace("|", "")
    assert text.count("**") == 8  # every hypothesis rejected, each in its own cell
    _, df = family_frame(tables_db)
    cells = " ".join(text.replace("|", " ").split())  # a cell may wrap at its interval's space
    for r in df.iter_rows(named=True):  # each d with its 95% interval
        assert f"{r['effect_size']:+.2f}** [{r['ci_low']:.2f}, {r['ci_high']:.2f}]" in cells, r["test"]
    assert "[95% interval of d]" in notes


def test_parquet_is_refused_on_a_terminal(monkeypatch):
    monkeypatch.setattr(output, "_stdout_is_terminal", lambda: True)
    with pytest.raises(output.UsageError, match="parquet writes bytes"):
        output.emit(pl.DataFrame({"a": [1]}), "parquet")
    buf = io.BytesIO()
    output.emit(pl.DataFrame({"a": [1.5]}), "parquet", stream=buf)  # a file given: bytes go there
    assert pl.read_parquet(io.BytesIO(buf.getvalue()))["a"].to_list() == [1.5]


def test_test_prints_each_d_with_its_interval(catalog_db, tmp_path):
    path = tmp_path / "store.duckdb"
    shutil.copy(catalog_db, path)
    r = invoke("--db", path, "test", "weat6", "sent-weat7b", "-e", "glove-6b-50d",
               "--budget", 500, "--cuts", 3)
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(path), read_only=True)
    d, lo, hi = con.execute("SELECT effect_size, ci_low, ci_high FROM results WHERE test = 'weat6'").fetchone()
    con.close()
    assert f"d={d:+.3f} [{lo:.2f}, {hi:.2f}] p" in r.stderr
    # a short line per result, its figures and notes on indented lines: all within 80 columns
    lines = r.stderr.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    first = lines.index("[2/2] sent-weat7b  glove-6b-50d")
    assert lines[first + 1].startswith("    d=") and " n 72/72/64/64 sentences" in lines[first + 1]  # n in its units
    assert lines[first + 2].startswith("    ") and "cut by balance=cut" in lines[first + 2] and "3 cuts: d" in r.stderr


def test_check_shows_each_d_with_its_interval(tables_db):
    r = invoke("--db", tables_db, "check", "-f", "json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    row = next(c for c in rows if c["check_name"] == "word vs sentence" and c["encoder"] == "glove-6b-50d")
    _, df = family_frame(tables_db)
    by = {r["test"]: r for r in df.filter(pl.col("encoder") == "glove-6b-50d").iter_rows(named=True)}
    w, s = by["weat6"], by["sent-weat6"]
    assert row["detail"].startswith(f"d {w['effect_size']:+.2f} [{w['ci_low']:.2f}, {w['ci_high']:.2f}] / "
                                    f"{s['effect_size']:+.2f} [{s['ci_low']:.2f}, {s['ci_high']:.2f}], p ")


EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "care-tech"


def test_captions_name_the_study_not_the_paper(catalog_db, tmp_path):
    """A table of your study says it is your study's; only the paper's own study (or, with no
    study, one paper's catalog tests alone) cites the paper's table."""
    import dataclasses

    import stimkit
    from stimkit.study import study

    assert paper.source(study.load("may-2019")) == "May et al. 2019, Table 4"
    assert paper.source(study.load("tan-celis-2019")) == "Tan and Celis 2019, Tables 7-8"
    assert paper.source(study.load(str(EXAMPLE / "study.toml"))) == "study care-tech"
    assert paper.source(dataclasses.replace(study.load("may-2019"), name="my-replication")) == "study my-replication"
    assert paper.source(dataclasses.replace(study.load("may-2019"), path=tmp_path / "may-2019.toml")) == "study may-2019"
    db = tmp_path / "own.duckdb"
    r = invoke("--db", db, "run", EXAMPLE / "study.toml", "-e", "glove-6b-50d", "--budget", 1000, "-f", "latex")
    assert r.exit_code == 0, r.output
    assert "Effect size d by test and encoder (study care-tech);" in r.stdout and "May et al." not in r.stdout
    r = invoke("--db", db, "results", "--table", "-f", "markdown")
    assert "Effect size d by test and encoder;" in r.stdout and "May et al." not in r.stdout
    with stimkit.open(db, read_only=True) as s:
        s.report(tmp_path / "report", formats=["svg"], study=str(EXAMPLE / "study.toml"))
    assert "Effect size d by test and encoder (study care-tech);" in (tmp_path / "report" / "tables" / "table4.tex").read_text()
    published = tmp_path / "published.duckdb"
    shutil.copy(catalog_db, published)
    assert invoke("--db", published, "test", "weat6", "weat7", "-e", "glove-6b-50d", "--budget", 500).exit_code == 0
    r = invoke("--db", published, "results", "--table", "-f", "latex")
    assert "Effect size d by test and encoder (May et al. 2019, Table 4);" in r.stdout


def header_of(table: str) -> str:
    """An ASCII table's header cells, their folded lines joined (`n_` over `templates`: n_templates)."""
    lines = table.splitlines()
    end = next(i for i, line in enumerate(lines) if i and line.startswith("|-"))
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in lines[1:end]]
    return " ".join("".join(cells) for cells in zip(*rows))


def test_audit_show_compare_and_catalog_keep_their_findings_at_80_columns(monkeypatch, catalog_db, tmp_path):
    """At 80 columns the names fold, and the findings stay: the full and pooled d, p and the
    number of templates (audit show), d, p and the decision (audit compare), the four sets a
    test compares (catalog). No line is wider than the terminal."""
    path = tmp_path / "audits.duckdb"
    shutil.copy(catalog_db, path)
    assert invoke("--db", path, "audit", "templates", "-t", "sent-weat6", "-t", "sent-angry_black_woman_stereotype",
                  "-e", "glove-6b-50d", "--budget", 1000).exit_code == 0
    monkeypatch.setattr(output, "out", output.make_console(width=80))
    views = {("audit", "show"): ("full_d", "full_p", "n_templates", "pooled_d", "ci_low"),
             ("audit", "compare", "-t", "sent-weat6", "-s", "may2019", "-s", "past_tense", "-e", "glove-6b-50d",
              "--budget", "1000"): ("n_x", "d", "p", "significant"),
             ("catalog",): ("X", "Y", "A", "B")}
    for args, findings in views.items():
        r = invoke("--db", path, *args, "-f", "table")
        assert r.exit_code == 0, r.output
        tables = [t for t in re.split(r"\n(?=\+)", r.stdout) if t.startswith("+") and "|-" in t]
        header = header_of(tables[0]).split()
        assert all(any(f in h for h in header) for f in findings), (args, header, r.stdout, r.stderr)  # its own column, or under another
        assert all(len(line) <= 80 for line in r.stdout.splitlines()), args
    r = invoke("--db", path, "audit", "show", "-f", "table")
    second = [t for t in re.split(r"\n(?=\+)", r.stdout) if t.startswith("+") and "|-" in t][1]
    assert {"d_alone", "decision_flip"} <= set(header_of(second).split())
