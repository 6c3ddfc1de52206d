"""The one significance rule: a p-value rejects at alpha when p <= alpha.

Every view, query, metric and check decides through `significant` (Python: scalars, arrays,
polars expressions) or, in SQL, through the same comparison written `p <= alpha`
(queries/*.sql, db/*.sql): a p exactly at alpha is significant everywhere."""

from __future__ import annotations

RULE = "p <= alpha"


def significant(p, alpha: float):
    """p <= alpha: a bool for a number (False for None or NaN), an elementwise bool array
    for a numpy array, a boolean expression for a polars expression."""
    if p is None:
        return False
    if isinstance(p, float) and p != p:  # NaN: no decision
        return False
    return p <= alpha
