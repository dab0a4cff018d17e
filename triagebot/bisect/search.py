"""Bisection: bisect a regression between a good and a bad commit, deciding each step with
the verdict's statistics.

The commits after good up to bad come from the host (its `list_commits` hook), oldest first; they
are bisected as a line. Step 1 checks the ends: good against bad must be *confirmed* (there is a
regression here to bisect), and its measured change is the size every later step is judged
against. Each later step runs the current good end (base) against the middle commit (suspect)
with the adaptive verdict: confirmed -> the middle is bad; not-reproduced (the interval rules out
half of the regression) -> it is good; inconclusive -> the step is taken again with twice the
runs, up to `attempts` times, and never guessed: a step still inconclusive ends the bisection as
inconclusive with the range left. Alpha and the no-repro error of a step are split across its
attempts (Bonferroni), so retrying does not raise a step's error rates.

A step's first attempt looks at 7, 10, 15 and 20 runs a side (rounds 7,3,5,5). With alpha split
across three attempts (0.0033 each) a first look of 6+6 could never confirm (its smallest p,
0.0043, is over the half of alpha a first look may take), so every step ran at least 10+10;
7+7 can (0.0012), so a step whose evidence is clear ends at its first look, 14 runs, with the
same error rates (bench/bisection.py: the 40-commit tree).

A budget of runs (samples, both sides, all steps) and of wall time bounds the whole: an attempt
starts only when the runs it may take still fit, and only while the time is not spent (the time
is checked before each attempt, so the last attempt may run past it). Running out ends the
bisection as inconclusive with the range left. Nothing here touches a host: `measure` runs one
base/suspect comparison (triagebot.reproduce.runner.rerun) and returns its run JSON.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from triagebot.verdict.outcome import DEFAULT_ALPHA, confidence_text, signed_percent
from triagebot.verdict.sequential import LookSchedule

Json = dict[str, Any]
# base commit, suspect commit, the attempt's looks, the change to judge against -> run JSON
Measure = Callable[[str, str, LookSchedule, float | None], Json]
# step number (from 1), the steps the whole bisection likely takes, the suspect: before each attempt
OnStep = Callable[[int, int, str], None]
DEFAULT_ROUNDS = (7, 3, 5, 5)  # a step's first attempt: looks at 7, 10, 15, 20 a side (see the module text)


def steps_for(commits: int) -> int:
    """Bisection steps to narrow `commits` (after good, the last bad) to one: ceil(log2)."""
    return math.ceil(math.log2(commits)) if commits > 1 else 0

FOUND, INCONCLUSIVE, NOT_REPRODUCED, ERROR, RUNNING = "found", "inconclusive", "not-reproduced", "error", "running"


@dataclass(frozen=True)
class BisectBudget:
    """What one bisection may spend; each default is what `triage bisect` uses."""

    max_runs: int = 1000  # samples in all, both sides of every attempt of every step
    max_seconds: float = 24 * 3600.0  # wall time, checked before each attempt
    rounds: tuple[int, ...] = DEFAULT_ROUNDS  # a step's first attempt's looks (20 a side at most)
    attempts: int = 3  # an inconclusive step is taken again with twice the runs, this many times in all
    no_repro_error: float = 0.05  # as a rerun's, split across a step's attempts

    def __post_init__(self) -> None:
        if self.max_runs < 1 or self.max_seconds <= 0 or self.attempts < 1:
            raise ValueError("a bisection budget needs runs, time and at least one attempt a step")

    def schedule(self, attempt: int) -> LookSchedule:
        """The looks of a step's `attempt` (from 1): twice the runs of the attempt before."""
        scale = 2 ** (attempt - 1)
        return LookSchedule(rounds=tuple(size * scale for size in self.rounds),
                            alpha=DEFAULT_ALPHA / self.attempts, no_repro_error=self.no_repro_error / self.attempts)


def _samples(run: Json) -> list[Json]:
    """A run's samples as kept with a bisection: no stdout (a step's evidence is its numbers),
    and when each began and ended (a later estimate of the host's switch and sample times)."""
    return [{"role": sample["role"], "commit": sample["commit"], "value": sample["value"],
             "running_kernel": sample.get("running_kernel"), "seconds": sample.get("seconds"),
             "started_at": sample.get("started_at"), "finished_at": sample.get("finished_at")}
            for sample in run.get("samples", [])]


def _attempt_json(number: int, schedule: LookSchedule, run: Json) -> Json:
    return {"attempt": number, "rounds": list(schedule.rounds), "alpha": schedule.alpha,
            "status": run.get("status"), "error": run.get("error"), "verdict": run.get("verdict"),
            "samples": _samples(run), "started_at": run.get("started_at"), "finished_at": run.get("finished_at")}


def bisect(commits: list[str], good: str, measure: Measure, budget: BisectBudget = BisectBudget(), *,
           reported_change_percent: float | None = None, clock: Callable[[], float] = time.monotonic,
           on_progress: Callable[[Json], None] | None = None, on_step: OnStep | None = None) -> Json:
    """Bisect `commits` (after `good`, oldest first, the last one bad); the result JSON.

    `on_progress` gets the result as it stands after every attempt (to store it); `on_step` is told
    before each attempt which step it is of how many the bisection likely takes."""
    if not commits:
        raise ValueError(f"no commits after {good} to bisect")
    started = clock()
    result: Json = {"kind": "bisect", "status": RUNNING, "good": good, "bad": commits[-1],
                    "commits": len(commits), "first_bad": None, "range": [good, commits[-1]],
                    "left": len(commits), "steps": [], "runs_used": 0, "reason": "",
                    "regression_percent": None,
                    "budget": {"max_runs": budget.max_runs, "max_seconds": budget.max_seconds,
                               "rounds": list(budget.rounds), "attempts": budget.attempts}}

    def end(status: str, reason: str) -> Json:
        result["status"], result["reason"] = status, reason
        if on_progress is not None:
            on_progress(result)
        return result

    def step(kind: str, base: str, suspect: str, reported: float | None, left: int) -> Json | str:
        """One step's final verdict (a dict), or why the bisection ends (a str, status set).
        `left`: the commits still to narrow, this step's one included."""
        record: Json = {"step": len(result["steps"]) + 1, "kind": kind, "base": base, "suspect": suspect,
                        "attempts": [], "call": None}
        likely = record["step"] + max(steps_for(left) - (0 if kind == "check" else 1), 0)
        result["steps"].append(record)
        verdict: Json = {}
        for attempt in range(1, budget.attempts + 1):
            schedule = budget.schedule(attempt)
            most = 2 * schedule.budget
            if result["runs_used"] + most > budget.max_runs:
                end(INCONCLUSIVE, f"budget: step {record['step']} attempt {attempt} may take {most} runs; "
                                  f"{budget.max_runs - result['runs_used']} of {budget.max_runs} are left")
                return INCONCLUSIVE
            if clock() - started >= budget.max_seconds:
                end(INCONCLUSIVE, f"budget: {budget.max_seconds:g} s of wall time spent before step "
                                  f"{record['step']} attempt {attempt}")
                return INCONCLUSIVE
            if on_step is not None:
                on_step(record["step"], likely, suspect)
            run = measure(base, suspect, schedule, reported)
            record["attempts"].append(_attempt_json(attempt, schedule, run))
            result["runs_used"] += len(run.get("samples", []))
            verdict = run.get("verdict") or {}
            if run.get("status") != "done" or not verdict or verdict.get("outcome") == ERROR:
                end(ERROR, f"step {record['step']} ({suspect}) failed: "
                           f"{run.get('error') or verdict.get('reason') or 'no verdict'}")
                return ERROR
            if verdict["outcome"] != INCONCLUSIVE:
                record["call"] = "bad" if verdict["outcome"] == "confirmed" else "good"
                if on_progress is not None:
                    on_progress(result)
                return verdict
            if on_progress is not None:
                on_progress(result)
        end(INCONCLUSIVE, f"step {record['step']} ({suspect}) stayed inconclusive after {budget.attempts} "
                          f"attempts: {verdict.get('reason')}")
        return INCONCLUSIVE

    checked = step("check", good, commits[-1], reported_change_percent, len(commits))
    if isinstance(checked, str):
        return result
    if checked["outcome"] != "confirmed":
        return end(NOT_REPRODUCED, f"the bad end is not slower than the good end here: {checked['reason']}")
    regression = checked["measured_change_percent"]
    result["regression_percent"] = regression
    low, high = -1, len(commits) - 1  # commits[high] is bad; commits[low] (or good at -1) is good
    while high - low > 1:
        middle = (low + high) // 2
        base = good if low < 0 else commits[low]
        verdict = step("bisect", base, commits[middle], regression, high - low)
        if isinstance(verdict, str):
            return result
        if verdict["outcome"] == "confirmed":
            high = middle
        else:
            low = middle
        result["range"] = [good if low < 0 else commits[low], commits[high]]
        result["left"] = high - low
    result["first_bad"] = commits[high]
    return end(FOUND, f"{commits[high]} is the first bad commit: {signed_percent(regression)} from good to bad, "
                      f"{len(result['steps'])} steps, {result['runs_used']} runs")


def _verdict_numbers(verdict: Json) -> str:
    def number(value: float | None) -> str:
        return "unbounded" if value is None else signed_percent(value)

    p_value = verdict.get("p_value")
    p_text = "p=?" if p_value is None else ("p<0.001" if p_value < 0.001 else f"p={p_value:.2g}")
    return (f"{verdict['outcome']} {number(verdict.get('measured_change_percent'))} "
            f"({confidence_text(verdict.get('confidence', 0.95))} CI {number(verdict.get('ci_low'))} to "
            f"{number(verdict.get('ci_high'))}), {p_text}, "
            f"{verdict.get('runs_base')}+{verdict.get('runs_suspect')} runs")


def short(commit: str) -> str:
    """A sha cut to 12 digits; a ref or a sha with a suffix (`abc123^`, `v6.8`) as it is."""
    return commit[:12] if len(commit) > 12 and all(char in "0123456789abcdef" for char in commit) else commit


def _is_sha(commit: str) -> bool:
    return 7 <= len(commit) <= 64 and all(char in "0123456789abcdef" for char in commit)


def bisect_log(result: Json) -> str:
    """The bisection like `git bisect log`, each step's verdict and every attempt as numbers. The
    start line names both ends by sha: a tag or ref given (`--good v1.0`) is resolved by the host
    (`good_sha`), and a comment says which name is which sha; one the host could not resolve is
    kept as given, and the comment says so."""
    good, bad = result["good"], result["bad"]
    good_sha = result.get("good_sha") or (good if _is_sha(good) else None)
    lines = [f"git bisect start {bad} {good_sha or good}"]
    names = []
    if not _is_sha(good):
        names.append(f"good {good} is {good_sha}" if good_sha else f"good {good} (not resolved to a sha by the host)")
    given_bad = result.get("bad_given")
    if given_bad and given_bad != bad:
        names.append(f"bad {given_bad} is {bad}")
    if names:
        lines.append(f"# {'; '.join(names)}")
    for step in result["steps"]:
        for attempt in step["attempts"]:
            verdict = attempt.get("verdict")
            evidence = _verdict_numbers(verdict) if verdict else f"error: {attempt.get('error')}"
            lines.append(f"# step {step['step']} attempt {attempt['attempt']}: {short(step['base'])} vs "
                         f"{short(step['suspect'])}: {evidence}")
        if step["kind"] == "check":
            if step["call"] == "bad":
                lines.append(f"# checked: {short(step['suspect'])} is slower than {short(step['base'])}")
        elif step["call"] is not None:
            lines.append(f"git bisect {step['call']} {step['suspect']}")
    if result["status"] == FOUND:
        lines.append(f"# first bad commit: {result['first_bad']}")
    else:
        lines.append(f"# {result['status']}: {result['reason']}")
        if result["status"] == INCONCLUSIVE:
            lines.append(f"# range left: {result['range'][0]}..{result['range'][1]} ({result['left']} commits)")
    return "\n".join(lines)


def bisect_summary(result: Json) -> str:
    """One line: what the bisection found."""
    if result["status"] == FOUND:
        return (f"first bad commit {result['first_bad']} ({signed_percent(result['regression_percent'])} "
                f"good to bad; {len(result['steps'])} steps, {result['runs_used']} runs)")
    if result["status"] == INCONCLUSIVE:
        low, high = result["range"]
        return f"inconclusive: {result['reason']}; range left {short(low)}..{short(high)} ({result['left']} commits)"
    return f"{result['status']}: {result['reason']}"
