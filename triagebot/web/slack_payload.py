"""Web stage: a signed Slack body checked for the shape this app handles, before slack-bolt reads it.

A valid signature says the body came from Slack (or from whoever holds the signing secret), not
that it is well formed: bolt and the listeners index into it (`body["user"]["id"]`,
`action["action_id"]`, `view["type"]`), and a field missing or of another type raised there,
an answer 500 with a traceback. `payload_problem` accepts exactly the three shapes the app
handles and says, for anything else, what is wrong (the endpoint answers 400 with it):

- the `/triage` slash command: a form with `command` = `/triage` and `user_id`, `text` and
  `channel_id` strings when present;
- a button click: a form whose `payload` is JSON, `type` = `block_actions`, with `user.id`,
  `trigger_id` and a non-empty `actions` list of objects whose `action_id` (and `value`, when
  given) are strings, and `channel`/`container` objects when present;
- a modal submitted: `type` = `view_submission`, with `user.id` and a `view` object of
  `type` `modal` whose `callback_id` and `private_metadata` are strings and `state` an object;
and, in either payload, each field slack-bolt itself reads before any listener (the team,
enterprise, channel, thread and function ids: `_bolt_fields_problem`) of a type it handles.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any
from urllib.parse import parse_qsl

COMMAND = "/triage"
SIGNATURE_PREFIX = "v0="
MAX_FIELDS = 100  # Slack's forms carry a dozen


def signed(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """Whether `signature` is Slack's v0 signature of `body` at `timestamp` (HMAC-SHA256 of
    `v0:TIMESTAMP:BODY` with the signing secret), compared in constant time over bytes: a body that
    is not UTF-8 or a signature with characters outside ASCII is simply not signed (slack-sdk's
    own check decodes both, and raised on them)."""
    if not secret or not signature.startswith(SIGNATURE_PREFIX):
        return False
    expected = hmac.new(secret.encode(), b"v0:" + timestamp.encode("ascii") + b":" + body, hashlib.sha256)
    return hmac.compare_digest(SIGNATURE_PREFIX.encode() + expected.hexdigest().encode(),
                               signature.encode("latin-1", errors="replace"))


def _string(found: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
    value = found.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        return f"{where}{key} must be a non-empty string" if required else f"{where}{key} must be a string"
    return None


def _object(found: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
    value = found.get(key)
    if value is None and not required:
        return None
    return None if isinstance(value, dict) else f"{where}{key} must be an object"


def _first(*problems: str | None) -> str | None:
    return next((problem for problem in problems if problem is not None), None)


def _form(text: str) -> dict[str, str] | str:
    try:
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=True, max_num_fields=MAX_FIELDS)
    except ValueError as error:
        return f"not a form: {error}"
    fields: dict[str, str] = {}
    for name, value in pairs:
        if name in fields:
            return f"form field {name!r} given twice"
        fields[name] = value
    return fields


def _command_problem(fields: dict[str, str]) -> str | None:
    if fields["command"] != COMMAND:
        return f"the slash command {fields['command'][:40]!r}: this app answers {COMMAND} only"
    return _first(_string(fields, "user_id", "command "), _string(fields, "text", "command ", required=False),
                  _string(fields, "channel_id", "command ", required=False))


def _actions_problem(payload: dict[str, Any]) -> str | None:
    actions = payload.get("actions")
    if not isinstance(actions, list) or not actions:
        return "payload actions must be a non-empty list"
    for number, action in enumerate(actions, start=1):
        if not isinstance(action, dict):
            return f"payload action {number} must be an object"
        problem = _first(_string(action, "action_id", f"payload action {number} "),
                         _string(action, "value", f"payload action {number} ", required=False))
        if problem:
            return problem
    return _string(payload, "trigger_id", "payload ")


def _view_problem(payload: dict[str, Any]) -> str | None:
    problem = _object(payload, "view", "payload ")
    if problem:
        return problem
    view = payload["view"]
    if view.get("type") != "modal":
        return "payload view.type must be modal"
    return _first(_string(view, "callback_id", "payload view."),
                  _string(view, "private_metadata", "payload view.", required=False),
                  _object(view, "state", "payload view.", required=False))


# what slack-bolt reads from every payload before any listener (request/internals.py: the team,
# enterprise, user and channel ids, from the payload, its first authorization and the objects it
# nests), with the types it handles there: anything else raised (`"id" in team` of a number)
_IDS = ("team", "enterprise", "user", "channel")  # a string, or an object holding its `id`
_NESTED = ("event", "message", "previous_message", "item", "assistant_thread")  # read the same way


def _bolt_fields_problem(payload: dict[str, Any], where: str = "payload") -> str | None:
    """Why a field slack-bolt reads has a type it does not handle (None: each is fine or absent)."""
    for key in _IDS:
        if payload.get(key) is not None and not isinstance(payload[key], str | dict):
            return f"{where} {key} must be a string or an object"
    for key in ("view", "function_data"):
        if payload.get(key) is not None and not isinstance(payload[key], dict):
            return f"{where} {key} must be an object"
    authorizations = payload.get("authorizations")
    if authorizations is not None:
        if not isinstance(authorizations, list) or not all(isinstance(item, dict) for item in authorizations):
            return f"{where} authorizations must be a list of objects"
        if authorizations and (problem := _bolt_fields_problem(authorizations[0], f"{where} authorization")):
            return problem
    for key in _NESTED:
        if isinstance(payload.get(key), dict) and (problem := _bolt_fields_problem(payload[key], f"{where} {key}")):
            return problem
    return None


def payload_problem(body: bytes) -> str | None:
    """Why the signed `body` is not one of the shapes this app handles; None when it is one."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    fields = _form(text)
    if isinstance(fields, str):
        return fields
    if "command" in fields:
        return _command_problem(fields)
    if "payload" not in fields:
        return "neither a slash command (command=…) nor an interaction (payload=…)"
    try:
        payload = json.loads(fields["payload"])
    except ValueError:
        return "payload is not JSON"
    if not isinstance(payload, dict):
        return "payload must be a JSON object"
    user = payload.get("user")
    if not isinstance(user, dict) or _string(user, "id", ""):
        return "payload user.id must be a non-empty string"
    if problem := _bolt_fields_problem(payload):
        return problem
    if (_object(payload, "channel", "payload ", required=False) or _object(payload, "container", "payload ",
                                                                            required=False)):
        return "payload channel and container must be objects"  # the listeners read their ids
    kind = payload.get("type")
    if kind == "block_actions":
        return _actions_problem(payload)
    if kind == "view_submission":
        return _view_problem(payload)
    return f"payload type {str(kind)[:40]!r}: this app takes block_actions and view_submission"
