"""The verdict from summary statistics: Welch's test and the ratio interval, and the same rules."""
from __future__ import annotations

import math
import random
import subprocess
import sys

import pytest
from scipy import stats as scipy_stats

from tests.conftest import PROJECT
from triagebot.verdict.outcome import Outcome
from triagebot.verdict.summary import (
    Side,
    decide_summaries,
    describe,
    ratio_interval,
    t_quantile,
    welch_test,
)


def test_welch_agrees_with_scipy_over_many_summaries() -> None:
    draw = random.Random(16)
    for _ in range(2000):
        runs_a, runs_b = draw.randint(2, 60), draw.randint(2, 60)
        mean_a = draw.uniform(0.5, 5000)
        mean_b = mean_a * draw.uniform(0.5, 1.5)
        sd_a, sd_b = mean_a * draw.uniform(0.001, 0.4), mean_b * draw.uniform(0.001, 0.4)
        ours = welch_test(Side(mean_a, sd_a, runs_a), Side(mean_b, sd_b, runs_b))
        theirs = scipy_stats.ttest_ind_from_stats(mean_b, sd_b, runs_b, mean_a, sd_a, runs_a, equal_var=False)
        assert ours.statistic == pytest.approx(float(theirs.statistic), rel=1e-9)
        assert ours.p_value == pytest.approx(float(theirs.pvalue), rel=1e-8, abs=1e-300)


@pytest.mark.parametrize("probability", [0.9, 0.95, 0.975, 0.995, 0.9995])
@pytest.mark.parametrize("degrees", [1.0, 1.7, 3.2, 7.96, 30.0, 250.0, 5000.0])
def test_t_quantile_agrees_with_scipy(probability: float, degrees: float) -> None:
    assert t_quantile(probability, degrees) == pytest.approx(float(scipy_stats.t.ppf(probability, degrees)),
                                                             rel=1e-9)


def test_ratio_interval_is_the_delta_method_on_log_means() -> None:
    base, suspect = Side(2341, 41, 5), Side(2322, 38, 5)
    interval = ratio_interval(base, suspect)
    first, second = (41 / 2341) ** 2 / 5, (38 / 2322) ** 2 / 5
    df = (first + second) ** 2 / (first ** 2 / 4 + second ** 2 / 4)
    half = float(scipy_stats.t.ppf(0.975, df)) * (first + second) ** 0.5
    log_ratio = math.log(2322 / 2341)
    assert interval.change_percent == pytest.approx((2322 / 2341 - 1) * 100)
    assert interval.ci_low_percent == pytest.approx((math.exp(log_ratio - half) - 1) * 100)
    assert interval.ci_high_percent == pytest.approx((math.exp(log_ratio + half) - 1) * 100)
    assert interval.ci_low_percent < interval.change_percent < interval.ci_high_percent


def test_the_issue_example_is_not_reproduced() -> None:
    verdict = decide_summaries(Side(2341, 41, 5), Side(2322, 38, 5), "higher", -24.6, 1.5)
    assert verdict.outcome == Outcome.NOT_REPRODUCED and verdict.why == "same"
    assert verdict.same_bound_percent == pytest.approx(12.3)
    assert describe(verdict) == "\u22120.8% [\u22123.2%, +1.7%], Welch p=0.47"


def test_a_real_slowdown_confirms() -> None:
    verdict = decide_summaries(Side(2352, 35, 5), Side(1791, 29, 5), "higher", -24.6, 1.5)
    assert verdict.outcome == Outcome.CONFIRMED
    assert verdict.ci_high_percent is not None and verdict.ci_high_percent < 0


def test_the_opposite_direction_never_confirms() -> None:
    verdict = decide_summaries(Side(1800, 20, 6), Side(2400, 25, 6), "higher", -24.6, 1.5)
    assert verdict.outcome == Outcome.NOT_REPRODUCED and verdict.why == "opposite"


def test_a_significant_change_under_the_floor_does_not_confirm() -> None:
    verdict = decide_summaries(Side(1000.0, 1.0, 20), Side(995.0, 1.0, 20), "higher", -24.6, 1.5)
    assert verdict.p_value is not None and verdict.p_value < 0.01
    assert verdict.outcome == Outcome.NOT_REPRODUCED and verdict.why == "under-floor"


def test_wide_spread_is_inconclusive() -> None:
    verdict = decide_summaries(Side(2341, 600, 3), Side(2000, 650, 3), "higher", -24.6, 1.5)
    assert verdict.outcome == Outcome.INCONCLUSIVE and verdict.why == "wide"


@pytest.mark.parametrize(("base", "suspect", "why"), [
    (Side(2341, 41, 1), Side(2322, 38, 5), "too few runs"),
    (Side(2341, None, 5), Side(2322, 38, 5), "no spread"),
    (Side(2341, 0.0, 5), Side(2322, 0.0, 5), "no spread"),
    (Side(2341, 41, None), Side(2322, 38, None), "no run count"),
])
def test_what_cannot_be_tested_is_inconclusive(base: Side, suspect: Side, why: str) -> None:
    verdict = decide_summaries(base, suspect, "higher", -24.6, 1.5)
    assert verdict.outcome == Outcome.INCONCLUSIVE and verdict.why == why
    assert verdict.p_value is None and verdict.change_percent == pytest.approx((2322 / 2341 - 1) * 100)


def test_without_a_report_the_worse_direction_is_tested_and_without_a_direction_nothing_is() -> None:
    slower = decide_summaries(Side(2352, 35, 5), Side(1791, 29, 5), "higher", None, 1.5)
    assert slower.outcome == Outcome.CONFIRMED and slower.same_bound_percent == 1.5
    same = decide_summaries(Side(2341, 10, 8), Side(2340, 10, 8), "higher", None, 1.5)
    assert same.outcome == Outcome.NOT_REPRODUCED
    unknown = decide_summaries(Side(2352, 35, 5), Side(1791, 29, 5), None, None, 1.5)
    assert unknown.outcome == Outcome.INCONCLUSIVE and unknown.why == "no claim"
    assert unknown.p_value is not None and unknown.p_value < 0.001  # the difference is still stated


def test_lower_is_better_takes_a_time_increase_as_the_regression() -> None:
    verdict = decide_summaries(Side(95.0, 2.0, 5), Side(120.0, 3.0, 5), "lower", None, 1.5)
    assert verdict.outcome == Outcome.CONFIRMED


def test_the_summary_verdict_imports_neither_numpy_nor_scipy() -> None:
    probe = ("import sys\nimport triagebot.verdict.summary\n"
             "print(sorted(name for name in ('numpy', 'scipy') if name in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
