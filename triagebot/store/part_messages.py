"""Store stage: the parts for raw messages, their aliases and their records.

Each part is a small class over the shared `Database` (database.py); `SqlStore` composes them.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from triagebot.records.report import Report, report_from_json, report_to_json
from triagebot.records.threads import normalize_message_id
from triagebot.store.database import Database, chunks, given, marks
from triagebot.store.protocol import ListedRecord, StoredMessage, StoreError, UnreadableRecord, utc_text

# Rows per page when iterating raw messages: bounded memory, no cursor held across writes.
_PAGE_ROWS = 256
_MESSAGE_COLUMNS = "message_id, raw, source_name, source_url, list_name, received_at"

MessageRow = tuple[str, str, str | None, str | None, str, int, bytes]
RecordRow = tuple[str, int, str, str | None, str | None, str | None, str, str]


def message_row(message_id: str, raw_bytes: bytes, source_name: str, list_name: str | None,
                received_at: str | datetime, source_url: str | None) -> MessageRow:
    """The `messages` row of one message (normalized id first); TypeError if raw is not bytes."""
    if not isinstance(raw_bytes, (bytes, bytearray, memoryview)):
        raise TypeError(f"raw message must be bytes, not {type(raw_bytes).__name__}")
    raw = bytes(raw_bytes)
    return (normalize_message_id(message_id), source_name, source_url, list_name,
            utc_text(received_at), len(raw), raw)


def _stored(row: Sequence[Any]) -> StoredMessage:
    return StoredMessage(message_id=row[0], raw=bytes(row[1]), source_name=row[2],
                         source_url=row[3], list_name=row[4], received_at=row[5])


class Messages:
    """`MessageStore` on the `messages` table."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def put_message(self, message_id: str, raw_bytes: bytes, source_name: str,
                    list_name: str | None, received_at: str | datetime,
                    source_url: str | None = None) -> bool:
        row = message_row(message_id, raw_bytes, source_name, list_name, received_at, source_url)
        with self._database.transaction():
            cursor = self._database.execute(
                "INSERT INTO messages (message_id, source_name, source_url, list_name,"
                " received_at, size, raw) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", row)
            return cursor.rowcount == 1

    def insert_new(self, rows: Sequence[MessageRow]) -> list[str]:
        """Insert the rows whose id is not stored yet; their ids, in order. Call inside a
        transaction, so nobody can insert between the check and the insert."""
        known = self.existing(row[0] for row in rows)
        new_rows = [row for row in rows if row[0] not in known]
        self._database.executemany(
            "INSERT INTO messages (message_id, source_name, source_url, list_name,"
            " received_at, size, raw) VALUES (?, ?, ?, ?, ?, ?, ?)", new_rows)
        return [row[0] for row in new_rows]

    def existing(self, message_ids: Iterable[str]) -> set[str]:
        """Which of these (normalized) ids are stored."""
        found: set[str] = set()
        for chunk in chunks(list(message_ids)):
            found.update(row[0] for row in self._database.execute(
                f"SELECT message_id FROM messages WHERE message_id IN ({marks(len(chunk))})",
                tuple(chunk)))
        return found

    def existing_ids(self, message_ids: Iterable[str]) -> set[str]:
        return self.existing(dict.fromkeys(normalize_message_id(item) for item in message_ids))

    def has_message(self, message_id: str) -> bool:
        return self._database.execute(
            "SELECT 1 FROM messages WHERE message_id = ?",
            (normalize_message_id(message_id),)).fetchone() is not None

    def get_raw(self, message_id: str) -> bytes | None:
        row = self._database.execute("SELECT raw FROM messages WHERE message_id = ?",
                                                (normalize_message_id(message_id),)).fetchone()
        return None if row is None else bytes(row[0])

    def get_message(self, message_id: str) -> StoredMessage | None:
        row = self._database.execute(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE message_id = ?",
            (normalize_message_id(message_id),)).fetchone()
        return None if row is None else _stored(row)

    def iter_raw(self) -> Iterator[StoredMessage]:
        last_rowid = 0
        while True:
            page = self._database.execute(
                f"SELECT rowid, {_MESSAGE_COLUMNS} FROM messages WHERE rowid > ?"
                " ORDER BY rowid LIMIT ?", (last_rowid, _PAGE_ROWS)).fetchall()
            if not page:
                return
            for row in page:
                yield _stored(row[1:])
            last_rowid = page[-1][0]

    def count_messages(self) -> int:
        return int(self._database.execute("SELECT count(*) FROM messages").fetchone()[0])

    def delete_message(self, message_id: str) -> bool:
        """Remove a message with its record and aliases (thread links stay: they name ids only)."""
        with self._database.transaction():
            cursor = self._database.execute("DELETE FROM messages WHERE message_id = ?",
                                                       (normalize_message_id(message_id),))
        return cursor.rowcount > 0


class Aliases:
    """`AliasStore` on the `aliases` table."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def add_alias(self, alias: str, message_id: str) -> None:
        with self._database.transaction():
            self._database.execute(
                "INSERT INTO aliases (alias, message_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (alias, normalize_message_id(message_id)))

    def resolve_alias(self, alias: str) -> str | None:
        row = self._database.execute("SELECT message_id FROM aliases WHERE alias = ?",
                                                (alias,)).fetchone()
        return row[0] if row else None

    def repoint_alias(self, alias: str, message_id: str) -> None:
        with self._database.transaction():
            self._database.execute(
                "INSERT INTO aliases (alias, message_id) VALUES (?, ?) "
                "ON CONFLICT (alias) DO UPDATE SET message_id = excluded.message_id",
                (alias, normalize_message_id(message_id)))


def _record_date_utc(report_json: Mapping[str, Any]) -> str | None:
    date = report_json.get("date")
    if not isinstance(date, str) or not date:
        return None
    try:
        return utc_text(date)
    except ValueError:  # a record whose date the parser could not normalize: sort by receipt
        return None


def record_row(message_id: str, report_json: Mapping[str, Any], parser_version: str,
               now: str) -> RecordRow:
    """The `records` row of one record; ValueError without an integer `schema`."""
    schema = report_json.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ValueError(f"record for {message_id} has no integer 'schema' field")
    kind = report_json.get("kind")
    testcase = report_json.get("testcase")
    text = json.dumps(report_json, ensure_ascii=False, separators=(",", ":"))
    return (message_id, schema, parser_version,
            kind if isinstance(kind, str) else None,
            testcase if isinstance(testcase, str) else None,
            _record_date_utc(report_json), now, text)


class Records:
    """`RecordStore` on the `records` table (joined to `messages` for list and date filters)."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def insert_new(self, rows: Sequence[RecordRow]) -> None:
        """Records of newly stored messages; a message that has one keeps it."""
        self._database.executemany(
            "INSERT INTO records (message_id, schema, parser_version, kind,"
            " testcase, date_utc, updated_at, record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT DO NOTHING", rows)

    def put_record(self, message_id: str, report: Report, parser_version: str) -> bool:
        message_id = normalize_message_id(message_id)
        row = record_row(message_id, report_to_json(report), parser_version, self._database.stamp())
        database = self._database
        with self._database.transaction():
            if database.execute("SELECT 1 FROM messages WHERE message_id = ?",
                                  (message_id,)).fetchone() is None:
                raise StoreError(f"{self._database.path}: no stored message {message_id}"
                                 f" to attach a record to")
            cursor = database.execute(
                "INSERT INTO records (message_id, schema, parser_version, kind, testcase,"
                " date_utc, updated_at, record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (message_id) DO UPDATE SET schema = excluded.schema,"
                " parser_version = excluded.parser_version, kind = excluded.kind,"
                " testcase = excluded.testcase, date_utc = excluded.date_utc,"
                " updated_at = excluded.updated_at, record_json = excluded.record_json"
                # An unchanged reparse leaves the row (and its updated_at) as it was.
                " WHERE records.record_json IS DISTINCT FROM excluded.record_json"
                " OR records.parser_version IS DISTINCT FROM excluded.parser_version", row)
            return cursor.rowcount == 1

    def get_record(self, message_id: str) -> Report | None:
        row = self._database.execute(
            "SELECT record_json FROM records WHERE message_id = ?",
            (normalize_message_id(message_id),)).fetchone()
        return None if row is None else self._report(row[0], message_id)

    def _report(self, record_json: str, key: str) -> Report:
        try:
            return report_from_json(json.loads(record_json))
        except (ValueError, KeyError, TypeError) as error:
            raise UnreadableRecord(f"{self._database.path}: the stored record of {key} cannot be read: "
                                   f"{type(error).__name__}: {error}") from error

    def get_record_version(self, message_id: str) -> str | None:
        row = self._database.execute(
            "SELECT parser_version FROM records WHERE message_id = ?",
            (normalize_message_id(message_id),)).fetchone()
        return None if row is None else str(row[0])

    def list_records(self, kind: str | Sequence[str] | None = None,
                     list_name: str | None = None, since: str | datetime | None = None,
                     testcase: str | None = None,
                     limit: int | None = None) -> list[ListedRecord]:
        """Records matching every given filter, newest first; undated records after the dated ones.

        `kind` is one kind or several; `since` keeps messages dated at or after that moment
        (the record's `date`, or the receipt time where the record has none; naive = UTC);
        `list_name` is the list the message was ingested from.
        """
        clauses: list[str] = []
        parameters: list[Any] = []
        if kind is not None:
            kinds = [kind] if isinstance(kind, str) else list(kind)
            clauses.append(f"r.kind IN ({marks(len(kinds))})" if kinds else "1 = 0")
            parameters.extend(kinds)
        filters, values = given([("m.list_name = ?", list_name), ("r.testcase = ?", testcase),
                                 ("COALESCE(r.date_utc, m.received_at) >= ?",
                                  None if since is None else utc_text(since))])
        clauses += filters
        parameters += values
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = (f"SELECT r.message_id, r.record_json FROM records r JOIN messages m USING (message_id) {where}"
               " ORDER BY r.date_utc IS NULL, COALESCE(r.date_utc, m.received_at) DESC, r.message_id")
        if limit is not None:
            sql += " LIMIT ?"
            parameters.append(int(limit))
        return [ListedRecord(key, self._report(record_json, key))
                for key, record_json in self._database.execute(sql, parameters)]

    def record_keys_starting(self, prefix: str, limit: int) -> list[str]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._database.execute(
            f"SELECT message_id FROM records WHERE message_id {self._database.like_ascii_nocase} ? ESCAPE '\\'"
            " ORDER BY message_id LIMIT ?",
            (escaped + "%", int(limit)))
        return [str(row[0]) for row in rows]
