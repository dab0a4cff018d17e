"""Store stage: the part for people's decisions on readings the daemon was unsure of: take it on or
dismiss it, who, how and when, with what the parser read then — labels to measure against later.

A take-on is written in the caller's transaction with the triage row it starts (daemon/decide.py),
so a crash keeps both or neither. The request's digest is unique: a replayed request changes nothing.
"""
from __future__ import annotations

from triagebot.records.threads import normalize_message_id
from triagebot.store.database import Database
from triagebot.store.protocol import DECISIONS, DecisionRow, utc_text

_COLUMNS = "decision_id, request_key, message_id, decision, decided_by, via, kind_read, reasons, note, decided_at"


class Decisions:
    """`DecisionStore` on the `decisions` table."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def record_decision(self, request_key: str, message_id: str, decision: str, decided_by: str, via: str,
                        kind_read: str, reasons: str, note: str = "") -> int | None:
        """Keep one decision; its id, or None when `request_key` was kept before (nothing is written)."""
        if decision not in DECISIONS:
            raise ValueError(f"decision {decision!r}: one of {', '.join(DECISIONS)}")
        row = self._database.execute(
            f"INSERT INTO decisions ({_COLUMNS.split(', ', 1)[1]}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT DO NOTHING RETURNING decision_id",
            (request_key, normalize_message_id(message_id), decision, decided_by, via, kind_read, reasons, note,
             self._database.stamp())).fetchone()
        return None if row is None else int(row[0])

    def decision_of(self, message_id: str) -> DecisionRow | None:
        """The last decision on a message, None when nobody decided."""
        row = self._database.execute(
            f"SELECT {_COLUMNS} FROM decisions WHERE message_id = ? ORDER BY decision_id DESC LIMIT 1",
            (normalize_message_id(message_id),)).fetchone()
        return None if row is None else DecisionRow(*row)

    def decisions(self, since: str | None = None) -> list[DecisionRow]:
        """Every decision, oldest first; `since` a UTC text lower bound on when it was made."""
        if since is None:
            rows = self._database.execute(f"SELECT {_COLUMNS} FROM decisions ORDER BY decision_id").fetchall()
        else:
            rows = self._database.execute(f"SELECT {_COLUMNS} FROM decisions WHERE decided_at >= ?"
                                          " ORDER BY decision_id", (utc_text(since),)).fetchall()
        return [DecisionRow(*row) for row in rows]
