"""Store stage: the whole `Store` on both backends — SQLite files in tmp_path and a real PostgreSQL
server the tests start (the `stores` fixture, tests/support/postgres.py) — and what is SQLite's own
(its file, its settings, its migrations runner)."""
from __future__ import annotations

import itertools
import os
import re
import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest

from triagebot.errors import TriageError
from triagebot.records.report import Report, report_from_json
from triagebot.records.threads import choose_root, parent_edges
from triagebot.store.migrations import (
    LATEST_VERSION,
    MIGRATIONS,
    Migration,
    apply_migrations,
    check_migrations,
)
from triagebot.store.protocol import (
    IncomingMessage,
    SchemaTooNewError,
    Store,
    StoreBusyError,
    StoreError,
    UnreadableRecord,
    is_synthetic_message_id,
    synthetic_message_id,
)
from triagebot.store.sql import SqlStore
from triagebot.store.sqlite import SqliteStore, open_private, resolve_db_path

RECEIVED = "2024-06-01T12:00:00+00:00"


def record(message_id: str, kind: str = "lkp-regression", testcase: str | None = "fsmark",
           date: str | None = "2024-05-01T10:00:00+08:00", **extra: object) -> dict:
    """A record in its schema-1 JSON form, as ingest_batch takes it from the parsing workers."""
    return {"schema": 1, "message_id": message_id, "in_reply_to": None,
            "subject": f"s {message_id}",
            "from": "kernel test robot <oliver.sang@intel.com>", "date": date,
            "source": {"kind": "mbox", "url": None}, "kind": kind, "commits": [],
            "testcase": testcase, **extra}


def report(message_id: str, **fields: object) -> Report:
    """The same record as a Report, as put_record takes it and get_record gives it back."""
    return report_from_json(record(message_id, **fields))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "triage.db"


@pytest.fixture
def store(stores):
    with stores.open() as opened:
        yield opened


def put(store: SqlStore, message_id: str, raw: bytes | None = None,
        list_name: str | None = "oe-lkp", received_at: str = RECEIVED) -> bool:
    if raw is None:
        raw = f"Message-ID: <{message_id}>\n\nbody\n".encode()
    return store.put_message(message_id, raw,
                             "mbox", list_name, received_at)


# -- messages ---------------------------------------------------------------------------------

def test_the_store_satisfies_the_protocol(store: SqlStore) -> None:
    assert isinstance(store, Store)


def test_same_message_id_twice_keeps_one_row_and_the_first_bytes(store: SqlStore, stores) -> None:
    assert put(store, "a@example.org", b"first copy\n") is True
    # Same id, other bytes and metadata (another list's copy): nothing changes.
    assert store.put_message("<a@example.org>", b"second copy\n", "lore", "linux-kernel",
                             "2025-01-01T00:00:00+00:00") is False
    assert store.count_messages() == 1
    assert store.get_raw("a@example.org") == b"first copy\n"
    message = store.get_message("a@example.org")
    assert message is not None
    assert (message.source_name, message.list_name, message.received_at) == \
        ("mbox", "oe-lkp", RECEIVED)
    assert stores.rows("SELECT count(*) FROM messages") == [(1,)]


def test_angle_brackets_and_spaces_are_not_part_of_the_id(store: SqlStore) -> None:
    put(store, " <b@example.org> ")
    assert store.has_message("b@example.org")
    assert store.has_message("<b@example.org>")
    assert store.existing_ids(["<b@example.org>", "c@example.org"]) == {"b@example.org"}
    with pytest.raises(ValueError):
        put(store, "<>")


@pytest.mark.parametrize("raw", [
    b"Subject: crlf\r\nMessage-ID: <x@y>\r\n\r\nline one\r\nline two\r\n",  # CRLF kept as is
    b"Subject: latin-1 \xe9\xe8\n\n\xff\xfe caf\xe9 \x80\x81\n",  # not UTF-8 at all
    bytes(range(256)) * 4,  # every byte value, NUL included
    b"no trailing newline\r",  # a lone CR at the very end
    b"\n",  # smallest message
], ids=["crlf", "non-utf8", "all-bytes", "lone-cr", "newline"])
def test_raw_bytes_round_trip_exactly(stores, raw: bytes) -> None:
    with stores.open() as store:
        store.put_message("r@example.org", raw, "eml", None, RECEIVED)
        assert store.get_raw("r@example.org") == raw
    with stores.open() as reopened:  # and from disk, not a cache
        assert reopened.get_raw("r@example.org") == raw
        assert [item.raw for item in reopened.iter_raw()] == [raw]


def test_raw_must_be_bytes(store: SqlStore) -> None:
    with pytest.raises(TypeError):
        store.put_message("t@example.org", "text, not bytes",  # type: ignore[arg-type]
                          "eml", None, RECEIVED)
    assert store.count_messages() == 0


def test_unknown_ids_give_none(store: SqlStore) -> None:
    assert store.get_raw("nobody@example.org") is None
    assert store.get_message("nobody@example.org") is None
    assert store.get_record("nobody@example.org") is None
    assert store.thread_of("nobody@example.org") == []
    assert store.thread_root("nobody@example.org") is None


def test_iter_raw_pages_through_every_message_in_insertion_order(store: SqlStore) -> None:
    ids = [f"m{index:04d}@example.org" for index in range(600)]  # more than one page of 256
    store.ingest_batch(IncomingMessage(message_id, f"raw {message_id}".encode(), "mbox", RECEIVED)
                       for message_id in ids)
    seen = []
    for message in store.iter_raw():
        seen.append(message.message_id)
        assert message.raw == f"raw {message.message_id}".encode()
        # Writing while iterating (what reparse does) must not disturb the iteration.
        store.put_record(message.message_id, report(message.message_id), "v2")
    assert seen == ids
    assert store.get_record_version(ids[-1]) == "v2"


def test_synthetic_message_id_is_stable_and_marked() -> None:
    first = synthetic_message_id(b"From: someone\n\nno id here\n")
    assert first == synthetic_message_id(b"From: someone\n\nno id here\n")
    assert first != synthetic_message_id(b"From: someone\n\nno id here!\n")
    assert first.startswith("sha256-") and first.endswith("@triagebot.invalid")
    assert "<" not in first and len(first) == len("sha256-") + 64 + len("@triagebot.invalid")
    assert is_synthetic_message_id(f"<{first}>")
    assert not is_synthetic_message_id("202305090905.aff4e0e6-oliver.sang@intel.com")


# -- batches ----------------------------------------------------------------------------------

def test_ingest_batch_reports_new_ids_and_a_repeat_changes_nothing(store: SqlStore, stores) -> None:
    batch = [
        IncomingMessage("p@example.org", b"parent", "lore", RECEIVED, list_name="oe-lkp",
                        record=record("p@example.org"), parser_version="v1"),
        IncomingMessage("c@example.org", b"child", "lore", RECEIVED, list_name="oe-lkp",
                        in_reply_to="<p@example.org>", references=("<p@example.org>",),
                        record=record("c@example.org", kind="reply"), parser_version="v1"),
        # The same id again inside the batch: the first copy wins.
        IncomingMessage("<p@example.org>", b"parent again", "lore", RECEIVED),
    ]
    assert store.ingest_batch(batch, cursor=("lore:oe-lkp", "feed-1")) == \
        ["p@example.org", "c@example.org"]

    def snapshot() -> list:
        return [stores.rows(f"SELECT * FROM {table} ORDER BY 1")
                for table in ("messages", "records", "thread_nodes", "thread_edges")]

    before = snapshot()
    changed = [IncomingMessage(item.message_id, b"other bytes", "openwall", RECEIVED,
                               record=record(item.message_id, kind="other"), parser_version="v9")
               for item in batch]
    assert store.ingest_batch(changed) == []
    assert snapshot() == before
    assert store.get_raw("p@example.org") == b"parent"
    assert store.get_record("c@example.org").kind == "reply"
    # Same date on both records, so the thread is ordered by id.
    assert store.thread_of("c@example.org") == ["c@example.org", "p@example.org"]
    assert store.thread_root("c@example.org") == "p@example.org"
    assert store.get_cursor("lore:oe-lkp") == "feed-1"


# -- records ----------------------------------------------------------------------------------

def test_record_upsert_replaces_one_row_and_keeps_the_raw(store: SqlStore, stores) -> None:
    put(store, "u@example.org", b"raw stays")
    first = report("u@example.org", testcase="fsmark", metrics=[
        {"name": "x", "base": 1.5, "base_stddev_percent": None, "change": 2.0, "change_unit": "percent",
         "head": 1.53, "head_stddev_percent": 4.0}])
    assert store.put_record("u@example.org", first, "parser-1") is True
    assert store.get_record("u@example.org") == first
    assert store.get_record_version("u@example.org") == "parser-1"

    # The same record by the same parser: no change reported, nothing rewritten.
    assert store.put_record("u@example.org", first, "parser-1") is False

    second = report("u@example.org", kind="lkp-improvement", testcase="fio",
                    stance_evidence="caf\u00e9 \u2014 \u00b1")
    assert store.put_record("<u@example.org>", second, "parser-2") is True
    assert store.get_record("u@example.org") == second
    assert store.get_record_version("u@example.org") == "parser-2"
    assert store.get_raw("u@example.org") == b"raw stays"
    rows = stores.rows("SELECT schema, kind, testcase, record_json FROM records")
    assert len(rows) == 1
    assert rows[0][:3] == (1, "lkp-improvement", "fio")
    assert "caf\u00e9" in rows[0][3]  # JSON text, readable with the sqlite3 shell or psql


def test_record_needs_a_stored_message_and_a_readable_row(store: SqlStore, stores) -> None:
    with pytest.raises(StoreError, match="no stored message ghost@example.org"):
        store.put_record("ghost@example.org", report("ghost@example.org"), "v1")
    put(store, "s@example.org")
    assert store.get_record("s@example.org") is None
    # A row another program wrote in a schema this triagebot does not know: an error naming the
    # database and the message, not a half-read record.
    store.put_record("s@example.org", report("s@example.org"), "v1")
    stores.write("UPDATE records SET record_json = ? WHERE message_id = ?", ('{"schema": 9}', "s@example.org"))
    unreadable = re.escape(f"{store.path}: the stored record of s@example.org cannot be read")
    with pytest.raises(UnreadableRecord, match=unreadable):
        store.get_record("s@example.org")


def test_list_records_filters(store: SqlStore) -> None:
    rows = [
        # id, list, kind, testcase, date (with offsets: the filter compares moments, not text)
        ("r1@x", "oe-lkp", "lkp-regression", "fsmark", "2024-03-01T01:00:00+05:00"),  # 02-29 20:00Z
        ("r2@x", "oe-lkp", "lkp-regression", "fio", "2024-03-02T00:00:00+00:00"),
        ("r3@x", "linux-kernel", "human-report", "fio", "2024-03-03T00:00:00-02:00"),
        ("r4@x", "linux-kernel", "reply", None, None),  # no date: its receipt time counts
        ("r5@x", "oe-lkp", "lkp-improvement", "fsmark", "2024-02-01T00:00:00+00:00"),
    ]
    for message_id, list_name, kind, testcase, date in rows:
        put(store, message_id, list_name=list_name, received_at="2024-03-10T00:00:00+00:00")
        store.put_record(message_id, report(message_id, kind=kind, testcase=testcase, date=date),
                         "v1")
    put(store, "norecord@x")  # a message without a record is not listed

    def ids(**filters: object) -> list[str]:
        return [item.key for item in store.list_records(**filters)]

    assert ids() == ["r3@x", "r2@x", "r1@x", "r5@x", "r4@x"]  # newest first, the undated after the dated
    assert ids(kind="lkp-regression") == ["r2@x", "r1@x"]
    assert ids(kind=["lkp-regression", "lkp-improvement"]) == ["r2@x", "r1@x", "r5@x"]
    assert ids(kind=[]) == []
    assert ids(list_name="linux-kernel") == ["r3@x", "r4@x"]
    assert ids(testcase="fio") == ["r3@x", "r2@x"]
    assert ids(since="2024-03-01") == ["r3@x", "r2@x", "r4@x"]  # r1 is 2024-02-29T20:00Z
    assert ids(since="2024-02-29T20:00:00+00:00") == ["r3@x", "r2@x", "r1@x", "r4@x"]
    assert ids(since="2024-03-09T00:00:00+00:00") == ["r4@x"]
    assert ids(kind="lkp-regression", testcase="fsmark", list_name="oe-lkp") == ["r1@x"]
    assert ids(list_name="oe-lkp", limit=2) == ["r2@x", "r1@x"]
    assert ids(kind="syzbot") == []


def test_record_keys_by_prefix_ignore_ascii_case_and_take_wildcards_literally(store: SqlStore) -> None:
    keys = ["sha256-abc1@triagebot.invalid", "sha256-abc2@triagebot.invalid", "sha256-ab_x@triagebot.invalid",
            "sha256-ab%y@triagebot.invalid", "other@x"]
    for key in keys:
        put(store, key)
        store.put_record(key, report(key), "v1")
    assert store.record_keys_starting("sha256-abc", 5) == keys[:2]
    assert store.record_keys_starting("SHA256-ABC", 5) == keys[:2]  # a short key typed in capitals
    assert store.record_keys_starting("sha256-abc", 1) == keys[:1]
    assert store.record_keys_starting("sha256-ab_", 5) == ["sha256-ab_x@triagebot.invalid"]  # `_` is no wildcard
    assert store.record_keys_starting("sha256-ab%", 5) == ["sha256-ab%y@triagebot.invalid"]  # nor is `%`
    assert store.record_keys_starting("sha256-z", 5) == []


# -- threads ----------------------------------------------------------------------------------

def test_reply_whose_parent_never_arrives_joins_its_siblings(store: SqlStore) -> None:
    put(store, "reply1@x")
    store.link_thread("reply1@x", "<root@x>", ["<root@x>"])
    put(store, "reply2@x")
    store.link_thread("reply2@x", "<reply1@x>", ["<root@x>", "<reply1@x>"])
    put(store, "alone@x")
    store.link_thread("alone@x", None, [])
    assert store.thread_of("reply2@x") == ["reply1@x", "reply2@x"]
    # The missing root is kept as a placeholder: asking by its id finds the thread.
    assert store.thread_of("root@x") == ["reply1@x", "reply2@x"]
    assert store.thread_root("reply2@x") == "root@x"
    assert store.thread_of("alone@x") == ["alone@x"]
    assert store.thread_root("alone@x") == "alone@x"


def test_child_stored_before_its_parent(store: SqlStore) -> None:
    put(store, "child@x", received_at="2024-01-01T00:00:00+00:00")
    store.link_thread("child@x", "parent@x", ["parent@x"])
    put(store, "other@x")
    store.link_thread("other@x", None, [])
    assert store.thread_of("child@x") == ["child@x"]
    put(store, "parent@x", received_at="2024-01-02T00:00:00+00:00")
    store.link_thread("parent@x", None, [])
    assert store.thread_of("parent@x") == ["child@x", "parent@x"]  # ordered by date, then id
    assert store.thread_root("child@x") == "parent@x"
    assert "other@x" not in store.thread_of("parent@x")


def test_late_message_merges_two_threads(store: SqlStore) -> None:
    # b and c each point at a parent the other does not know; d's References tie them.
    for message_id, in_reply_to, references in [("b@x", "a@x", ["a@x"]), ("c@x", "q@x", ["q@x"]),
                                                ("d@x", "q@x", ["a@x", "q@x"])]:
        put(store, message_id)
        store.link_thread(message_id, in_reply_to, references)
    assert store.thread_of("b@x") == ["b@x", "c@x", "d@x"]
    assert store.thread_root("c@x") == "a@x"  # d says q's parent is a


@pytest.mark.parametrize("headers", [
    # a replies to b and b to a: a loop across two messages
    [("a@x", "b@x", ["b@x"]), ("b@x", "a@x", ["a@x"])],
    # References names the message itself and repeats an id
    [("a@x", "b@x", ["b@x", "a@x", "b@x"]), ("b@x", None, ["a@x", "b@x"])],
    # a three-message cycle with a fourth hanging off it
    [("a@x", "c@x", ["c@x"]), ("b@x", "a@x", ["a@x"]), ("c@x", "b@x", ["b@x"]),
     ("d@x", "c@x", ["c@x"])],
], ids=["two-cycle", "self-and-repeat", "three-cycle"])
def test_loops_in_references_terminate_and_stay_one_thread(store: SqlStore, headers) -> None:
    for message_id, in_reply_to, references in headers:
        put(store, message_id)
        store.link_thread(message_id, in_reply_to, references)
    ids = sorted(message_id for message_id, _, _ in headers)
    assert sorted(store.thread_of("a@x")) == ids
    root = store.thread_root("a@x")
    assert root in ids
    assert all(store.thread_root(message_id) == root for message_id in ids)


def test_thread_root_and_members_do_not_depend_on_arrival_order(stores) -> None:
    headers = [
        ("root@x", None, []),
        ("r1@x", "root@x", ["root@x"]),
        ("r2@x", "r1@x", ["root@x", "r1@x"]),
        ("r3@x", "r1@x", ["root@x", "r1@x"]),
        ("lost@x", "gone@x", ["root@x", "gone@x"]),  # parent gone@x never arrives
    ]
    outcomes = set()
    for number, order in enumerate(itertools.permutations(headers)):
        with stores.open(f"order{number}") as store:
            for message_id, in_reply_to, references in order:
                put(store, message_id)
                store.link_thread(message_id, in_reply_to, references)
            outcomes.add((store.thread_root("r3@x"), tuple(sorted(store.thread_of("lost@x")))))
    assert outcomes == {("root@x", ("lost@x", "r1@x", "r2@x", "r3@x", "root@x"))}


def test_parent_edges_and_choose_root_units() -> None:
    # References is an ancestor chain; In-Reply-To names the direct parent.
    assert parent_edges("<c@x>", "<b@x>", ["<a@x>", "<b@x>"]) == [("b@x", "a@x"), ("c@x", "b@x")]
    # No In-Reply-To: the last reference is the parent.
    assert parent_edges("c@x", None, ["a@x", "b@x"]) == [("b@x", "a@x"), ("c@x", "b@x")]
    # Self-reference and repeats dropped; blank entries ignored.
    assert parent_edges("c@x", "c@x", ["a@x", "c@x", "a@x", " "]) == [("c@x", "a@x")]
    assert parent_edges("c@x", None, []) == []
    # Two parentless candidates: the one with more descendants wins.
    assert choose_root({"a", "b", "x", "y"}, [("x", "b"), ("y", "b"), ("y", "a")]) == "b"
    # A pure cycle: deterministic pick (smallest id among equals).
    assert choose_root({"b", "a"}, [("a", "b"), ("b", "a")]) == "a"


# -- cursors and atomicity --------------------------------------------------------------------

def test_cursor_survives_close_and_reopen(stores) -> None:
    with stores.open() as store:
        assert store.get_cursor("lore:oe-lkp") is None
        store.set_cursor("lore:oe-lkp", "2024-06-01T00:00:00Z|tag:abc")
        store.set_cursor("lore:oe-lkp", "2024-06-02T00:00:00Z|tag:def")
        store.set_cursor("openwall:oss-security", "2024/06/02")
    with stores.open() as reopened:
        assert reopened.get_cursor("lore:oe-lkp") == "2024-06-02T00:00:00Z|tag:def"
        assert reopened.get_cursor("openwall:oss-security") == "2024/06/02"
        assert reopened.get_cursor("mbox:other") is None


class Boom(Exception):
    pass


def test_exception_inside_transaction_leaves_neither_messages_nor_cursor(stores) -> None:
    with stores.open() as store:
        store.set_cursor("lore:oe-lkp", "old")
        with pytest.raises(Boom):
            with store.transaction():
                assert put(store, "t1@x") is True
                store.link_thread("t1@x", "t0@x", ["t0@x"])
                store.set_cursor("lore:oe-lkp", "new")
                assert store.get_cursor("lore:oe-lkp") == "new"  # visible inside
                raise Boom
        assert store.get_cursor("lore:oe-lkp") == "old"
        assert not store.has_message("t1@x")
        assert store.thread_of("t0@x") == []
    with stores.open() as reopened:
        assert reopened.get_cursor("lore:oe-lkp") == "old"
        assert reopened.count_messages() == 0


def test_failing_batch_leaves_neither_messages_nor_cursor(stores) -> None:
    with stores.open() as store:
        store.set_cursor("mbox:ext4", "0")
        batch = [IncomingMessage("ok@x", b"fine", "mbox", RECEIVED, record=record("ok@x")),
                 IncomingMessage("bad@x", b"fine", "mbox", RECEIVED, record={"no": "schema"})]
        with pytest.raises(ValueError):
            store.ingest_batch(batch, cursor=("mbox:ext4", "2"))
    with stores.open() as reopened:
        assert reopened.count_messages() == 0
        assert reopened.get_cursor("mbox:ext4") == "0"
        assert reopened.ingest_batch(batch[:1], cursor=("mbox:ext4", "1")) == ["ok@x"]
        assert reopened.get_cursor("mbox:ext4") == "1"


def test_failure_in_a_nested_call_rolls_back_only_that_call(store: SqlStore) -> None:
    with store.transaction():
        put(store, "kept@x")
        with pytest.raises(StoreError):
            store.put_record("missing@x", report("missing@x"), "v1")
        store.set_cursor("k", "v")
    assert store.has_message("kept@x") and store.get_cursor("k") == "v"


def test_a_database_error_in_a_nested_call_rolls_back_only_that_call(store: SqlStore) -> None:
    """A constraint the database itself refuses (PostgreSQL then refuses every statement of the
    transaction until a rollback): the caller's transaction goes on past it, on both backends."""
    with store.transaction():
        put(store, "kept@x")
        with pytest.raises(Exception, match="(?i)foreign key"):
            store.enqueue("missing@x", "parent", "#perf", {"text": "no such report"})
        store.set_cursor("k", "v")
    assert store.has_message("kept@x") and store.get_cursor("k") == "v" and store.outbox() == []


# -- concurrency ------------------------------------------------------------------------------

def hold_write_lock(stores, seconds: float, locked: threading.Event,
                    errors: list) -> None:
    """A second writer: takes the write lock, writes, holds it, then commits."""
    try:
        with stores.open() as other:
            with other.transaction():
                put(other, "from-other@x")
                locked.set()
                time.sleep(seconds)
    except BaseException as error:  # surfaced by the test, not lost in the thread
        errors.append(error)
        locked.set()


def test_second_writer_waits_for_the_lock_instead_of_failing(stores) -> None:
    with stores.open() as store:
        locked, errors = threading.Event(), []
        holder = threading.Thread(target=hold_write_lock, args=(stores, 0.6, locked, errors))
        holder.start()
        assert locked.wait(5)
        # A reader is not blocked by the writer (WAL, MVCC) and does not see its uncommitted row.
        assert not store.has_message("from-other@x")
        started = time.monotonic()
        assert put(store, "from-main@x") is True
        waited = time.monotonic() - started
        holder.join()
        assert errors == []
        assert waited >= 0.4, f"the write did not wait for the other writer ({waited:.3f}s)"
        both = {"from-other@x", "from-main@x"}
        assert store.existing_ids(both) == both


def test_writer_gives_up_after_the_busy_timeout_with_a_clear_error(stores) -> None:
    with stores.open(busy_timeout_ms=100) as store:
        locked, errors = threading.Event(), []
        holder = threading.Thread(target=hold_write_lock, args=(stores, 1.5, locked, errors))
        holder.start()
        assert locked.wait(5)
        started = time.monotonic()
        with pytest.raises(StoreBusyError, match=re.escape(store.path)) as raised:
            put(store, "from-main@x")
        waited = time.monotonic() - started
        holder.join()
        assert errors == []
        assert "100 ms" in str(raised.value)
        assert 0.05 <= waited < 1.4
        assert not store.has_message("from-main@x")
        assert store.has_message("from-other@x")


def test_connection_settings(db_path: Path) -> None:
    store = SqliteStore(db_path)
    connection = store.connection
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert connection.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert connection.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    with sqlite3.connect(db_path) as other:  # WAL is a property of the file, not the connection
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


# -- schema and migrations --------------------------------------------------------------------

EXPECTED_TABLES = {"messages", "records", "threads", "thread_nodes", "thread_edges", "cursors",
                   "plans", "runs", "verdicts", "aliases", "materials", "triage", "outbox"}


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as connection:
        return {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}


def user_version(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute("PRAGMA user_version").fetchone()[0]


def test_migrations_build_the_schema_from_an_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    with SqliteStore(empty) as store:
        assert put(store, "first@x")
    assert user_version(empty) == LATEST_VERSION
    assert EXPECTED_TABLES <= tables(empty)
    assert "notifications" not in tables(empty)  # reserved in migration 1, never written, dropped in 4
    # A path whose directory does not exist yet (the XDG default on a fresh machine).
    nested = tmp_path / "not" / "yet" / "triage.db"
    SqliteStore(nested).close()
    assert user_version(nested) == LATEST_VERSION
    # Reopening a current file applies nothing and keeps the data.
    with SqliteStore(empty) as reopened:
        assert reopened.has_message("first@x")
    assert user_version(empty) == LATEST_VERSION


def test_reserved_tables_enforce_their_links(store: SqlStore) -> None:
    with pytest.raises(Exception, match="(?i)foreign key"):  # foreign keys are on, on both
        store.database.execute("INSERT INTO plans (message_id, created_at, plan_json) VALUES (?, ?, ?)",
                               ("nobody@x", "now", "{}"))


def test_newer_schema_is_refused_with_the_path_and_left_untouched(db_path: Path) -> None:
    SqliteStore(db_path).close()
    with sqlite3.connect(db_path) as connection:
        connection.execute(f"PRAGMA user_version = {LATEST_VERSION + 5}")
        connection.execute("PRAGMA journal_mode = DELETE")
    before = db_path.read_bytes()
    with pytest.raises(SchemaTooNewError) as raised:
        SqliteStore(db_path)
    message = str(raised.value)
    assert str(db_path) in message
    assert f"version {LATEST_VERSION + 5}" in message and "newer" in message
    assert isinstance(raised.value, TriageError)
    assert db_path.read_bytes() == before  # not even switched to WAL


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"this is not sqlite, just text that is long enough to have a header" * 20)
    with pytest.raises(StoreError, match="notes.txt: not a triagebot database"):
        SqliteStore(path)


def test_migrations_apply_in_order_each_in_its_own_transaction(tmp_path: Path) -> None:
    path = tmp_path / "steps.db"
    steps = (Migration(1, "one", ("CREATE TABLE one (x)", "INSERT INTO one VALUES (1)")),
             Migration(2, "two", ("CREATE TABLE two (y)", "INSERT INTO two SELECT x + 1 FROM one")),
             Migration(3, "broken", ("CREATE TABLE three (z)", "INSERT INTO nowhere VALUES (1)")))
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        assert apply_migrations(connection, str(path), steps[:1]) == [1]
        assert apply_migrations(connection, str(path), steps[:2]) == [2]  # only the new one
        assert connection.execute("SELECT y FROM two").fetchall() == [(2,)]  # ran after one
        with pytest.raises(StoreError, match=r"steps\.db: migration 3 \(broken\) failed"):
            apply_migrations(connection, str(path), steps)
        # The broken migration left nothing behind: no table, version still 2.
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 2
        assert "three" not in {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master")}
        assert apply_migrations(connection, str(path), steps[:2]) == []
    finally:
        connection.close()


def test_migration_list_is_numbered_without_gaps() -> None:
    check_migrations(MIGRATIONS)
    with pytest.raises(ValueError, match="expected 2"):
        check_migrations([Migration(1, "a", ()), Migration(3, "c", ())])


# -- database location ------------------------------------------------------------------------

def test_resolve_db_path_precedence(tmp_path: Path) -> None:
    environ = {"TRIAGE_DB": "/env/t.db", "XDG_DATA_HOME": "/xdg", "HOME": "/home/u"}
    assert resolve_db_path("/cli/t.db", environ) == Path("/cli/t.db")
    assert resolve_db_path(None, environ) == Path("/env/t.db")
    assert resolve_db_path("", environ) == Path("/env/t.db")  # empty --db counts as unset
    assert resolve_db_path(None, {**environ, "TRIAGE_DB": ""}) == Path("/xdg/triagebot/triage.db")
    assert resolve_db_path(None, {"XDG_DATA_HOME": "relative", "HOME": "/home/u"}) == \
        Path("/home/u/.local/share/triagebot/triage.db")  # a relative XDG value is ignored
    assert resolve_db_path(None, {"HOME": "/home/u"}) == \
        Path("/home/u/.local/share/triagebot/triage.db")
    assert resolve_db_path("~/x.db", {"HOME": str(tmp_path)}).is_absolute()


# -- file modes (issue 13: the database held raw mail world-readable) ------------------------

@pytest.fixture
def permissive_umask():
    """umask 000: what triagebot creates must be private by itself, not by the caller's umask."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_database_files_are_0600_and_the_directories_made_for_them_0700(tmp_path: Path,
                                                                       permissive_umask: None) -> None:
    database = tmp_path / "data" / "triagebot" / "triage.db"
    with SqliteStore(database) as store:
        put(store, "mode@example.org")  # a write: the -wal and -shm files exist now
        files = [database, Path(f"{database}-wal"), Path(f"{database}-shm")]
        assert all(path.exists() for path in files)
        assert [_mode(path) for path in files] == [0o600, 0o600, 0o600]
    assert _mode(tmp_path / "data") == 0o700 and _mode(tmp_path / "data" / "triagebot") == 0o700
    with open_private(database.with_name("triage.db.host-lab.lock")) as handle:
        handle.write("")
    assert _mode(database.with_name("triage.db.host-lab.lock")) == 0o600


def test_an_existing_directory_and_file_keep_their_modes(tmp_path: Path, permissive_umask: None) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o750)
    os.chmod(shared, 0o750)
    SqliteStore(shared / "t.db").close()
    os.chmod(shared / "t.db", 0o640)  # an operator's choice
    SqliteStore(shared / "t.db").close()
    assert _mode(shared) == 0o750 and _mode(shared / "t.db") == 0o640


def test_the_rerun_host_lock_is_created_0600(tmp_path: Path, permissive_umask: None) -> None:
    from triagebot.reproduce.host_lock import host_lock

    with host_lock(tmp_path / "t.db", "lab-local"):
        pass
    assert _mode(tmp_path / "t.db.host-lab-local.lock") == 0o600


def test_a_bisection_is_saved_as_it_stands_and_read_back_in_order(store: SqliteStore) -> None:
    first = store.save_bisect("<bisect@lab>", {"status": "running", "steps": [{"commit": "abc"}]})
    # each step replaces the stored state; a second bisection of the same report is its own row
    assert store.save_bisect("bisect@lab", {"status": "found", "steps": [1, 2]}, first) == first
    second = store.save_bisect("bisect@lab", {"status": "running", "steps": []})
    stored = store.bisects("bisect@lab")
    assert [item["bisect_id"] for item in stored] == [first, second]
    assert stored[0]["status"] == "found" and stored[0]["steps"] == [1, 2]
    assert store.bisects("other@lab") == []
    with pytest.raises(TriageError, match="no bisection 999"):
        store.save_bisect("bisect@lab", {"status": "found"}, 999)
