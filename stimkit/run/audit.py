"""Template audits: how the choice of sentence template moves a test's d and p.

The audit varies the templates of the *target* sentences (X and Y); the attribute sets
stay as in the full test. The unit is a template's *frame*: its text with the word
(in any form: word, singular with article, plural) written X and control tags removed,
so "This is {{ word }}." (names, mass nouns, adjectives) and "This is {{ singular|a }}."
(count nouns) are the one frame "This is X.", and targets of different kinds (C9's
adjectives against count nouns) still meet in shared frames. For each frame:
  alone     the test on the target sentences of that template only
  left_out  the test without that template's target sentences
then a DerSimonian-Laird random-effects meta-analysis over the templates alone, the
share of templates that flip the decision or the sign of d, and the leave-one-word-out
influence of every target and attribute word on d.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from .. import StimkitError, stats, store
from ..catalog import tests as catalog
from ..stimuli import generate, wordlists
from ..stats import meta
from . import runner
from ..catalog.tests import TestDef
from ..encoders import Encoder
from ..seeding import rng_for

SENTENCE_SET = "may2019"
MIN_PER_TARGET = 3  # below this d is degenerate (one sentence a side always gives d = +-sqrt(2))
_EXPR = re.compile(r"\{\{(.*?)\}\}")
_TAG = re.compile(r"\{%.*?%\}")
_WORD_FORM = re.compile(r"\b(word|singular|plural)\b")


def frame(template_text: str) -> str:
    """'{{ singular|a|capfirst }} is {{ "a person" if person else "a thing" }}.' -> 'X is _.'"""
    text = _TAG.sub("", template_text)
    text = _EXPR.sub(lambda m: "X" if _WORD_FORM.search(m.group(1)) else "_", text)
    return " ".join(text.split())


def retemplate(test: TestDef, template_set: str) -> TestDef:
    """The test with its may2019 sets rendered by another template set."""
    if not any(s.endswith(f"@{SENTENCE_SET}") for s in test.sets):
        raise StimkitError(f"test {test.name!r} has no {SENTENCE_SET} sentence sets to re-template "
                           f"(its sets: {', '.join(test.sets)})")
    if template_set == SENTENCE_SET:
        return test
    sets = tuple(s[: -len(SENTENCE_SET)] + template_set if s.endswith(f"@{SENTENCE_SET}") else s for s in test.sets)
    return TestDef(f"{test.name}@{template_set}", sets, test.context, test.family, test.balance, test.categories,
                   source=f"template-set:{template_set}")


def ensure_generated(con, test: TestDef) -> None:
    specs = test.set_specs()
    if specs:
        generate.generate(con, specs, wordlists.load_all())


@dataclass(frozen=True)
class Cell:
    """One test on a subset of the target sentences."""
    n_x: int
    n_y: int
    d: float | None
    p: float | None
    p_method: str | None
    note: str | None = None


def _cut(values: np.ndarray, size: int, rng) -> np.ndarray:
    if len(values) == size:
        return values
    return values[np.sort(rng.choice(len(values), size=size, replace=False))]


def subset_test(sx: np.ndarray, sy: np.ndarray, alternative: str, budget: int, rng) -> Cell:
    """d and p on given target scores; unequal targets are cut to the smaller at random (seeded)."""
    if len(sx) == 0 or len(sy) == 0:
        return Cell(len(sx), len(sy), None, None, None, "template not used by both targets")
    n = min(len(sx), len(sy))
    if n < MIN_PER_TARGET:
        return Cell(len(sx), len(sy), None, None, None, f"fewer than {MIN_PER_TARGET} sentences in a target")
    sx, sy = _cut(sx, n, rng), _cut(sy, n, rng)
    if np.std(np.concatenate([sx, sy])) == 0:
        return Cell(n, n, None, None, None, "no spread in the scores: d undefined")
    pv = stats.permutation_p(np.concatenate([sx, sy]), n, alternative, "auto", budget, rng)
    return Cell(n, n, stats.effect_size(sx, sy), pv.p, pv.method)


def template_cells(s_x, s_y, t_x, t_y, alternative, budget, seed, key) -> dict[str, list[tuple[str, Cell]]]:
    """Per template text: the test on that template alone and without it."""
    templates = sorted(set(t_x) | set(t_y))
    out = {"alone": [], "left_out": []}
    for t in templates:
        rng = rng_for(seed, *key, "alone", t)
        out["alone"].append((t, subset_test(s_x[t_x == t], s_y[t_y == t], alternative, budget, rng)))
        rng = rng_for(seed, *key, "left_out", t)
        out["left_out"].append((t, subset_test(s_x[t_x != t], s_y[t_y != t], alternative, budget, rng)))
    return out


def word_influence(sim_a, sim_b, nx, words_x, words_y, words_a, words_b, ddof=1) -> list[tuple[str, str, int, float]]:
    """(role, word, n stimuli, d without the word) for every target and attribute word."""
    s = sim_a.mean(axis=1) - sim_b.mean(axis=1)
    rows = []
    for role, words, offset in (("X", words_x, 0), ("Y", words_y, nx)):
        for w in dict.fromkeys(words):
            keep = np.ones(len(s), bool)
            keep[offset + np.flatnonzero(words == w)] = False
            kx, ky = keep[:nx], keep[nx:]
            rows.append((role, w, int((~keep).sum()), _d(s[:nx][kx], s[nx:][ky], ddof)))
    for role, words in (("A", words_a), ("B", words_b)):
        for w in dict.fromkeys(words):
            keep = words != w
            if role == "A":
                s_w = sim_a[:, keep].mean(axis=1) - sim_b.mean(axis=1) if keep.any() else None
            else:
                s_w = sim_a.mean(axis=1) - sim_b[:, keep].mean(axis=1) if keep.any() else None
            d = _d(s_w[:nx], s_w[nx:], ddof) if s_w is not None else None
            rows.append((role, w, int((~keep).sum()), d))
    return rows


def _d(sx, sy, ddof):
    if len(sx) == 0 or len(sy) == 0 or np.std(np.concatenate([sx, sy])) == 0:
        return None
    return stats.effect_size(sx, sy, ddof)


def audit_one(con, run_id: str, test: TestDef, enc: Encoder, template_set: str, opts: runner.Options,
              alpha: float = 0.01) -> dict:
    """Audit one test under one template set for one encoder; writes audits rows. Caller owns the transaction."""
    t = retemplate(test, template_set)
    ensure_generated(con, t)
    prep = runner.prepare(con, t, enc, opts)
    (fx, vx), (fy, vy) = prep.unbalanced["x"], prep.unbalanced["y"]
    if "template_text" not in fx.columns or fx["template_text"].null_count() == fx.height:
        raise StimkitError(f"test {t.name!r}: its target stimuli carry no templates to audit (imported or ad-hoc sets)")
    t_x = np.array([frame(x) for x in fx["template_text"].fill_null("").to_list()], dtype=object)
    t_y = np.array([frame(y) for y in fy["template_text"].fill_null("").to_list()], dtype=object)
    n_templates = len(set(t_x) | set(t_y))
    if n_templates < 2:
        raise StimkitError(f"test {t.name!r} uses one target template ({next(iter(set(t_x)))!r}): "
                           "leave-one-template-out and a meta-analysis need at least two")
    row = runner.run_one(con, run_id, t, enc, opts, prep=prep)
    full_d, full_p = row["effect_size"], row["p_value"]
    A, B = stats.unit_rows(prep.vectors["a"]), stats.unit_rows(prep.vectors["b"])
    s_x, s_y = stats.association(vx, A, B), stats.association(vy, A, B)
    cells = template_cells(s_x, s_y, t_x, t_y, opts.alternative, opts.budget, opts.seed,
                           (t.name, enc.fingerprint, template_set))
    ids = {}
    for f in (fx, fy):
        for text, tid in zip(f["template_text"].fill_null("").to_list(), f["template_id"].fill_null("").to_list()):
            ids.setdefault(frame(text), set()).add(tid)

    template_rows = []
    for analysis, items in cells.items():
        for text, c in items:
            shift = None if c.d is None else c.d - full_d
            template_rows.append({
                "audit_id": row["result_id"], "analysis": analysis, "frame": text,
                "template_ids": sorted(ids.get(text, ())), "n_x": c.n_x, "n_y": c.n_y,
                "effect_size": c.d, "variance": None if c.d is None else float(meta.d_variance(c.d, c.n_x, c.n_y)),
                "p_value": c.p, "p_method": c.p_method, "shift": shift,
                "decision_flip": None if c.p is None else bool((c.p <= alpha) != (full_p <= alpha)),
                "sign_flip": None if c.d is None else bool(np.sign(c.d) != np.sign(full_d)),
                "note": c.note,
            })
    alone = [r for r in template_rows if r["analysis"] == "alone" and r["effect_size"] is not None]
    pooled = meta.dersimonian_laird([r["effect_size"] for r in alone], [r["variance"] for r in alone]) if len(alone) >= 2 else None

    # leave-one-word-out on the balanced full test
    W = stats.unit_rows(np.concatenate([prep.vectors["x"], prep.vectors["y"]]))
    words = {r: np.array(prep.kept[r]["word"].to_list(), dtype=object) for r in catalog.ROLES}
    influence = word_influence(W @ A.T, W @ B.T, len(prep.vectors["x"]), words["x"], words["y"], words["a"], words["b"], opts.ddof)

    audit = {
        "audit_id": row["result_id"], "run_id": run_id, "test": test.name, "template_set": template_set,
        "encoder": enc.spec, "fingerprint": enc.fingerprint, "alpha": alpha, "full_d": full_d, "full_p": full_p,
        "n_templates": n_templates, "k_meta": pooled.k if pooled else len(alone),
        "pooled_d": pooled.d if pooled else None, "pooled_se": pooled.se if pooled else None,
        "ci_low": pooled.ci_low if pooled else None, "ci_high": pooled.ci_high if pooled else None,
        "pi_low": _finite(pooled.pi_low) if pooled else None, "pi_high": _finite(pooled.pi_high) if pooled else None,
        "tau2": pooled.tau2 if pooled else None, "i2": pooled.i2 if pooled else None, "q": pooled.q if pooled else None,
        "decision_flip_share": _share([r["decision_flip"] for r in alone if r["decision_flip"] is not None]),
        "sign_flip_share": _share([r["sign_flip"] for r in alone]),
    }
    _insert(con, "audits", [audit])
    _insert(con, "audit_templates", template_rows)
    _insert(con, "audit_words", [{"audit_id": row["result_id"], "role": r, "word": w, "n_stimuli": n,
                                  "d_without": d, "influence": None if d is None else d - full_d}
                                 for r, w, n, d in influence])
    return audit


def _finite(x):
    return None if x is None or not np.isfinite(x) else float(x)


def _share(flags: list[bool]) -> float | None:
    return float(np.mean(flags)) if flags else None


def _insert(con, table: str, rows: list[dict]) -> None:
    if not rows:
        return
    frame = pl.DataFrame(rows, infer_schema_length=None)
    con.register("_rows", frame.to_arrow())
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(frame.columns)}) SELECT {', '.join(frame.columns)} FROM _rows")
    finally:
        con.unregister("_rows")


def compare(con, run_id: str, test: TestDef, enc: Encoder, template_sets: list[str], opts: runner.Options) -> list[dict]:
    """The same test under each template set, as results rows (test name <test>@<set>)."""
    rows = []
    for template_set in template_sets:
        t = retemplate(test, template_set)
        ensure_generated(con, t)
        rows.append(runner.run_one(con, run_id, t, enc, opts) | {"template_set": template_set})
    return rows


def summary(con, where: str | None = None, top: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per audit: pooled d, tau2, I2 and flip rates; and the templates that move each test most."""
    clause = f"WHERE {where}" if where else ""
    audits = store.frame(con, f"""
        SELECT audit_id, test, template_set, encoder, full_d, full_p, n_templates, pooled_d, ci_low, ci_high,
               pi_low, pi_high, tau2, i2, decision_flip_share, sign_flip_share
        FROM audits {clause} ORDER BY test, encoder, template_set""")
    movers = store.frame(con, f"""
        SELECT a.test, a.template_set, a.encoder, t.frame, t.effect_size AS d_alone, t.shift,
               t.p_value AS p_alone, t.decision_flip, t.sign_flip
        FROM audit_templates t JOIN audits a USING (audit_id)
        WHERE t.analysis = 'alone' AND t.shift IS NOT NULL {('AND ' + where) if where else ''}
        QUALIFY row_number() OVER (PARTITION BY t.audit_id ORDER BY abs(t.shift) DESC) <= {int(top)}
        ORDER BY a.test, a.encoder, a.template_set, abs(t.shift) DESC""")
    return audits, movers


def caliskan_sentence_tests() -> list[str]:
    """The default audit: every sent- Caliskan test of the catalog."""
    return [n for n in catalog.by_paper(catalog.load_toml(), catalog.DEFAULT_PAPER) if n.startswith("sent-weat")]


@dataclass(frozen=True)
class Plan:
    """What an audit or a comparison runs: tests x template sets x encoders."""
    tests: list[TestDef]
    template_sets: list[str]
    encoders: list[Encoder]

    @property
    def retemplated(self) -> list[TestDef]:
        return [retemplate(t, s) for t in self.tests for s in self.template_sets]


def plan(con, names: list[str], encoder_specs: list[str], template_sets: list[str], min_template_sets: int = 1) -> Plan:
    """The tests and encoders, refusing before any work a test without sentence sets to
    re-template (or a comparison of fewer than two template sets); each re-templated
    test's sets are generated (a no-op when they exist)."""
    from .. import encoders

    if len(template_sets) < min_template_sets:
        raise StimkitError("compare needs at least two template sets")
    tests = [catalog.get(con, n) for n in names]
    for t in tests:
        for sname in template_sets:
            retemplate(t, sname)
    found = Plan(tests, list(template_sets), [encoders.resolve(e) for e in encoder_specs])
    for t in found.retemplated:
        ensure_generated(con, t)
    return found


def run_templates(con, plan: Plan, opts: runner.Options, alpha: float, command: str,
                  on_audit=None) -> tuple[str, list[dict]]:
    """Audit every test under every template set for every encoder, in one run (all or nothing)."""
    audits = []
    with store.transaction(con):
        run_id = runner.start_run(con, command, opts.seed)
        for enc in plan.encoders:
            for t in plan.tests:
                for sname in plan.template_sets:
                    a = audit_one(con, run_id, t, enc, sname, opts, alpha)
                    audits.append(a)
                    if on_audit:
                        on_audit(a)
    return run_id, audits


def run_compare(con, plan: Plan, opts: runner.Options, alpha: float, command: str) -> tuple[str, list[dict]]:
    """The same tests under each template set (a plan of at least two): d, its shift and
    flips against the first set."""
    rows = []
    with store.transaction(con):
        run_id = runner.start_run(con, command, opts.seed)
        for enc in plan.encoders:
            for t in plan.tests:
                found = compare(con, run_id, t, enc, plan.template_sets, opts)
                base = found[0]
                for r in found:
                    decision = (r["p_value"] <= alpha) != (base["p_value"] <= alpha)
                    sign = (r["effect_size"] > 0) != (base["effect_size"] > 0)
                    rows.append({"test": t.name, "encoder": enc.spec, "template_set": r["template_set"], "n_x": r["n_x"],
                                 "d": r["effect_size"], "d_shift": r["effect_size"] - base["effect_size"],
                                 "p": r["p_value"], "significant": r["p_value"] <= alpha,
                                 "flips": "decision" if decision else ("sign" if sign else "")})
    return run_id, rows
