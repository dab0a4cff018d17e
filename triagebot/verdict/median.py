"""Verdict stage: the median of a side's samples, as `triage show` prints it and the plot draws it."""
from __future__ import annotations

import statistics
from collections.abc import Iterable


def median(values: Iterable[float]) -> float:
    """The true median: of an even number of samples, the mean of the two middle ones (not the
    upper one). ValueError for no samples."""
    values = list(values)
    if not values:
        raise ValueError("the median of no samples")
    return float(statistics.median(values))
