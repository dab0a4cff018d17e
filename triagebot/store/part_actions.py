"""Store stage: the part for actions taken from Slack — who did what to which report, and when.

An action is written in the caller's transaction together with the state change and the
thread reply it makes (see triagebot/actions/act.py), so a crash keeps all three or none. The
request's digest is unique: the same signed request delivered twice finds its row and the
second delivery changes nothing.
"""
from __future__ import annotations

from triagebot.records.threads import normalize_message_id
from triagebot.store.database import Database
from triagebot.store.protocol import ActionRow

_COLUMNS = "action_id, request_key, message_id, action, user_id, detail, budget, created_at"


class Actions:
    """`ActionStore` on the `actions` table."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def record_action(self, request_key: str, message_id: str, action: str, user_id: str, detail: str,
                      budget: int | None = None) -> int | None:
        """Keep one action; its id, or None when `request_key` was kept before (nothing is written)."""
        row = self._database.execute(
            "INSERT INTO actions (request_key, message_id, action, user_id, detail, budget, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING action_id",
            (request_key, normalize_message_id(message_id), action, user_id, detail, budget,
             self._database.stamp())).fetchone()
        return None if row is None else int(row[0])

    def has_request(self, request_key: str) -> bool:
        """Whether an action was kept for this request already (a replay)."""
        return self._database.execute("SELECT 1 FROM actions WHERE request_key = ?",
                                      (request_key,)).fetchone() is not None

    def actions_of(self, message_id: str) -> list[ActionRow]:
        """A report's actions, oldest first."""
        rows = self._database.execute(f"SELECT {_COLUMNS} FROM actions WHERE message_id = ? ORDER BY action_id",
                                      (normalize_message_id(message_id),)).fetchall()
        return [ActionRow(*row) for row in rows]

    def waiting_actions(self, *names: str) -> list[ActionRow]:
        """Actions named `names` that have no result row yet (request key `result:<action_id>`),
        oldest first: what the daemon was asked to do and has not done."""
        if not names:
            return []
        marks = ", ".join("?" for _ in names)
        rows = self._database.execute(
            f"SELECT {_COLUMNS} FROM actions AS asked WHERE action IN ({marks}) AND NOT EXISTS "
            "(SELECT 1 FROM actions AS result WHERE result.request_key = 'result:' || CAST(asked.action_id AS TEXT))"
            " ORDER BY action_id", names).fetchall()
        return [ActionRow(*row) for row in rows]
