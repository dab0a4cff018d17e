"""Actions stage: what a team member asks of a report from Slack, checked, then done as a state change.

An action (a button on the daemon's messages, `/triage rerun`) is refused, with its reason
logged and nothing written, when:

- its request was acted on already (a replay: the same signed request delivered twice);
- the action is not one of ACTIONS;
- the acting user may not (rules/routing.toml `[slack]`: `run` for a rerun, `mark` to mark);
- the report has no triage row, or is in a state the action does not apply to (`refusal`).

Otherwise it is done in ONE transaction, like any step of the daemon (flow.py): the action row
(who, what, when, the request's digest), the state change, and the thread reply saying who did
what; a crash keeps all three or none, and the outbox delivers the reply exactly once. A rerun
moves the decided report back to `planned` with a bigger budget: the daemon's own run step
(flow.run_planned) takes it up on its next pass, so there is no second path to the lab. A
double click is two requests: the first moves the report, the second finds it planned and is
refused.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass

from triagebot.logs import event
from triagebot.notify import render
from triagebot.rules.routing import Permissions
from triagebot.states import TriageState
from triagebot.store.protocol import ActionRow, Store, TriageRow

log = logging.getLogger("triagebot.actions")

ACTIONS = {"rerun": "run", "mark-invalid": "mark"}  # each action and the permission it needs
DECIDED = (TriageState.CONFIRMED, TriageState.NOT_REPRODUCED, TriageState.INCONCLUSIVE, TriageState.ERROR)
BUDGET_FACTOR = 2  # a rerun asked from Slack gets this many times the last run's budget
MAX_BUDGET = 200  # runs a side at most, however often a rerun is asked


@dataclass(frozen=True)
class Request:
    """One signed request from Slack, as the app read it."""

    request_key: str  # digest of the signed request (timestamp and body): a replay has the same
    action: str
    message_id: str
    user_id: str


@dataclass(frozen=True)
class Outcome:
    done: bool
    text: str  # what the acting user is told (a refusal: why)


def is_invalid(actions: list[ActionRow]) -> bool:
    return any(action.action == "mark-invalid" for action in actions)


def refusal(action: str, row: TriageRow | None, invalid: bool) -> str | None:
    """Why `action` does not apply to a report in this state (None: it applies)."""
    if row is None:
        return "no such report is being triaged"
    if invalid:
        return "the report is marked invalid"
    if action == "rerun":
        if row.state not in DECIDED:
            return f"the report is {row.state}: only a decided report is rerun"
        if not row.plan or row.plan.get("kind") != "plan":
            return "the report has no plan to run"
    return None


def allowed(user_id: str, permission: str, permissions: Permissions,
            groups_of: Callable[[str], Collection[str]]) -> bool:
    """Whether the user is named for `permission`, or is in a user group named for it."""
    members = permissions.members(permission)
    if user_id in members:
        return True
    return any(member in groups_of(user_id) for member in members if member.startswith("S"))


def last_budget(actions: list[ActionRow], default_budget: int) -> int:
    reruns = [action.budget for action in actions if action.action == "rerun" and action.budget]
    return reruns[-1] if reruns else default_budget


def act(store: Store, request: Request, permissions: Permissions, groups_of: Callable[[str], Collection[str]],
        default_budget: int) -> Outcome:
    """Check and do one action (see the module text); the outcome says what happened and why."""
    def refuse(reason: str) -> Outcome:
        event(log, logging.WARNING, "slack action refused", event="action.refused", action=request.action,
              message_id=request.message_id, user=request.user_id, reason=reason)
        return Outcome(False, f"Not done: {reason}.")

    if request.action not in ACTIONS:
        return refuse(f"unknown action {request.action!r}")
    if store.has_request(request.request_key):
        return refuse("this request was acted on already (a replayed request)")
    if not allowed(request.user_id, ACTIONS[request.action], permissions, groups_of):
        return refuse(f"user {request.user_id} may not {request.action} (rules/routing.toml [slack] "
                      f"{ACTIONS[request.action]})")
    with store.transaction():  # the checks below and the writes hold the one write lock
        row = store.get_triage(request.message_id)
        actions = store.actions_of(request.message_id)
        reason = refusal(request.action, row, is_invalid(actions))
        if reason is not None or row is None:
            outcome = None
        else:
            outcome = _do(store, request, row, actions, default_budget)
            if outcome is None:
                reason = "this request was acted on already (a replayed request)"
    if outcome is None:
        return refuse(reason or "refused")
    event(log, logging.INFO, "slack action done", event="action.done", action=request.action,
          message_id=request.message_id, user=request.user_id, detail=outcome.text)
    return outcome


def _do(store: Store, request: Request, row: TriageRow, actions: list[ActionRow],
        default_budget: int) -> Outcome | None:
    """The writes of one action, inside the caller's transaction; None when the request was kept before."""
    budget = None
    if request.action == "rerun":
        budget = min(MAX_BUDGET, last_budget(actions, default_budget) * BUDGET_FACTOR)
        detail = f"rerun asked with a budget of {budget} runs a side (was {row.state})"
    else:
        detail = f"marked invalid (was {row.state})"
    action_id = store.record_action(request.request_key, request.message_id, request.action, request.user_id,
                                    detail, budget)
    if action_id is None:
        return None
    if request.action == "rerun":
        store.set_triage(request.message_id, TriageState.PLANNED, note=detail, asked=True)
    text = f"<@{request.user_id}> {detail}"
    store.enqueue(request.message_id, f"action-{action_id}", row.channel, render.action_reply(text))
    return Outcome(True, f"Done: {detail}.")
