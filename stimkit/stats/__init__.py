"""Statistics as pure functions over arrays: WEAT / SEAT (weat), permutation p-values with one
subset-p core (pvalues, sampler), intervals (bootstrap, intervals,
pivots), words and templates as random factors (crossed), WEFAT, template audits.

`stimkit.stats` is the face: the names most callers need, like scipy.stats."""

from .. import DEFAULT_BUDGET  # noqa: F401
from .bootstrap import bootstrap_d  # noqa: F401
from .pvalues import (ALTERNATIVES, EXACT_LIMIT, METHODS, PValue, all_subsets, check_exact, check_method,  # noqa: F401
                      clustered_p, exact_subset_sums, min_p, permutation_p, subset_p, subset_sum_chunks)
from .weat import (InvalidInput, association, check_associations, check_inputs, effect_size, group_ids,  # noqa: F401
                   shared_vectors, test_statistic, unit_rows)
