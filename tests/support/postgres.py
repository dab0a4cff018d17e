"""A real PostgreSQL server for the tests, and the store fixtures that run a test on both backends.

`PostgresServer` runs `initdb` and `pg_ctl` from the machine's PostgreSQL (Debian's `postgresql`,
installed by .ci/run) on a Unix socket in a temporary directory, with no TCP port; it is stopped
and its directory removed at the end of the session. PostgreSQL refuses to run as root, so when
the tests run as root the server runs as the `postgres` user (else `nobody`) through `runuser`,
in a directory owned by that user. Each test gets its own schema (`search_path` in the URL), so
tests never see each other's tables.

`Stores` opens stores of one backend by name: a file in tmp_path for SQLite, a schema on the
server for PostgreSQL; `stores.rows(sql)` reads through a second, plain connection (what
another program would see).
"""
from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from triagebot.store.sql import SqlStore
from triagebot.store.sqlite import SqliteStore

SUPERUSER = "triage"
DATABASE = "triage"
_schemas = itertools.count(1)


def postgres_bin() -> Path | None:
    """The directory of initdb and pg_ctl: on PATH, else the newest /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda path: int(Path(path).parent.parent.name) if Path(path).parent.parent.name.isdigit()
                        else 0)
    return Path(candidates[-1]).parent if candidates else None


def _server_user() -> str | None:
    """Who runs the server when we are root (PostgreSQL refuses root): postgres, else nobody."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a postgres nor a nobody user exists to run PostgreSQL")


class PostgresServer:
    """initdb + pg_ctl on a Unix socket in a temporary directory."""

    def __init__(self, bin_dir: Path, durable: bool = False) -> None:
        self.bin_dir = bin_dir
        # durable: a commit is in the WAL before it returns (synchronous_commit on), so a server
        # stopped as a crash would keeps every commit, as a real one does; the others trade that for speed
        self.durable = durable
        self.user = _server_user()
        self.root = Path(tempfile.mkdtemp(prefix="triage-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root
        self.log = self.root / "server.log"
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        os.chmod(self.root, 0o700)

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", self.user, "--"] if self.user is not None else []
        result = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL, cwd=self.root)
        if result.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}): {result.stderr}{log}")

    def start(self) -> None:
        self._run(str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
                  "-E", "UTF8", "--locale=C", "--no-sync")
        self.start_again()
        self._run(str(self.bin_dir / "createdb"), "-h", str(self.socket_dir), "-U", SUPERUSER, DATABASE)

    def start_again(self) -> None:
        """Start the server on its data directory and socket (after `stop_now`: what it committed is there)."""
        options = (f"-k {self.socket_dir} -c listen_addresses='' -c fsync=off -c full_page_writes=off"
                   f" -c max_connections=60 -c synchronous_commit={'on' if self.durable else 'off'}")
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "-t", "120", "start")

    def stop_now(self) -> None:
        """Stop the server as a crash would (`-m immediate`: every connection cut, no checkpoint)."""
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():  # not when a test stopped it (stop_now) and left it so
                self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, schema: str | None = None, *, scheme: str = "postgresql") -> str:
        url = f"{scheme}:///{DATABASE}?host={self.socket_dir}&user={SUPERUSER}"
        return url + (f"&options=-csearch_path%3D{schema}" if schema else "")

    def new_schema(self) -> str:
        import psycopg

        name = f"t{next(_schemas)}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE SCHEMA {name}")
        return name


class Stores:
    """Stores of one backend, by name, for one test."""

    def __init__(self, backend: str, tmp_path: Path, server: PostgresServer | None) -> None:
        self.backend = backend
        self.tmp_path = tmp_path
        self.server = server
        self._schemas: dict[str, str] = {}

    def url(self, name: str = "triage") -> str:
        """What --db / TRIAGE_DB would say for the store `name`: a file path or a URL."""
        if self.server is None:
            return str(self.tmp_path / f"{name}.db")
        if name not in self._schemas:
            self._schemas[name] = self.server.new_schema()
        return self.server.url(self._schemas[name])

    def open(self, name: str = "triage", **options: Any) -> SqlStore:
        if self.server is None:
            return SqliteStore(self.url(name), **options)
        from triagebot.store.postgres import PostgresStore

        return PostgresStore(self.url(name), **options)

    def rows(self, sql: str, parameters: tuple = (), name: str = "triage") -> list[tuple]:
        """Rows of `sql` read through a separate connection (`?` parameters)."""
        if self.server is None:
            with sqlite3.connect(self.url(name)) as connection:
                return connection.execute(sql, parameters).fetchall()
        import psycopg

        from triagebot.store.postgres_database import pg_sql

        with psycopg.connect(self.url(name), autocommit=True) as connection:
            return [tuple(row) for row in connection.execute(pg_sql(sql) if parameters else sql, parameters
                                                             or None).fetchall()]

    def write(self, sql: str, parameters: tuple = (), name: str = "triage") -> None:
        """Run one statement through a separate connection (`?` parameters): another program's write."""
        if self.server is None:
            with sqlite3.connect(self.url(name)) as connection:
                connection.execute(sql, parameters)
            return
        import psycopg

        from triagebot.store.postgres_database import pg_sql

        with psycopg.connect(self.url(name), autocommit=True) as connection:
            connection.execute(pg_sql(sql) if parameters else sql, parameters or None)


def start_server(durable: bool = False) -> PostgresServer:
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (no initdb on PATH or under /usr/lib/postgresql/*/bin;"
                    " Debian's postgresql package, which .ci/run installs)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[postgres]')")
    server = PostgresServer(bin_dir, durable=durable)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return server
