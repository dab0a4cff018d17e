"""Store stage: the part for the quarantine — unreadable messages kept raw with their error.

The rules (the key a message is kept under, the one-line error) are quarantine.py's.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from triagebot.store.database import Database, chunks, marks
from triagebot.store.protocol import QuarantineRow
from triagebot.store.quarantine import one_line, quarantine_key

# Rows per page when iterating quarantined messages with their raw bytes (bounded memory).
_PAGE_ROWS = 64
_COLUMNS = ("quarantine_key, source_name, source_url, list_name, received_at, failed_at,"
            " parser_version, attempts, error, size")


def _row(row: Sequence[Any], with_raw: bool = False) -> QuarantineRow:
    return QuarantineRow(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8],
                         row[9], raw=bytes(row[10]) if with_raw else None)


class Quarantine:
    """`QuarantineStore` on the `quarantine` table."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def quarantine_message(self, raw: bytes, *, source_name: str, error: str, parser_version: str,
                           received_at: str | datetime | None = None, list_name: str | None = None,
                           source_url: str | None = None, key: str | None = None) -> str | None:
        """Keep a message the parser could not read; its key when newly kept, else None.

        None: a message of that key is stored already (as a normal message, or quarantined
        before: the first copy is kept and nothing changes, like `put_message`)."""
        raw = bytes(raw)
        key = key or quarantine_key(raw)
        now = self._database.stamp()
        received = self._database.stamp(received_at or now)
        database = self._database
        with self._database.transaction():
            if database.execute("SELECT 1 FROM messages WHERE message_id = ?", (key,)).fetchone():
                return None
            cursor = database.execute(
                f"INSERT INTO quarantine ({_COLUMNS}, raw)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?) ON CONFLICT DO NOTHING",
                (key, source_name, source_url, list_name, received, now, parser_version,
                 one_line(error), len(raw), raw))
        return key if cursor.rowcount == 1 else None

    def quarantined(self, limit: int | None = None) -> list[QuarantineRow]:
        """Quarantined messages without their bytes, the last to fail first."""
        sql = f"SELECT {_COLUMNS} FROM quarantine ORDER BY failed_at DESC, quarantine_key"
        parameters: tuple[int, ...] = ()
        if limit is not None:
            sql += " LIMIT ?"
            parameters = (int(limit),)
        return [_row(row) for row in self._database.execute(sql, parameters)]

    def count_quarantined(self) -> int:
        row = self._database.execute("SELECT count(*) FROM quarantine").fetchone()
        return int(row[0])

    def get_quarantined(self, key: str) -> QuarantineRow | None:
        row = self._database.execute(
            f"SELECT {_COLUMNS}, raw FROM quarantine WHERE quarantine_key = ?", (key,)).fetchone()
        return None if row is None else _row(row, with_raw=True)

    def iter_quarantined(self) -> Iterator[QuarantineRow]:
        """Every quarantined message with its bytes, in pages (safe to write while iterating)."""
        last_rowid = 0
        while True:
            page = self._database.execute(
                f"SELECT rowid, {_COLUMNS}, raw FROM quarantine WHERE rowid > ?"
                " ORDER BY rowid LIMIT ?",
                (last_rowid, _PAGE_ROWS)).fetchall()
            if not page:
                return
            for row in page:
                yield _row(row[1:], with_raw=True)
            last_rowid = page[-1][0]

    def still_quarantined(self, key: str, error: str, parser_version: str) -> None:
        """A retry failed again: keep the message with this error and version."""
        with self._database.transaction():
            self._database.execute(
                "UPDATE quarantine SET error = ?, parser_version = ?, failed_at = ?,"
                " attempts = attempts + 1 WHERE quarantine_key = ?",
                (one_line(error), parser_version, self._database.stamp(), key))

    def release_quarantined(self, key: str) -> bool:
        """Drop a message from the quarantine (it is stored as a normal message now)."""
        with self._database.transaction():
            cursor = self._database.execute(
                "DELETE FROM quarantine WHERE quarantine_key = ?", (key,))
        return cursor.rowcount > 0

    def release_many(self, keys: Sequence[str]) -> None:
        """Drop these keys from the quarantine (stored as normal messages now).

        Call inside a transaction."""
        for chunk in chunks(keys):
            self._database.execute(
                f"DELETE FROM quarantine WHERE quarantine_key IN ({marks(len(chunk))})",
                tuple(chunk))
