"""Verdict stage: two-sample tests and the confidence interval for the relative change."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats


@dataclass(frozen=True)
class ShiftEstimate:
    """Relative change of suspect against base, in percent, with its confidence interval."""

    change_percent: float
    ci_low_percent: float
    ci_high_percent: float
    confidence: float
    scale: str  # "ratio" (log scale, all samples positive) or "difference" (raw, over |base median|)


def mann_whitney_p(base: np.ndarray, suspect: np.ndarray, exact_limit: int = 50) -> float:
    """Two-sided Mann-Whitney U p-value; exact (conservative under ties) up to exact_limit a side."""
    pooled = np.concatenate([base, suspect])
    if np.ptp(pooled) == 0.0:
        # All runs identical: no rank information at all, the samples are indistinguishable.
        return 1.0
    small = len(base) <= exact_limit and len(suspect) <= exact_limit
    method = "exact" if small else "asymptotic"
    return float(scipy_stats.mannwhitneyu(base, suspect, method=method).pvalue)


def kolmogorov_smirnov_p(base: np.ndarray, suspect: np.ndarray) -> float:
    """Two-sided two-sample Kolmogorov-Smirnov p-value (scipy picks exact for small samples)."""
    pooled = np.concatenate([base, suspect])
    if np.ptp(pooled) == 0.0:
        # Identical empirical distributions: the KS distance is 0.
        return 1.0
    return float(scipy_stats.ks_2samp(base, suspect).pvalue)


def mann_whitney_null_cdf(size_a: int, size_b: int) -> np.ndarray:
    """P(U <= u) for u = 0..size_a*size_b under the no-ties null (Gaussian binomial coefficients)."""
    top = size_a * size_b
    counts = np.zeros(top + 1)
    counts[0] = 1.0
    # [a+b choose a]_q = prod_{i=1..a} (1 - q^(b+i)) / (1 - q^i), applied as polynomial steps.
    for index in range(1, size_a + 1):
        shift = size_b + index
        multiplied = counts.copy()
        multiplied[shift:] -= counts[: top + 1 - shift]
        # Dividing by (1 - q^index) is a running sum over each residue class modulo index.
        padded = np.zeros(-(-(top + 1) // index) * index)
        padded[: top + 1] = multiplied
        counts = np.cumsum(padded.reshape(-1, index), axis=0).ravel()[: top + 1]
    return np.cumsum(counts) / counts.sum()


def rank_depth(size_a: int, size_b: int, confidence: float, exact_limit: int = 50) -> int:
    """Order-statistic depth k: the CI is [D_(k), D_(ab+1-k)] of the pairwise differences; 0 = unbounded."""
    tail = (1.0 - confidence) / 2.0
    if size_a <= exact_limit and size_b <= exact_limit:
        cumulative = mann_whitney_null_cdf(size_a, size_b)
        # Largest k with P(U <= k-1) <= tail (a small tolerance absorbs float rounding).
        return int(np.searchsorted(cumulative, tail * (1.0 + 1e-9), side="right"))
    product = size_a * size_b
    spread = math.sqrt(product * (size_a + size_b + 1) / 12.0)
    z_value = scipy_stats.norm.ppf(1.0 - tail)
    return max(0, int(math.floor(product / 2.0 - z_value * spread)))


def relative_shift(base: np.ndarray, suspect: np.ndarray, confidence: float) -> ShiftEstimate:
    """Hodges-Lehmann change of suspect over base in percent, with the distribution-free CI.

    With all samples positive the shift is taken on log values, so the estimate is the median of
    all pairwise ratios suspect/base and the CI is exact for a multiplicative shift. Otherwise it
    is the median pairwise difference divided by |median(base)|. Raises ValueError when the base
    median is 0 and a relative change is undefined.
    """
    positive = bool(np.all(base > 0) and np.all(suspect > 0))
    if positive:
        left, right = np.log(base), np.log(suspect)
    else:
        base_median = float(np.median(base))
        if base_median == 0.0:
            raise ValueError("base median is 0, so a relative change is undefined")
        left, right = base / abs(base_median), suspect / abs(base_median)
    differences = np.sort(np.subtract.outer(right, left).ravel())
    center = float(np.median(differences))
    depth = rank_depth(len(base), len(suspect), confidence)
    if depth == 0:
        low, high = -math.inf, math.inf
    else:
        low, high = float(differences[depth - 1]), float(differences[len(differences) - depth])

    def to_percent(value: float) -> float:
        # An unbounded side stays infinite; finite log shifts become ratios minus one.
        if not math.isfinite(value):
            return value
        return math.expm1(value) * 100.0 if positive else value * 100.0

    return ShiftEstimate(
        change_percent=to_percent(center),
        ci_low_percent=to_percent(low),
        ci_high_percent=to_percent(high),
        confidence=confidence,
        scale="ratio" if positive else "difference",
    )


def format_p_value(p_value: float) -> str:
    """'p<0.001' for tiny p-values, else two significant figures, e.g. 'p=0.0079'."""
    if p_value < 0.001:
        return "p<0.001"
    return f"p={p_value:.2g}"
