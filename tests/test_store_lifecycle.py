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


def _older_moves(store) -> None:
    """Moves as a triagebot before issue 36 stored them: a mail with `Fixes:` or a revert posted
    moved a report to fixed or reverted; a watched tree's commit too (cause `commit:TREE:SHA`)."""
    store.add_move("a@x", "fix-proposed", "patch@x", "patch: sched: try harder")
    store.add_move("a@x", "fixed", "fix@x", "Fixes: 5c3f9e2a71d0 in sched: stop")
    store.add_move("b@x", "reverted", "revert@x", "revert of 5c3f9e2a71d0: Revert \"sched: x\"")
    store.add_move("c@x", "fixed", "commit:mainline:e42a2d34de9f0f8a10a4e279cc7a8683e66eb837", "Fixes: … (commit)")
    store.add_move("d@x", "fix-proposed", "same@x", "patch: one mail, two moves")
    store.add_move("d@x", "fixed", "same@x", "Fixes: 5c3f9e2a71d0 in the same mail")
    store.add_move("e@x", "stale", "", "no activity since 2025-01-01 (30 days)")


def _moves(store) -> dict[str, list[tuple[str, str]]]:
    return {key: [(move.state, move.cause_id) for move in store.moves_of(f"{key}@x")] for key in "abcde"}


AFTER_MIGRATION = {
    "a": [("fix-proposed", "patch@x"), ("fix-proposed", "fix@x")],  # a posted fix: proposed, not fixed
    "b": [("fix-proposed", "revert@x")],  # a posted revert too
    "c": [("fixed", "commit:mainline:e42a2d34de9f0f8a10a4e279cc7a8683e66eb837")],  # landed in the tree: kept
    "d": [("fix-proposed", "same@x")],  # one mail, one proposal
    "e": [("stale", "")],
}


def test_the_moves_an_older_triagebot_stored_read_forward_on_both_backends(stores: Stores) -> None:
    from triagebot.store.migrations import MIGRATIONS

    with stores.open() as store:
        _older_moves(store)
    for statement in MIGRATIONS[9].statements:  # migration 10, the same SQL on both
        stores.write(statement)
    with stores.open() as store:
        assert _moves(store) == AFTER_MIGRATION


def test_a_database_at_schema_9_is_migrated_forward_when_opened(tmp_path) -> None:
    import sqlite3

    from triagebot.store.migrations import LATEST_VERSION, MIGRATIONS, apply_migrations
    from triagebot.store.sqlite import SqliteStore

    database = tmp_path / "v9.db"
    connection = sqlite3.connect(database, isolation_level=None)
    apply_migrations(connection, str(database), MIGRATIONS[:9])  # the schema an older triagebot made
    connection.executemany("INSERT INTO lifecycle (message_id, state, cause_id, note, moved_at) "
                           "VALUES (?, ?, ?, ?, '2025-02-01T00:00:00+00:00')", [
                               ("a@x", "fix-proposed", "patch@x", "patch: sched: try harder"),
                               ("a@x", "fixed", "fix@x", "Fixes: 5c3f9e2a71d0 in sched: stop"),
                               ("c@x", "fixed", "commit:mainline:e42a2d34de9f", "Fixes: … (commit)")])
    connection.close()
    with SqliteStore(database) as store:
        assert [(move.state, move.cause_id, move.note) for move in store.moves_of("a@x")] == [
            ("fix-proposed", "patch@x", "patch: sched: try harder"),
            ("fix-proposed", "fix@x", "Fixes: 5c3f9e2a71d0 in sched: stop")]
        assert [move.state for move in store.moves_of("c@x")] == ["fixed"]
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION
