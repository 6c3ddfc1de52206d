"""Wording audits: does a test's finding survive meaning-preserving rewordings of its templates?

Each test is run under its own template set and under every variant of that set's perturbation
family (stimuli.perturb), on each encoder. Per test x encoder: d and p per variant; the relative
change of d against the original, (d_v - d_0) / |d_0| (Seshadri, Pezeshkpour & Singh 2022),
its range; the share of variants that flip the sign of d, and the share that flip the decision
(p <= alpha, the view's alpha); the templates' share of variance in the crossed words x
templates model over the whole family (every variant's frames as templates; stats.crossed);
and a verdict: fragile where a variant changes the conclusion (flips the decision, or the sign
of a d that is significant, in the original or the variant), else robust. Across
encoders, per test: Kendall's tau between each variant's order of the encoders by d and the
original's, and the share of variants that keep that order.

A variant that gives an encoder the same input as the original (every stimulus of the four sets
read as the same token ids; where the encoder cannot say, the same vectors exactly) changes
nothing for it: it is flagged (no_op), named on the audit, and left out of that encoder's
relative change, flip shares, verdict and family fit, which would otherwise count a copy of the
original as a rewording that held ("case-lower" on GloVe and MiniLM, punctuation on GloVe).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import store
from ..catalog.definitions import ROLES, TestDef
from ..encoders.embeddings import load, stimuli_of
from ..errors import InputError, UsageError
from ..seeding import rng_for
from ..stats.crossed import crossed_fit
from ..stats.weat import InvalidInput
from ..stimuli.factors import word_and_context
from ..stimuli.perturb import Family
from ..store import column
from ..store.staging import scratch
from . import association
from .audit import retemplate, template_sets_of
from .plan import Plan

SCRATCH = "stimkit-perturb-"   # the variants' template folders: <tmp>/stimkit-perturb-<pid>-*


@dataclass(frozen=True)
class WordingVariant:
    audit_id: str
    variant: str
    rule: str | None
    family: str | None
    n_changed: int
    n_x: int
    n_y: int
    effect_size: float
    p_value: float
    rel_change: float | None
    sign_flip: bool | None
    decision_flip: bool | None
    no_op: bool | None = None      # the encoder's input is the original's (None: the original)


@dataclass(frozen=True)
class WordingAudit:
    audit_id: str
    run_id: str
    test: str
    template_set: str
    encoder: str
    fingerprint: str
    alpha: float
    n_variants: int
    n_dropped: int
    original_d: float
    original_p: float
    rel_change_min: float | None
    rel_change_max: float | None
    sign_flip_share: float | None
    decision_flip_share: float | None
    template_share: float | None
    family_d: float | None
    verdict: str                   # robust | fragile | unchanged (no variant changes the input)
    n_no_op: int = 0               # variants that change nothing for the encoder: out of the shares
    no_op_variants: list[str] = field(default_factory=list)
    role_versions: str | None = None  # the original's set versions as X, Y, A, B (stimuli.sets.role_versions)
    variants: tuple[WordingVariant, ...] = column((), stored=False)


@dataclass(frozen=True)
class WordingRanking:
    run_id: str
    test: str
    encoders: list[str]
    n_variants: int
    mean_tau: float | None
    keep_share: float | None


@dataclass(frozen=True)
class WordingPlan:
    """Each test under its own template set and under every variant of that set's family, on
    each encoder, over one run plan whose tests are the re-templated ones."""
    tests: tuple[TestDef, ...]
    families: dict[str, Family]           # by the template set perturbed
    run: Plan
    provenance: tuple[dict, ...] = ()     # stimuli.perturb.provenance rows of every variant


MAX_VARIANTS = 1_000  # the most variants a family may be allowed (STIMKIT_MAX_VARIANTS)


def check_max_variants(max_variants: int | None) -> None:
    """--max-variants: a number of variants, 1 to the bound (each variant is a test run per encoder)."""
    from ..choices import limit

    if max_variants is None:
        return
    bound = limit("max_variants", MAX_VARIANTS)
    if not 1 <= max_variants <= bound:
        raise UsageError(f"--max-variants must be between 1 and {bound:,} (raise the bound with STIMKIT_MAX_VARIANTS), "
                         f"not {max_variants}")


def perturbed_set(test: TestDef) -> str:
    """The one template set a test's sets are rendered by (the set whose family it runs under)."""
    own = template_sets_of(test)
    if len(own) != 1:
        raise UsageError(f"test {test.name!r}: a wording audit perturbs one template set, and its sets come from "
                         + (f"{len(own)} ({', '.join(own)})" if own else "none (word-level or SQL sets)"))
    return own[0]


def variants_folder():
    """The temporary folder the variants are written to: removed when the audit ends, killed
    or not, and a stale one at the next start (store.staging.scratch)."""
    return scratch(SCRATCH)


def require_variants(family: Family) -> Family:
    """The family, when it has a variant to audit; else one line saying why it has none (the
    grammar check dropped them all, or no rule rewrites a line of the set)."""
    if family.variants:
        return family
    lines = [d for d in family.dropped if d.template]
    if lines:
        d = lines[0]
        reason = d.reason.splitlines()[0] if d.reason else ""
        why = (f"the grammar check dropped every variant of its family ({len(lines)} rewritten "
               f"line{'s' if len(lines) != 1 else ''}; the first, {d.template} in {d.variant}: {reason})")
    else:
        why = "no rule rewrites a line of it" + (f" (rules: {', '.join(family.unmatched)})" if family.unmatched else "")
    raise InputError(f"template set {family.parent!r}: {why}: no variant to audit")


def variant_tests(test: TestDef, family: Family) -> list[TestDef]:
    """The test under its own set, then under each variant."""
    return [test] + [retemplate(test, v.name) for v in family.variants]


def relative_change(d: float, d0: float) -> float | None:
    """(d - d0) / |d0| (Seshadri et al. 2022: 'from an 81% reduction to a 162% increase'); None when d0 is 0."""
    return None if d0 == 0 else float((d - d0) / abs(d0))


def significant(p: float, alpha: float) -> bool:
    """The project's one significance rule: reject at alpha when p <= alpha."""
    return bool(p <= alpha)


def ranking(run_id: str, test: str, d_by_encoder: dict[str, list[float]]) -> WordingRanking | None:
    """Kendall's tau between each variant's order of the encoders by d and the original's (the
    first of each list), and the share of variants that keep the original's order exactly."""
    from scipy.stats import kendalltau

    encs = list(d_by_encoder)
    if len(encs) < 2:
        return None
    d = np.array([d_by_encoder[e] for e in encs])        # encoders x (original + variants)
    original = d[:, 0]
    order = [encs[i] for i in np.argsort(-original, kind="stable")]
    taus, keeps = [], []
    for j in range(1, d.shape[1]):
        tau = kendalltau(original, d[:, j]).statistic
        taus.append(tau)
        keeps.append(bool(np.array_equal(np.argsort(-original, kind="stable"), np.argsort(-d[:, j], kind="stable"))))
    finite = [t for t in taus if np.isfinite(t)]
    return WordingRanking(run_id, test, order, d.shape[1] - 1, float(np.mean(finite)) if finite else None,
                          float(np.mean(keeps)) if keeps else None)


def _family_fit(parts: list[tuple[str, list[str], list[str], np.ndarray, int]], opts, test: str, fingerprint: str):
    """The crossed words x templates model over every variant's sentences: a template is a
    variant's frame (its name and frame), so the rewordings are levels of the template factor."""
    s, is_x, words, contexts = [], [], [], []
    for variant, w, c, assoc, n_x in parts:
        s.append(assoc)
        is_x.append(np.arange(len(assoc)) < n_x)
        words += w
        contexts += [f"{variant} | {x}" for x in c]
    try:
        return crossed_fit(np.concatenate(s), np.concatenate(is_x), words, contexts, alternative=opts.alternative,
                           level=opts.ci_level, ddof=opts.ddof, rng=rng_for(opts.seed, test, fingerprint, "wording"),
                           what=f"test {test!r} over its wordings")
    except InvalidInput:
        return None


def encoder_input(con, planned, enc) -> tuple[str, object]:
    """What the encoder reads of a planned test's four sets, in order: ("inputs", its token ids
    per stimulus) where it can say (encoders.base.Encoder.inputs), else ("vectors", the stored
    vectors). Token ids, not vectors, where there are any: a transformer's vector of one input
    differs in the last float bits with the batch it was padded in (encoders.embeddings.missing)."""
    stimuli = stimuli_of([planned.sets[r] for r in ROLES])
    texts = stimuli["stimulus"].to_list()
    spans = [None if a is None or b is None else (a, b)
             for a, b in zip(stimuli["span_start"].to_list(), stimuli["span_end"].to_list())]
    found = enc.inputs(texts, spans)
    if found is not None:
        return "inputs", found
    return "vectors", load(con, enc, stimuli)[0]


def same_input(a: tuple[str, object], b: tuple[str, object]) -> bool:
    """Two readings of encoder_input are one: equal token ids, or vectors equal bit for bit
    (NaN, a stimulus without a vector, equal to NaN)."""
    if a[0] != b[0]:
        return False
    if a[0] == "inputs":
        return a[1] == b[1]
    return a[1].shape == b[1].shape and bool(np.array_equal(a[1], b[1], equal_nan=True))


def audit_one(run_id: str, con, test: TestDef, family: Family, planned: dict, enc, alpha: float) -> WordingAudit:
    """One test on one encoder over its family: the original, then each variant. A variant whose
    input to the encoder is the original's is flagged no_op and counts in none of the shares."""
    audit_id = f"{run_id}/{test.name}/{enc.fingerprint}"
    names = [test.name] + [retemplate(test, v.name).name for v in family.variants]
    labels = [(family.parent, None, None, 0)] + [(v.name, v.rule, v.family, len(v.changes)) for v in family.variants]
    rows, parts = [], []
    d0 = p0 = seen0 = None
    for name, (variant, rule, fam, n_changed) in zip(names, labels):
        pt = planned[name]
        prep = association.prepare(con, pt, enc, pt.options)
        out = association.compute(prep, pt.options, pt.test.name, enc.fingerprint, enc.spec)
        d, p = float(out["effect_size"]), float(out["p_value"])
        seen = encoder_input(con, pt, enc)
        if d0 is None:
            d0, p0, seen0 = d, p, seen
        first = rule is None
        no_op = None if first else same_input(seen, seen0)
        n_x = prep.kept["x"].height
        found = [word_and_context(prep.kept[r]) for r in ("x", "y")]
        if None not in found and not no_op:
            (wx, cx), (wy, cy) = found
            parts.append((variant, wx + wy, cx + cy, out["association"], n_x))
        rows.append(WordingVariant(audit_id, variant, rule, fam, n_changed, n_x, prep.kept["y"].height, d, p,
                                   None if first else relative_change(d, d0),
                                   None if first else bool(np.sign(d) != np.sign(d0)),
                                   None if first else significant(p, alpha) != significant(p0, alpha), no_op))
    changing = [r for r in rows[1:] if not r.no_op]
    quiet = [r.variant for r in rows[1:] if r.no_op]
    rel = [r.rel_change for r in changing if r.rel_change is not None]
    signs = [r.sign_flip for r in changing]
    decisions = [r.decision_flip for r in changing]
    fit = (_family_fit(parts, planned[test.name].options, test.name, enc.fingerprint)
           if len(parts) == len(changing) + 1 else None)
    share = None
    if fit is not None:
        shares = fit.shares
        share = float(shares["templates"] + shares["group_template"])
    # fragile: a rewording changes the conclusion: the decision at alpha, or the direction of a
    # significant effect (a sign that flips between two non-significant d's changes no conclusion)
    fragile = any(decisions) or any(r.sign_flip and (significant(r.p_value, alpha) or significant(p0, alpha))
                                    for r in changing)
    verdict = "fragile" if fragile else "robust" if changing else "unchanged"
    return WordingAudit(
        audit_id, run_id, test.name, family.parent, enc.spec, enc.fingerprint, alpha, len(rows) - 1,
        sum(1 for x in family.dropped if x.template), d0, p0, min(rel) if rel else None, max(rel) if rel else None,
        float(np.mean(signs)) if signs else None, float(np.mean(decisions)) if decisions else None,
        share, None if fit is None else float(fit.d), verdict, len(quiet), quiet, planned[test.name].role_versions,
        tuple(rows))


def run(con, plan: WordingPlan, alpha: float, command: str, on_audit=None,
        run_fields: dict | None = None) -> tuple[str, list[WordingAudit], list[WordingRanking]]:
    """Every test over its family on every encoder, in one run (all or nothing). run_fields:
    the study's name, alpha and correction, recorded on the run."""
    if plan.run.refused:
        raise plan.run.refused[0].as_error()
    for family in plan.families.values():
        require_variants(family)
    planned = {}
    for pt, enc in plan.run.pairs:
        planned.setdefault(enc.fingerprint, {})[pt.name] = pt
    encoders = list({enc.fingerprint: enc for _, enc in plan.run.pairs}.values())
    audits = []
    with store.transaction(con):
        run_id = store.start_run(con, command, plan.run.options.seed, **(run_fields or {}))
        store.insert(con, "template_variants", list(plan.provenance), keep_stored=True)
        for test in plan.tests:
            family = plan.families[perturbed_set(test)]
            for enc in encoders:
                if test.name not in planned[enc.fingerprint]:
                    raise InputError(f"test {test.name!r} did not plan on encoder {enc.spec!r}")
                a = audit_one(run_id, con, test, family, planned[enc.fingerprint], enc, alpha)
                store.insert(con, "wording_audits", [a])
                store.insert(con, "wording_variants", list(a.variants))
                audits.append(a)
                if on_audit:
                    on_audit(a)
        rankings = []
        for test in plan.tests:
            mine = {a.encoder: [a.original_d] + [v.effect_size for v in a.variants[1:]]
                    for a in audits if a.test == test.name}
            r = ranking(run_id, test.name, mine)
            if r is not None:
                rankings.append(r)
        store.insert(con, "wording_rankings", rankings)
    return run_id, audits, rankings
