"""The share of a regression a fix recovers (triagebot.reproduce.fix_run), from the fix's verdict."""
from __future__ import annotations

import pytest

from tests.conftest import PROJECT
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


# --- issue 36, finding 4: a Tested-by only past the recovery floor -------------------------------

def the_result(call_verdict: dict, floor: float = 80.0) -> dict:
    recovery = fix_result(-40.0, call_verdict, floor)
    return {"verdict": call_verdict | {"runs_base": 10, "runs_suspect": 10}, "suspect": "c0ffee1234ab" * 3,
            "version": 2, "recovery": recovery}


def draft_of(result: dict) -> str:
    from triagebot.fix_test.recovery import tested_by_draft

    return tested_by_draft(result, subject="[PATCH v2 0/1] sched: fix it", in_reply_to="cover@x", tester="Lab <l@x>",
                           host="lab-1", metric="sysbench.events_per_second")


# the run: recovers 81% of a -40% regression, but the interval (47–118%) allows less than half
WEAK = {"outcome": "confirmed", "measured_change_percent": 54.0, "ci_low": 31.4, "ci_high": 78.8, "confidence": 0.95}
STRONG = {"outcome": "confirmed", "measured_change_percent": 64.0, "ci_low": 58.0, "ci_high": 69.3, "confidence": 0.95}


def test_a_recovery_whose_interval_reaches_below_the_floor_partly_recovers_and_gets_no_tag() -> None:
    result = the_result(WEAK)
    assert result["recovery"]["call"] == "partly recovers"
    assert result["recovery"]["sentence"] == ("the fix partly recovers the regression: 81% (95% CI 47–118%), and the "
                                              "interval reaches below the 80% a Tested-by needs")
    draft = draft_of(result)
    assert "So the fix partly recovers the regression: 81% (95% CI 47–118%)" in draft
    assert "Tested-by:" not in draft


def test_a_recovery_clear_of_the_floor_is_vouched_for() -> None:
    result = the_result(STRONG)
    assert result["recovery"]["call"] == "recovers" and result["recovery"]["ci_low_percent"] >= 80
    assert draft_of(result).endswith("Tested-by: Lab <l@x>\n")


def test_the_floor_is_the_rules_and_validated(tmp_path) -> None:
    from triagebot.errors import RulesError
    from triagebot.rules.fix_tests import load_fix_tests, parse_fix_tests
    from triagebot.rules.settings import load_settings

    assert the_result(WEAK, floor=40.0)["recovery"]["call"] == "recovers"  # a team that asks less
    assert load_settings(PROJECT / "rules").fix_tests.recovery_floor_percent == 80.0
    assert load_fix_tests(PROJECT / "rules" / "fix_tests.toml").recovery_floor_percent == 80.0
    assert parse_fix_tests("recovery_floor_percent = 90\n", "fix_tests.toml").recovery_floor_percent == 90.0
    for text, problem in (("recovery_floor_percent = 0\n", "recovery_floor_percent must be a number above 0"),
                          ("recovery_floor_percent = 120\n", "at most 100"),
                          ('recovery_floor_percent = "80%"\n', "recovery_floor_percent must be"),
                          ("floor = 80\n", r"unknown key\(s\) floor")):
        with pytest.raises(RulesError, match=problem):
            parse_fix_tests(text, "fix_tests.toml")
    (tmp_path / "fix_tests.toml").write_text("recovery_floor_percent = 95\n")
    assert load_settings(tmp_path).fix_tests.recovery_floor_percent == 95.0  # the rules directory's own


def test_one_patch_is_one_patch() -> None:
    from triagebot.fix_test.flow import patches_text

    assert (patches_text(1), patches_text(2)) == ("1 patch", "2 patches")
