"""Store stage: the one SQLite connection every part of `SqliteStore` shares, and its transactions.

Connection settings, and why:
- WAL journal: readers (`triage show` / `list`) never block the daemon's writer, nor it them.
- Every write runs under `BEGIN IMMEDIATE`: the write lock is taken up front, so a second
  writer waits in the busy handler instead of failing mid-transaction with SQLITE_BUSY.
- busy timeout 5000 ms by default: a second writer waits that long for the lock, then
  `StoreBusyError`.
- foreign keys on: a record, plan or verdict cannot point at a message that is not kept.
- synchronous=NORMAL: in WAL mode this cannot corrupt the file; a power cut may drop the
  last commits, but messages and their cursor are committed together, so they drop together
  and the source is simply read again from the older position.
- private files: the database holds raw mail, plans and the outbox, so a database file this
  module creates is created 0600 before SQLite opens it (SQLite gives its -wal and -shm files
  the database file's mode), and each directory it creates for it is 0700 (as the XDG spec
  asks of data directories). An existing file or directory keeps the mode it has.
Opening runs the migrations of `migrations.py`; a file written by a newer schema is refused
(`SchemaTooNewError`) before anything in it is changed.
- read-only: an existing database this process cannot write (a read-only filesystem, a file or
  folder without write permission) is opened read-only, so `list`, `show` and `status` still
  read it; a write then fails as a one-line `StoreError` naming the file and why.
"""
from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from triagebot.store.database import SqlDatabase, utc_now
from triagebot.store.migrations import LATEST_VERSION, apply_migrations, refuse_newer, schema_version
from triagebot.store.protocol import StoreBusyError, StoreError

DEFAULT_BUSY_TIMEOUT_MS = 5000
PRIVATE_DIR_MODE = 0o700  # directories triagebot creates for its database: the owner only
PRIVATE_FILE_MODE = 0o600  # the database (and so its -wal and -shm) and the lock files beside it


def ensure_private_dir(directory: str | os.PathLike[str]) -> None:
    """Create `directory` and any missing parent, each 0700; existing ones are left as they are."""
    directory = Path(directory)
    missing = []
    while not directory.exists():
        missing.append(directory)
        if directory.parent == directory:
            break
        directory = directory.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, PRIVATE_DIR_MODE)
        except FileExistsError:  # created meanwhile by another process: fine
            pass


def create_private_file(path: str | os.PathLike[str]) -> None:
    """Create an empty file 0600 unless something is there already (which is left alone)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                         PRIVATE_FILE_MODE))
    except FileExistsError:
        pass


def open_private(path: str | os.PathLike[str], mode: str = "w") -> IO[Any]:
    """`open(path, mode)` for a lock or state file beside the database: created 0600 if new."""
    create_private_file(path)
    return open(path, mode)


def _cannot_make(path: str, error: OSError) -> str:
    """Why a database cannot be opened or made at `path`, in words about its folder where the
    folder is the problem: /proc answers "No such file or directory" to a file made in it, which
    reads as if the folder were missing."""
    folder = os.path.dirname(os.path.abspath(path))
    made = os.path.exists(path)
    if not made and os.path.isdir(folder) and error.filename in (path, None):
        if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return f"cannot make the database: its folder {folder} is not writable ({error.strerror})"
        if error.errno == errno.ENOENT:  # the folder is there, yet refuses the new file: procfs, sysfs
            return (f"cannot make the database: its folder {folder} cannot hold one (the filesystem there "
                    f"takes no new files); give a path on a disk")
    detail = f" ({error.filename})" if error.filename and error.filename != path else ""
    return f"cannot open the database: {error.strerror or error}{detail}"


class SqliteDatabase(SqlDatabase):
    """One open SQLite file: its connection, its clock, and nested write transactions.

    One instance per thread (sqlite3 connections are not shared).
    """

    begin_snapshot = "BEGIN DEFERRED"  # in WAL mode, a read transaction sees one commit

    def __init__(self, path: str | os.PathLike[str], *,
                 busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                 clock: Callable[[], datetime] = utc_now) -> None:
        super().__init__(str(path), clock)
        self.busy_timeout_ms = busy_timeout_ms
        self.read_only: str | None = None  # why the database is open for reading only, if it is
        self.connection = self._open()

    def _read_only_reason(self) -> str | None:
        """Why an existing database cannot be written here (None: it can, or it is new)."""
        if self.path == ":memory:" or not os.path.isfile(self.path):
            return None
        folder = os.path.dirname(os.path.abspath(self.path))
        try:
            if os.statvfs(folder).f_flag & os.ST_RDONLY:
                return "on a read-only filesystem"
        except OSError:
            pass
        if not os.access(self.path, os.W_OK):
            return "the file is not writable"
        if not os.access(folder, os.W_OK):  # SQLite keeps its -wal and -shm files beside it
            return f"its folder {folder} is not writable"
        return None

    def _open_read_only(self, why: str) -> sqlite3.Connection:
        """The database for reading only: `mode=ro`, else `immutable=1` (a read-only filesystem
        where SQLite cannot make the WAL index: nothing can change the file there)."""
        uri = "file:" + quote(os.path.abspath(self.path))
        problem: sqlite3.Error | None = None
        for options in ("?mode=ro", "?mode=ro&immutable=1"):
            connection = sqlite3.connect(uri + options, uri=True, isolation_level=None,
                                         timeout=self.busy_timeout_ms / 1000)
            try:
                version = schema_version(connection)
            except sqlite3.DatabaseError as error:
                connection.close()
                problem = error
                if "unable to open" in str(error):
                    continue
                raise StoreError(f"{self.path}: not a triagebot database ({error})") from None
            refuse_newer(version, self.path)
            if version < LATEST_VERSION:
                connection.close()
                raise StoreError(f"{self.path}: read-only ({why}) and written by an older triagebot (schema "
                                 f"{version}, this one reads {LATEST_VERSION}): open it once where it can be "
                                 f"written, to bring it up to date")
            self.read_only = why
            return connection
        raise StoreError(f"{self.path}: cannot open the database ({why}): {problem}")

    def _open(self) -> sqlite3.Connection:
        why = self._read_only_reason()
        if why is not None:
            return self._open_read_only(why)
        try:
            if self.path != ":memory:":
                ensure_private_dir(Path(self.path).parent)
                create_private_file(self.path)
            # isolation_level=None: the module never opens transactions behind our back;
            # transaction() issues BEGIN IMMEDIATE / COMMIT itself.
            connection = sqlite3.connect(self.path, isolation_level=None,
                                         timeout=self.busy_timeout_ms / 1000)
        except OSError as error:
            raise StoreError(f"{self.path}: {_cannot_make(self.path, error)}") from None
        except sqlite3.Error as error:
            raise StoreError(f"{self.path}: cannot open the database: {error}") from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            connection.execute("PRAGMA foreign_keys = ON")
            try:
                version = schema_version(connection)
            except sqlite3.DatabaseError as error:
                raise StoreError(f"{self.path}: not a triagebot database ({error})") from None
            # Refused before WAL is switched on or anything else is written to the file.
            refuse_newer(version, self.path)
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: cannot use WAL journal mode here (got {mode!r}); "
                                 f"put the database on a local filesystem")
            connection.execute("PRAGMA synchronous = NORMAL")
            apply_migrations(connection, self.path)
        except BaseException:
            connection.close()
            raise
        return connection

    def close(self) -> None:
        self.connection.close()

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.connection.execute(sql, parameters)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.connection.executemany(sql, rows)

    def _in_transaction(self) -> bool:
        return self.connection.in_transaction

    def _begin(self) -> None:
        """BEGIN IMMEDIATE: the write lock up front, waited for up to the busy timeout."""
        if self.read_only:
            raise StoreError(f"{self.path}: the database is read-only here ({self.read_only}); this writes to it")
        try:
            self.connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                raise StoreBusyError(
                    f"{self.path}: another process kept the database locked for more than "
                    f"{self.busy_timeout_ms} ms ({error})") from None
            raise StoreError(f"{self.path}: cannot start a write: {error}") from None

    def stream(self, sql: str, size: int) -> Iterator[Sequence[Any]]:
        """The rows of one query, fetched `size` at a time."""
        cursor = self.connection.execute(sql)
        while page := cursor.fetchmany(size):
            yield from page
