"""Verdict stage: decide from summary statistics (mean, standard deviation, runs) on each side.

A reply that reruns the benchmark posts "before: 2341 events/s (mean of 5 runs, σ 41)": no
samples, only their summary. The samples verdict (decide.py: rank tests and a Hodges-Lehmann
interval) cannot run on that, so this module gives the summary analogue of each of its parts,
and then applies the very same rules (outcome.classify):

- "Different" is Welch's unequal-variance t-test, two-sided, ``p < alpha`` (0.01). It is what
  ``scipy.stats.ttest_ind_from_stats(..., equal_var=False)`` computes; the test suite checks the
  two agree. It is computed here with the t distribution written out (the regularised
  incomplete beta function by its continued fraction), so the parse stage may call it without
  importing scipy, whose import costs more than parsing a thousand messages.
- The change is the ratio of means, suspect over base, with a 95% interval by the delta method
  on log means: ``log(m2/m1)`` has variance ``cv1²/n1 + cv2²/n2`` (cv = sd/mean), with
  Welch-Satterthwaite degrees of freedom for those two terms, and the interval is
  ``exp(log ratio ± t·se)``. Chosen over Fieller's interval because it is always finite and
  positive (Fieller's is unbounded when the base mean is not clearly above 0, which no
  benchmark mean is in practice, and for the small coefficients of variation benchmarks have
  the two agree to a fraction of a percent), and because it is an interval on the ratio
  scale, where the samples verdict takes its change too.
- Too few runs (under 2 a side), no spread, or a mean that is not positive cannot be tested:
  ``inconclusive``, saying why.

The outcome then follows outcome.classify with the reported change and the metric's floor,
exactly as for reruns: confirmed needs a significant change wholly on the reported side and at
least the floor; not-reproduced needs the interval to rule out half the reported change (or the
floor); the opposite direction never confirms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from triagebot.verdict.outcome import (
    DEFAULT_ALPHA,
    DEFAULT_CONFIDENCE,
    DEFAULT_SAME_FRACTION,
    Outcome,
    claimed_sign,
    classify,
    same_bound,
    signed_percent,
)

MINIMUM_RUNS = 2  # a side; a standard deviation needs two runs
_CONTINUED_FRACTION_STEPS = 300
_EPSILON = 1e-15
_TINY = 1e-300


@dataclass(frozen=True)
class Side:
    """One side's summary: mean, sample standard deviation and number of runs."""

    mean: float
    stddev: float | None
    runs: int | None


@dataclass(frozen=True)
class WelchTest:
    statistic: float  # t, suspect minus base
    degrees_of_freedom: float
    p_value: float  # two-sided


@dataclass(frozen=True)
class RatioInterval:
    change_percent: float  # (suspect mean / base mean - 1) * 100
    ci_low_percent: float
    ci_high_percent: float
    confidence: float
    degrees_of_freedom: float


@dataclass(frozen=True)
class SummaryVerdict:
    """The decision on two summaries, with the statistics behind it (None where not computed)."""

    outcome: Outcome
    why: str  # outcome.classify's reason code, or what made the test impossible
    change_percent: float | None
    ci_low_percent: float | None
    ci_high_percent: float | None
    p_value: float | None
    confidence: float
    reported_change_percent: float | None
    floor_percent: float
    same_bound_percent: float


# --- the t distribution, without scipy ---------------------------------------------------------

def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    result = d
    for step in range(1, _CONTINUED_FRACTION_STEPS + 1):
        twice = 2 * step
        even = step * (b - step) * x / ((qam + twice) * (a + twice))
        d = 1.0 + even * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + even / c
        c = c if abs(c) > _TINY else _TINY
        result *= d * c
        odd = -(a + step) * (qab + step) * x / ((a + twice) * (qap + twice))
        d = 1.0 + odd * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + odd / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        result *= delta
        if abs(delta - 1.0) < _EPSILON:
            break
    return result


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(log_front)
    # The fraction converges fast on one side of the mean of the beta distribution; use the
    # symmetry I_x(a, b) = 1 - I_(1-x)(b, a) on the other.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(statistic: float, degrees_of_freedom: float) -> float:
    """P(|T| >= |t|) for Student's t with the given (real, positive) degrees of freedom."""
    if math.isinf(statistic):
        return 0.0
    df = degrees_of_freedom
    return regularized_beta(df / 2.0, 0.5, df / (df + statistic * statistic))


def t_quantile(probability: float, degrees_of_freedom: float) -> float:
    """The upper quantile t with P(T <= t) = probability, for probability in (0.5, 1)."""
    tail = 2.0 * (1.0 - probability)  # the two-sided p-value that t must have
    low, high = 0.0, 1.0
    while t_two_sided_p(high, degrees_of_freedom) > tail:
        high *= 2.0
    for _ in range(200):  # bisection: the p-value falls steadily as t grows
        middle = (low + high) / 2.0
        if t_two_sided_p(middle, degrees_of_freedom) > tail:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2.0


# --- the two statistics ------------------------------------------------------------------------

def _satterthwaite(first: float, second: float, runs_first: int, runs_second: int) -> float:
    """Welch-Satterthwaite degrees of freedom for the sum of two variance terms."""
    denominator = first * first / (runs_first - 1) + second * second / (runs_second - 1)
    if denominator == 0.0:
        return float(runs_first + runs_second - 2)
    return (first + second) ** 2 / denominator


def welch_test(base: Side, suspect: Side) -> WelchTest:
    """Welch's two-sided t-test of suspect against base from their summaries (n >= 2, sd > 0)."""
    if base.stddev is None or suspect.stddev is None or base.runs is None or suspect.runs is None:
        raise ValueError("a Welch test needs a standard deviation and a run count on each side")
    first = base.stddev ** 2 / base.runs
    second = suspect.stddev ** 2 / suspect.runs
    error = math.sqrt(first + second)
    if error == 0.0:
        raise ValueError("no spread on either side")
    statistic = (suspect.mean - base.mean) / error
    df = _satterthwaite(first, second, base.runs, suspect.runs)
    return WelchTest(statistic, df, t_two_sided_p(statistic, df))


def ratio_interval(base: Side, suspect: Side, confidence: float = DEFAULT_CONFIDENCE) -> RatioInterval:
    """The ratio of means as a percent change with its delta-method interval on log means."""
    if base.stddev is None or suspect.stddev is None or base.runs is None or suspect.runs is None:
        raise ValueError("an interval needs a standard deviation and a run count on each side")
    if base.mean <= 0 or suspect.mean <= 0:
        raise ValueError("a ratio of means needs both means positive")
    first = (base.stddev / base.mean) ** 2 / base.runs
    second = (suspect.stddev / suspect.mean) ** 2 / suspect.runs
    df = _satterthwaite(first, second, base.runs, suspect.runs)
    log_ratio = math.log(suspect.mean / base.mean)
    half = t_quantile(0.5 + confidence / 2.0, df) * math.sqrt(first + second)
    return RatioInterval(math.expm1(log_ratio) * 100.0, math.expm1(log_ratio - half) * 100.0,
                         math.expm1(log_ratio + half) * 100.0, confidence, df)


def _untestable(base: Side, suspect: Side) -> str | None:
    """Why two summaries cannot be tested, or None."""
    for side in (base, suspect):
        if side.runs is None:
            return "no run count"
        if side.runs < MINIMUM_RUNS:
            return "too few runs"
        if side.stddev is None:
            return "no spread"
        if side.mean <= 0:
            return "a mean that is not positive"
    if base.stddev == 0 and suspect.stddev == 0:
        return "no spread"
    return None


def decide_summaries(base: Side, suspect: Side, better: str | None, reported_change_percent: float | None,
                     floor_percent: float, *, alpha: float = DEFAULT_ALPHA,
                     confidence: float = DEFAULT_CONFIDENCE,
                     same_fraction: float = DEFAULT_SAME_FRACTION) -> SummaryVerdict:
    """Decide whether suspect's summary reproduces the reported change against base's.

    ``better`` is "higher", "lower" or None (not known from the metric). With no reported change
    the claim tested is the verdict's default, "the suspect is worse" by the metric's good
    direction, ruled out down to the floor; with neither a reported change nor a known good
    direction there is no claim to test, and the outcome is inconclusive whatever the numbers.
    """
    reported = reported_change_percent
    bound = same_bound(reported, floor_percent, same_fraction)
    common: dict[str, Any] = dict(confidence=confidence, reported_change_percent=reported,
                                  floor_percent=floor_percent, same_bound_percent=bound)
    problem = _untestable(base, suspect)
    if problem is not None:
        # No test without runs and spread: more runs (or their spread) could settle it.
        return SummaryVerdict(Outcome.INCONCLUSIVE, problem, _plain_change(base, suspect), None, None, None,
                              **common)
    test = welch_test(base, suspect)
    interval = ratio_interval(base, suspect, confidence)
    measured: dict[str, Any] = dict(change_percent=interval.change_percent, ci_low_percent=interval.ci_low_percent,
                                    ci_high_percent=interval.ci_high_percent, p_value=test.p_value)
    if reported is None and better is None:
        # Which way would be the regression is unknown: a difference, or none, is all one can say.
        return SummaryVerdict(Outcome.INCONCLUSIVE, "no claim", **measured, **common)
    claimed = claimed_sign(reported, better or "higher")
    toward = claimed * interval.change_percent
    toward_low, toward_high = sorted((claimed * interval.ci_low_percent, claimed * interval.ci_high_percent))
    outcome, why = classify(test.p_value < alpha, toward, toward_low, toward_high, floor_percent, bound)
    return SummaryVerdict(outcome, why, **measured, **common)


def _plain_change(base: Side, suspect: Side) -> float | None:
    """The change of means in percent, when it is defined (shown even when it cannot be tested)."""
    if base.mean <= 0:
        return None
    return (suspect.mean / base.mean - 1.0) * 100.0


def format_p(p_value: float) -> str:
    """As the samples verdict prints p-values: 'p<0.001', else two significant figures."""
    return "p<0.001" if p_value < 0.001 else f"p={p_value:.2g}"


def describe(verdict: SummaryVerdict) -> str:
    """'−0.8% [−3.2%, +1.7%], Welch p=0.47', or the plain change when no test could be made."""
    if verdict.change_percent is None:
        return "no change computable"
    change = signed_percent(verdict.change_percent)
    if verdict.p_value is None or verdict.ci_low_percent is None or verdict.ci_high_percent is None:
        return change
    return (f"{change} [{signed_percent(verdict.ci_low_percent)}, {signed_percent(verdict.ci_high_percent)}], "
            f"Welch {format_p(verdict.p_value)}")
