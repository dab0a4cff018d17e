"""Store stage: what every backend's connection gives the store's parts (`Database`), and the
transactions they share.

The parts (`part_*.py`) are written once, in the SQL both SQLite and PostgreSQL speak: `?`
parameters (the PostgreSQL connection turns them into its own), `INSERT … ON CONFLICT DO
NOTHING`, `RETURNING`, `IS DISTINCT FROM`, and a column called `rowid` for insertion order
(SQLite's own; a PostgreSQL identity column of that name). A backend is one `SqlDatabase`
subclass: how it opens, begins a write and maps its errors; everything else is here.

Transactions: `transaction()` is one write transaction; inside one, a nested call is a
savepoint, so a method that fails inside a caller's transaction rolls back only what it wrote
(the caller's transaction goes on). A write transaction holds the store's write lock from its
start (SQLite: BEGIN IMMEDIATE; PostgreSQL: a transaction-level advisory lock), so writers are
serialised exactly alike and a check-then-insert inside one cannot race another writer.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

from triagebot.logs import redact
from triagebot.store.protocol import utc_text

# Bound on `?` parameters per statement; SQLite's own limit is 32766 since 3.32, older
# builds allowed 999 (PostgreSQL takes 65535).
MAX_PARAMETERS = 900


def display_url(url: str) -> str:
    """A URL as messages name it: its password written `***` (logs.redact, the one redaction:
    `postgresql://user:***@host/db`, `?password=***`)."""
    return redact(url)


def url_without_password(url: str) -> str:
    """A URL without its password at all, in the netloc or the query (what names the local
    folder of a PostgreSQL store: the same whether a password is given or not)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}@{host}"
    query = urlencode([(key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True)
                       if key != "password"], safe="/")
    # by hand: urlunsplit drops the `//` of an empty host (postgresql:///db?host=/socket/dir)
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


def utc_now() -> datetime:
    return datetime.now(UTC)


def chunks(values: Sequence[Any], size: int = MAX_PARAMETERS) -> Iterator[Sequence[Any]]:
    """`values` in slices small enough for one statement's parameters."""
    for start in range(0, len(values), size):
        yield values[start:start + size]


def marks(count: int) -> str:
    """`?,?,…` for an IN list of `count` parameters."""
    return ",".join("?" * count)


def given(pieces: Iterable[tuple[str, Any]]) -> tuple[list[str], list[Any]]:
    """The SQL pieces (`"host = ?"`) whose value is not None, and those values, in order: the
    optional filters of a query, the optional columns of an update."""
    kept = [(sql, value) for sql, value in pieces if value is not None]
    return [sql for sql, _ in kept], [value for _, value in kept]


class Rows(Protocol):
    """What `execute` gives back: a DB-API cursor (sqlite3's or psycopg's)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Database(Protocol):
    """One open connection to a store, as the parts use it."""

    path: str  # what errors name: the file, or the URL without its password
    clock: Callable[[], datetime]
    like_ascii_nocase: str  # the operator that matches a LIKE pattern without ASCII case

    @property
    def connection(self) -> Any: ...

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Rows: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def transaction(self) -> AbstractContextManager[None]: ...

    def snapshot(self) -> AbstractContextManager[None]: ...

    def stream(self, sql: str, size: int) -> Iterator[Sequence[Any]]: ...

    def continue_identity(self, table: str, column: str) -> None: ...

    def stamp(self, value: str | datetime | None = None) -> str: ...

    def close(self) -> None: ...

    def connection_lost(self) -> bool: ...

    def reconnect(self) -> None: ...


class SqlDatabase:
    """What the backends share: the clock, the timestamp form and nested write transactions.

    A subclass sets `connection` and `begin_snapshot`, and implements `execute`, `executemany`,
    `_begin` (start a write transaction holding the write lock, or raise StoreBusyError),
    `_in_transaction` and `stream`.
    """

    like_ascii_nocase = "LIKE"
    begin_snapshot = "BEGIN"  # the backend's start of a read transaction that sees one commit

    def __init__(self, path: str, clock: Callable[[], datetime]) -> None:
        self.path = path
        self.clock = clock
        self._depth = 0

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Rows:
        raise NotImplementedError

    def _begin(self) -> None:
        raise NotImplementedError

    def _in_transaction(self) -> bool:
        raise NotImplementedError

    def connection_lost(self) -> bool:
        """Whether the connection to a database server was lost (a file's never is)."""
        return False

    def reconnect(self) -> None:
        """A new connection in place of a lost one (nothing to do for a file)."""

    def continue_identity(self, table: str, column: str) -> None:
        """After rows were written with their own ids (a copy), let new rows number past them.

        SQLite does by itself (a new rowid is past the largest); PostgreSQL moves the sequence."""

    def stamp(self, value: str | datetime | None = None) -> str:
        """`value` (now by the clock when None) in the store's one timestamp form."""
        return utc_text(self.clock() if value is None else value)

    @property
    def in_transaction(self) -> bool:
        """Whether a `transaction()` block is open on this connection."""
        return self._depth > 0

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction: every read inside sees the database as it was at its first read
        (a copy reads every table at one moment, while a daemon may go on writing)."""
        self.execute(self.begin_snapshot)
        try:
            yield
        finally:
            if self._in_transaction():
                self.execute("COMMIT")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; nested calls use savepoints.

        An exception inside rolls back everything the block wrote and propagates.
        """
        if self._depth:
            name = f"nested_{self._depth}"
            self.execute(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield
            except BaseException:
                # SQLite itself rolls the whole transaction back on some errors (a full disk,
                # SQLITE_FULL): the savepoint is gone with it, and the first error is the one to tell.
                if self._in_transaction():
                    self.execute(f"ROLLBACK TO SAVEPOINT {name}")
                    self.execute(f"RELEASE SAVEPOINT {name}")
                raise
            else:
                self.execute(f"RELEASE SAVEPOINT {name}")
            finally:
                self._depth -= 1
            return
        self._begin()
        self._depth = 1
        try:
            yield
            self.execute("COMMIT")
        except BaseException:
            if self._in_transaction():
                self.execute("ROLLBACK")
            raise
        finally:
            self._depth = 0
