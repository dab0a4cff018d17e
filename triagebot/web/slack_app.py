"""Web stage: Slack's side of the daemon — buttons and the `/triage` command, through slack-bolt.

One POST endpoint (`SLACK_PATH`) takes both Slack's interactivity payloads (a button clicked
on a parent or verdict message) and the `/triage` slash command. Before bolt sees a request,
its timestamp header must be a whole number (untrusted/whole_numbers.py; else 400) within five
minutes of now, then its body is read, at most 64 KiB (web/bounds.py; 413 past it,
the rest never read), and its signature checked against the signing secret (slack_payload.signed: the v0
HMAC Slack computes, over bytes): a forged, unsigned or stale request is refused
with 401 and a logged reason, and nothing is read from it. A signed body must then have the
shape the listeners handle (slack_payload.py; else 400 saying what is wrong). Bolt's own request
verification stays on with the same secret.

`/triage show <message-id>`, `status` and `queue` answer the user alone (an ephemeral reply);
`/triage rerun <message-id>` and the buttons act through triagebot/actions/act.py (checks, one
transaction with the thread reply). "Rerun with…" and "Duplicate of…" open a modal
(views.open) whose submission is the action. "Send reply upstream" opens a modal showing the
reply and every address it goes to (actions/upstream.py); nothing is asked before its Send, and
a submission whose reply is no longer the one shown (a new rerun since) is refused. A refused
action answers the clicking user with the reason in an ephemeral message (chat.postEphemeral),
besides the logged reason. The
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
from slack_sdk.signature import Clock
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from triagebot.actions import act as actions
from triagebot.actions import decide as decisions
from triagebot.actions.upstream import ReplyPreview
from triagebot.errors import TriageError
from triagebot.logs import event
from triagebot.notify.render import escape
from triagebot.records.states import RUN_STATES
from triagebot.rules.routing import PERMISSIONS, Permissions, Routing
from triagebot.store.protocol import Store
from triagebot.untrusted.whole_numbers import BadNumber, whole_number
from triagebot.web.bounds import RequestRefused, read_body
from triagebot.web.slack_payload import payload_problem, signed

log = logging.getLogger("triagebot.slack")

SLACK_PATH = "/slack/events"  # the interactivity URL and the slash command's request URL
MAX_AGE_SECONDS = 300  # Slack's own advice: a request older than five minutes may be a replay
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
    # upstream.preview_reply with the rules: the reply "Send reply upstream" shows (None: it cannot be sent)
    preview_reply: Callable[..., ReplyPreview | str] | None = None
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
SEND = "send-upstream"  # the button that opens the reply's modal; its submission asks the send
MAX_DRAFT_SECTIONS = 40  # a modal takes 100 blocks; a reply upstream is a page of text
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
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{escape(f'<{message_id}>')}*"}},
                       *blocks]}


def _draft_sections(text: str) -> list[dict[str, Any]]:
    """The draft as code sections, each within Slack's 3000 characters, escaped line by line."""
    sections: list[str] = []
    current = ""
    limit = 3000 - len("``````") - 1
    for line in text.splitlines():
        escaped = escape(line)[:limit]
        if current and len(current) + 1 + len(escaped) > limit:
            sections.append(current)
            current = escaped
        else:
            current = f"{current}\n{escaped}" if current else escaped
    if current:
        sections.append(current)
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": f"```{part}```"}}
                                    for part in sections[:MAX_DRAFT_SECTIONS]]
    if len(sections) > MAX_DRAFT_SECTIONS:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": (
            f"{len(sections) - MAX_DRAFT_SECTIONS} more parts not shown: `triage reply` prints the whole draft")}]})
    return blocks


def send_modal(message_id: str, channel: str, preview: ReplyPreview) -> dict[str, Any]:
    """The modal "Send reply upstream" opens: who the reply goes to, then the reply itself; its
    metadata keeps the digest of what was shown, which the submission checks."""
    metadata = json.dumps({"message_id": message_id, "channel": channel, "reply": preview.reply_message_id,
                           "date": preview.date, "digest": preview.digest})
    count = len(preview.recipients)
    head = (f"*{escape(f'<{message_id}>')}*: this reply goes to these {count} "
            f"address{'es' if count != 1 else ''} when you press Send (the daemon sends it once, on its next "
            f"pass):\n" + "\n".join(f"• {escape(address)}" for address in preview.recipients))
    return {"type": "modal", "callback_id": SEND, "private_metadata": metadata,
            "title": {"type": "plain_text", "text": "Send reply upstream"},
            "submit": {"type": "plain_text", "text": "Send"}, "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": head}}, *_draft_sections(preview.text)]}


def _object_at(found: Any, *keys: str) -> dict[str, Any]:
    """`found[key][key]…` when each is an object, else {}: a submitted form of another shape is empty."""
    for key in keys:
        found = found.get(key) if isinstance(found, dict) else None
    return found if isinstance(found, dict) else {}


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
    item = _object_at(view, "state", "values", block_id, "value")
    text = item.get("value") or _object_at(item, "selected_option").get("value") or ""
    return text.strip() if isinstance(text, str) else ""


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
                members: list[str] = client.usergroups_users_list(usergroup=group).get("users", [])
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
        if not isinstance(channel, str) or not channel:
            return
        try:
            client.chat_postEphemeral(channel=channel, user=user_id, text=escape(text))
        except SlackApiError as error:  # the action's outcome is logged already; the telling failed: said, not raised
            event(log, logging.WARNING, "slack ephemeral reply failed", event="slack.tell_failed", channel=channel,
                  error=str(error.response.get("error")))

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

    def preview(message_id: str, shown: dict[str, Any] | None = None) -> ReplyPreview | str:
        """The reply "Send reply upstream" would send (as `shown` in a modal: its Message-ID and
        Date), or why there is none (said to the user)."""
        if settings.preview_reply is None:
            return "this app was started without the rules: no reply can be drafted here"
        try:
            with settings.open_store() as store:
                return settings.preview_reply(store, message_id, reply_message_id=(shown or {}).get("reply") or None,
                                              date=(shown or {}).get("date") or None)
        except TriageError as error:  # the report's own headers, the rules: that report's reason
            return " ".join(str(error).split())[:300]

    def open_send(trigger_id: str, message_id: str, user_id: str, channel: str | None, key: str) -> None:
        with settings.open_store() as store:
            reason = actions.precheck(store, actions.Request(key, SEND, message_id, user_id), context)
        shown = preview(message_id) if reason is None else reason
        if isinstance(shown, str):
            event(log, logging.WARNING, "slack action refused", event="action.refused", action=SEND,
                  message_id=message_id, user=user_id, reason=shown)
            tell(channel, user_id, f"Not done: {shown}.")
            return
        client.views_open(trigger_id=trigger_id, view=send_modal(message_id, channel or "", shown))

    @app.action(re.compile(".*"))
    def button(ack: Callable[..., Any], action: dict[str, Any], body: dict[str, Any], request: BoltRequest) -> None:
        ack()
        action_id, user_id = str(action.get("action_id")), body["user"]["id"]
        message_id = str(action.get("value") or "")
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        if action_id == SEND:
            open_send(body["trigger_id"], message_id, user_id, channel, request_key(request))
            return
        if action_id == DECIDE:
            try:
                client.views_open(trigger_id=body["trigger_id"], view=decide_modal(message_id, channel or ""))
            except SlackApiError as error:  # an expired trigger, Slack away: the click is lost, said once
                event(log, logging.WARNING, "slack modal not opened", event="slack.modal_failed", action=action_id,
                      message_id=message_id, user=user_id, error=str(error.response.get("error")))
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
            try:
                client.views_open(trigger_id=body["trigger_id"],
                                  view=modal(action_id, message_id, channel or "", budget, settings.hosts))
            except SlackApiError as error:  # an expired trigger, Slack away: the click is lost, said once
                event(log, logging.WARNING, "slack modal not opened", event="slack.modal_failed", action=action_id,
                      message_id=message_id, user=user_id, error=str(error.response.get("error")))
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

    @app.view(re.compile("^(rerun-with|duplicate|send-upstream)$"))
    def submitted(ack: Callable[..., Any], body: dict[str, Any], view: dict[str, Any], request: BoltRequest) -> None:
        user_id = body["user"]["id"]
        try:
            metadata = json.loads(view.get("private_metadata") or "{}")
            message_id, channel = str(metadata["message_id"]), metadata.get("channel")
        except (ValueError, KeyError, TypeError):
            if view.get("callback_id") == SEND:  # no input to show an error under, no channel to tell: nothing
                event(log, logging.WARNING, "slack action refused", event="action.refused", action=SEND,
                      user=user_id, reason="a send modal without its report")
                ack()
                return
            ack(response_action="errors", errors={"budget" if view.get("callback_id") == "rerun-with" else "other":
                                                  "this form lost which report it is about: open it again"})
            return
        if view.get("callback_id") == SEND:
            ack()  # the modal closes; what happens is said to the user and in the thread
            shown = preview(message_id, metadata)
            if isinstance(shown, str) or shown.digest != metadata.get("digest"):
                reason = shown if isinstance(shown, str) else (
                    "the reply is no longer the one you were shown (the report moved on since): press Send reply "
                    "upstream again to see it")
                event(log, logging.WARNING, "slack action refused", event="action.refused", action=SEND,
                      message_id=message_id, user=user_id, reason=reason)
                tell(channel, user_id, f"Not done: {reason}.")
                return
            outcome = act(actions.Request(request_key(request), SEND, message_id, user_id,
                                          reply=(shown.reply_message_id, shown.raw)))
            if not outcome.done:
                tell(channel, user_id, outcome.text)
            return
        if view.get("callback_id") == "rerun-with":
            budget_text, host = _value(view, "budget"), _value(view, "host") or None
            try:
                budget = whole_number(budget_text, "runs a side", low=1, high=actions.MAX_BUDGET)
            except BadNumber:
                ack(response_action="errors",
                    errors={"budget": f"a whole number of runs a side, from 1 to {actions.MAX_BUDGET}"})
                return
            request_ = actions.Request(request_key(request), "rerun-on-host" if host else "rerun", message_id,
                                       user_id, budget=budget, host=host)
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

    async def endpoint(request: Request) -> Response:
        # the headers first: nothing of the body is read for a request that is not signed and fresh
        stamp = request.headers.get("x-slack-request-timestamp", "")
        signature = request.headers.get("x-slack-signature", "")
        if not stamp or not signature:
            return _refused("unsigned request (no X-Slack-Signature or X-Slack-Request-Timestamp)")
        try:
            sent_at = whole_number(stamp, "X-Slack-Request-Timestamp")
        except BadNumber as error:
            return _refused(str(error), 400)
        age = settings.clock.now() - sent_at
        if abs(age) > MAX_AGE_SECONDS:
            return _refused(f"a stale request: its timestamp is {int(age)} s from now (at most {MAX_AGE_SECONDS})")
        try:  # at most 64 KiB, read only now (a longer one is cut there, or not read at all)
            body = await read_body(request.scope, request.receive)
        except RequestRefused as error:
            return _refused(error.reason, error.status)
        if not signed(settings.signing_secret, stamp, body, signature):
            return _refused("a signature that does not match the signing secret (forged, or another app's)")
        problem = payload_problem(body)
        if problem is not None:  # signed, but not a shape the listeners handle
            return _refused(f"a signed body this app does not handle: {problem}", 400)
        bolt_response = await run_in_threadpool(app.dispatch, to_bolt_request(request, body))
        return to_starlette_response(bolt_response)

    return [Route(SLACK_PATH, endpoint, methods=["POST"])]
