"""The meta-analysis against hand computations."""

import math

import numpy as np
import pytest

from stimkit.stats import meta


def test_tau2_is_zero_when_templates_agree():
    r = meta.dersimonian_laird([0.8, 0.8, 0.8, 0.8], [0.1, 0.2, 0.05, 0.3])
    assert r.tau2 == 0 and r.i2 == 0 and r.q == pytest.approx(0, abs=1e-20)
    assert r.d == pytest.approx(0.8) and r.d_fixed == pytest.approx(0.8)


def test_equal_variances_by_hand():
    # d = 0, 2, 4 with v = 1: fixed mean 2, Q = 4 + 0 + 4 = 8, C = 3 - 3/3 = 2,
    # tau2 = (8 - 2) / 2 = 3, I2 = 6 / 8; weights 1/4 each: SE = sqrt(4/3)
    r = meta.dersimonian_laird([0.0, 2.0, 4.0], [1.0, 1.0, 1.0])
    assert r.q == pytest.approx(8) and r.tau2 == pytest.approx(3) and r.i2 == pytest.approx(0.75)
    assert r.d == pytest.approx(2) and r.se == pytest.approx(math.sqrt(4 / 3))
    assert r.ci_low == pytest.approx(2 - 1.959964 * math.sqrt(4 / 3), abs=1e-5)
    # prediction interval: t(0.975, k - 2 = 1) = 12.7062
    assert r.pi_high == pytest.approx(2 + 12.7062047 * math.sqrt(3 + 4 / 3), abs=1e-4)


def test_unequal_variances_by_hand():
    d, v = np.array([0.2, 0.5, 0.9]), np.array([0.04, 0.01, 0.09])
    w = np.array([25.0, 100.0, 100 / 9])
    fixed = (25 * 0.2 + 100 * 0.5 + (100 / 9) * 0.9) / w.sum()
    q = (w * (d - fixed) ** 2).sum()
    c = w.sum() - (w ** 2).sum() / w.sum()
    tau2 = max(0, (q - 2) / c)
    ws = 1 / (v + tau2)
    r = meta.dersimonian_laird(d, v)
    assert r.d_fixed == pytest.approx(fixed) and r.q == pytest.approx(q) and r.tau2 == pytest.approx(tau2)
    assert r.d == pytest.approx((ws * d).sum() / ws.sum())


def test_textbook_example_bcg_vaccine():
    """The BCG vaccine trials (Colditz et al. 1994; metafor's dat.bcg), log relative risks,
    DerSimonian-Laird: metafor reports estimate -0.7141, CI -1.0644 to -0.3638, Q = 152.2330
    (its tests check rma(method="DL") against Stata's metan), tau^2 = 0.3088, I^2 = 92.12%."""
    trials = np.array([
        [4, 119, 11, 128], [6, 300, 29, 274], [3, 228, 11, 209], [62, 13536, 248, 12619],
        [33, 5036, 47, 5761], [180, 1361, 372, 1079], [8, 2537, 10, 619], [505, 87886, 499, 87892],
        [29, 7470, 45, 7232], [17, 1699, 65, 1600], [186, 50448, 141, 27197], [5, 2493, 3, 2338],
        [27, 16886, 29, 17825]], dtype=float)
    tpos, tneg, cpos, cneg = trials.T
    yi = np.log((tpos / (tpos + tneg)) / (cpos / (cpos + cneg)))
    vi = 1 / tpos - 1 / (tpos + tneg) + 1 / cpos - 1 / (cpos + cneg)
    r = meta.dersimonian_laird(yi, vi)
    assert r.d == pytest.approx(-0.7141, abs=1e-4)
    assert (r.ci_low, r.ci_high) == (pytest.approx(-1.0644, abs=1e-4), pytest.approx(-0.3638, abs=1e-4))
    assert r.q == pytest.approx(152.2330, abs=1e-4)
    assert r.tau2 == pytest.approx(0.3088, abs=1e-4) and r.i2 == pytest.approx(0.9212, abs=1e-4)
    assert r.d_fixed == pytest.approx(-0.4303, abs=1e-4)


def test_d_variance_and_too_few_templates():
    assert meta.d_variance(0.5, 10, 10) == pytest.approx(20 / 100 + 0.25 / 40)
    with pytest.raises(ValueError, match="at least two"):
        meta.dersimonian_laird([0.5], [0.1])
