"""How the audits' tables give way on a narrow terminal (`audit templates`, `audit show`,
`audit perturb`, `audit ceat`): each table's columns by importance, most important first --
who (test, encoder), d with its interval, p, then the findings (flip shares, the verdict,
CEAT's p and the crossed d) -- the ones never dropped, and those that go under another.
`emit(frame, fmt, **AUDITS)` and the like."""

from __future__ import annotations

# template audits: the pooled d over the templates with its interval, the full test's p, the
# share of templates whose decision flips; then the spread
AUDITS = {
    "order": ("test", "encoder", "pooled_d", "ci_low", "ci_high", "full_p", "decision_flip_share", "full_d",
              "n_templates", "sign_flip_share", "tau2", "i2", "template_set", "pi_low", "pi_high", "alpha"),
    "keep": ("test", "encoder", "pooled_d", "full_p", "decision_flip_share"),
    "stack": {"full_d": "pooled_d", "sign_flip_share": "decision_flip_share", "i2": "tau2"},
}
# the templates that move each test most
TEMPLATES = {
    "order": ("test", "encoder", "frame", "d_alone", "p_alone", "decision_flip", "shift", "sign_flip", "template_set"),
    "keep": ("d_alone", "decision_flip"),
}
# wording audits (`audit perturb`): the original d and p, the verdict and the decision-flip share,
# then the range of the relative change of d
WORDING = {
    "order": ("test", "encoder", "original_d", "original_p", "verdict", "decision_flip_share", "rel_change_min",
              "rel_change_max", "sign_flip_share", "template_share", "n_variants", "n_no_op", "no_op_variants",
              "n_dropped", "template_set", "alpha"),
    "keep": ("test", "encoder", "original_d", "original_p", "verdict", "decision_flip_share"),
    "stack": {"rel_change_max": "rel_change_min", "sign_flip_share": "decision_flip_share", "original_p": "original_d"},
}
RANKINGS = {"order": ("test", "encoders", "mean_tau", "keep_share", "n_variants"), "keep": ("mean_tau", "keep_share")}
# a wording audit's variants
VARIANTS = {"order": ("test", "encoder", "variant", "d", "p", "no_op"), "keep": ("d", "p")}
# CEAT beside stimkit's d: d and p, CEAT's combined effect size and its p, the crossed d
CEAT = {
    "order": ("test", "encoder", "d", "p", "ces", "ces_p", "crossed_d", "tau2", "n_samples", "words", "contexts_min",
              "contexts_max", "context"),
    "keep": ("test", "encoder", "d", "p", "ces", "ces_p", "crossed_d"),
    "stack": {"ces_p": "ces", "p": "d", "contexts_max": "contexts_min"},
}


def no_op_line(test: str, encoder: str, names: list[str] | None) -> str | None:
    """"3 variants change nothing for glove-6b-50d (sent-weat6): case-lower, punct-exclaim,
    punct-none" (left out of its shares), by rule (the part of a variant's name after "~");
    None when every variant changes something (or the audit predates the check)."""
    if not names:
        return None
    rules = [n.split("~", 1)[-1] for n in names]
    return (f"{len(rules)} variant{'s' if len(rules) != 1 else ''} change{'' if len(rules) != 1 else 's'} nothing "
            f"for {encoder} ({test}), left out of its shares: {', '.join(rules)}")
