"""Statistics as pure functions over arrays: WEAT / SEAT, p-values, intervals, meta-analysis, the sampler."""

from .core import *  # noqa: F401,F403
from .core import DEFAULT_BUDGET  # noqa: F401
