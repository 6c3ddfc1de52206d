"""Tan & Celis 2019: the 42 stimulus files, c-word as a context, the Tables 7/8 layout."""

import json
import shutil
from collections import Counter

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from stimkit import StimkitError, encoders, store
from stimkit.catalog import definitions as catalog, sentbias
from stimkit.views import tancelis
from stimkit.run import cword
from stimkit.stimuli import generate, wordlists
from stimkit.stimuli.balance import balance
from stimkit.study import study
from stimkit.cli import app
from stimkit.stimuli.generate import SetSpec
from stimkit.stimuli.limits import Limits
from stimkit.stimuli.templates import TemplateSet

from conftest import FIXTURES, snapshot

TC_REFERENCE = FIXTURES / "tan-celis" / "tests"
TC_FILES = sorted(p.stem for p in TC_REFERENCE.glob("*.jsonl"))
KEYS = ("targ1", "targ2", "attr1", "attr2")
# Targets the authors cut at random to equal size (as May et al.'s sent-weat8 Arts, 56 of 76).
TC_CUT = {("sent-weat+13", "targ2")}


def tc_rows():
    return list(study.load("tan-celis-2019").rows)


def tc_paper_tests():
    return {t for _, t, _ in study.load("tan-celis-2019").rows}


def reference(name: str) -> dict:
    return json.loads((TC_REFERENCE / f"{name}.jsonl").read_text())


def test_the_42_files_are_the_tan_celis_catalog():
    assert len(TC_FILES) == 42
    tc = catalog.by_paper(catalog.load_toml(), "tan-celis-2019")
    assert sorted(tc) == TC_FILES
    assert len(catalog.by_paper(catalog.load_toml(), "may-2019")) == 46
    assert {t.paper_test for t in tc.values()} >= {"+C11", "+C12", "+C13", "+Occ", "+I1", "+I5",
                                                   "+Double Bind EA/AA (Competent)", "Double Bind M/F (Likable)"}


def test_unknown_paper_is_refused():
    with pytest.raises(StimkitError, match="unknown paper 'tan-celis'.*may-2019, tan-celis-2019"):
        catalog.by_paper(catalog.load_toml(), "tan-celis")


def test_export_reproduces_every_tan_celis_file(catalog_con, tmp_path):
    written = sentbias.export(catalog_con, tmp_path / "out", TC_FILES)
    assert sorted(p.stem for p in written) == TC_FILES
    for path in written:
        ours, theirs = json.loads(path.read_text()), reference(path.stem)
        for key in KEYS:
            o, t = ours[key]["examples"], theirs[key]["examples"]
            assert ours[key]["category"] == theirs[key]["category"], (path.stem, key)
            if (path.stem, key) in TC_CUT:
                assert Counter(t) < Counter(o) and len(t) < len(o), (path.stem, key)
            else:
                assert Counter(o) == Counter(t), (path.stem, key, sorted(Counter(o) - Counter(t))[:5],
                                                  sorted(Counter(t) - Counter(o))[:5])


def test_cut_target_is_cut_to_the_published_size(catalog_con):
    test = catalog.get(catalog_con, "sent-weat+13")
    sets = catalog.fetch_sets(catalog_con, test)
    b = balance(sets["x"], sets["y"], test.balance, seed=0, test_name=test.name)
    assert b.x.height == b.y.height == len(reference("sent-weat+13")["targ2"]["examples"]) == 56


def test_occupations_follow_the_split_lowercase_and_cut_rules():
    lists = wordlists.load_all()
    male = [w.text for w in lists["winobias_male_occupations"].words]
    female = [w.text for w in lists["winobias_female_occupations"].words]
    assert "construction" in male and "worker" in male and "construction worker" not in male
    assert "ceo" in male and "CEO" not in male and "cook" not in male
    assert len(male) == len(female) == 20
    winobias = (TC_REFERENCE.parent / "winobias" / "male_occupations.txt").read_text().split("\n")
    assert len([w for line in winobias for w in line.split()]) == 21  # split, before the cut


@pytest.mark.parametrize("body, message", [
    ('split = true\nwords = ["a b", {word = "c"}]', "plain string words"),
    ('drop = ["zebra"]\nwords = ["a", "b"]', "drop names 'zebra', which is not in the list"),
    ('drop = "a"\nwords = ["a", "b"]', "`drop` must be a list"),
])
def test_bad_derivation_rules_are_refused(tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(f"[occ]\n{body}\n")
    with pytest.raises(StimkitError, match=message) as e:
        wordlists.parse_file(path)
    assert "bad.toml" in str(e.value) and "'occ'" in str(e.value)


# --- c-word: a sentence test's inserted word, through the encoder's token variant -------------


SMALL = "sent-weat_hdb_unbleach_likable"  # 8/8/8/8 sentences: quick to encode


def cli(db, *args):
    result = CliRunner().invoke(app, ["--db", str(db), *args])
    assert result.exit_code == 0, result.output
    return result.stdout  # data only: prose and the family line go to stderr


def items(con, result_id):
    return store.rows(con, "SELECT role, ordinal, set_version, stimulus, word, template_id, dropped FROM result_items "
                           "WHERE result_id = ? ORDER BY role, ordinal", [result_id])


def test_cword_stores_context_cword_with_the_sent_results_stimuli(catalog_db, tmp_path):
    db = tmp_path / "copy.duckdb"
    shutil.copy(catalog_db, db)
    cli(db, "test", SMALL, "-e", "minilm", "--budget", "2000")
    cli(db, "test", SMALL, "-e", "minilm", "--context", "c-word", "--budget", "2000")
    con = store.connect(db)
    try:
        sent, cword = store.frame(con, "SELECT * FROM results ORDER BY created_at").iter_rows(named=True)
        assert (sent["context"], cword["context"]) == ("sentence", "c-word")
        assert cword["encoder"] == sent["encoder"] == "minilm,pooling=mean"  # the spec as named
        assert cword["fingerprint"] == encoders.resolve("minilm,pooling=token,subtoken=first").fingerprint
        assert cword["fingerprint"] != sent["fingerprint"] and cword["effect_size"] != sent["effect_size"]
        assert items(con, cword["result_id"]) == items(con, sent["result_id"])
        assert len(items(con, cword["result_id"])) == 32
    finally:
        con.close()
    # and the Tan & Celis layout of the two: the (u) pair of the likable double bind
    table = cli(db, "results", "--where", "true", "--correct", "none", "--layout", "tan-celis", "--format", "json")
    rows = json.loads(table)
    assert [(r["test"], r["encoding"]) for r in rows] == [("Double Bind M/F (Likable)", "sent (u)"),
                                                          ("Double Bind M/F (Likable)", "c-word (u)")]
    assert rows[0]["minilm,pooling=mean"].startswith(f"{sent['effect_size']:+.2f}")
    assert rows[1]["minilm,pooling=mean"].startswith(f"{cword['effect_size']:+.2f}")


def test_catalog_lists_one_paper_as_one_json_document(catalog_db, tmp_path):
    db = tmp_path / "copy.duckdb"
    shutil.copy(catalog_db, db)
    tc = json.loads(cli(db, "catalog", "--paper", "tan-celis-2019", "--format", "json"))
    assert sorted(r["test"] for r in tc) == TC_FILES and {r["paper"] for r in tc} == {"tan-celis-2019"}
    may = json.loads(cli(db, "catalog", "--paper", "may-2019", "--format", "json"))
    assert len(may) == 46 and not {r["test"] for r in may} & set(TC_FILES)


def test_cword_vectors_are_the_models_hidden_state_of_the_inserted_word():
    import torch
    from transformers import AutoModel, AutoTokenizer

    from stimkit.encoders.transformer import minilm_path

    texts = ["This is Shaniqua.", "The engineer is unassertive.", "Here is a hairdresser, there a ceo."]
    words = ["Shaniqua", "unassertive", "ceo"]
    spans = [(t.index(w), t.index(w) + len(w)) for t, w in zip(texts, words)]
    first = encoders.token_variant("minilm").encode(texts, spans).vectors
    mean = encoders.token_variant("minilm,subtoken=mean").encode(texts, spans).vectors
    tokenizer, model = AutoTokenizer.from_pretrained(minilm_path()), AutoModel.from_pretrained(minilm_path()).eval()
    for i, (text, (s, e)) in enumerate(zip(texts, spans)):
        batch = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**batch).last_hidden_state[0].numpy()
        tokens = sorted({batch.char_to_token(c) for c in range(s, e)})
        assert len(tokens) >= 2 or i == 2  # the names and the long adjective split into sub-tokens
        assert np.allclose(first[i], hidden[tokens[0]], atol=1e-5)
        assert np.allclose(mean[i], hidden[tokens].mean(axis=0), atol=1e-5)
        assert not np.allclose(first[i], hidden[tokens[0] - 1], atol=1e-3)  # not the token before


def test_word_test_and_sentence_only_encoders_refuse_cword():
    weat = catalog.load_toml()["weat+11"]
    with pytest.raises(StimkitError, match="test 'weat\\+11' has context word.*try 'sent-weat\\+11'"):
        cword.in_context(weat, "c-word")
    with pytest.raises(StimkitError, match="encoder 'use-m3' cannot give c-word vectors"):
        encoders.token_variant("use-m3")
    with pytest.raises(StimkitError, match="not applicable to static word vectors"):
        encoders.token_variant("glove-6b-50d")
    with pytest.raises(StimkitError, match="unknown context 'cword'"):
        cword.in_context(catalog.load_toml()["sent-weat1"], "cword")


@pytest.mark.parametrize("args, message, code", [
    # a context the test cannot take is a usage error (2); an encoder without token vectors, an input failure (1)
    (["test", "weat1", "--context", "c-word", "-e", "minilm"], "test 'weat1' has context word: only a sentence test runs as c-word (try 'sent-weat1')", 2),
    (["test", SMALL, "--context", "c-word", "-e", "use-m3"], "encoder 'use-m3' cannot give c-word vectors", 1),
])
def test_cli_cword_bad_input_is_one_line(catalog_db, tmp_path, args, message, code):
    db = tmp_path / "copy.duckdb"
    shutil.copy(catalog_db, db)
    before = snapshot_of(db)
    result = CliRunner().invoke(app, ["--db", str(db), *args])
    assert result.exit_code == code
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert snapshot_of(db) == before


def snapshot_of(db):
    con = store.connect(db)
    try:
        return snapshot(con)
    finally:
        con.close()


def test_a_word_beyond_the_models_reach_is_refused_with_template_and_sentence(catalog_con, tmp_path):
    root = tmp_path / "templates"
    (root / "toolong").mkdir(parents=True)
    (root / "toolong" / "name.j2").write_text("{# the word lands past the model's 512 tokens #}\n"
                                               "This is {{ word }}.\n" + "It is {{ 'very ' * 600 }}much {{ word }}.\n")
    lists = wordlists.load_all()
    tsets = {"toolong": TemplateSet("toolong", root)}
    generate.generate(catalog_con, [SetSpec("male_names", "toolong"), SetSpec("female_names", "toolong")], lists, tsets,
                      limits=Limits(sentence_chars=10_000))  # a 3,000-character sentence, on purpose
    test = catalog.TestDef("long", ("male_names@toolong", "female_names@toolong", "pleasant@may2019", "unpleasant@may2019"),
                           "c-word", source="adhoc")
    sets = {"long": catalog.fetch_sets(catalog_con, test)}
    with pytest.raises(StimkitError, match=r"test 'long': template toolong/name:3: no token of 'minilm' covers "
                                           r"the inserted word \(characters 3\d\d\d-3\d\d\d\) in 'It is very very"):
        cword.variant(encoders.resolve("minilm"), [(test, sets["long"])])


# --- Tables 7 and 8 -------------------------------------------------------------------------


def frame(rows):
    return pl.DataFrame(rows, schema={"test": pl.String, "encoder": pl.String, "context": pl.String,
                                      "effect_size": pl.Float64, "rejected": pl.Boolean}, orient="row")


def test_layout_places_each_result_and_marks_sent_against_cword():
    tests = catalog.load_toml()
    df = frame([
        ("weat+11", "glove", "word", -1.314, True),
        ("sent-weat+11", "glove", "sentence", -0.87, False),
        ("sent-weat+11", "minilm", "sentence", 0.68, True),
        ("sent-weat+11", "minilm", "c-word", -0.44, False),      # sent only: ✗
        ("sent-weat_hdb_bleach_competent", "minilm", "sentence", 0.2, False),
        ("sent-weat_hdb_bleach_competent", "minilm", "c-word", 0.42, True),   # c-word only: ✓
        ("sent-weat_hdb_unbleach_competent", "minilm", "sentence", 1.26, True),
        ("sent-weat_hdb_unbleach_competent", "minilm", "c-word", 0.57, True),  # both: ▲ (the (u) pair)
        ("weat1", "glove", "word", 1.5, True),
        ("nosuchtest", "glove", "word", 9.0, True),               # not a paper row: left out
    ])
    t = tancelis.tan_celis(df, tests, tc_rows(), ["glove"])
    assert t.columns == ["section", "test", "encoding", "glove", "minilm"]
    got = {(r["test"], r["encoding"]): (r["glove"], r["minilm"]) for r in t.iter_rows(named=True)}
    assert got == {
        ("C1: Flowers/Insects, P/U", "word"): ("+1.50*", ""),
        ("+C11: M/F Names, P/U", "word"): ("-1.31*", ""),
        ("+C11: M/F Names, P/U", "sent"): ("-0.87", "+0.68*"),
        ("+C11: M/F Names, P/U", "c-word"): ("NA", "-0.44✗"),
        ("Double Bind M/F (Competent)", "sent"): ("", "+0.20"),
        ("Double Bind M/F (Competent)", "c-word"): ("NA", "+0.42*✓"),
        ("Double Bind M/F (Competent)", "sent (u)"): ("", "+1.26*"),
        ("Double Bind M/F (Competent)", "c-word (u)"): ("NA", "+0.57*▲"),
    }
    # the paper's row order: Neutral first, then Gender; within a test word, sent, sent (u), c-word, c-word (u)
    assert t["section"].to_list()[0] == "Neutral"
    assert t.filter(pl.col("test") == "Double Bind M/F (Competent)")["encoding"].to_list() == ["sent", "sent (u)", "c-word", "c-word (u)"]


def test_layout_keeps_the_latest_of_repeated_results():
    df = frame([("weat+12", "glove", "word", 0.1, False), ("weat+12", "glove", "word", -0.15, True)])
    df = df.with_columns(created_at=pl.Series([2, 1]))
    assert tancelis.tan_celis(df, catalog.load_toml(), tc_rows())["glove"].to_list() == ["+0.10"]


def test_layout_refuses_a_frame_without_its_columns():
    with pytest.raises(StimkitError, match="lacks column\\(s\\) rejected"):
        tancelis.tan_celis(frame([]).drop("rejected"), catalog.load_toml(), tc_rows())


def test_paper_tests_cover_every_row_once_per_encoding():
    every = catalog.load_toml()
    tests = [every[name] for name in study.load("tan-celis-2019").tests]
    keys = [(t.paper_test, tancelis.encoding(t, t.context)) for t in tests]
    assert len(keys) == len(set(keys)) == 64
    assert {f for f, _ in keys} == tc_paper_tests()
    assert sum(e == "sent (u)" for _, e in keys) == 4  # the four double binds


def test_the_job_on_glove_fills_every_word_and_sent_cell(catalog_db, tmp_path):
    import shutil

    import stimkit

    path = tmp_path / "tan-celis.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        job = s.run("tan-celis-2019", ["glove-6b-50d"], budget=2_000)
        run_id, df = job.run.run_id, job.results
        assert "glove-6b-50d: no c-word vectors (NA)" in job.run.notes
        assert job.family.m == df.height == 64 and set(df["context"]) == {"word", "sentence"}
        assert set(df["run_id"]) == {run_id}
        table = tancelis.tan_celis(df, catalog.load_toml(), tc_rows())
        assert table.height == 64 and table["glove-6b-50d"].str.contains(r"^[+-]\d\.\d\d\*? \[-?\d\.\d\d, -?\d\.\d\d\]$").all()
        # the weat+11 cell is that test's d, rounded, with its stored 95% interval
        r = df.filter(pl.col("test") == "weat+11").row(0, named=True)
        mark = "*" if r["rejected"] else ""
        assert table.filter((pl.col("test") == "+C11: M/F Names, P/U") & (pl.col("encoding") == "word"))["glove-6b-50d"][0] \
            == f"{r['effect_size']:+.2f}{mark} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        # same inputs and seed: nothing to compute, the same numbers (a fresh store gives them too:
        # tests/test_inputs_follow.py)
        again = s.run("tan-celis-2019", ["glove-6b-50d"], budget=2_000)
        assert again.run.computed is False and again.run.run_id == run_id and again.run.results == []
        cols = ["test", "context", "effect_size", "p_value"]
        assert again.results.sort(cols[:2]).select(cols).equals(df.sort(cols[:2]).select(cols))


def test_the_span_check_truncates_where_the_encoder_does(catalog_con):
    test = cword.in_context(catalog.get(catalog_con, "sent-weat6"), "c-word")
    sets = catalog.fetch_sets(catalog_con, test)
    assert cword.variant(encoders.resolve("minilm"), [(test, sets)]).spec == "minilm,pooling=token,subtoken=first"
    # 8 tokens: [CLS] the person ' s name is [SEP] -- the name is cut off
    with pytest.raises(StimkitError, match=r"template may2019/name:\d+: .* in \"The person's name is John.\""):
        cword.variant(encoders.resolve("minilm,max_length=8"), [(test, sets)])
