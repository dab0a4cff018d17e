"""Store stage: the quarantine — raw messages the parser could not read, kept with the reason.

A message whose parse failed is never dropped and never stops a batch: it is kept byte for byte
in the `quarantine` table (migration 5) with its error, source, list, URL, when it came and the
parser version that failed on it, in the same transaction as the batch and cursor it came with.
Its key is its Message-ID when its header block names one, else the id a message without one
is stored under (`sha256-<hex of the raw bytes>@triagebot.invalid`), so the same message is kept
once however often a source serves it. `triage reparse` tries quarantined messages again: one
that parses now moves into `messages` as a normal message and leaves the quarantine; one that
still fails stays, with the new error.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from triagebot.store.protocol import synthetic_message_id

# Bytes of a message searched for its header block: a Message-ID further in is not looked for.
HEAD_BYTES = 64 * 1024
# Longest error text kept per message (a parser's message can quote the input at length).
MAX_ERROR_CHARS = 2000
# Rows per page when iterating quarantined messages with their raw bytes (bounded memory).
_PAGE_ROWS = 64

# `Message-ID: <id>` at the start of a header line, the value possibly folded onto the next
# line. The id is printable ASCII without `<`, `>` or spaces, at most 998 bytes (the RFC 5322
# line limit): no nested repetition, so the scan is linear in the head's size.
_MESSAGE_ID = re.compile(rb"(?im)^message-id:[ \t]*(?:\r?\n[ \t]+)?<([!-;=?-~]{1,998})>")
_HEAD_END = re.compile(rb"\r?\n\r?\n")


def quarantine_key(raw: bytes) -> str:
    """The key a message is quarantined under: its Message-ID when its headers can be read
    (without `<>`), else the synthetic id of its raw bytes. Never raises on any bytes."""
    window = raw[:HEAD_BYTES]
    end = _HEAD_END.search(window)
    head = window[:end.start() + 1] if end else window
    found = _MESSAGE_ID.search(head)
    if found:
        return found.group(1).decode("ascii")
    return synthetic_message_id(bytes(raw))


def one_line(error: str) -> str:
    """An error as one bounded line (what `triage list --failed` and the logs show)."""
    text = " ".join(str(error).split()) or "unknown error"
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"


@dataclass(frozen=True)
class QuarantineRow:
    """One quarantined message; `raw` is None where only the metadata was asked for."""

    key: str
    source_name: str
    source_url: str | None
    list_name: str | None
    received_at: str
    failed_at: str
    parser_version: str
    attempts: int
    error: str
    size: int
    raw: bytes | None = None


_COLUMNS = ("quarantine_key, source_name, source_url, list_name, received_at, failed_at, parser_version,"
            " attempts, error, size")


def _row(row: tuple, with_raw: bool = False) -> QuarantineRow:
    values = row[:10]
    return QuarantineRow(*values, raw=bytes(row[10]) if with_raw else None)


class QuarantineTables:
    """Methods SqliteStore mixes in; they use its connection, transactions and clock."""

    _connection: Any

    def _quarantine_stamp(self, value: str | datetime | None = None) -> str:
        from triagebot.store.sqlite import utc_text

        return utc_text(self._clock() if value is None else value)  # type: ignore[attr-defined]

    def quarantine_message(self, raw: bytes, *, source_name: str, error: str, parser_version: str,
                           received_at: str | datetime | None = None, list_name: str | None = None,
                           source_url: str | None = None, key: str | None = None) -> str | None:
        """Keep a message the parser could not read; its key when newly kept, else None.

        None: a message of that key is stored already (as a normal message, or quarantined
        before: the first copy is kept and nothing changes, like `put_message`)."""
        raw = bytes(raw)
        key = key or quarantine_key(raw)
        now = self._quarantine_stamp()
        with self.transaction():  # type: ignore[attr-defined]
            if self._connection.execute("SELECT 1 FROM messages WHERE message_id = ?", (key,)).fetchone():
                return None
            cursor = self._connection.execute(
                f"INSERT OR IGNORE INTO quarantine ({_COLUMNS}, raw) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
                (key, source_name, source_url, list_name, self._quarantine_stamp(received_at or now), now,
                 parser_version, one_line(error), len(raw), raw))
        return key if cursor.rowcount == 1 else None

    def quarantined(self, limit: int | None = None) -> list[QuarantineRow]:
        """Quarantined messages without their bytes, the last to fail first."""
        sql = f"SELECT {_COLUMNS} FROM quarantine ORDER BY failed_at DESC, quarantine_key"
        parameters: tuple = ()
        if limit is not None:
            sql += " LIMIT ?"
            parameters = (int(limit),)
        return [_row(row) for row in self._connection.execute(sql, parameters)]

    def count_quarantined(self) -> int:
        return int(self._connection.execute("SELECT count(*) FROM quarantine").fetchone()[0])

    def get_quarantined(self, key: str) -> QuarantineRow | None:
        row = self._connection.execute(f"SELECT {_COLUMNS}, raw FROM quarantine WHERE quarantine_key = ?",
                                       (key,)).fetchone()
        return None if row is None else _row(row, with_raw=True)

    def iter_quarantined(self) -> Iterator[QuarantineRow]:
        """Every quarantined message with its bytes, in pages (safe to write while iterating)."""
        last_rowid = 0
        while True:
            page = self._connection.execute(
                f"SELECT rowid, {_COLUMNS}, raw FROM quarantine WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (last_rowid, _PAGE_ROWS)).fetchall()
            if not page:
                return
            for row in page:
                yield _row(row[1:], with_raw=True)
            last_rowid = page[-1][0]

    def still_quarantined(self, key: str, error: str, parser_version: str) -> None:
        """A retry failed again: keep the message with this error and version."""
        with self.transaction():  # type: ignore[attr-defined]
            self._connection.execute(
                "UPDATE quarantine SET error = ?, parser_version = ?, failed_at = ?, attempts = attempts + 1"
                " WHERE quarantine_key = ?", (one_line(error), parser_version, self._quarantine_stamp(), key))

    def release_quarantined(self, key: str) -> bool:
        """Drop a message from the quarantine (it is stored as a normal message now)."""
        with self.transaction():  # type: ignore[attr-defined]
            cursor = self._connection.execute("DELETE FROM quarantine WHERE quarantine_key = ?", (key,))
        return cursor.rowcount > 0
