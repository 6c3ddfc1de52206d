"""Consistency checks that test instead of comparing decisions (May et al. 2019, section 6:
C7 vs C8, C3/C4/C5; word vs sentence, paired by their word lists or `pair` key; one test
across encoders; human against machine translation of one test), results whose decision
flips without one word (`one word`: a note), and a diagnostic of the stimuli: X and Y
differing in grammatical gender composition (stimuli.language.gender_composition).

The difference between significant and not significant is not itself significant. A
`violation` is a tested claim: the two effects differ beyond their joint uncertainty (the
difference of d, tested on the two results' stored s(w) with shared words deleted together:
stats.difference), or both are significant with opposite signs. What the decision
heuristics see (decisions on either side of alpha, p orders apart) is a `note`.
`not comparable` says which partner result is missing, and what the family holds instead.
A replicate family's test whose decision does not hold in most replicates, and a poor
test-retest ICC, are notes too (analysis.replicates).
"""

from __future__ import annotations

import polars as pl

from .. import store
from ..stats import InvalidInput
from ..stats.decision import significant
from ..stats.difference import classify, difference_test
from ..stimuli.language import gender_composition
from .families import named_query, run_sql
from .replicates import replicate_notes

PAIRWISE = ("C7 vs C8", "word vs sentence", "human vs machine")
GENDER_CHECK = "grammatical gender"
COLUMNS = ["check_name", "heuristic", "encoder", "tests", "verdict", "reason", "test_used", "diff_p", "detail",
           "result_ids"]


def consistency(con, alpha: float) -> pl.DataFrame:
    """Every comparison the temp view `family` allows, with its verdict (consistent, note,
    violation, not comparable), its reason, and the test used with its p where one ran."""
    found = run_sql(con, named_query("consistency"))
    genders = grammatical_gender(con) + replicate_notes(con)   # replicate families: analysis.replicates
    if found.height == 0 and not genders:
        return pl.DataFrame(schema={c: (pl.Float64 if c == "diff_p" else pl.List(pl.String) if c == "result_ids"
                                        else pl.Boolean if c == "heuristic" else pl.String) for c in COLUMNS})
    ids = sorted({i for row in found["result_ids"].to_list() for i in row})
    results = {r["result_id"]: r for r in store.frame(con, """
        SELECT result_id, test, fingerprint, encoder, alternative, units, effect_size, p_value FROM family
        WHERE result_id IN (SELECT unnest(?))""", [ids]).iter_rows(named=True)}
    items = _target_scores(con, [i for row in found.filter(pl.col("check_name").is_in(PAIRWISE)).iter_rows(named=True)
                                 for i in row["result_ids"]])
    rows = []
    for row in found.iter_rows(named=True):
        verdict, reason, test_used, diff = _verdict(con, row, results, items, alpha)
        detail = row["detail"]
        if row["check_name"] == "human vs machine" and diff is not None:  # how far the machine moved d
            detail += f"; d human - machine {diff.diff:+.2f} [{diff.low:.2f}, {diff.high:.2f}]"
        rows.append({**{c: row[c] for c in ("check_name", "heuristic", "encoder", "tests", "result_ids")},
                     "detail": detail, "verdict": verdict, "reason": reason, "test_used": test_used,
                     "diff_p": diff.p if diff is not None else None})
    rows = sorted(rows + genders, key=lambda r: (r["check_name"], r["tests"], r["encoder"]))
    return pl.DataFrame(rows, schema_overrides={"diff_p": pl.Float64, "test_used": pl.String, "reason": pl.String,
                                                "detail": pl.String}).select(COLUMNS)


def grammatical_gender(con) -> list[dict]:
    """For each WEAT result of the family whose target words mark their grammatical gender:
    whether X and Y differ in composition (a `note`: d may partly measure grammatical
    gender, Omrani Sabbaghi & Caliskan 2022), with the counts, the share distance and the
    exact test's p. A word counts once, by the words that took part."""
    frame = store.frame(con, """
        WITH marked AS (
            SELECT f.result_id, f.test, f.encoder, i.role, coalesce(i.word, i.stimulus) AS unit,
                   any_value(s.grammatical_gender) AS genus
            FROM family f JOIN result_items i USING (result_id)
            JOIN stimuli s ON s.set_version = i.set_version AND s.stimulus = i.stimulus
            WHERE coalesce(f.metric, 'weat') = 'weat' AND i.role IN ('X', 'Y') AND i.association IS NOT NULL
            GROUP BY ALL)
        SELECT * FROM marked WHERE result_id IN (SELECT result_id FROM marked WHERE genus IS NOT NULL)
        ORDER BY result_id, role, unit""")
    rows = []
    for (result_id,), part in frame.group_by(["result_id"], maintain_order=True):
        found = gender_composition(*(part.filter(pl.col("role") == r)["genus"].to_list() for r in ("X", "Y")))
        verdict = ("not comparable" if found.distance is None else "note" if found.imbalanced else "consistent")
        reason = {"not comparable": "X or Y has no word marked with its grammatical gender",
                  "note": "X and Y differ in grammatical gender composition: d may partly measure grammatical gender "
                          "(Omrani Sabbaghi & Caliskan 2022)", "consistent": None}[verdict]
        rows.append({"check_name": GENDER_CHECK, "heuristic": True, "encoder": part["encoder"][0],
                     "tests": part["test"][0], "verdict": verdict, "reason": reason,
                     "test_used": "Freeman-Halton exact (X/Y by gender)" if found.p_value is not None else None,
                     "diff_p": found.p_value, "detail": found.text(), "result_ids": [result_id]})
    return rows


def _verdict(con, row: dict, results: dict, items: dict, alpha: float):
    if row["missing"] is not None:
        present = results[row["result_ids"][0]] if row["result_ids"] else None
        return "not comparable", _partner(con, row["missing"], present), None, None
    if row["check_name"] in PAIRWISE and len(row["result_ids"]) == 2:
        a, b = (results[i] for i in row["result_ids"])
        diff = None
        if a["result_id"] in items and b["result_id"] in items:
            (sx1, sy1, u1), (sx2, sy2, u2) = items[a["result_id"]], items[b["result_id"]]
            try:
                diff = difference_test(sx1, sy1, sx2, sy2, u1, u2)
            except InvalidInput:  # too few words to estimate the difference's error
                diff = None
        v = classify(a["effect_size"], a["p_value"], b["effect_size"], b["p_value"], alpha, diff.p if diff else None)
        return v.verdict, v.reason or None, diff.test if diff else None, diff
    if row["check_name"] == "across encoders":
        group = [results[i] for i in row["result_ids"]]
        up = sorted(r["encoder"] for r in group if significant(r["p_value"], alpha) and r["effect_size"] > 0)
        down = sorted(r["encoder"] for r in group if significant(r["p_value"], alpha) and r["effect_size"] < 0)
        if up and down:
            return ("violation", f"significant with opposite signs: d > 0 on {', '.join(up)}, d < 0 on {', '.join(down)}",
                    "each result's permutation test", None)
    if row["findings"]:
        return "note", row["findings"], None, None
    return "consistent", None, None, None


def _partner(con, missing: str, present: dict | None) -> str:
    """Why the partner does not match: it is absent, or in the family under other settings."""
    if present is None:
        return f"no result for {missing} in the family"
    others = store.frame(con, """
        SELECT result_id, alternative, units FROM family WHERE test = ? AND fingerprint = ?""",
                         [missing, present["fingerprint"]])
    if others.height == 0:
        return f"no result for {missing} with encoder {present['encoder']} in the family"
    o = others.row(0, named=True)
    differs = [f"{k} {o[k]} (here {present[k]})" for k in ("alternative", "units") if o[k] != present[k]]
    return (f"found {o['result_id']} for {missing}, but it differs in " + ", ".join(differs)
            + ": only results with the same settings are compared")


def _target_scores(con, result_ids: list[str]) -> dict:
    """Per result: s(w) of its X and Y stimuli that took part, and the word each belongs to."""
    if not result_ids:
        return {}
    frame = store.frame(con, """
        SELECT result_id, role, coalesce(word, stimulus) AS unit, association FROM result_items
        WHERE result_id IN (SELECT unnest(?)) AND role IN ('X', 'Y') AND association IS NOT NULL
        ORDER BY result_id, role, ordinal""", [sorted(set(result_ids))])
    found = {}
    for (rid,), part in frame.group_by(["result_id"], maintain_order=True):
        x, y = part.filter(pl.col("role") == "X"), part.filter(pl.col("role") == "Y")
        units = x["unit"].to_list() + y["unit"].to_list()
        found[rid] = (x["association"].to_numpy(), y["association"].to_numpy(), units)
    return found
