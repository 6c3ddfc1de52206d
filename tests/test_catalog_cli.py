"""The CLI for stimuli: generate, sets, catalog, export/import sentbias, balancing."""

import json
import shutil

import polars as pl
import pytest
from typer.testing import CliRunner

from stimkit import StimkitError, store
from stimkit.catalog import definitions as catalog, sentbias
from stimkit.cli import app
from stimkit.stimuli.balance import balance

from conftest import REFERENCE, published, snapshot

runner = CliRunner()


def run(db, *args):
    result = runner.invoke(app, ["--db", str(db), *args])
    return result


def copy_store(catalog_db, tmp_path):
    path = tmp_path / "copy.duckdb"
    shutil.copy(catalog_db, path)
    return path


def state(path):
    con = store.connect(path)
    snap = snapshot(con)
    con.close()
    return snap


def test_generate_then_sets_and_catalog(tmp_path):
    db = tmp_path / "s.duckdb"
    r = run(db, "generate", "-q")
    assert r.exit_code == 0, r.output
    assert "new" in r.output
    r = run(db, "generate", "-q")
    assert "0 new, 0 restored" in r.output
    r = run(db, "sets", "flowers@")
    assert "flowers@may2019" in r.output and "350" in r.output  # 25 flowers x 14 sentences
    r = run(db, "catalog")
    assert r.exit_code == 0 and "sent-weat9" in r.output
    r = run(db, "catalog", "show", "sent-weat9")
    assert "(73 stimuli)" in r.output and "physical_disease@may2019" in r.output


@pytest.mark.parametrize("args, message, code", [
    # an unknown test is a usage error (exit 2); bad inputs (lists, templates, files) exit 1
    (["catalog", "show", "weat99"], "unknown test 'weat99'", 2),
    (["generate", "-w", "nosuchlist"], "unknown word list 'nosuchlist'", 1),
    (["generate", "-w", "flowers", "-t", "nosuchset"], "unknown template set 'nosuchset'", 1),
    (["generate", "-w", "flowers", "-t", "heilman/nosuchfile"], "has no template file 'nosuchfile'", 1),
    (["export", "sentbias", "OUT", "--test", "nosuch"], "unknown test 'nosuch'", 2),
    (["import", "sentbias", "EMPTY"], "no .jsonl or .json files", 1),
])
def test_bad_input_is_one_line_and_leaves_the_store(catalog_db, tmp_path, args, message, code):
    db = copy_store(catalog_db, tmp_path)
    (tmp_path / "EMPTY").mkdir()
    args = [str(tmp_path / a) if a in ("OUT", "EMPTY") else a for a in args]
    before = state(db)
    r = run(db, *args)
    assert r.exit_code == code
    assert message in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
    assert state(db) == before
    assert not (tmp_path / "OUT").exists()


def test_bad_word_list_via_cli(tmp_path):
    d = tmp_path / "lists"
    d.mkdir()
    (d / "bad.toml").write_text('[a]\ncategory = "A"\nwords = ["x", "y", "x"]\n')
    db = tmp_path / "s.duckdb"
    r = run(db, "generate", "--wordlist-dir", str(d))
    assert r.exit_code == 1
    assert "bad.toml:3: list 'a': duplicate word 'x'" in r.output
    assert not db.exists() or state(db).get("stimuli", []) == []


def test_sql_set_that_selects_nothing(catalog_con):
    with pytest.raises(StimkitError, match="selects no stimuli"):
        catalog.fetch(catalog_con, "SELECT * FROM current_stimuli WHERE word = 'no such word'", "X")
    with pytest.raises(StimkitError, match="query failed"):
        catalog.fetch(catalog_con, "SELECT * FROM no_such_table", "X")


def frame(words_sizes):
    rows = [(w, f"{w} {i}") for w, n in words_sizes for i in range(n)]
    return pl.DataFrame({"word": [r[0] for r in rows], "stimulus": [r[1] for r in rows]})


def test_balance_cut_is_seeded_and_keeps_order():
    x, y = frame([("a", 8), ("b", 8), ("c", 8)]), frame([("d", 8), ("e", 8)])
    b1 = balance(x, y, "cut", seed=7, test_name="t")
    b2 = balance(x, y, "cut", seed=7, test_name="t")
    b3 = balance(x, y, "cut", seed=8, test_name="t")
    assert b1.x.height == b1.y.height == 16 and b1.dropped == {"x": 8}
    assert b1.x.equals(b2.x) and not b1.x.equals(b3.x)
    assert b1.y.equals(y)
    positions = [x["stimulus"].to_list().index(s) for s in b1.x["stimulus"]]
    assert positions == sorted(positions)


def test_balance_drop_words_drops_whole_words():
    x, y = frame([("a", 8), ("b", 8), ("c", 8)]), frame([("d", 8), ("e", 8)])
    b = balance(y, x, "drop-words", seed=3, test_name="t")
    assert b.y.height == 16 and b.y["word"].n_unique() == 2
    assert b.y.group_by("word").len()["len"].to_list() == [8, 8]


def test_balance_none_keeps_unequal_targets():
    b = balance(frame([("a", 24)]), frame([("b", 16)]), "none", seed=0, test_name="t")
    assert (b.x.height, b.y.height) == (24, 16) and b.dropped == {}


def test_export_with_balance_equalises_targets(catalog_con, tmp_path):
    sentbias.export(catalog_con, tmp_path / "out", ["sent-weat9"], balance="cut", seed=1)
    data = json.loads((tmp_path / "out" / "sent-weat9.jsonl").read_text())
    assert len(data["targ1"]["examples"]) == len(data["targ2"]["examples"]) == 18
    assert set(data["targ2"]["examples"]) < set(sentbias.test_json(catalog_con, catalog.get(catalog_con, "sent-weat9"))["targ2"]["examples"])


def test_import_published_sets_round_trip(tmp_path):
    db = tmp_path / "imp.duckdb"
    r = run(db, "import", "sentbias", str(REFERENCE))
    assert r.exit_code == 0, r.output
    assert "imported 46 tests" in r.output
    con = store.connect(db)
    for name in ("sent-weat2", "weat8", "heilman_double_bind_likable_1-"):
        ours = sentbias.test_json(con, catalog.get(con, f"import:{name}"))
        assert ours == published(name)
    # importing again writes no new set versions
    n = store.one(con, "SELECT count(*) FROM stimulus_sets")[0]
    con.close()
    run(db, "import", "sentbias", str(REFERENCE))
    con = store.connect(db)
    assert store.one(con, "SELECT count(*) FROM stimulus_sets")[0] == n


def test_import_malformed_json_names_the_file(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "good.jsonl").write_text((REFERENCE / "weat1.jsonl").read_text())
    (d / "bad.jsonl").write_text('{"targ1": {"category": "X", "examples": []}}')
    db = tmp_path / "s.duckdb"
    r = run(db, "import", "sentbias", str(d))
    assert r.exit_code == 1 and "bad.jsonl: missing or empty 'targ1'" in r.output
    assert state(db)["stimuli"] == []
