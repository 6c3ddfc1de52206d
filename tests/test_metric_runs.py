"""Metrics beside WEAT in runs (issue 27): one stored result per metric, the metric part of
the hypothesis, p where a permutation null exists, and agreement measured."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import stimkit
from stimkit import errors
from stimkit.encoders import resolve
from stimkit.encoders.embeddings import load
from stimkit.run.options import Options
from stimkit.stats import metrics


@pytest.fixture
def store(catalog_db, tmp_path):
    path = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        yield s


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
    assert store.family.m == 4 and sorted(df["metric"].unique().to_list()) == ["semaxis", "weat"]
    store.test(["weat1"], encoders=["glove-6b-50d"], budget=1000, metrics=("semaxis",))  # a replicate
    store.results()
    assert store.family.m == 4


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
