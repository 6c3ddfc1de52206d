"""CEAT's combined effect size (stats.ceat) equals the figures of CEAT's published code on the
same vectors (tests/fixtures/ceat/SOURCE.md), and its pooling equals statsmodels' DerSimonian-Laird."""

import json

import numpy as np
import pytest

from stimkit.stats import ceat
from stimkit.stats.weat import InvalidInput

from conftest import FIXTURES

HERE = FIXTURES / "ceat"


@pytest.fixture(scope="module")
def vectors():
    order = json.loads((HERE / "order.json").read_text())["order"]
    v = np.load(HERE / "vectors.npz")
    return [[v[k] for k in order[r]] for r in "XYAB"]


@pytest.mark.parametrize("key", ["seed0_n1000", "seed1_n200"])
def test_ces_equals_ceats_published_code(vectors, key):
    fig = json.loads((HERE / "ceat_figures.json").read_text())[key]
    got = ceat.combined_effect_size(vectors, fig["n_samples"], np.random.RandomState(fig["seed"]))
    assert got.ces == pytest.approx(fig["ces"], abs=1e-6, rel=0)
    assert got.p == pytest.approx(fig["p"], rel=1e-6)
    assert got.effects[:5] == pytest.approx(fig["first_effects"], abs=1e-9)
    assert got.variances[:5] == pytest.approx(fig["first_variances"], abs=1e-9)
    assert got.tau2 > 0 and got.n_samples == fig["n_samples"]


def test_pooling_equals_statsmodels_dersimonian_laird():
    from statsmodels.stats.meta_analysis import combine_effects

    rng = np.random.default_rng(3)
    e, v = rng.normal(0.3, 0.2, 40), rng.uniform(0.01, 0.05, 40)
    got = ceat.pool(e, v)
    ref = combine_effects(e, v, method_re="dl")
    assert got.ces == pytest.approx(ref.mean_effect_re, abs=1e-12)
    assert got.variance == pytest.approx(ref.var_eff_w_re, rel=1e-9)
    assert got.tau2 == pytest.approx(ref.tau2, abs=1e-12)
    # tau^2 is 0 where Q <= df: the fixed-effect mean
    same = ceat.pool(np.full(5, 0.4) + np.arange(5) * 1e-4, np.full(5, 0.1))
    assert same.tau2 == 0 and same.ces == pytest.approx(0.4002)


def test_draws_from_a_generator_are_seeded_and_refusals(vectors):
    a = ceat.combined_effect_size(vectors, 50, np.random.default_rng(1))
    b = ceat.combined_effect_size(vectors, 50, np.random.default_rng(1))
    assert a.ces == b.ces
    with pytest.raises(InvalidInput):
        ceat.pool([0.1], [0.1])
    with pytest.raises(InvalidInput):
        ceat.combined_effect_size([vectors[0], [], vectors[2], vectors[3]], 10, np.random.default_rng(0))
