"""Lifecycle stage: one regression, one report — whether a later report is the same regression as
an earlier one. Pure: two records in, a relation out.

The rule for "same" (docs/lifecycle-and-reply.md, "One regression, one report"):

1. both are reports (LKP regression or improvement, or a human report) naming a culprit commit;
2. the culprits are the same commit: the same sha (7 hex digits or more, the shorter a prefix of
   the longer), or — a commit keeps its subject when linux-next's sha becomes mainline's — the
   same subject (compared without case and spacing, at least 3 words, never a merge or a revert);
3. then the later report joins the first as `also-seen` when both go the same direction (both
   regressions: another testcase, machine or tree), and is `linked` when one is an improvement
   and the other a regression of that commit: a different finding, not merged into it.

Nothing else counts: the same testcase on another culprit is another regression.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from triagebot.lifecycle.detect import same_commit
from triagebot.records.report import Report

REPORT_KINDS = ("lkp-regression", "lkp-improvement", "human-report")
ALSO_SEEN = "also-seen"
LINKED = "linked"
MIN_SUBJECT_WORDS = 3


def culprit(report: Report) -> tuple[str, str | None] | None:
    """The culprit's sha and subject, for a report that names one."""
    if report.kind not in REPORT_KINDS:
        return None
    commit = next((commit for commit in report.commits if commit.role == "culprit"), None)
    return (commit.sha.lower(), commit.subject) if commit else None


def direction(report: Report) -> str:
    """regression / improvement: the headline's, else the kind's (a human report claims a slowdown)."""
    if report.headline is not None:
        return report.headline.direction
    return "improvement" if report.kind == "lkp-improvement" else "regression"


def subject_key(subject: str | None) -> str | None:
    """A culprit subject that may stand for its commit across trees, normalized; None if it may not."""
    if not subject:
        return None
    words = subject.lower().split()
    if len(words) < MIN_SUBJECT_WORDS or words[0] in ("merge", "revert", 'revert"'):
        return None
    return " ".join(words)


def same_culprit(first: Report, later: Report) -> str | None:
    """Which rule says the culprits are one commit ("sha" / "subject"), None when they are not."""
    one, other = culprit(first), culprit(later)
    if one is None or other is None:
        return None
    if same_commit(one[0], other[0]):
        return "sha"
    key = subject_key(one[1])
    if key is not None and key == subject_key(other[1]):
        return "subject"
    return None


def relation(first: Report, later: Report) -> tuple[str, str] | None:
    """(also-seen | linked, the rule that said so) for a later report of `first`'s regression."""
    rule = same_culprit(first, later)
    if rule is None:
        return None
    if direction(first) == direction(later):
        return ALSO_SEEN, f"same culprit ({rule})"
    return LINKED, f"same culprit ({rule}), other direction"



def dated_before(one: Report, other: Report) -> bool:
    """Whether `one` was written before `other` (an undated report is not "before" anything)."""
    try:
        first, second = datetime.fromisoformat(one.date or ""), datetime.fromisoformat(other.date or "")
    except ValueError:
        return False
    if first.tzinfo is None or second.tzinfo is None:
        return False
    return first < second


def first_of(key: str, report: Report, earlier: Sequence[tuple[str, Report]],
             is_joined: Callable[[str], bool]) -> tuple[str, Report] | None:
    """The first report of `report`'s regression among `earlier` (oldest first): the oldest dated
    before it, of the same culprit, and not itself joined to another."""
    for candidate_key, candidate in earlier:
        if candidate_key == key or not dated_before(candidate, report):
            continue
        if relation(candidate, report) is not None and not is_joined(candidate_key):
            return candidate_key, candidate
    return None
