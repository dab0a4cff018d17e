"""Store stage: the default `Store` backend on a local SQLite file (stdlib sqlite3).

`SqliteStore` is the backend-neutral `SqlStore` (sql.py: the parts composed over one
connection) over a `SqliteDatabase` (sqlite_database.py: the file, its settings and
transactions). Where the database is by default (`resolve_db_path`) is decided here too;
location.py tells a file from a PostgreSQL URL.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from triagebot.store.database import utc_now
from triagebot.store.protocol import utc_text
from triagebot.store.sql import SqlStore
from triagebot.store.sqlite_database import (
    DEFAULT_BUSY_TIMEOUT_MS,
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    SqliteDatabase,
    create_private_file,
    ensure_private_dir,
    open_private,
)

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
    A URL (`postgresql://…`) is location.py's to tell apart; this gives a path.
    """
    env = os.environ if environ is None else environ
    if cli_value:
        return Path(cli_value).expanduser()
    if env.get(DB_ENV_VAR):
        return Path(env[DB_ENV_VAR]).expanduser()
    return default_db_path(env)


def default_db_path(environ: Mapping[str, str]) -> Path:
    """`$XDG_DATA_HOME/triagebot/triage.db` (an absolute XDG_DATA_HOME), else under ~/.local/share."""
    xdg = environ.get("XDG_DATA_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "triagebot" / DB_FILE_NAME
    home = Path(environ["HOME"]) if environ.get("HOME") else Path.home()
    return home / ".local" / "share" / "triagebot" / DB_FILE_NAME


class SqliteStore(SqlStore):
    """`Store` on one SQLite file. One instance per thread (sqlite3 connections are not shared).

    Use as a context manager, or call `close()`.
    """

    def __init__(self, path: str | os.PathLike[str], *,
                 busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                 clock: Callable[[], datetime] = utc_now) -> None:
        super().__init__(SqliteDatabase(path, busy_timeout_ms=busy_timeout_ms, clock=clock))
        self.busy_timeout_ms = busy_timeout_ms
