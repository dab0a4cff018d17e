"""Benchmark: error rates and runs of the verdict, adaptive plan against a fixed 10-per-side protocol.

Simulates A/A pairs (no change) and A/B pairs (a real change equal to the reported one) under
four noise shapes and relative noise of 2, 5, 10 and 20%, and runs on every pair both
``decide_adaptively`` with the default plan and ``decide`` on the first 10 runs a side.

Noise is multiplicative, ``value = exp(sigma * e + shift)`` with ``e`` of mean 0 and SD 1, so
values stay positive and sigma is the relative SD of the runs:

- normal: ``e ~ N(0, 1)``;
- heavy-tailed: Student t with 3 degrees of freedom, scaled to SD 1;
- bimodal: 80% of runs in a fast mode and 20% in a slow one 2.5 SD apart (plus a little noise);
- drifting: normal noise plus a random walk over the session (step 0.15 SD, so about 1 SD of
  drift over 40 runs), base and suspect interleaved in time as a rerun would run them.

The reported change and, for A/B pairs, the true shift are ``multiple`` x sigma on the log scale
in the worse direction (better = higher), for multiple 2 (the power target) and 4.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from triagebot.rules.floors import DEFAULT_FLOOR_PERCENT
from triagebot.verdict.decide import decide
from triagebot.verdict.sequential import LookSchedule, decide_adaptively

SIGMAS = (0.02, 0.05, 0.10, 0.20)
FIXED_RUNS = 10
# Headline change / larger stddev of the LKP reports in ../shared/corpus that print a stddev
# (14 of 26; the others have stddevs under 2%, so their ratios are at least change/2).
CORPUS_MULTIPLES = (3.1, 3.8, 4.0, 5.8, 6.5, 9.8, 10.4, 11.4, 11.7, 20.3, 21.1, 29.8, 30.6, 253.8)


@dataclass(frozen=True)
class Scenario:
    """Pairs whose report claims ``multiple`` x sigma; the true change is ``truth`` times that."""

    name: str
    multiples: tuple[float, ...]  # one is drawn per pair
    truth: float  # 0 = A/A, 1 = the report is right, 0.5 = the real change is half the report


SCENARIOS = (
    Scenario("A/A, reported 2σ", (2.0,), 0.0),
    Scenario("A/B, true = reported = 2σ", (2.0,), 1.0),
    Scenario("A/A, reported 4σ", (4.0,), 0.0),
    Scenario("A/B, true = reported = 4σ", (4.0,), 1.0),
    Scenario("A/B, true 2σ = half the reported 4σ", (4.0,), 0.5),
    Scenario("A/A, corpus-like report sizes", CORPUS_MULTIPLES, 0.0),
    Scenario("A/B, corpus-like, true = reported", CORPUS_MULTIPLES, 1.0),
)


def normal(rng: np.random.Generator, size: int) -> np.ndarray:
    return rng.standard_normal(size)


def heavy_tailed(rng: np.random.Generator, size: int) -> np.ndarray:
    # Variance of t(3) is 3.
    return rng.standard_t(3, size) / math.sqrt(3.0)


def bimodal(rng: np.random.Generator, size: int) -> np.ndarray:
    slow = (rng.random(size) < 0.2).astype(float)
    within = 0.1 * rng.standard_normal(size)
    # Modes 0 and 1 with P(1) = 0.2: mean 0.2, variance 0.16, plus 0.01 within a mode.
    return -((slow - 0.2) + within) / math.sqrt(0.17)


def drifting(rng: np.random.Generator, size: int) -> np.ndarray:
    # One session in time order: a random walk under the run-to-run noise.
    return rng.standard_normal(size) + np.cumsum(0.15 * rng.standard_normal(size))


# Noise, and whether a round runs base and suspect interleaved in time or base first.
SHAPES: dict[str, tuple[Callable[[np.random.Generator, int], np.ndarray], bool]] = {
    "normal": (normal, True), "heavy-t3": (heavy_tailed, True), "bimodal": (bimodal, True),
    "drifting": (drifting, True), "drifting, blocked": (drifting, False)}


@dataclass
class Tally:
    outcomes_adaptive: dict[str, int]
    outcomes_fixed: dict[str, int]
    runs: list[int]

    @classmethod
    def empty(cls) -> Tally:
        return cls(defaultdict(int), defaultdict(int), [])

    def add(self, other: Tally) -> None:
        for key, value in other.outcomes_adaptive.items():
            self.outcomes_adaptive[key] += value
        for key, value in other.outcomes_fixed.items():
            self.outcomes_fixed[key] += value
        self.runs.extend(other.runs)

    @property
    def trials(self) -> int:
        return len(self.runs)

    def rate(self, outcome: str, fixed: bool = False) -> float:
        counts = self.outcomes_fixed if fixed else self.outcomes_adaptive
        return counts[outcome] / self.trials


class Session:
    """One machine session in time order; rounds take base and suspect runs from it."""

    def __init__(self, noise: np.ndarray, sigma: float, shift: float, interleaved: bool) -> None:
        self.noise, self.sigma, self.shift, self.interleaved = noise, sigma, shift, interleaved
        self.clock = 0

    def run_round(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        slots = self.noise[self.clock:self.clock + 2 * size]
        self.clock += 2 * size
        # Interleaved: base, suspect, base, ...; blocked: all base runs, then all suspect runs.
        base, suspect = (slots[0::2], slots[1::2]) if self.interleaved else (slots[:size], slots[size:])
        return np.exp(self.sigma * base), np.exp(self.sigma * suspect + self.shift)


def simulate(scenario: Scenario, shape: str, sigma: float, trials: int,
             rng: np.random.Generator, plan: LookSchedule) -> Tally:
    noise_of, interleaved = SHAPES[shape]
    tally = Tally.empty()
    for _ in range(trials):
        multiple = float(rng.choice(scenario.multiples))
        reported = math.expm1(-multiple * sigma) * 100.0
        shift = -scenario.truth * multiple * sigma
        noise = noise_of(rng, 2 * max(plan.budget, FIXED_RUNS))
        adaptive = decide_adaptively(Session(noise, sigma, shift, interleaved).run_round, "higher",
                                     reported, DEFAULT_FLOOR_PERCENT, plan)
        # The fixed protocol: one round of 10 a side from the same session.
        base, suspect = Session(noise, sigma, shift, interleaved).run_round(FIXED_RUNS)
        fixed = decide(base, suspect, "higher", reported, DEFAULT_FLOOR_PERCENT)
        tally.outcomes_adaptive[str(adaptive.verdict.outcome)] += 1
        tally.outcomes_fixed[str(fixed.outcome)] += 1
        tally.runs.append(adaptive.runs_per_side)
    return tally


def percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=300, help="pairs per cell (default 300)")
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--rounds", help="plan rounds, e.g. 6,4,5,5 (default: LookSchedule())")
    parser.add_argument("--look-alpha", help="alpha per look, e.g. 0.0044,0.002,0.002,0.0016")
    parser.add_argument("--same-fraction", type=float, help="share of the report a no-repro rules out")
    args = parser.parse_args()
    options: dict[str, object] = {}
    if args.rounds:
        options["rounds"] = tuple(int(size) for size in args.rounds.split(","))
    if args.look_alpha:
        options["look_alpha"] = tuple(float(alpha) for alpha in args.look_alpha.split(","))
    if args.same_fraction:
        options["same_fraction"] = args.same_fraction
    plan = LookSchedule(**options)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    cells: dict[tuple[str, str, float], Tally] = {}
    for scenario in SCENARIOS:
        for shape in SHAPES:
            for sigma in SIGMAS:
                cells[(scenario.name, shape, sigma)] = simulate(scenario, shape, sigma, args.trials,
                                                                rng, plan)
    seconds = time.perf_counter() - started

    alphas = ", ".join(f"{alpha:.4g}" for alpha in plan.look_alphas())
    confidences = ", ".join(f"{level:.4g}" for level in plan.look_confidences())
    print(f"plan: looks at {plan.looks} runs a side; alpha per look {alphas} (sum {sum(plan.look_alphas()):.4g}); "
          f"CI level per look {confidences}; no-repro rules out {plan.same_fraction:g} x the report; "
          f"floor {DEFAULT_FLOOR_PERCENT}%")
    print(f"fixed protocol: {FIXED_RUNS}+{FIXED_RUNS} runs, decide() defaults (alpha 0.01, 95% CI, "
          f"half the report)")
    print(f"{args.trials} pairs per cell (5 shapes x 4 sigmas per row), {len(cells) * args.trials} pairs, "
          f"seed {args.seed}, {seconds:.0f} s\n")

    def group(name: str, shape: str | None = None, sigma: float | None = None) -> Tally:
        total = Tally.empty()
        for (cell_name, cell_shape, cell_sigma), tally in cells.items():
            if cell_name == name and shape in (None, cell_shape) and sigma in (None, cell_sigma):
                total.add(tally)
        return total

    def rates(tally: Tally, fixed: bool) -> str:
        return " / ".join(percent(tally.rate(outcome, fixed))
                          for outcome in ("confirmed", "not-reproduced", "inconclusive"))

    print("| pairs | adaptive: confirmed / not-reproduced / inconclusive | fixed 10+10: same | "
          "runs/side adaptive: median, mean |")
    print("|---|---|---|---|")
    for scenario in SCENARIOS:
        tally = group(scenario.name)
        print(f"| {scenario.name} | {rates(tally, False)} | {rates(tally, True)} | "
              f"{np.median(tally.runs):g}, {np.mean(tally.runs):.1f} |")

    print("\nTargets")
    print("| target | adaptive | fixed 10+10 |")
    print("|---|---|---|")
    aa = [group(scenario.name) for scenario in SCENARIOS if scenario.truth == 0]
    ab = [group(scenario.name) for scenario in SCENARIOS if scenario.truth == 1]
    for label, tallies, outcome in (("false confirm on A/A (≤ 1%), worst row", aa, "confirmed"),
                                    ("false no-repro, true = reported (≤ 5%), worst row", ab,
                                     "not-reproduced")):
        print(f"| {label} | {percent(max(t.rate(outcome) for t in tallies))} | "
              f"{percent(max(t.rate(outcome, True) for t in tallies))} |")
    power = group(SCENARIOS[1].name)
    print(f"| power at 2σ (≥ 95%) | {percent(power.rate('confirmed'))} | "
          f"{percent(power.rate('confirmed', True))} |")
    for label, names in (("median runs/side, 2σ and 4σ rows", [s.name for s in SCENARIOS[:4]]),
                         ("median runs/side, corpus-like rows", [s.name for s in SCENARIOS[5:]]),
                         ("median runs/side, all rows", [s.name for s in SCENARIOS])):
        runs = [run for name in names for run in group(name).runs]
        print(f"| {label} (≤ 6) | {np.median(runs):g} (mean {np.mean(runs):.1f}) | 10 |")

    print("\nBy shape, all rows of a kind: A/A confirmed (false), A/B true = reported not-reproduced "
          "(false), adaptive / fixed")
    print("| shape | A/A false confirm | A/B false no-repro | median runs/side |")
    print("|---|---|---|---|")
    for shape in SHAPES:
        null, real = Tally.empty(), Tally.empty()
        for scenario in SCENARIOS:
            if scenario.truth == 0:
                null.add(group(scenario.name, shape))
            elif scenario.truth == 1:
                real.add(group(scenario.name, shape))
        print(f"| {shape} | {percent(null.rate('confirmed'))} / {percent(null.rate('confirmed', True))} "
              f"| {percent(real.rate('not-reproduced'))} / {percent(real.rate('not-reproduced', True))} "
              f"| {np.median(null.runs + real.runs):g} |")

    print("\nPer cell at 2σ, adaptive / fixed: A/A confirmed, A/A not-reproduced, A/B confirmed (power), "
          "A/B not-reproduced; median runs A/A, A/B")
    print("| shape | σ | A/A confirmed | A/A not-reproduced | A/B power | A/B not-reproduced | runs A/A, A/B |")
    print("|---|---|---|---|---|---|---|")
    for shape in SHAPES:
        for sigma in SIGMAS:
            null, real = group(SCENARIOS[0].name, shape, sigma), group(SCENARIOS[1].name, shape, sigma)
            print(f"| {shape} | {sigma * 100:g}% "
                  f"| {percent(null.rate('confirmed'))} / {percent(null.rate('confirmed', True))} "
                  f"| {percent(null.rate('not-reproduced'))} / {percent(null.rate('not-reproduced', True))} "
                  f"| {percent(real.rate('confirmed'))} / {percent(real.rate('confirmed', True))} "
                  f"| {percent(real.rate('not-reproduced'))} / {percent(real.rate('not-reproduced', True))} "
                  f"| {np.median(null.runs):g}, {np.median(real.runs):g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
