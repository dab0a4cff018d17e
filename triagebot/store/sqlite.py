"""Store stage: the default `Store` backend on a local SQLite file (stdlib sqlite3).

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
"""
from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from triagebot.store.migrations import apply_migrations, refuse_newer, schema_version
from triagebot.store.quarantine import QuarantineTables
from triagebot.store.protocol import (
    IncomingMessage,
    StoreBusyError,
    StoreError,
    StoredMessage,
    normalize_message_id,
)
from triagebot.store.threads import choose_root, parent_edges
from triagebot.store.triage_tables import TriageTables

DEFAULT_BUSY_TIMEOUT_MS = 5000
DB_ENV_VAR = "TRIAGE_DB"
DB_FILE_NAME = "triage.db"
# Bound on `?` parameters per statement; SQLite's own limit is 32766 since 3.32, older
# builds allowed 999.
_MAX_PARAMETERS = 900
# Rows per page when iterating raw messages: bounded memory, no cursor held across writes.
_PAGE_ROWS = 256


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


def open_private(path: str | os.PathLike[str], mode: str = "w"):
    """`open(path, mode)` for a lock or state file beside the database: created 0600 if new."""
    create_private_file(path)
    return open(path, mode)


def utc_text(value: str | datetime) -> str:
    """A timestamp as `YYYY-MM-DDTHH:MM:SS+00:00`: one fixed form, so text order is time order.

    Accepts an ISO 8601 string or a datetime; a naive value is taken as UTC.
    """
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def _record_date_utc(report_json: Mapping[str, Any]) -> str | None:
    date = report_json.get("date")
    if not isinstance(date, str) or not date:
        return None
    try:
        return utc_text(date)
    except ValueError:  # a record whose date the parser could not normalize: sort by receipt
        return None


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _chunks(values: Sequence[Any], size: int = _MAX_PARAMETERS) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start:start + size]


def _marks(count: int) -> str:
    return ",".join("?" * count)


class SqliteStore(TriageTables, QuarantineTables):
    """`Store` on one SQLite file. One instance per thread (sqlite3 connections are not shared).

    Use as a context manager, or call `close()`.
    """

    def __init__(self, path: str | os.PathLike[str], *,
                 busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                 clock: Callable[[], datetime] = _now) -> None:
        self.path = str(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._clock = clock
        self._depth = 0
        self._connection = self._open()

    # -- opening ----------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        try:
            if self.path != ":memory:":
                ensure_private_dir(Path(self.path).parent)
                create_private_file(self.path)
            # isolation_level=None: the module never opens transactions behind our back;
            # transaction() issues BEGIN IMMEDIATE / COMMIT itself.
            connection = sqlite3.connect(self.path, isolation_level=None,
                                         timeout=self.busy_timeout_ms / 1000)
        except (OSError, sqlite3.Error) as error:
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
        self._connection.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- transactions -----------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[SqliteStore]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT); nested calls use savepoints.

        An exception inside rolls back everything the block wrote (cursor included) and
        propagates. Waiting for another writer is bounded by the busy timeout.
        """
        connection = self._connection
        if self._depth:
            name = f"nested_{self._depth}"
            connection.execute(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield self
            except BaseException:
                connection.execute(f"ROLLBACK TO {name}")
                connection.execute(f"RELEASE {name}")
                raise
            else:
                connection.execute(f"RELEASE {name}")
            finally:
                self._depth -= 1
            return
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                raise StoreBusyError(
                    f"{self.path}: another process kept the database locked for more than "
                    f"{self.busy_timeout_ms} ms ({error})") from None
            raise StoreError(f"{self.path}: cannot start a write: {error}") from None
        self._depth = 1
        try:
            yield self
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        finally:
            self._depth = 0

    # -- messages ---------------------------------------------------------------------------
    def put_message(self, message_id: str, raw_bytes: bytes, source_name: str,
                    list_name: str | None, received_at: str | datetime,
                    source_url: str | None = None) -> bool:
        row = self._message_row(message_id, raw_bytes, source_name, list_name, received_at,
                                source_url)
        with self.transaction():
            cursor = self._connection.execute(
                "INSERT OR IGNORE INTO messages (message_id, source_name, source_url, list_name,"
                " received_at, size, raw) VALUES (?, ?, ?, ?, ?, ?, ?)", row)
            return cursor.rowcount == 1

    @staticmethod
    def _message_row(message_id: str, raw_bytes: bytes, source_name: str,
                     list_name: str | None, received_at: str | datetime,
                     source_url: str | None) -> tuple[Any, ...]:
        if not isinstance(raw_bytes, (bytes, bytearray, memoryview)):
            raise TypeError(f"raw message must be bytes, not {type(raw_bytes).__name__}")
        raw = bytes(raw_bytes)
        return (normalize_message_id(message_id), source_name, source_url, list_name,
                utc_text(received_at), len(raw), raw)

    def ingest_batch(self, messages: Iterable[IncomingMessage],
                     cursor: tuple[str, str] | None = None) -> list[str]:
        items: dict[str, IncomingMessage] = {}
        for message in messages:
            items.setdefault(normalize_message_id(message.message_id), message)  # first wins
        rows = [self._message_row(message_id, item.raw, item.source_name, item.list_name,
                                  item.received_at, item.source_url)
                for message_id, item in items.items()]
        now = utc_text(self._clock())
        with self.transaction():
            # Checked under the write lock, so nobody can insert between this and the insert.
            known = self._existing(list(items))
            new_rows = [row for row in rows if row[0] not in known]
            self._connection.executemany(
                "INSERT INTO messages (message_id, source_name, source_url, list_name,"
                " received_at, size, raw) VALUES (?, ?, ?, ?, ?, ?, ?)", new_rows)
            new_ids = [row[0] for row in new_rows]
            # A message quarantined before that now arrives parsed is a normal message now.
            for chunk in _chunks(new_ids):
                self._connection.execute(
                    f"DELETE FROM quarantine WHERE quarantine_key IN ({_marks(len(chunk))})", tuple(chunk))
            record_rows = [self._record_row(message_id, items[message_id].record or {},
                                            items[message_id].parser_version or "", now)
                           for message_id in new_ids if items[message_id].record is not None]
            self._connection.executemany(
                "INSERT OR IGNORE INTO records (message_id, schema, parser_version, kind,"
                " testcase, date_utc, updated_at, record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                record_rows)
            for message_id, item in items.items():
                self._link(message_id, item.in_reply_to, item.references)
            if cursor is not None:
                self.set_cursor(*cursor)
        return new_ids

    def _existing(self, message_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for chunk in _chunks(message_ids):
            found.update(row[0] for row in self._connection.execute(
                f"SELECT message_id FROM messages WHERE message_id IN ({_marks(len(chunk))})",
                tuple(chunk)))
        return found

    def existing_ids(self, message_ids: Iterable[str]) -> set[str]:
        return self._existing(list(dict.fromkeys(normalize_message_id(item)
                                                 for item in message_ids)))

    def has_message(self, message_id: str) -> bool:
        return self._connection.execute(
            "SELECT 1 FROM messages WHERE message_id = ?",
            (normalize_message_id(message_id),)).fetchone() is not None

    def get_raw(self, message_id: str) -> bytes | None:
        row = self._connection.execute("SELECT raw FROM messages WHERE message_id = ?",
                                       (normalize_message_id(message_id),)).fetchone()
        return None if row is None else bytes(row[0])

    _MESSAGE_COLUMNS = "message_id, raw, source_name, source_url, list_name, received_at"

    def get_message(self, message_id: str) -> StoredMessage | None:
        row = self._connection.execute(
            f"SELECT {self._MESSAGE_COLUMNS} FROM messages WHERE message_id = ?",
            (normalize_message_id(message_id),)).fetchone()
        return None if row is None else self._stored(row)

    @staticmethod
    def _stored(row: Sequence[Any]) -> StoredMessage:
        return StoredMessage(message_id=row[0], raw=bytes(row[1]), source_name=row[2],
                             source_url=row[3], list_name=row[4], received_at=row[5])

    def iter_raw(self) -> Iterator[StoredMessage]:
        last_rowid = 0
        while True:
            page = self._connection.execute(
                f"SELECT rowid, {self._MESSAGE_COLUMNS} FROM messages WHERE rowid > ?"
                " ORDER BY rowid LIMIT ?", (last_rowid, _PAGE_ROWS)).fetchall()
            if not page:
                return
            for row in page:
                yield self._stored(row[1:])
            last_rowid = page[-1][0]

    def count_messages(self) -> int:
        return int(self._connection.execute("SELECT count(*) FROM messages").fetchone()[0])

    # -- records ----------------------------------------------------------------------------
    @staticmethod
    def _record_row(message_id: str, report_json: Mapping[str, Any], parser_version: str,
                    now: str) -> tuple[Any, ...]:
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

    def put_record(self, message_id: str, report_json: dict[str, Any],
                   parser_version: str) -> bool:
        message_id = normalize_message_id(message_id)
        row = self._record_row(message_id, report_json, parser_version, utc_text(self._clock()))
        with self.transaction():
            if not self.has_message(message_id):
                raise StoreError(f"{self.path}: no stored message {message_id} to attach a "
                                 f"record to")
            cursor = self._connection.execute(
                "INSERT INTO records (message_id, schema, parser_version, kind, testcase,"
                " date_utc, updated_at, record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (message_id) DO UPDATE SET schema = excluded.schema,"
                " parser_version = excluded.parser_version, kind = excluded.kind,"
                " testcase = excluded.testcase, date_utc = excluded.date_utc,"
                " updated_at = excluded.updated_at, record_json = excluded.record_json"
                # An unchanged reparse leaves the row (and its updated_at) as it was.
                " WHERE records.record_json IS NOT excluded.record_json"
                " OR records.parser_version IS NOT excluded.parser_version", row)
            return cursor.rowcount == 1

    def get_record(self, message_id: str) -> dict[str, Any] | None:
        row = self._connection.execute("SELECT record_json FROM records WHERE message_id = ?",
                                       (normalize_message_id(message_id),)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_record_version(self, message_id: str) -> str | None:
        row = self._connection.execute("SELECT parser_version FROM records WHERE message_id = ?",
                                       (normalize_message_id(message_id),)).fetchone()
        return None if row is None else str(row[0])

    def list_records(self, kind: str | Sequence[str] | None = None,
                     list_name: str | None = None, since: str | datetime | None = None,
                     testcase: str | None = None,
                     limit: int | None = None) -> list[dict[str, Any]]:
        """Records matching every given filter, newest first.

        `kind` is one kind or several; `since` keeps messages dated at or after that moment
        (the record's `date`, or the receipt time where the record has none; naive = UTC);
        `list_name` is the list the message was ingested from.
        """
        clauses: list[str] = []
        parameters: list[Any] = []
        if kind is not None:
            kinds = [kind] if isinstance(kind, str) else list(kind)
            clauses.append(f"r.kind IN ({_marks(len(kinds))})" if kinds else "0")
            parameters.extend(kinds)
        if list_name is not None:
            clauses.append("m.list_name = ?")
            parameters.append(list_name)
        if testcase is not None:
            clauses.append("r.testcase = ?")
            parameters.append(testcase)
        if since is not None:
            clauses.append("COALESCE(r.date_utc, m.received_at) >= ?")
            parameters.append(utc_text(since))
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = (f"SELECT r.record_json FROM records r JOIN messages m USING (message_id) {where}"
               " ORDER BY COALESCE(r.date_utc, m.received_at) DESC, r.message_id")
        if limit is not None:
            sql += " LIMIT ?"
            parameters.append(int(limit))
        return [json.loads(row[0]) for row in self._connection.execute(sql, parameters)]

    # -- threads ----------------------------------------------------------------------------
    def link_thread(self, message_id: str, in_reply_to: str | None,
                    references: Sequence[str] = ()) -> None:
        with self.transaction():
            self._link(normalize_message_id(message_id), in_reply_to, references)

    def _link(self, message_id: str, in_reply_to: str | None,
              references: Sequence[str]) -> None:
        """Union the message, its parents and their threads into one thread_id (the lowest)."""
        connection = self._connection
        edges = parent_edges(message_id, in_reply_to, references)
        ids = list(dict.fromkeys([message_id, *(node for edge in edges for node in edge)]))
        labelled: dict[str, int] = {}
        for chunk in _chunks(ids):
            labelled.update(connection.execute(
                f"SELECT message_id, thread_id FROM thread_nodes"
                f" WHERE message_id IN ({_marks(len(chunk))})", tuple(chunk)))
        labels = sorted(set(labelled.values()))
        if labels:
            target = labels[0]
            others = labels[1:]
            for chunk in _chunks(others):
                connection.execute(f"UPDATE thread_nodes SET thread_id = ?"
                                   f" WHERE thread_id IN ({_marks(len(chunk))})",
                                   (target, *chunk))
                connection.execute(f"DELETE FROM threads WHERE thread_id IN ({_marks(len(chunk))})",
                                   tuple(chunk))
        else:
            created = connection.execute("INSERT INTO threads DEFAULT VALUES").lastrowid
            assert created is not None
            target = created
        connection.executemany("INSERT INTO thread_nodes (message_id, thread_id) VALUES (?, ?)",
                               [(node, target) for node in ids if node not in labelled])
        connection.executemany("INSERT OR IGNORE INTO thread_edges (child, parent) VALUES (?, ?)",
                               edges)

    def _thread_id(self, message_id: str) -> int | None:
        row = self._connection.execute("SELECT thread_id FROM thread_nodes WHERE message_id = ?",
                                       (message_id,)).fetchone()
        return None if row is None else int(row[0])

    def thread_of(self, message_id: str) -> list[str]:
        message_id = normalize_message_id(message_id)
        thread_id = self._thread_id(message_id)
        if thread_id is None:
            return [message_id] if self.has_message(message_id) else []
        return [row[0] for row in self._connection.execute(
            "SELECT m.message_id FROM thread_nodes n JOIN messages m USING (message_id)"
            " LEFT JOIN records r USING (message_id) WHERE n.thread_id = ?"
            " ORDER BY COALESCE(r.date_utc, m.received_at), m.message_id", (thread_id,))]

    def thread_root(self, message_id: str) -> str | None:
        message_id = normalize_message_id(message_id)
        thread_id = self._thread_id(message_id)
        if thread_id is None:
            return message_id if self.has_message(message_id) else None
        members = [row[0] for row in self._connection.execute(
            "SELECT message_id FROM thread_nodes WHERE thread_id = ?", (thread_id,))]
        edges = self._connection.execute(
            "SELECT e.child, e.parent FROM thread_edges e JOIN thread_nodes n"
            " ON n.message_id = e.child WHERE n.thread_id = ?", (thread_id,)).fetchall()
        return choose_root(members, edges)

    # -- source positions -------------------------------------------------------------------
    def add_alias(self, alias: str, message_id: str) -> None:
        """Record another name of a stored message; an alias already taken keeps its message."""
        with self.transaction():
            self._connection.execute("INSERT OR IGNORE INTO aliases (alias, message_id) VALUES (?, ?)",
                                     (alias, normalize_message_id(message_id)))

    def resolve_alias(self, alias: str) -> str | None:
        row = self._connection.execute("SELECT message_id FROM aliases WHERE alias = ?", (alias,)).fetchone()
        return row[0] if row else None

    def repoint_alias(self, alias: str, message_id: str) -> None:
        """Point an alias at another message (the lore copy replacing an archive page's)."""
        with self.transaction():
            self._connection.execute("INSERT INTO aliases (alias, message_id) VALUES (?, ?) "
                                     "ON CONFLICT (alias) DO UPDATE SET message_id = excluded.message_id",
                                     (alias, normalize_message_id(message_id)))

    def delete_message(self, message_id: str) -> bool:
        """Remove a message with its record and aliases (thread links stay: they name ids only)."""
        with self.transaction():
            cursor = self._connection.execute("DELETE FROM messages WHERE message_id = ?",
                                              (normalize_message_id(message_id),))
        return cursor.rowcount > 0

    def save_run(self, message_id: str, plan_json: dict[str, Any], run_json: dict[str, Any]) -> int:
        """Store a finished rerun: its plan, the run with every sample, and its verdict, together."""
        message_id = normalize_message_id(message_id)
        with self.transaction():
            now = utc_text(self._clock())
            plan_id = self._connection.execute(
                "INSERT INTO plans (message_id, created_at, plan_json) VALUES (?, ?, ?)",
                (message_id, now, json.dumps(plan_json, separators=(",", ":")))).lastrowid
            run_id = self._connection.execute(
                "INSERT INTO runs (plan_id, status, started_at, finished_at, run_json) VALUES (?, ?, ?, ?, ?)",
                (plan_id, run_json.get("status", "done"), run_json.get("started_at"), run_json.get("finished_at"),
                 json.dumps(run_json, separators=(",", ":")))).lastrowid
            verdict = run_json.get("verdict")
            if verdict is not None:
                self._connection.execute(
                    "INSERT INTO verdicts (message_id, plan_id, verdict, decided_at, verdict_json) VALUES (?, ?, ?, ?, ?)",
                    (message_id, plan_id, verdict.get("outcome"), now, json.dumps(verdict, separators=(",", ":"))))
        return int(run_id)

    def latest_run(self, message_id: str) -> dict[str, Any] | None:
        """The last stored rerun of a report (run JSON with its samples and verdict), or None."""
        row = self._connection.execute(
            "SELECT r.run_json FROM runs r JOIN plans p ON p.plan_id = r.plan_id WHERE p.message_id = ?"
            " ORDER BY r.run_id DESC LIMIT 1", (normalize_message_id(message_id),)).fetchone()
        return json.loads(row[0]) if row else None

    def get_cursor(self, source_key: str) -> str | None:
        row = self._connection.execute("SELECT value FROM cursors WHERE source_key = ?",
                                       (source_key,)).fetchone()
        return None if row is None else str(row[0])

    def set_cursor(self, source_key: str, value: str) -> None:
        with self.transaction():
            self._connection.execute(
                "INSERT INTO cursors (source_key, value, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (source_key) DO UPDATE SET value = excluded.value,"
                " updated_at = excluded.updated_at",
                (source_key, value, utc_text(self._clock())))

    # -- fetched materials ------------------------------------------------------------------
    def get_material(self, url: str, name: str) -> bytes | None:
        """A file of a materials directory as it was fetched, or None when not kept."""
        row = self._connection.execute("SELECT body FROM materials WHERE url = ? AND name = ?",
                                       (url, name)).fetchone()
        return None if row is None else bytes(row[0])

    def put_material(self, url: str, name: str, body: bytes) -> None:
        """Keep a fetched file of a materials directory (a second fetch replaces the first)."""
        with self.transaction():
            self._connection.execute(
                "INSERT INTO materials (url, name, fetched_at, body) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (url, name) DO UPDATE SET fetched_at = excluded.fetched_at,"
                " body = excluded.body",
                (url, name, utc_text(self._clock()), sqlite3.Binary(bytes(body))))
