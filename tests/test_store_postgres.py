"""Store stage: choosing a backend by URL, PostgreSQL's own schema and errors, `triage db copy`
between SQLite and a real PostgreSQL server the tests start (tests/support/postgres.py), and one
transaction shared with other work on the store's connection (what a job engine needs)."""
from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from triagebot.errors import TriageError
from triagebot.store.copy import TABLES, CopyRefused, copy_store
from triagebot.store.location import LocationError, StoreLocation, parse_location, resolve_location
from triagebot.store.migrations import LATEST_VERSION, MIGRATIONS
from triagebot.store.postgres_migrations import POSTGRES_MIGRATIONS
from triagebot.store.protocol import IncomingMessage, SchemaTooNewError, StoreError
from triagebot.store.sqlite import SqliteStore

RECEIVED = "2026-12-01T00:00:00+00:00"


def triage(*args: str, cwd: Path = PROJECT, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          cwd=cwd, stdin=subprocess.DEVNULL, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(PROJECT), **env})


# -- which store a value names ----------------------------------------------------------------

def test_a_path_is_sqlite_and_a_url_names_its_backend(tmp_path: Path) -> None:
    assert parse_location(str(tmp_path / "t.db")) == StoreLocation(path=tmp_path / "t.db")
    assert parse_location("sqlite:///var/lib/t.db").path == Path("/var/lib/t.db")
    assert parse_location("sqlite:////var/lib/t.db").path == Path("/var/lib/t.db")
    for url in ("postgresql://triage@db.example.org:5433/triage", "postgres://db.example.org/triage",
                "postgresql:///triage?host=/run/postgresql"):
        location = parse_location(url)
        assert location.backend == "postgresql" and location.url == url and location.path is None
    assert resolve_location(None, {"TRIAGE_DB": "postgres://h/d", "HOME": "/home/u"}).backend == "postgresql"
    assert resolve_location(None, {"HOME": "/home/u"}).path == Path("/home/u/.local/share/triagebot/triage.db")
    # files beside the database (host locks, plots): beside the file, or a local place for a server
    assert parse_location(str(tmp_path / "t.db")).local_path == tmp_path / "t.db"
    local = resolve_location("postgresql://u:pw@db/triage", {"XDG_DATA_HOME": str(tmp_path)}).local_path
    assert local.parent == tmp_path / "triagebot" / "postgresql" and "pw" not in str(local)


@pytest.mark.parametrize("value, says", [
    ("mysql://u:secret@db/triage", "unknown database URL scheme 'mysql'"),
    ("file:///tmp/t.db", "unknown database URL scheme 'file'"),
    ("sqlite://host/t.db", "a sqlite URL names a local file"),
])
def test_a_url_of_another_scheme_is_refused_in_one_line(value: str, says: str) -> None:
    with pytest.raises(LocationError, match=re.escape(says)) as raised:
        parse_location(value, "TRIAGE_DB")
    assert isinstance(raised.value, TriageError) and "\n" not in str(raised.value)
    assert "secret" not in str(raised.value)


def test_the_commands_refuse_an_unknown_scheme_and_make_no_folder(tmp_path: Path) -> None:
    """Before: TRIAGE_DB=postgresql://… made a folder `./postgresql:` with a SQLite file in it."""
    result = triage("list", cwd=tmp_path, TRIAGE_DB="mysql://u:secret@db/triage")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "triage list: TRIAGE_DB=mysql://u:***@db/triage: unknown database URL scheme 'mysql'; give a file path, "
        "sqlite:///PATH or postgresql://[USER@]HOST[:PORT]/DBNAME"]
    ingest = triage("ingest", "--db", "redis://localhost/0", str(PROJECT / "fixtures"), cwd=tmp_path)
    assert ingest.returncode == 1 and "unknown database URL scheme 'redis'" in ingest.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_postgresql_url_opens_the_server_and_writes_nothing_here(tmp_path: Path, postgres_server) -> None:
    url = postgres_server.url(postgres_server.new_schema(), scheme="postgres")
    migrated = triage("db", "migrate", "--db", url, cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout.strip().endswith(f"schema version {LATEST_VERSION} (postgresql)")
    listed = triage("list", cwd=tmp_path, TRIAGE_DB=url)
    assert listed.returncode == 0 and listed.stdout == "(no records)\n" and listed.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_server_is_one_line_naming_it_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://triage:hunter2@/triage?host={tmp_path}/no-server-here"
    with pytest.raises(StoreError, match=r"cannot connect") as raised:
        parse_location(url).open()
    assert "hunter2" not in str(raised.value) and f"{tmp_path}/no-server-here" in str(raised.value)
    result = triage("list", "--db", url, cwd=tmp_path)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1 and "hunter2" not in result.stderr


def test_a_lost_connection_is_a_store_error_naming_the_database(postgres_server) -> None:
    url = postgres_server.url(postgres_server.new_schema())
    with parse_location(url).open() as store:
        store.put_message("a@x", b"raw", "eml", None, RECEIVED)
        backend = store.connection.info.backend_pid
        with parse_location(url).open() as other:  # an operator ends the session, a failover, ...
            other.database.execute("SELECT pg_terminate_backend(?)", (backend,))
        with pytest.raises(StoreError, match=re.escape(str(parse_location(url)))):
            store.has_message("a@x")
        with pytest.raises(StoreError):
            store.put_message("b@x", b"raw", "eml", None, RECEIVED)
    with parse_location(url).open() as reopened:
        assert reopened.existing_ids(["a@x", "b@x"]) == {"a@x"}


# -- PostgreSQL's schema ----------------------------------------------------------------------

def test_the_postgresql_migrations_follow_sqlites_one_for_one() -> None:
    assert [(m.version, m.name) for m in POSTGRES_MIGRATIONS] == [(m.version, m.name) for m in MIGRATIONS]


def _sqlite_columns(path: Path) -> dict[str, set[str]]:
    with sqlite3.connect(path) as connection:
        names = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: {row[1] for row in connection.execute(f"PRAGMA table_info({name})")} for name in names}


def test_both_schemas_hold_the_same_tables_and_the_copy_moves_every_column(tmp_path: Path, postgres_server) -> None:
    SqliteStore(tmp_path / "t.db").close()
    sqlite_columns = _sqlite_columns(tmp_path / "t.db")
    schema = postgres_server.new_schema()
    with parse_location(postgres_server.url(schema)).open() as store:
        rows = store.database.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ?",
            (schema,)).fetchall()
    postgres_columns: dict[str, set[str]] = {}
    for table, column in rows:
        postgres_columns.setdefault(table, set()).add(column)
    assert postgres_columns.pop("triagebot_schema") == {"version"}  # PostgreSQL's user_version
    copied = {table.name: set(table.columns) for table in TABLES}
    # SQLite's rowid is implicit; PostgreSQL's is a column of that name
    assert {name: columns - {"rowid"} for name, columns in postgres_columns.items()} == sqlite_columns
    assert {name: columns - {"rowid"} for name, columns in copied.items()} == sqlite_columns
    assert copied == postgres_columns


def test_a_newer_schema_is_refused_and_left_untouched(postgres_server) -> None:
    url = postgres_server.url(postgres_server.new_schema())
    parse_location(url).open().close()
    with parse_location(url).open() as store:
        store.database.execute("UPDATE triagebot_schema SET version = ?", (LATEST_VERSION + 5,))
    with pytest.raises(SchemaTooNewError, match=f"version {LATEST_VERSION + 5} is newer") as raised:
        parse_location(url).open()
    assert "triage" in str(raised.value) and "postgresql://" in str(raised.value)


# -- one transaction with other work on the same connection (a job engine) -------------------

def test_other_work_on_the_connection_commits_and_rolls_back_with_the_state_change(postgres_server) -> None:
    """A job engine keeping its jobs in the same database (procrastinate) inserts its job row on
    `store.connection` inside `store.transaction()`: the job, the state change and the outbox rows
    are one transaction. Here the job table is a plain one of the test's."""
    with parse_location(postgres_server.url(postgres_server.new_schema())).open() as store:
        store.connection.execute("CREATE TABLE jobs (id serial PRIMARY KEY, message_id text NOT NULL)")
        store.put_message("r@x", b"Message-ID: <r@x>\n\nbody\n", "eml", None, RECEIVED)
        store.start_triage("r@x", "#perf")

        class Crash(Exception):
            pass

        with pytest.raises(Crash):
            with store.transaction():
                store.set_triage("r@x", "planned", host="lab-1")
                store.enqueue("r@x", "plan", "#perf", {"text": "plan"})
                store.connection.execute("INSERT INTO jobs (message_id) VALUES (%s)", ("r@x",))
                raise Crash
        assert store.get_triage("r@x").state == "new" and store.outbox() == []
        assert store.connection.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
        with store.transaction():
            store.set_triage("r@x", "planned", host="lab-1")
            store.enqueue("r@x", "plan", "#perf", {"text": "plan"})
            store.connection.execute("INSERT INTO jobs (message_id) VALUES (%s)", ("r@x",))
        assert store.get_triage("r@x").state == "planned" and len(store.outbox()) == 1
        assert store.connection.execute("SELECT message_id FROM jobs").fetchall() == [("r@x",)]


# -- triage db copy ---------------------------------------------------------------------------

def fill(store) -> None:
    """Something in every table the schema holds."""
    mails = [IncomingMessage(f"m{index}@x",
                             f"Message-ID: <m{index}@x>\n\nbody {index} \xe9\n".encode() + bytes([0, 255]),
                             "mbox", RECEIVED, list_name="linux-ext4",
                             in_reply_to=f"m{index - 1}@x" if index % 3 else None,
                             record={"schema": 1, "message_id": f"m{index}@x", "in_reply_to": None,
                                     "kind": "lkp-regression", "testcase": "fsmark", "commits": [],
                                     "from": "kernel test robot <oliver.sang@intel.com>",
                                     "date": f"2026-11-{index + 1:02d}T10:00:00+00:00",
                                     "subject": f"caf\u00e9 {index}", "source": {"kind": "mbox", "url": None}},
                             parser_version="v1")
             for index in range(12)]
    store.ingest_batch(mails, cursor=("mbox:ext4", "12"))
    store.add_alias("2026-11-01 subject sender", "m0@x")
    store.put_material("https://download.01.org/x/", "job.yaml", b"testcase: fsmark\n\x00")
    store.quarantine_message(b"Message-ID: <bad@x>\n\n\x00\x00", source_name="lore", error="binary data",
                             parser_version="v1")
    for index in (4, 1, 7):
        store.start_triage(f"m{index}@x", "#perf")
    store.set_triage("m4@x", "planned", plan={"host": "lab-1"}, host="lab-1", note="queued")
    store.enqueue("m4@x", "parent", "#perf", {"text": "parent"})
    store.enqueue("m4@x", "plan", "#perf", {"text": "plan \u2014 caf\u00e9"})
    store.enqueue("m1@x", "parent", "#perf", {"text": "other"})
    [first, *_] = store.outbox()
    store.mark_sending(first.outbox_id)
    store.mark_sent(first.outbox_id, "C1", "1700000000.000100")
    store.save_run("m4@x", {"host": "lab-1"}, {"status": "done", "samples": [1.0, 2.5],
                                               "verdict": {"outcome": "confirmed"}})
    store.save_bisect("m4@x", {"status": "done", "steps": [{"commit": "abc", "outcome": "confirmed"}]})
    store.add_move("m4@x", "fixed", "m5@x", "Fixes: abc1234 in caf\u00e9")
    store.link_report("m7@x", "m4@x", "also-seen", "same culprit (sha)")
    store.mark_mail_sending(store.enqueue_mail("m4@x", "reply-1@x", b"Subject: Re\r\n\r\n\xe2\x88\x92\r\n",
                                               "alice").reply_id)
    store.record_action("digest-1", "m4@x", "mark-invalid", "U0MARKER", "marked invalid (was planned)")
    fix_test = store.queue_fix_test("m4@x", "v2:m5@x", "m5@x")
    store.set_fix_test(fix_test, "done", {"version": 2, "recovery": {"call": "recovers"}})
    store.queue_fix_test("m4@x", "v3:m6@x", "m6@x")
    store.record_decision("decision-1", "m3@x", "dismiss", "U0MARKER", "slack", "human-perf-complaint",
                          "kind human-perf-complaint at 50% (floor 60%)", "a complaint, no change named")


def answers(store) -> tuple:
    """What the store says about its contents, through the protocol (orders included)."""
    return ([(message.message_id, message.raw, message.received_at) for message in store.iter_raw()],
            [(item.key, item.report) for item in store.list_records()],
            store.thread_of("m5@x"), store.thread_root("m5@x"), store.resolve_alias("2026-11-01 subject sender"),
            store.get_cursor("mbox:ext4"), store.get_material("https://download.01.org/x/", "job.yaml"),
            [(row.key, row.error, row.raw) for row in store.iter_quarantined()],
            store.triage_in("new", "planned"), store.outbox(), store.latest_run("m4@x"), store.bisects("m4@x"),
            store.reports_to_admit(("lkp-regression",), "2026-01-01T00:00:00+00:00"),
            store.moves_of("m4@x"), store.links_of("m4@x"), store.mail_of("m4@x"), store.actions_of("m4@x"),
            store.fix_tests("m4@x"), store.fix_tests(status="queued"))


def table_rows(store) -> dict[str, list]:
    return {table.name: [tuple(bytes(value) if isinstance(value, memoryview) else value for value in row)
                         for row in store.database.execute(
                             f"SELECT {', '.join(table.columns)} FROM {table.name} ORDER BY {table.order}")]
            for table in TABLES}


def test_db_copy_moves_every_table_there_and_back(tmp_path: Path, postgres_server) -> None:
    original = tmp_path / "original.db"
    with SqliteStore(original) as store:
        fill(store)
        expected_answers, expected_rows = answers(store), table_rows(store)
    assert all(expected_rows.values())  # every table holds something
    url = postgres_server.url(postgres_server.new_schema())
    there = triage("db", "copy", str(original), url)
    assert there.returncode == 0, there.stderr
    lines = there.stdout.splitlines()
    assert lines[0].split() == ["table", "from", "to"]
    assert [line.split()[0] for line in lines[1:-1]] == [table.name for table in TABLES]
    assert all(line.split()[1] == line.split()[2] and line.endswith("ok") for line in lines[1:-1])
    assert "every count matches" in lines[-1]
    with parse_location(url).open() as copy:
        assert answers(copy) == expected_answers and table_rows(copy) == expected_rows
        # ids go on past the copied ones: a new notification sorts after the old ones
        copy.enqueue("m7@x", "parent", "#perf", {"text": "new"})
        assert copy.outbox()[-1].outbox_id == max(row.outbox_id for row in expected_answers[9]) + 1
    back = tmp_path / "back.db"
    assert triage("db", "copy", url, f"sqlite://{back}").returncode == 0
    with SqliteStore(back) as copy:
        assert table_rows(copy)["messages"] == expected_rows["messages"]
        assert len(table_rows(copy)["outbox"]) == len(expected_rows["outbox"]) + 1


def test_db_copy_refuses_a_target_that_holds_a_store_unless_told(tmp_path: Path, postgres_server) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    with SqliteStore(source) as store:
        fill(store)
    with SqliteStore(target) as store:
        store.put_message("kept@x", b"kept", "eml", None, RECEIVED)
    refused = triage("db", "copy", str(source), str(target))
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        f"triage db: {target}: the target is not empty (messages 1); give --replace to empty it first"]
    with SqliteStore(target) as store:
        assert [message.message_id for message in store.iter_raw()] == ["kept@x"]
    url = postgres_server.url(postgres_server.new_schema())
    assert triage("db", "copy", str(target), url).returncode == 0
    replaced = triage("db", "copy", "--replace", str(source), url)
    assert replaced.returncode == 0, replaced.stderr
    with parse_location(url).open() as store, SqliteStore(source) as original:
        assert table_rows(store) == table_rows(original)
    with SqliteStore(source) as store, pytest.raises(CopyRefused, match="the target is the source"):
        copy_store(store, store)


def test_db_copy_exits_non_zero_when_a_count_differs(tmp_path: Path, postgres_server) -> None:
    """A target that loses rows on the way (here a trigger dropping aliases) is caught by the counts."""
    source = tmp_path / "source.db"
    with SqliteStore(source) as store:
        fill(store)
    url = postgres_server.url(postgres_server.new_schema())
    with parse_location(url).open() as target:
        target.connection.execute("CREATE FUNCTION drop_row() RETURNS trigger LANGUAGE plpgsql"
                                  " AS 'BEGIN RETURN NULL; END'")
        target.connection.execute("CREATE TRIGGER lose_aliases BEFORE INSERT ON aliases"
                                  " FOR EACH ROW EXECUTE FUNCTION drop_row()")
    result = triage("db", "copy", str(source), url)
    assert result.returncode == 1
    [aliases] = [line.split() for line in result.stdout.splitlines() if line.startswith("aliases ")]
    assert aliases == ["aliases", "1", "0", "MISMATCH"]
    assert "counts differ in aliases" in result.stderr


def test_processes_opening_a_fresh_database_at_once_migrate_it_once(postgres_server) -> None:
    """Each migration runs under the write lock and reads the version again under it."""
    url = postgres_server.url(postgres_server.new_schema())
    script = ("import sys; from triagebot.store.location import parse_location\n"
              "with parse_location(sys.argv[1]).open() as store: store.set_cursor(sys.argv[2], 'x')\n")
    children = [subprocess.Popen([sys.executable, "-c", script, url, f"c{index}"], cwd=PROJECT,
                                 env={**os.environ, "PYTHONPATH": str(PROJECT)}, stderr=subprocess.PIPE, text=True)
                for index in range(4)]
    errors = [child.communicate(timeout=120)[1] for child in children]
    assert [child.returncode for child in children] == [0, 0, 0, 0], errors
    with parse_location(url).open() as store:
        assert store.database.execute("SELECT version FROM triagebot_schema").fetchall() == [(LATEST_VERSION,)]
        assert [store.get_cursor(f"c{index}") for index in range(4)] == ["x"] * 4
