"""verdict.decide and verdict.sequential: each branch pinned with small hand-made samples."""
from __future__ import annotations

import itertools
import json
import math
import statistics

import numpy as np
import pytest
from scipy import stats as scipy_stats

from triagebot.verdict.decide import Outcome, classify, decide, signed_percent, smallest_p_value
from triagebot.verdict.sequential import LookSchedule, decide_adaptively

# Ten throughput runs around 3.05 and a suspect about 24% lower (the README's kind of numbers).
BASE = [3.10, 3.00, 3.05, 3.12, 2.98, 3.07, 3.02, 3.09, 3.01, 3.04]
SLOWER = [2.30, 2.32, 2.28, 2.35, 2.31, 2.29, 2.33, 2.30, 2.27, 2.34]


def hodges_lehmann_percent(base: list[float], suspect: list[float]) -> float:
    """Median of all pairwise suspect/base ratios, minus one: the estimate, computed by hand."""
    ratios = [math.log(s / b) for s, b in itertools.product(suspect, base)]
    return math.expm1(statistics.median(ratios)) * 100.0


def test_clear_regression_is_confirmed_with_the_numbers_behind_it() -> None:
    verdict = decide(BASE, SLOWER, "higher", -28.3, 1.5)
    assert verdict.outcome == Outcome.CONFIRMED == "confirmed"
    assert verdict.measured_change_percent == pytest.approx(hodges_lehmann_percent(BASE, SLOWER))
    assert verdict.measured_change_percent == pytest.approx(-24.3, abs=0.05)
    # Complete separation of 10+10 runs: the exact two-sided p is 2 / C(20, 10) for both tests.
    assert verdict.p_mann_whitney == pytest.approx(2 / math.comb(20, 10))
    assert verdict.p_value == pytest.approx(2 * 2 / math.comb(20, 10))
    assert verdict.ci_low_percent < verdict.measured_change_percent < verdict.ci_high_percent < 0
    assert (verdict.runs_base, verdict.runs_suspect) == (10, 10)
    assert verdict.reason == ("suspect is 24.3% worse (Hodges-Lehmann shift \u221224.3%, "
                              "95% CI \u221225.3% to \u221223.2%), p<0.001 over 10+10 runs; report said \u221228.3%")


def test_p_value_is_the_smaller_of_mann_whitney_and_ks_times_two() -> None:
    # Overlapping samples so neither test is at its floor.
    base = [10.0, 10.4, 9.8, 10.1, 10.3, 9.9, 10.2, 10.05]
    suspect = [9.7, 10.0, 9.6, 9.95, 9.85, 9.5, 10.1, 9.75]
    verdict = decide(base, suspect, "higher", -3.0, 1.5)
    mann_whitney = scipy_stats.mannwhitneyu(base, suspect, method="exact").pvalue
    kolmogorov_smirnov = scipy_stats.ks_2samp(base, suspect).pvalue
    assert verdict.p_mann_whitney == pytest.approx(mann_whitney)
    assert verdict.p_kolmogorov_smirnov == pytest.approx(kolmogorov_smirnov)
    assert verdict.p_value == pytest.approx(min(1.0, 2 * min(mann_whitney, kolmogorov_smirnov)))


def test_a_permutation_of_the_base_is_not_reproduced_when_the_report_is_large() -> None:
    # A/A: the same ten values in another order; the CI sits tight around 0, far from -14.15%.
    verdict = decide(BASE, BASE[::-1], "higher", -28.3, 1.5)
    assert verdict.outcome == Outcome.NOT_REPRODUCED
    assert verdict.measured_change_percent == 0.0
    assert verdict.p_value == 1.0
    assert -2.0 < verdict.ci_low_percent < 0 < verdict.ci_high_percent < 2.0
    assert verdict.same_bound_percent == pytest.approx(28.3 / 2)
    assert "the CI rules out \u221214.2%; report said \u221228.3%" in verdict.reason


def test_small_a_a_noise_never_confirms_over_many_seeds() -> None:
    # 300 A/A pairs of 10+10 runs with 5% normal noise: a two-sided 0.01 test, one direction counted.
    rng = np.random.default_rng(20261202)
    outcomes = [decide(100 + 5 * rng.standard_normal(10), 100 + 5 * rng.standard_normal(10),
                       "higher", -10.0, 1.5).outcome for _ in range(300)]
    assert outcomes.count(Outcome.CONFIRMED) <= 2
    # Half the report is 2 SD away: most pairs rule it out, the rest stay inconclusive.
    assert outcomes.count(Outcome.NOT_REPRODUCED) > 150


@pytest.mark.parametrize("base, suspect, outcome, change", [
    # Quantised runs with ties inside each side, fully separated: ties still confirm at 8+8.
    ([100, 100, 101, 100, 101, 100, 101, 100], [95, 95, 96, 95, 96, 95, 95, 96], "confirmed", -5.0),
    # Ties across the sides, no shift: not different, and the CI is within +-1% of 0.
    ([100, 101, 100, 101, 100, 101, 100, 101], [101, 100, 101, 100, 101, 100, 101, 100],
     "not-reproduced", 0.0),
])
def test_ties(base: list[float], suspect: list[float], outcome: str, change: float) -> None:
    verdict = decide(base, suspect, "higher", -5.0, 1.5)
    assert verdict.outcome == outcome
    assert verdict.measured_change_percent == pytest.approx(change, abs=0.05)


def test_zero_variance_on_each_side_cannot_be_different_at_five_runs_but_can_at_six() -> None:
    five = decide([3.0] * 5, [2.4] * 5, "higher", -20.0, 1.5)
    # 5+5 runs: the smallest two-sided p is 2/252, doubled for two tests = 0.016 > 0.01.
    assert five.outcome == Outcome.INCONCLUSIVE
    assert five.p_value == pytest.approx(4 / 252)
    assert five.measured_change_percent == pytest.approx(-20.0)
    assert (five.ci_low_percent, five.ci_high_percent) == pytest.approx((-20.0, -20.0))
    assert "no 5+5 runs can be: the smallest p is 0.016" in five.reason
    six = decide([3.0] * 6, [2.4] * 6, "higher", -20.0, 1.5)
    assert six.outcome == Outcome.CONFIRMED
    assert six.p_value == pytest.approx(4 / 924)
    assert smallest_p_value(6, 6) == pytest.approx(4 / 924)


def test_all_identical_runs_are_not_reproduced() -> None:
    verdict = decide([5.0] * 6, [5.0] * 6, "lower", 12.0, 1.5)
    assert verdict.outcome == Outcome.NOT_REPRODUCED
    assert (verdict.measured_change_percent, verdict.ci_low_percent, verdict.ci_high_percent) == (0, 0, 0)
    assert verdict.p_value == 1.0
    assert verdict.reason.startswith("suspect is unchanged (Hodges-Lehmann shift 0.0%, 95% CI 0.0% to 0.0%), "
                                     "p=1 over 6+6")


@pytest.mark.parametrize("base, suspect, counts", [
    # One run a side: nothing to compare.
    ([3.1], [2.4], "1+1"),
    # One side empty.
    ([], [2.4, 2.5], "0+2"),
    # One run on the suspect side only.
    ([3.1, 3.0, 3.2], [2.4], "3+1"),
])
def test_too_few_runs_are_inconclusive(base: list[float], suspect: list[float], counts: str) -> None:
    verdict = decide(base, suspect, "higher", -20.0, 1.5)
    assert verdict.outcome == Outcome.INCONCLUSIVE
    assert verdict.measured_change_percent is None and verdict.p_value is None
    assert verdict.reason == f"need at least 2 runs a side to compare, got {counts}"


@pytest.mark.parametrize("base, suspect, reason", [
    # A NaN run (a failed benchmark) on the base side.
    ([3.1, float("nan"), 3.0], [2.4, 2.5, 2.3], "base run 2 of 3 is nan"),
    # An infinite run on the suspect side.
    ([3.1, 3.2, 3.0], [2.4, float("inf")], "suspect run 2 of 2 is inf"),
    # Base median 0 with signed values: no relative change exists.
    ([-1.0, 0.0, 0.0, 1.0], [1.0, 2.0, 3.0, 4.0], "base median is 0"),
])
def test_broken_samples_are_an_error(base: list[float], suspect: list[float], reason: str) -> None:
    verdict = decide(base, suspect, "higher", None, 1.5)
    assert verdict.outcome == Outcome.ERROR
    assert verdict.reason.startswith(reason)
    json.dumps(verdict.to_json(), allow_nan=False)


def test_a_nan_reported_change_is_an_error() -> None:
    assert decide(BASE, SLOWER, "higher", float("nan"), 1.5).outcome == Outcome.ERROR


def test_opposite_direction_is_never_confirmed() -> None:
    faster = [value * 1.2 for value in BASE]
    verdict = decide(BASE, faster, "higher", -28.3, 1.5)
    assert verdict.p_value < 0.001  # clearly different ...
    assert verdict.measured_change_percent == pytest.approx(20.0)
    assert verdict.outcome == Outcome.NOT_REPRODUCED  # ... but the other way round
    assert "the opposite direction, so not a confirmation" in verdict.reason
    # Lower-is-better metric: the report said latency went up 15%, the suspect's went down.
    base, quicker = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3], [8.0, 8.1, 7.9, 8.2, 8.0, 8.1]
    latency = decide(base, quicker, "lower", 15.0, 1.5)
    assert latency.outcome == Outcome.NOT_REPRODUCED
    assert latency.measured_change_percent == pytest.approx(hodges_lehmann_percent(base, quicker))
    assert latency.reason.startswith("suspect is 20.0% better (Hodges-Lehmann shift \u221220.0%")


def test_significant_change_under_the_floor_never_confirms() -> None:
    base = [100.02, 99.98, 100.01, 99.99, 100.03, 99.97, 100.0, 100.02, 99.98, 100.01]
    suspect = [value * 0.992 for value in base[::-1]]  # -0.8%, tiny noise
    verdict = decide(base, suspect, "higher", None, 1.5)
    assert verdict.p_value < 0.001
    assert verdict.measured_change_percent == pytest.approx(-0.8, abs=0.01)
    assert verdict.outcome == Outcome.NOT_REPRODUCED
    assert "smaller than the 1.5% floor and the CI rules out \u22121.5%" in verdict.reason
    # The same samples with a 0.5% floor do confirm: the floor alone held it back.
    assert decide(base, suspect, "higher", None, 0.5).outcome == Outcome.CONFIRMED


def test_significant_under_the_floor_with_a_wide_interval_is_inconclusive() -> None:
    base = [100, 101, 99, 100.5, 99.5, 100.2, 99.8, 100.7, 99.3, 100.1]
    suspect = [value * 0.987 for value in [100.6, 99.4, 100.3, 99.7, 100.9, 99.1, 100.4, 99.6, 100.0, 100.2]]
    verdict = decide(base, suspect, "higher", None, 1.5)
    assert verdict.p_value < 0.01
    assert -1.5 < verdict.measured_change_percent < 0
    assert verdict.ci_low_percent < -1.5  # the floor is still inside the interval
    assert verdict.outcome == Outcome.INCONCLUSIVE
    assert "under the 1.5% floor, but the CI does not rule out \u22121.5%" in verdict.reason


def test_noisy_few_runs_are_inconclusive() -> None:
    verdict = decide([100, 112, 91, 104, 97], [95, 108, 88, 99, 93], "higher", -10.0, 1.5)
    assert verdict.p_value > 0.01
    assert verdict.outcome == Outcome.INCONCLUSIVE
    assert "more runs needed" in verdict.reason


def test_spread_change_without_shift_is_inconclusive() -> None:
    # KS sees a tight base against a split suspect; the shift's CI spans 0.
    base = [100 + 0.005 * index for index in range(40)]
    suspect = [91 + 0.01 * index for index in range(20)] + [110 + 0.01 * index for index in range(20)]
    verdict = decide(base, suspect, "higher", None, 1.5)
    assert verdict.p_mann_whitney > 0.5 and verdict.p_kolmogorov_smirnov < 0.001
    assert verdict.ci_low_percent < 0 < verdict.ci_high_percent
    assert verdict.outcome == Outcome.INCONCLUSIVE
    assert "the distributions differ but the shift's CI spans 0" in verdict.reason


def test_reported_improvement_confirms_an_improvement() -> None:
    faster = [value * 1.2 for value in BASE]
    verdict = decide(BASE, faster, "higher", 23.3, 1.5)
    assert verdict.outcome == Outcome.CONFIRMED
    assert verdict.reason.startswith("suspect is 20.0% better (Hodges-Lehmann shift +20.0%")


def test_latency_regression_on_a_lower_is_better_metric() -> None:
    base = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 9.8, 10.1]
    slower = [13.0, 13.3, 12.9, 13.1, 13.2, 12.8, 13.0, 13.4]
    verdict = decide(base, slower, "lower", 30.0, 1.5)
    assert verdict.outcome == Outcome.CONFIRMED
    assert verdict.measured_change_percent == pytest.approx(hodges_lehmann_percent(base, slower))
    assert "worse" in verdict.reason


def test_much_smaller_than_reported_still_confirms_and_says_so() -> None:
    slower = [value * 0.95 for value in BASE[::-1]]
    verdict = decide(BASE, slower, "higher", -28.3, 1.5)
    assert verdict.outcome == Outcome.CONFIRMED
    assert verdict.reason.endswith("report said \u221228.3% (measured under half of it)")


def test_unbounded_interval_is_null_in_json() -> None:
    verdict = decide([10, 11, 12], [10, 11, 12.5], "higher", -5.0, 1.5)
    assert math.isinf(verdict.ci_low_percent) and math.isinf(verdict.ci_high_percent)
    record = verdict.to_json()
    assert record["ci_low"] is None and record["ci_high"] is None
    assert "95% CI unbounded" in record["reason"]
    json.dumps(record, allow_nan=False)


@pytest.mark.parametrize("different, toward, low, high, outcome, why", [
    # Significant, wholly on the claimed side, over the floor.
    (True, 5.0, 3.0, 7.0, "confirmed", "confirmed"),
    # Significant and over the floor, but the CI touches 0 (KS-only): not a confirmation.
    (True, 5.0, -1.0, 7.0, "inconclusive", "shape"),
    # Significant the other way.
    (True, -5.0, -7.0, -3.0, "not-reproduced", "opposite"),
    # Significant, under the floor, CI under the bound.
    (True, 1.0, 0.5, 1.4, "not-reproduced", "under-floor"),
    # Significant, under the floor, CI above the bound.
    (True, 1.0, 0.2, 2.0, "inconclusive", "under-floor-wide"),
    # Not significant, CI under the bound.
    (False, 0.1, -1.0, 1.2, "not-reproduced", "same"),
    # Not significant, CI exactly at the bound: not ruled out.
    (False, 0.1, -1.0, 1.5, "inconclusive", "wide"),
])
def test_classify_table(different: bool, toward: float, low: float, high: float,
                        outcome: str, why: str) -> None:
    assert classify(different, toward, low, high, floor_percent=1.5, same_bound=1.5) == (outcome, why)


@pytest.mark.parametrize("better, floor, message", [
    ("faster", 1.5, "better must be"),
    ("higher", -1.0, "floor_percent must be"),
    ("higher", float("nan"), "floor_percent must be"),
])
def test_bad_parameters_raise(better: str, floor: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decide(BASE, SLOWER, better, None, floor)


def test_signed_percent_uses_a_real_minus_and_no_negative_zero() -> None:
    assert signed_percent(-28.34) == "\u221228.3%"
    assert signed_percent(-0.01) == "0.0%"
    assert signed_percent(2.0) == "+2.0%"
    assert signed_percent(math.inf) == "unbounded"


# Adaptive repeats (verdict.sequential): decide at each look of a plan.


class Sampler:
    """Hands out pre-drawn runs round by round and records the round sizes asked for."""

    def __init__(self, base: list[float], suspect: list[float]) -> None:
        self.base, self.suspect, self.asked = list(base), list(suspect), []

    def __call__(self, size: int) -> tuple[list[float], list[float]]:
        start = sum(self.asked)
        self.asked.append(size)
        return self.base[start:start + size], self.suspect[start:start + size]


def test_default_plan_spends_alpha_where_it_can_be_reached() -> None:
    plan = LookSchedule()
    assert plan.looks == (6, 10, 15, 20) and plan.budget == 20
    alphas = plan.look_alphas()
    # 6+6 runs: the smallest combined p is 2 * 2/924 = 0.00433, so the first look gets 0.0044.
    assert alphas[0] == pytest.approx(0.0044)
    assert smallest_p_value(6, 6) < alphas[0]
    assert alphas[1:] == pytest.approx(((0.01 - 0.0044) / 3,) * 3)
    assert sum(alphas) == pytest.approx(0.01)
    # Each look's one-sided tail is 5% / 4 looks.
    assert plan.look_confidences() == pytest.approx((0.975,) * 4)
    # A first look of 5+5 can never be different (0.016 floor): it gets no alpha at all.
    assert LookSchedule(rounds=(5, 5, 5, 5)).look_alphas()[0] == 0.0


def test_clear_regression_stops_after_the_first_round() -> None:
    sampler = Sampler(BASE * 2, SLOWER * 2)
    result = decide_adaptively(sampler, "higher", -28.3, 1.5)
    assert sampler.asked == [6]
    assert result.runs_per_side == 6 and len(result.looks) == 1
    assert result.verdict.outcome == Outcome.CONFIRMED
    assert result.verdict.alpha == pytest.approx(0.0044)
    assert "97.5% CI" in result.verdict.reason


def test_a_a_with_a_large_report_stops_after_the_first_round() -> None:
    sampler = Sampler(BASE * 2, BASE[::-1] * 2)
    result = decide_adaptively(sampler, "higher", -28.3, 1.5)
    assert sampler.asked == [6]
    assert result.verdict.outcome == Outcome.NOT_REPRODUCED


def test_undecidable_runs_use_the_whole_budget_and_stay_inconclusive() -> None:
    # 10% noise against a reported -6%: half the report (3%) is never ruled out at 20 runs.
    rng = np.random.default_rng(7)
    base = list(100 * np.exp(0.1 * rng.standard_normal(20)))
    suspect = list(100 * np.exp(0.1 * rng.standard_normal(20)))
    sampler = Sampler(base, suspect)
    result = decide_adaptively(sampler, "higher", -6.0, 1.5)
    assert sampler.asked == [6, 4, 5, 5]
    assert result.runs_per_side == 20 and len(result.looks) == 4
    assert [look.runs_base for look in result.looks] == [6, 10, 15, 20]
    assert result.verdict.outcome == Outcome.INCONCLUSIVE
    # The final verdict is decide on all 20+20 runs at the last look's alpha and level.
    again = decide(base, suspect, "higher", -6.0, 1.5, alpha=LookSchedule().look_alphas()[3], confidence=0.975)
    assert result.verdict == again


def test_a_failed_run_in_a_later_round_stops_with_an_error() -> None:
    noisy = [100, 112, 91, 104, 97, 103]
    sampler = Sampler(noisy + [float("nan")] + noisy, [value * 0.99 for value in noisy * 3])
    result = decide_adaptively(sampler, "higher", -5.0, 1.5)
    assert sampler.asked == [6, 4]
    assert result.verdict.outcome == Outcome.ERROR
    assert result.verdict.reason.startswith("base run 7 of 10 is nan")


def test_adaptive_a_a_error_rate_stays_under_alpha() -> None:
    # 400 A/A sequences, 5% heavy-tailed noise, reported -10%: each may look four times.
    rng = np.random.default_rng(11)
    confirmed = 0
    for _ in range(400):
        base = 100 * np.exp(0.05 * rng.standard_t(3, 20) / math.sqrt(3))
        suspect = 100 * np.exp(0.05 * rng.standard_t(3, 20) / math.sqrt(3))
        result = decide_adaptively(Sampler(list(base), list(suspect)), "higher", -10.0, 1.5)
        confirmed += result.verdict.outcome == Outcome.CONFIRMED
    assert confirmed <= 4  # 1%; the design bound for one direction is about 0.5%


@pytest.mark.parametrize("options", [
    # No rounds.
    dict(rounds=()),
    # A round of zero runs.
    dict(rounds=(6, 0)),
    # Per-look alphas that spend more than alpha.
    dict(rounds=(6, 4), look_alpha=(0.006, 0.006)),
])
def test_bad_plans_raise(options: dict) -> None:
    with pytest.raises(ValueError):
        LookSchedule(**options)


def test_one_precision_for_every_ci_level() -> None:
    """A bisection step's look is at 99.1667%: its reason and the bisection log said "99.1667% CI"
    beside "99.2%"; every display now shows a level as verdict/outcome.confidence_text does."""
    from triagebot.bisect.search import _verdict_numbers
    from triagebot.verdict.outcome import confidence_text

    assert [confidence_text(level) for level in (0.95, 0.975, 0.991667, 0.99, 0.9996)] == [
        "95%", "97.5%", "99.2%", "99%", "99.96%"]
    verdict = decide(BASE, SLOWER, "higher", -28.3, 1.5, confidence=1 - 2 * 0.05 / 3 / 4)
    assert "99.2% CI" in verdict.reason and "99.1667" not in verdict.reason
    assert "(99.2% CI " in _verdict_numbers(verdict.to_json())
