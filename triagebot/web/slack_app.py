"""Web stage: Slack's side of the daemon — buttons and the `/triage` command, through slack-bolt.

One POST endpoint (`SLACK_PATH`) takes both Slack's interactivity payloads (a button clicked
on a parent or verdict message) and the `/triage` slash command. Before bolt sees a request,
its signature is checked here against the signing secret (slack-sdk's `SignatureVerifier`, the
v0 HMAC Slack computes) and its timestamp must be within five minutes of now: a forged, unsigned
or stale request is refused with 401 and a logged reason, and nothing is read from it. Bolt's
own request verification stays on with the same secret.

`/triage show <message-id>`, `status` and `queue` answer the user alone (an ephemeral reply);
`/triage rerun <message-id>` and the buttons act through triagebot/actions/act.py (checks, one
transaction with the thread reply). "Rerun with…" and "Duplicate of…" open a modal
(views.open) whose submission is the action. A refused action answers the clicking user with
the reason in an ephemeral message (chat.postEphemeral), besides the logged reason. The
listeners run on a worker thread, each with its own store connection, never on the event loop
that serves /healthz.

`socket_mode` serves the same app over Socket Mode (the app-level token; slack_sdk's built-in
WebSocket client), for a team without a public endpoint: Slack's envelopes come over the
socket, already authenticated, and are acked on it.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from slack_bolt import App, BoltRequest
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import Clock, SignatureVerifier
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from triagebot.actions import act as actions
from triagebot.actions import decide as decisions
from triagebot.errors import TriageError
from triagebot.logs import event
from triagebot.notify.render import escape
from triagebot.records.states import RUN_STATES
from triagebot.rules.routing import PERMISSIONS, Permissions, Routing
from triagebot.store.protocol import Store

log = logging.getLogger("triagebot.slack")

SLACK_PATH = "/slack/events"  # the interactivity URL and the slash command's request URL
MAX_AGE_SECONDS = 300  # Slack's own advice: a request older than five minutes may be a replay
MAX_BODY = 64 * 1024  # Slack's payloads are a few kilobytes
USAGE = ("Usage: `/triage show <message-id>`, `/triage status`, `/triage queue`, `/triage rerun <message-id>`, "
         "`/triage take-on <message-id>`, `/triage dismiss <message-id>`")
_MAILTO = re.compile(r"^<mailto:([^|>]+)(\|[^>]*)?>$")  # Slack links what looks like an address


@dataclass(frozen=True)
class SlackSettings:
    """What the app needs: the signing secret (SLACK_SIGNING_SECRET; the HTTP endpoint), the
    app-level token (SLACK_APP_TOKEN; Socket Mode), the bot's token and API address, who may
    act, how to open the store, and the lab hosts a rerun may be asked on."""

    signing_secret: str
    token: str
    open_store: Callable[[], AbstractContextManager[Store]]
    permissions: Permissions
    budget: int = 20  # the daemon's runs a side: a rerun asked from Slack doubles the last
    api_url: str | None = None
    clock: Clock = Clock()
    app_token: str | None = None  # xapp-…: Socket Mode instead of (or beside) the HTTP endpoint
    hosts: tuple[str, ...] = ()  # hosts.toml hosts that switch kernels: the modal's choices
    plan_for_host: Callable[[Store, str, str], dict] | None = None  # flow.plan_for_host with the rules
    routing: Routing = field(default_factory=Routing)  # where a report taken on from the digest is posted


def message_id_of(text: str) -> str:
    """A message id as typed in Slack: `<id>`, `id`, or Slack's mailto link of it."""
    text = text.strip()
    linked = _MAILTO.match(text)
    if linked:
        return linked.group(1)
    return text.removeprefix("<").removesuffix(">")


def request_key(request: BoltRequest) -> str:
    """The digest of a request: a replay of it has the same. Over HTTP the timestamp and body are
    signed; in Socket Mode a redelivered envelope carries the same payload."""
    if request.mode == "socket_mode":
        return hashlib.sha256(b"socket:" + json.dumps(request.body, sort_keys=True).encode()).hexdigest()
    stamp = (request.headers.get("x-slack-request-timestamp") or [""])[0]
    return hashlib.sha256(f"{stamp}:".encode() + request.raw_body.encode()).hexdigest()


def _refused(reason: str, status: int = 401) -> Response:
    event(log, logging.WARNING, "slack request refused", event="slack.refused", reason=reason)
    return PlainTextResponse(f"refused: {reason}\n", status_code=status)


def _show(store: Store, message_id: str) -> str:
    """Every stored or typed piece is escaped: a Message-ID of `!channel` or one holding `<`, `>`
    or `&` is shown as text, never read by Slack as a mention or a link."""
    row = store.get_triage(message_id)
    if row is None:
        return escape(f"No report <{message_id}> is being triaged.")
    lines = [f"*{escape(f'<{row.message_id}>')}*: {row.state}",
             escape(f"channel {row.channel}, host {row.host or '-'}")]
    if row.note:
        lines.append(escape(f"note: {row.note}"))
    lines += [f"{action.created_at} <@{action.user_id}> {escape(action.detail)}"
              for action in store.actions_of(message_id)]
    return "\n".join(lines)


def _queue(store: Store) -> str:
    rows = store.triage_in(*RUN_STATES)
    if not rows:
        return "The queue is empty."
    return "\n".join(escape(f"{row.state} on {row.host or '-'}: <{row.message_id}>") for row in rows)


def _status(store: Store) -> str:
    counts = store.triage_counts()
    return "Reports: " + (", ".join(f"{state} {count}" for state, count in sorted(counts.items())) or "none")


MODALS = {"rerun-with": "rerun", "duplicate": "duplicate"}  # buttons that open a modal, and their action
DECIDE = "decide"  # a digest line's button: a modal to take the reading on or dismiss it (issue 38)
DISMISS = "dismiss"  # a digest line of a reply's unsure stance: dismissed at once


def _input(block_id: str, label: str, element: dict[str, Any], optional: bool = False) -> dict[str, Any]:
    return {"type": "input", "block_id": block_id, "optional": optional,
            "label": {"type": "plain_text", "text": label}, "element": {**element, "action_id": "value"}}


def modal(callback_id: str, message_id: str, channel: str, budget: int, hosts: tuple[str, ...]) -> dict[str, Any]:
    """The modal a button opens (views.open): a rerun's budget and host, or the other report's id."""
    metadata = json.dumps({"message_id": message_id, "channel": channel})
    if callback_id == "rerun-with":
        title, submit = "Rerun", "Rerun"
        blocks = [_input("budget", "Runs a side", {"type": "plain_text_input", "initial_value": str(budget)})]
        if hosts:
            blocks.append(_input("host", "On host (empty: the schedule's choice)", {
                "type": "static_select", "options": [{"text": {"type": "plain_text", "text": host}, "value": host}
                                                     for host in hosts[:100]]}, optional=True))
    else:
        title, submit = "Duplicate of", "Mark"
        example = {"type": "plain_text", "text": "20240415071244.1234@example.org"}
        blocks = [_input("other", "Message-ID of the other report",
                         {"type": "plain_text_input", "placeholder": example})]
    return {"type": "modal", "callback_id": callback_id, "private_metadata": metadata,
            "title": {"type": "plain_text", "text": title}, "submit": {"type": "plain_text", "text": submit},
            "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": f"*<{message_id}>*"}}, *blocks]}


def decide_modal(message_id: str, channel: str) -> dict[str, Any]:
    """The modal a digest line's button opens: take the reading on, or dismiss it, with a note."""
    metadata = json.dumps({"message_id": message_id, "channel": channel})
    choices = [{"text": {"type": "plain_text", "text": "Take it on: plan and rerun it"}, "value": "take-on"},
               {"text": {"type": "plain_text", "text": "Dismiss it: not a report to act on"}, "value": "dismiss"}]
    return {"type": "modal", "callback_id": DECIDE, "private_metadata": metadata,
            "title": {"type": "plain_text", "text": "Unsure reading"},
            "submit": {"type": "plain_text", "text": "Decide"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{escape(f'<{message_id}>')}*"}},
                       _input("decision", "Decision", {"type": "static_select", "options": choices}),
                       _input("note", "Why (kept with the label)", {"type": "plain_text_input"}, optional=True)]}


def _value(view: dict[str, Any], block_id: str) -> str:
    item = ((view.get("state") or {}).get("values") or {}).get(block_id, {}).get("value") or {}
    selected = item.get("selected_option") or {}
    return str(item.get("value") or selected.get("value") or "").strip()


def build_bolt_app(settings: SlackSettings) -> App:
    """The bolt app: the `/triage` command, every button (an unknown one is refused) and the modals."""
    client = WebClient(token=settings.token, base_url=settings.api_url or WebClient.BASE_URL)
    app = App(client=client, signing_secret=settings.signing_secret or None, token_verification_enabled=False,
              request_verification_enabled=bool(settings.signing_secret), process_before_response=True,
              logger=log)
    group_ids = {member for permission in PERMISSIONS for member in settings.permissions.members(permission)
                 if member.startswith("S")}

    def groups_of(user_id: str) -> Collection[str]:
        found = set()
        for group in group_ids:
            try:
                members = client.usergroups_users_list(usergroup=group).get("users", [])
            except SlackApiError as error:  # a group gone or unreadable grants nothing: said, not fatal
                event(log, logging.WARNING, "slack user group unreadable", event="slack.usergroup", group=group,
                      error=str(error.response.get("error")))
                continue
            if user_id in members:
                found.add(group)
        return found

    context = actions.Context(settings.permissions, groups_of, settings.budget, settings.hosts,
                              settings.plan_for_host)

    def act(request: actions.Request) -> actions.Outcome:
        with settings.open_store() as store:
            return actions.act(store, request, context)

    def decide(key: str, message_id: str, decision: str, user_id: str, note: str = "") -> actions.Outcome:
        """A digest line decided: checked against the user's permission, then kept (actions/decide.py)."""
        permission = decisions.PERMISSION.get(decision, "run")
        if not actions.allowed(user_id, permission, settings.permissions, groups_of):
            reason = f"user {user_id} may not {decision} (rules/routing.toml [slack] {permission})"
            event(log, logging.WARNING, "slack action refused", event="action.refused", action=decision,
                  message_id=message_id, user=user_id, reason=reason)
            return actions.Outcome(False, f"Not done: {reason}.")
        with settings.open_store() as store:
            return decisions.decide(store, settings.routing, decisions.Decision(key, message_id, decision, user_id,
                                                                                "slack", note))

    def tell(channel: str | None, user_id: str, text: str) -> None:
        """An ephemeral message: only the clicking user sees it (a refusal's reason, plain text that
        may carry what the user typed: escaped)."""
        if channel:
            client.chat_postEphemeral(channel=channel, user=user_id, text=escape(text))

    @app.command("/triage")
    def command(ack: Callable[..., Any], command: dict[str, Any], request: BoltRequest) -> None:
        words = (command.get("text") or "").split(maxsplit=1)
        verb, rest = (words[0].lower() if words else ""), (words[1] if len(words) > 1 else "")
        if verb == "rerun" and rest:
            ack(text=escape(act(actions.Request(request_key(request), "rerun", message_id_of(rest),
                                                command["user_id"])).text))
            return
        if verb in decisions.PERMISSION and rest:  # take-on / dismiss: a digest line decided by command
            ack(text=escape(decide(request_key(request), message_id_of(rest), verb, command["user_id"]).text))
            return
        with settings.open_store() as store:
            if verb == "show" and rest:
                ack(text=_show(store, message_id_of(rest)))
            elif verb == "status":
                ack(text=_status(store))
            elif verb == "queue":
                ack(text=_queue(store))
            else:
                event(log, logging.WARNING, "slack command refused", event="action.refused",
                      user=command.get("user_id"), reason=f"unknown /triage command {verb!r}")
                ack(text=escape(USAGE))

    @app.action(re.compile(".*"))
    def button(ack: Callable[..., Any], action: dict[str, Any], body: dict[str, Any], request: BoltRequest) -> None:
        ack()
        action_id, user_id = str(action.get("action_id")), body["user"]["id"]
        message_id = str(action.get("value") or "")
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        if action_id == DECIDE:
            client.views_open(trigger_id=body["trigger_id"], view=decide_modal(message_id, channel or ""))
            return
        if action_id == DISMISS:
            outcome = decide(request_key(request), message_id, "dismiss", user_id)
            if not outcome.done:
                tell(channel, user_id, outcome.text)
            return
        if action_id in MODALS:
            with settings.open_store() as store:
                reason = actions.precheck(store, actions.Request(request_key(request), MODALS[action_id], message_id,
                                                                 user_id), context)
                budget = min(actions.MAX_BUDGET, actions.BUDGET_FACTOR * actions.last_budget(
                    store.actions_of(message_id), settings.budget))
            if reason is not None:
                event(log, logging.WARNING, "slack action refused", event="action.refused", action=action_id,
                      message_id=message_id, user=user_id, reason=reason)
                tell(channel, user_id, f"Not done: {reason}.")
                return
            client.views_open(trigger_id=body["trigger_id"],
                              view=modal(action_id, message_id, channel or "", budget, settings.hosts))
            return
        outcome = act(actions.Request(request_key(request), action_id, message_id, user_id))
        if not outcome.done:
            tell(channel, user_id, outcome.text)

    @app.view(DECIDE)
    def decided(ack: Callable[..., Any], body: dict[str, Any], view: dict[str, Any], request: BoltRequest) -> None:
        user_id = body["user"]["id"]
        try:
            metadata = json.loads(view.get("private_metadata") or "{}")
            message_id, channel = str(metadata["message_id"]), metadata.get("channel")
        except (ValueError, KeyError, TypeError):
            ack(response_action="errors",
                errors={"decision": "this form lost which reading it is about: open it again"})
            return
        decision = _value(view, "decision")
        if decision not in decisions.PERMISSION:
            ack(response_action="errors", errors={"decision": "take it on, or dismiss it"})
            return
        ack()
        outcome = decide(request_key(request), message_id, decision, user_id, _value(view, "note"))
        if not outcome.done:
            tell(channel, user_id, outcome.text)

    @app.view(re.compile("^(rerun-with|duplicate)$"))
    def submitted(ack: Callable[..., Any], body: dict[str, Any], view: dict[str, Any], request: BoltRequest) -> None:
        user_id = body["user"]["id"]
        try:
            metadata = json.loads(view.get("private_metadata") or "{}")
            message_id, channel = str(metadata["message_id"]), metadata.get("channel")
        except (ValueError, KeyError, TypeError):
            ack(response_action="errors", errors={"budget" if view.get("callback_id") == "rerun-with" else "other":
                                                  "this form lost which report it is about: open it again"})
            return
        if view.get("callback_id") == "rerun-with":
            budget_text, host = _value(view, "budget"), _value(view, "host") or None
            if not budget_text.isdigit() or not 1 <= int(budget_text) <= actions.MAX_BUDGET:
                ack(response_action="errors",
                    errors={"budget": f"a whole number of runs a side, from 1 to {actions.MAX_BUDGET}"})
                return
            request_ = actions.Request(request_key(request), "rerun-on-host" if host else "rerun", message_id,
                                       user_id, budget=int(budget_text), host=host)
        else:
            other = message_id_of(_value(view, "other"))
            if not other:
                ack(response_action="errors", errors={"other": "the other report's Message-ID"})
                return
            request_ = actions.Request(request_key(request), "duplicate", message_id, user_id, other_id=other)
        ack()
        outcome = act(request_)
        if not outcome.done:
            tell(channel, user_id, outcome.text)

    return app


def socket_mode(settings: SlackSettings) -> Any:
    """The app over Socket Mode (slack-bolt's handler on slack_sdk's built-in client), connected
    with the app-level token: for a team without a public endpoint. `.close()` ends it."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    if not settings.app_token:
        raise ValueError("Socket Mode needs the app-level token (SLACK_APP_TOKEN, xapp-…)")
    handler = SocketModeHandler(build_bolt_app(settings), settings.app_token)
    try:
        handler.connect()
    except SlackApiError as error:
        raise TriageError(f"SLACK_APP_TOKEN does not work: slack apps.connections.open failed: "
                          f"{error.response.get('error')}") from None
    except OSError as error:
        raise TriageError(f"Socket Mode: cannot reach Slack to open the connection: {error}") from None
    event(log, logging.INFO, "slack socket mode connected", event="slack.socket_mode")
    return handler


def slack_routes(settings: SlackSettings) -> list[Route]:
    """The one route Slack POSTs to, its signature and age checked before bolt reads it."""
    app = build_bolt_app(settings)
    verifier = SignatureVerifier(settings.signing_secret, clock=settings.clock)

    async def endpoint(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY:
            return _refused(f"a body of {len(body)} bytes (at most {MAX_BODY})", 413)
        stamp = request.headers.get("x-slack-request-timestamp", "")
        signature = request.headers.get("x-slack-signature", "")
        if not stamp or not signature:
            return _refused("unsigned request (no X-Slack-Signature or X-Slack-Request-Timestamp)")
        if not stamp.isdigit():
            return _refused(f"a request timestamp that is not a number: {stamp[:40]!r}")
        age = settings.clock.now() - int(stamp)
        if abs(age) > MAX_AGE_SECONDS:
            return _refused(f"a stale request: its timestamp is {int(age)} s from now (at most {MAX_AGE_SECONDS})")
        if not verifier.is_valid(body, stamp, signature):
            return _refused("a signature that does not match the signing secret (forged, or another app's)")
        bolt_response = await run_in_threadpool(app.dispatch, to_bolt_request(request, body))
        return to_starlette_response(bolt_response)

    return [Route(SLACK_PATH, endpoint, methods=["POST"])]
