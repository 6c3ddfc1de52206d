"""Before and after in one table: each test on the base encoder and on each debiased one.

A row per (test, encoder): d, its interval and p as the run stored them; on a debiased
encoder's row also the change in d from the base, d(debiased) - d(base), with the interval
and p of stats.difference.difference_test. Both results score the same target words, so the
test pairs them by stimulus (a word left out of both at once): the change's interval is
narrower than two independent intervals would give.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..stats import InvalidInput
from ..stats.difference import difference_test
from .checks import _target_scores  # s(w) of each result's target stimuli and the word each belongs to


@dataclass(frozen=True)
class BeforeAfter:
    test: str
    encoder: str
    d: float
    d_low: float | None
    d_high: float | None
    p: float | None
    change: float | None = None        # d on this encoder minus d on the base (None on the base's row)
    change_low: float | None = None
    change_high: float | None = None
    change_p: float | None = None
    result_id: str = ""


def before_after(con, results: list, base_fingerprint: str) -> list[BeforeAfter]:
    """`results`: a run's Result rows (every test on the base and on each debiased encoder)."""
    scores = _target_scores(con, [r.result_id for r in results])
    base = {r.test: r for r in results if r.fingerprint == base_fingerprint}
    rows = []
    for r in sorted(results, key=lambda r: (r.test, r.fingerprint != base_fingerprint)):
        change = None
        b = base.get(r.test)
        if b is not None and r is not b and r.result_id in scores and b.result_id in scores:
            (sx1, sy1, u1), (sx2, sy2, u2) = scores[r.result_id], scores[b.result_id]
            try:
                change = difference_test(sx1, sy1, sx2, sy2, u1, u2, what=f"{r.test}: change of d")
            except InvalidInput:
                change = None
        rows.append(BeforeAfter(r.test, r.display or r.encoder, r.effect_size, r.ci_low, r.ci_high, r.p_value,
                                *((change.diff, change.low, change.high, change.p) if change else (None,) * 4),
                                result_id=r.result_id))
    return rows
