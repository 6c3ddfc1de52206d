"""Template audits: how much does the choice of template move a sentence test?

A sentence test's stimuli come from templates; each target template frame ("This is X.",
"X is here.") is a way of asking the same question, and the attribute sentences (built by
the same templates for adjectives and count nouns) still meet in shared frames. For each frame:
  alone     the test on the target sentences of that template only
  left_out  the test without that template's target sentences
then the pooled estimate and the heterogeneity from the crossed model of the full test
(words and templates as random factors, stats.crossed: the per-template tests share their
words, so they are not independent studies to meta-analyse), the share of templates that
flip the decision or the sign of d, and the leave-one-word-out influence of every target and
attribute word on d. (The statistics: stats.audit, stats.crossed.)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import stats, store
from ..catalog.definitions import TestDef
from ..errors import InputError, UsageError
from ..stats.audit import d_variance, template_cells
from ..stats.decision import significant
from ..stimuli.factors import frame
from ..stimuli.sets import SetSpec
from . import association
from .options import Options
from .plan import Plan
from .rows import Audit, AuditTemplate, AuditWord

SENTENCE_SET = "may2019"


def template_sets_of(test: TestDef) -> list[str]:
    """The template sets (other than `word`) that render a test's sets, in order."""
    return list(dict.fromkeys(s.template_set for s in test.set_specs() if s.template_set != "word"))


def retemplate(test: TestDef, template_set: str) -> TestDef:
    """The test with its template-rendered sets rendered by another template set (built-in or
    the user's); word-level sets and SQL sets stay as they are."""
    own = template_sets_of(test)
    if not own:
        raise UsageError(f"test {test.name!r} has no template-rendered sets to re-template "
                         f"(its sets: {', '.join(test.sets)})")
    if [template_set] == own:
        return test
    renamed = {s.name: SetSpec(s.wordlist, template_set).name for s in test.set_specs() if s.template_set != "word"}
    sets = tuple(renamed.get(s, s) for s in test.sets)
    return replace(test, name=f"{test.name}@{template_set}", sets=sets, source=f"template-set:{template_set}",
                   paper=None)


@dataclass(frozen=True)
class AuditPlan:
    """An audit or a comparison: each (test, template set) on each encoder, over one run plan
    whose tests are the re-templated ones."""
    audited: tuple[tuple[TestDef, str], ...]      # (test, template set) in order
    run: Plan

    def cells(self):
        """(test, template set, planned re-templated test, encoder) for each pair of the plan."""
        which = {retemplate(t, s).name: (t, s) for t, s in self.audited}
        for planned, enc in self.run.pairs:
            test, template_set = which[planned.name]
            yield test, template_set, planned, enc


def audited(tests: list[TestDef], template_sets: list[str] | None, min_template_sets: int = 1) -> list[tuple[TestDef, str]]:
    """Every test under every template set (None: each under its own), refusing before any
    work a test without template-rendered sets, or a comparison of fewer than two sets."""
    if template_sets is not None and len(template_sets) < min_template_sets:
        raise UsageError("compare needs at least two template sets")
    pairs = []
    for t in tests:
        for s in template_sets or template_sets_of(t)[:1] or [SENTENCE_SET]:
            retemplate(t, s)  # refuses a test with nothing to re-template
            pairs.append((t, s))
    return pairs


def _finite(x):
    return None if x is None or not np.isfinite(x) else float(x)


def _share(flags: list[bool]) -> float | None:
    return float(np.mean(flags)) if flags else None


def audit_one(con, run_id: str, test: TestDef, template_set: str, planned, enc, opts: Options, alpha: float) -> Audit:
    """Audit one test under one template set for one encoder and store it (with its result
    row). The caller owns the transaction."""
    import time

    started = time.perf_counter()
    t = planned.test
    prep = association.prepare(con, planned, enc, opts)
    (fx, vx), (fy, vy) = prep.unbalanced["x"], prep.unbalanced["y"]
    if "template_text" not in fx.columns or fx["template_text"].null_count() == fx.height:
        raise InputError(f"test {t.name!r}: its target stimuli carry no templates to audit (imported or ad-hoc sets)")
    t_x = np.array([frame(x) for x in fx["template_text"].fill_null("").to_list()], dtype=object)
    t_y = np.array([frame(y) for y in fy["template_text"].fill_null("").to_list()], dtype=object)
    n_templates = len(set(t_x) | set(t_y))
    if n_templates < 2:
        raise InputError(f"test {t.name!r} uses one target template ({next(iter(set(t_x)))!r}): "
                         "leave-one-template-out and templates as a random factor need at least two")
    res = association.result(run_id, planned, enc, prep, opts, started, kind="audit")
    association.write(con, res)
    full_d, full_p = res.effect_size, res.p_value
    A, B = stats.unit_rows(prep.vectors["a"]), stats.unit_rows(prep.vectors["b"])
    s_x, s_y = stats.association(vx, A, B), stats.association(vy, A, B)
    cells = template_cells(s_x, s_y, t_x, t_y, opts.alternative, opts.budget, opts.seed,
                           (t.name, enc.fingerprint, template_set))
    ids = {}
    for f in (fx, fy):
        for text, tid in zip(f["template_text"].fill_null("").to_list(), f["template_id"].fill_null("").to_list()):
            ids.setdefault(frame(text), set()).add(tid)

    templates = []
    for analysis, found in cells.items():
        for text, c in found:
            templates.append(AuditTemplate(
                audit_id=res.result_id, analysis=analysis, frame=text, template_ids=sorted(ids.get(text, ())),
                n_x=c.n_x, n_y=c.n_y, effect_size=c.d,
                variance=None if c.d is None else float(d_variance(c.d, c.n_x, c.n_y)),
                p_value=c.p, p_method=c.p_method, shift=None if c.d is None else c.d - full_d,
                decision_flip=None if c.p is None else bool(significant(c.p, alpha) != significant(full_p, alpha)),
                sign_flip=None if c.d is None else bool(np.sign(c.d) != np.sign(full_d)), note=c.note))
    alone = [r for r in templates if r.analysis == "alone" and r.effect_size is not None]
    pooled = res.crossed   # the full test's crossed model (run.crossed): None where it cannot be fitted

    audit = Audit(
        audit_id=res.result_id, run_id=run_id, test=test.name, template_set=template_set,
        encoder=enc.spec, fingerprint=enc.fingerprint, alpha=alpha, full_d=full_d, full_p=full_p,
        n_templates=n_templates, k_meta=pooled.n_templates if pooled else res.n_templates or n_templates,
        pooled_d=pooled.d if pooled else None, pooled_se=pooled.se_diff / pooled.sd if pooled else None,
        ci_low=pooled.ci_low if pooled else None, ci_high=pooled.ci_high if pooled else None,
        pi_low=_finite(pooled.pi_low) if pooled else None, pi_high=_finite(pooled.pi_high) if pooled else None,
        tau2=pooled.tau2 if pooled else None, i2=pooled.i2 if pooled else None, q=None,
        decision_flip_share=_share([r.decision_flip for r in alone if r.decision_flip is not None]),
        sign_flip_share=_share([r.sign_flip for r in alone]),
        templates=tuple(templates),
        # leave-one-word-out on the balanced full test: the result's own (stats.influence)
        words=tuple(AuditWord(res.result_id, i.role, i.word, i.n_stimuli, i.d_without,
                              None if i.d_without is None else i.d_without - full_d) for i in res.influence),
        full_ci=(res.ci_low, res.ci_high),
        pooled_method=pooled.method if pooled else None, pooled_p=pooled.p if pooled else None,
        pooled_df=pooled.df if pooled else None,
        **({f"var_share_{k}": v for k, v in pooled.shares.items()} if pooled else {}),
        pooled_note=None if pooled else res.crossed_scheme,
    )
    store.insert(con, "audits", [audit])
    store.insert(con, "audit_templates", list(audit.templates))
    store.insert(con, "audit_words", list(audit.words))
    return audit


def run_templates(con, plan: AuditPlan, alpha: float, command: str, on_audit=None,
                  run_fields: dict | None = None) -> tuple[str, list[Audit]]:
    """Audit every test under every template set for every encoder, in one run (all or nothing).
    run_fields: the study's name, alpha and correction, recorded on the run."""
    if plan.run.refused:  # an audit is one whole: a test or encoder that cannot run stops it
        raise plan.run.refused[0].as_error()
    audits = []
    with store.transaction(con):
        run_id = store.start_run(con, command, plan.run.options.seed, **(run_fields or {}))
        for test, template_set, planned, enc in plan.cells():
            a = audit_one(con, run_id, test, template_set, planned, enc, planned.options, alpha)
            audits.append(a)
            if on_audit:
                on_audit(a)
    return run_id, audits


def run_compare(con, plan: AuditPlan, alpha: float, command: str,
                run_fields: dict | None = None) -> tuple[str, list[dict]]:
    """The same tests under each template set (a plan of at least two): d, its shift and
    flips against the first set."""
    if plan.run.refused:
        raise plan.run.refused[0].as_error()
    rows = []
    with store.transaction(con):
        run_id = store.start_run(con, command, plan.run.options.seed, **(run_fields or {}))
        base = {}
        for test, template_set, planned, enc in plan.cells():
            (r,) = association.run_one(con, run_id, planned, enc, replace(planned.options, metrics=("weat",)),
                                       kind="compare")
            first = base.setdefault((test.name, enc.fingerprint), r)
            decision = significant(r.p_value, alpha) != significant(first.p_value, alpha)
            sign = (r.effect_size > 0) != (first.effect_size > 0)
            rows.append({"test": test.name, "encoder": enc.spec, "template_set": template_set, "n_x": r.n_x,
                         "d": r.effect_size, "ci_low": r.ci_low, "ci_high": r.ci_high,
                         "d_shift": r.effect_size - first.effect_size,
                         "p": r.p_value, "significant": significant(r.p_value, alpha),
                         "flips": "decision" if decision else ("sign" if sign else "")})
    return run_id, rows


def caliskan_sentence_tests() -> list[str]:
    """The default audit: every sent- Caliskan test of the catalog."""
    from .. import DEFAULT_PAPER
    from ..catalog.definitions import by_paper, load_toml

    return [n for n in by_paper(load_toml(), DEFAULT_PAPER) if n.startswith("sent-weat")]
