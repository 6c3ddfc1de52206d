"""Likelihood tests: a catalog test on a scoring encoder runs the minimal pairs of its targets
(stimuli.minimal_pairs, run.likelihood). A tiny random LlamaForCausalLM built here from a
config and a locally trained tokenizer, loaded through `hf:PATH,score=causal`; every number
checked against a brute-force computation from stimkit.score on the same sentences."""

import itertools
import json
import shutil
from math import comb

import numpy as np
import polars as pl
import pytest

import stimkit
from stimkit.errors import InputError
from stimkit.stimuli.minimal_pairs import minimal_pairs

from conftest import snapshot

TEST = "sent-weat6"


def tiny_llama(folder, max_positions=64):
    """A byte-level BPE trained on a few sentences and a 2-layer Llama (hidden 32) from its config."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(["This is a person. That is here, there is the name."] * 3, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<pad>", "<unk>", "<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                            pad_token="<pad>").save_pretrained(folder)
    t = AutoTokenizer.from_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                         num_key_value_heads=1, max_position_embeddings=max_positions, vocab_size=len(t),
                         bos_token_id=t.bos_token_id, eos_token_id=t.eos_token_id, pad_token_id=t.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """One store with sent-weat6 run on the tiny model (words as units, a baseline of K = 20):
    (store path, encoder spec, the run's report, the store's rows right after)."""
    root = tmp_path_factory.mktemp("likelihood")
    spec = f"hf:{tiny_llama(root / 'tiny')},score=causal"
    path = root / "s.duckdb"
    with stimkit.open(path) as s:
        report = s.test([TEST], encoders=[spec], units="words", baseline=4)
    return path, spec, report


@pytest.fixture
def copy(ran, tmp_path):
    path = tmp_path / "copy.duckdb"
    shutil.copy(ran[0], path)
    return path


def _items(s, role):
    return s.query(f"SELECT stimulus, word, template_id, association FROM result_items WHERE role = '{role}' "
                   "AND association IS NOT NULL ORDER BY ordinal")


def test_minimal_pairs_differ_in_the_target_only(ran):
    path, _, _ = ran
    with stimkit.open(path, read_only=True) as s:
        x = s.query("SELECT * FROM current_stimuli WHERE set_name = 'male_names@may2019' ORDER BY ordinal")
        y = s.query("SELECT * FROM current_stimuli WHERE set_name = 'female_names@may2019' ORDER BY ordinal")
    mp = minimal_pairs(x, y)
    wx, wy = list(dict.fromkeys(x["word"])), list(dict.fromkeys(y["word"]))
    templates = x["template_id"].n_unique()
    assert mp.matching == "by order" and len(wx) == len(wy) == 8 and templates == 8
    assert mp.pairs.height == templates * len(wx)  # every template x every matched pair
    for row in mp.pairs.iter_rows(named=True):
        assert wx.index(row["x_word"]) == wy.index(row["y_word"])  # the i-th name with the i-th
        assert row["x_stimulus"].replace(row["x_word"], row["y_word"]) == row["y_stimulus"]
        assert row["exact"] is True
    # unequal lists: every x with every y in each frame
    mp2 = minimal_pairs(x, y.filter(pl.col("word").is_in(wy[:3])))
    assert mp2.matching == "every x with every y" and mp2.pairs.height == templates * 8 * 3


def test_d_and_scores_equal_brute_force_from_score(ran):
    path, spec, report = ran
    (r,) = report.results
    assert r.context == "minimal-pairs" and (r.n_x, r.n_y, r.n_a, r.n_b) == (64, 64, 0, 0)
    with stimkit.open(path, read_only=True) as s:
        ix, iy = _items(s, "X"), _items(s, "Y")
        pairs = s.query("SELECT * FROM result_pairs ORDER BY pair")
    sx = stimkit.score(ix["stimulus"].to_list(), spec)
    sy = stimkit.score(iy["stimulus"].to_list(), spec)
    np.testing.assert_allclose(ix["association"].to_numpy(), sx, atol=1e-5)
    np.testing.assert_allclose(iy["association"].to_numpy(), sy, atol=1e-5)
    both = np.concatenate([sx, sy])
    assert r.effect_size == pytest.approx((sx.mean() - sy.mean()) / both.std(ddof=1), abs=1e-9)
    assert r.statistic == pytest.approx(sx.sum() - sy.sum(), abs=1e-6)
    # the paired view: each pair's difference is log P(x sentence) - log P(y sentence)
    px = stimkit.score(pairs["x_stimulus"].to_list(), spec)
    py = stimkit.score(pairs["y_stimulus"].to_list(), spec)
    np.testing.assert_allclose(pairs["difference"].to_numpy(), px - py, atol=1e-5)


def test_p_with_words_as_units_equals_brute_force(ran):
    """Exact over C(16, 8) assignments of whole names to X and Y (one-sided, non-strict)."""
    path, _, report = ran
    (r,) = report.results
    with stimkit.open(path, read_only=True) as s:
        items = pl.concat([_items(s, "X"), _items(s, "Y")])
    totals = items.group_by("word", maintain_order=True).agg(pl.col("association").sum())
    t = totals["association"].to_numpy()
    x_words = set(_items_words(items, 8))
    observed = sum(v for w, v in zip(totals["word"], t) if w in x_words)
    stats_ = np.array([t[list(c)].sum() for c in itertools.combinations(range(16), 8)])
    assert len(stats_) == comb(16, 8)
    p = np.mean(stats_ >= observed - 1e-9)
    assert r.units == "words" and r.p_method == "exact-clustered"
    assert r.p_value == pytest.approx(p, abs=1e-12) and r.p_words == r.p_value


def _items_words(items, n):
    return list(dict.fromkeys(items["word"]))[:n]


def test_crossed_d_equals_stats_crossed(ran):
    from stimkit.seeding import rng_for
    from stimkit.stats.crossed import crossed_fit

    path, spec, report = ran
    (r,) = report.results
    with stimkit.open(path, read_only=True) as s:
        items = pl.concat([_items(s, "X"), _items(s, "Y")])
    is_x = np.r_[np.ones(64, bool), np.zeros(64, bool)]
    fit = crossed_fit(items["association"].to_numpy(), is_x, items["word"].to_list(), items["template_id"].to_list(),
                      alternative="greater", level=0.95, ddof=1,
                      rng=rng_for(0, TEST, r.fingerprint, "crossed"), what="t")
    assert r.crossed_d == pytest.approx(fit.d, abs=1e-12) and r.n_templates == 8
    assert (r.crossed_ci_low, r.crossed_ci_high) == pytest.approx((fit.ci_low, fit.ci_high), abs=1e-9)
    assert r.crossed_ci_low < r.crossed_d < r.crossed_ci_high


def test_result_reads_back_and_baseline_is_computed(ran):
    path, spec, report = ran
    (r,) = report.results
    (b,) = report.baselines
    assert b.k == 4 and b.observed_d == pytest.approx(r.effect_size) and b.context == "minimal-pairs"
    assert 0 <= b.percentile <= 100 and np.isfinite([b.d_median, b.d_low, b.d_high]).all()
    with stimkit.open(path, read_only=True) as s:
        rows = s.results(where=f"test = '{TEST}'")
        draws = s.query(f"SELECT * FROM baseline_draws WHERE baseline_id = '{b.baseline_id}' ORDER BY draw")
        scored = s.query("SELECT count(DISTINCT text) AS n FROM token_scores")["n"][0]
        pairs = s.query("SELECT count(*) AS n FROM result_pairs")["n"][0]
    assert rows.height == 1 and rows["context"][0] == "minimal-pairs"
    assert rows["effect_size"][0] == pytest.approx(r.effect_size) and rows["crossed_d"][0] == pytest.approx(r.crossed_d)
    assert rows["baseline_percentile"][0] == pytest.approx(b.percentile)
    assert draws.height == 4 and draws["effect_size"].null_count() == 0
    # the drawn names' sentences were scored too (same templates): more than the test's 128
    assert scored > 128 and pairs == 64
    assert all(len(set(w) & {"John", "Amy"}) == 0 for w in draws["x_words"].to_list() + draws["y_words"].to_list())


def test_a_study_file_runs_it(ran, copy, tmp_path):
    _, spec, report = ran
    study = tmp_path / "study.toml"
    study.write_text(f'name = "pairs"\ntests = ["{TEST}"]\nencoders = ["{spec}"]\ncorrection = "holm"\nalpha = 0.05\n'
                     '[options]\nunits = "words"\nalternative = "two-sided"\n[baseline]\nsets = 4\n')
    with stimkit.open(copy) as s:
        run = s.run(study)
        rows = s.results(where="alternative = 'two-sided'")
    (r,) = run.run.results  # computed (another alternative than the stored result's), its scores read from the store
    (b,) = run.run.baselines
    assert r.context == "minimal-pairs" and r.alternative == "two-sided" and b.k == 4
    assert r.effect_size == pytest.approx(report.results[0].effect_size)
    assert rows.height == 1 and rows["result_id"][0] == r.result_id and rows["baseline_percentile"][0] is not None


def test_a_pair_that_does_not_differ_is_refused_store_unchanged(copy):
    # X: Paul, Mike; Y: John, Mike (in list order): the 2nd pair is Mike with Mike
    sel = "SELECT * FROM current_stimuli WHERE set_name = 'male_names@may2019' AND word IN ({}) ORDER BY ordinal"
    with stimkit.open(copy) as s:
        before = snapshot(s.con)
        report = s.test(x=sel.format("'Paul', 'Mike'"), y=sel.format("'John', 'Mike'"),
                        a="career@may2019", b="family@may2019", name="same", encoders=[_spec_of(s)])
        (f,) = report.failures  # refused when planned: nothing scored, nothing stored
        assert "\n" not in f.cause and "'Mike'" in f.cause
        assert not report.results and snapshot(s.con) == before
        with pytest.raises(InputError):  # the refusal's type
            minimal_pairs(*(s.query(sel.format(w)) for w in ("'Paul', 'Mike'", "'John', 'Mike'")))


def _spec_of(s):
    return s.query("SELECT spec FROM encoders WHERE vector_table = 'token_scores'")["spec"][0]


def test_a_sentence_longer_than_the_context_is_one_line_store_unchanged(ran, copy, tmp_path):
    short = tmp_path / "short"
    shutil.copytree(ran[1].split(":", 1)[1].split(",")[0], short)
    config = json.loads((short / "config.json").read_text())
    config["max_position_embeddings"] = 4  # rotary positions: no weight depends on it
    (short / "config.json").write_text(json.dumps(config))
    with stimkit.open(copy) as s:
        before = snapshot(s.con)
        report = s.test([TEST], encoders=[f"hf:{short},score=causal"], units="words")
        (f,) = report.failures
        assert "\n" not in f.cause and str(short) in f.cause  # one line, naming the model
        assert not report.results and snapshot(s.con) == before


def test_the_report_draws_the_pairs_by_template(ran, tmp_path):
    path, _, report = ran
    with stimkit.open(path, read_only=True) as s:
        s.report(tmp_path / "rep", formats=["html", "svg"])
    html = (tmp_path / "rep" / "report.html").read_text()
    assert '<h2 id="pairs">Minimal pairs</h2>' in html and "64 minimal pairs" in html
    assert f"d = {report.results[0].effect_size:+.2f}" in html
    assert list((tmp_path / "rep" / "figures").glob("pairs-sent_weat6-*.svg"))


def test_minimal_pairs_refuse_sets_without_a_shared_frame_or_templates():
    def rows(words, lines):
        return pl.DataFrame([{"stimulus": line.replace("X", w), "word": w, "template_id": line, "template_text": line,
                              "span_start": line.index("X"), "span_end": line.index("X") + len(w)}
                             for line in lines for w in words])
    x = rows(["John", "Paul"], ["This is X.", "X is here."])
    ok = minimal_pairs(x, rows(["Amy", "Kate"], ["X is here.", "X waves."]))
    assert ok.pairs.height == 2 and set(ok.pairs["frame"]) == {"X is here."}  # the shared frame only
    assert ok.x_rows == [2, 3] and ok.y_rows == [0, 1]
    with pytest.raises(InputError):  # no frame in common
        minimal_pairs(x, rows(["Amy", "Kate"], ["X waves."]))
    with pytest.raises(InputError):  # words without templates
        minimal_pairs(x.drop("template_id", "template_text"), x.drop("template_id", "template_text"))


def test_the_weat_form_equals_attribute_log_probabilities_by_hand(ran, copy):
    """templates/fmat: s(w, t) = mean log P(a | prefix) over A's attributes - over B's, the
    attribute's tokens read from the scored sentence; the prefix's tokens begin the sentence's."""
    from stimkit.encoders import resolve
    from stimkit.stats.weat import effect_size

    spec = ran[1]
    with stimkit.open(copy) as s:
        report = s.test(x="target=male_names@fmat", y="target=female_names@fmat", a="career@word", b="family@word",
                        name="fmat6", encoders=[spec], units="words", baseline=3)
        (r,) = report.results
        (b,) = report.baselines
        draw = s.query(f"SELECT x_words, y_words, effect_size FROM baseline_draws WHERE baseline_id = '{b.baseline_id}' "
                       "AND draw = 0")
        rows = s.query("""SELECT c.stimulus, c.word, c.template_id, c.set_name, a.wordlist, a.span_start
                          FROM current_stimuli c JOIN stimulus_slots a ON a.set_version = c.set_version
                          AND a.ordinal = c.ordinal AND a.slot = 'attribute'
                          WHERE c.set_name IN ('target=male_names@fmat', 'target=female_names@fmat')""")
        items = {(w, t): v for w, t, v in s.query("SELECT word, template_id, association FROM result_items "
                                                  "WHERE association IS NOT NULL").iter_rows()}
    assert r.context == "likelihood-weat" and (r.n_x, r.n_y, r.n_templates) == (24, 24, 3)
    enc = resolve(spec)
    full = enc.score(rows["stimulus"].to_list())
    prefix = enc.score([t[:a].rstrip() for t, a in zip(rows["stimulus"], rows["span_start"])])
    lp = []
    for f, p_ in zip(full, prefix):
        n = len(p_.token_ids)
        assert list(f.token_ids[:n]) == list(p_.token_ids)  # the prefix's tokens begin the sentence's
        lp.append(f.logprobs[n:].sum())
    cells = (rows.with_columns(lp=pl.Series(lp)).group_by("set_name", "word", "template_id")
             .agg((pl.col("lp").filter(pl.col("wordlist") == "career").mean()
                   - pl.col("lp").filter(pl.col("wordlist") == "family").mean()).alias("s")))
    assert cells.height == 48
    for w, t, v in cells.select("word", "template_id", "s").iter_rows():
        assert items[(w, t)] == pytest.approx(v, abs=1e-5)
    sx = cells.filter(pl.col("set_name").str.contains("male_names") & ~pl.col("set_name").str.contains("female"))["s"]
    sy = cells.filter(pl.col("set_name").str.contains("female_names"))["s"]
    assert r.effect_size == pytest.approx(effect_size(sx.to_numpy(), sy.to_numpy(), 1), abs=1e-5)
    # the matched baseline's first draw by hand: each name replaced by its drawn name, same lines and attributes
    assert b.observed_d == pytest.approx(r.effect_size) and b.context == "likelihood-weat"
    drawn = {}
    for role, names in (("male", draw["x_words"][0]), ("female", draw["y_words"][0])):
        f = rows.filter(pl.col("set_name") == f"target={role}_names@fmat")
        targets = list(dict.fromkeys(f["word"]))
        swap = dict(zip(targets, names))
        texts = [t.replace(w, swap[w], 1) for t, w in zip(f["stimulus"], f["word"])]
        lp = stimkit.score(texts, spec)
        drawn[role] = (f.with_columns(lp=pl.Series(lp)).group_by("word", "template_id")
                       .agg((pl.col("lp").filter(pl.col("wordlist") == "career").mean()
                             - pl.col("lp").filter(pl.col("wordlist") == "family").mean()).alias("s")))["s"].to_numpy()
    assert draw["effect_size"][0] == pytest.approx(effect_size(drawn["male"], drawn["female"], 1), abs=1e-5)
