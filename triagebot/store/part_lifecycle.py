"""Store stage: the parts for a report's life after its verdict — the `lifecycle`, `report_links`
and `mail_outbox` tables (see lifecycle_protocol.py), in the one SQL both backends read."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from triagebot.records.threads import normalize_message_id
from triagebot.store.database import Database
from triagebot.store.lifecycle_protocol import LifecycleMove, MailRow, ReportLink

_MOVE_COLUMNS = "move_id, message_id, state, cause_id, note, moved_at"
_LINK_COLUMNS = "joined_id, message_id, relation, rule, linked_at"
_MAIL_COLUMNS = ("reply_id, message_id, reply_message_id, status, requested_by, attempts, last_error,"
                 " created_at, sent_at, raw")


def _mail_row(row: Sequence[Any]) -> MailRow:
    return MailRow(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], bytes(row[9]))


class Lifecycle:
    """`LifecycleStore` on the `lifecycle` and `report_links` tables."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def add_move(self, message_id: str, state: str, cause_id: str, note: str) -> LifecycleMove | None:
        """Keep a move; None when this cause already moved this report to this state."""
        message_id = normalize_message_id(message_id)
        cause_id = normalize_message_id(cause_id) if cause_id else ""
        now = self._database.stamp()
        with self._database.transaction():
            row = self._database.execute(
                "INSERT INTO lifecycle (message_id, state, cause_id, note, moved_at) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING RETURNING move_id", (message_id, state, cause_id, note, now)).fetchone()
        return None if row is None else LifecycleMove(int(row[0]), message_id, state, cause_id, note, now)

    def moves_of(self, message_id: str) -> list[LifecycleMove]:
        rows = self._database.execute(
            f"SELECT {_MOVE_COLUMNS} FROM lifecycle WHERE message_id = ? ORDER BY move_id",
            (normalize_message_id(message_id),)).fetchall()
        return [LifecycleMove(*row) for row in rows]

    def link_report(self, joined_id: str, message_id: str, relation: str, rule: str) -> bool:
        with self._database.transaction():
            rows = self._database.execute(
                "INSERT INTO report_links (joined_id, message_id, relation, rule, linked_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (normalize_message_id(joined_id), normalize_message_id(message_id), relation, rule,
                 self._database.stamp()))
        return rows.rowcount > 0

    def links_of(self, message_id: str) -> list[ReportLink]:
        rows = self._database.execute(
            f"SELECT {_LINK_COLUMNS} FROM report_links WHERE message_id = ? ORDER BY link_id",
            (normalize_message_id(message_id),)).fetchall()
        return [ReportLink(*row) for row in rows]

    def joined_to(self, joined_id: str) -> ReportLink | None:
        row = self._database.execute(
            f"SELECT {_LINK_COLUMNS} FROM report_links WHERE joined_id = ?",
            (normalize_message_id(joined_id),)).fetchone()
        return None if row is None else ReportLink(*row)


class MailOutbox:
    """`MailOutboxStore` on the `mail_outbox` table."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def enqueue_mail(self, message_id: str, reply_message_id: str, raw: bytes, requested_by: str) -> MailRow:
        message_id = normalize_message_id(message_id)
        with self._database.transaction():
            self._database.execute(
                "INSERT INTO mail_outbox (message_id, reply_message_id, status, requested_by, created_at, raw)"
                " VALUES (?, ?, 'pending', ?, ?, ?) ON CONFLICT DO NOTHING",
                (message_id, normalize_message_id(reply_message_id), requested_by, self._database.stamp(), raw))
        row = self.mail_of(message_id)
        assert row is not None
        return row

    def mail_of(self, message_id: str) -> MailRow | None:
        row = self._database.execute(
            f"SELECT {_MAIL_COLUMNS} FROM mail_outbox WHERE message_id = ?",
            (normalize_message_id(message_id),)).fetchone()
        return None if row is None else _mail_row(row)

    def mark_mail_sending(self, reply_id: int) -> None:
        with self._database.transaction():
            self._database.execute(
                "UPDATE mail_outbox SET status = 'sending', attempts = attempts + 1 WHERE reply_id = ?", (reply_id,))

    def mark_mail_sent(self, reply_id: int) -> None:
        with self._database.transaction():
            self._database.execute(
                "UPDATE mail_outbox SET status = 'sent', sent_at = ?, last_error = NULL WHERE reply_id = ?",
                (self._database.stamp(), reply_id))

    def mark_mail_failed(self, reply_id: int, error: str) -> None:
        with self._database.transaction():
            self._database.execute(
                "UPDATE mail_outbox SET status = 'failed', last_error = ? WHERE reply_id = ?", (error, reply_id))
