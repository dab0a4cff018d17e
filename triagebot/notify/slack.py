"""Notify stage: post rendered payloads to Slack through slack_sdk's WebClient.

Retries happen inside the client: ``RateLimitErrorRetryHandler`` waits out a 429's
``Retry-After`` and tries again, ``ConnectionErrorRetryHandler`` retries a reset connection.
Whatever still fails, including every ``ok: false`` answer, raises NotifyError naming the
method, the channel and Slack's error code: the caller keeps its outbox row for a later retry
(``error.retryable``) or for an operator (a wrong channel, a revoked token). Nothing is dropped.

Every post carries its outbox key in Slack message metadata (a plot: in its file name), so
after a crash :meth:`SlackNotifier.find` can tell whether a post in doubt reached Slack.

Scopes the bot token needs: chat:write (post, update, reply), files:write (the plot),
channels:history / groups:history (conversations.history and .replies, to find posts in doubt
after a crash, public / private channels), channels:read / groups:read (conversations.list, a
#name to its channel ID), and the bot invited to each channel it posts to.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, Protocol

from triagebot.errors import TriageError

DEFAULT_API_URL = "https://slack.com/api/"
DEFAULT_TIMEOUT_SECONDS = 30
DEFAULT_RATE_LIMIT_RETRIES = 5  # 429s waited out per call before the outbox row is kept for later
DEFAULT_CONNECTION_RETRIES = 2
# Slack error codes that a later try can clear; the rest need an operator (token, channel, payload).
RETRYABLE_CODES = frozenset({"ratelimited", "connection_error", "internal_error", "fatal_error",
                             "service_unavailable", "request_timeout", "http_500", "http_502",
                             "http_503", "http_504"})


class NotifyError(TriageError):
    """A Slack call that failed: ``method``, ``channel`` and Slack's ``code`` (``invalid_auth``…)."""

    def __init__(self, method: str, channel: str | None, code: str, detail: str = "") -> None:
        where = f" to {channel}" if channel else ""
        super().__init__(f"slack {method}{where} failed: {code}" + (f" ({detail})" if detail else ""))
        self.method = method
        self.channel = channel
        self.code = code
        self.detail = detail

    @property
    def retryable(self) -> bool:
        """True when trying again later may succeed; False when an operator has to act."""
        return self.code in RETRYABLE_CODES


@dataclass(frozen=True)
class Posted:
    """Where a message landed: the channel ID (chat.update needs the ID, not a #name) and ts."""

    channel: str
    ts: str


METADATA_EVENT = "triagebot_notification"  # the event_type of our posts' metadata


def plot_file_name(key: str) -> str:
    """The file name a plot is uploaded under: it names its outbox row, so it can be found again."""
    return f"samples-{hashlib.sha256(key.encode()).hexdigest()[:16]}.png"


class Notifier(Protocol):
    """What the daemon's outbox sends through: SlackNotifier, TerminalNotifier.

    ``key`` names the outbox row a call delivers; ``find`` answers whether a post with that key
    already exists (None when it does not, or when the notifier cannot tell).
    """

    def post(self, channel: str, payload: dict[str, Any], *, thread_ts: str | None = None,
             key: str | None = None) -> Posted: ...

    def update_parent(self, channel: str, ts: str, payload: dict[str, Any]) -> None: ...

    def upload(self, channel: str, thread_ts: str, png: bytes, title: str, key: str) -> Posted: ...

    def find(self, channel: str, key: str, *, thread_ts: str | None = None,
             file_name: str | None = None) -> Posted | None: ...


class SlackNotifier:
    """Slack Web API calls for the notify stage, each one raising NotifyError when it fails.

    ``token`` defaults to ``$SLACK_BOT_TOKEN``; ``base_url`` to ``$SLACK_API_URL`` or Slack's
    own (tests point it at a local server). Channels may be IDs (``C0123…``) or ``#names``;
    :meth:`post_message` returns the channel ID Slack answered with.
    """

    def __init__(self, token: str | None = None, *, base_url: str | None = None,
                 timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
                 rate_limit_retries: int = DEFAULT_RATE_LIMIT_RETRIES,
                 connection_retries: int = DEFAULT_CONNECTION_RETRIES) -> None:
        # Imported here: slack_sdk is only needed when Slack is configured.
        from slack_sdk import WebClient
        from slack_sdk.http_retry import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

        token = token or os.environ.get("SLACK_BOT_TOKEN")
        if not token:
            raise NotifyError("setup", None, "not_authed", "no token: set SLACK_BOT_TOKEN")
        base_url = base_url or os.environ.get("SLACK_API_URL") or DEFAULT_API_URL
        if not base_url.endswith("/"):
            base_url += "/"  # WebClient joins method names onto it
        self.base_url = base_url
        self.client = WebClient(
            token=token, base_url=base_url, timeout=timeout_seconds,
            retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=connection_retries),
                            RateLimitErrorRetryHandler(max_retry_count=rate_limit_retries)])
        self._channel_ids: dict[str, str] = {}

    def _call(self, method: str, target: str | None, function: Any, /, **arguments: Any) -> Any:
        from slack_sdk.errors import SlackApiError, SlackClientError

        try:
            response = function(**arguments)
        except SlackApiError as error:
            answer = error.response
            status = getattr(answer, "status_code", None)
            code = None
            try:
                code = answer.get("error")
            except (AttributeError, TypeError, ValueError):
                pass  # a body that is no JSON object (an HTML 503 page)
            detail = _detail(answer)
            if isinstance(status, int) and status >= 500:
                # Slack is down or failing: its body (if any) is an HTML page, not an error code.
                code, detail = f"http_{status}", str(code or detail)
            raise NotifyError(method, target, code or f"http_{status}", detail) from error
        except SlackClientError as error:
            raise NotifyError(method, target, "client_error", str(error)) from error
        except OSError as error:  # refused, reset, timed out after the connection retries
            raise NotifyError(method, target, "connection_error", str(error)) from error
        if not response.get("ok", False):  # slack_sdk raises on these; kept for a custom client
            raise NotifyError(method, target, response.get("error") or "unknown_error")
        return response

    def auth_test(self) -> dict[str, Any]:
        """Who the token is (team, bot user): a check at start-up that the token works."""
        return dict(self._call("auth.test", None, self.client.auth_test).data)

    def post_message(self, channel: str, payload: dict[str, Any],
                     thread_ts: str | None = None, key: str | None = None) -> Posted:
        arguments: dict[str, Any] = {"channel": channel, "text": payload.get("text") or "",
                                     "unfurl_links": False, "unfurl_media": False}
        if payload.get("blocks"):
            arguments["blocks"] = payload["blocks"]
        if thread_ts:
            arguments["thread_ts"] = thread_ts
        if key:
            arguments["metadata"] = {"event_type": METADATA_EVENT, "event_payload": {"key": key}}
        response = self._call("chat.postMessage", channel, self.client.chat_postMessage, **arguments)
        self._channel_ids[channel] = response["channel"]
        return Posted(response["channel"], response["ts"])

    def post(self, channel: str, payload: dict[str, Any], *, thread_ts: str | None = None,
             key: str | None = None) -> Posted:
        return self.post_message(channel, payload, thread_ts, key)

    def channel_id(self, channel: str) -> str:
        """The ID of a channel given as an ID or a #name (conversations.list, cached)."""
        if not channel.startswith("#"):
            return channel
        if channel in self._channel_ids:
            return self._channel_ids[channel]
        name, cursor = channel[1:], None
        for _ in range(100):  # pages of 200: 20,000 channels
            arguments: dict[str, Any] = {"limit": 200, "exclude_archived": True,
                                         "types": "public_channel,private_channel"}
            if cursor:
                arguments["cursor"] = cursor
            response = self._call("conversations.list", channel, self.client.conversations_list, **arguments)
            for item in response.get("channels") or []:
                if item.get("name") == name:
                    self._channel_ids[channel] = item["id"]
                    return item["id"]
            cursor = (response.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                break
        raise NotifyError("conversations.list", channel, "channel_not_found", "no channel of that name")

    def find(self, channel: str, key: str, *, thread_ts: str | None = None,
             file_name: str | None = None, pages: int = 5) -> Posted | None:
        """Our post carrying `key` (or the file `file_name`) in the channel or the thread, if any."""
        channel_id = self.channel_id(channel)
        cursor = None
        for _ in range(pages):
            arguments: dict[str, Any] = {"channel": channel_id, "limit": 200, "include_all_metadata": True}
            if cursor:
                arguments["cursor"] = cursor
            if thread_ts:
                response = self._call("conversations.replies", channel_id, self.client.conversations_replies,
                                      ts=thread_ts, **arguments)
            else:
                response = self._call("conversations.history", channel_id, self.client.conversations_history,
                                      **arguments)
            for message in response.get("messages") or []:
                metadata = message.get("metadata") or {}
                if (metadata.get("event_type") == METADATA_EVENT
                        and (metadata.get("event_payload") or {}).get("key") == key):
                    return Posted(channel_id, message["ts"])
                if file_name and any(item.get("name") == file_name for item in message.get("files") or []):
                    return Posted(channel_id, message["ts"])
            cursor = (response.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                break
        return None

    def post_parent(self, channel: str, payload: dict[str, Any]) -> str:
        return self.post_message(channel, payload).ts

    def post_reply(self, channel: str, thread_ts: str, payload: dict[str, Any]) -> str:
        return self.post_message(channel, payload, thread_ts).ts

    def update_parent(self, channel: str, ts: str, payload: dict[str, Any]) -> None:
        """Replace the parent's text and blocks; ``channel`` must be the ID (see Posted)."""
        arguments: dict[str, Any] = {"channel": channel, "ts": ts, "text": payload.get("text") or ""}
        if payload.get("blocks"):
            arguments["blocks"] = payload["blocks"]
        self._call("chat.update", channel, self.client.chat_update, **arguments)

    def upload_plot(self, channel: str, thread_ts: str, png: bytes, title: str,
                    file_name: str = "samples.png") -> str:
        """The PNG shared in the thread (files_upload_v2); returns the file ID."""
        response = self._call("files_upload_v2", channel, self.client.files_upload_v2,
                              channel=channel, thread_ts=thread_ts, content=png,
                              filename=file_name, title=title,
                              alt_txt=title)
        return response["file"]["id"]

    def upload(self, channel: str, thread_ts: str, png: bytes, title: str, key: str) -> Posted:
        return Posted(channel, self.upload_plot(channel, thread_ts, png, title, plot_file_name(key)))

    def history(self, channel: str, limit: int = 100) -> list[dict[str, Any]]:
        """The channel's latest top-level messages, newest first (reconciling after a crash)."""
        response = self._call("conversations.history", channel, self.client.conversations_history,
                              channel=channel, limit=limit)
        return list(response["messages"])


def _detail(answer: Any) -> str:
    try:
        messages = (answer.get("response_metadata") or {}).get("messages") or []
    except (AttributeError, TypeError, ValueError):
        return ""
    return "; ".join(str(message) for message in messages)
