"""Store stage: one PostgreSQL connection (psycopg 3) for every part of `PostgresStore`.

It behaves as `SqliteDatabase` does, by these means:
- autocommit: a statement outside `transaction()` is its own transaction, as on SQLite with
  isolation_level=None; `transaction()` issues BEGIN … COMMIT and savepoints itself
  (database.py), so a nested failure rolls back only to where that method began;
- the write lock: a write transaction begins by taking a transaction-level advisory lock
  (`pg_advisory_xact_lock`), so writers are serialised as SQLite's BEGIN IMMEDIATE serialises
  them, and a check-then-insert (ingest_batch's new ids) cannot race another writer. Readers
  take no lock: they see the last commit (MVCC), as SQLite's WAL readers do;
- the busy timeout is the session's `lock_timeout`: a writer waits that long for the lock,
  then `StoreBusyError` naming the database;
- parameters: the parts write `?`; they become psycopg's `%s` here (a literal `%` doubled);
- errors: a lost or refused connection is a `StoreUnavailable` (a `StoreError`) naming the URL
  (never its password); `reconnect` opens a new connection in place of a lost one (the daemon
  and the workers wait for the server with it, daemon/outage.py).
Opening runs postgres_migrations.py's migrations (the shared runner of migrations.py, under
the same advisory lock); a database written by a newer schema is refused before anything in it
is changed.

The connection is the caller's to share: `PostgresDatabase(url, connection=…)` takes one opened
elsewhere (autocommit, e.g. from a pool), and inside `transaction()` anything else executed on
`database.connection` (a job engine's insert of a job row) is part of the same transaction.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus

from triagebot.store.database import SqlDatabase, display_url, utc_now
from triagebot.store.migrations import refuse_newer, run_migrations
from triagebot.store.postgres_migrations import POSTGRES_MIGRATIONS
from triagebot.store.protocol import StoreBusyError, StoreError, StoreUnavailable

DEFAULT_BUSY_TIMEOUT_MS = 5000
CONNECT_TIMEOUT_S = 10
# The advisory lock every write transaction (and every migration) of a triagebot store takes:
# "triage" in ASCII, then 1.
WRITE_LOCK_KEY = 0x7472696167650001
SCHEMA_TABLE = "triagebot_schema"


@lru_cache(maxsize=1024)
def pg_sql(sql: str) -> str:
    """A part's statement in psycopg's parameter style: `?` -> `%s`, `%` -> `%%`."""
    return sql.replace("%", "%%").replace("?", "%s")


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def schema_present(url: str) -> bool:
    """Whether the database at `url` holds a triagebot schema yet (nothing is created)."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                             application_name="triagebot") as connection:
            found = connection.execute("SELECT to_regclass(%s)", (SCHEMA_TABLE,)).fetchone()
    except psycopg.Error as error:
        raise StoreError(f"{display_url(url)}: cannot connect: {_one_line(error)}") from None
    return found is not None and found[0] is not None


class _PostgresSteps:
    """migrations.MigrationSteps on one autocommit psycopg connection."""

    errors: tuple[type[BaseException], ...] = (psycopg.Error,)

    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database

    def version(self) -> int:
        connection = self.database.connection
        # pg_tables, not to_regclass: a name looked up before this transaction waited for the lock
        # can stay cached as missing (the catalog cache is refreshed as a transaction begins),
        # while a query of the catalog's rows sees what committed meanwhile.
        found = connection.execute("SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
                                   " AND tablename = %s", (SCHEMA_TABLE,)).fetchone()
        if found is None:
            return 0
        row = connection.execute(f"SELECT max(version) FROM {SCHEMA_TABLE}").fetchone()
        return int(row[0] or 0) if row else 0

    def begin(self) -> None:
        self.database._begin()

    def execute(self, statement: str) -> None:
        self.database.connection.execute(statement)

    def set_version(self, version: int) -> None:
        connection = self.database.connection
        connection.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version BIGINT NOT NULL)")
        connection.execute(f"DELETE FROM {SCHEMA_TABLE}")
        connection.execute(f"INSERT INTO {SCHEMA_TABLE} (version) VALUES (%s)", (int(version),))

    def commit(self) -> None:
        self.database.connection.execute("COMMIT")

    def rollback(self) -> None:
        if self.database._in_transaction():
            self.database.connection.execute("ROLLBACK")


class PostgresDatabase(SqlDatabase):
    """One PostgreSQL connection, its clock and nested write transactions (one per thread)."""

    like_ascii_nocase = "ILIKE"
    begin_snapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    def __init__(self, url: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                 clock: Callable[[], datetime] = utc_now,
                 connection: psycopg.Connection[Any] | None = None) -> None:
        super().__init__(display_url(url), clock)
        self.url = url
        self.busy_timeout_ms = busy_timeout_ms
        self._given = connection is not None  # a connection passed in is its owner's to reopen
        self.connection = connection if connection is not None else self._connect()
        try:
            self._prepare()
        except BaseException:
            if connection is None:
                self.connection.close()
            raise

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                                   application_name="triagebot")
        except psycopg.Error as error:
            raise StoreUnavailable(f"{self.path}: cannot connect: {_one_line(error)}") from None

    def connection_lost(self) -> bool:
        return bool(self.connection.closed or self.connection.broken)

    def reconnect(self) -> None:
        """A new connection in place of a lost one; StoreUnavailable while the server cannot be
        reached. The schema was checked when the store opened: only the session's settings are
        made again."""
        if self._depth:
            raise StoreError(f"{self.path}: cannot reconnect inside a transaction")
        if self._given:
            raise StoreUnavailable(f"{self.path}: the connection passed in was lost; its owner reopens it")
        try:
            self.connection.close()
        except psycopg.Error:
            pass  # already gone
        self.connection = self._connect()
        try:
            self.connection.execute(f"SET lock_timeout = {int(self.busy_timeout_ms)}")
        except psycopg.Error as error:
            self.connection.close()
            raise StoreUnavailable(f"{self.path}: cannot connect: {_one_line(error)}") from None

    def _failed(self, error: BaseException) -> StoreError:
        """A statement's failure: StoreUnavailable when it lost the connection."""
        if self.connection_lost():
            return StoreUnavailable(f"{self.path}: the connection to the database was lost: {_one_line(error)}")
        return StoreError(f"{self.path}: {_one_line(error)}")

    def _prepare(self) -> None:
        if not self.connection.autocommit:
            raise StoreError(f"{self.path}: the connection must be in autocommit mode "
                             f"(the store issues BEGIN and COMMIT itself)")
        try:
            # SET takes no parameters; the value is an int from this module.
            self.connection.execute(f"SET lock_timeout = {int(self.busy_timeout_ms)}")
            steps = _PostgresSteps(self)
            refuse_newer(steps.version(), self.path)
        except psycopg.Error as error:
            raise StoreError(f"{self.path}: not a usable database: {_one_line(error)}") from None
        run_migrations(steps, self.path, POSTGRES_MIGRATIONS)

    def close(self) -> None:
        self.connection.close()

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        try:
            if parameters:
                return self.connection.execute(pg_sql(sql), tuple(parameters))
            return self.connection.execute(sql)  # no parameters: a `%` is a `%`
        except pg_errors.LockNotAvailable as error:
            raise self._busy(error) from None
        except (psycopg.OperationalError, psycopg.InterfaceError) as error:
            raise self._failed(error) from error

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = [tuple(row) for row in rows]
        if not rows:
            return
        try:
            with self.connection.cursor() as cursor:
                cursor.executemany(pg_sql(sql), rows)
        except pg_errors.LockNotAvailable as error:
            raise self._busy(error) from None
        except (psycopg.OperationalError, psycopg.InterfaceError) as error:
            raise self._failed(error) from error

    def _busy(self, error: BaseException) -> StoreBusyError:
        return StoreBusyError(f"{self.path}: another process kept the database locked for more than "
                              f"{self.busy_timeout_ms} ms ({_one_line(error)})")

    def _in_transaction(self) -> bool:
        return self.connection.info.transaction_status in (TransactionStatus.INTRANS,
                                                           TransactionStatus.INERROR)

    def _begin(self) -> None:
        """BEGIN, then the store's write lock, waited for up to the busy timeout."""
        try:
            self.connection.execute("BEGIN")
            self.connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
        except pg_errors.LockNotAvailable as error:
            self.connection.execute("ROLLBACK")
            raise self._busy(error) from None
        except psycopg.Error as error:
            if self._in_transaction():
                self.connection.execute("ROLLBACK")
            if self.connection_lost():
                raise StoreUnavailable(f"{self.path}: cannot start a write, the connection to the database was "
                                       f"lost: {_one_line(error)}") from None
            raise StoreError(f"{self.path}: cannot start a write: {_one_line(error)}") from None

    def continue_identity(self, table: str, column: str) -> None:
        self.execute(f"SELECT setval(pg_get_serial_sequence(?, ?), coalesce(max({column}), 0) + 1, false)"
                     f" FROM {table}", (table, column))

    def stream(self, sql: str, size: int) -> Iterator[Sequence[Any]]:
        """The rows of one query through a server-side cursor, `size` at a time (call inside
        `snapshot()` or `transaction()`: such a cursor lives in a transaction)."""
        with self.connection.cursor(name="triagebot_stream") as cursor:
            cursor.itersize = size
            cursor.execute(sql)
            yield from cursor
