"""A sentence test's d with words and templates as random factors (stats.crossed), as the
columns of its result: every WEAT result whose target sentences span at least two template
frames gets them (word tests and imported sets without templates do not)."""

from __future__ import annotations

import numpy as np

from ..seeding import rng_for
from ..stats.crossed import crossed_fit
from ..stats.weat import InvalidInput
from ..stimuli.factors import word_and_context


def columns(prep, association: np.ndarray, opts, test_name: str, fingerprint: str) -> dict:
    """The crossed columns of a Result from the prepared (balanced) targets and their s(w):
    {} when the targets have no templates or one frame; only a reason in crossed_scheme when
    the design cannot carry the model (one word a side, no template shared by X and Y)."""
    found = [word_and_context(prep.kept[r]) for r in ("x", "y")]
    if None in found:
        return {}
    (wx, cx), (wy, cy) = found
    n_templates = len(set(cx) | set(cy))
    if n_templates < 2:
        return {}
    is_x = np.r_[np.ones(len(wx), bool), np.zeros(len(wy), bool)]
    try:
        r = crossed_fit(association, is_x, wx + wy, cx + cy, alternative=opts.alternative, level=opts.ci_level,
                        ddof=opts.ddof, rng=rng_for(opts.seed, test_name, fingerprint, "crossed"),
                        what=f"test {test_name!r}")
    except InvalidInput as e:
        return {"n_templates": n_templates, "crossed_scheme": f"not estimated: {str(e).split(': ', 1)[-1]}"}
    shares = r.shares
    return {
        "crossed_d": r.d, "crossed_ci_low": r.ci_low, "crossed_ci_high": r.ci_high, "crossed_p": r.p,
        "crossed_method": r.method, "crossed_df": r.df, "crossed_scheme": r.scheme, "n_templates": r.n_templates,
        "var_share_words": shares["words"], "var_share_templates": shares["templates"],
        "var_share_group_template": shares["group_template"], "var_share_residual": shares["residual"],
        "crossed": r,
    }
