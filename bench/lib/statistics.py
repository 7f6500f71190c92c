"""The statistics every benchmark reports."""

import math
from collections.abc import Sequence


def percentile(ordered: Sequence[float], quantile: float) -> float:
    """The nearest-rank ``quantile`` (0 to 1) of ``ordered`` (sorted ascending); NaN when empty."""
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(quantile * len(ordered)) - 1)]
