"""Reproduce stage: what a rerun compares (base and suspect) and how many runs it may take."""
from __future__ import annotations

from triagebot.errors import TriageError
from triagebot.records.report import Report
from triagebot.verdict import sequential
from triagebot.verdict.sequential import LookSchedule


def commits_of(report: Report) -> tuple[str | None, str | None]:
    """(base, suspect): the report's base, else the culprit's parent, and its culprit."""
    culprit = next((commit.sha for commit in report.commits if commit.role == "culprit"), None)
    base = next((commit.sha for commit in report.commits if commit.role == "base"), None)
    return base or (f"{culprit}^" if culprit else None), culprit


def rounds_within(budget: int) -> LookSchedule:
    """The default rounds cut to at most `budget` runs a side (the looks' alpha is re-split)."""
    rounds = sequential.rounds_within(budget)
    if not rounds:
        least = LookSchedule().rounds[0]
        raise TriageError(f"--budget {budget}: at least {least} runs a side are needed")
    return LookSchedule(rounds=rounds)
