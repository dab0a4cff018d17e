"""Verdict stage: the decision rules shared by every verdict, on a change already measured.

`decide.py` applies them to base and suspect samples (rank statistics), `summary.py` to summary
statistics a person posted (mean, spread and run count a side). Nothing here imports numpy or
scipy, so the parse stage may use these rules on a reply's numbers without their import cost.
"""
from __future__ import annotations

import math
from enum import StrEnum

DEFAULT_ALPHA = 0.01  # threshold for "different", on the Bonferroni-corrected smaller p-value
DEFAULT_CONFIDENCE = 0.95  # level of the interval reported and used for the no-repro test
DEFAULT_SAME_FRACTION = 0.5  # a no-repro must rule out this share of the reported effect
MINUS = "\u2212"  # reasons print a real minus sign, as reports and developers write them


class Outcome(StrEnum):
    """What the verdict says; compares equal to its string value."""

    CONFIRMED = "confirmed"
    NOT_REPRODUCED = "not-reproduced"
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"
    # Base and suspect ran on one kernel (the host cannot switch kernels): noise, never a verdict
    # on a commit (same_kernel.py). The statistics never return it; a same-kernel run is given it.
    A_A_ONLY = "a-a-only"


def classify(different: bool, toward: float, toward_low: float, toward_high: float,
             floor_percent: float, same_bound: float) -> tuple[Outcome, str]:
    """The decision proper, on the change measured in the claimed direction (positive = as claimed).

    Returns the outcome and a short code for the reason.
    """
    # A significant shift, wholly on the claimed side of 0 and at least the floor: reproduced.
    if different and toward_low > 0 and toward >= floor_percent:
        return Outcome.CONFIRMED, "confirmed"
    # The interval rules out a change as large as the bound in the claimed direction.
    if toward_high < same_bound:
        if different and toward_high < 0:
            # Significant, but the other way round: never a confirmation of the report.
            return Outcome.NOT_REPRODUCED, "opposite"
        if different and 0 < toward < floor_percent:
            # Real but smaller than the floor: not a regression worth a report.
            return Outcome.NOT_REPRODUCED, "under-floor"
        return Outcome.NOT_REPRODUCED, "same"
    # Significant in the claimed direction but under the floor; the interval reaches the bound.
    if different and 0 < toward < floor_percent:
        return Outcome.INCONCLUSIVE, "under-floor-wide"
    # KS sees the distributions differ, but the shift's interval straddles 0 (spread or shape).
    if different:
        return Outcome.INCONCLUSIVE, "shape"
    # Not different, and the interval is too wide to rule the claimed change out.
    return Outcome.INCONCLUSIVE, "wide"


def same_bound(reported: float | None, floor_percent: float, same_fraction: float) -> float:
    if reported is None or not math.isfinite(reported):
        return floor_percent
    return max(floor_percent, same_fraction * abs(reported))


def claimed_sign(reported: float | None, better: str) -> float:
    """+1 when the claim is an increase of the metric, -1 for a decrease."""
    if reported:
        return 1.0 if reported > 0 else -1.0
    # No report (or a claimed 0%): the question is whether the suspect is worse.
    return -1.0 if better == "higher" else 1.0


def confidence_text(level: float) -> str:
    """An interval's level, in ONE precision wherever a CI is shown: one decimal, a whole number
    without it (0.95 -> "95%", 0.991667 -> "99.2%"), more decimals only where one would round up to
    100 (0.9996 -> "99.96%")."""
    percent = level * 100.0
    digits = 1
    while digits < 6 and round(percent, digits) >= 100.0 > percent:
        digits += 1
    text = f"{percent:.{digits}f}".rstrip("0").rstrip(".")
    return f"{text}%"


def signed_percent(value: float) -> str:
    """'+1.2%', '−28.3%' (real minus sign), 'unbounded' for an infinite side."""
    if not math.isfinite(value):
        return "unbounded"
    text = f"{value:+.1f}%"
    if text in ("-0.0%", "+0.0%"):
        text = "0.0%"
    return text.replace("-", MINUS)
