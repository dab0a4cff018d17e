"""Bisection: where a bisection under way is, one sample at a time — the line a terminal prints
for each sample, the web page shows and the Slack thread's progress message is edited to.

    bisect: step 3 of ~7, sample 5, 2 min elapsed, about 9 min left

Pure: the step and sample counts and a clock's readings in; `Progress` (stored with the
bisection as `progress`) and its line out. Time left is the likely runs still to take (the
rest of this step's first look, then the likely runs of each step still to come) at the time
a run has taken so far in this bisection, or, before its first sample, the host's stored
history (estimate.py); with neither it is not said.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from triagebot.bisect.estimate import duration

Json = dict[str, Any]


@dataclass(frozen=True)
class Progress:
    step: int  # from 1: the check of the ends is step 1
    steps: int  # the steps the bisection likely takes, as it stands
    sample: int  # samples taken in this step's attempt so far
    runs: int  # samples taken in the whole bisection so far
    elapsed_seconds: float
    left_seconds: float | None  # None: no time a run is known yet

    def text(self) -> str:
        """`step 3 of ~7, sample 5, 2 min elapsed, about 9 min left`."""
        left = "" if self.left_seconds is None else f", about {duration(self.left_seconds)} left"
        elapsed = duration(self.elapsed_seconds)
        return f"step {self.step} of ~{self.steps}, sample {self.sample}, {elapsed} elapsed{left}"

    def line(self) -> str:
        """The terminal's line: `bisect: ` and the text."""
        return f"bisect: {self.text()}"

    def to_json(self) -> Json:
        return {"step": self.step, "steps": self.steps, "sample": self.sample, "runs": self.runs,
                "elapsed_seconds": round(self.elapsed_seconds, 1),
                "left_seconds": None if self.left_seconds is None else round(self.left_seconds, 1),
                "line": self.line(), "text": self.text()}


def progress(step: int, steps: int, sample: int, runs: int, elapsed_seconds: float, *, runs_a_step: int,
             history_run_seconds: float | None = None) -> Progress:
    """Where the bisection is after `runs` samples in all, `sample` of them in this step's attempt."""
    run_seconds = elapsed_seconds / runs if runs else history_run_seconds
    still = max(runs_a_step - sample, 0) + max(steps - step, 0) * runs_a_step
    left = None if run_seconds is None else still * run_seconds
    return Progress(step, steps, sample, runs, elapsed_seconds, left)
