"""Bisection: what a bisection will likely cost, before it starts, and whether that fits its budget.

Pure: the number of commits, the budget and the host's history of runs in; an `Estimate` out.

- steps: the check of the ends, then ceil(log2(commits)) to narrow them to one (search.steps_for);
- runs a step: at least both sides of the first look (2 x 7 with the default rounds: a step
  whose evidence is clear ends there), at most both sides of the first attempt's last look
  (2 x 20); the likely figure is the least, the most is said beside it;
- time a run: from the host's stored runs (`host_times`): the median time the benchmark itself
  took (a sample's `seconds`) and the median of the rest of each sample's wall time — the kernel
  switch (build, install, boot) and the hooks before it, which every sample of an interleaved run
  pays. A host with no stored run has no time estimate: that is said, not guessed.

A bisection whose likely time exceeds its wall-time budget (`--max-hours`) is refused before any
run, or, at a terminal, `triage bisect` asks first (cli/bisect.py): without the estimate it would
run into the budget hours later, its range unfinished. A cap of runs (`--max-runs`) under the
likely runs is said, not refused: a person may want a bisection cut short on purpose.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from triagebot.bisect.search import BisectBudget, steps_for

Json = dict[str, Any]
HISTORY_RUNS = 50  # the host's most recent runs read for its times


@dataclass(frozen=True)
class HostTimes:
    """A host's typical sample, from its stored runs: the benchmark's seconds and the switch's."""

    host: str
    samples: int  # how many samples the medians are of
    sample_seconds: float  # the benchmark itself
    switch_seconds: float  # the rest of a sample's wall time: kernel switch (build, boot), hooks

    @property
    def run_seconds(self) -> float:
        return self.sample_seconds + self.switch_seconds


def _seconds_between(start: Any, end: Any) -> float | None:
    try:
        return (datetime.fromisoformat(str(end)) - datetime.fromisoformat(str(start))).total_seconds()
    except (TypeError, ValueError):
        return None


def host_times(runs: Iterable[Json], host: str) -> HostTimes | None:
    """The host's typical sample from these runs (run JSONs, any host's: only `host`'s are read);
    None when none of its samples says how long it took."""
    benchmark: list[float] = []
    switching: list[float] = []
    for run in runs:
        if run.get("host") != host:
            continue
        for sample in run.get("samples") or []:
            wall = _seconds_between(sample.get("started_at"), sample.get("finished_at"))
            seconds = sample.get("seconds")
            if wall is None or not isinstance(seconds, int | float) or wall < 0 or seconds < 0:
                continue
            benchmark.append(float(seconds))
            switching.append(max(wall - float(seconds), 0.0))
    if not benchmark:
        return None
    return HostTimes(host, len(benchmark), statistics.median(benchmark), statistics.median(switching))


@dataclass(frozen=True)
class Estimate:
    """What a bisection of `commits` will likely take, with the budget it is judged against."""

    commits: int
    steps: int  # the check of the ends and the steps to narrow them
    runs_a_step: int  # likely: both sides of a step's first look
    most_runs_a_step: int  # both sides of the first attempt's every look
    times: HostTimes | None
    budget: BisectBudget

    @property
    def runs(self) -> int:
        return self.steps * self.runs_a_step

    @property
    def most_runs(self) -> int:
        return self.steps * self.most_runs_a_step

    @property
    def seconds(self) -> float | None:
        """The likely wall time; None without the host's times."""
        return None if self.times is None else self.runs * self.times.run_seconds

    def over_budget(self) -> str | None:
        """Why the likely bisection does not fit its wall-time budget, or None. (A cap of runs
        under the likely count is a person's choice to stop early: `runs_note` says so, and the
        bisection ends inconclusive with the range left.)"""
        seconds = self.seconds
        if seconds is not None and seconds > self.budget.max_seconds:
            return (f"it likely takes {duration(seconds)}, more than the {duration(self.budget.max_seconds)} "
                    f"--max-hours allows")
        return None

    def runs_note(self) -> str | None:
        """A line saying the run cap is under the likely runs, or None."""
        if self.runs > self.budget.max_runs:
            return (f"  note: it likely takes {self.runs} runs, more than --max-runs {self.budget.max_runs}: it "
                    f"will end inconclusive with the range left")
        return None

    def lines(self) -> list[str]:
        """The estimate as `triage bisect` prints it before it starts, one fact a line."""
        bisecting = steps_for(self.commits)
        lines = [f"estimate: {self.commits} commits, {self.steps} steps (the check of the ends, then ~log2 "
                 f"{self.commits} = {bisecting})",
                 f"  runs: {self.runs_a_step} a step when its evidence is clear, up to {self.most_runs_a_step} "
                 f"on a first attempt: {self.runs} likely, {self.most_runs} at most before a retry"]
        if self.times is None:
            lines.append("  time: unknown (no stored run on this host says how long a sample takes)")
        else:
            times = self.times
            lines.append(f"  time a run: {duration(times.switch_seconds)} switch (build, boot) + "
                         f"{duration(times.sample_seconds)} sample, the medians of {times.samples} samples on "
                         f"{times.host}")
            lines.append(f"  total: {duration(self.runs * times.run_seconds)} likely, "
                         f"{duration(self.most_runs * times.run_seconds)} at most; budget "
                         f"{duration(self.budget.max_seconds)}, {self.budget.max_runs} runs")
        note = self.runs_note()
        return lines + ([note] if note else [])


def estimate(commits: int, budget: BisectBudget, times: HostTimes | None) -> Estimate:
    """The estimate of a bisection of `commits` (after good, the last bad) under `budget`."""
    looks = budget.schedule(1).looks
    return Estimate(commits=commits, steps=1 + steps_for(commits), runs_a_step=2 * looks[0],
                    most_runs_a_step=2 * looks[-1], times=times, budget=budget)


def duration(seconds: float) -> str:
    """`45 s`, `12 min`, `3.5 h`, `2.1 days`: a length of time as a person reads it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
