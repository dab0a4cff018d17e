"""Verdict stage: adaptive repeats, deciding after each round of runs with the looks accounted for.

Each look is an ordinary ``decide`` on all runs so far, at a per-look alpha and interval level
fixed in advance by the plan (Bonferroni across looks), so the error rates hold however many
looks are taken:

- false confirm: a confirmation needs ``p_k < alpha_k`` at some look k, so with no real change
  its probability is at most ``sum(alpha_k) = plan.alpha`` = 0.01 (two-sided; a confirmation
  also needs the claimed direction, so about half of that);
- false no-repro: a no-repro needs the look's interval to exclude ``same_bound`` (half the
  report) on the claimed side; for a true change of at least that size the rank interval
  misses it on that side with probability at most ``(1 - confidence_k) / 2``, so over all looks
  at most ``plan.no_repro_error`` = 5% (exact for a shift on the log scale of iid runs).

The first look gets only the alpha it can use: 6+6 runs can give no p below 2 x 2/924 = 0.0043,
so it gets 0.0044 (a confirmation there needs complete separation); a first look of 5+5 could
never reach p < 0.01 (0.016 is its floor) and would get none. The later looks share the rest.

``run_round`` must take base and suspect runs interleaved (or in random order) in time: with
all base runs first, machine drift between them reads as a change.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from triagebot.verdict.decide import DEFAULT_ALPHA, DEFAULT_SAME_FRACTION, Outcome, Verdict, decide, smallest_p_value

RunRound = Callable[[int], tuple[Sequence[float], Sequence[float]]]


@dataclass(frozen=True)
class LookSchedule:
    """The budget and error rates of one adaptive run; the defaults are the benchmarked design."""

    rounds: tuple[int, ...] = (6, 4, 5, 5)  # runs a side added per round: looks at 6, 10, 15, 20
    alpha: float = DEFAULT_ALPHA  # total two-sided "different" rate over all looks
    no_repro_error: float = 0.05  # total rate of a no-repro when the reported change is real
    same_fraction: float = DEFAULT_SAME_FRACTION
    look_alpha: tuple[float, ...] = ()  # alpha per look, summing to alpha; () = look_alphas() rule

    def __post_init__(self) -> None:
        if not self.rounds or any(size < 1 for size in self.rounds):
            raise ValueError(f"rounds must be positive run counts, not {self.rounds!r}")
        if self.look_alpha and (len(self.look_alpha) != len(self.rounds)
                                or sum(self.look_alpha) > self.alpha * (1 + 1e-9)
                                or min(self.look_alpha) < 0):
            raise ValueError(f"look_alpha needs one alpha >= 0 per round, summing to at most "
                             f"{self.alpha}")
        if not 0 < self.alpha < 1 or not 0 < self.no_repro_error < 1:
            raise ValueError("alpha and no_repro_error must be between 0 and 1")

    @property
    def looks(self) -> tuple[int, ...]:
        """Cumulative runs per side at each look."""
        totals, running = [], 0
        for size in self.rounds:
            running += size
            totals.append(running)
        return tuple(totals)

    @property
    def budget(self) -> int:
        """The most runs per side this plan may use."""
        return self.looks[-1]

    def look_alphas(self) -> tuple[float, ...]:
        """Alpha per look, summing to at most ``alpha`` (Bonferroni across looks).

        Unless given, the first look gets just enough to confirm on complete separation (the
        smallest p its run counts can give, rounded up), when that is under half of alpha; a
        first look that cannot reach it gets none. Later looks share the rest equally.
        """
        if self.look_alpha:
            return self.look_alpha
        if len(self.rounds) == 1:
            return (self.alpha,)
        smallest = smallest_p_value(self.looks[0], self.looks[0])
        first = _round_up(smallest) if smallest < self.alpha / 2 else 0.0
        rest = (self.alpha - first) / (len(self.rounds) - 1)
        return (first,) + (rest,) * (len(self.rounds) - 1)

    def look_confidences(self) -> tuple[float, ...]:
        """Two-sided interval level per look; each one-sided tail is no_repro_error / looks."""
        tail = self.no_repro_error / len(self.rounds)
        return (1.0 - 2.0 * tail,) * len(self.rounds)


@dataclass(frozen=True)
class AdaptiveVerdict:
    """The final verdict, the runs it took, and the verdict at each look on the way."""

    verdict: Verdict
    runs_per_side: int
    looks: tuple[Verdict, ...]


def rounds_within(budget: int, plan: LookSchedule = LookSchedule()) -> tuple[int, ...]:
    """The plan's rounds, cut to at most `budget` runs a side (empty when even the first is over)."""
    rounds: list[int] = []
    for size in plan.rounds:
        if sum(rounds) + size > budget:
            break
        rounds.append(size)
    return tuple(rounds)


def decide_adaptively(run_round: RunRound, better: str, reported_change_percent: float | None,
                      floor_percent: float, plan: LookSchedule = LookSchedule()) -> AdaptiveVerdict:
    """Run rounds through ``run_round(n) -> (n base runs, n suspect runs)`` until a verdict.

    Stops at the first look that confirms, rules the report out, or finds broken samples; the
    last look's verdict (usually ``inconclusive``) stands when the budget is spent.
    """
    base: list[float] = []
    suspect: list[float] = []
    looks: list[Verdict] = []
    alphas, confidences = plan.look_alphas(), plan.look_confidences()
    for size, alpha, confidence in zip(plan.rounds, alphas, confidences, strict=True):
        new_base, new_suspect = run_round(size)
        base.extend(new_base)
        suspect.extend(new_suspect)
        # A look without alpha (alpha 0) can still rule the report out.
        verdict = decide(base, suspect, better, reported_change_percent, floor_percent,
                         alpha=alpha, confidence=confidence,
                         same_fraction=plan.same_fraction)
        looks.append(verdict)
        if verdict.outcome != Outcome.INCONCLUSIVE:
            break
    final = looks[-1]
    return AdaptiveVerdict(verdict=final, runs_per_side=max(final.runs_base, final.runs_suspect),
                           looks=tuple(looks))


def _round_up(value: float) -> float:
    """Up to two significant figures: 0.004329 -> 0.0044."""
    scale = 10.0 ** (math.floor(math.log10(value)) - 1)
    return math.ceil(value / scale) * scale
