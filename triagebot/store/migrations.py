"""Store stage: the SQLite schema as numbered migrations, applied in order, one transaction each,
and the runner both backends share (`run_migrations`; PostgreSQL's list: postgres_migrations.py).

The version applied last is kept in `PRAGMA user_version` (0 for an empty file). It is written
inside the migration's own transaction, so a migration either lands whole with its number or
not at all. Migrations are never edited once released: a change is a new, higher version.
They live here as Python strings, not .sql files, so they ship with any install of the package
without package-data configuration.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from triagebot.store.protocol import SchemaTooNewError, StoreError


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


_INITIAL = (
    # Raw messages byte for byte. `raw` is the last column so that reading the metadata of a
    # row does not pull its overflow pages.
    """CREATE TABLE messages (
        message_id   TEXT PRIMARY KEY NOT NULL,
        source_name  TEXT NOT NULL,
        source_url   TEXT,
        list_name    TEXT,
        received_at  TEXT NOT NULL,
        size         INTEGER NOT NULL,
        raw          BLOB NOT NULL
    )""",
    "CREATE INDEX messages_list_name ON messages (list_name)",
    # One record per message, as schema-N JSON text; kind/testcase/date_utc are copies of the
    # JSON fields kept as columns so `triage list` filters use an index.
    """CREATE TABLE records (
        message_id      TEXT PRIMARY KEY NOT NULL
                        REFERENCES messages (message_id) ON DELETE CASCADE,
        schema          INTEGER NOT NULL,
        parser_version  TEXT NOT NULL,
        kind            TEXT,
        testcase        TEXT,
        date_utc        TEXT,
        updated_at      TEXT NOT NULL,
        record_json     TEXT NOT NULL
    )""",
    "CREATE INDEX records_kind ON records (kind)",
    "CREATE INDEX records_testcase ON records (testcase)",
    "CREATE INDEX records_date_utc ON records (date_utc)",
    # Threads: every id seen in Message-ID / In-Reply-To / References is a node, stored or
    # not; nodes of one connected thread share a thread_id. Edges are (child, parent).
    "CREATE TABLE threads (thread_id INTEGER PRIMARY KEY)",
    """CREATE TABLE thread_nodes (
        message_id  TEXT PRIMARY KEY NOT NULL,
        thread_id   INTEGER NOT NULL REFERENCES threads (thread_id)
    )""",
    "CREATE INDEX thread_nodes_thread ON thread_nodes (thread_id)",
    """CREATE TABLE thread_edges (
        child   TEXT NOT NULL,
        parent  TEXT NOT NULL,
        PRIMARY KEY (child, parent)
    ) WITHOUT ROWID""",
    "CREATE INDEX thread_edges_parent ON thread_edges (parent)",
    # Position of each source (feed cursor, last mbox offset, ...), written in the same
    # transaction as the messages it covers.
    """CREATE TABLE cursors (
        source_key  TEXT PRIMARY KEY NOT NULL,
        value       TEXT NOT NULL,
        updated_at  TEXT NOT NULL
    )""",
    # Reserved for the reproduce, verdict and notify issues: minimal columns now, those
    # issues add theirs in later migrations. Nothing writes these tables yet.
    """CREATE TABLE plans (
        plan_id     INTEGER PRIMARY KEY,
        message_id  TEXT NOT NULL REFERENCES messages (message_id),
        created_at  TEXT NOT NULL,
        plan_json   TEXT NOT NULL
    )""",
    """CREATE TABLE runs (
        run_id       INTEGER PRIMARY KEY,
        plan_id      INTEGER NOT NULL REFERENCES plans (plan_id),
        status       TEXT NOT NULL,
        started_at   TEXT,
        finished_at  TEXT,
        run_json     TEXT NOT NULL
    )""",
    """CREATE TABLE verdicts (
        verdict_id    INTEGER PRIMARY KEY,
        message_id    TEXT NOT NULL REFERENCES messages (message_id),
        plan_id       INTEGER REFERENCES plans (plan_id),
        verdict       TEXT NOT NULL,
        decided_at    TEXT NOT NULL,
        verdict_json  TEXT NOT NULL
    )""",
    """CREATE TABLE notifications (
        notification_id    INTEGER PRIMARY KEY,
        verdict_id         INTEGER NOT NULL REFERENCES verdicts (verdict_id),
        channel            TEXT NOT NULL,
        sent_at            TEXT,
        notification_json  TEXT NOT NULL
    )""",
)

_ALIASES = (
    # Other names of a stored message: the date + subject + sender key under which an archive
    # page without a Message-ID (openwall) is recognised as the lore copy of the same message.
    """CREATE TABLE aliases (
        alias       TEXT PRIMARY KEY NOT NULL,
        message_id  TEXT NOT NULL REFERENCES messages (message_id) ON DELETE CASCADE
    )""",
    "CREATE INDEX aliases_message ON aliases (message_id)",
)

_MATERIALS = (
    # Files fetched from an LKP report's materials directory (job.yaml, reproduce, the kernel
    # config, the directory listing under the name "/"), kept so the network is asked once.
    # `url` is the directory's URL ending in "/"; `body` is the last column (see messages).
    """CREATE TABLE materials (
        url         TEXT NOT NULL,
        name        TEXT NOT NULL,
        fetched_at  TEXT NOT NULL,
        body        BLOB NOT NULL,
        PRIMARY KEY (url, name)
    )""",
)

_TRIAGE_AND_OUTBOX = (
    # The daemon's progress with each report it took on (one row per report), and what it has
    # to tell the team: one outbox row per notification, written in the same transaction as the
    # state change it announces. `notifications` (reserved in migration 1) was never written.
    "DROP TABLE notifications",
    """CREATE TABLE triage (
        message_id  TEXT PRIMARY KEY NOT NULL
                    REFERENCES messages (message_id) ON DELETE CASCADE,
        state       TEXT NOT NULL,
        channel     TEXT NOT NULL,
        host        TEXT,
        plan_json   TEXT,
        note        TEXT,
        created_at  TEXT NOT NULL,
        updated_at  TEXT NOT NULL
    )""",
    "CREATE INDEX triage_state ON triage (state)",
    # `kind` is unique per report (parent, plan, progress-started, verdict, plot, update-final,
    # ...), so enqueueing twice is a no-op. `status`: pending -> sending -> sent, or held (an
    # operator must act); `sending` survives a crash and is reconciled against Slack on start.
    """CREATE TABLE outbox (
        outbox_id        INTEGER PRIMARY KEY,
        message_id       TEXT NOT NULL REFERENCES messages (message_id) ON DELETE CASCADE,
        kind             TEXT NOT NULL,
        channel          TEXT NOT NULL,
        status           TEXT NOT NULL,
        attempts         INTEGER NOT NULL DEFAULT 0,
        next_attempt_at  TEXT,
        last_error       TEXT,
        posted_channel   TEXT,
        posted_ts        TEXT,
        created_at       TEXT NOT NULL,
        sent_at          TEXT,
        payload_json     TEXT NOT NULL,
        UNIQUE (message_id, kind)
    )""",
    "CREATE INDEX outbox_status ON outbox (status)",
)

_QUARANTINE = (
    # Messages the parser could not read, kept raw with the reason, so nothing a source gave is
    # lost and `triage reparse` can try them again after an upgrade. `quarantine_key` is the
    # Message-ID when the headers name one, else `sha256-<hex of raw>@triagebot.invalid` (the
    # id a message without a Message-ID is stored under); a key in `messages` is never here.
    # `received_at`: first seen; `failed_at`, `error`, `parser_version`: the last attempt.
    """CREATE TABLE quarantine (
        quarantine_key  TEXT PRIMARY KEY NOT NULL,
        source_name     TEXT NOT NULL,
        source_url      TEXT,
        list_name       TEXT,
        received_at     TEXT NOT NULL,
        failed_at       TEXT NOT NULL,
        parser_version  TEXT NOT NULL,
        attempts        INTEGER NOT NULL,
        error           TEXT NOT NULL,
        size            INTEGER NOT NULL,
        raw             BLOB NOT NULL
    )""",
    "CREATE INDEX quarantine_failed_at ON quarantine (failed_at)",
)

_BISECTS = (
    # Bisections of a report on the lab: every step's evidence (its runs' samples and verdicts)
    # in bisect_json, saved after each step so a crash keeps what was measured; `status` is
    # running until the result (first bad commit, inconclusive with the range left, or error).
    """CREATE TABLE bisects (
        bisect_id    INTEGER PRIMARY KEY,
        message_id   TEXT NOT NULL,
        status       TEXT NOT NULL,
        started_at   TEXT NOT NULL,
        updated_at   TEXT NOT NULL,
        bisect_json  TEXT NOT NULL
    )""",
    "CREATE INDEX bisects_message_id ON bisects (message_id)",
)

_LIFECYCLE = (
    # What happens to a report after its verdict (triagebot/lifecycle/): one row per move, with
    # the message that caused it (`cause_id`, '' for a move no message caused: stale). A move is
    # kept once: the same message moving the same report to the same state again changes nothing.
    """CREATE TABLE lifecycle (
        move_id     INTEGER PRIMARY KEY,
        message_id  TEXT NOT NULL,
        state       TEXT NOT NULL,
        cause_id    TEXT NOT NULL,
        note        TEXT NOT NULL,
        moved_at    TEXT NOT NULL,
        UNIQUE (message_id, state, cause_id)
    )""",
    # A later report of the same regression joins the first (`also-seen`); one of the same commit
    # in the other direction is `linked`. A report joins at most one first report.
    """CREATE TABLE report_links (
        link_id     INTEGER PRIMARY KEY,
        joined_id   TEXT NOT NULL UNIQUE,
        message_id  TEXT NOT NULL,
        relation    TEXT NOT NULL,
        rule        TEXT NOT NULL,
        linked_at   TEXT NOT NULL
    )""",
    "CREATE INDEX report_links_first ON report_links (message_id)",
    # Replies to upstream (triagebot/reply/): the exact bytes, sent once. `sending` is committed
    # before the SMTP call, so after a crash the row says "maybe sent" and is never sent again
    # without a person's explicit action.
    """CREATE TABLE mail_outbox (
        reply_id          INTEGER PRIMARY KEY,
        message_id        TEXT NOT NULL UNIQUE,
        reply_message_id  TEXT NOT NULL UNIQUE,
        status            TEXT NOT NULL,
        requested_by      TEXT NOT NULL,
        attempts          INTEGER NOT NULL DEFAULT 0,
        last_error        TEXT,
        created_at        TEXT NOT NULL,
        sent_at           TEXT,
        raw               BLOB NOT NULL
    )""",
)

_ACTIONS = (
    # One row per action taken from Slack (a button, the /triage command), written in the same
    # transaction as the state change and the thread reply it makes. `request_key` is the signed
    # request's digest: the same request delivered twice (a replay) finds its row and does nothing.
    """CREATE TABLE actions (
        action_id    INTEGER PRIMARY KEY,
        request_key  TEXT NOT NULL UNIQUE,
        message_id   TEXT NOT NULL,
        action       TEXT NOT NULL,
        user_id      TEXT NOT NULL,
        detail       TEXT NOT NULL,
        budget       INTEGER,
        created_at   TEXT NOT NULL
    )""",
    "CREATE INDEX actions_message_id ON actions (message_id)",
)

_FIX_TESTS = (
    # Fix tests of a report on the lab (after_verdict.py): one row per fix series tested, keyed
    # by the series (`series_key`: its version and first patch's Message-ID), so the daemon
    # queues each series once. `status`: queued -> running -> done, refused (b4 or the checks
    # refused the patches: nothing applied) or error; a `running` row a crash left is queued
    # again. `cause_id` is the patch mail that proposed it; `result_json` the measured result.
    """CREATE TABLE fix_tests (
        fix_test_id  INTEGER PRIMARY KEY,
        message_id   TEXT NOT NULL,
        series_key   TEXT NOT NULL,
        cause_id     TEXT NOT NULL,
        status       TEXT NOT NULL,
        created_at   TEXT NOT NULL,
        updated_at   TEXT NOT NULL,
        result_json  TEXT NOT NULL,
        UNIQUE (message_id, series_key)
    )""",
    "CREATE INDEX fix_tests_status ON fix_tests (status)",
)

# A posted patch is a fix proposed, never a fix landed (regzbot's meaning, issue 36): before this,
# a mail with `Fixes: <culprit>` (or a revert, or `Closes:` the report) moved a report to `fixed`
# or `reverted`. Such a move's cause is a Message-ID; a watched tree's commit's is `commit:TREE:SHA`.
# Each mail-caused fixed or reverted move becomes the fix-proposed move it was (displays say
# `posted` for a move a mail caused); one that would repeat a fix-proposed move of the same mail
# is dropped instead.
_POSTED_IS_PROPOSED = (
    """DELETE FROM lifecycle WHERE state IN ('fixed', 'reverted') AND cause_id <> ''
        AND cause_id NOT LIKE 'commit:%' AND EXISTS (
            SELECT 1 FROM lifecycle AS proposed WHERE proposed.message_id = lifecycle.message_id
            AND proposed.cause_id = lifecycle.cause_id AND proposed.state = 'fix-proposed')""",
    """UPDATE lifecycle SET state = 'fix-proposed'
        WHERE state IN ('fixed', 'reverted') AND cause_id <> '' AND cause_id NOT LIKE 'commit:%'""",
)

_DECISIONS = (
    # What a person decided about a reading the daemon was unsure of (a line of the day's digest,
    # the web page's "to look at" list, `triage take-on` / `triage dismiss`): take it on, or dismiss
    # it. Every decision is kept (the last one stands) with who, how and when, and what the parser
    # read then (`kind_read`, `reasons`): the labels `triage labels export` writes. `request_key`
    # is the request's digest: a replayed Slack request finds its row and does nothing.
    """CREATE TABLE decisions (
        decision_id  INTEGER PRIMARY KEY,
        request_key  TEXT NOT NULL UNIQUE,
        message_id   TEXT NOT NULL,
        decision     TEXT NOT NULL,
        decided_by   TEXT NOT NULL,
        via          TEXT NOT NULL,
        kind_read    TEXT NOT NULL,
        reasons      TEXT NOT NULL,
        note         TEXT NOT NULL,
        decided_at   TEXT NOT NULL
    )""",
    "CREATE INDEX decisions_message_id ON decisions (message_id)",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "messages, records, threads, cursors; reserved plans/runs/verdicts/notifications",
              _INITIAL),
    Migration(2, "aliases: fallback keys of messages for archive pages without Message-ID", _ALIASES),
    Migration(3, "materials: cached files of LKP materials directories", _MATERIALS),
    Migration(4, "triage and outbox: the daemon's state per report and its notifications", _TRIAGE_AND_OUTBOX),
    Migration(5, "quarantine: raw messages the parser could not read, with the reason", _QUARANTINE),
    Migration(6, "bisects: bisections on the lab with every step's evidence", _BISECTS),
    Migration(7, "lifecycle moves, report links and the mail outbox of replies upstream", _LIFECYCLE),
    Migration(8, "actions: what a team member did to a report from Slack, who and when", _ACTIONS),
    Migration(9, "fix_tests: fixes from a report's thread tested on the lab, with their results", _FIX_TESTS),
    Migration(10, "lifecycle: a fix or revert a mail posted is fix-proposed, not fixed or reverted",
              _POSTED_IS_PROPOSED),
    Migration(11, "decisions: a person's take-on or dismissal of an unsure reading, kept as labels", _DECISIONS),
)

LATEST_VERSION = MIGRATIONS[-1].version


def check_migrations(migrations: Sequence[Migration]) -> None:
    """Versions must run 1, 2, 3, ... with no gap, so "applied up to N" means one thing."""
    for expected, migration in enumerate(migrations, start=1):
        if migration.version != expected:
            raise ValueError(f"migration {migration.name!r} has version {migration.version}, "
                             f"expected {expected}")


def schema_version(connection: sqlite3.Connection) -> int:
    return int(connection.execute("PRAGMA user_version").fetchone()[0])


def refuse_newer(version: int, db_path: str, latest: int = LATEST_VERSION) -> None:
    if version > latest:
        raise SchemaTooNewError(
            f"{db_path}: database schema version {version} is newer than this triagebot "
            f"knows (up to {latest}); upgrade triagebot, or point --db / TRIAGE_DB at "
            f"another database")


class MigrationSteps(Protocol):
    """What running migrations asks of a backend's connection."""

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        """The backend's database errors (a migration failing with one is a StoreError)."""
        ...

    def version(self) -> int: ...

    def begin(self) -> None:
        """Start a transaction holding the lock writers and other migrating processes take."""
        ...

    def execute(self, statement: str) -> None: ...

    def set_version(self, version: int) -> None: ...

    def commit(self) -> None: ...

    def rollback(self) -> None:
        """Roll back if a transaction is open."""
        ...


def run_migrations(steps: MigrationSteps, db_path: str, migrations: Sequence[Migration]) -> list[int]:
    """Bring a database up to the last migration, one transaction each; the versions applied now.

    Each migration takes the lock and re-reads the version under it, so two processes opening a
    fresh database at once apply each migration exactly once; a failing one leaves nothing.
    """
    check_migrations(migrations)
    latest = migrations[-1].version if migrations else 0
    applied: list[int] = []
    for migration in migrations:
        if steps.version() >= migration.version:
            continue
        steps.begin()
        try:
            current = steps.version()
            refuse_newer(current, db_path, latest)
            if current >= migration.version:  # another process got there first
                steps.rollback()
                continue
            for statement in migration.statements:
                steps.execute(statement)
            steps.set_version(migration.version)
            steps.commit()
        except BaseException as error:
            steps.rollback()
            if isinstance(error, steps.errors):
                raise StoreError(f"{db_path}: migration {migration.version} "
                                 f"({migration.name}) failed: {error}") from error
            raise
        applied.append(migration.version)
    return applied


class _SqliteSteps:
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, connection: sqlite3.Connection, db_path: str) -> None:
        self.connection = connection
        self.db_path = db_path

    def version(self) -> int:
        return schema_version(self.connection)

    def begin(self) -> None:
        try:
            self.connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise StoreError(f"{self.db_path}: cannot lock the database to migrate it: "
                             f"{error}") from None

    def execute(self, statement: str) -> None:
        self.connection.execute(statement)

    def set_version(self, version: int) -> None:
        # PRAGMA does not take parameters; the version is an int from this module.
        self.connection.execute(f"PRAGMA user_version = {int(version)}")

    def commit(self) -> None:
        self.connection.execute("COMMIT")

    def rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")


def apply_migrations(connection: sqlite3.Connection, db_path: str,
                     migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
    """Bring the SQLite file up to the last migration; returns the versions applied now.

    `connection` must be in autocommit mode (isolation_level=None). Each migration takes the
    write lock with BEGIN IMMEDIATE (see `run_migrations`).
    """
    return run_migrations(_SqliteSteps(connection, db_path), db_path, migrations)
