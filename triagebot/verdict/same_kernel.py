"""Verdict stage: a run whose base and suspect ran on the same kernel (an A/A run) is no verdict.

A host that cannot switch kernels runs both sides on its running kernel. Such a run measures
the benchmark's noise on that host and shows that the plan runs; it is never evidence about a
commit, so whatever the statistics would have said (often "not-reproduced": two samples of one
kernel do not differ) it ends in its own outcome, `a-a-only`, with the noise it measured. Stored
runs written before this outcome existed (a verdict with `host_can_switch_kernel: false`) read
as `a-a-only` too. Pure functions on run and verdict JSON; no numpy, no scipy.
"""
from __future__ import annotations

import math
import statistics
from typing import Any

from triagebot.verdict.median import median
from triagebot.verdict.outcome import Outcome, confidence_text, signed_percent

A_A_ONLY = str(Outcome.A_A_ONLY)
# What an A/A run's two sides are called wherever they are shown (the plot, `triage show`): the
# same kernel twice, never the commits' names, which were not booted.
SAME_KERNEL_SIDES = {"base": "A (running kernel)", "suspect": "A again"}
# What a statistics verdict keeps in an A/A one: the numbers, never its outcome or its reason.
_KEPT = ("measured_change_percent", "ci_low", "ci_high", "confidence", "p_value", "p_mann_whitney",
         "p_kolmogorov_smirnov", "alpha", "runs_base", "runs_suspect", "better",
         "reported_change_percent", "floor_percent", "scale", "looks")


def spread_percent(values: list[float]) -> float | None:
    """Run-to-run spread: the samples' standard deviation as a share of their mean (None if unknown)."""
    finite = [value for value in values if math.isfinite(value)]
    if len(finite) < 2:
        return None
    mean = statistics.fmean(finite)
    return statistics.stdev(finite) / abs(mean) * 100 if mean else None


def is_same_kernel(run: dict[str, Any]) -> bool:
    """Whether a stored run took both sides on one kernel (the host could not switch kernels)."""
    verdict = run.get("verdict") or {}
    return run.get("same_kernel") is True or verdict.get("host_can_switch_kernel") is False


def a_a_verdict(verdict: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The A/A outcome of a same-kernel run, from the statistics' verdict JSON and the run's samples.

    The reason says what was run and the noise measured, each figure named by its statistic and
    one a reader can check against the samples shown beside it: the two sides' medians (as
    `triage show` prints them) and their change first, then the statistics' shift (the median
    of all pairwise ratios, Hodges-Lehmann) with its interval, then the run-to-run spread."""
    samples = run.get("samples") or []
    values = {role: [sample["value"] for sample in samples if sample.get("role") == role
                     and math.isfinite(sample["value"])] for role in ("base", "suspect")}
    spread = spread_percent(values["base"] + values["suspect"])
    kept = {key: verdict[key] for key in _KEPT if key in verdict}
    change = verdict.get("measured_change_percent")
    low, high = verdict.get("ci_low"), verdict.get("ci_high")
    confidence = verdict.get("confidence")
    medians = {role: median(side) for role, side in values.items() if side}
    median_change = None
    if len(medians) == 2 and medians["base"]:
        median_change = (medians["suspect"] / medians["base"] - 1) * 100
    noise = []
    if median_change is not None:
        noise.append(f"medians {medians['base']:.6g} ({SAME_KERNEL_SIDES['base']}) and {medians['suspect']:.6g} "
                     f"({SAME_KERNEL_SIDES['suspect']}): {signed_percent(median_change)}")
    if change is not None:
        shift = f"median of the pairwise ratios {signed_percent(change)}"
        if low is not None and high is not None:
            level = f"{confidence_text(confidence)} " if isinstance(confidence, (int, float)) else ""
            shift += f" ({level}CI {signed_percent(low)} to {signed_percent(high)})"
        noise.append(shift)
    if spread is not None:
        noise.append(f"run-to-run spread ±{spread:.1f}% (standard deviation over the mean)")
    runs = f"{len(values['base'])}+{len(values['suspect'])} runs"
    reason = (f"base and suspect both ran on the running kernel of {run.get('host', 'the host')}, which cannot "
              f"switch kernels: an A/A run measures noise, not the commit; "
              + ("; ".join(noise) if noise else "no noise figure") + f" over {runs}")
    return kept | {"outcome": A_A_ONLY, "reason": reason, "host_can_switch_kernel": False,
                   "noise": {"change_percent": change, "ci_low": low, "ci_high": high,
                             "spread_percent": spread, "medians": medians or None,
                             "median_change_percent": median_change}}


def as_stored(run: dict[str, Any]) -> dict[str, Any]:
    """A stored run as it reads now: a same-kernel run whose verdict predates `a-a-only` gets it."""
    verdict = run.get("verdict")
    if verdict and is_same_kernel(run) and verdict.get("outcome") != A_A_ONLY:
        return run | {"same_kernel": True, "verdict": a_a_verdict(verdict, run)}
    return run


def run_outcome(run: dict[str, Any] | None) -> str | None:
    """What a stored run ended in: its verdict's outcome (`a-a-only` for a same-kernel run),
    `error` for a run that ended in error, None for no run."""
    if not run:
        return None
    verdict = as_stored(run).get("verdict")
    if verdict:
        return str(verdict.get("outcome"))
    return "error" if run.get("status") == "error" else None
