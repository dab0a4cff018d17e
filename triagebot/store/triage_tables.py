"""Store stage: the daemon's tables on SQLite — a triage row per report, the notification outbox.

A state change and the notifications announcing it are written in one transaction (the
caller wraps both in `store.transaction()`), so a crash leaves either both or neither.
Outbox rows are sent in `outbox_id` order; `kind` is unique per report, so enqueueing the
same notification twice (a restarted run reaching "started" again) is a no-op.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from triagebot.store.protocol import normalize_message_id

OUTBOX_STATUSES = ("pending", "sending", "sent", "held")


@dataclass(frozen=True)
class TriageRow:
    message_id: str
    state: str
    channel: str
    host: str | None
    plan: dict[str, Any] | None
    note: str | None
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class OutboxRow:
    outbox_id: int
    message_id: str
    kind: str
    channel: str
    status: str
    attempts: int
    next_attempt_at: str | None
    last_error: str | None
    posted_channel: str | None
    posted_ts: str | None
    created_at: str
    sent_at: str | None
    payload: dict[str, Any]

    @property
    def key(self) -> str:
        """The name this notification carries on Slack, to be found again after a crash."""
        return f"{self.message_id}#{self.kind}"


_OUTBOX_COLUMNS = ("outbox_id, message_id, kind, channel, status, attempts, next_attempt_at, last_error,"
                   " posted_channel, posted_ts, created_at, sent_at, payload_json")


def _outbox_row(row: tuple) -> OutboxRow:
    return OutboxRow(*row[:-1], payload=json.loads(row[-1]))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class TriageTables:
    """Methods SqliteStore mixes in; they use its connection, transactions and clock."""

    _connection: Any

    def _stamp(self) -> str:
        from triagebot.store.sqlite import utc_text

        return utc_text(self._clock())  # type: ignore[attr-defined]

    # -- triage rows ------------------------------------------------------------------------
    def start_triage(self, message_id: str, channel: str, state: str = "new") -> bool:
        """Take a report on; False when it already has a triage row (nothing changes then)."""
        now = self._stamp()
        with self.transaction():  # type: ignore[attr-defined]
            cursor = self._connection.execute(
                "INSERT OR IGNORE INTO triage (message_id, state, channel, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?)", (normalize_message_id(message_id), state, channel, now, now))
        return cursor.rowcount > 0

    def set_triage(self, message_id: str, state: str, *, plan: dict[str, Any] | None = None,
                   host: str | None = None, note: str | None = None) -> None:
        """Move a report to `state`; `plan`, `host` and `note` replace the stored ones when given."""
        sets, values = ["state = ?", "updated_at = ?"], [state, self._stamp()]
        if host is not None:
            sets.append("host = ?")
            values.append(host)
        if plan is not None:
            sets.append("plan_json = ?")
            values.append(_dumps(plan))
        if note is not None:
            sets.append("note = ?")
            values.append(note)
        with self.transaction():  # type: ignore[attr-defined]
            self._connection.execute(f"UPDATE triage SET {', '.join(sets)} WHERE message_id = ?",
                                     (*values, normalize_message_id(message_id)))

    def get_triage(self, message_id: str) -> TriageRow | None:
        row = self._connection.execute(
            "SELECT message_id, state, channel, host, plan_json, note, created_at, updated_at FROM triage"
            " WHERE message_id = ?", (normalize_message_id(message_id),)).fetchone()
        return None if row is None else self._triage_row(row)

    @staticmethod
    def _triage_row(row: tuple) -> TriageRow:
        return TriageRow(row[0], row[1], row[2], row[3], json.loads(row[4]) if row[4] else None, *row[5:])

    def triage_in(self, *states: str) -> list[TriageRow]:
        """Reports in any of `states`, oldest first (the order they are worked on)."""
        marks = ",".join("?" * len(states))
        rows = self._connection.execute(
            "SELECT message_id, state, channel, host, plan_json, note, created_at, updated_at FROM triage"
            f" WHERE state IN ({marks}) ORDER BY created_at, rowid", states).fetchall()
        return [self._triage_row(row) for row in rows]

    def triage_counts(self) -> dict[str, int]:
        return dict(self._connection.execute("SELECT state, count(*) FROM triage GROUP BY state").fetchall())

    def reports_to_admit(self, kinds: tuple[str, ...], dated_since: str) -> list[str]:
        """Reports of `kinds` dated at or after `dated_since` (undated: received) with no triage row."""
        marks = ",".join("?" * len(kinds))
        rows = self._connection.execute(
            "SELECT r.message_id FROM records r JOIN messages m ON m.message_id = r.message_id"
            f" LEFT JOIN triage t ON t.message_id = r.message_id WHERE r.kind IN ({marks})"
            " AND COALESCE(r.date_utc, m.received_at) >= ? AND t.message_id IS NULL"
            " ORDER BY m.received_at, m.rowid", (*kinds, dated_since)).fetchall()
        return [row[0] for row in rows]

    # -- outbox -----------------------------------------------------------------------------
    def enqueue(self, message_id: str, kind: str, channel: str, payload: dict[str, Any]) -> bool:
        """Add a notification; False when this report already has one of this kind."""
        with self.transaction():  # type: ignore[attr-defined]
            cursor = self._connection.execute(
                "INSERT OR IGNORE INTO outbox (message_id, kind, channel, status, created_at, payload_json)"
                " VALUES (?, ?, ?, 'pending', ?, ?)",
                (normalize_message_id(message_id), kind, channel, self._stamp(), _dumps(payload)))
        return cursor.rowcount > 0

    def outbox(self, *statuses: str, message_id: str | None = None) -> list[OutboxRow]:
        """Outbox rows in sending order, of the given statuses (all when none given)."""
        where, values = [], []
        if statuses:
            where.append(f"status IN ({','.join('?' * len(statuses))})")
            values.extend(statuses)
        if message_id is not None:
            where.append("message_id = ?")
            values.append(normalize_message_id(message_id))
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._connection.execute(f"SELECT {_OUTBOX_COLUMNS} FROM outbox{clause} ORDER BY outbox_id",
                                        values).fetchall()
        return [_outbox_row(row) for row in rows]

    def outbox_counts(self) -> dict[str, int]:
        return dict(self._connection.execute("SELECT status, count(*) FROM outbox GROUP BY status").fetchall())

    def posted(self, message_id: str, kind: str) -> OutboxRow | None:
        """The sent notification of this kind for a report (the parent's ts, for replies)."""
        row = self._connection.execute(
            f"SELECT {_OUTBOX_COLUMNS} FROM outbox WHERE message_id = ? AND kind = ? AND status = 'sent'",
            (normalize_message_id(message_id), kind)).fetchone()
        return None if row is None else _outbox_row(row)

    def mark_sending(self, outbox_id: int) -> None:
        """Written (and committed) before the Slack call: after a crash the row says "maybe sent"."""
        with self.transaction():  # type: ignore[attr-defined]
            self._connection.execute("UPDATE outbox SET status = 'sending', attempts = attempts + 1"
                                     " WHERE outbox_id = ?", (outbox_id,))

    def mark_sent(self, outbox_id: int, posted_channel: str | None, posted_ts: str | None) -> None:
        with self.transaction():  # type: ignore[attr-defined]
            self._connection.execute(
                "UPDATE outbox SET status = 'sent', posted_channel = ?, posted_ts = ?, sent_at = ?,"
                " last_error = NULL, next_attempt_at = NULL WHERE outbox_id = ?",
                (posted_channel, posted_ts, self._stamp(), outbox_id))

    def mark_retry(self, outbox_id: int, error: str, wait_seconds: float) -> None:
        """After a failure a later try can clear: tried again (after a look for it on Slack, since
        it may have arrived) no sooner than `wait_seconds` from now."""
        from triagebot.store.sqlite import utc_text

        later = utc_text(self._clock() + timedelta(seconds=wait_seconds))  # type: ignore[attr-defined]
        with self.transaction():  # type: ignore[attr-defined]
            self._connection.execute("UPDATE outbox SET status = 'sending', last_error = ?, next_attempt_at = ?"
                                     " WHERE outbox_id = ?", (error, later, outbox_id))

    def mark_held(self, outbox_id: int, error: str) -> None:
        """Kept for an operator: Slack refused it for a reason a retry will not clear."""
        with self.transaction():  # type: ignore[attr-defined]
            self._connection.execute("UPDATE outbox SET status = 'held', last_error = ? WHERE outbox_id = ?",
                                     (error, outbox_id))

    def release_held(self) -> int:
        """Held rows back to pending (an operator fixed the token or channel); returns how many."""
        with self.transaction():  # type: ignore[attr-defined]
            cursor = self._connection.execute(
                "UPDATE outbox SET status = 'pending', next_attempt_at = NULL WHERE status = 'held'")
        return cursor.rowcount

    def now_text(self) -> str:
        return self._stamp()

    def due(self, row: OutboxRow, now: datetime | None = None) -> bool:
        """Whether a pending row's wait after a failure is over."""
        if row.next_attempt_at is None:
            return True
        from triagebot.store.sqlite import utc_text

        return utc_text(now or self._clock()) >= row.next_attempt_at  # type: ignore[attr-defined]
