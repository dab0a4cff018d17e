"""Verdict stage: decide confirmed / not-reproduced / inconclusive from base and suspect samples.

Statistics, in the order they are applied:

- A NaN or infinite run is an ``error`` (a failed run is not a measurement, and more runs of a
  broken benchmark won't help); so is a base median of 0 with non-positive values (no relative
  change exists). Fewer than 2 runs a side is ``inconclusive``: more runs can settle it.
- "Different" means ``p < alpha`` (0.01), where ``p`` is the smaller of the two-sided
  Mann-Whitney U and Kolmogorov-Smirnov p-values times 2 (Bonferroni for taking the smaller of
  two tests; without it the test would reject up to twice as often as its alpha says). So 5+5
  runs can never be different (their smallest p is 2 x 2/252 = 0.016); 6+6 can (0.0043).
- All runs identical: both p-values are 1 and the interval is [0, 0], a no-repro as soon as
  there are runs enough to bound the interval (4+4 at 95%).
- The change is the Hodges-Lehmann shift of suspect over base (median of all pairwise ratios
  when every value is positive) with its distribution-free rank confidence interval; the
  reason names it so ("Hodges-Lehmann shift −24.3%"), since it may differ from the change of
  the two medians shown beside it when the samples are skewed or bimodal.
- The "claimed direction" is the sign of the reported change, or the metric's worse direction
  when there is no report.
- ``confirmed``: different, the whole interval on the claimed side of 0, and the estimate at
  least the metric's floor.
- ``not-reproduced``: the interval rules out a change of ``same_bound`` in the claimed direction,
  where ``same_bound = max(floor, same_fraction * |reported|)`` (half the reported effect by
  default). This covers a tight interval around 0, a significant change under the floor, and
  a change in the opposite direction (which is never a confirmation).
- ``inconclusive`` otherwise: more runs would be needed.

The last four rules are outcome.classify, shared with summary.py (a decision from the mean,
spread and run count a person posted), so both verdicts decide alike.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from triagebot.verdict import stats
from triagebot.verdict.outcome import (
    DEFAULT_ALPHA,
    DEFAULT_CONFIDENCE,
    DEFAULT_SAME_FRACTION,
    Outcome,
    claimed_sign,
    classify,
    confidence_text,
    same_bound,
    signed_percent,
)

TESTS_COMBINED = 2  # Mann-Whitney U and Kolmogorov-Smirnov: the Bonferroni factor
MINIMUM_RUNS = 2  # per side; below this nothing can be compared


@dataclass(frozen=True)
class Verdict:
    """The decision on one base/suspect pair, with the evidence behind it."""

    outcome: Outcome
    reason: str  # one sentence a kernel developer can check against the numbers
    measured_change_percent: float | None  # signed change of suspect over base; None if not computed
    ci_low_percent: float | None  # may be -inf when too few runs bound the interval
    ci_high_percent: float | None  # may be +inf
    confidence: float
    p_value: float | None  # min(Mann-Whitney, KS) x 2, capped at 1
    p_mann_whitney: float | None
    p_kolmogorov_smirnov: float | None
    alpha: float
    runs_base: int
    runs_suspect: int
    better: str  # "higher" or "lower"
    reported_change_percent: float | None
    floor_percent: float
    same_bound_percent: float  # the change in the claimed direction a no-repro has to rule out
    scale: str | None  # "ratio" or "difference" (see stats.relative_shift)

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict; NaN and infinities become null, since JSON has neither."""
        def number(value: float | None) -> float | None:
            return value if value is not None and math.isfinite(value) else None

        return {
            "outcome": str(self.outcome),
            "measured_change_percent": number(self.measured_change_percent),
            "ci_low": number(self.ci_low_percent),
            "ci_high": number(self.ci_high_percent),
            "confidence": self.confidence,
            "p_value": number(self.p_value),
            "p_mann_whitney": number(self.p_mann_whitney),
            "p_kolmogorov_smirnov": number(self.p_kolmogorov_smirnov),
            "alpha": self.alpha,
            "runs_base": self.runs_base,
            "runs_suspect": self.runs_suspect,
            "better": self.better,
            "reported_change_percent": number(self.reported_change_percent),
            "floor_percent": self.floor_percent,
            "same_bound_percent": number(self.same_bound_percent),
            "scale": self.scale,
            "reason": self.reason,
        }


def decide(base: Sequence[float], suspect: Sequence[float], better: str,
           reported_change_percent: float | None, floor_percent: float, *,
           alpha: float = DEFAULT_ALPHA, confidence: float = DEFAULT_CONFIDENCE,
           same_fraction: float = DEFAULT_SAME_FRACTION) -> Verdict:
    """Decide whether the suspect samples reproduce the reported change against the base samples.

    ``better`` is the metric's good direction; ``reported_change_percent`` is the signed change
    the report claims (e.g. -28.3), or None; ``floor_percent`` is the smallest change that may
    confirm. Bad parameters raise ValueError; bad samples give an ``error`` verdict.
    """
    _check_parameters(better, floor_percent, alpha, confidence, same_fraction)
    base_values = np.asarray(base, dtype=float).ravel()
    suspect_values = np.asarray(suspect, dtype=float).ravel()
    reported = reported_change_percent
    bound = same_bound(reported, floor_percent, same_fraction)
    common: dict[str, Any] = dict(confidence=confidence, alpha=alpha, runs_base=len(base_values),
                  runs_suspect=len(suspect_values), better=better,
                  reported_change_percent=reported, floor_percent=floor_percent,
                  same_bound_percent=bound)

    problem = _sample_problem(base_values, suspect_values, reported)
    if problem is not None:
        outcome, reason = problem
        return Verdict(outcome=outcome, reason=reason, measured_change_percent=None,
                       ci_low_percent=None, ci_high_percent=None, p_value=None,
                       p_mann_whitney=None, p_kolmogorov_smirnov=None, scale=None, **common)
    try:
        shift = stats.relative_shift(base_values, suspect_values, confidence)
    except ValueError as error:
        # Base median 0 with non-positive values: no relative change can be stated.
        return Verdict(outcome=Outcome.ERROR, reason=f"{error} (runs {len(base_values)}+"
                       f"{len(suspect_values)})", measured_change_percent=None,
                       ci_low_percent=None, ci_high_percent=None, p_value=None,
                       p_mann_whitney=None, p_kolmogorov_smirnov=None, scale=None, **common)
    with warnings.catch_warnings():
        # scipy warns when ties force KS from exact to asymptotic; the p-value stays valid.
        warnings.simplefilter("ignore", RuntimeWarning)
        p_mann_whitney = stats.mann_whitney_p(base_values, suspect_values)
        p_kolmogorov_smirnov = stats.kolmogorov_smirnov_p(base_values, suspect_values)
    p_value = min(1.0, TESTS_COMBINED * min(p_mann_whitney, p_kolmogorov_smirnov))

    claimed = claimed_sign(reported, better)
    toward = claimed * shift.change_percent
    toward_low, toward_high = sorted((claimed * shift.ci_low_percent,
                                      claimed * shift.ci_high_percent))
    outcome, why = classify(p_value < alpha, toward, toward_low, toward_high, floor_percent, bound)
    reason = _reason(why, shift, p_value, alpha, better, reported, floor_percent, bound, claimed,
                     len(base_values), len(suspect_values))
    return Verdict(outcome=outcome, reason=reason, measured_change_percent=shift.change_percent,
                   ci_low_percent=shift.ci_low_percent, ci_high_percent=shift.ci_high_percent,
                   p_value=p_value, p_mann_whitney=p_mann_whitney,
                   p_kolmogorov_smirnov=p_kolmogorov_smirnov, scale=shift.scale, **common)


def _check_parameters(better: str, floor_percent: float, alpha: float, confidence: float,
                      same_fraction: float) -> None:
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', not {better!r}")
    if not (math.isfinite(floor_percent) and floor_percent >= 0):
        raise ValueError(f"floor_percent must be a finite number >= 0, not {floor_percent!r}")
    if not 0 <= alpha < 1:
        # 0 is allowed: a look of an adaptive plan that spends no alpha can still rule out.
        raise ValueError(f"alpha must be in [0, 1), not {alpha!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    if not 0 < same_fraction <= 1:
        raise ValueError(f"same_fraction must be in (0, 1], not {same_fraction!r}")


def _sample_problem(base: np.ndarray, suspect: np.ndarray,
                    reported: float | None) -> tuple[Outcome, str] | None:
    """Why the samples cannot be compared at all, or None."""
    for side, values in (("base", base), ("suspect", suspect)):
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            # A NaN or infinite run means the measurement broke; more runs of it won't help.
            return Outcome.ERROR, (f"{side} run {bad[0] + 1} of {len(values)} is "
                                   f"{values[bad[0]]}: a failed run is not a measurement")
    if reported is not None and not math.isfinite(reported):
        return Outcome.ERROR, f"the reported change is {reported}, not a number"
    if len(base) < MINIMUM_RUNS or len(suspect) < MINIMUM_RUNS:
        # Too few runs is not broken data: more runs can settle it.
        return Outcome.INCONCLUSIVE, (f"need at least {MINIMUM_RUNS} runs a side to compare, "
                                      f"got {len(base)}+{len(suspect)}")
    return None


def smallest_p_value(runs_base: int, runs_suspect: int) -> float:
    """The smallest combined p-value these run counts can give: complete separation, x2 tests."""
    return min(1.0, TESTS_COMBINED * 2.0 / math.comb(runs_base + runs_suspect, runs_base))


def _not_different(alpha: float, runs_base: int, runs_suspect: int) -> str:
    if alpha == 0:
        return "no significance test at this look"
    smallest = smallest_p_value(runs_base, runs_suspect)
    if smallest < alpha:
        return f"not different at {alpha:g}"
    return (f"not different at {alpha:g} (no {runs_base}+{runs_suspect} runs can be: "
            f"the smallest p is {smallest:.2g})")


def _reason(why: str, shift: stats.ShiftEstimate, p_value: float, alpha: float, better: str,
            reported: float | None, floor_percent: float, bound: float, claimed: float,
            runs_base: int, runs_suspect: int) -> str:
    change = shift.change_percent
    if change == 0:
        measured = "suspect is unchanged"
    else:
        worse = (change < 0) == (better == "higher")
        measured = f"suspect is {abs(change):.1f}% {'worse' if worse else 'better'}"
    level = confidence_text(shift.confidence)
    if math.isinf(shift.ci_low_percent) and math.isinf(shift.ci_high_percent):
        interval = "unbounded"  # too few runs for any rank interval at this level
    else:
        interval = (f"{signed_percent(shift.ci_low_percent)} to "
                    f"{signed_percent(shift.ci_high_percent)}")
    evidence = (f"{measured} (Hodges-Lehmann shift {signed_percent(change)}, {level} CI {interval}), "
                f"{stats.format_p_value(p_value)} over {runs_base}+{runs_suspect} runs")
    said = "no reported change" if reported is None else f"report said {signed_percent(reported)}"
    ruled_out = signed_percent(claimed * bound)
    explanations = {
        "confirmed": said + (" (measured under half of it)"
                             if reported and abs(change) < abs(reported) / 2 else ""),
        "opposite": f"the opposite direction, so not a confirmation; {said}",
        "under-floor": f"smaller than the {floor_percent:g}% floor and the CI rules out "
                       f"{ruled_out}; {said}",
        "same": f"the CI rules out {ruled_out}; {said}",
        "under-floor-wide": f"under the {floor_percent:g}% floor, but the CI does not rule out "
                            f"{ruled_out}; {said}; more runs needed",
        "shape": f"the distributions differ but the shift's CI spans 0; {said}; more runs needed",
        "wide": f"{_not_different(alpha, runs_base, runs_suspect)} and the CI does not rule "
                f"out {ruled_out}; {said}; more runs needed",
    }
    return f"{evidence}; {explanations[why]}"
