"""Web stage: Slack's side of the daemon — buttons and the `/triage` command, through slack-bolt.

One POST endpoint (`SLACK_PATH`) takes both Slack's interactivity payloads (a button clicked
on a parent or verdict message) and the `/triage` slash command. Before bolt sees a request,
its signature is checked here against the signing secret (slack-sdk's `SignatureVerifier`, the
v0 HMAC Slack computes) and its timestamp must be within five minutes of now: a forged, unsigned
or stale request is refused with 401 and a logged reason, and nothing is read from it. Bolt's
own request verification stays on with the same secret.

`/triage show <message-id>`, `status` and `queue` answer the user alone (an ephemeral reply);
`/triage rerun <message-id>` and the buttons act through triagebot/actions.py (checks, one
transaction with the thread reply). The listeners run on a worker thread, each with its own
store connection, never on the event loop that serves /healthz.
"""
from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from slack_bolt import App, BoltRequest
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_sdk import WebClient
from slack_sdk.signature import Clock, SignatureVerifier
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from triagebot import actions
from triagebot.logs import event
from triagebot.rules.routing import Permissions
from triagebot.states import RUN_STATES
from triagebot.store.protocol import Store

log = logging.getLogger("triagebot.slack")

SLACK_PATH = "/slack/events"  # the interactivity URL and the slash command's request URL
MAX_AGE_SECONDS = 300  # Slack's own advice: a request older than five minutes may be a replay
MAX_BODY = 64 * 1024  # Slack's payloads are a few kilobytes
USAGE = "Usage: `/triage show <message-id>`, `/triage status`, `/triage queue`, `/triage rerun <message-id>`"
_MAILTO = re.compile(r"^<mailto:([^|>]+)(\|[^>]*)?>$")  # Slack links what looks like an address


@dataclass(frozen=True)
class SlackSettings:
    """What the endpoint needs: the signing secret (SLACK_SIGNING_SECRET), the bot's token and
    API address (to look up user groups), who may act, how to open the store."""

    signing_secret: str
    token: str
    open_store: Callable[[], AbstractContextManager[Store]]
    permissions: Permissions
    budget: int = 20  # the daemon's runs a side: a rerun asked from Slack doubles the last
    api_url: str | None = None
    clock: Clock = Clock()


def message_id_of(text: str) -> str:
    """A message id as typed in Slack: `<id>`, `id`, or Slack's mailto link of it."""
    text = text.strip()
    linked = _MAILTO.match(text)
    if linked:
        return linked.group(1)
    return text.removeprefix("<").removesuffix(">")


def request_key(request: BoltRequest) -> str:
    """The digest of a signed request: a replay of it has the same (timestamp and body are signed)."""
    stamp = (request.headers.get("x-slack-request-timestamp") or [""])[0]
    return hashlib.sha256(f"{stamp}:".encode() + request.raw_body.encode()).hexdigest()


def _refused(reason: str, status: int = 401) -> Response:
    event(log, logging.WARNING, "slack request refused", event="slack.refused", reason=reason)
    return PlainTextResponse(f"refused: {reason}\n", status_code=status)


def _show(store: Store, message_id: str) -> str:
    row = store.get_triage(message_id)
    if row is None:
        return f"No report <{message_id}> is being triaged."
    lines = [f"*<{row.message_id}>*: {row.state}", f"channel {row.channel}, host {row.host or '-'}"]
    if row.note:
        lines.append(f"note: {row.note}")
    lines += [f"{action.created_at} <@{action.user_id}> {action.detail}" for action in store.actions_of(message_id)]
    return "\n".join(lines)


def _queue(store: Store) -> str:
    rows = store.triage_in(*RUN_STATES)
    if not rows:
        return "The queue is empty."
    return "\n".join(f"{row.state} on {row.host or '-'}: <{row.message_id}>" for row in rows)


def _status(store: Store) -> str:
    counts = store.triage_counts()
    return "Reports: " + (", ".join(f"{state} {count}" for state, count in sorted(counts.items())) or "none")


def build_bolt_app(settings: SlackSettings) -> App:
    """The bolt app: the `/triage` command and every button (an unknown one is refused)."""
    client = WebClient(token=settings.token, base_url=settings.api_url or WebClient.BASE_URL)
    app = App(client=client, signing_secret=settings.signing_secret, token_verification_enabled=False,
              request_verification_enabled=True, process_before_response=True, logger=log)
    group_ids = {member for permission in ("run", "mark") for member in settings.permissions.members(permission)
                 if member.startswith("S")}

    def groups_of(user_id: str) -> Collection[str]:
        found = set()
        for group in group_ids:
            if user_id in client.usergroups_users_list(usergroup=group).get("users", []):
                found.add(group)
        return found

    def act(request: BoltRequest, action: str, message_id: str, user_id: str) -> actions.Outcome:
        with settings.open_store() as store:
            return actions.act(store, actions.Request(request_key(request), action, message_id, user_id),
                               settings.permissions, groups_of, settings.budget)

    @app.command("/triage")
    def command(ack: Callable[..., Any], command: dict[str, Any], request: BoltRequest) -> None:
        words = (command.get("text") or "").split(maxsplit=1)
        verb, rest = (words[0].lower() if words else ""), (words[1] if len(words) > 1 else "")
        if verb == "rerun" and rest:
            ack(text=act(request, "rerun", message_id_of(rest), command["user_id"]).text)
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
                ack(text=USAGE)

    @app.action(re.compile(".*"))
    def button(ack: Callable[..., Any], action: dict[str, Any], body: dict[str, Any], request: BoltRequest) -> None:
        ack()
        act(request, str(action.get("action_id")), str(action.get("value") or ""), body["user"]["id"])

    return app


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
