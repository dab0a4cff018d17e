"""Lifecycle stage: the states a report moves through after its verdict, and which moves are allowed.

These sit beside the triage states (triagebot/records/states.py), not in them: the triage state says what
the lab found; the lifecycle says what upstream did about it since. A report with no move yet is
`open`.

    open -> fix-proposed | fix-tested | fixed | reverted | stale | invalid
    fix-proposed -> fix-proposed (another patch) | fix-tested | fixed | reverted | stale | invalid
    fix-tested -> fix-proposed | fix-tested (another version, tested) | fixed | reverted | stale | invalid
    stale -> fix-proposed | fix-tested | fixed | reverted | invalid (activity wakes it)
    fixed, reverted, invalid: final
"""
from __future__ import annotations

from enum import StrEnum


class LifecycleState(StrEnum):
    OPEN = "open"
    FIX_PROPOSED = "fix-proposed"
    FIX_TESTED = "fix-tested"
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
_MOVES: dict[LifecycleState, frozenset[LifecycleState]] = {
    LifecycleState.OPEN: _AFTER_FIX | {LifecycleState.FIX_PROPOSED, LifecycleState.FIX_TESTED},
    LifecycleState.FIX_PROPOSED: _AFTER_FIX | {LifecycleState.FIX_PROPOSED, LifecycleState.FIX_TESTED},
    LifecycleState.FIX_TESTED: _AFTER_FIX | {LifecycleState.FIX_PROPOSED, LifecycleState.FIX_TESTED},
    LifecycleState.STALE: (_AFTER_FIX - {LifecycleState.STALE}) | {LifecycleState.FIX_PROPOSED,
                                                                      LifecycleState.FIX_TESTED},
    LifecycleState.FIXED: frozenset(),
    LifecycleState.REVERTED: frozenset(),
    LifecycleState.INVALID: frozenset(),
}

# How each state is shown on the Slack parent and in `triage show`.
EMOJI = {
    LifecycleState.FIX_PROPOSED: ":hammer_and_wrench:",
    LifecycleState.FIX_TESTED: ":test_tube:",
    LifecycleState.FIXED: ":white_check_mark:",
    LifecycleState.REVERTED: ":rewind:",
    LifecycleState.STALE: ":zzz:",
    LifecycleState.INVALID: ":heavy_multiplication_x:",
}


def current(states: list[str]) -> LifecycleState:
    """Where a report is after these stored moves (oldest first)."""
    return LifecycleState(states[-1]) if states else LifecycleState.OPEN
