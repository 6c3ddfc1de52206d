"""sampler.size_law from exact binomial coefficients equals scipy.stats' hypergeometric and
binomial laws (to 1e-14), so the split sampler draws as it did; above EXACT_LAW it is scipy's."""

import numpy as np
import pytest
from scipy import stats as sps

from stimkit.stats import sampler


def by_scipy(M, k):
    half = M // 2
    a = np.arange(half + 1)
    pmf_a = sps.hypergeom.pmf(a, M, half, k)
    b = k - a
    inside = (b >= 0) & (b <= M - half)
    pmf_b = np.zeros(M - half + 1)
    pmf_b[b[inside]] = pmf_a[inside]
    with np.errstate(divide="ignore", invalid="ignore"):
        factors = (np.max(pmf_a / sps.binom.pmf(a, half, 0.5)),
                   np.max(pmf_b / sps.binom.pmf(np.arange(M - half + 1), M - half, 0.5)))
    return np.cumsum(pmf_a) / pmf_a.sum(), factors


@pytest.mark.parametrize("M", [3, 7, 16, 17, 32, 50, 101, 400, 1999])
def test_the_size_law_equals_scipy_stats(M):
    compared = 0
    for k in sorted({1, 2, M // 3, M // 2 - 1, M // 2, M // 2 + 1, M - 1} - {0, M}):
        cdf, factors = by_scipy(M, k)
        if abs(max(factors) - sampler.MAX_POOL_FACTOR) < 1e-9:
            continue   # at the pool limit itself, either side's last bit decides
        with np.errstate(divide="ignore", invalid="ignore"):
            law = sampler.size_law(M, k)
        assert (law is None) == (max(factors) > sampler.MAX_POOL_FACTOR), (M, k)
        if law is not None:
            compared += 1
            np.testing.assert_allclose(law.cdf[:-1], cdf[:-1], rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(law.factors, factors, rtol=1e-13)
    assert compared >= 1
