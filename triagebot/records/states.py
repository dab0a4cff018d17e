"""Records: the triage states a report moves through, and which moves are allowed.

One place for them: the store refuses a move this table does not allow, the daemon's stages
(flow.py) make only these moves, and the notifier and `triage status` render them. Each value
is the text stored in the `triage` table, so a database written before this enum reads the same.

    new -> planned | refused | error (planning failed)
    planned -> running | error (the run failed before it started)
    running -> running (taken up again after a crash) | planned (stopped: starts over)
            | confirmed | not-reproduced | inconclusive | a-a-only | error
    confirmed, not-reproduced, inconclusive, a-a-only, error, refused: final

Final means nothing moves a report on by itself. A team member may ask for one more move
(triagebot/actions/act.py: "rerun with a bigger budget" in Slack): a decided report with a plan,
confirmed | not-reproduced | inconclusive | a-a-only | error -> planned (`can_move_to(..., asked=True)`).
"""
from __future__ import annotations

from enum import StrEnum
from typing import Any

# A stored run's status when it was interrupted (Ctrl-C, SIGTERM, the daemon stopping): the
# samples it took are kept, it has no verdict, and it is never resumed (reproduce/runner.py).
RUN_CUT_SHORT = "cut-short"


class TriageState(StrEnum):
    """Where a report is; compares equal to its stored text. Declared in the order shown."""

    NEW = "new"
    PLANNED = "planned"
    RUNNING = "running"
    CONFIRMED = "confirmed"
    NOT_REPRODUCED = "not-reproduced"
    INCONCLUSIVE = "inconclusive"
    A_A_ONLY = "a-a-only"  # base and suspect ran on one kernel: noise measured, no verdict on a commit
    ERROR = "error"
    REFUSED = "refused"

    @classmethod
    def of(cls, text: str) -> TriageState:
        """The state stored as `text`; ValueError naming the known states otherwise."""
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"unknown triage state {text!r} (one of {', '.join(cls)})") from None

    def can_move_to(self, state: str, *, asked: bool = False) -> bool:
        """Whether a report in this state may move to `state` (a state or its text); `asked`: a
        team member asked for the move (see the module text)."""
        return state in _MOVES[self] or (asked and state in _ASKED_MOVES.get(self, ()))

    @property
    def final(self) -> bool:
        """A decided (or refused) report: no move leaves this state."""
        return not _MOVES[self]


_MOVES: dict[TriageState, frozenset[TriageState]] = {
    TriageState.NEW: frozenset({TriageState.PLANNED, TriageState.REFUSED, TriageState.ERROR}),
    TriageState.PLANNED: frozenset({TriageState.RUNNING, TriageState.ERROR}),
    TriageState.RUNNING: frozenset({TriageState.RUNNING, TriageState.PLANNED, TriageState.CONFIRMED,
                                    TriageState.NOT_REPRODUCED, TriageState.INCONCLUSIVE,
                                    TriageState.A_A_ONLY, TriageState.ERROR}),
    TriageState.CONFIRMED: frozenset(),
    TriageState.NOT_REPRODUCED: frozenset(),
    TriageState.INCONCLUSIVE: frozenset(),
    TriageState.A_A_ONLY: frozenset(),
    TriageState.ERROR: frozenset(),
    TriageState.REFUSED: frozenset(),
}

# the moves a team member may ask for beyond the daemon's own: a decided report is run again
_ASKED_MOVES: dict[TriageState, frozenset[TriageState]] = {
    state: frozenset({TriageState.PLANNED}) for state in (
        TriageState.CONFIRMED, TriageState.NOT_REPRODUCED, TriageState.INCONCLUSIVE, TriageState.A_A_ONLY,
        TriageState.ERROR)}

OPEN_STATES = (TriageState.NEW, TriageState.PLANNED, TriageState.RUNNING)  # not yet decided
RUN_STATES = (TriageState.PLANNED, TriageState.RUNNING)  # waiting for (or cut off in) a run


def triage_state(plan: dict[str, Any] | None = None, run: dict[str, Any] | None = None,
                 verdict: dict[str, Any] | None = None) -> TriageState:
    """The state a report is in, from what is stored about it (plan, run and verdict JSON)."""
    verdict = verdict or (run or {}).get("verdict")
    if verdict and verdict.get("host_can_switch_kernel") is False:
        return TriageState.A_A_ONLY  # one kernel both sides, whatever an older run stored as its outcome
    if verdict:
        return TriageState.of(str(verdict["outcome"]))
    if run:
        return TriageState.ERROR if run.get("status") == "error" else TriageState.RUNNING
    if plan:
        return TriageState.REFUSED if plan.get("kind") == "refusal" else TriageState.PLANNED
    return TriageState.NEW
