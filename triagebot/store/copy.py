"""Store stage: move a whole store from one database to another (SQLite <-> PostgreSQL, or either to
itself elsewhere), and check it arrived.

Every table the schema holds is copied row for row, with every column: ids (thread, outbox, plan,
run, verdict ids) and the insertion order (`rowid`) included, so the copy answers every question
as the original did — the same threads, the same outbox order, the same iteration order. The
source is read in one snapshot (a read transaction: a daemon still writing cannot make the copy
half of two moments); the target is written in one transaction (a failed copy leaves it as it
was). Afterwards each table is counted on both sides (`TableCount`).

A target that holds anything is refused unless `replace` is given, which empties it first (in
the same transaction). Both stores are opened, so migrated, by the caller: both are at the
latest schema, the one `TABLES` describes (tests check it names every table of both schemas).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from triagebot.store.protocol import StoreError
from triagebot.store.sql import SqlStore

# Rows per page read and per batch written: bounded memory with raw mail in the rows.
PAGE_ROWS = 500


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    order: str  # a unique order to read in (the insertion order where the store relies on it)
    identity: tuple[str, ...] = ()  # columns a new row numbers by itself (set past the copied ones)


# In an order that satisfies the foreign keys (messages first, verdicts last).
TABLES: tuple[Table, ...] = (
    Table("messages", ("rowid", "message_id", "source_name", "source_url", "list_name", "received_at", "size",
                       "raw"), "rowid", ("rowid",)),
    Table("records", ("message_id", "schema", "parser_version", "kind", "testcase", "date_utc", "updated_at",
                      "record_json"), "message_id"),
    Table("aliases", ("alias", "message_id"), "alias"),
    Table("threads", ("thread_id",), "thread_id", ("thread_id",)),
    Table("thread_nodes", ("message_id", "thread_id"), "message_id"),
    Table("thread_edges", ("child", "parent"), "child, parent"),
    Table("cursors", ("source_key", "value", "updated_at"), "source_key"),
    Table("materials", ("url", "name", "fetched_at", "body"), "url, name"),
    Table("quarantine", ("rowid", "quarantine_key", "source_name", "source_url", "list_name", "received_at",
                         "failed_at", "parser_version", "attempts", "error", "size", "raw"), "rowid", ("rowid",)),
    Table("triage", ("rowid", "message_id", "state", "channel", "host", "plan_json", "note", "created_at",
                     "updated_at"), "rowid", ("rowid",)),
    Table("outbox", ("outbox_id", "message_id", "kind", "channel", "status", "attempts", "next_attempt_at",
                     "last_error", "posted_channel", "posted_ts", "created_at", "sent_at", "payload_json"),
          "outbox_id", ("outbox_id",)),
    Table("plans", ("plan_id", "message_id", "created_at", "plan_json"), "plan_id", ("plan_id",)),
    Table("runs", ("run_id", "plan_id", "status", "started_at", "finished_at", "run_json"), "run_id", ("run_id",)),
    Table("verdicts", ("verdict_id", "message_id", "plan_id", "verdict", "decided_at", "verdict_json"),
          "verdict_id", ("verdict_id",)),
    Table("bisects", ("bisect_id", "message_id", "status", "started_at", "updated_at", "bisect_json"), "bisect_id",
          ("bisect_id",)),
    Table("lifecycle", ("move_id", "message_id", "state", "cause_id", "note", "moved_at"), "move_id", ("move_id",)),
    Table("report_links", ("link_id", "joined_id", "message_id", "relation", "rule", "linked_at"), "link_id",
          ("link_id",)),
    Table("mail_outbox", ("reply_id", "message_id", "reply_message_id", "status", "requested_by", "attempts",
                          "last_error", "created_at", "sent_at", "raw"), "reply_id", ("reply_id",)),
    Table("actions", ("action_id", "request_key", "message_id", "action", "user_id", "detail", "budget",
                      "created_at"), "action_id", ("action_id",)),
    Table("fix_tests", ("fix_test_id", "message_id", "series_key", "cause_id", "status", "created_at", "updated_at",
                        "result_json"), "fix_test_id", ("fix_test_id",)),
    Table("decisions", ("decision_id", "request_key", "message_id", "decision", "decided_by", "via", "kind_read",
                        "reasons", "note", "decided_at"), "decision_id", ("decision_id",)),
)


class CopyRefused(StoreError):
    """The copy was not started: the target holds a store already, or is the source."""


@dataclass(frozen=True)
class TableCount:
    table: str
    source: int
    target: int

    @property
    def ok(self) -> bool:
        return self.source == self.target


def count_rows(store: SqlStore) -> dict[str, int]:
    return {table.name: int(store.database.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0])
            for table in TABLES}


def copy_store(source: SqlStore, target: SqlStore, *, replace: bool = False,
               progress: Callable[[str, int], None] | None = None) -> list[TableCount]:
    """Copy every table of `source` into `target`; the per-table counts afterwards.

    CopyRefused when the target is the source, or is not empty and `replace` is false.
    `progress(table, rows)` is called after each batch written."""
    if source.path == target.path:
        raise CopyRefused(f"{target.path}: the target is the source")
    held = {name: count for name, count in count_rows(target).items() if count}
    if held and not replace:
        listed = ", ".join(f"{name} {count}" for name, count in held.items())
        raise CopyRefused(f"{target.path}: the target is not empty ({listed}); "
                          f"give --replace to empty it first")
    with source.database.snapshot():
        copied = count_rows(source)
        with target.database.transaction():
            for table in reversed(TABLES):
                if replace:
                    target.database.execute(f"DELETE FROM {table.name}")
            for table in TABLES:
                _copy_table(source, target, table, progress)
    arrived = count_rows(target)
    return [TableCount(table.name, copied[table.name], arrived[table.name]) for table in TABLES]


def _copy_table(source: SqlStore, target: SqlStore, table: Table,
                progress: Callable[[str, int], None] | None) -> None:
    columns = ", ".join(table.columns)
    insert = (f"INSERT INTO {table.name} ({columns}) VALUES ({', '.join('?' * len(table.columns))})")
    batch: list[tuple] = []
    done = 0
    for row in source.database.stream(f"SELECT {columns} FROM {table.name} ORDER BY {table.order}", PAGE_ROWS):
        batch.append(tuple(bytes(value) if isinstance(value, memoryview) else value for value in row))
        if len(batch) >= PAGE_ROWS:
            target.database.executemany(insert, batch)
            done += len(batch)
            batch.clear()
            if progress:
                progress(table.name, done)
    if batch:
        target.database.executemany(insert, batch)
        done += len(batch)
        if progress:
            progress(table.name, done)
    for column in table.identity:
        target.database.continue_identity(table.name, column)
