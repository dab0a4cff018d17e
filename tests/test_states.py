"""Records: the triage states, their allowed moves, and the store refusing any other move."""
from __future__ import annotations

import pytest

from triagebot.records.states import OPEN_STATES, RUN_STATES, TriageState, triage_state
from triagebot.store.sql import SqlStore

S = TriageState

# Every move the daemon makes (flow.py), one line each.
ALLOWED = [
    (S.NEW, S.PLANNED),  # a plan for the closest host
    (S.NEW, S.REFUSED),  # no safe rerun could be planned
    (S.NEW, S.ERROR),  # planning failed (flow.fail_report)
    (S.PLANNED, S.RUNNING),  # the host is free: the run starts
    (S.PLANNED, S.ERROR),  # the run failed before it was under way
    (S.RUNNING, S.RUNNING),  # a run cut short by a crash is taken up again
    (S.RUNNING, S.PLANNED),  # stopped during a run: it starts over
    (S.RUNNING, S.CONFIRMED), (S.RUNNING, S.NOT_REPRODUCED), (S.RUNNING, S.INCONCLUSIVE),
    (S.RUNNING, S.ERROR),  # the verdict, or the run failed
    (S.RUNNING, S.A_A_ONLY),  # base and suspect ran on one kernel: noise, no verdict on the commit
]


def test_the_moves_are_exactly_the_table() -> None:
    allowed = {(before, after) for before in S for after in S if before.can_move_to(after)}
    assert allowed == set(ALLOWED)
    assert [state for state in S if state.final] == [
        S.CONFIRMED, S.NOT_REPRODUCED, S.INCONCLUSIVE, S.A_A_ONLY, S.ERROR, S.REFUSED]
    assert OPEN_STATES == (S.NEW, S.PLANNED, S.RUNNING) and RUN_STATES == (S.PLANNED, S.RUNNING)


def test_states_are_their_stored_text() -> None:
    # the values the triage table has always held: a database written before the enum reads the same
    assert [state.value for state in S] == [
        "new", "planned", "running", "confirmed", "not-reproduced", "inconclusive", "a-a-only", "error",
        "refused"]
    assert S.of("not-reproduced") is S.NOT_REPRODUCED
    assert S.NEW == "new" and f"{S.ERROR}" == "error"
    with pytest.raises(ValueError, match=r"unknown triage state 'done' \(one of new, planned, "):
        S.of("done")


def test_state_from_what_is_stored() -> None:
    assert triage_state() is S.NEW
    assert triage_state({"kind": "plan"}) is S.PLANNED
    assert triage_state({"kind": "refusal"}) is S.REFUSED
    assert triage_state({"kind": "plan"}, {"status": "running"}) is S.RUNNING
    assert triage_state({"kind": "plan"}, {"status": "error"}) is S.ERROR
    decided = {"verdict": {"outcome": "not-reproduced"}}
    assert triage_state({"kind": "plan"}, decided) is S.NOT_REPRODUCED
    # a same-kernel run stored before a-a-only existed (its statistics said not-reproduced)
    same_kernel = {"verdict": {"outcome": "not-reproduced", "host_can_switch_kernel": False}}
    assert triage_state({"kind": "plan"}, same_kernel) is S.A_A_ONLY


@pytest.fixture
def store(stores):
    with stores.open() as opened:
        opened.put_message("r@x", b"Message-ID: <r@x>\n\nbody\n", "eml", None,
                           "2026-12-01T00:00:00+00:00")
        opened.start_triage("r@x", "#perf")
        yield opened


def test_the_store_makes_the_daemons_moves(store: SqlStore) -> None:
    for state in ("planned", S.RUNNING, "running", "planned", "running", "confirmed"):
        store.set_triage("r@x", state)
        row = store.get_triage("r@x")
        assert row is not None and row.state == state and isinstance(row.state, S)


@pytest.mark.parametrize("path", [
    ("confirmed",),  # new cannot be decided without a run
    ("running",),  # nor run without a plan
    ("refused", "planned"),  # a refusal is final
    ("planned", "running", "error", "planned"),  # so is an error: nothing reruns it by itself
    ("planned", "new"),  # nothing goes back to new
])
def test_the_store_refuses_any_other_move_and_writes_nothing(store: SqlStore,
                                                             path: tuple[str, ...]) -> None:
    *before, last = path
    for state in before:
        store.set_triage("r@x", state)
    kept = store.get_triage("r@x")
    assert kept is not None
    with pytest.raises(ValueError, match=f"r@x: a report cannot move from {kept.state} to {last}"):
        store.set_triage("r@x", last, note="should not be kept")
    assert store.get_triage("r@x") == kept


def test_unknown_states_and_reports_without_a_row_are_refused(store: SqlStore) -> None:
    with pytest.raises(ValueError, match="unknown triage state 'done'"):
        store.set_triage("r@x", "done")
    with pytest.raises(ValueError, match="unknown triage state 'done'"):
        store.start_triage("r@x", "#perf", "done")
    with pytest.raises(ValueError, match="nobody@x: no triage row"):
        store.set_triage("nobody@x", "planned")
