"""stats.reliability.profiles from mean unit vectors equals its definition, cosine by cosine."""

import numpy as np

from stimkit.stats.reliability import profiles


def test_profiles_equal_the_mean_cosines_less_the_reference_mean_by_brute_force():
    rng = np.random.default_rng(4)
    T, A, B = rng.normal(size=(11, 7)), rng.normal(size=(4, 7)), rng.normal(size=(3, 7))
    reference = np.vstack([T, rng.normal(size=(6, 7))])
    ids = np.array([0, 0, 1, 2, 2, 2, 3, 4, 4, 5, 5])

    def cos(u, v):
        return u @ v / np.linalg.norm(u) / np.linalg.norm(v)

    items = list(A) + list(B)
    want = np.array([[np.mean([cos(T[i], a) for i in np.flatnonzero(ids == w)])
                      - np.mean([cos(r, a) for r in reference]) for a in items] for w in range(6)])
    np.testing.assert_allclose(profiles(T, ids, A, B, reference), want, rtol=1e-12, atol=1e-14)
