"""Store stage: the `Store` protocol every backend implements, its value types and errors.

Message-IDs are kept as record.md writes them: without angle brackets. Every method accepts an
id with or without `<>` (see `normalize_message_id`). A message that has no Message-ID (some
archive pages, pasted text) is stored under the id `synthetic_message_id(raw)` gives:
`sha256-<hex of the raw bytes>@triagebot.invalid` (`.invalid` is reserved by RFC 2606, so it
can never collide with a real id, and the same bytes always get the same id).
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from triagebot.errors import TriageError

SYNTHETIC_ID_DOMAIN = "triagebot.invalid"


class StoreError(TriageError):
    """The store cannot do what was asked; the message names the database file."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer triagebot than this one (its schema is unknown)."""


class StoreBusyError(StoreError):
    """Another writer held the database longer than the busy timeout."""


def normalize_message_id(message_id: str) -> str:
    """`<id@host>` or ` id@host ` -> `id@host`; raises ValueError on an empty id."""
    value = message_id.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1].strip()
    if not value:
        raise ValueError(f"empty Message-ID {message_id!r}")
    return value


def synthetic_message_id(raw: bytes) -> str:
    """The id under which a message without a Message-ID is stored: hash of its raw bytes."""
    return f"sha256-{hashlib.sha256(raw).hexdigest()}@{SYNTHETIC_ID_DOMAIN}"


def is_synthetic_message_id(message_id: str) -> bool:
    return normalize_message_id(message_id).endswith("@" + SYNTHETIC_ID_DOMAIN)


@dataclass(frozen=True)
class IncomingMessage:
    """One message handed to `Store.ingest_batch`: raw bytes plus what the caller knows of it.

    `source_name` is the record's `source.kind` (mbox / eml / lore / openwall / text) so that a
    reparse can rebuild the `Source`; `source_url` its URL where there is one. `received_at` is
    when triagebot got the message (ISO 8601 with offset, or an aware datetime; naive means UTC).
    `record` (a schema-1 JSON object) and `parser_version` are stored with the message when
    given; `in_reply_to` and `references` link it into its thread.
    """

    message_id: str
    raw: bytes
    source_name: str
    received_at: str | datetime
    list_name: str | None = None
    source_url: str | None = None
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    record: dict[str, Any] | None = None
    parser_version: str | None = None


@dataclass(frozen=True)
class StoredMessage:
    """One kept message as `get_message` and `iter_raw` give it back (`received_at` in UTC)."""

    message_id: str
    raw: bytes
    source_name: str
    source_url: str | None
    list_name: str | None
    received_at: str


@runtime_checkable
class Store(Protocol):
    """Durable home of raw messages, their records, threads and source positions.

    Writes are idempotent by Message-ID. Each method is its own transaction unless called
    inside `transaction()`, in which case it joins it (and a failure inside rolls back only to
    where that method began, through a savepoint).
    """

    path: str

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[Store]:
        """One write transaction: everything inside commits together or not at all."""
        ...

    # -- messages ---------------------------------------------------------------------------
    def put_message(self, message_id: str, raw_bytes: bytes, source_name: str,
                    list_name: str | None, received_at: str | datetime,
                    source_url: str | None = None) -> bool:
        """Keep one raw message; True if it was new. A known id changes nothing (first wins)."""
        ...

    def ingest_batch(self, messages: Iterable[IncomingMessage],
                     cursor: tuple[str, str] | None = None) -> list[str]:
        """Messages (+ their records and thread links) and the cursor in one transaction.

        Returns the ids that were new, in input order. Records of already-known messages are
        left alone (re-ingesting changes nothing; `put_record` is the reparse path). A new id that
        was quarantined leaves the quarantine: it is a normal message now."""
        ...

    def has_message(self, message_id: str) -> bool: ...

    def existing_ids(self, message_ids: Iterable[str]) -> set[str]:
        """Which of these ids are stored already (normalized, without `<>`)."""
        ...

    def get_raw(self, message_id: str) -> bytes | None: ...

    def get_message(self, message_id: str) -> StoredMessage | None: ...

    def iter_raw(self) -> Iterator[StoredMessage]:
        """Every kept message in insertion order, read in pages (safe to write while iterating)."""
        ...

    def count_messages(self) -> int: ...

    # -- records ----------------------------------------------------------------------------
    def put_record(self, message_id: str, report_json: dict[str, Any],
                   parser_version: str) -> bool:
        """Insert or replace the record of a stored message (the reparse path).

        True if the stored record changed (new, or different JSON or parser_version)."""
        ...

    def get_record(self, message_id: str) -> dict[str, Any] | None: ...

    def get_record_version(self, message_id: str) -> str | None:
        """The parser_version that wrote the stored record, None without a record."""
        ...

    def list_records(self, kind: str | Sequence[str] | None = None,
                     list_name: str | None = None, since: str | datetime | None = None,
                     testcase: str | None = None,
                     limit: int | None = None) -> list[dict[str, Any]]:
        """Records matching every given filter, newest first (by message date, else receipt)."""
        ...

    # -- threads ----------------------------------------------------------------------------
    def link_thread(self, message_id: str, in_reply_to: str | None,
                    references: Sequence[str] = ()) -> None:
        """Attach a message to its thread; parents not (yet) stored are kept as placeholders."""
        ...

    def thread_of(self, message_id: str) -> list[str]:
        """Ids of the stored messages in this message's thread, oldest first; [] if unknown."""
        ...

    def thread_root(self, message_id: str) -> str | None:
        """The id the thread hangs from (possibly a message never seen); None if unknown."""
        ...

    # -- source positions -------------------------------------------------------------------
    def add_alias(self, alias: str, message_id: str) -> None:
        """Another name of a stored message (an archive page's date + subject + sender key)."""

    def resolve_alias(self, alias: str) -> str | None: ...

    def repoint_alias(self, alias: str, message_id: str) -> None: ...

    def delete_message(self, message_id: str) -> bool:
        """Remove a message, its record and aliases; True if it was there."""

    def get_cursor(self, source_key: str) -> str | None: ...

    def set_cursor(self, source_key: str, value: str) -> None: ...

    # -- quarantine (messages the parser could not read; see quarantine.py) -------------------
    def quarantine_message(self, raw: bytes, *, source_name: str, error: str, parser_version: str,
                           received_at: str | datetime | None = None, list_name: str | None = None,
                           source_url: str | None = None, key: str | None = None) -> str | None:
        """Keep unreadable bytes raw with their error; the key when new, None when known."""
        ...

    def quarantined(self, limit: int | None = None) -> list[Any]:
        """Quarantined messages (metadata only), the last to fail first."""
        ...

    def count_quarantined(self) -> int: ...

    def iter_quarantined(self) -> Iterator[Any]:
        """Every quarantined message with its raw bytes, in pages."""
        ...

    def still_quarantined(self, key: str, error: str, parser_version: str) -> None:
        """A retry failed again: keep it with this error and parser version."""
        ...

    def release_quarantined(self, key: str) -> bool:
        """Drop a quarantined message (it is stored as a normal message now)."""
        ...

    # -- fetched materials ------------------------------------------------------------------
    def get_material(self, url: str, name: str) -> bytes | None:
        """A cached file of a materials directory (`url` ends in "/"), None when not kept."""
        ...

    def put_material(self, url: str, name: str, body: bytes) -> None:
        """Cache a fetched file of a materials directory under (url, name)."""
        ...
