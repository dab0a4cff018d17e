"""Actions stage: what a team member asks of a report from Slack, checked, then done as a state change.

An action (a button on the daemon's messages, a modal's submission, `/triage rerun`) is refused,
with its reason logged, told to the user, and nothing written, when:

- its request was acted on already (a replay: the same signed request, or the same Socket Mode
  envelope, delivered twice);
- the action is not one of ACTIONS;
- the acting user may not (rules/routing.toml `[slack]`: `run` to rerun, test a fix or bisect,
  `mark` to mark invalid or a duplicate, `send` to send the reply upstream);
- the report has no triage row, or is in a state the action does not apply to (`refusal`).

Otherwise it is done in ONE transaction, like any step of the daemon (flow.py): the action row
(who, what, when, the request's digest), the state change, and the thread reply saying who did
what; a crash keeps all three or none, and the outbox delivers the reply exactly once.

- A rerun moves the decided report back to `planned` with a bigger budget (or the one asked in
  the modal); on a host named in the modal, with a plan made for that host, and only that host
  runs it. The daemon's own run step (flow.run_planned) takes it up, so there is no second path
  to the lab.
- Mark invalid and duplicate of close the report to further actions; a duplicate is linked to
  the other report (`report_links`, relation `duplicate`).
- Test fix, bisect and send reply upstream are ASKED here and carried out by the daemon on its
  next pass (triagebot/actions/carry_out.py) through the same functions as `triage test-fix`,
  `triage bisect` and `triage reply --send`; their result is kept as a second action row
  (`<action>:done` or `<action>:failed`, request key `result:<id>`) with its thread reply. A
  send is asked only with the reply the person was shown (the modal, actions/upstream.py): that
  message is kept in the mail outbox with the ask, and it is what the daemon sends.

A double click is two requests: the first acts, the second finds the report moved on (or the
action asked already) and is refused.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass

from triagebot.lab.queue import RERUNS
from triagebot.logs import event
from triagebot.notify import render
from triagebot.records.states import TriageState
from triagebot.records.threads import normalize_message_id
from triagebot.reply.send import envelope, read_mail
from triagebot.rules.routing import Permissions
from triagebot.store.protocol import ActionRow, Store, TriageRow

log = logging.getLogger("triagebot.actions")

# each action and the permission it needs (rules/routing.toml [slack])
ACTIONS = {"rerun": "run", "rerun-on-host": "run", "test-fix": "run", "bisect": "run",
           "mark-invalid": "mark", "duplicate": "mark", "send-upstream": "send"}
ASKED = ("test-fix", "bisect", "send-upstream")  # carried out by the daemon's next pass (asked.py)
DECIDED = (TriageState.CONFIRMED, TriageState.NOT_REPRODUCED, TriageState.INCONCLUSIVE, TriageState.ERROR)
REPLIED = (TriageState.CONFIRMED, TriageState.NOT_REPRODUCED)  # the verdicts a reply upstream is drafted for
BUDGET_FACTOR = 2  # a rerun asked from Slack gets this many times the last run's budget
MAX_BUDGET = 200  # runs a side at most, however often a rerun is asked
DUPLICATE_RELATION = "duplicate"  # report_links.relation of a report marked a duplicate from Slack
CHECK_ONLY = "precheck"  # the request key of a check before a modal opens (nothing is done with it)


@dataclass(frozen=True)
class Request:
    """One request from Slack, as the app read it."""

    request_key: str  # digest of the signed request (or Socket Mode envelope): a replay has the same
    action: str
    message_id: str
    user_id: str
    budget: int | None = None  # a rerun's runs a side, from the modal (None: the last one doubled)
    host: str | None = None  # a rerun's host, from the modal (None: the schedule's choice)
    other_id: str | None = None  # duplicate of: the other report's Message-ID
    reply: tuple[str, bytes] | None = None  # send upstream: (its Message-ID, its bytes) as the modal showed it


@dataclass(frozen=True)
class Outcome:
    done: bool
    text: str  # what the acting user is told (a refusal: why)


def result_key(action_id: int) -> str:
    """The request key of an asked action's result row: one result per asked action."""
    return f"result:{action_id}"


def closed_by(actions: list[ActionRow]) -> str | None:
    """Why no more actions apply: marked invalid, or a duplicate; None when open."""
    for action in actions:
        if action.action in ("mark-invalid", "duplicate"):
            return f"the report is {action.detail.split(' (was', 1)[0]}"
    return None


def pending(actions: list[ActionRow], name: str) -> ActionRow | None:
    """The report's asked `name` (test-fix, bisect, send-upstream) without a result yet."""
    finished = {action.request_key for action in actions}
    return next((action for action in actions if action.action == name
                 and result_key(action.action_id) not in finished), None)


def refusal(request: Request, row: TriageRow | None, actions: list[ActionRow],
            known: Callable[[str], bool] = lambda _id: True, hosts: Collection[str] = ()) -> str | None:
    """Why the request does not apply to a report in this state (None: it applies)."""
    action = request.action
    if row is None:
        return "no such report is being triaged"
    closed = closed_by(actions)
    if closed is not None:
        return closed
    if action in RERUNS:
        if row.state not in DECIDED:
            return f"the report is {row.state}: only a decided report is rerun"
        if not row.plan or row.plan.get("kind") != "plan":
            return "the report has no plan to run"
        if request.budget is not None and not 1 <= request.budget <= MAX_BUDGET:
            return f"a budget of {request.budget} runs a side (from 1 to {MAX_BUDGET})"
        if action == "rerun-on-host" and request.host not in hosts:
            return f"no host {request.host!r} in hosts.toml that can switch kernels"
    elif action in ("test-fix", "bisect"):
        if row.state != TriageState.CONFIRMED:
            return f"the report is {row.state}: only a confirmed regression is {_verb(action)}"
    elif action == "send-upstream":
        if row.state not in REPLIED:
            return f"the report is {row.state}: a reply upstream is drafted for a confirmed or not-reproduced verdict"
        if any(item.action == "send-upstream:done" for item in actions):
            return "the reply upstream was sent already: it is sent once"
        if request.reply is None and request.request_key != CHECK_ONLY:
            return "a reply is sent only as it was shown: open Send reply upstream to see the draft and who it goes to"
    elif action == "duplicate":
        other = normalize_message_id(request.other_id or "")
        if not other:
            return "no Message-ID given for the other report"
        if other == normalize_message_id(request.message_id):
            return "a report is not a duplicate of itself"
        if not known(other):
            return f"no report <{other}> is stored"
    if action in ASKED and pending(actions, action) is not None:
        return f"a {action} is asked already and not done yet"
    return None


def _verb(action: str) -> str:
    return "fix-tested" if action == "test-fix" else "bisected"


def allowed(user_id: str, permission: str, permissions: Permissions,
            groups_of: Callable[[str], Collection[str]]) -> bool:
    """Whether the user is named for `permission`, or is in a user group named for it."""
    members = permissions.members(permission)
    if user_id in members:
        return True
    return any(member in groups_of(user_id) for member in members if member.startswith("S"))


def last_budget(actions: list[ActionRow], default_budget: int) -> int:
    reruns = [action.budget for action in actions if action.action in RERUNS and action.budget]
    return reruns[-1] if reruns else default_budget


@dataclass(frozen=True)
class Context:
    """What checking and doing an action needs besides the store and the request."""

    permissions: Permissions
    groups_of: Callable[[str], Collection[str]]  # a user's user groups (S…)
    default_budget: int
    hosts: tuple[str, ...] = ()  # hosts a rerun may be asked on (hosts.toml, those that switch kernels)
    plan_for_host: Callable[[Store, str, str], dict] | None = None  # (store, id, host) -> a plan made for it


def precheck(store: Store, request: Request, context: Context) -> str | None:
    """Why the request would be refused now (None: it would be taken): before a modal opens."""
    if request.action not in ACTIONS:
        return f"unknown action {request.action!r}"
    if not allowed(request.user_id, ACTIONS[request.action], context.permissions, context.groups_of):
        return (f"user {request.user_id} may not {request.action} (rules/routing.toml [slack] "
                f"{ACTIONS[request.action]})")
    row = store.get_triage(request.message_id)
    actions = store.actions_of(request.message_id) if row is not None else []
    checked = Request(CHECK_ONLY, "rerun" if request.action == "rerun-on-host" else request.action,
                      request.message_id, request.user_id, other_id=request.other_id or "<unknown@check>")
    return refusal(checked, row, actions)


def act(store: Store, request: Request, context: Context) -> Outcome:
    """Check and do one action (see the module text); the outcome says what happened and why."""
    def refuse(reason: str) -> Outcome:
        event(log, logging.WARNING, "slack action refused", event="action.refused", action=request.action,
              message_id=request.message_id, user=request.user_id, reason=reason)
        return Outcome(False, f"Not done: {reason}.")

    if request.action not in ACTIONS:
        return refuse(f"unknown action {request.action!r}")
    if store.has_request(request.request_key):
        return refuse("this request was acted on already (a replayed request)")
    if not allowed(request.user_id, ACTIONS[request.action], context.permissions, context.groups_of):
        return refuse(f"user {request.user_id} may not {request.action} (rules/routing.toml [slack] "
                      f"{ACTIONS[request.action]})")
    plan = None
    if request.action == "rerun-on-host" and request.host in context.hosts and context.plan_for_host is not None:
        try:  # made before the transaction: it may read the report's materials over HTTP
            plan = context.plan_for_host(store, request.message_id, request.host)
        except Exception as error:  # noqa: BLE001 - any failure to plan is this request's refusal
            return refuse(f"no plan on host {request.host}: {error}")
    with store.transaction():  # the checks below and the writes hold the one write lock
        row = store.get_triage(request.message_id)
        actions = store.actions_of(request.message_id)
        reason = refusal(request, row, actions, lambda other: store.get_record(other) is not None,
                         context.hosts)
        if reason is not None or row is None:
            outcome = None
        else:
            outcome = _do(store, request, row, actions, context.default_budget, plan)
            if outcome is None:
                reason = "this request was acted on already (a replayed request)"
    if outcome is None:
        return refuse(reason or "refused")
    event(log, logging.INFO, "slack action done", event="action.done", action=request.action,
          message_id=request.message_id, user=request.user_id, detail=outcome.text)
    return outcome


def _detail(request: Request, row: TriageRow, budget: int | None) -> str:
    was = f"(was {row.state})"
    if request.action == "rerun":
        return f"rerun asked with a budget of {budget} runs a side {was}"
    if request.action == "rerun-on-host":
        return f"rerun asked on {request.host} with a budget of {budget} runs a side {was}"
    if request.action == "mark-invalid":
        return f"marked invalid {was}"
    if request.action == "duplicate":
        return f"marked a duplicate of <{normalize_message_id(request.other_id or '')}> {was}"
    if request.action == "test-fix":
        return "asked for a test of the fix posted in the thread: the lab runs it on the daemon's next pass"
    if request.action == "bisect":
        return "asked for a bisection: the lab runs it on the daemon's next pass"
    count = len(envelope(read_mail(request.reply[1]))[1]) if request.reply else 0
    return (f"asked to send the reply upstream they were shown (to {count} recipient{'s' if count != 1 else ''}): "
            f"the daemon sends it once, on its next pass")


def _do(store: Store, request: Request, row: TriageRow, actions: list[ActionRow],
        default_budget: int, plan: dict | None) -> Outcome | None:
    """The writes of one action, inside the caller's transaction; None when the request was kept before."""
    budget = None
    if request.action in RERUNS:
        budget = request.budget or min(MAX_BUDGET, last_budget(actions, default_budget) * BUDGET_FACTOR)
    detail = _detail(request, row, budget)
    action_id = store.record_action(request.request_key, request.message_id, request.action, request.user_id,
                                    detail, budget)
    if action_id is None:
        return None
    if request.action == "rerun":
        store.set_triage(request.message_id, TriageState.PLANNED, note=detail, asked=True)
    elif request.action == "rerun-on-host":
        store.set_triage(request.message_id, TriageState.PLANNED, note=detail, asked=True, host=request.host,
                         plan=plan if plan is not None else row.plan)
    elif request.action == "duplicate":
        store.link_report(request.message_id, request.other_id or "", DUPLICATE_RELATION,
                          f"marked from Slack by {request.user_id}")
    elif request.action == "send-upstream" and request.reply is not None:
        # the message shown is the one kept (a reply stored before is kept as it is: it was the one shown)
        store.enqueue_mail(request.message_id, request.reply[0], request.reply[1], f"slack:{request.user_id}")
    text = f"<@{request.user_id}> {render.escape(detail)}"  # detail: plain text, may hold a typed id
    store.enqueue(request.message_id, f"action-{action_id}", row.channel, render.action_reply(text))
    return Outcome(True, f"Done: {detail}.")


def finish(store: Store, asked: ActionRow, done: bool, detail: str, channel: str) -> bool:
    """Keep an asked action's result and say it in the thread, in one transaction; False when a
    result was kept already (nothing written)."""
    with store.transaction():
        result_id = store.record_action(result_key(asked.action_id), asked.message_id,
                                        f"{asked.action}:{'done' if done else 'failed'}", asked.user_id, detail)
        if result_id is None:
            return False
        store.enqueue(asked.message_id, f"action-{result_id}", channel,
                      render.action_reply(f"<@{asked.user_id}> {asked.action}: {render.escape(detail)}"))
    return True
