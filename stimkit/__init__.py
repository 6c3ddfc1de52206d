"""stimkit: stimuli, embeddings and association tests (WEAT / SEAT) in one DuckDB store."""

__version__ = "0.6.0"

# Defaults shared by the library and the CLI (here, so the CLI's start-up imports nothing heavy).
DEFAULT_BUDGET = 100_000        # permutation samples (and the exact/sampled switch)
DEFAULT_PAPER = "may-2019"      # catalog entries without `paper` are May et al.'s published tests

# The library's face, imported on first use so that `import stimkit` (and the CLI's
# start-up) stays light: stimkit.weat(...), stimkit.open(path), stimkit.Store.
_LAZY = {"weat": ("api", "weat"), "WeatResult": ("api", "WeatResult"), "open": ("api", "open"), "Store": ("api", "Store"),
         "score": ("api", "score")}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module 'stimkit' has no attribute {name!r}")


from .errors import InputError, Interrupted, StimkitError, StoreError, UsageError  # noqa: E402  (light: no imports)

__all__ = ["weat", "WeatResult", "open", "Store", "score", "StimkitError", "UsageError", "InputError", "StoreError",
           "Interrupted", "__version__"]


