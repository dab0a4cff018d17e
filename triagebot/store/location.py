"""Store stage: which store a `--db` / `TRIAGE_DB` value names, and opening it.

A value is one of:
- a file path (`~` expanded): the embedded default, SQLite, as before;
- `sqlite:///PATH`: the same, as a URL (`sqlite:////abs` and `sqlite:///abs` both give `/abs`;
  a host part is refused: SQLite is a local file);
- `postgresql://…` or `postgres://…`: a PostgreSQL database, in libpq's URL form (user,
  password, host or `?host=/socket/dir`, port, dbname, `?options=-csearch_path%3Dschema`, …).
Any other `scheme://` is refused with one line naming the value and the forms taken: it is never
taken for a file name (it used to make a folder `./postgresql:` with a SQLite file in it).

Files that live beside the database (the rerun host locks, the terminal notifier's plots) need
a local place on PostgreSQL too: `local_path` is the SQLite file itself, or for a URL a name
under the data directory (`$XDG_DATA_HOME/triagebot/postgresql/…`) standing for that database.
Opening PostgreSQL imports psycopg only then: the embedded default never needs it.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from triagebot.store.database import display_url, url_without_password, utc_now
from triagebot.store.protocol import StoreError
from triagebot.store.sql import SqlStore
from triagebot.store.sqlite import DB_ENV_VAR, default_db_path

POSTGRES_SCHEMES = ("postgresql", "postgres")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
FORMS = "a file path, sqlite:///PATH or postgresql://[USER@]HOST[:PORT]/DBNAME"


class LocationError(StoreError):
    """A --db / TRIAGE_DB value that names no store triagebot can open."""


@dataclass(frozen=True)
class StoreLocation:
    """One store: a SQLite file (`path`) or a PostgreSQL database (`url`)."""

    path: Path | None = None
    url: str | None = None
    environ: Mapping[str, str] | None = None

    @property
    def backend(self) -> str:
        return "postgresql" if self.url is not None else "sqlite"

    def __str__(self) -> str:
        return display_url(self.url) if self.url is not None else str(self.path)

    @property
    def local_path(self) -> Path:
        """Where files beside this database go (`<local_path>.host-NAME.lock`, `plots/`)."""
        if self.path is not None:
            return self.path
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", url_without_password(self.url or ""))[:120]
        env = os.environ if self.environ is None else self.environ
        return default_db_path(env).parent / "postgresql" / slug

    def exists(self) -> bool:
        """Whether a store is there yet (a SQLite file; a migrated PostgreSQL schema).

        On PostgreSQL this connects; a server that cannot be reached is a StoreError."""
        if self.url is None:
            assert self.path is not None
            return self.path.exists()
        return _postgres_database(self).schema_present(self.url)

    def open(self, *, clock: Callable[[], datetime] = utc_now, **options: Any) -> SqlStore:
        """The store, its schema migrated (created on first use)."""
        if self.url is None:
            from triagebot.store.sqlite import SqliteStore

            assert self.path is not None
            return SqliteStore(self.path, clock=clock, **options)
        _postgres_database(self)  # psycopg is there
        from triagebot.store.postgres import PostgresStore

        return PostgresStore(self.url, clock=clock, **options)


def _postgres_database(location: StoreLocation) -> Any:
    """postgres_database.py, or LocationError when psycopg is not installed."""
    try:
        from triagebot.store import postgres_database
    except ImportError as error:
        raise LocationError(f"{location}: PostgreSQL needs psycopg, which is not installed ({error}); "
                            f"pip install 'triagebot[postgres]'") from None
    return postgres_database


def parse_location(value: str, origin: str = "--db", environ: Mapping[str, str] | None = None) -> StoreLocation:
    """The store `value` names; `origin` ("--db", "TRIAGE_DB") is what a refusal names."""
    found = _URL.match(value)
    if found is None:
        return StoreLocation(path=Path(value).expanduser(), environ=environ)
    scheme = found.group(1).lower()
    if scheme in POSTGRES_SCHEMES:
        return StoreLocation(url=value, environ=environ)
    shown = display_url(value)
    if scheme == "sqlite":
        parts = urlsplit(value)
        if parts.netloc or not parts.path or parts.query:
            raise LocationError(f"{origin}={shown}: a sqlite URL names a local file: sqlite:///PATH")
        return StoreLocation(path=Path("/" + unquote(parts.path).lstrip("/")), environ=environ)
    raise LocationError(f"{origin}={shown}: unknown database URL scheme {scheme!r}; give {FORMS}")


def resolve_location(cli_value: str | None, environ: Mapping[str, str] | None = None) -> StoreLocation:
    """The store to open: `--db`, then TRIAGE_DB, then the SQLite file under the XDG data directory
    (sqlite.resolve_db_path's order); empty values count as unset."""
    env = os.environ if environ is None else environ
    if cli_value:
        return parse_location(cli_value, "--db", env)
    if env.get(DB_ENV_VAR):
        return parse_location(env[DB_ENV_VAR], DB_ENV_VAR, env)
    return StoreLocation(path=default_db_path(env), environ=env)
