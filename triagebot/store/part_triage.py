"""Store stage: the parts for the daemon's tables — a triage row per report, the outbox.

A state change and the notifications announcing it are written in one transaction (the
caller wraps both in `store.transaction()`), so a crash leaves either both or neither.
A move the triage states do not allow (triagebot/records/states.py) is refused before anything is
written. Outbox rows are sent in `outbox_id` order; `kind` is unique per report, so enqueueing
the same notification twice (a restarted run reaching "started" again) is a no-op.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from triagebot.records.states import TriageState
from triagebot.records.threads import normalize_message_id
from triagebot.store.database import Database, given, marks
from triagebot.store.protocol import OutboxRow, TriageRow

_TRIAGE_COLUMNS = "message_id, state, channel, host, plan_json, note, created_at, updated_at"
_OUTBOX_COLUMNS = ("outbox_id, message_id, kind, channel, status, attempts, next_attempt_at,"
                   " last_error, posted_channel, posted_ts, created_at, sent_at, payload_json")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _triage_row(row: Sequence[Any]) -> TriageRow:
    plan = json.loads(row[4]) if row[4] else None
    return TriageRow(row[0], TriageState.of(row[1]), row[2], row[3], plan, row[5], row[6], row[7])


def _outbox_row(row: Sequence[Any]) -> OutboxRow:
    return OutboxRow(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8],
                     row[9], row[10], row[11], payload=json.loads(row[12]))


class Triage:
    """`TriageStore` on the `triage` table."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def start_triage(self, message_id: str, channel: str, state: str = TriageState.NEW) -> bool:
        """Take a report on; False when it already has a triage row (nothing changes then)."""
        state = TriageState.of(state)
        now = self._database.stamp()
        with self._database.transaction():
            cursor = self._database.execute(
                "INSERT INTO triage (message_id, state, channel, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (normalize_message_id(message_id), state.value, channel, now, now))
        return cursor.rowcount > 0

    def set_triage(self, message_id: str, state: str, *, plan: dict[str, Any] | None = None,
                   host: str | None = None, note: str | None = None, asked: bool = False) -> None:
        """Move a report to `state`; `plan`, `host` and `note` replace the stored ones when given.

        ValueError, with nothing written, for a report without a triage row or a move
        `TriageState.can_move_to` does not allow (`asked`: one a team member asked for)."""
        message_id = normalize_message_id(message_id)
        target = TriageState.of(state)
        sets, values = given([("state = ?", target.value), ("updated_at = ?", self._database.stamp()),
                              ("host = ?", host), ("plan_json = ?", None if plan is None else _dumps(plan)),
                              ("note = ?", note)])
        database = self._database
        with self._database.transaction():
            row = database.execute("SELECT state FROM triage WHERE message_id = ?",
                                     (message_id,)).fetchone()
            if row is None:
                raise ValueError(f"{message_id}: no triage row to move to {target}")
            if not TriageState.of(row[0]).can_move_to(target, asked=asked):
                raise ValueError(f"{message_id}: a report cannot move from {row[0]} to {target}")
            database.execute(f"UPDATE triage SET {', '.join(sets)} WHERE message_id = ?",
                               (*values, message_id))

    def get_triage(self, message_id: str) -> TriageRow | None:
        row = self._database.execute(
            f"SELECT {_TRIAGE_COLUMNS} FROM triage WHERE message_id = ?",
            (normalize_message_id(message_id),)).fetchone()
        return None if row is None else _triage_row(row)

    def triage_in(self, *states: str) -> list[TriageRow]:
        """Reports in any of `states`, oldest first (the order they are worked on)."""
        rows = self._database.execute(
            f"SELECT {_TRIAGE_COLUMNS} FROM triage WHERE state IN ({marks(len(states))})"
            " ORDER BY created_at, rowid", [str(state) for state in states]).fetchall()
        return [_triage_row(row) for row in rows]

    def triage_counts(self) -> dict[str, int]:
        return dict(self._database.execute(
            "SELECT state, count(*) FROM triage GROUP BY state").fetchall())

    def reports_to_admit(self, kinds: tuple[str, ...], dated_since: str) -> list[str]:
        """Reports of `kinds` dated at or after `dated_since` (undated: received), not taken on."""
        rows = self._database.execute(
            "SELECT r.message_id FROM records r JOIN messages m ON m.message_id = r.message_id"
            " LEFT JOIN triage t ON t.message_id = r.message_id"
            f" WHERE r.kind IN ({marks(len(kinds))})"
            " AND COALESCE(r.date_utc, m.received_at) >= ? AND t.message_id IS NULL"
            " ORDER BY m.received_at, m.rowid", (*kinds, dated_since)).fetchall()
        return [row[0] for row in rows]

    def received_between(self, kinds: tuple[str, ...], start: str, end: str) -> list[str]:
        """Records of `kinds` whose message was received in [start, end) (UTC text), oldest first."""
        rows = self._database.execute(
            "SELECT r.message_id FROM records r JOIN messages m ON m.message_id = r.message_id"
            f" WHERE r.kind IN ({marks(len(kinds))}) AND m.received_at >= ? AND m.received_at < ?"
            " ORDER BY m.received_at, m.rowid", (*kinds, start, end)).fetchall()
        return [row[0] for row in rows]


EDIT_PREFIX = "edit-"  # an outbox row that edits another posted row: edit-TARGET-N (notify/outbox.py)


class Outbox:
    """`OutboxStore` on the `outbox` table."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def enqueue(self, message_id: str, kind: str, channel: str, payload: dict[str, Any]) -> bool:
        """Add a notification; False when this report already has one of this kind."""
        with self._database.transaction():
            cursor = self._database.execute(
                "INSERT INTO outbox (message_id, kind, channel, status, created_at,"
                " payload_json) VALUES (?, ?, ?, 'pending', ?, ?) ON CONFLICT DO NOTHING",
                (normalize_message_id(message_id), kind, channel, self._database.stamp(),
                 _dumps(payload)))
        return cursor.rowcount > 0

    def edit_notification(self, message_id: str, target_kind: str, channel: str, payload: dict[str, Any]) -> str:
        """An edit of the report's posted notification `target_kind` (a progress message), as a
        row `edit-TARGET-N`: one still pending is given the new payload (a reader sees the latest
        text, and Slack gets one update a delivery, not one a sample); else a new row. Its kind."""
        prefix = f"{EDIT_PREFIX}{target_kind}-"
        key = normalize_message_id(message_id)
        with self._database.transaction():
            kinds = [row[0] for row in self._database.execute(
                "SELECT kind FROM outbox WHERE message_id = ? AND substr(kind, 1, ?) = ? AND status = 'pending'",
                (key, len(prefix), prefix)).fetchall()]
            if kinds:
                kind = max(kinds, key=lambda text: int(text[len(prefix):] or 0))
                self._database.execute("UPDATE outbox SET payload_json = ? WHERE message_id = ? AND kind = ?",
                                       (_dumps(payload), key, kind))
                return kind
            made = int(self._database.execute(
                "SELECT count(*) FROM outbox WHERE message_id = ? AND substr(kind, 1, ?) = ?",
                (key, len(prefix), prefix)).fetchone()[0])
            kind = f"{prefix}{made + 1}"
            self._database.execute(
                "INSERT INTO outbox (message_id, kind, channel, status, created_at, payload_json)"
                " VALUES (?, ?, ?, 'pending', ?, ?)", (key, kind, channel, self._database.stamp(), _dumps(payload)))
        return kind

    def outbox(self, *statuses: str, message_id: str | None = None) -> list[OutboxRow]:
        """Outbox rows in sending order, of the given statuses (all when none given)."""
        where: list[str] = []
        values: list[str] = []
        if statuses:
            where.append(f"status IN ({marks(len(statuses))})")
            values.extend(statuses)
        if message_id is not None:
            where.append("message_id = ?")
            values.append(normalize_message_id(message_id))
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._database.execute(
            f"SELECT {_OUTBOX_COLUMNS} FROM outbox{clause} ORDER BY outbox_id", values).fetchall()
        return [_outbox_row(row) for row in rows]

    def outbox_counts(self) -> dict[str, int]:
        return dict(self._database.execute(
            "SELECT status, count(*) FROM outbox GROUP BY status").fetchall())

    def posted(self, message_id: str, kind: str) -> OutboxRow | None:
        """The sent notification of this kind for a report (the parent's ts, for replies)."""
        row = self._database.execute(
            f"SELECT {_OUTBOX_COLUMNS} FROM outbox"
            " WHERE message_id = ? AND kind = ? AND status = 'sent'",
            (normalize_message_id(message_id), kind)).fetchone()
        return None if row is None else _outbox_row(row)

    def mark_sending(self, outbox_id: int) -> None:
        """Committed before the Slack call: after a crash the row says "maybe sent"."""
        with self._database.transaction():
            self._database.execute(
                "UPDATE outbox SET status = 'sending', attempts = attempts + 1 WHERE outbox_id = ?",
                (outbox_id,))

    def mark_sent(self, outbox_id: int, posted_channel: str | None, posted_ts: str | None) -> None:
        with self._database.transaction():
            self._database.execute(
                "UPDATE outbox SET status = 'sent', posted_channel = ?, posted_ts = ?, sent_at = ?,"
                " last_error = NULL, next_attempt_at = NULL WHERE outbox_id = ?",
                (posted_channel, posted_ts, self._database.stamp(), outbox_id))

    def mark_retry(self, outbox_id: int, error: str, wait_seconds: float) -> None:
        """After a failure a later try can clear: tried again (after a look for it on Slack, since
        it may have arrived) no sooner than `wait_seconds` from now."""
        later = self._database.stamp(self._database.clock() + timedelta(seconds=wait_seconds))
        with self._database.transaction():
            self._database.execute(
                "UPDATE outbox SET status = 'sending', last_error = ?, next_attempt_at = ?"
                " WHERE outbox_id = ?",
                (error, later, outbox_id))

    def mark_held(self, outbox_id: int, error: str) -> None:
        """Kept for an operator: Slack refused it for a reason a retry will not clear."""
        with self._database.transaction():
            self._database.execute(
                "UPDATE outbox SET status = 'held', last_error = ? WHERE outbox_id = ?",
                (error, outbox_id))

    def release_held(self) -> int:
        """Held rows back to pending (an operator fixed the token or channel); returns how many."""
        with self._database.transaction():
            cursor = self._database.execute(
                "UPDATE outbox SET status = 'pending', next_attempt_at = NULL"
                " WHERE status = 'held'")
        return cursor.rowcount

    def due(self, row: OutboxRow, now: datetime | None = None) -> bool:
        """Whether a pending row's wait after a failure is over."""
        if row.next_attempt_at is None:
            return True
        return self._database.stamp(now) >= row.next_attempt_at
