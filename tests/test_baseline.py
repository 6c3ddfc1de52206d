"""Matched random baselines (issue 32): the vectorised statistics against per-pair computations,
the matching, reuse, reproducibility, and the diagnostics that warn of a frequency gap."""

from __future__ import annotations

import numpy as np
import pytest
import wordfreq

import stimkit
from stimkit import stats
from stimkit.stats import baseline as bstats

K = 12


# ----------------------------------------------------------------------------- the statistics alone

def test_many_p_values_are_the_single_test_p_values_column_by_column():
    """permutation_p / clustered_p on K columns (over pvalues.MANY_COLUMNS: indicator products,
    chunked) = the one-test functions, column by column (exact enumeration: the same
    partitions, so the same counts)."""
    from stimkit.stats import pvalues

    rng = np.random.default_rng(4)
    K = pvalues.MANY_COLUMNS + 6
    S = rng.normal(size=(14, K)) + np.r_[np.full(7, 0.4), np.zeros(7)][:, None]
    for alternative in ("greater", "less", "two-sided"):
        many = stats.permutation_p(S, 7, alternative, "exact")
        one = [stats.permutation_p(S[:, k], 7, alternative, "exact").p for k in range(K)]
        assert many.method == "exact" and many.p.tolist() == pytest.approx(one, abs=0)
    groups = np.repeat(np.arange(7), 2)  # 4 words in X, 3 in Y, 2 sentences each
    for alternative in ("greater", "two-sided"):
        many = stats.clustered_p(S, groups, 4, alternative, method="exact")
        one = [stats.clustered_p(S[:, k], groups, 4, alternative, method="exact").p for k in range(K)]
        assert many.method == "exact-clustered" and many.p.tolist() == pytest.approx(one, abs=0)
    # sampled: each column's p is an unbiased estimate of its exact p (budget 20,000: SE <= 0.0036)
    sampled = stats.permutation_p(S, 7, "greater", "sampled", 20_000, np.random.default_rng(1))
    exact = stats.permutation_p(S, 7, "greater", "exact")
    assert sampled.method == "sampled" and np.abs(sampled.p - exact.p).max() < 0.015
    assert (sampled.p >= 1 / 20_000).all()


def test_effect_sizes_percentile_and_rejection_rate_by_hand():
    rng = np.random.default_rng(0)
    SX, SY = rng.normal(size=(5, 4)), rng.normal(size=(6, 4))
    d = bstats.effect_sizes(SX, SY)
    assert d.tolist() == pytest.approx([stats.effect_size(SX[:, k], SY[:, k]) for k in range(4)])
    assert bstats.percentile(0.5, np.array([0.1, 0.5, 0.9, 0.2])) == pytest.approx(100 * 2.5 / 4)  # a tie counts half
    assert bstats.rejection_rate(np.array([0.001, 0.01, 0.02, 0.5]), 0.01) == 0.5
    draws = np.arange(199.0)  # d above every one of 199 draws: the smallest two-sided p, 2 / 200
    assert bstats.monte_carlo_p(500.0, draws) == 0.01 and bstats.monte_carlo_p(99.0, draws) == 1.0
    assert bstats.monte_carlo_p(10.0, draws) == pytest.approx(2 * 12 / 200)  # 1 + #{d_k <= 10} = 12


# ----------------------------------------------------------------------------- a stored baseline

@pytest.fixture(scope="module")
def weat6(tmp_path_factory):
    """weat6 on GloVe (8 male vs 8 female names, career vs family) with a K-pair baseline, stored."""
    path = tmp_path_factory.mktemp("baseline") / "s.duckdb"
    with stimkit.open(path) as store:
        report = store.test(["weat6"], encoders=["glove-6b-50d"], baseline=K, seed=3, alternative="two-sided")
        assert not report.failures, report.failures
        yield store, report


def test_the_baseline_equals_a_brute_force_over_its_drawn_words(weat6):
    """Each random pair's d and p recomputed one pair at a time by the library's `weat` from the
    stored drawn words' GloVe vectors; the percentile and the false-positive rate counted by hand."""
    store, report = weat6
    (b,) = report.baselines
    (res,) = report.results
    enc = stimkit.encoders.resolve("glove-6b-50d")
    vec = lambda words: np.array([enc.vectors.matrix[enc.vectors.index[w.lower()]] for w in words])  # noqa: E731
    test = store.test_sets("weat6")[0]
    A, B = (vec(store.query(f"SELECT word FROM current_stimuli WHERE set_name = '{s}' ORDER BY ordinal")["word"])
            for s in test.sets[2:])
    draws = store.query(f"SELECT * FROM baseline_draws WHERE baseline_id = '{b.baseline_id}' ORDER BY draw")
    assert draws.height == K
    brute = [stimkit.weat(vec(x), vec(y), A, B, method="exact", alternative="two-sided")
             for x, y in zip(draws["x_words"], draws["y_words"])]
    assert draws["effect_size"].to_list() == pytest.approx([r.effect_size for r in brute], abs=1e-9)
    assert draws["p_value"].to_list() == pytest.approx([r.pvalue for r in brute], abs=1e-12)
    random_d = np.array([r.effect_size for r in brute])
    assert b.observed_d == pytest.approx(res.effect_size, abs=1e-12)
    assert b.percentile == pytest.approx(100 * ((random_d < res.effect_size).sum()
                                                + 0.5 * (random_d == res.effect_size).sum()) / K)
    assert b.fpr == pytest.approx(np.mean([r.pvalue <= 0.01 for r in brute]))
    # X (male names) against its own random words, by hand
    sx = stats.association(vec(res.items.filter(res.items["role"] == "X")["word"].to_list()), A, B)
    d_x = [stats.effect_size(sx, stats.association(vec(x), A, B)) for x in draws["x_words"]]
    assert b.d_x == pytest.approx(float(np.median(d_x)))
    # ... and `results` joins it to the result it matches
    df = store.results(correct="none")
    assert df["baseline_percentile"][0] == pytest.approx(b.percentile) and df["baseline_fpr"][0] == pytest.approx(b.fpr)


def test_matched_words_lie_within_the_tolerance_of_the_words_they_replace(weat6):
    store, report = weat6
    (b,) = report.baselines
    draws = store.query(f"SELECT x_words, y_words FROM baseline_draws WHERE baseline_id = '{b.baseline_id}'")
    targets = {role: store.query(f"SELECT DISTINCT word, ordinal FROM current_stimuli WHERE set_name = '{name}' "
                                 "ORDER BY ordinal")["word"].to_list()
               for role, name in zip(("x", "y"), store.test_sets("weat6")[0].sets[:2])}
    enc = stimkit.encoders.resolve("glove-6b-50d")
    for role in ("x", "y"):
        for drawn in draws[f"{role}_words"]:
            for word, target in zip(drawn, targets[role]):
                assert abs(wordfreq.zipf_frequency(word, "en") - wordfreq.zipf_frequency(target, "en")) <= 0.25 + 1e-9
                assert word[0].isupper()  # it stands for a name
            assert enc.subword_counts(list(drawn)).tolist() == [1] * len(drawn)   # in GloVe's vocabulary
    every = [w for col in ("x_words", "y_words") for row in draws[col] for w in row]
    assert not {w.lower() for w in every} & {w.lower() for ws in targets.values() for w in ws}  # never a test word
    assert all(len(set(x) | set(y)) == len(x) + len(y) for x, y in zip(draws["x_words"], draws["y_words"]))


def test_subword_counts_match_under_a_tokenizer():
    """On MiniLM's tokenizer (loaded alone), every drawn word has its target word's number of pieces."""
    import polars as pl

    from stimkit.encoders import resolve
    from stimkit.run import baseline
    from stimkit.run.options import Options
    from stimkit.run.plan import PlannedTest
    from stimkit.stimuli import diagnostics, templates, wordlists

    words = ["nurse", "teacher", "librarian", "engineer", "physicist", "carpenter"]
    frame = lambda ws: pl.DataFrame({"set_name": ["mine@word"] * len(ws), "word": ws, "kind": ["count_noun"] * len(ws),  # noqa: E731
                                     "person": [False] * len(ws), "template_id": ["word/default:1"] * len(ws),
                                     "stimulus": ws, "span_start": [0] * len(ws), "span_end": [len(w) for w in ws]})
    planned = PlannedTest(stimkit.catalog.definitions.TestDef("mine", ("x", "y", "a", "b"), "word"),
                          {"x": frame(words[:3]), "y": frame(words[3:]), "a": frame(["good"]), "b": frame(["bad"])},
                          Options())
    enc = resolve("minilm")
    inputs = baseline.Inputs(lambda name: templates.load_set(name), wordlists.load_all)
    b = baseline.BaselineOptions(sets=20, seed=5)
    draws = baseline.draw_sets(planned, enc, diagnostics.reference_vocabulary(), b, inputs, np.random.default_rng(0))
    for role, targets in (("x", words[:3]), ("y", words[3:])):
        want = enc.subword_counts(targets).tolist()
        for drawn in draws.words[role]:
            assert enc.subword_counts(drawn).tolist() == want
            assert (np.abs(diagnostics.zipf(drawn) - diagnostics.zipf(targets)) <= 0.25 + 1e-9).all()
    assert draws.stimuli["stimulus"].n_unique() == draws.stimuli.height  # each drawn word rendered once


def test_a_baseline_is_reused_not_recomputed(weat6):
    store, report = weat6
    (b,) = report.baselines
    count = lambda: store.query("SELECT (SELECT count(*) FROM baselines) + (SELECT count(*) FROM baseline_draws) "  # noqa: E731
                                "+ (SELECT count(*) FROM runs) AS n")["n"][0]
    before = count()
    again = store.baseline(["weat6"], encoders=["glove-6b-50d"], sets=K, seed=3, alternative="two-sided")
    assert again.reused == [b.baseline_id] and again.run_id is None and count() == before
    assert again.baselines[0].percentile == b.percentile and again.baselines[0].fpr == b.fpr
    other = store.baseline(["weat6"], encoders=["glove-6b-50d"], sets=K, seed=4, alternative="two-sided")
    assert other.reused == [] and other.baselines[0].baseline_id != b.baseline_id and count() > before


def test_same_seed_same_baseline_in_another_store(weat6, tmp_path):
    store, report = weat6
    (b,) = report.baselines
    with stimkit.open(tmp_path / "other.duckdb") as other:
        (again,) = other.baseline(["weat6"], encoders=["glove-6b-50d"], sets=K, seed=3, alternative="two-sided").baselines
        words = other.query("SELECT x_words, y_words, effect_size, p_value FROM baseline_draws ORDER BY draw")
    assert again.baseline_id == b.baseline_id
    assert words.rows() == store.query(f"SELECT x_words, y_words, effect_size, p_value FROM baseline_draws "
                                       f"WHERE baseline_id = '{b.baseline_id}' ORDER BY draw").rows()


def test_a_planted_frequency_gap_warns(tmp_path):
    """X: frequent words, Y: rare ones; the run warns and stores both sets' diagnostics; the same
    frequent X against frequent Y does not warn."""
    (tmp_path / "lists.toml").write_text(
        '[frequent]\nwords = ["house", "water", "money", "paper", "music", "river", "table", "garden"]\n'
        '[rare]\nwords = ["quokka", "marmot", "sorrel", "gimlet", "ocelot", "bramble", "thimble", "lichen"]\n'
        '[frequent_too]\nwords = ["window", "doctor", "summer", "letter", "market", "island", "animal", "forest"]\n',
        encoding="utf-8")
    with stimkit.open(tmp_path / "s.duckdb", wordlist_dir=tmp_path) as store:
        gap = store.test(x="frequent@word", y="rare@word", a="pleasant@word", b="unpleasant@word", name="gap",
                         encoders=["glove-6b-50d"], budget=1000)
        same = store.test(x="frequent@word", y="frequent_too@word", a="pleasant@word", b="unpleasant@word",
                          name="same", encoders=["glove-6b-50d"], budget=1000)
        rows = store.query("SELECT role, zipf_mean, oov_share, reliability FROM result_diagnostics d "
                           f"WHERE result_id = '{gap.results[0].result_id}' ORDER BY role")
    assert len(gap.warnings) == 1 and "word frequency" in gap.warnings[0] and "test gap" in gap.warnings[0]
    assert same.warnings == []
    want = [np.mean([wordfreq.zipf_frequency(w, "en") for w in ws]) for ws in
            (["house", "water", "money", "paper", "music", "river", "table", "garden"],
             ["quokka", "marmot", "sorrel", "gimlet", "ocelot", "bramble", "thimble", "lichen"])]
    assert rows["zipf_mean"].to_list() == pytest.approx(want)
    assert rows["oov_share"].to_list() == [0.0, 0.0] and all(-1 <= r <= 1 for r in rows["reliability"])


def test_the_cli_prints_a_stored_baseline_and_the_sets_diagnosis(weat6):
    """`stimkit baseline` (reused: nothing written) as one JSON document, and `sets --diagnose`
    with the Zipf frequencies of the names and the reliability of weat6's target sets."""
    import json

    from typer.testing import CliRunner

    from stimkit.cli import app

    store, report = weat6
    (b,) = report.baselines
    store.close()  # the CLI opens the file itself
    db = str(store.path)
    got = CliRunner().invoke(app, ["--db", db, "baseline", "weat6", "--sets", str(K), "--seed", "3",
                                   "--alternative", "two-sided", "--format", "json"])
    assert got.exit_code == 0, got.output
    rows = json.loads(got.stdout)
    assert [(r["baseline_id"], r["stored"], r["percentile"]) for r in rows] == [(b.baseline_id, "reused", b.percentile)]
    got = CliRunner().invoke(app, ["--db", db, "sets", "names@word", "--diagnose", "-e", "glove-6b-50d", "--format", "json"])
    assert got.exit_code == 0, got.output
    doc = json.loads(got.stdout)
    male = next(r for r in doc["rows"] if r["set"] == "male_names@word")
    names = [w.text for w in stimkit.stimuli.wordlists.load_all()["male_names"].words]
    assert male["zipf_mean"] == pytest.approx(np.mean([wordfreq.zipf_frequency(w, "en") for w in names]))
    assert male["oov:glove-6b-50d"] == 0.0
    assert {(r["set"], r["role"]) for r in doc["reliability"]} == {("male_names@word", "X"), ("female_names@word", "Y")}
    bad = CliRunner().invoke(app, ["--db", db, "baseline", "weat6", "--sets", "1"])
    assert bad.exit_code == 2 and "--sets must be" in bad.output


def test_a_study_asks_for_a_baseline():
    from stimkit import UsageError
    from stimkit.study import study

    assert study.parse({"name": "s", "tests": ["weat6"], "baseline": 500}).baseline == {"sets": 500}
    given = study.parse({"name": "s", "tests": ["weat6"], "baseline": {"sets": 50, "seed": 2, "tolerance": 0.5}})
    assert given.baseline == {"sets": 50, "seed": 2, "tolerance": 0.5}
    with pytest.raises(UsageError, match="baseline"):
        study.parse({"name": "s", "tests": ["weat6"], "baseline": {"pairs": 50}})


def test_the_histogram_counts_every_random_d_and_marks_the_observed_one():
    from matplotlib.patches import Rectangle

    from stimkit.report import figures

    random_d = np.random.default_rng(0).normal(size=300)
    fig = figures.baseline_histogram(random_d, 1.7, "weat6 / glove-6b-50d")
    ax = fig.axes[0]
    assert sum(p.get_height() for p in ax.patches if isinstance(p, Rectangle)) == 300
    assert [line.get_xdata()[0] for line in ax.lines] == [1.7]
    assert any("+1.70" in t.get_text() for t in ax.texts)
