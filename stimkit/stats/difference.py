"""Do two effect sizes differ beyond their joint uncertainty? A test for consistency checks.

Two results (for example weat6b on words and sent-weat6b on sentences, or one test on two
encoders) each give Caliskan's d over their target associations s(w) (stimkit.stats.weat.
effect_size). Same model as the intervals (stimkit.stats.intervals): the attribute stimuli
are fixed by the test definitions, as in the permutation test, and the target words are
the sampled units. Two results that share attribute stimuli are therefore both measured
against the same fixed attributes: that adds no sampling covariance in this model (it is
what makes the two d comparable). What does correlate the two d is shared *targets*: the
same word in both results (two encoders on one test; a word test and its sentence test,
whose sentences carry the same words). The test handles that by deleting a shared word
from both results at once.

difference_test: the stratified delete-one-unit jackknife (Quenouille-Tukey; Efron & Stein
1981 for its conservative bias) of theta = d1 - d2. Units are words (a word's sentences
leave together); strata are (target set X or Y) x (in result 1 only, in 2 only, in both):

    V = sum_strata (m_s - 1) / m_s * sum_{u in s} (theta_(u) - mean_s theta_(.))^2

For results with no shared unit this is exactly V1 + V2, each result's own jackknife
variance. T = theta / sqrt(V) is referred to a t distribution with Satterthwaite's degrees
of freedom, nu = V^2 / sum_s V_s^2 / (m_s - 1), capped at (units - 2) of the result with
fewer units; the interval is theta +- t_nu sqrt(V).
`bench/bench_difference.py` measures its level under equal population effects.

classify: a violation is a tested claim only: the difference test rejects at alpha, or both
effects are significant with opposite signs. Decisions on either side of alpha, p-values
orders apart, opposite signs that are not both significant, or d 0.5 apart without a
significant difference are notes: the difference between significant and not significant
is not itself significant (Gelman & Stern 2006).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import log10

import numpy as np

from .decision import significant
from .weat import InvalidInput

TEST_NAME = "jackknife-t (delete-one-word, shared words paired)"


@dataclass(frozen=True)
class Difference:
    diff: float    # d1 - d2
    low: float     # interval for the difference of the population d at `level`
    high: float
    p: float       # two-sided p-value of "equal population d"
    se: float      # jackknife standard error of d1 - d2
    df: float      # degrees of freedom of the t reference (Satterthwaite, capped)
    shared: int    # units (words) the two results share
    test: str      # the name of the test, to show with its p


@dataclass(frozen=True)
class Verdict:
    verdict: str   # violation | note | consistent
    reason: str    # why, in words ('' when consistent)


def _units(labels, n_x: int, n: int, tag: str, what: str) -> list:
    """(role, label) per stimulus; no labels: every stimulus its own unit, private to its result."""
    if labels is None:
        return [("x" if i < n_x else "y", (tag, i)) for i in range(n)]
    labels = list(labels)
    if len(labels) != n:
        raise InvalidInput(f"{what}: {len(labels)} unit labels for {n} stimuli")
    if set(labels[:n_x]) & set(labels[n_x:]):
        raise InvalidInput(f"{what}: a unit label is in both X and Y of one result")
    return [("x" if i < n_x else "y", lab) for i, lab in enumerate(labels)]


def _sums(s, index, n_units):
    """Per unit: sum, sum of squares and count of s, for X and for Y."""
    out = np.zeros((n_units, 3))
    np.add.at(out, index, np.column_stack([s, s ** 2, np.ones_like(s)]))
    return out


def _d_deleted(per_x, per_y, ddof):
    """d_C with each unit deleted in turn (row u: unit u removed; rows of absent units: nothing removed)."""
    tx, ty = per_x.sum(axis=0), per_y.sum(axis=0)

    def d(x, y):
        n = x[..., 2] + y[..., 2]
        mean = (x[..., 0] + y[..., 0]) / n
        var = (x[..., 1] + y[..., 1] - n * mean ** 2) / (n - ddof)
        return (x[..., 0] / x[..., 2] - y[..., 0] / y[..., 2]) / np.sqrt(var)
    full = float(d(tx, ty))
    with np.errstate(divide="ignore", invalid="ignore"):
        return full, d(tx - per_x, ty[None, :].repeat(len(per_x), 0)), d(tx[None, :].repeat(len(per_y), 0), ty - per_y)


def difference_test(sx1, sy1, sx2, sy2, units1=None, units2=None, level: float = 0.95, ddof: int = 1,
                    what: str = "difference of d") -> Difference:
    """Test d1 = d2 (population Caliskan d) and an interval for d1 - d2 (module docstring).

    sx_k, sy_k: s(w) per target stimulus of result k (after balancing). units_k: a label per
    stimulus of result k, X's first (the word of each sentence, or of each word); the same
    label in the same set of both results is one shared unit. None: every stimulus is its own
    unit, shared with nothing (independent results)."""
    from scipy import stats as sps  # here: scipy costs half a second to import
    s1 = np.concatenate([np.asarray(sx1, float), np.asarray(sy1, float)])
    s2 = np.concatenate([np.asarray(sx2, float), np.asarray(sy2, float)])
    u1 = _units(units1, len(sx1), len(s1), 1, what)
    u2 = _units(units2, len(sx2), len(s2), 2, what)
    keys = list(dict.fromkeys(u1 + u2))
    pos = {k: i for i, k in enumerate(keys)}
    i1, i2 = np.array([pos[k] for k in u1]), np.array([pos[k] for k in u2])
    m = len(keys)
    role = np.array([k[0] == "x" for k in keys])
    in1, in2 = np.zeros(m, bool), np.zeros(m, bool)
    in1[i1], in2[i2] = True, True
    per1, per2 = _sums(s1, i1, m), _sums(s2, i2, m)
    for name, per in (("result 1", per1), ("result 2", per2)):
        for side, mask in (("X", role), ("Y", ~role)):
            if (per[mask, 2] > 0).sum() < 2:
                raise InvalidInput(f"{what}: {name} has fewer than 2 units in {side}")
    d1, dx1, dy1 = _d_deleted(per1[role], per1[~role], ddof)
    d2, dx2, dy2 = _d_deleted(per2[role], per2[~role], ddof)
    theta = d1 - d2
    deleted = np.empty(m)
    deleted[role], deleted[~role] = dx1 - dx2, dy1 - dy2
    if not np.isfinite(deleted).all():
        raise InvalidInput(f"{what}: d is undefined with one unit left out (s(w) constant)")
    parts, dfs = [], []
    for side in (role, ~role):
        for stratum in (in1 & ~in2, ~in1 & in2, in1 & in2):
            t = deleted[side & stratum]
            if len(t) > 1:
                parts.append((len(t) - 1) / len(t) * float(np.sum((t - t.mean()) ** 2)))
                dfs.append(len(t) - 1)
    V = float(sum(parts))
    if V == 0:
        same = theta == 0
        return Difference(theta, theta, theta, 1.0 if same else 0.0, 0.0, float("inf"), int((in1 & in2).sum()), TEST_NAME)
    # Satterthwaite, capped at the df of the result with fewer units: near d = 0 each d / se is
    # about a t with (its units - 2) df, and (t1 - t2) / sqrt(2) of two such has that t's variance
    # (the plain Satterthwaite df rejected 1.9% at alpha 0.01 at 8+8 against 8+8, the cap 1.4%)
    nu = min(V ** 2 / sum(v ** 2 / f for v, f in zip(parts, dfs) if v > 0), int(in1.sum()) - 2, int(in2.sum()) - 2)
    se = np.sqrt(V)
    q = float(sps.t.ppf((1 + level) / 2, nu))
    p = float(2 * sps.t.sf(abs(theta) / se, nu))
    return Difference(float(theta), float(theta - q * se), float(theta + q * se), min(p, 1.0), float(se), float(nu),
                      int((in1 & in2).sum()), TEST_NAME)


def classify(d1: float, p1: float, d2: float, p2: float, alpha: float, diff_p: float | None) -> Verdict:
    """violation only for a tested claim; a note for what decision-comparing heuristics see.

    diff_p: the p of difference_test for the pair (None when it could not be computed: then
    only 'both significant with opposite signs' can make a violation)."""
    sig1, sig2 = significant(p1, alpha), significant(p2, alpha)
    if significant(diff_p, alpha):
        return Verdict("violation", f"d differ beyond their joint uncertainty (difference test p = {diff_p:.2g})")
    if sig1 and sig2 and np.sign(d1) * np.sign(d2) < 0:
        return Verdict("violation", "both significant with opposite signs")
    notes = []
    if sig1 != sig2:
        notes.append("different decisions at alpha")
    if p1 > 0 and p2 > 0 and abs(log10(p1) - log10(p2)) >= 2:
        notes.append("p-values 2+ orders of magnitude apart")
    if np.sign(d1) * np.sign(d2) < 0:
        notes.append("opposite signs of d, not both significant")
    if abs(d1 - d2) >= 0.5:
        notes.append("d differ by 0.5 or more")
    if not notes:
        return Verdict("consistent", "")
    tail = "" if diff_p is None else f" (difference test p = {diff_p:.2g})"
    return Verdict("note", "; ".join(notes) + tail)
