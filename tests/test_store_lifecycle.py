"""The store's parts for a report's life after its verdict: moves, links, the mail outbox — on
SQLite and on PostgreSQL (the `stores` fixture)."""
from __future__ import annotations

from tests.support.postgres import Stores


def test_a_move_is_kept_once_per_cause(stores: Stores) -> None:
    with stores.open() as store:
        first = store.add_move("<report@x>", "fixed", "<fix@x>", "Fixes: abc")
        assert first is not None and first.message_id == "report@x" and first.cause_id == "fix@x"
        assert store.add_move("report@x", "fixed", "fix@x", "again") is None  # the same message again
        store.add_move("report@x", "stale", "", "no activity for 30 days")
        assert [(move.state, move.cause_id) for move in store.moves_of("report@x")] == [
            ("fixed", "fix@x"), ("stale", "")]
        assert store.moves_of("other@x") == []


def test_a_report_joins_one_first_report(stores: Stores) -> None:
    with stores.open() as store:
        assert store.link_report("later@x", "first@x", "also-seen", "same culprit")
        assert not store.link_report("later@x", "another@x", "also-seen", "same culprit")
        assert store.link_report("better@x", "first@x", "linked", "same commit, other direction")
        assert [(link.joined_id, link.relation) for link in store.links_of("first@x")] == [
            ("later@x", "also-seen"), ("better@x", "linked")]
        joined = store.joined_to("later@x")
        assert joined is not None and joined.message_id == "first@x"
        assert store.joined_to("first@x") is None


def test_the_mail_outbox_keeps_one_reply_per_report(stores: Stores) -> None:
    with stores.open() as store:
        row = store.enqueue_mail("report@x", "<reply-1@triage>", b"raw one", "alice")
        again = store.enqueue_mail("report@x", "reply-2@triage", b"raw two", "bob")
        assert again == row and row.raw == b"raw one" and row.status == "pending" and row.requested_by == "alice"
        store.mark_mail_sending(row.reply_id)
        sending = store.mail_of("report@x")
        assert sending is not None and sending.status == "sending" and sending.attempts == 1
        store.mark_mail_sent(row.reply_id)
        sent = store.mail_of("report@x")
        assert sent is not None and sent.status == "sent" and sent.sent_at is not None
    with stores.open() as store:  # kept across a reopen
        kept = store.mail_of("<report@x>")
        assert kept is not None and kept.status == "sent" and kept.reply_message_id == "reply-1@triage"
