"""Store stage: the `Store` backend on a PostgreSQL server (psycopg 3), chosen by a URL.

`PostgresStore` is the backend-neutral `SqlStore` (sql.py: the parts composed over one
connection) over a `PostgresDatabase` (postgres_database.py: the connection, its settings,
transactions and write lock; postgres_migrations.py: its schema). It gives the same answers,
order and errors as `SqliteStore`; tests/test_store_*.py run both.

To have other work commit with a state change and its outbox rows (a job engine's job row in
the same database), pass the connection it uses, or use `store.connection` inside
`with store.transaction():` — everything executed on it there is in that transaction.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg

from triagebot.store.database import utc_now
from triagebot.store.postgres_database import DEFAULT_BUSY_TIMEOUT_MS, PostgresDatabase
from triagebot.store.sql import SqlStore


class PostgresStore(SqlStore):
    """`Store` on one PostgreSQL database. One instance per thread (one connection each).

    Use as a context manager, or call `close()` (a connection passed in is closed too).
    """

    def __init__(self, url: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                 clock: Callable[[], datetime] = utc_now,
                 connection: psycopg.Connection[Any] | None = None) -> None:
        super().__init__(PostgresDatabase(url, busy_timeout_ms=busy_timeout_ms, clock=clock,
                                          connection=connection))
        self.busy_timeout_ms = busy_timeout_ms
