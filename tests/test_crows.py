"""CrowS-Pairs (issue 51): `import crows-pairs` keeps every field, the likelihood test over the
pairs stores each scoring variant's metric score by split, and stimkit's nangia variant decides
every one of the 1,508 pairs as Nangia et al.'s metric.py does on the same tiny masked LM
(tests/fixtures/crows-pairs/nangia_decisions.json, made by metric.py: see its SOURCE.md)."""

from __future__ import annotations

import csv
import importlib.util
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from stimkit import store
from stimkit.cli import app
from stimkit.stats import pairs as pair_stats

from conftest import FIXTURES, snapshot

HERE = FIXTURES / "crows-pairs"
CSV = HERE / "crows_pairs_anonymized.csv"
FIELDS = ("", "sent_more", "sent_less", "stereo_antistereo", "bias_type", "annotations", "anon_writer",
          "anon_annotators")


def cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def published() -> list[dict]:
    with open(CSV, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    db = tmp_path_factory.mktemp("crows") / "c.duckdb"
    r = cli("--db", db, "import", "crows-pairs", CSV)
    assert r.exit_code == 0, r.output
    return db


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """The tiny BertForMaskedLM metric.py scored, rebuilt from its config and seed."""
    spec = importlib.util.spec_from_file_location("crows_make_figures", HERE / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = tmp_path_factory.mktemp("tiny-bert")
    return folder, module.build(folder)


# ---------------------------------------------------------------- the import


def test_import_keeps_every_field_and_the_sentences_as_stimuli(imported):
    rows = published()
    con = store.connect(imported, read_only=True)
    try:
        stored = store.rows(con, "SELECT pair_id, sent_more, sent_less, stereo_antistereo, bias_type, annotations, "
                                 "anon_writer, anon_annotators FROM crows_pairs ORDER BY ordinal")
        more = store.rows(con, "SELECT stimulus FROM current_stimuli WHERE set_name = 'crows-pairs/more' ORDER BY ordinal")
        less = store.rows(con, "SELECT stimulus FROM current_stimuli WHERE set_name = 'crows-pairs/less' ORDER BY ordinal")
        test = store.one(con, "SELECT n_pairs, more_set, less_set FROM crows_tests WHERE name = 'crows-pairs'")
        licence = store.rows(con, "SELECT DISTINCT licence FROM current_sets WHERE name LIKE 'crows-pairs/%'")
    finally:
        con.close()
    assert len(rows) == 1508 and test == (1508, "crows-pairs/more", "crows-pairs/less")
    assert stored == [tuple(r[f] for f in FIELDS) for r in rows]  # every field, as the csv module reads it
    assert [m for (m,) in more] == [r["sent_more"] for r in rows]
    assert [s for (s,) in less] == [r["sent_less"] for r in rows]
    assert licence == [("CC-BY-SA-4.0",)]


def test_a_second_import_of_the_same_file_adds_nothing(imported):
    con = store.connect(imported, read_only=True)
    before = store.one(con, "SELECT count(*) FROM crows_pairs")[0], store.one(con, "SELECT count(*) FROM stimuli")[0]
    con.close()
    assert cli("--db", imported, "import", "crows-pairs", CSV).exit_code == 0
    con = store.connect(imported, read_only=True)
    after = store.one(con, "SELECT count(*) FROM crows_pairs")[0], store.one(con, "SELECT count(*) FROM stimuli")[0]
    con.close()
    assert before == after == (1508, 3016)


def _write(path, rows, header=FIELDS):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def _bad_files(tmp_path):
    rows = [[r[f] for f in FIELDS] for r in published()[:5]]
    same = [list(r) for r in rows]
    same[3][2] = same[3][1]                    # pair 3 (line 5): sent_less = sent_more
    bias = [list(r) for r in rows]
    bias[1][4] = "hair-colour"                 # pair 1 (line 3)
    direction = [list(r) for r in rows]
    direction[2][3] = "neutral"                # pair 2 (line 4)
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    return {
        "same": (_write(tmp_path / "same.csv", same), "line 5 (pair 3)"),
        "empty": (empty, "empty CrowS-Pairs file"),
        "header only": (_write(tmp_path / "header.csv", []), "empty CrowS-Pairs file"),
        "no column": (_write(tmp_path / "nocol.csv", [r[:4] + r[5:] for r in rows],
                             header=FIELDS[:4] + FIELDS[5:]), "no column bias_type"),
        "bias type": (_write(tmp_path / "bias.csv", bias), "line 3 (pair 1)"),
        "direction": (_write(tmp_path / "dir.csv", direction), "line 4 (pair 2)"),
    }


def test_bad_files_are_refused_in_one_line_and_the_store_is_unchanged(imported, tmp_path):
    con = store.connect(imported, read_only=True)
    before = snapshot(con)
    con.close()
    for what, (path, where) in _bad_files(tmp_path).items():
        r = cli("--db", imported, "import", "crows-pairs", path, "--name", "other")
        assert r.exit_code == 1, (what, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and where in lines[0] and str(path) in lines[0], (what, r.output)
    con = store.connect(imported, read_only=True)
    assert snapshot(con) == before
    con.close()


def test_a_missing_file_is_a_usage_error(imported, tmp_path):
    r = cli("--db", imported, "import", "crows-pairs", tmp_path / "nothing.csv")
    assert r.exit_code == 2 and "no such file" in r.output


# ---------------------------------------------------------------- the statistics


def test_decisions_round_as_metric_py_and_ties_stay_in_the_denominator():
    more = np.array([-10.0004, -10.0, -9.0, -12.3456, np.nan])
    less = np.array([-10.0001, -10.5, -8.0, -12.3454, -1.0])
    # at 3 places: -10.0 vs -10.0 tie; win; loss; -12.346 vs -12.345 loss; skipped
    assert pair_stats.decisions(more, less, 3).tolist() == [0, 1, -1, -1, -2]
    assert pair_stats.decisions(more, less).tolist() == [-1, 1, -1, -1, -2]
    s = pair_stats.metric_score(pair_stats.decisions(more, less, 3), 0)
    assert (s.n, s.wins, s.neutral, s.skipped, s.score) == (4, 1, 1, 1, 25.0)


def test_the_bootstrap_interval_is_seeded_and_brackets_the_score():
    rng = np.random.default_rng(3)
    decided = rng.choice([1, 0, -1], size=400, p=[0.6, 0.05, 0.35])
    a = pair_stats.metric_score(decided, 1000, np.random.default_rng(7))
    b = pair_stats.metric_score(decided, 1000, np.random.default_rng(7))
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert a.ci_low < a.score < a.ci_high
    # the binomial standard error: the 95% percentile interval is about +-1.96 of it
    se = 100 * np.sqrt(a.score / 100 * (1 - a.score / 100) / 400)
    assert abs((a.ci_high - a.ci_low) - 2 * 1.96 * se) < 0.25 * 2 * 1.96 * se
    assert pair_stats.metric_score(np.ones(50, dtype=int), 200, np.random.default_rng(0)).ci_low == 100.0


# ---------------------------------------------------------------- the oracle and the run


@pytest.fixture(scope="module")
def run(imported, tiny_bert):
    folder, _ = tiny_bert
    spec = f"hf:{folder},score=pll"
    r = cli("--db", imported, "test", "crows-pairs", "-e", spec, "-f", "csv", "--seed", "5")
    assert r.exit_code == 0, r.output
    return imported, spec, r.output


def test_the_tiny_bert_is_the_one_metric_py_scored(tiny_bert):
    figures = json.loads((HERE / "nangia_decisions.json").read_text())
    assert tiny_bert[1] == figures["model"]["weights_sha256"]


FIRST = "run_id = (SELECT min(run_id) FROM crows_results WHERE variant = 'nangia')"  # the fixture's run


def test_nangia_variant_decides_every_pair_as_metric_py(run):
    db, _, _ = run
    figures = json.loads((HERE / "nangia_decisions.json").read_text())
    con = store.connect(db, read_only=True)
    try:
        got = [d for (d,) in store.rows(con, "SELECT decision FROM crows_pair_scores WHERE variant = 'nangia' "
                                             f"AND {FIRST} ORDER BY ordinal")]
        row = store.one(con, "SELECT n, wins, neutral, score FROM crows_results WHERE variant = 'nangia' "
                             f"AND split = 'all' AND {FIRST}")
        directions = dict(store.rows(con, "SELECT split, wins / (n - neutral) FROM crows_results WHERE variant = "
                                          "'nangia' AND split IN ('stereo', 'antistereo') AND " + FIRST))
    finally:
        con.close()
    assert len(got) == figures["n"] == 1508
    assert got == figures["decisions"]
    assert row[:3] == (1508, figures["wins"], figures["neutral"])
    assert round(row[3], 2) == figures["metric_score"] == figures["printed"]["Metric score"]
    # metric.py's own direction scores leave the neutral pairs out of their denominators
    assert round(100 * directions["stereo"], 2) == figures["printed"]["Stereotype score"]
    assert round(100 * directions["antistereo"], 2) == figures["printed"]["Anti-stereotype score"]


def test_every_split_is_its_pairs_decisions(run):
    """Each stored score is the share of wins among its split's pairs (recomputed here from the
    per-pair decisions and the imported fields); the directions partition the pairs."""
    db, _, output = run
    con = store.connect(db, read_only=True)
    try:
        results = store.frame(con, f"SELECT * FROM crows_results WHERE {FIRST}")
        pairs = store.frame(con, "SELECT s.variant, s.decision, p.stereo_antistereo, p.bias_type FROM "
                                 f"crows_pair_scores s JOIN crows_pairs p USING (ordinal) WHERE s.{FIRST}")
    finally:
        con.close()
    assert sorted(results["variant"].unique().to_list()) == ["aul", "biasbench", "nangia", "pll"]
    assert results.height == 4 * (1 + 2 + 9)
    for r in results.iter_rows(named=True):
        mine = pairs.filter(pairs["variant"] == r["variant"])
        if r["split"] in ("stereo", "antistereo"):
            mine = mine.filter(mine["stereo_antistereo"] == r["split"])
        elif r["split"].startswith("bias:"):
            mine = mine.filter(mine["bias_type"] == r["split"][5:])
        decided = mine["decision"].drop_nulls().to_numpy()
        assert r["n"] == len(decided) and r["wins"] == int((decided == 1).sum())
        assert r["neutral"] == int((decided == 0).sum()) and r["skipped"] == mine.height - len(decided)
        assert r["score"] == pytest.approx(100 * r["wins"] / r["n"])
        assert r["ci_low"] <= r["score"] <= r["ci_high"] and r["seed"] == 5
    by = {(r["variant"], r["split"]): r["n"] for r in results.iter_rows(named=True)}
    for v in ("nangia", "aul", "pll", "biasbench"):
        assert by[(v, "stereo")] + by[(v, "antistereo")] == by[(v, "all")]
    assert by[("nangia", "stereo")] + by[("nangia", "antistereo")] == 1508
    # the output names each variant's tool (csv: every stored column)
    assert "Nangia et al. metric.py" in output and "bias-bench" in output


def test_results_crows_reads_the_run_and_says_what_is_good(run):
    db, spec, _ = run
    r = cli("--db", db, "results", "crows", "--splits", "main", "-f", "table")
    assert r.exit_code == 0, r.output
    assert "nangia" in r.output and "50 is no preference" in r.output and "bias:" not in r.output


def test_a_rerun_with_the_same_seed_gives_the_same_rows(run):
    db, spec, _ = run
    r = cli("--db", db, "test", "crows-pairs", "-e", spec, "-f", "csv", "--seed", "5")
    assert r.exit_code == 0, r.output
    con = store.connect(db, read_only=True)
    try:
        runs = store.rows(con, "SELECT DISTINCT run_id FROM crows_results ORDER BY 1")
        a, b = (store.rows(con, "SELECT variant, split, n, wins, neutral, score, ci_low, ci_high FROM crows_results "
                                "WHERE run_id = ? ORDER BY 1, 2", [rid]) for (rid,) in runs[-2:])
    finally:
        con.close()
    assert len(runs) >= 2 and a == b


def test_an_embedding_encoder_is_refused_and_nothing_is_stored(run):
    db, _, _ = run
    con = store.connect(db, read_only=True)
    before = snapshot(con)
    con.close()
    r = cli("--db", db, "test", "crows-pairs", "-e", "glove-6b-50d")
    assert r.exit_code == 2 and "scoring encoder" in r.output and len(r.output.strip().splitlines()) == 1
    con = store.connect(db, read_only=True)
    assert snapshot(con) == before
    con.close()


def test_the_report_has_a_crows_section(run, tmp_path):
    db, _, _ = run
    assert cli("--db", db, "test", "weat1", "-e", "glove-6b-50d").exit_code == 0  # a report needs a family
    r = cli("--db", db, "report", "-o", tmp_path / "rep", "--format", "html")
    assert r.exit_code == 0, r.output
    html = (tmp_path / "rep" / "report.html").read_text()
    assert 'id="crows"' in html and "no preference" in html
    con = store.connect(db, read_only=True)
    latest = store.one(con, "SELECT round(score, 2) FROM crows_latest WHERE variant = 'nangia' AND split = 'all'")[0]
    con.close()
    table = (tmp_path / "rep" / "tables" / "crows.csv").read_text()
    assert f"nangia,all,1508," in table and str(latest) in table


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    """A tiny random LlamaForCausalLM over the same vocabulary, [CLS] as its BOS token."""
    import torch
    from transformers import BertTokenizer, LlamaConfig, LlamaForCausalLM

    vocab = HERE / "vocab.txt"
    tok = BertTokenizer(str(vocab), do_lower_case=True, bos_token="[CLS]", eos_token="[SEP]")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                         initializer_range=0.5)).eval()
    folder = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder, model, tok


def test_causal_variants_are_lm_eval_harness_sum_and_the_mean(imported, tiny_llama):
    """sum: each sentence's log-probability, every token given BOS, computed here by hand with
    the model's own forward pass; pct_stereotype = sent_more's higher (ties lose), as
    lm-evaluation-harness's crows_pairs task decides it. mean: the same over the token count."""
    import torch

    folder, model, tok = tiny_llama
    r = cli("--db", imported, "test", "crows-pairs", "-e", f"hf:{folder},score=causal", "-f", "csv")
    assert r.exit_code == 0, r.output
    rows = published()
    texts = list(dict.fromkeys(t for p in rows for t in (p["sent_more"], p["sent_less"])))
    total, count_, by_length = {}, {}, {}
    for text in texts:  # texts of one length go through the model together: no padding
        ids = [tok.bos_token_id] + tok(text, add_special_tokens=False)["input_ids"]
        by_length.setdefault(len(ids), []).append((text, ids))
    with torch.inference_mode():
        for n, group in by_length.items():
            ids = torch.tensor([i for _, i in group])
            logp = torch.log_softmax(model(ids).logits[:, :-1].double(), -1)
            sums = logp.gather(2, ids[:, 1:, None])[:, :, 0].sum(1)
            for (text, _), v in zip(group, sums.tolist()):
                total[text], count_[text] = v, n - 1
    won_sum = [total[p["sent_more"]] > total[p["sent_less"]] for p in rows]
    won_mean = [total[p["sent_more"]] / count_[p["sent_more"]] > total[p["sent_less"]] / count_[p["sent_less"]]
                for p in rows]
    con = store.connect(imported, read_only=True)
    try:
        got = dict(store.rows(con, "SELECT variant, wins FROM crows_latest WHERE split = 'all' AND encoder LIKE '%causal'"))
        decided = store.rows(con, "SELECT decision FROM crows_pair_scores s JOIN crows_latest c USING (run_id, fingerprint, "
                                  "variant) WHERE c.split = 'all' AND c.variant = 'sum' ORDER BY ordinal")
    finally:
        con.close()
    assert got == {"sum": sum(won_sum), "mean": sum(won_mean)}
    assert [d == 1 for (d,) in decided] == won_sum


def test_two_crows_tests_in_one_run(run, tmp_path):
    """A second import under its own name (five of the pairs): both tests in one run, each
    with its own rows; its five decisions are those of the same pairs in the whole set."""
    db, spec, _ = run
    small = _write(tmp_path / "five.csv", [[r[f] for f in FIELDS] for r in published()[:5]])
    assert cli("--db", db, "import", "crows-pairs", small, "--name", "crows-five").exit_code == 0
    r = cli("--db", db, "test", "crows-pairs", "crows-five", "-e", spec, "-f", "csv")
    assert r.exit_code == 0, r.output
    con = store.connect(db, read_only=True)
    try:
        (last,), = store.rows(con, "SELECT max(run_id) FROM crows_results")
        n = dict(store.rows(con, "SELECT test, n FROM crows_results WHERE run_id = ? AND variant = 'nangia' "
                                 "AND split = 'all'", [last]))
        five = store.rows(con, "SELECT test, ordinal, decision FROM crows_pair_scores WHERE run_id = ? AND "
                               "variant = 'nangia' AND ordinal < 5 ORDER BY ordinal, test", [last])
    finally:
        con.close()
    assert n == {"crows-pairs": 1508, "crows-five": 5}
    assert [d for t, _, d in five if t == "crows-five"] == [d for t, _, d in five if t == "crows-pairs"]


def test_a_model_that_cannot_score_leaves_the_store_unchanged(run, tmp_path):
    """A model too short for CrowS' longest sentences (32 positions): refused in one line, exit
    1, before any row is written (the run is all or nothing)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    db, _, _ = run
    torch.manual_seed(0)
    short = tmp_path / "short-bert"
    BertForMaskedLM(BertConfig(vocab_size=len((HERE / "vocab.txt").read_text().splitlines()), hidden_size=8,
                               num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                               max_position_embeddings=32)).save_pretrained(short)
    BertTokenizer(str(HERE / "vocab.txt")).save_pretrained(short)
    con = store.connect(db, read_only=True)
    before = snapshot(con)
    con.close()
    r = cli("--db", db, "test", "crows-pairs", "-e", f"hf:{short},score=pll")
    assert r.exit_code == 1, r.output
    assert len(r.output.strip().splitlines()) == 1 and "context" in r.output
    con = store.connect(db, read_only=True)
    assert snapshot(con) == before
    con.close()
