"""Centring before cosines (stats.centering): a planted common offset stops moving d."""

import numpy as np
import pytest

from stimkit.errors import InputError, UsageError
from stimkit.stats import association, effect_size
from stimkit.stats.centering import center, parse_method


def d_of(X, Y, A, B):
    return effect_size(association(X, A, B), association(Y, A, B))


def planted(seed=0, dim=20, n=8):
    """Four sets with a (weak) planted association, their union centred at 0, and a large
    common offset that every vector shares."""
    rng = np.random.default_rng(seed)
    sets = [rng.normal(size=(n, dim)) for _ in range(4)]
    sets[0][:, 0] += 0.8  # X leans towards A along axis 0
    sets[2][:, 0] += 0.8
    mu = np.concatenate(sets).mean(axis=0)
    sets = [s - mu for s in sets]
    offset = rng.normal(size=dim) * 10
    return sets, [s + offset for s in sets]


def test_mean_centring_removes_a_planted_offset():
    base, shifted = planted()
    d_base, d_shifted = d_of(*base), d_of(*shifted)
    assert abs(d_shifted - d_base) > 0.2  # the offset moves d: cosines are not translation-invariant
    reference = np.concatenate(shifted)
    centred = [center(s, reference) for s in shifted]
    assert d_of(*centred) == pytest.approx(d_base, abs=1e-9)
    for c, b in zip(centred, base):
        assert np.allclose(c, b, atol=1e-9)


def test_abtt_removes_the_top_directions_as_sklearn_pca_finds_them():
    from sklearn.decomposition import PCA
    rng = np.random.default_rng(3)
    ref = rng.normal(size=(60, 12)) * np.linspace(5, 0.5, 12)  # distinct variances: stable directions
    vectors = rng.normal(size=(7, 12))
    got = center(vectors, ref, "abtt", k=2)
    pca = PCA(n_components=2).fit(ref)
    u = pca.components_
    expected = (vectors - pca.mean_) - ((vectors - pca.mean_) @ u.T) @ u
    assert np.allclose(got, expected, atol=1e-9)
    # the centred reference has no variance left along the removed directions
    assert np.allclose(center(ref, ref, "abtt", k=2) @ u.T, 0, atol=1e-9)


def test_abtt_also_removes_a_planted_dominant_direction():
    base, _ = planted(seed=5, dim=30, n=10)
    rng = np.random.default_rng(9)
    direction = rng.normal(size=30)
    direction /= np.linalg.norm(direction)
    # a common direction with a large, varying weight on every vector (the "top" of ABTT)
    noisy = [s + np.outer(rng.normal(size=len(s)) * 40, direction) for s in base]
    reference = np.concatenate(noisy)
    d_abtt = d_of(*[center(s, reference, "abtt", k=1) for s in noisy])
    d_base_proj = d_of(*[s - np.outer(s @ direction, direction) for s in base])
    assert abs(d_of(*noisy) - d_base_proj) > abs(d_abtt - d_base_proj)
    # the direction it removed is the planted one
    _, _, vt = np.linalg.svd(reference - reference.mean(axis=0))
    assert abs(vt[0] @ direction) > 0.99


def test_nan_rows_stay_nan_and_bad_arguments_are_one_line():
    ref = np.eye(4)
    v = np.array([[1.0, 2, 3, 4], [np.nan] * 4])
    got = center(v, np.vstack([ref, [np.nan] * 4]))
    assert np.isnan(got[1]).all() and np.allclose(got[0], v[0] - 0.25)
    with pytest.raises(UsageError, match="abtt needs k"):
        center(v, ref, "abtt")
    with pytest.raises(UsageError, match="mean or abtt"):
        center(v, ref, "median")
    with pytest.raises(InputError, match="dimension 3"):
        center(v, np.ones((2, 3)))
    assert parse_method("mean") == ("mean", None) and parse_method("abtt:3") == ("abtt", 3)
    with pytest.raises(UsageError, match="abtt:K"):
        parse_method("abtt:x")
