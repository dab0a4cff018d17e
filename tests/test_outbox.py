"""The outbox: exactly once, in order, nothing dropped — real SQLite and PostgreSQL, real slack_sdk,
local Slack."""
from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest

from tests.support.fake_slack import FakeSlack
from triagebot.notify import outbox, render
from triagebot.notify.plot import strip_plot
from triagebot.notify.slack import SlackNotifier, plot_file_name
from triagebot.records.states import TriageState
from triagebot.store.sql import SqlStore

TOKEN = "xoxb-1234-5678-outbox"
CHANNEL_ID = "C0TRIAGE1"


def raw(message_id: str) -> bytes:
    return f"Message-ID: <{message_id}>\nSubject: report {message_id}\n\nbody\n".encode()


@pytest.fixture
def slack():
    with FakeSlack(token=TOKEN, channels={CHANNEL_ID: "perf-triage"}) as server:
        yield server


@pytest.fixture
def store(stores):
    """The store on each backend (tests/support/postgres.py): the outbox is the same on both."""
    with stores.open() as opened:
        for message_id in ("one@example.org", "two@example.org"):
            opened.put_message(message_id, raw(message_id), "test", None, "2026-12-01T00:00:00+00:00")
        yield opened


def notifier_for(slack: FakeSlack, **options) -> SlackNotifier:
    return SlackNotifier(TOKEN, base_url=slack.base_url, timeout_seconds=5, **options)


def text(value: str) -> dict:
    return {"text": value, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": value}}]}


def enqueue_thread(store: SqlStore, message_id: str, channel: str = "#perf-triage") -> None:
    store.enqueue(message_id, "parent", channel, text(f"parent of {message_id}"))
    store.enqueue(message_id, "plan", channel, text(f"plan of {message_id}"))
    store.enqueue(message_id, "verdict", channel, text(f"verdict of {message_id}"))
    store.enqueue(message_id, "plot", channel, {"title": f"samples of {message_id}", "png_base64":
                                                base64.b64encode(strip_plot([1.0, 1.1, 0.9], [2.0, 2.1])).decode()})
    store.enqueue(message_id, "update-final", channel, text(f"final parent of {message_id}"))


def shape(slack: FakeSlack) -> list[tuple[str, str | None]]:
    """Every message of the channel in posting order: (text or file name, its parent's text)."""
    messages = slack.messages(CHANNEL_ID)
    by_ts = {message["ts"]: message for message in messages}
    result = []
    for message in messages:
        label = message["text"] or ",".join(item["name"] for item in message.get("files") or [])
        parent = message.get("thread_ts")
        result.append((label, by_ts[parent]["text"] if parent and parent != message["ts"] else None))
    return result


def test_a_thread_goes_out_in_order_once_and_the_parent_is_updated(store, slack) -> None:
    enqueue_thread(store, "one@example.org")
    assert not store.enqueue("one@example.org", "plan", "#perf-triage", text("again"))  # one per kind
    result = outbox.deliver(store, notifier_for(slack))
    assert (result.sent, result.held, result.waiting, result.error) == (5, 0, 0, None)
    assert shape(slack) == [("final parent of one@example.org", None),
                            ("plan of one@example.org", "final parent of one@example.org"),
                            ("verdict of one@example.org", "final parent of one@example.org"),
                            (plot_file_name("one@example.org#plot"), "final parent of one@example.org")]
    parent = store.posted("one@example.org", "parent")
    assert parent.posted_channel == CHANNEL_ID  # the ID Slack answered, needed by chat.update
    assert outbox.deliver(store, notifier_for(slack)).sent == 0  # nothing left, nothing again
    assert store.outbox_counts() == {"sent": 5}


def test_a_post_in_doubt_after_a_crash_is_found_on_slack_not_posted_again(store, slack) -> None:
    enqueue_thread(store, "one@example.org")
    notifier = notifier_for(slack)
    outbox.deliver(store, notifier)
    # A crash right after Slack took the plan reply, before it was marked sent: the row is back
    # in doubt exactly as mark_sending left it.
    plan = next(row for row in store.outbox() if row.kind == "plan")
    store.database.execute("UPDATE outbox SET status = 'sending', posted_ts = NULL WHERE outbox_id = ?",
                              (plan.outbox_id,))
    before = len(slack.messages(CHANNEL_ID))
    result = outbox.deliver(store, notifier)
    assert (result.found, result.sent) == (1, 0)
    assert len(slack.messages(CHANNEL_ID)) == before
    replies = slack.calls_to("conversations.replies")
    assert replies and replies[-1].params["include_all_metadata"] in ("1", "true", True)
    assert store.posted("one@example.org", "plan").posted_ts == slack.messages(CHANNEL_ID)[1]["ts"]


def test_a_plot_in_doubt_is_found_by_its_file_name_and_a_parent_by_its_metadata(store, slack) -> None:
    enqueue_thread(store, "one@example.org")
    notifier = notifier_for(slack)
    outbox.deliver(store, notifier)
    store.database.execute("UPDATE outbox SET status = 'sending' WHERE kind IN ('plot', 'parent')")
    before = len(slack.messages(CHANNEL_ID))
    result = outbox.deliver(store, notifier_for(slack))  # a new process: no channel IDs known yet
    assert result.found == 2 and result.sent == 0
    assert len(slack.messages(CHANNEL_ID)) == before
    assert slack.calls_to("conversations.list")  # the #name resolved to its ID for the history call


def test_a_row_in_doubt_that_never_reached_slack_is_posted_once(store, slack) -> None:
    store.enqueue("one@example.org", "parent", "#perf-triage", text("parent"))
    [row] = store.outbox()
    store.mark_sending(row.outbox_id)  # the crash came before the call
    result = outbox.deliver(store, notifier_for(slack))
    assert (result.found, result.sent) == (0, 1)
    assert [message["text"] for message in slack.messages(CHANNEL_ID)] == ["parent"]


def test_a_429_storm_loses_nothing_and_keeps_the_order(store, slack) -> None:
    enqueue_thread(store, "one@example.org")
    enqueue_thread(store, "two@example.org")
    slack.rate_limit("chat.postMessage", 7, retry_after=1)  # the client waits out 1, then gives up
    notifier = notifier_for(slack, rate_limit_retries=1)
    passes = []
    for _ in range(10):
        result = outbox.deliver(store, notifier, retry_seconds=0)
        passes.append(result)
        if not store.outbox("pending", "sending"):
            break
    assert any(result.error is not None and result.error.code == "ratelimited" for result in passes)
    assert [label for label, _ in shape(slack)] == [
        "final parent of one@example.org", "plan of one@example.org", "verdict of one@example.org",
        plot_file_name("one@example.org#plot"),
        "final parent of two@example.org", "plan of two@example.org", "verdict of two@example.org",
        plot_file_name("two@example.org#plot")]
    waits = [call for call in slack.calls_to("chat.postMessage") if call.status == 429]
    assert len(waits) == 7


def test_an_outage_keeps_everything_until_slack_answers_again(store, slack) -> None:
    enqueue_thread(store, "one@example.org")
    notifier = notifier_for(slack, connection_retries=0)
    slack.outage(True)
    down = outbox.deliver(store, notifier, retry_seconds=0)
    assert down.error is not None and down.error.code == "http_503" and down.sent == 0
    assert down.waiting == 5 and not slack.messages(CHANNEL_ID)
    [first, *_] = store.outbox()
    assert first.status == "sending" and "http_503" in first.last_error  # in doubt: looked up first
    slack.outage(False)
    up = outbox.deliver(store, notifier, retry_seconds=0)
    assert up.sent == 5 and len(shape(slack)) == 4


def test_a_wait_after_a_failure_is_kept(store, slack) -> None:
    store.enqueue("one@example.org", "parent", "#perf-triage", text("parent"))
    slack.outage(True)
    outbox.deliver(store, notifier_for(slack, connection_retries=0), retry_seconds=3600)
    slack.outage(False)
    result = outbox.deliver(store, notifier_for(slack))
    assert result.sent == 0 and result.waiting == 1  # not before its hour is over
    assert not slack.messages(CHANNEL_ID)


def test_a_refusal_is_held_with_its_channel_and_the_rest_goes_on(store, slack, caplog) -> None:
    enqueue_thread(store, "one@example.org", channel="#no-such-channel")
    enqueue_thread(store, "two@example.org")
    with caplog.at_level(logging.ERROR, logger="triagebot.notify"):
        result = outbox.deliver(store, notifier_for(slack))
    assert result.held == 1 and result.sent == 5 and result.waiting == 4
    [held] = store.outbox("held")
    assert held.kind == "parent" and "channel_not_found" in held.last_error and "#no-such-channel" in held.last_error
    [record] = [record for record in caplog.records if record.fields.get("event") == "notify.held"]
    assert record.fields["channel"] == "#no-such-channel" and record.fields["code"] == "channel_not_found"
    # The operator creates the channel (or fixes routing.toml) and restarts: held rows go again.
    slack.add_channel("C0NEW0001", "no-such-channel")
    assert store.release_held() == 1
    again = outbox.deliver(store, notifier_for(slack))
    assert again.sent == 5
    assert [message["text"] for message in slack.messages("C0NEW0001") if not message.get("files")] == [
        "final parent of one@example.org", "plan of one@example.org", "verdict of one@example.org"]


def test_a_revoked_token_holds_rows_instead_of_dropping_them(store, slack) -> None:
    store.enqueue("one@example.org", "parent", "#perf-triage", text("parent"))
    result = outbox.deliver(store, SlackNotifier("xoxb-revoked", base_url=slack.base_url))
    assert result.held == 1
    [row] = store.outbox("held")
    assert "invalid_auth" in row.last_error
    payload = json.loads(store.database.execute("SELECT payload_json FROM outbox").fetchone()[0])
    assert payload == text("parent")  # kept whole for the retry


def test_the_terminal_gets_the_same_thread(store, tmp_path: Path) -> None:
    import io

    from triagebot.notify.terminal import TerminalNotifier

    enqueue_thread(store, "one@example.org")
    stream = io.StringIO()
    result = outbox.deliver(store, TerminalNotifier(stream, plot_dir=tmp_path / "plots"))
    assert result.sent == 5
    printed = stream.getvalue()
    assert printed.index("parent of one@example.org") < printed.index("plan of one@example.org") \
        < printed.index("verdict of one@example.org") < printed.index("final parent of one@example.org")
    [png] = (tmp_path / "plots").iterdir()
    assert png.read_bytes().startswith(b"\x89PNG")


def test_state_meanings_cover_every_state() -> None:
    assert set(render.STATE_MEANING) == set(TriageState) == set(render.STATE_EMOJI)


def test_a_progress_message_is_posted_once_and_edited_in_place(store: SqlStore, slack: FakeSlack) -> None:
    """A bisection's progress (issue 36): one message in the thread, its edits while pending
    replaced by the newest text (one Slack update a delivery, never a post a sample)."""
    store.enqueue("one@example.org", "parent", "#perf-triage", text("parent"))
    store.enqueue("one@example.org", "bisect-progress-1", "#perf-triage", text("step 1 of ~7, sample 0"))
    kinds = {store.edit_notification("one@example.org", "bisect-progress-1", "#perf-triage",
                                     text(f"step 1 of ~7, sample {number}")) for number in range(1, 15)}
    assert kinds == {"edit-bisect-progress-1-1"}  # fourteen samples, one pending edit
    notifier = notifier_for(slack)
    assert outbox.deliver(store, notifier).sent == 3
    assert [label for label, _ in shape(slack)] == ["parent", "step 1 of ~7, sample 14"]  # the edit's text
    [update] = slack.calls_to("chat.update")
    assert update.params["ts"] == slack.messages(CHANNEL_ID)[1]["ts"]  # the progress message, not the parent
    # the next edit, after the first went out, is a row of its own
    assert store.edit_notification("one@example.org", "bisect-progress-1", "#perf-triage",
                                   text("ended")) == "edit-bisect-progress-1-2"
    assert outbox.deliver(store, notifier).sent == 1
    assert [label for label, _ in shape(slack)] == ["parent", "ended"] and len(slack.messages(CHANNEL_ID)) == 2


def test_an_edit_waits_for_the_message_it_edits(store: SqlStore, slack: FakeSlack) -> None:
    store.enqueue("one@example.org", "parent", "#perf-triage", text("parent"))
    store.edit_notification("one@example.org", "bisect-progress-9", "#perf-triage", text("sample 1"))
    delivered = outbox.deliver(store, notifier_for(slack))
    assert (delivered.sent, delivered.waiting) == (1, 1) and slack.calls_to("chat.update") == []
