"""The quarantine: a message the parser cannot read is kept raw with its error, never stops a batch,
an ingest or a reparse, is kept once, is listed and counted, and is stored once a parser reads it.

Hostile inputs are built here: a message with NUL bytes in its body (the parser refuses it as
binary data, today and after any upgrade), the issue's crash classes (an 8-bit byte in a
Content-Disposition filename, `charset=undefined`), and a parser bug injected by monkeypatching.
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from triagebot.http_client.protocol import SourceError
from triagebot.ingest import batch as batch_module
from triagebot.ingest import runner
from triagebot.ingest.files import FileSource
from triagebot.ingest.protocol import Batch, FetchedMessage
from triagebot.ingest.runner import PARSER_VERSION, IngestResult, ingest_once, store_batch
from triagebot.parse import report as report_module
from triagebot.store.protocol import IncomingMessage, synthetic_message_id
from triagebot.store.quarantine import quarantine_key
from triagebot.store.sqlite import SqliteStore

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def mail(message_id: str | None, subject: str, body: bytes = b"Looks good to me.\n", *,
         headers: bytes = b"Content-Type: text/plain; charset=utf-8\n") -> bytes:
    lines = [b"From: Dev <dev@example.org>", b"To: linux-ext4@vger.kernel.org", b"Subject: " + subject.encode(),
             b"Date: Thu, 03 Dec 2026 10:00:00 +0000"]
    if message_id:
        lines.append(f"Message-ID: <{message_id}>".encode())
    return b"\n".join(lines) + b"\nMIME-Version: 1.0\n" + headers + b"\n" + body


def poison(message_id: str | None = "poison@example.org") -> bytes:
    """A mail whose body holds NUL bytes: the parser refuses it as binary data."""
    return mail(message_id, "poison", b"text\x00\x00\x00 with NUL bytes\n" * 4)


def cafe(message_id: str = "cafe@example.org") -> bytes:
    """Issue 13 finding 1: an 8-bit byte in a part's Content-Disposition (an AttributeError in the parser)."""
    return mail(message_id, "attachment", b"--b\nContent-Type: text/plain\n\nhello\n--b\nContent-Type: text/plain\n"
                b"Content-Disposition: attachment; filename=\"caf\xc3\xa9.txt\"\n\ndata\n--b--\n",
                headers=b'Content-Type: multipart/mixed; boundary="b"\n')


def undefined_charset(message_id: str = "undefined@example.org") -> bytes:
    """Issue 13 finding 1: `charset=undefined` (a UnicodeError, not a LookupError, in the parser)."""
    return mail(message_id, "undefined charset", body=b"caf\xe9\n",
                headers=b"Content-Type: text/plain; charset=undefined\n")


def mbox(path: Path, messages: list[bytes]) -> Path:
    path.write_bytes(b"".join(b"From dev@example.org Thu Dec  3 10:00:00 2026\n" + raw.rstrip(b"\n") + b"\n\n"
                              for raw in messages))
    return path


def fetched(raw: bytes, url: str | None = None) -> FetchedMessage:
    return FetchedMessage(raw, "lore", source_url=url, list_name="linux-ext4")


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          cwd=PROJECT, stdin=subprocess.DEVNULL, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(PROJECT)})


# -- the key ---------------------------------------------------------------------------------

def test_the_key_is_the_message_id_when_the_headers_name_one_else_the_hash_of_the_bytes() -> None:
    assert quarantine_key(poison("p1@example.org")) == "p1@example.org"
    folded = b"From: a@b\nMessage-ID:\n <folded@example.org>\n\nbody\n"
    assert quarantine_key(folded) == "folded@example.org"
    no_id = poison(None)
    assert quarantine_key(no_id) == synthetic_message_id(no_id)
    in_body_only = b"From: a@b\nSubject: x\n\nMessage-ID: <in-body@example.org>\n"
    assert quarantine_key(in_body_only) == synthetic_message_id(in_body_only)
    for hostile in (b"", b"\x00" * 100, b"Message-ID: <" + b"a" * 5000 + b">\n\n", b"\xff\xfe" * 1000,
                    b"Message-ID: <with space@x>\n\n"):
        assert quarantine_key(hostile) == synthetic_message_id(hostile)


# -- the store -------------------------------------------------------------------------------

def test_a_quarantined_message_is_kept_once_and_leaves_when_it_is_stored(stores) -> None:
    raw = poison()
    with stores.open(clock=lambda: NOW) as store:
        key = store.quarantine_message(raw, source_name="lore", error="binary data", parser_version="v1",
                                       received_at=NOW, list_name="linux-ext4", source_url="http://x/p/")
        assert key == "poison@example.org"
        again = store.quarantine_message(raw, source_name="lore", error="other", parser_version="v2")
        assert again is None and store.count_quarantined() == 1
        [row] = store.quarantined()
        assert (row.key, row.source_name, row.list_name, row.source_url, row.error, row.parser_version,
                row.attempts, row.size, row.raw) == (key, "lore", "linux-ext4", "http://x/p/", "binary data", "v1",
                                                     1, len(raw), None)
        assert store.get_quarantined(key).raw == raw and [item.raw for item in store.iter_quarantined()] == [raw]
        store.still_quarantined(key, "still\nbinary", "v2")
        row = store.get_quarantined(key)
        assert (row.error, row.parser_version, row.attempts) == ("still binary", "v2", 2)
        # a copy that parses, stored as a normal message, takes it out of the quarantine
        store.ingest_batch([IncomingMessage(key, b"a good copy", "lore", NOW)])
        assert store.count_quarantined() == 0
        # and a message stored already is never quarantined
        assert store.quarantine_message(raw, source_name="lore", error="x", parser_version="v1") is None
        assert store.count_quarantined() == 0


def test_an_older_database_gains_the_quarantine_table(tmp_path: Path) -> None:
    from triagebot.store.migrations import LATEST_VERSION, MIGRATIONS, apply_migrations

    database = tmp_path / "v4.db"
    connection = sqlite3.connect(database, isolation_level=None)
    apply_migrations(connection, str(database), MIGRATIONS[:4])
    connection.execute("INSERT INTO messages VALUES "
                       "('old@x', 'lore', NULL, NULL, '2026-01-01T00:00:00+00:00', 1, x'61')")
    connection.close()
    with SqliteStore(database) as store:
        assert store.count_messages() == 1 and store.count_quarantined() == 0
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION


# -- ingest ----------------------------------------------------------------------------------

def test_a_batch_with_an_unreadable_message_stores_the_others_and_quarantines_it(stores) -> None:
    messages = (fetched(mail("good-1@example.org", "one")), fetched(poison(), "http://lore/poison/"),
                fetched(mail("good-2@example.org", "two")))
    with stores.open() as store:
        result = IngestResult()
        assert store_batch(store, "lore:test", Batch(messages, cursor="after-three"), jobs=1, clock=lambda: NOW,
                           result=result)
        assert sorted(result.new_ids) == ["good-1@example.org", "good-2@example.org"]
        assert result.quarantined == ["poison@example.org"] and result.seen == 3
        assert store.get_cursor("lore:test") == "after-three"  # the batch is done: nothing to read again
        [row] = store.quarantined()
        assert row.error == "binary data, not a mail message, archive page or text"
        assert (row.source_url, row.list_name, row.parser_version, row.received_at) == (
            "http://lore/poison/", "linux-ext4", PARSER_VERSION, "2026-12-03T12:00:00+00:00")
        assert store.get_quarantined("poison@example.org").raw == poison()
        assert any("quarantined as <poison@example.org>: binary data" in line for line in result.events)
        # served again (a refetched thread): not kept twice, not announced twice
        again = IngestResult()
        store_batch(store, "lore:test", Batch(messages, cursor="again"), jobs=1, clock=lambda: NOW, result=again)
        assert again.new_ids == [] and again.quarantined == [] and store.count_quarantined() == 1


def _break_the_parser(monkeypatch: pytest.MonkeyPatch, marker: bytes) -> None:
    """A parser bug: any message holding `marker` raises RuntimeError (in workers too: they fork)."""
    real = report_module.parse_message

    def buggy(raw, source):
        if marker in raw:
            raise RuntimeError("parser bug: index out of range")
        return real(raw, source)

    monkeypatch.setattr(batch_module, "parse_message", buggy)
    monkeypatch.setattr(report_module, "parse_message", buggy)


@pytest.mark.parametrize("jobs, count", [(1, 5), (2, batch_module.PARALLEL_FROM + 10)])
def test_a_parser_bug_on_one_message_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   jobs: int, count: int) -> None:
    _break_the_parser(monkeypatch, b"TRIGGER")
    messages = tuple(fetched(mail(f"m{index}@example.org", f"message {index}",
                                  b"TRIGGER\n" if index == 3 else b"fine\n")) for index in range(count))
    with SqliteStore(tmp_path / "t.db") as store:
        result = IngestResult()
        store_batch(store, "lore:test", Batch(messages, cursor="c"), jobs=jobs, clock=lambda: NOW, result=result)
        assert len(result.new_ids) == count - 1 and result.quarantined == ["m3@example.org"]
        expected = "parser failed: RuntimeError: parser bug: index out of range"
        assert store.get_quarantined("m3@example.org").error == expected
        assert store.get_cursor("lore:test") == "c"


def test_a_record_the_store_refuses_quarantines_that_message_only(stores, monkeypatch: pytest.MonkeyPatch) -> None:
    real = runner.report_to_json

    def render(report):
        record = real(report)
        if record.get("subject") == "refused":
            record["schema"] = "not a number"  # the store refuses it (ValueError) in ingest_batch
        return record

    monkeypatch.setattr(runner, "report_to_json", render)
    messages = (fetched(mail("a@example.org", "fine")), fetched(mail("b@example.org", "refused")),
                fetched(mail("c@example.org", "fine too")))
    with stores.open() as store:
        result = IngestResult()
        store_batch(store, "lore:test", Batch(messages, cursor="c"), jobs=1, clock=lambda: NOW, result=result)
        assert sorted(result.new_ids) == ["a@example.org", "c@example.org"]
        assert result.quarantined == ["b@example.org"]
        assert "it cannot be stored: ValueError: record for b@example.org has no integer 'schema'" in \
            store.get_quarantined("b@example.org").error


class _Exploding:
    key = "test:exploding"

    def poll(self, cursor):
        raise ZeroDivisionError("division by zero in a source")


def test_a_source_raising_anything_fails_its_poll_with_one_line(stores) -> None:
    with stores.open() as store:
        store.set_cursor("test:exploding", "where it was")
        with pytest.raises(SourceError) as caught:
            ingest_once(_Exploding(), store, jobs=1)
        assert str(caught.value) == "test:exploding: the poll failed: ZeroDivisionError: division by zero in a source"
        assert store.get_cursor("test:exploding") == "where it was"


def test_a_stop_between_messages_drops_the_batch_in_hand_and_loses_nothing(stores, tmp_path: Path) -> None:
    path = mbox(tmp_path / "five.mbox", [mail(f"s{index}@example.org", f"s{index}") for index in range(5)])
    asked = []

    def stop_at_the_third_question() -> bool:
        asked.append(1)
        return len(asked) >= 3

    with stores.open() as store:
        source = FileSource(path)
        stopped = ingest_once(source, store, jobs=1, should_stop=stop_at_the_third_question)
        assert stopped.stopped and stopped.new_ids == [] and store.count_messages() == 0
        assert store.get_cursor(source.key) is None  # the cursor stayed before the batch
        resumed = ingest_once(FileSource(path), store, jobs=1, should_stop=lambda: False)
        assert not resumed.stopped and len(resumed.new_ids) == 5


# -- the commands ----------------------------------------------------------------------------

def test_ingest_of_an_mbox_with_a_poison_message_stores_the_rest_and_lists_it(stores, tmp_path: Path) -> None:
    database = stores.url()  # a file, or a postgresql:// URL: the commands take either
    path = mbox(tmp_path / "three.mbox", [mail("one@example.org", "one"), poison(), mail("two@example.org", "two")])
    result = triage("ingest", "--db", str(database), "--jobs", "1", str(path))
    assert result.returncode == 0, result.stderr
    assert f"{path}: 2 new of 3 messages, 1 quarantined" in result.stdout
    assert "1 message quarantined: see triage list --failed" in result.stderr
    assert "Traceback" not in result.stderr
    with stores.open() as store:
        assert store.count_messages() == 2 and store.count_quarantined() == 1
    listed = triage("list", "--db", str(database), "--failed")
    [line] = listed.stdout.splitlines()
    assert line.startswith("<poison@example.org>  20") and "  mbox  binary data, not a mail message" in line
    [as_json] = [json.loads(line) for line in triage("list", "--db", str(database), "--failed", "--json")
                 .stdout.splitlines()]
    assert as_json["key"] == "poison@example.org" and as_json["parser_version"] == PARSER_VERSION
    shown = triage("show", "--db", str(database), "poison@example.org")
    assert shown.returncode == 1 and "poison@example.org: quarantined since" in shown.stderr
    status = triage("status", "--db", str(database), "--rules", str(PROJECT / "rules"))
    assert "quarantined: 1 message the parser could not read (triage list --failed" in status.stdout
    assert json.loads(triage("status", "--db", str(database), "--json").stdout)["quarantined"] == 1
    # the same file again: the poison message is not kept twice
    again = triage("ingest", "--db", str(database), "--jobs", "1", str(path))
    assert again.returncode == 0 and "quarantined" not in again.stderr


@pytest.mark.parametrize("crash", [cafe, undefined_charset], ids=["8bit-filename", "charset-undefined"])
def test_ingest_survives_the_parser_crash_classes_of_issue_13(tmp_path: Path, crash) -> None:
    """Before: the exception left the parse, `triage ingest` stored 0 of the 3 and printed a traceback."""
    database = tmp_path / "t.db"
    crashing = crash()
    path = mbox(tmp_path / "three.mbox", [mail("one@example.org", "one"), crashing, mail("two@example.org", "two")])
    result = triage("ingest", "--db", str(database), "--jobs", "1", str(path))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    key = quarantine_key(crashing)
    with SqliteStore(database) as store:
        assert store.has_message("one@example.org") and store.has_message("two@example.org")
        # nothing lost: stored (a parser that reads it) or quarantined (one that cannot)
        assert store.has_message(key) != (store.get_quarantined(key) is not None)


def test_reparse_stores_what_parses_now_and_keeps_what_still_fails(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    database = tmp_path / "t.db"
    path = mbox(tmp_path / "three.mbox", [mail("one@example.org", "one", b"TRIGGER\n"), poison(),
                                          mail("two@example.org", "two")])
    _break_the_parser(monkeypatch, b"TRIGGER")  # the old parser, with a bug this upgrade fixes
    with SqliteStore(database) as store:
        result = ingest_once(FileSource(path), store, jobs=1)
        assert result.new_ids == ["two@example.org"]
        assert sorted(result.quarantined) == ["one@example.org", "poison@example.org"]
    with sqlite3.connect(database) as connection:  # as written by the version before the upgrade
        connection.execute("UPDATE quarantine SET parser_version = 'parse-old'")
    reparsed = triage("reparse", "--db", str(database))
    assert reparsed.returncode == 0, reparsed.stderr
    assert "quarantine: retried 2, 1 now parsed and stored, 1 still failing" in reparsed.stdout
    assert "<poison@example.org>: still quarantined: binary data" in reparsed.stderr
    with SqliteStore(database) as store:
        assert store.get_record("one@example.org").subject == "one"
        assert store.get_record_version("one@example.org") == PARSER_VERSION
        assert store.get_quarantined("one@example.org") is None
        row = store.get_quarantined("poison@example.org")
        assert (row.parser_version, row.attempts) == (PARSER_VERSION, 2)
    # retried by this version already: left alone unless --all
    assert "quarantine:" not in triage("reparse", "--db", str(database)).stdout
    assert "quarantine: retried 1, 0 now parsed" in triage("reparse", "--db", str(database), "--all").stdout
