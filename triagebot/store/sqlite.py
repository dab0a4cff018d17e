"""Store stage: the default `Store` backend on a local SQLite file (stdlib sqlite3).

`SqliteStore` is composed, not inherited: one `SqliteDatabase` (the connection, its settings and
transactions: sqlite_database.py) shared by one small part per `Store` part —
`SqliteMessages`, `SqliteAliases`, `SqliteRecords` (sqlite_messages.py), `SqliteThreads`
(sqlite_threads.py), `SqliteCursors`, `SqliteMaterials` (sqlite_sources.py), `SqliteQuarantine`
(sqlite_quarantine.py), `SqliteTriage`, `SqliteOutbox` (sqlite_triage.py) and `SqliteRuns`
(sqlite_runs.py). Each part's methods are exposed on the store under their own names; only
`ingest_batch`, which spans parts in one transaction, is written here. A second backend is the
same set of parts over its own connection.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from triagebot.store.protocol import IncomingMessage, normalize_message_id, utc_text
from triagebot.store.sqlite_database import (
    DEFAULT_BUSY_TIMEOUT_MS,
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    SqliteDatabase,
    create_private_file,
    ensure_private_dir,
    open_private,
    utc_now,
)
from triagebot.store.sqlite_messages import (
    SqliteAliases,
    SqliteMessages,
    SqliteRecords,
    message_row,
    record_row,
)
from triagebot.store.sqlite_quarantine import SqliteQuarantine
from triagebot.store.sqlite_runs import SqliteRuns
from triagebot.store.sqlite_sources import SqliteCursors, SqliteMaterials
from triagebot.store.sqlite_threads import SqliteThreads
from triagebot.store.sqlite_triage import SqliteOutbox, SqliteTriage

# Names other modules take from here (the file helpers live beside the connection).
__all__ = ["DB_ENV_VAR", "DB_FILE_NAME", "DEFAULT_BUSY_TIMEOUT_MS", "PRIVATE_DIR_MODE",
           "PRIVATE_FILE_MODE", "SqliteStore", "create_private_file", "ensure_private_dir",
           "open_private", "resolve_db_path", "utc_text"]

DB_ENV_VAR = "TRIAGE_DB"
DB_FILE_NAME = "triage.db"


def resolve_db_path(cli_value: str | None, environ: Mapping[str, str] | None = None) -> Path:
    """Where the database lives, first answer wins:

    1. `--db PATH` on the command line (`cli_value`);
    2. the `TRIAGE_DB` environment variable;
    3. `$XDG_DATA_HOME/triagebot/triage.db` when XDG_DATA_HOME is set to an absolute path
       (the XDG spec says a relative value is to be ignored);
    4. `~/.local/share/triagebot/triage.db` (the XDG default data directory).

    Empty values count as unset. `~` is expanded. The directory is created on open, not here.
    """
    env = os.environ if environ is None else environ
    if cli_value:
        return Path(cli_value).expanduser()
    if env.get(DB_ENV_VAR):
        return Path(env[DB_ENV_VAR]).expanduser()
    xdg = env.get("XDG_DATA_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "triagebot" / DB_FILE_NAME
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".local" / "share" / "triagebot" / DB_FILE_NAME


Part = TypeVar("Part")
Arguments = ParamSpec("Arguments")
Result = TypeVar("Result")


class _Exposed(Generic[Part, Arguments, Result]):
    """One part's method, reached on the store under the same name: `store.enqueue(...)` is
    `store._outbox.enqueue(...)`. Typed from the part's method, so mypy checks callers (and
    that `SqliteStore` is a whole `Store`) against the part's own signature."""

    def __init__(self, part: str, method: Callable[Concatenate[Part, Arguments], Result]) -> None:
        self._part = part
        self._name = method.__name__
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._name:
            raise TypeError(f"{owner.__name__}.{name} exposes {self._part}.{self._name}:"
                            " the names differ")

    @overload
    def __get__(self, store: None, owner: type) -> _Exposed[Part, Arguments, Result]: ...

    @overload
    def __get__(self, store: object, owner: type | None = None) -> Callable[Arguments, Result]: ...

    def __get__(self, store: object, owner: type | None = None) -> Any:
        if store is None:
            return self
        return getattr(getattr(store, self._part), self._name)


class SqliteStore:
    """`Store` on one SQLite file. One instance per thread (sqlite3 connections are not shared).

    Use as a context manager, or call `close()`.
    """

    def __init__(self, path: str | os.PathLike[str], *,
                 busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self._database = SqliteDatabase(path, busy_timeout_ms=busy_timeout_ms, clock=clock)
        self.path = self._database.path
        self.busy_timeout_ms = busy_timeout_ms
        self._messages = SqliteMessages(self._database)
        self._aliases = SqliteAliases(self._database)
        self._records = SqliteRecords(self._database)
        self._threads = SqliteThreads(self._database)
        self._cursors = SqliteCursors(self._database)
        self._materials = SqliteMaterials(self._database)
        self._quarantine = SqliteQuarantine(self._database)
        self._triage = SqliteTriage(self._database)
        self._outbox = SqliteOutbox(self._database)
        self._runs = SqliteRuns(self._database)

    @property
    def _connection(self) -> Any:
        """The shared sqlite3 connection (for tests that look at the file's settings)."""
        return self._database.connection

    def close(self) -> None:
        self._database.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[SqliteStore]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT); nested calls use savepoints.

        An exception inside rolls back everything the block wrote (cursor included) and
        propagates. Waiting for another writer is bounded by the busy timeout.
        """
        with self._database.transaction():
            yield self

    def now_text(self) -> str:
        return self._database.stamp()

    def ingest_batch(self, messages: Iterable[IncomingMessage],
                     cursor: tuple[str, str] | None = None) -> list[str]:
        items: dict[str, IncomingMessage] = {}
        for message in messages:
            items.setdefault(normalize_message_id(message.message_id), message)  # first wins
        rows = [message_row(message_id, item.raw, item.source_name, item.list_name,
                            item.received_at, item.source_url)
                for message_id, item in items.items()]
        now = self._database.stamp()
        with self._database.transaction():
            # Checked under the write lock, so nobody can insert between this and the insert.
            new_ids = self._messages.insert_new(rows)
            # A message quarantined before that now arrives parsed is a normal message now.
            self._quarantine.release_many(new_ids)
            self._records.insert_new([
                record_row(message_id, record, items[message_id].parser_version or "", now)
                for message_id in new_ids if (record := items[message_id].record) is not None])
            for message_id, item in items.items():
                self._threads.link(message_id, item.in_reply_to, item.references)
            if cursor is not None:
                self._cursors.set_cursor(*cursor)
        return new_ids

    # -- messages ---------------------------------------------------------------------------
    put_message = _Exposed("_messages", SqliteMessages.put_message)
    has_message = _Exposed("_messages", SqliteMessages.has_message)
    existing_ids = _Exposed("_messages", SqliteMessages.existing_ids)
    get_raw = _Exposed("_messages", SqliteMessages.get_raw)
    get_message = _Exposed("_messages", SqliteMessages.get_message)
    iter_raw = _Exposed("_messages", SqliteMessages.iter_raw)
    count_messages = _Exposed("_messages", SqliteMessages.count_messages)
    delete_message = _Exposed("_messages", SqliteMessages.delete_message)
    # -- aliases ----------------------------------------------------------------------------
    add_alias = _Exposed("_aliases", SqliteAliases.add_alias)
    resolve_alias = _Exposed("_aliases", SqliteAliases.resolve_alias)
    repoint_alias = _Exposed("_aliases", SqliteAliases.repoint_alias)
    # -- records ----------------------------------------------------------------------------
    put_record = _Exposed("_records", SqliteRecords.put_record)
    get_record = _Exposed("_records", SqliteRecords.get_record)
    get_record_version = _Exposed("_records", SqliteRecords.get_record_version)
    list_records = _Exposed("_records", SqliteRecords.list_records)
    record_keys_starting = _Exposed("_records", SqliteRecords.record_keys_starting)
    # -- threads ----------------------------------------------------------------------------
    link_thread = _Exposed("_threads", SqliteThreads.link_thread)
    thread_of = _Exposed("_threads", SqliteThreads.thread_of)
    thread_root = _Exposed("_threads", SqliteThreads.thread_root)
    # -- cursors and fetched materials ------------------------------------------------------
    get_cursor = _Exposed("_cursors", SqliteCursors.get_cursor)
    set_cursor = _Exposed("_cursors", SqliteCursors.set_cursor)
    get_material = _Exposed("_materials", SqliteMaterials.get_material)
    put_material = _Exposed("_materials", SqliteMaterials.put_material)
    # -- quarantine -------------------------------------------------------------------------
    quarantine_message = _Exposed("_quarantine", SqliteQuarantine.quarantine_message)
    quarantined = _Exposed("_quarantine", SqliteQuarantine.quarantined)
    count_quarantined = _Exposed("_quarantine", SqliteQuarantine.count_quarantined)
    get_quarantined = _Exposed("_quarantine", SqliteQuarantine.get_quarantined)
    iter_quarantined = _Exposed("_quarantine", SqliteQuarantine.iter_quarantined)
    still_quarantined = _Exposed("_quarantine", SqliteQuarantine.still_quarantined)
    release_quarantined = _Exposed("_quarantine", SqliteQuarantine.release_quarantined)
    # -- triage -----------------------------------------------------------------------------
    start_triage = _Exposed("_triage", SqliteTriage.start_triage)
    set_triage = _Exposed("_triage", SqliteTriage.set_triage)
    get_triage = _Exposed("_triage", SqliteTriage.get_triage)
    triage_in = _Exposed("_triage", SqliteTriage.triage_in)
    triage_counts = _Exposed("_triage", SqliteTriage.triage_counts)
    reports_to_admit = _Exposed("_triage", SqliteTriage.reports_to_admit)
    received_between = _Exposed("_triage", SqliteTriage.received_between)
    # -- outbox -----------------------------------------------------------------------------
    enqueue = _Exposed("_outbox", SqliteOutbox.enqueue)
    outbox = _Exposed("_outbox", SqliteOutbox.outbox)
    outbox_counts = _Exposed("_outbox", SqliteOutbox.outbox_counts)
    posted = _Exposed("_outbox", SqliteOutbox.posted)
    mark_sending = _Exposed("_outbox", SqliteOutbox.mark_sending)
    mark_sent = _Exposed("_outbox", SqliteOutbox.mark_sent)
    mark_retry = _Exposed("_outbox", SqliteOutbox.mark_retry)
    mark_held = _Exposed("_outbox", SqliteOutbox.mark_held)
    release_held = _Exposed("_outbox", SqliteOutbox.release_held)
    due = _Exposed("_outbox", SqliteOutbox.due)
    # -- finished reruns --------------------------------------------------------------------
    save_run = _Exposed("_runs", SqliteRuns.save_run)
    latest_run = _Exposed("_runs", SqliteRuns.latest_run)
