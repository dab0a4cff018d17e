"""A local Slack Web API server on 127.0.0.1 for tests: the methods triagebot's notifier uses.

Nothing in triagebot is mocked: tests point the real ``slack_sdk.WebClient`` at
``server.base_url`` (``http://127.0.0.1:PORT/api/``) and it speaks HTTP to this server.

Methods (POST ``/api/<method>``; bodies ``application/x-www-form-urlencoded`` or
``application/json``, as slack_sdk sends them; token from ``Authorization: Bearer xoxb-…`` or
a ``token`` body field, as Slack accepts both):

* ``auth.test``                    -> ``{"ok", "url", "team", "user", "team_id", "user_id", "bot_id"}``
* ``chat.postMessage``             -> ``{"ok", "channel", "ts", "message"}``; ``thread_ts`` threads it
* ``chat.update``                  -> ``{"ok", "channel", "ts", "text", "message"}``
* ``files.getUploadURLExternal``   -> ``{"ok", "upload_url", "file_id"}``; the upload URL takes
  the raw bytes in a POST and answers ``200 OK - <length>``
* ``files.completeUploadExternal`` -> ``{"ok", "files": [...]}``; with ``channel_id`` (and
  ``thread_ts``) the file is shared as a message in the channel (thread)
* ``conversations.history``        -> ``{"ok", "messages" (newest first, top level only),
  "has_more", "response_metadata"}``
* ``conversations.replies``        -> ``{"ok", "messages" (parent first, then replies), …}``
* ``conversations.list``           -> ``{"ok", "channels": [{"id", "name", "is_channel", …}], …}``
* ``usergroups.users.list``        -> ``{"ok", "users"}``: the members of ``server.user_groups[usergroup]``
  (``no_such_subteam`` for a group not there)
* ``chat.postEphemeral``           -> ``{"ok", "message_ts"}``: kept in ``server.ephemeral`` (channel,
  user, text), seen by that user only, never in ``messages``
* ``views.open``                   -> ``{"ok", "view"}``: a modal (``type``, ``callback_id``, ``title``,
  ``blocks``) opened with a ``trigger_id``; kept in ``server.views`` under its new ``V…`` id
* ``apps.connections.open``        -> ``{"ok", "url"}``, called with the app-level token (``xapp-…``,
  ``FakeSlack(app_token=…)``): a one-time ``ws://127.0.0.1:…`` URL of the Socket Mode endpoint
  (tests/support/slack_socket.py), ``server.socket``

Slack's side of interactivity, too: ``server.interaction(...)`` and ``server.slash_command(...)``
build the form bodies Slack POSTs to an app's interactivity and slash-command URLs (a
``block_actions`` payload for a button click, the slash command's fields), and ``send_signed``
POSTs one to the app signed as Slack signs (``v0=`` HMAC-SHA256 of ``v0:TIMESTAMP:BODY`` with
the signing secret, in ``X-Slack-Signature`` beside ``X-Slack-Request-Timestamp``).
``server.submit_view(view_id, user_id, values)`` builds the ``view_submission`` body of a modal
opened through ``views.open``, its inputs filled with ``values`` (block id -> text or choice).
The ``*_payload`` forms of each are the same payloads as dicts: what Socket Mode envelopes carry.

As on Slack, ``chat.postMessage`` keeps a ``metadata`` object (``event_type``,
``event_payload``), which history and replies return only with ``include_all_metadata``; and
history and replies take a channel ID only (a ``#name`` answers ``channel_not_found``).
``server.after_call = f`` calls ``f(call)`` once each answer has been written (tests use it to
kill a client right after Slack did something for it).

Errors are Slack's: HTTP 200 with ``{"ok": false, "error": CODE}`` — ``not_authed`` (no token),
``invalid_auth`` (wrong token), ``channel_not_found``, ``message_not_found``, ``thread_not_found``, ``no_text``,
``invalid_blocks`` / ``msg_too_long`` (over Slack's limits), ``invalid_arguments``,
``file_not_found``, ``unknown_method``. ``server.rate_limit(method, count, retry_after)`` makes
the next ``count`` calls of ``method`` answer ``429`` with ``Retry-After`` and
``{"ok": false, "error": "ratelimited"}``; ``server.outage(True)`` answers 503 to everything
until switched off (a Slack outage).

Every call is recorded in ``server.calls`` (method, headers, parsed params, HTTP status, answer);
``server.messages(channel)`` lists every message of a channel in posting order, replies
included (each carries ``thread_ts``), so tests assert exactly what exists.

Usage::

    with FakeSlack(token="xoxb-test", channels={"C0TRIAGE": "perf-triage"}) as slack:
        client = WebClient(token="xoxb-test", base_url=slack.base_url)
"""
from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_FIELD_TEXT = 2000
MAX_FIELDS = 10
MAX_CONTEXT_ELEMENTS = 10
MAX_MESSAGE_TEXT = 40000
TEAM_ID = "T0TRIAGE1"
USER_ID = "U0TRIAGEBOT"
BOT_ID = "B0TRIAGEBOT"
APP_ID = "A0TRIAGEBOT"


@dataclass
class Call:
    """One request as the server saw it."""

    method: str
    headers: dict[str, str]
    params: dict[str, Any]
    status: int = 200
    answer: dict[str, Any] | None = None


@dataclass
class _Upload:
    file_id: str
    filename: str
    length: int
    alt_txt: str | None
    data: bytes | None = None
    completed: bool = False


@dataclass
class _State:
    token: str
    channels: dict[str, str]  # id -> name
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    uploads: dict[str, _Upload] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    rate_limits: dict[str, list[int]] = field(default_factory=dict)  # method -> [count, retry_after]
    down: bool = False
    user_groups: dict[str, list[str]] = field(default_factory=dict)  # S… -> its members' U… ids
    ephemeral: list[dict[str, str]] = field(default_factory=list)  # chat.postEphemeral: channel, user, text
    views: dict[str, dict[str, Any]] = field(default_factory=dict)  # views.open: V… -> the view
    app_token: str | None = None
    socket: Any = None  # the Socket Mode endpoint, when an app token is given
    root_url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    ts_counter: Any = field(default_factory=lambda: itertools.count(1))
    file_counter: Any = field(default_factory=lambda: itertools.count(1))


class SlackError(Exception):
    """An ``ok: false`` answer, raised inside a method handler."""

    def __init__(self, code: str, **extra: Any) -> None:
        super().__init__(code)
        self.code = code
        self.extra = extra


class FakeSlack:
    """The server; a context manager that starts and stops it."""

    def __init__(self, token: str = "xoxb-test-token", channels: dict[str, str] | None = None,
                 app_token: str | None = None) -> None:
        self.state = _State(token=token, channels=dict(channels or {"C0TRIAGE": "perf-triage"}),
                            app_token=app_token)
        for channel_id in self.state.channels:
            self.state.messages[channel_id] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.after_call: Any = None  # f(call), run after each answer is written

    @property
    def user_groups(self) -> dict[str, list[str]]:
        return self.state.user_groups

    # --- Slack's side of interactivity -------------------------------------------------------

    _trigger = itertools.count(1)

    def interaction_payload(self, user_id: str, action_id: str, value: str, channel: str = "C0TRIAGE",
                            message_ts: str = "1700000000.000100") -> dict[str, Any]:
        """The `block_actions` payload of `user_id` clicking button `action_id` (its `value`) on a message."""
        number = next(self._trigger)
        return {
            "type": "block_actions", "api_app_id": APP_ID, "token": "verification-token-unused",
            "team": {"id": TEAM_ID, "domain": "triage-test"},
            "user": {"id": user_id, "username": user_id.lower(), "name": user_id.lower(), "team_id": TEAM_ID},
            "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": False},
            "trigger_id": f"{number}.{TEAM_ID}.trigger", "channel": {"id": channel, "name": "perf-triage"},
            "message": {"type": "message", "ts": message_ts, "user": USER_ID, "bot_id": BOT_ID, "text": "…"},
            "response_url": f"{self.root_url}/actions/{number}",
            "actions": [{"type": "button", "action_id": action_id, "block_id": "triage-actions",
                         "text": {"type": "plain_text", "text": action_id}, "value": value,
                         "action_ts": f"1700000000.{number:06d}"}],
        }

    def interaction(self, user_id: str, action_id: str, value: str, channel: str = "C0TRIAGE",
                    message_ts: str = "1700000000.000100") -> bytes:
        """The body Slack POSTs when `user_id` clicks button `action_id` (its `value`) on a message."""
        return urlencode({"payload": json.dumps(self.interaction_payload(user_id, action_id, value, channel,
                                                                         message_ts))}).encode()

    def slash_command_payload(self, user_id: str, text: str, command: str = "/triage",
                              channel: str = "C0TRIAGE") -> dict[str, str]:
        """The fields of `user_id` typing `command text` in `channel`."""
        number = next(self._trigger)
        return {
            "token": "verification-token-unused", "team_id": TEAM_ID, "team_domain": "triage-test",
            "channel_id": channel, "channel_name": "perf-triage", "user_id": user_id, "user_name": user_id.lower(),
            "command": command, "text": text, "api_app_id": APP_ID, "is_enterprise_install": "false",
            "response_url": f"{self.root_url}/commands/{number}", "trigger_id": f"{number}.{TEAM_ID}.trigger",
        }

    def slash_command(self, user_id: str, text: str, command: str = "/triage", channel: str = "C0TRIAGE") -> bytes:
        """The body Slack POSTs when `user_id` types `command text` in `channel`."""
        return urlencode(self.slash_command_payload(user_id, text, command, channel)).encode()

    def submit_view_payload(self, view_id: str, user_id: str, values: dict[str, str]) -> dict[str, Any]:
        """The `view_submission` payload of `user_id` submitting the opened modal `view_id`, each
        input block filled from `values` (block id -> typed text, or the chosen option's value)."""
        with self.state.lock:
            view = json.loads(json.dumps(self.state.views[view_id]))
        state: dict[str, Any] = {}
        for block in view.get("blocks") or []:
            if block.get("type") != "input" or block["block_id"] not in values:
                continue
            element, value = block["element"], values[block["block_id"]]
            if element["type"] == "static_select":
                [option] = [item for item in element["options"] if item["value"] == value]
                filled = {"type": "static_select", "selected_option": option}
            else:
                filled = {"type": element["type"], "value": value}
            state[block["block_id"]] = {element["action_id"]: filled}
        view["state"] = {"values": state}
        number = next(self._trigger)
        return {"type": "view_submission", "team": {"id": TEAM_ID, "domain": "triage-test"},
                "user": {"id": user_id, "username": user_id.lower(), "name": user_id.lower(), "team_id": TEAM_ID},
                "api_app_id": APP_ID, "token": "verification-token-unused",
                "trigger_id": f"{number}.{TEAM_ID}.trigger", "view": view, "response_urls": [],
                "is_enterprise_install": False}

    def submit_view(self, view_id: str, user_id: str, values: dict[str, str]) -> bytes:
        """The body Slack POSTs when `user_id` submits the modal (see submit_view_payload)."""
        return urlencode({"payload": json.dumps(self.submit_view_payload(view_id, user_id, values))}).encode()

    @property
    def ephemeral(self) -> list[dict[str, str]]:
        with self.state.lock:
            return list(self.state.ephemeral)

    @property
    def views(self) -> dict[str, dict[str, Any]]:
        with self.state.lock:
            return dict(self.state.views)

    @property
    def socket(self) -> Any:
        """The Socket Mode endpoint (tests/support/slack_socket.py); with an app token only."""
        assert self.state.socket is not None, "FakeSlack(app_token=…) serves Socket Mode"
        return self.state.socket

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeSlack:
        handler = type("Handler", (_Handler,), {"state": self.state, "fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.state.root_url = self.root_url
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-slack",
                                        daemon=True)
        self._thread.start()
        if self.state.app_token:
            from tests.support.slack_socket import SocketModeServer

            self.state.socket = SocketModeServer(APP_ID)
        return self

    def stop(self) -> None:
        if self.state.socket is not None:
            self.state.socket.stop()
            self.state.socket = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    @property
    def base_url(self) -> str:
        """What ``WebClient(base_url=…)`` takes (Slack's is ``https://slack.com/api/``)."""
        return self.root_url + "api/"

    # --- test controls -------------------------------------------------------------------------

    def rate_limit(self, method: str, count: int, retry_after: int = 1) -> None:
        """The next ``count`` calls of ``method`` answer 429 with ``Retry-After: retry_after``."""
        with self.state.lock:
            self.state.rate_limits[method] = [count, retry_after]

    def outage(self, down: bool = True) -> None:
        """While down, every request answers 503 (no JSON body), as during a Slack incident."""
        with self.state.lock:
            self.state.down = down

    def add_channel(self, channel_id: str, name: str) -> None:
        with self.state.lock:
            self.state.channels[channel_id] = name
            self.state.messages.setdefault(channel_id, [])

    # --- inspection ----------------------------------------------------------------------------

    @property
    def calls(self) -> list[Call]:
        with self.state.lock:
            return list(self.state.calls)

    def calls_to(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    def messages(self, channel: str) -> list[dict[str, Any]]:
        """Every message in the channel, oldest first, thread replies included."""
        with self.state.lock:
            return json.loads(json.dumps(self.state.messages[channel]))

    def uploaded(self, file_id: str) -> bytes | None:
        with self.state.lock:
            upload = self.state.uploads.get(file_id)
            return upload.data if upload else None


# --- the request handler ---------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    state: _State
    fake: FakeSlack
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet in test output
        pass

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = urlparse(self.path)
        headers = {key.lower(): value for key, value in self.headers.items()}
        if path.path.startswith("/upload/v1/"):
            self._upload(path.path.rsplit("/", 1)[-1], body, headers)
            return
        method = path.path.removeprefix("/api/")
        try:
            params = _params(body, headers.get("content-type", ""), path.query)
        except ValueError:
            params = {}
            self._answer(Call(method, headers, params), 200, {"ok": False, "error": "invalid_json"})
            return
        call = Call(method, headers, params)
        with self.state.lock:
            if self.state.down:
                self._record_and_send(call, 503, None)
                return
            limit = self.state.rate_limits.get(method)
            if limit and limit[0] > 0:
                limit[0] -= 1
                self._record_and_send(call, 429, {"ok": False, "error": "ratelimited"},
                                      {"Retry-After": str(limit[1])})
                return
            try:
                self._check_token(headers, params, method)
                handler = _METHODS.get(method)
                if handler is None:
                    raise SlackError("unknown_method")
                answer = {"ok": True, **handler(self.state, params)}
            except SlackError as error:
                answer = {"ok": False, "error": error.code, **error.extra}
            self._record_and_send(call, 200, answer)
        hook = self.fake.after_call
        if hook is not None:
            hook(call)

    def _check_token(self, headers: dict[str, str], params: dict[str, Any], method: str) -> None:
        authorization = headers.get("authorization", "")
        token = authorization[len("Bearer "):] if authorization.startswith("Bearer ") else None
        token = token or params.get("token")
        if not token:
            raise SlackError("not_authed")
        if method == "apps.connections.open":  # only the app-level token opens a socket
            if not self.state.app_token or token != self.state.app_token:
                raise SlackError("invalid_auth")
            return
        if token != self.state.token:
            raise SlackError("invalid_auth")

    def _record_and_send(self, call: Call, status: int, answer: dict[str, Any] | None,
                         extra_headers: dict[str, str] | None = None) -> None:
        call.status, call.answer = status, answer
        self.state.calls.append(call)
        self._answer(call, status, answer, extra_headers)

    def _answer(self, call: Call, status: int, answer: dict[str, Any] | None,
                extra_headers: dict[str, str] | None = None) -> None:
        if answer is None:
            payload, content_type = b"Service Unavailable", "text/plain"
        else:
            payload, content_type = json.dumps(answer).encode(), "application/json; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (extra_headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def _upload(self, file_id: str, body: bytes, headers: dict[str, str]) -> None:
        with self.state.lock:
            upload = self.state.uploads.get(file_id)
            call = Call("upload", headers, {"file_id": file_id, "bytes": len(body)})
            self.state.calls.append(call)
            if upload is None:
                call.status = 404
                status, text = 404, b"file not found"
            else:
                upload.data = body
                status, text = 200, f"OK - {len(body)}".encode()
                call.status = 200
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)


def _params(body: bytes, content_type: str, query: str) -> dict[str, Any]:
    params: dict[str, Any] = {key: values[-1] for key, values in parse_qs(query).items()}
    if not body:
        return params
    if content_type.startswith("application/json"):
        data = json.loads(body)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        params.update(data)
    else:
        text = body.decode("utf-8")
        params.update({key: values[-1] for key, values in parse_qs(text, keep_blank_values=True).items()})
    return params


# --- methods (called with the state lock held) ------------------------------------------------


def _channel_id(state: _State, channel: Any, *, id_only: bool = False) -> str:
    if not channel or not isinstance(channel, str):
        raise SlackError("channel_not_found")
    if channel in state.channels:
        return channel
    if id_only:
        raise SlackError("channel_not_found")
    name = channel.removeprefix("#")
    for channel_id, channel_name in state.channels.items():
        if channel_name == name:
            return channel_id
    raise SlackError("channel_not_found")


def _next_ts(state: _State) -> str:
    number = next(state.ts_counter)
    return f"{1700000000 + number // 10000}.{(number % 10000) * 100:06d}"


def _json_field(value: Any, name: str) -> Any:
    """Form bodies carry blocks/files as JSON strings; JSON bodies as arrays."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise SlackError("invalid_arguments", response_metadata={"messages": [
                f"[ERROR] {name} is not valid JSON"]}) from None
    return value


def _check_blocks(blocks: Any) -> list[dict[str, Any]]:
    def fail(message: str) -> SlackError:
        return SlackError("invalid_blocks", response_metadata={"messages": [f"[ERROR] {message}"]})

    if not isinstance(blocks, list):
        raise fail("blocks must be an array")
    if len(blocks) > MAX_BLOCKS:
        raise fail(f"must be less than {MAX_BLOCKS + 1} items [json-pointer:/blocks]")
    for index, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        where = f"[json-pointer:/blocks/{index}]"
        if kind == "header":
            if len(block.get("text", {}).get("text", "")) > MAX_HEADER_TEXT:
                raise fail(f"must be less than {MAX_HEADER_TEXT + 1} characters {where}/text")
        elif kind == "section":
            text = block.get("text")
            if text is None and not block.get("fields"):
                raise fail(f"missing required field: text {where}")
            if text is not None and len(text.get("text", "")) > MAX_SECTION_TEXT:
                raise fail(f"must be less than {MAX_SECTION_TEXT + 1} characters {where}/text")
            fields = block.get("fields") or []
            if len(fields) > MAX_FIELDS:
                raise fail(f"must be less than {MAX_FIELDS + 1} items {where}/fields")
            if any(len(item.get("text", "")) > MAX_FIELD_TEXT for item in fields):
                raise fail(f"must be less than {MAX_FIELD_TEXT + 1} characters {where}/fields")
        elif kind == "context":
            if len(block.get("elements") or []) > MAX_CONTEXT_ELEMENTS:
                raise fail(f"must be less than {MAX_CONTEXT_ELEMENTS + 1} items {where}/elements")
        elif kind in ("divider", "image", "actions", "rich_text"):
            pass
        else:
            raise fail(f"unsupported type {kind!r} {where}")
    return blocks


def _message_content(params: dict[str, Any]) -> tuple[str, list[dict[str, Any]] | None]:
    text = params.get("text") or ""
    blocks = params.get("blocks")
    if blocks is not None:
        blocks = _check_blocks(_json_field(blocks, "blocks"))
    if not text and not blocks:
        raise SlackError("no_text")
    if len(text) > MAX_MESSAGE_TEXT:
        raise SlackError("msg_too_long")
    return text, blocks


def _find(state: _State, channel_id: str, ts: str, missing: str = "message_not_found") -> dict[str, Any]:
    for message in state.messages[channel_id]:
        if message["ts"] == ts:
            return message
    raise SlackError(missing)


def _auth_test(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    return {"url": "https://triage-test.slack.com/", "team": "Triage Test", "user": "triagebot",
            "team_id": TEAM_ID, "user_id": USER_ID, "bot_id": BOT_ID,
            "is_enterprise_install": False}


def _post_message(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    channel_id = _channel_id(state, params.get("channel"))
    text, blocks = _message_content(params)
    message = _append(state, channel_id, params.get("thread_ts") or None, text, blocks)
    metadata = params.get("metadata")
    if metadata:
        metadata = _json_field(metadata, "metadata")
        if (not isinstance(metadata, dict) or not isinstance(metadata.get("event_type"), str)
                or not isinstance(metadata.get("event_payload"), dict)):
            raise SlackError("invalid_metadata_format")
        message["metadata"] = metadata
    return {"channel": channel_id, "ts": message["ts"], "message": message}


def _append(state: _State, channel_id: str, thread_ts: str | None, text: str,
            blocks: list[dict[str, Any]] | None) -> dict[str, Any]:
    if thread_ts:
        parent = _find(state, channel_id, thread_ts, "thread_not_found")
        if parent.get("thread_ts", parent["ts"]) != parent["ts"]:
            thread_ts = parent["thread_ts"]  # a reply to a reply lands in the same thread
            parent = _find(state, channel_id, thread_ts)
    message: dict[str, Any] = {"type": "message", "user": USER_ID, "bot_id": BOT_ID,
                               "app_id": APP_ID, "team": TEAM_ID, "text": text,
                               "ts": _next_ts(state)}
    if blocks is not None:
        message["blocks"] = blocks
    if thread_ts:
        message["thread_ts"] = thread_ts
        message["parent_user_id"] = USER_ID
        parent["thread_ts"] = parent["ts"]
        parent["reply_count"] = parent.get("reply_count", 0) + 1
        parent["latest_reply"] = message["ts"]
    state.messages[channel_id].append(message)
    return message


def _update(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    channel_id = _channel_id(state, params.get("channel"))
    ts = params.get("ts")
    if not ts:
        raise SlackError("invalid_arguments")
    message = _find(state, channel_id, ts)
    text, blocks = _message_content(params)
    message["text"] = text
    if blocks is not None:
        message["blocks"] = blocks
    message["edited"] = {"user": USER_ID, "ts": _next_ts(state)}
    return {"channel": channel_id, "ts": ts, "text": text, "message": message}


def _get_upload_url(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    filename = params.get("filename")
    try:
        length = int(params.get("length", ""))
    except ValueError:
        raise SlackError("invalid_arguments") from None
    if not filename or length <= 0:
        raise SlackError("invalid_arguments")
    file_id = f"F{next(state.file_counter):08d}"
    state.uploads[file_id] = _Upload(file_id, filename, length, params.get("alt_txt"))
    return {"upload_url": f"{state.root_url}upload/v1/{file_id}", "file_id": file_id}


def _complete_upload(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    files = _json_field(params.get("files"), "files")
    if not isinstance(files, list) or not files:
        raise SlackError("invalid_arguments")
    channel = params.get("channel_id")
    channel_id = _channel_id(state, channel) if channel else None
    thread_ts = params.get("thread_ts") or None
    if thread_ts and channel_id is None:
        raise SlackError("invalid_arguments")
    shared = []
    for item in files:
        upload = state.uploads.get(item.get("id", ""))
        if upload is None or upload.data is None:
            raise SlackError("file_not_found")
        upload.completed = True
        shared.append({"id": upload.file_id, "name": upload.filename,
                       "title": item.get("title") or upload.filename,
                       "mimetype": _mimetype(upload.data), "size": len(upload.data),
                       "user": USER_ID,
                       "url_private": f"https://files.slack.com/files-pri/{TEAM_ID}-{upload.file_id}/{upload.filename}"})
    if channel_id is not None:
        message = _append(state, channel_id, thread_ts, params.get("initial_comment") or "", None)
        message["files"] = shared
        message["upload"] = True
        for item in shared:
            item["shares"] = {"public": {channel_id: [{"ts": message["ts"],
                                                       "thread_ts": thread_ts or ""}]}}
    return {"files": shared}


def _mimetype(data: bytes) -> str:
    return "image/png" if data.startswith(b"\x89PNG\r\n\x1a\n") else "application/octet-stream"


def _with_metadata(messages: list[dict[str, Any]], params: dict[str, Any]) -> list[dict[str, Any]]:
    if str(params.get("include_all_metadata", "")).lower() in ("1", "true"):
        return [dict(message) for message in messages]
    return [{key: value for key, value in message.items() if key != "metadata"} for message in messages]


def _history(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    channel_id = _channel_id(state, params.get("channel"), id_only=True)
    limit = int(params.get("limit") or 100)
    offset = int(params.get("cursor") or 0)
    top = [message for message in reversed(state.messages[channel_id])
           if message.get("thread_ts", message["ts"]) == message["ts"]]
    page = _with_metadata(top[offset:offset + limit], params)
    more = offset + limit < len(top)
    return {"messages": page, "has_more": more, "pin_count": 0,
            "response_metadata": {"next_cursor": str(offset + limit) if more else ""}}


def _replies(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    channel_id = _channel_id(state, params.get("channel"), id_only=True)
    ts = params.get("ts")
    if not ts:
        raise SlackError("invalid_arguments")
    parent = _find(state, channel_id, ts, "thread_not_found")
    thread = [parent] + [message for message in state.messages[channel_id]
                         if message.get("thread_ts") == ts and message["ts"] != ts]
    return {"messages": _with_metadata(thread, params), "has_more": False,
            "response_metadata": {"next_cursor": ""}}


def _list(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    limit = int(params.get("limit") or 100)
    offset = int(params.get("cursor") or 0)
    channels = [{"id": channel_id, "name": name, "is_channel": True, "is_private": False,
                 "is_archived": False, "is_member": True, "name_normalized": name}
                for channel_id, name in state.channels.items()]
    page = channels[offset:offset + limit]
    more = offset + limit < len(channels)
    return {"channels": page, "response_metadata": {"next_cursor": str(offset + limit) if more else ""}}


def _usergroup_users(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    group = params.get("usergroup")
    if group not in state.user_groups:
        raise SlackError("no_such_subteam")
    return {"users": list(state.user_groups[group])}


def _post_ephemeral(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    channel_id = _channel_id(state, params.get("channel"))
    user = params.get("user")
    if not user:
        raise SlackError("user_not_in_channel")
    text, _blocks = _message_content(params)
    state.ephemeral.append({"channel": channel_id, "user": str(user), "text": text})
    return {"message_ts": _next_ts(state)}


def _views_open(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    if not params.get("trigger_id"):
        raise SlackError("invalid_arguments", response_metadata={"messages": ["[ERROR] missing trigger_id"]})
    view = _json_field(params.get("view"), "view")
    if not isinstance(view, dict) or view.get("type") != "modal" or not view.get("title"):
        raise SlackError("invalid_arguments", response_metadata={"messages": ["[ERROR] not a modal view"]})
    _check_blocks([block for block in view.get("blocks") or [] if block.get("type") != "input"])
    if len(view.get("private_metadata") or "") > 3000:
        raise SlackError("invalid_arguments", response_metadata={"messages": ["[ERROR] private_metadata too long"]})
    view_id = f"V{len(state.views) + 1:08d}"
    state.views[view_id] = view | {"id": view_id, "team_id": TEAM_ID, "app_id": APP_ID}
    return {"view": state.views[view_id]}


def _connections_open(state: _State, params: dict[str, Any]) -> dict[str, Any]:
    if state.socket is None:
        raise SlackError("not_allowed_token_type")
    return {"url": state.socket.connection_url()}


_METHODS = {
    "chat.postEphemeral": _post_ephemeral,
    "views.open": _views_open,
    "apps.connections.open": _connections_open,
    "usergroups.users.list": _usergroup_users,
    "auth.test": _auth_test,
    "chat.postMessage": _post_message,
    "chat.update": _update,
    "files.getUploadURLExternal": _get_upload_url,
    "files.completeUploadExternal": _complete_upload,
    "conversations.history": _history,
    "conversations.replies": _replies,
    "conversations.list": _list,
}


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """Slack's request signature: ``v0=`` and the hex HMAC-SHA256 of ``v0:TIMESTAMP:BODY``."""
    base = b"v0:" + str(timestamp).encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def send_signed(url: str, body: bytes, secret: str, timestamp: int | None = None,
                signature: str | None = None) -> tuple[int, str]:
    """POST `body` to the app as Slack does, signed with `secret` at `timestamp` (default now);
    `signature` overrides the computed one (a forgery). Returns the HTTP status and the body."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": str(timestamp),
        "X-Slack-Signature": signature or sign(secret, timestamp, body), "User-Agent": "Slackbot 1.0"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
