"""Notify stage: deliver the outbox, in order, exactly once.

Every notification is an outbox row written with the state change it announces. Delivering
one row:

1. the row is marked `sending` and committed before Slack is called;
2. Slack is called, the post carrying the row's key (message metadata; a plot's file name);
3. the row is marked `sent` with the channel ID and ts Slack answered.

A crash between 1 and 3 leaves the row `sending`: before it is sent again, Slack is asked
whether a post with its key exists (`Notifier.find`), and if so that post is taken as the
delivery. So a crash never posts twice and never loses a post. The same holds after a failure
that leaves delivery in doubt (a timeout, a 5xx): the row stays `sending`.

An edit row (`edit-TARGET-N`, store.edit_notification) edits the report's posted row TARGET in
place (a bisection's progress message): one update, never a new post; a later edit written
before it went out replaced its text, so Slack gets the latest.

Order: rows go out in the order they were written. A failure a later try can clear (429s
beyond the client's own retries, an outage) stops the whole delivery until its wait is over,
so nothing overtakes it. A refusal no retry clears (`channel_not_found`, `invalid_auth`,
`invalid_blocks`) holds the row for an operator, logged with its channel and Slack's code; the
report's later rows wait behind it, other reports go on.
"""
from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from dataclasses import dataclass

from triagebot.backoff import Backoff
from triagebot.notify.slack import Notifier, NotifyError, Posted, plot_file_name
from triagebot.store.part_triage import EDIT_PREFIX
from triagebot.store.protocol import OutboxRow, OutboxStore

log = logging.getLogger("triagebot.notify")

DEFAULT_RETRY_SECONDS = 30.0  # first wait after a failure; doubled per attempt, at most MAX_RETRY_SECONDS
MAX_RETRY_SECONDS = 600.0


@dataclass
class Delivery:
    """What one pass over the outbox did."""

    sent: int = 0
    found: int = 0  # rows in doubt found already posted (no second post)
    held: int = 0
    waiting: int = 0  # rows left for a later pass (Slack failing, or behind such a row)
    error: NotifyError | None = None  # the failure that stopped the pass, if one did


def base_kind(kind: str) -> str:
    """A row's kind without its rerun's number: a rerun a team member asked for (actions.py)
    posts `verdict@2`, `plot@2`, … beside the first run's rows, each delivered as its kind."""
    return kind.partition("@")[0]


def retry_wait(attempts: int, first_seconds: float) -> float:
    """The wait after a row's `attempts`-th failed post: doubling from `first_seconds`, capped."""
    return Backoff(first_seconds, MAX_RETRY_SECONDS).delay(attempts - 1)


def _top_level(row: OutboxRow) -> bool:
    """A post of its own in the channel: a report's parent message, or the day's digest."""
    return row.kind == "parent" or row.kind.startswith("digest-")


def edited_kind(kind: str) -> str | None:
    """The kind of the row an edit row (`edit-TARGET-N`) edits; None for any other row."""
    if not kind.startswith(EDIT_PREFIX):
        return None
    target, _, number = kind[len(EDIT_PREFIX):].rpartition("-")
    return target if target and number.isdigit() else None


def _deliver(row: OutboxRow, notifier: Notifier, parent: OutboxRow | None,
             edited: OutboxRow | None = None) -> Posted:
    payload = row.payload
    if _top_level(row):
        return notifier.post(row.channel, payload, key=row.key)
    assert parent is not None and parent.posted_channel and parent.posted_ts
    if edited is not None:  # a progress message in the thread, edited in place (chat.update)
        assert edited.posted_channel and edited.posted_ts
        notifier.update_parent(edited.posted_channel, edited.posted_ts, payload)
        return Posted(edited.posted_channel, edited.posted_ts)
    if row.kind.startswith("update"):
        notifier.update_parent(parent.posted_channel, parent.posted_ts, payload)
        return Posted(parent.posted_channel, parent.posted_ts)
    if base_kind(row.kind) == "plot":
        png = base64.b64decode(payload["png_base64"])
        return notifier.upload(parent.posted_channel, parent.posted_ts, png, payload["title"], row.key)
    return notifier.post(parent.posted_channel, payload, thread_ts=parent.posted_ts, key=row.key)


def _find(row: OutboxRow, notifier: Notifier, parent: OutboxRow | None) -> Posted | None:
    """Whether a row in doubt already reached Slack (updates and edits need no answer: they
    repeat safely)."""
    if row.kind.startswith("update") or edited_kind(row.kind) is not None:
        return None
    if _top_level(row):
        return notifier.find(row.channel, row.key)
    assert parent is not None and parent.posted_channel and parent.posted_ts
    file_name = plot_file_name(row.key) if base_kind(row.kind) == "plot" else None
    return notifier.find(parent.posted_channel, row.key, thread_ts=parent.posted_ts, file_name=file_name)


def deliver(store: OutboxStore, notifier: Notifier, *, retry_seconds: float = DEFAULT_RETRY_SECONDS,
            on_sent: Callable[[OutboxRow], None] | None = None) -> Delivery:
    """Send what the outbox holds, oldest first; see the module text for the guarantees."""
    result = Delivery()
    blocked: set[str] = set()  # reports with an earlier row not delivered: the rest of theirs waits
    rows = store.outbox("pending", "sending")
    for position, row in enumerate(rows):
        if row.message_id in blocked:
            result.waiting += 1
            continue
        if not store.due(row):
            result.waiting += len(rows) - position  # in a wait after a failure: keep the order
            break
        parent = edited = None
        if not _top_level(row):
            parent = store.posted(row.message_id, "parent")
            if parent is None:  # the parent is held (or not yet sent): replies wait for it
                blocked.add(row.message_id)
                result.waiting += 1
                continue
        target = edited_kind(row.kind)
        if target is not None:
            edited = store.posted(row.message_id, target)
            if edited is None:  # the message it edits is not posted yet: it waits, as replies do
                blocked.add(row.message_id)
                result.waiting += 1
                continue
        try:
            if row.status == "sending":
                found = _find(row, notifier, parent)
                if found is not None:
                    store.mark_sent(row.outbox_id, found.channel, found.ts)
                    result.found += 1
                    log.info("notification already posted", extra={"fields": {
                        "event": "notify.found", "key": row.key, "channel": found.channel, "ts": found.ts}})
                    continue
            store.mark_sending(row.outbox_id)
            posted = _deliver(row, notifier, parent, edited)
        except NotifyError as error:
            if error.retryable:
                wait = retry_wait(row.attempts + 1, retry_seconds)
                store.mark_retry(row.outbox_id, str(error), wait)
                log.warning("slack failing: delivery paused", extra={"fields": {
                    "event": "notify.retry", "key": row.key, "method": error.method, "channel": error.channel,
                    "code": error.code, "wait_seconds": wait}})
                result.error = error
                result.waiting += len(rows) - position
                break
            store.mark_held(row.outbox_id, str(error))
            log.error("slack refused a notification: held for an operator", extra={"fields": {
                "event": "notify.held", "key": row.key, "method": error.method, "channel": error.channel,
                "code": error.code}})
            blocked.add(row.message_id)
            result.held += 1
            continue
        store.mark_sent(row.outbox_id, posted.channel, posted.ts)
        result.sent += 1
        if on_sent is not None:
            on_sent(row)
    return result
