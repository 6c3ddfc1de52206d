"""Before and after in one table: each test on the base encoder and on each debiased one.

A row per (test, encoder): d, its interval and p as the run stored them; on a debiased
encoder's row also the change in d from the base, d(debiased) - d(base), with the interval
and p of stats.difference.difference_test. Both results score the same target words, so the
test pairs them by stimulus (a word left out of both at once): the change's interval is
narrower than two independent intervals would give.

`before_after` tabulates a run (`stimkit debias compare`); `stored_before_after` finds the
pairs among stored results (the report): a debiased encoder's stored details name its base's
fingerprint (encoders.debias).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .. import store
from ..stats import InvalidInput
from ..stats.difference import difference_test
from .consistency import _target_scores  # s(w) of each result's target stimuli and the word each belongs to


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


def _table(con, results: list[dict], base_of: dict[str, str]) -> list[BeforeAfter]:
    """results: dicts with result_id, test, label, fingerprint, effect_size, ci_low, ci_high,
    p_value; base_of: {debiased fingerprint: its base's fingerprint}. Bases first within a test."""
    scores = _target_scores(con, [r["result_id"] for r in results])
    by = {(r["test"], r["fingerprint"]): r for r in results}
    bases = set(base_of.values())
    rows = []
    for r in sorted(results, key=lambda r: (r["test"], r["fingerprint"] not in bases, r["label"])):
        b = by.get((r["test"], base_of.get(r["fingerprint"], "")))
        change = None
        if b is not None and r["result_id"] in scores and b["result_id"] in scores:
            (sx1, sy1, u1), (sx2, sy2, u2) = scores[r["result_id"]], scores[b["result_id"]]
            try:
                change = difference_test(sx1, sy1, sx2, sy2, u1, u2, what=f"{r['test']}: change of d")
            except InvalidInput:  # too few words to estimate the change's error
                change = None
        rows.append(BeforeAfter(r["test"], r["label"], r["effect_size"], r["ci_low"], r["ci_high"], r["p_value"],
                                *((change.diff, change.low, change.high, change.p) if change else (None,) * 4),
                                result_id=r["result_id"]))
    return rows


def before_after(con, results: list, base_fingerprint: str) -> list[BeforeAfter]:
    """`results`: a run's Result rows (every test on the base and on each debiased encoder)."""
    found = [{"result_id": r.result_id, "test": r.test, "label": r.display or r.encoder, "fingerprint": r.fingerprint,
              "effect_size": r.effect_size, "ci_low": r.ci_low, "ci_high": r.ci_high, "p_value": r.p_value}
             for r in results]
    return _table(con, found, {r["fingerprint"]: base_fingerprint for r in found
                               if r["fingerprint"] != base_fingerprint})


def stored_before_after(con, family: pl.DataFrame) -> list[BeforeAfter]:
    """The family's WEAT results on debiased encoders, each with its base's result of the same
    test in the family (the latest), as `before_after` tabulates them; [] when there is none."""
    if family.height == 0:
        return []
    derived = dict(store.rows(con, """
        SELECT fingerprint, json_extract_string(details, '$.identity.base_fingerprint') FROM encoders
        WHERE fingerprint IN (SELECT unnest(?)) AND json_extract(details, '$.identity.debias') IS NOT NULL""",
                              [sorted(set(family["fingerprint"]))]))
    if not derived:
        return []
    weat = family.filter(pl.col("metric").fill_null("weat") == "weat") if "metric" in family.columns else family
    latest = weat.sort("created_at").unique(["test", "fingerprint"], keep="last")
    keep = latest.filter(pl.col("fingerprint").is_in(list(derived) + list(derived.values())))
    keep = keep.filter(pl.col("test").is_in(keep.filter(pl.col("fingerprint").is_in(list(derived)))["test"].to_list()))
    found = [{**{k: r[k] for k in ("result_id", "test", "fingerprint", "effect_size", "ci_low", "ci_high", "p_value")},
              "label": r.get("display") or r["encoder"]} for r in keep.to_dicts()]
    return _table(con, found, derived)
