"""The bisection (triagebot.reproduce.bisect) on constructed measurements: the real adaptive verdict
decides each step from numbers made to a known truth, so every rule is checked without a lab:
the first bad commit in few steps, a retry with more runs on an inconclusive step, the runs and
wall-time budgets, the log. The lab runs the same code end to end (tests/test_bisect_lab.py)."""
from __future__ import annotations

import math
import random

import pytest

from triagebot.bisect.search import BisectBudget, bisect, bisect_log, bisect_summary
from triagebot.verdict.sequential import LookSchedule, decide_adaptively

COMMITS = [f"{number:040x}" for number in range(1, 64)]  # after the good commit "0" * 40
GOOD = "0" * 40
FIRST_BAD = 37  # index in COMMITS


def lab_measure(first_bad: int, noisy: set[str] = frozenset(), seed: int = 7):
    """A measure: runs of 100 units, 40% fewer from `first_bad` on, each with 1% noise; a commit
    in `noisy` is noisy (sigma 0.5) on its first comparison only. Decided by decide_adaptively."""
    rng = random.Random(seed)
    seen: set[str] = set()

    def value(commit: str, sigma: float) -> float:
        slow = commit != GOOD and COMMITS.index(commit) >= first_bad
        return 100.0 * (0.6 if slow else 1.0) * math.exp(rng.gauss(0.0, sigma))

    def measure(base: str, suspect: str, schedule: LookSchedule, reported: float | None) -> dict:
        sigma = 0.5 if suspect in noisy and suspect not in seen else 0.01
        seen.add(suspect)
        samples: list[dict] = []

        def run_round(size: int):
            base_values = [value(base, sigma) for _ in range(size)]
            suspect_values = [value(suspect, sigma) for _ in range(size)]
            samples.extend({"role": "base", "commit": base, "value": item} for item in base_values)
            samples.extend({"role": "suspect", "commit": suspect, "value": item} for item in suspect_values)
            return base_values, suspect_values

        adaptive = decide_adaptively(run_round, "higher", reported, 2.0, schedule)
        return {"status": "done", "samples": samples, "verdict": adaptive.verdict.to_json()}

    return measure


def test_the_first_bad_commit_of_64_is_found_in_seven_steps() -> None:
    stored = []
    result = bisect(COMMITS, GOOD, lab_measure(FIRST_BAD), on_progress=lambda item: stored.append(item["status"]))
    assert result["status"] == "found" and result["first_bad"] == COMMITS[FIRST_BAD]
    assert len(result["steps"]) <= 7  # the ends checked, then log2(63) rounded up
    # each call is the truth, from a verdict that decided (never from an inconclusive one)
    for step in result["steps"][1:]:
        truth = "bad" if COMMITS.index(step["suspect"]) >= FIRST_BAD else "good"
        assert step["call"] == truth
        assert step["attempts"][-1]["verdict"]["outcome"] in ("confirmed", "not-reproduced")
    assert stored[-1] == "found" and len(stored) == len(result["steps"]) + 1  # after every step, and at the end
    log = bisect_log(result)
    assert log.splitlines()[0] == f"git bisect start {COMMITS[-1]} {GOOD}"
    assert f"# first bad commit: {COMMITS[FIRST_BAD]}" in log
    assert "first bad commit" in bisect_summary(result)


def test_an_inconclusive_step_is_taken_again_with_twice_the_runs() -> None:
    # the first step in the middle (index 30, good) is noisy the first time it is measured
    result = bisect(COMMITS, GOOD, lab_measure(FIRST_BAD, noisy={COMMITS[30]}))
    step = result["steps"][1]
    assert step["suspect"] == COMMITS[30]
    assert [attempt["verdict"]["outcome"] for attempt in step["attempts"]] == ["inconclusive", "not-reproduced"]
    assert step["attempts"][1]["rounds"] == [2 * size for size in step["attempts"][0]["rounds"]]
    assert step["call"] == "good" and result["first_bad"] == COMMITS[FIRST_BAD]


def test_a_step_inconclusive_every_time_ends_the_bisection_with_the_range_left() -> None:
    # steps: 30 good, 46 bad, 38 bad, then 34 (good) is noisy and its one attempt undecided
    result = bisect(COMMITS, GOOD, lab_measure(FIRST_BAD, noisy={COMMITS[34]}), BisectBudget(attempts=1))
    assert result["status"] == "inconclusive" and result["first_bad"] is None
    assert "stayed inconclusive after 1 attempts" in result["reason"]
    assert result["range"] == [COMMITS[30], COMMITS[38]] and result["left"] == 8
    assert result["steps"][-1]["suspect"] == COMMITS[34] and result["steps"][-1]["call"] is None  # not guessed
    assert f"# range left: {COMMITS[30]}..{COMMITS[38]} (8 commits)" in bisect_log(result)


def test_a_small_budget_of_runs_ends_it_before_an_attempt_that_might_not_fit() -> None:
    result = bisect(COMMITS, GOOD, lab_measure(FIRST_BAD), BisectBudget(max_runs=100))
    assert result["status"] == "inconclusive" and result["runs_used"] <= 100
    assert result["reason"].startswith("budget: step") and "may take 40 runs" in result["reason"]
    assert result["left"] < len(COMMITS)  # what was learned is kept: the range left
    low, high = COMMITS.index(result["range"][0]) if result["range"][0] != GOOD else -1, \
        COMMITS.index(result["range"][1])
    assert low < FIRST_BAD <= high


def test_wall_time_is_checked_before_each_attempt() -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 1000.0  # each look at the clock: 1000 s later
        return now[0]

    result = bisect(COMMITS, GOOD, lab_measure(FIRST_BAD), BisectBudget(max_seconds=3500.0), clock=clock)
    assert result["status"] == "inconclusive"
    assert result["reason"].startswith("budget: 3500 s of wall time spent before step")


def test_no_regression_between_the_ends_is_nothing_to_bisect() -> None:
    result = bisect(COMMITS, GOOD, lab_measure(first_bad=10_000))
    assert result["status"] == "not-reproduced" and len(result["steps"]) == 1
    assert result["reason"].startswith("the bad end is not slower than the good end here")


def test_a_failed_run_ends_the_bisection_in_error() -> None:
    def failing(base, suspect, schedule, reported):
        return {"status": "error", "error": "switch_kernel hook failed", "samples": []}

    result = bisect(COMMITS, GOOD, failing)
    assert result["status"] == "error" and "switch_kernel hook failed" in result["reason"]


def test_budget_values_are_checked() -> None:
    with pytest.raises(ValueError):
        BisectBudget(max_runs=0)
    with pytest.raises(ValueError):
        bisect([], GOOD, lab_measure(FIRST_BAD))


# --- issue 36, finding 6: fewer runs where the evidence is clear, an estimate, progress, the log ---

def test_a_step_whose_evidence_is_clear_ends_at_its_first_look() -> None:
    """The default first look is 7+7, which can confirm at a step's share of alpha (6+6 could not:
    every bad step ran 10+10); a clear step, good or bad, takes 14 runs."""
    result = bisect(COMMITS, GOOD, lab_measure(FIRST_BAD))
    assert result["status"] == "found" and result["first_bad"] == COMMITS[FIRST_BAD]
    for step in result["steps"]:
        [attempt] = step["attempts"]
        assert (attempt["verdict"]["runs_base"], attempt["verdict"]["runs_suspect"]) == (7, 7), step["step"]
    assert result["runs_used"] == 14 * len(result["steps"])
    # the error rates did not move: alpha and the no-repro error are split across attempts as before
    assert BisectBudget().schedule(1).alpha == pytest.approx(0.01 / 3)


def test_every_attempt_is_announced_with_its_step_of_the_likely_steps() -> None:
    seen: list[tuple[int, int, str]] = []
    result = bisect(COMMITS, GOOD, lab_measure(FIRST_BAD), on_step=lambda *step: seen.append(step))
    assert seen[0] == (1, 7, COMMITS[-1])  # the check of the ends, of 1 + log2(63) rounded up
    assert [step for step, _total, _suspect in seen] == list(range(1, len(result["steps"]) + 1))
    assert all(total == len(result["steps"]) for _step, total, _suspect in seen)


def test_the_estimate_from_the_hosts_stored_runs() -> None:
    from triagebot.bisect.estimate import estimate, host_times

    def sample(start: str, end: str, seconds: float) -> dict:
        return {"started_at": f"2026-01-01T00:{start}+00:00", "finished_at": f"2026-01-01T00:{end}+00:00",
                "seconds": seconds}

    runs = [{"host": "lab-1", "samples": [sample("00:00", "02:00", 60.0), sample("02:00", "04:10", 60.0),
                                          sample("04:10", "06:00", 50.0)]},
            {"host": "other", "samples": [sample("00:00", "59:00", 1.0)]}]  # another host's: not read
    times = host_times(runs, "lab-1")
    assert times is not None and (times.samples, times.sample_seconds, times.switch_seconds) == (3, 60.0, 60.0)
    planned = estimate(39, BisectBudget(), times)  # the 40-commit tree: 39 after good
    assert (planned.steps, planned.runs_a_step, planned.runs, planned.most_runs) == (7, 14, 98, 280)
    assert planned.seconds == 98 * 120.0 and planned.over_budget() is None
    assert planned.lines() == [
        "estimate: 39 commits, 7 steps (the check of the ends, then ~log2 39 = 6)",
        "  runs: 14 a step when its evidence is clear, up to 40 on a first attempt: 98 likely, 280 at most before a "
        "retry",
        "  time a run: 60 s switch (build, boot) + 60 s sample, the medians of 3 samples on lab-1",
        "  total: 3.3 h likely, 9.3 h at most; budget 24.0 h, 1000 runs"]
    tight = estimate(39, BisectBudget(max_seconds=3 * 3600), times)
    assert tight.over_budget() == "it likely takes 3.3 h, more than the 3.0 h --max-hours allows"
    unknown = estimate(39, BisectBudget(max_seconds=60), host_times(runs, "lab-2"))
    assert unknown.seconds is None and unknown.over_budget() is None  # no history: no time said, none refused
    assert "  time: unknown (no stored run on this host says how long a sample takes)" in unknown.lines()


def test_progress_says_the_step_the_sample_the_time_and_the_time_left() -> None:
    from triagebot.bisect.progress import progress

    early = progress(1, 7, 0, 0, 0.0, runs_a_step=14, history_run_seconds=120.0)
    assert early.line() == "bisect: step 1 of ~7, sample 0, 0 s elapsed, about 3.3 h left"
    later = progress(3, 7, 5, 33, 33 * 60.0, runs_a_step=14)  # a minute a run so far
    assert later.line() == "bisect: step 3 of ~7, sample 5, 33 min elapsed, about 65 min left"  # (9 + 4 x 14) min
    assert progress(1, 7, 0, 0, 0.0, runs_a_step=14).line() == "bisect: step 1 of ~7, sample 0, 0 s elapsed"


def test_the_log_names_both_ends_by_sha_and_says_which_name_is_which() -> None:
    result = bisect(COMMITS, GOOD, lab_measure(FIRST_BAD))
    tagged = result | {"good": "v1.0", "good_sha": GOOD, "bad_given": "v1.1"}
    lines = bisect_log(tagged).splitlines()
    assert lines[0] == f"git bisect start {COMMITS[-1]} {GOOD}"
    assert lines[1] == f"# good v1.0 is {GOOD}; bad v1.1 is {COMMITS[-1]}"
    unresolved = bisect_log(result | {"good": "v1.0"}).splitlines()
    assert unresolved[:2] == [f"git bisect start {COMMITS[-1]} v1.0", "# good v1.0 (not resolved to a sha by the host)"]
