"""Lifecycle stage: the states a report moves through after its verdict, and which moves are allowed.

These sit beside the triage states (triagebot/records/states.py), not in them: the triage state says what
the lab found; the lifecycle says what upstream did about it since. A report with no move yet is
`open`. The fix states mean what regzbot means by them, which kernel people know:

- fix-proposed: a fix is incoming — a patch posted (mail) that names the culprit (`Fixes:`), links
  the report (`Closes:`/`Link:`), reverts the culprit, or sits in the report's thread;
- fix-tested: the lab measured a proposed fix (fix_test/);
- fix-queued: the fix is a commit of a watched tree upstream of the regression's tree (linux-next
  for a mainline regression): on its way, not there yet;
- fixed / reverted: the fix (or the revert of the culprit) is a commit of the regression's own
  tree (mainline by default);
- stale: no activity for a number of days; invalid: a person said so (`#regzbot invalid`).

    open -> fix-proposed | fix-tested | fix-queued | fixed | reverted | stale | invalid
    fix-proposed, fix-tested -> fix-proposed | fix-tested | fix-queued | fixed | reverted | stale | invalid
    fix-queued -> fix-queued (another tree or commit) | fixed | reverted | stale | invalid
    stale -> fix-proposed | fix-tested | fix-queued | fixed | reverted | invalid (activity wakes it)
    fixed, reverted, invalid: final

A queued fix is not taken back by a later patch posted or tested (fix-queued never moves back to
fix-proposed or fix-tested; a fix test's result is still stored and posted).
"""
from __future__ import annotations

from enum import StrEnum


class LifecycleState(StrEnum):
    OPEN = "open"
    FIX_PROPOSED = "fix-proposed"
    FIX_TESTED = "fix-tested"
    FIX_QUEUED = "fix-queued"
    FIXED = "fixed"
    REVERTED = "reverted"
    STALE = "stale"
    INVALID = "invalid"

    def can_move_to(self, state: str) -> bool:
        return state in _MOVES[self]

    @property
    def final(self) -> bool:
        return not _MOVES[self]


_AFTER_FIX = frozenset({LifecycleState.FIXED, LifecycleState.REVERTED, LifecycleState.STALE, LifecycleState.INVALID})
_ON_THE_WAY = frozenset({LifecycleState.FIX_PROPOSED, LifecycleState.FIX_TESTED, LifecycleState.FIX_QUEUED})
_MOVES: dict[LifecycleState, frozenset[LifecycleState]] = {
    LifecycleState.OPEN: _AFTER_FIX | _ON_THE_WAY,
    LifecycleState.FIX_PROPOSED: _AFTER_FIX | _ON_THE_WAY,
    LifecycleState.FIX_TESTED: _AFTER_FIX | _ON_THE_WAY,
    LifecycleState.FIX_QUEUED: _AFTER_FIX | {LifecycleState.FIX_QUEUED},
    LifecycleState.STALE: (_AFTER_FIX - {LifecycleState.STALE}) | _ON_THE_WAY,
    LifecycleState.FIXED: frozenset(),
    LifecycleState.REVERTED: frozenset(),
    LifecycleState.INVALID: frozenset(),
}

# How each state is shown on the Slack parent and in `triage show`.
EMOJI = {
    LifecycleState.FIX_PROPOSED: ":hammer_and_wrench:",
    LifecycleState.FIX_TESTED: ":test_tube:",
    LifecycleState.FIX_QUEUED: ":inbox_tray:",
    LifecycleState.FIXED: ":white_check_mark:",
    LifecycleState.REVERTED: ":rewind:",
    LifecycleState.STALE: ":zzz:",
    LifecycleState.INVALID: ":heavy_multiplication_x:",
}


def current(states: list[str]) -> LifecycleState:
    """Where a report is after these stored moves (oldest first)."""
    return LifecycleState(states[-1]) if states else LifecycleState.OPEN
