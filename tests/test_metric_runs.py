"""Metrics beside WEAT in runs (issue 27): one stored result per metric, the metric part of
the hypothesis, p where a permutation null exists, and agreement measured."""

from __future__ import annotations


import numpy as np
import pytest

import stimkit
from stimkit import errors
from stimkit.encoders import resolve
from stimkit.encoders.embeddings import load
from stimkit.run.options import Options
from stimkit.stats import metrics


@pytest.fixture
def store(catalog_store):
    return catalog_store  # conftest: a Store on a private copy of the catalog store


def test_a_result_per_metric_equal_to_the_pure_function(store):
    report = store.test(["weat6"], encoders=["glove-6b-50d"], budget=3000, metrics=("weat", "rnd", "ripa", "mac"))
    by = {r.metric: r for r in report.results}
    assert list(by) == ["weat", "rnd", "ripa", "mac"] and not report.failures
    # the stored value is the metric on the same four sets' vectors
    items = store.query("SELECT role, stimulus FROM result_items WHERE result_id = $r ORDER BY role, ordinal",
                        {"r": by["weat"].result_id})
    enc = resolve("glove-6b-50d")
    import polars as pl
    sets = {role: items.filter(pl.col("role") == role) for role in "XYAB"}
    vec = {role: load(store.con, enc, f.with_columns(span_start=pl.lit(None, pl.Int32), span_end=pl.lit(None, pl.Int32)))[0]
           for role, f in sets.items()}
    X, Y, A, B = (vec[r].astype(np.float64) for r in "XYAB")
    assert by["rnd"].statistic == pytest.approx(metrics.compute("rnd", X, Y, A, B), abs=1e-9)
    assert by["mac"].statistic == pytest.approx(metrics.compute("mac", X, Y, A, B), abs=1e-9)
    assert by["weat"].effect_size == pytest.approx(metrics.compute("weat", X, Y, A, B), abs=1e-9)
    # a null where one is defined; none, with the reason, where it is not
    assert by["rnd"].p_value is not None and by["rnd"].p_method in ("exact", "sampled")
    assert by["ripa"].p_value is None and "pairs" in by["ripa"].p_null_reason
    assert by["mac"].p_value is None and by["mac"].p_null_reason == metrics.METRICS["mac"].null_reason


def test_the_metric_is_part_of_the_hypothesis(store):
    store.test(["weat1", "weat6"], encoders=["glove-6b-50d"], budget=1000, metrics=("weat", "semaxis", "same"))
    df = store.results()
    # two tests x (weat, semaxis); `same` has no p-value: a value, not a hypothesis to correct
    assert df.family.m == 4 and sorted(df["metric"].unique().to_list()) == ["semaxis", "weat"]
    store.test(["weat1"], encoders=["glove-6b-50d"], budget=1000, metrics=("semaxis",))  # a replicate
    assert store.results().family.m == 4


def test_check_metrics_reports_sign_agreement_and_kendall_tau(store):
    store.test(["weat1", "weat2", "weat6", "weat9"], encoders=["glove-6b-50d"], budget=500,
               metrics=("weat", "semaxis", "rnd"))
    agreement, tau = store.check_metrics()
    assert agreement.height == 4 and set(agreement.columns) >= {"test", "encoder", "signs_agree", "decisions_agree"}
    pairs = {(a, b): t for a, b, t in tau.select("metric_a", "metric_b", "tau").rows()}
    from scipy.stats import kendalltau
    values = store.query("SELECT test, metric, coalesce(effect_size, statistic) AS v FROM latest_results ORDER BY test")
    w = values.filter(values["metric"] == "weat")["v"].to_numpy()
    s = values.filter(values["metric"] == "semaxis")["v"].to_numpy()
    assert pairs[("weat", "semaxis")] == pytest.approx(kendalltau(w, s).statistic)


@pytest.mark.parametrize("values, message", [({"metrics": ("weat", "wefe")}, "unknown metric"),
                                             ({"metrics": ("rnd",), "cuts": 5}, "--cuts measures WEAT")])
def test_bad_metric_options_are_usage_errors(values, message):
    with pytest.raises(errors.UsageError, match=message):
        Options(**values)


def test_a_layer_sweep_runs_the_test_on_every_layer_from_one_encode(store):
    sweep = store.test(["weat6"], encoders=["minilm,layer=all"], budget=500)
    assert len(sweep.results) == 7 and not sweep.failures  # embeddings + 6 layers
    encoded = store.query("SELECT count(DISTINCT fingerprint) AS n FROM embeddings_384")["n"][0]
    assert encoded == 7
    for layer in (0, 3, 6):
        (one,) = store.test(["weat6"], encoders=[f"minilm,layer={layer}"], budget=500).results
        same = [r for r in sweep.results if r.fingerprint == one.fingerprint]
        assert len(same) == 1 and same[0].effect_size == one.effect_size
    # nothing new was encoded for the single layers: the sweep stored them
    assert store.query("SELECT count(DISTINCT fingerprint) AS n FROM embeddings_384")["n"][0] == 7


def test_centring_is_applied_before_cosines_and_is_part_of_the_hypothesis(store):
    from stimkit.stats import association, effect_size
    from stimkit.stats.centering import center

    (raw,) = store.test(["weat6"], encoders=["glove-6b-50d"], budget=500).results
    (centred,) = store.test(["weat6"], encoders=["glove-6b-50d"], budget=500, center="mean").results
    assert centred.centering == "mean ref=test" and centred.effect_size != raw.effect_size
    # by hand: the four sets' vectors, their mean removed, then WEAT's d
    import polars as pl
    items = store.query("SELECT role, stimulus FROM result_items WHERE result_id = $r ORDER BY role, ordinal",
                        {"r": raw.result_id})
    enc = resolve("glove-6b-50d")
    frame = items.with_columns(span_start=pl.lit(None, pl.Int32), span_end=pl.lit(None, pl.Int32))
    V = load(store.con, enc, frame)[0].astype(np.float64)
    C = center(V, V[np.isfinite(V).all(axis=1)])
    roles = items["role"].to_numpy()
    X, Y, A, B = (C[roles == r] for r in "XYAB")
    s = association(np.concatenate([X, Y]), A, B)
    assert centred.effect_size == pytest.approx(effect_size(s[:len(X)], s[len(X):]), abs=1e-6)
    assert store.results().family.m == 2  # centred and raw are two hypotheses


def test_a_test_definition_names_its_metrics_and_a_run_may_override_them(store, tmp_path):
    defs = tmp_path / "defs"
    defs.mkdir()
    (defs / "t.toml").write_text('[mine]\nsets = ["flowers@word", "insects@word", "pleasant@word", "unpleasant@word"]\n'
                                 'metrics = ["weat", "semaxis"]\n')
    store.folders = store.folders.using(catalog_dir=defs)  # as `stimkit.open(path, catalog_dir=defs)` would
    own = store.test(["mine"], encoders=["glove-6b-50d"], budget=500)
    assert [r.metric for r in own.results] == ["weat", "semaxis"]
    given = store.test(["mine"], encoders=["glove-6b-50d"], budget=500, metrics=("rnd",))
    assert [r.metric for r in given.results] == ["rnd"]


def test_the_report_draws_d_by_layer_and_lists_the_metrics(store, tmp_path):
    pytest.importorskip("matplotlib")
    store.test(["weat6"], encoders=["minilm,layer=all"], budget=500)
    store.test(["weat6"], encoders=["glove-6b-50d"], budget=500, metrics=("weat", "semaxis", "mac"))
    written = store.report(tmp_path / "r", formats=["html", "svg"])
    html = written.html.read_text()
    assert 'id="layers"' in html and (tmp_path / "r" / "figures" / "layer-sweep.svg").exists()
    assert 'id="metric-table"' in html and ">semaxis<" in html and ">mac<" in html
