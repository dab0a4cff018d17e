"""The share of a regression a fix recovers (triagebot.reproduce.fix_run), from the fix's verdict."""
from __future__ import annotations

import pytest

from triagebot.fix_test.recovery import fix_result, full_recovery_percent, recovered_share


def test_full_recovery_undoes_the_regression_exactly() -> None:
    assert full_recovery_percent(-40.0) == pytest.approx(66.6667, abs=1e-3)  # 0.6 back to 1.0
    assert full_recovery_percent(+25.0) == pytest.approx(-20.0)  # a latency up 25% comes back down 20%
    assert recovered_share(66.6667, -40.0) == pytest.approx(100.0, abs=1e-3)
    assert recovered_share(0.0, -40.0) == 0.0
    assert recovered_share(None, -40.0) is None


@pytest.mark.parametrize("outcome, change, low, high, call, start", [
    # significant and as large as the regression: recovers, the interval carried through
    ("confirmed", 62.7, 54.0, 69.3, "recovers", "the fix recovers 94% of the regression (95% CI 81–104%)"),
    # ruled out: the fix changes nothing
    ("not-reproduced", 0.4, -2.0, 2.6, "does not recover", "the fix does not recover the regression (it recovers 1%"),
    # neither: never a guess
    ("inconclusive", 30.0, -5.0, 70.0, "inconclusive", "inconclusive: the fix recovers 45% of the regression"),
])
def test_the_call_follows_the_fix_verdict(outcome, change, low, high, call, start) -> None:
    verdict = {"outcome": outcome, "measured_change_percent": change, "ci_low": low, "ci_high": high,
               "confidence": 0.95}
    result = fix_result(-40.0, verdict)
    assert result["call"] == call and result["sentence"].startswith(start)


def test_an_unbounded_interval_says_so() -> None:
    result = fix_result(-40.0, {"outcome": "inconclusive", "measured_change_percent": 10.0, "ci_low": None,
                                "ci_high": None, "confidence": 0.95})
    assert "CI unbounded" in result["sentence"]
