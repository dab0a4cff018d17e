"""Store stage: the parts for what sources leave behind — cursors and fetched materials."""
from __future__ import annotations

from triagebot.store.database import Database


class Cursors:
    """`CursorStore` on the `cursors` table."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def get_cursor(self, source_key: str) -> str | None:
        row = self._database.execute("SELECT value FROM cursors WHERE source_key = ?",
                                                (source_key,)).fetchone()
        return None if row is None else str(row[0])

    def set_cursor(self, source_key: str, value: str) -> None:
        with self._database.transaction():
            self._database.execute(
                "INSERT INTO cursors (source_key, value, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (source_key) DO UPDATE SET value = excluded.value,"
                " updated_at = excluded.updated_at",
                (source_key, value, self._database.stamp()))


class Materials:
    """`MaterialStore` on the `materials` table."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def get_material(self, url: str, name: str) -> bytes | None:
        """A file of a materials directory as it was fetched, or None when not kept."""
        row = self._database.execute(
            "SELECT body FROM materials WHERE url = ? AND name = ?", (url, name)).fetchone()
        return None if row is None else bytes(row[0])

    def put_material(self, url: str, name: str, body: bytes) -> None:
        """Keep a fetched file of a materials directory (a second fetch replaces the first)."""
        with self._database.transaction():
            self._database.execute(
                "INSERT INTO materials (url, name, fetched_at, body) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (url, name) DO UPDATE SET fetched_at = excluded.fetched_at,"
                " body = excluded.body",
                (url, name, self._database.stamp(), bytes(body)))
