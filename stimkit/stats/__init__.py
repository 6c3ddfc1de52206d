"""Statistics as pure functions over arrays: WEAT / SEAT (weat), permutation p-values with one
subset-p core (pvalues, sampler), intervals (bootstrap, intervals,
pivots), words and templates as random factors (crossed), WEFAT, template audits.

`stimkit.stats` is the face: the names most callers need, like scipy.stats."""

from .. import DEFAULT_BUDGET  # noqa: F401

# The face's names load their module (and numpy) on first use, so that a light module of
# this package (decision: the significance rule a read command applies) costs no numpy.
_FACE = {
    "bootstrap": ("bootstrap_d",),
    "pvalues": ("ALTERNATIVES", "EXACT_LIMIT", "METHODS", "PValue", "all_subsets", "check_exact", "check_method",
                "clustered_p", "exact_subset_sums", "min_p", "permutation_p", "subset_p", "subset_sum_chunks"),
    "weat": ("InvalidInput", "association", "check_associations", "check_inputs", "effect_size", "group_ids",
             "shared_vectors", "test_statistic", "unit_rows"),
}
_WHERE = {name: module for module, names in _FACE.items() for name in names}
__all__ = ["DEFAULT_BUDGET", *_WHERE]


def __getattr__(name: str):
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
