"""Ingest from files into a real SQLite store; triage ingest / show / list / reparse end to end."""
from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, SHARED, require_corpus
from triagebot.errors import InputError
from triagebot.ingest.files import FileSource
from triagebot.ingest.inputs import split_mbox
from triagebot.ingest.runner import PARSER_VERSION, ingest_once
from triagebot.store.sqlite import SqliteStore

MAIL = FIXTURES / "mail"
YEAR = SHARED / "corpus" / "lists" / "linux-ext4-2024.mbox.gz"


def triage(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def own_mbox(path: Path, copies: int = 1) -> Path:
    """An mbox of our own fixture messages; with copies > 1, each under fresh Message-IDs."""
    parts = []
    for copy in range(copies):
        for eml in sorted(MAIL.rglob("*.eml")):
            raw = eml.read_bytes().replace(b"\r\n", b"\n")
            if copy:
                raw = raw.replace(b"Message-ID: <", f"Message-ID: <copy{copy}.".encode(), 1)
            parts.append(b"From fixture@example.org Mon Jan  1 00:00:00 2024\n" + raw.rstrip(b"\n") + b"\n\n")
    path.write_bytes(b"".join(parts))
    return path


def store_content(database: Path) -> tuple[list, list, list]:
    with sqlite3.connect(database) as connection:
        messages = connection.execute("SELECT message_id, raw FROM messages ORDER BY message_id").fetchall()
        records = connection.execute("SELECT message_id, record_json FROM records ORDER BY message_id").fetchall()
        edges = connection.execute("SELECT child, parent FROM thread_edges ORDER BY child, parent").fetchall()
    return messages, records, edges


def test_file_import_is_idempotent_and_threads(tmp_path: Path) -> None:
    mbox = own_mbox(tmp_path / "own.mbox")
    with SqliteStore(tmp_path / "t.db") as store:
        first = ingest_once(FileSource(mbox, list_name="linux-ext4"), store, jobs=1)
        # every message, the one without a Message-ID under the id its bytes give it
        assert len(first.new_ids) == first.seen == len(list(MAIL.rglob("*.eml"))) == 18  # one each: our own fixtures
        assert sum(message_id.endswith("@triagebot.invalid") for message_id in first.new_ids) == 1
        again = ingest_once(FileSource(mbox, list_name="linux-ext4"), store, jobs=1)
        assert again.new_ids == [] and again.seen == 0  # the cursor says the file is done
        other_copy = ingest_once(FileSource(mbox, list_name="linux-ext4", chunk_messages=3),
                                 _FreshCursor(store), jobs=1)
        assert other_copy.new_ids == []  # read again from the start: every Message-ID is known
        record = store.get_record("20240215083344.u7kq2xw3rfd5@marek-tp")
        assert record.stance == "reproduced" and record.source.kind == "mbox"
        assert store.get_record_version("20240215083344.u7kq2xw3rfd5@marek-tp") == PARSER_VERSION
        thread = store.thread_of("c41d9e27-8a3b-4f1c-b5d6-2e7f8a9b0c1d@example.com")
        assert thread[0] == "8f3e2c1a-5b7d-4e2f-9a61-0c4d2e7b9f10@example.com" and len(thread) == 3


class _FreshCursor:
    """The store, with the file's cursor forgotten once: what a lost cursor looks like."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store
        self._forgotten = False

    def get_cursor(self, key: str) -> str | None:
        if not self._forgotten:
            self._forgotten = True
            return None
        return self._store.get_cursor(key)

    def __getattr__(self, name: str):
        return getattr(self._store, name)


def test_lore_and_openwall_copies_are_one_record(tmp_path: Path) -> None:
    import html
    import re

    from triagebot.ingest.protocol import Batch, FetchedMessage
    from triagebot.ingest.runner import IngestResult, store_batch

    page = (MAIL / "openwall/without-message-id.html").read_bytes()
    record_date = "Tue, 22 Sep 2020 10:47:03 +0800"
    # the lore copy carries the page's text (a copy of another text is another message)
    text = html.unescape(re.search(r"<pre[^>]*>(.*?)</pre>", page.decode(), re.S).group(1)).split("\n\n", 1)[1]
    mail = (f"From: kernel test robot <rong.a.chen@intel.com>\nDate: {record_date}\n"
            "Subject: [fs]  bab9324259:  reaim.jobs_per_min 31.5% improvement\n"
            "Message-ID: <20200922024703.GA1@lore-copy>\n\n" + text).encode()
    for first in (page, mail):
        with SqliteStore(tmp_path / f"{first is page}.db") as store:
            for raw in (first, mail if first is page else page):
                kind = "openwall" if raw is page else "lore"
                batch = Batch((FetchedMessage(raw, kind, source_url=f"https://example.invalid/{kind}"),), None)
                store_batch(store, kind, batch, jobs=1, clock=lambda: _NOW, result=IngestResult())
            assert store.count_messages() == 1
            lore_id = "20200922024703.GA1@lore-copy"
            key = store.resolve_alias(lore_id) if first is page else lore_id
            assert store.get_record(key) is not None


def test_show_list_reparse_commands(tmp_path: Path) -> None:
    database = tmp_path / "t.db"
    mbox = own_mbox(tmp_path / "own.mbox")
    result = triage("ingest", "--db", str(database), str(mbox))
    assert result.returncode == 0, result.stderr
    assert f"{mbox}: 18 new of 18 messages" in result.stdout
    shown = triage("show", "--db", str(database), "<8f3e2c1a-5b7d-4e2f-9a61-0c4d2e7b9f10@example.com>")
    assert shown.returncode == 0, shown.stderr
    assert "culprit:   6e1983a3eb3cc196a203ad2782a5a971d4f16dd3" in shown.stdout
    assert "thread of 3 messages" in shown.stdout and "reproduced:" in shown.stdout
    as_json = triage("show", "--db", str(database), "--json", "8f3e2c1a-5b7d-4e2f-9a61-0c4d2e7b9f10@example.com")
    record = json.loads(as_json.stdout)
    from triagebot.records.report import report_from_json, report_to_json
    assert report_to_json(report_from_json(record)) == record  # --json round-trips
    unknown = triage("show", "--db", str(database), "nobody@example.invalid")
    assert unknown.returncode == 1 and "nobody@example.invalid: no such message" in unknown.stderr
    listed = triage("list", "--db", str(database), "--kind", "lkp-regression")
    assert listed.stdout.count("lkp-regression") == 3 and "202403151042.7c1e5f3a" in listed.stdout
    # the robot's report on a patch under review is a patch-regression (issue 38), not an lkp-regression
    under_review = triage("list", "--db", str(database), "--kind", "patch-regression").stdout
    assert under_review.count("\n") == 1 and "Re: [PATCH v2 1/2] nfs: cache the change attribute" in under_review
    assert triage("list", "--db", str(database), "--testcase", "fs_mark").stdout.count("\n") == 3
    # another parser version wrote the records: reparse rebuilds them from the kept raw bytes
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE records SET parser_version = 'old', record_json = '{\"schema\": 1}'")
    reparsed = triage("reparse", "--db", str(database))
    assert "reparsed 18 records, 18 changed" in reparsed.stdout
    assert json.loads(triage("show", "--db", str(database), "--json",
                             "8f3e2c1a-5b7d-4e2f-9a61-0c4d2e7b9f10@example.com").stdout) == record
    assert "reparsed 0 records" in triage("reparse", "--db", str(database)).stdout


def test_database_location_comes_from_the_environment(tmp_path: Path) -> None:
    mbox = own_mbox(tmp_path / "own.mbox")
    result = triage("ingest", str(mbox), env={"TRIAGE_DB": str(tmp_path / "env.db")})
    assert result.returncode == 0 and (tmp_path / "env.db").exists()


def test_bad_sources_are_named(tmp_path: Path) -> None:
    result = triage("ingest", "--db", str(tmp_path / "t.db"), str(tmp_path / "missing.mbox"))
    assert result.returncode == 1
    assert "missing.mbox: no such file, and not a URL or a Message-ID" in result.stderr
    assert "Traceback" not in result.stderr


def _kill_after_first_commit(command: list[str], database: Path) -> None:
    child = subprocess.Popen([sys.executable, "-m", "triagebot.cli", *command], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if database.exists():
            try:
                with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as connection:
                    if connection.execute("SELECT count(*) FROM messages").fetchone()[0] > 0:
                        break
            except sqlite3.OperationalError:
                pass
        time.sleep(0.02)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def test_import_killed_midway_then_rerun_equals_one_clean_run(tmp_path: Path) -> None:
    mbox = own_mbox(tmp_path / "big.mbox", copies=150)  # 2,550 messages: three chunks
    clean, killed = tmp_path / "clean.db", tmp_path / "killed.db"
    assert triage("ingest", "--db", str(clean), "--jobs", "1", str(mbox)).returncode == 0
    _kill_after_first_commit(["ingest", "--db", str(killed), "--jobs", "1", str(mbox)], killed)
    with sqlite3.connect(killed) as connection:
        assert 0 < connection.execute("SELECT count(*) FROM messages").fetchone()[0] < 2550
    assert triage("ingest", "--db", str(killed), "--jobs", "1", str(mbox)).returncode == 0
    assert store_content(killed) == store_content(clean)


def test_year_backfill_into_an_empty_store(tmp_path: Path) -> None:
    require_corpus()
    database = tmp_path / "year.db"
    result = triage("ingest", "--db", str(database), str(YEAR))
    assert result.returncode == 0, result.stderr
    # 5,273 messages in the file, one Message-ID twice with different bytes: the first copy is kept
    assert f"{YEAR}: 5272 new of 5273 messages" in result.stdout
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT count(*) FROM records").fetchone()[0] == 5272
        kept = connection.execute("SELECT size FROM messages WHERE message_id = ?",
                                  ("20240209111418.22308-1-jack@suse.cz",)).fetchone()
    first_copy = next(len(raw) for raw in split_mbox(gzip.decompress(YEAR.read_bytes()))
                      if b"20240209111418.22308-1-jack@suse.cz>" in raw[:raw.find(b"\n\n")])
    assert kept == (first_copy,)


_NOW = __import__("datetime").datetime(2026, 12, 3, tzinfo=__import__("datetime").timezone.utc)


def test_an_unreadable_file_cursor_reads_the_file_again_instead_of_failing_every_poll(tmp_path: Path) -> None:
    mbox = own_mbox(tmp_path / "own.mbox")
    source = FileSource(mbox)
    same_file = source.identity()
    for damaged in ("{not json", "[1, 2]", json.dumps({**same_file, "done": "many"}), "null"):
        batch = source.poll(damaged)
        assert len(batch.messages) == 18 and json.loads(batch.cursor)["done"] == 18, damaged


def _maildir_message(folder: Path, name: str, message_id: str, body: str = "body") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    raw = f"Message-ID: <{message_id}>\nSubject: {message_id}\n\n{body}\n"
    (folder / name).write_bytes(raw.encode())


def test_a_maildir_is_read_from_cur_and_new_once_and_again_when_one_arrives(tmp_path: Path) -> None:
    box = tmp_path / "Maildir"
    _maildir_message(box / "cur", "1700000001.M1P1.host:2,S", "read@x")  # flags after the colon
    _maildir_message(box / "new", "1700000002.M2P1.host", "unread@x")
    _maildir_message(box / "tmp", "1700000003.M3P1.host", "in-delivery@x")  # not delivered yet
    _maildir_message(box / "cur", ".hidden", "dotfile@x")  # no message
    with SqliteStore(tmp_path / "t.db") as store:
        first = ingest_once(FileSource(box, list_name="own"), store, jobs=1)
        assert first.new_ids == ["read@x", "unread@x"]  # by unique name: delivery order
        assert store.get_message("unread@x").list_name == "own"
        assert store.get_raw("read@x") == (box / "cur" / "1700000001.M1P1.host:2,S").read_bytes()
        assert ingest_once(FileSource(box), store, jobs=1).seen == 0  # the cursor says it is done
        _maildir_message(box / "new", "1700000004.M4P1.host", "later@x")
        again = ingest_once(FileSource(box), store, jobs=1)
        assert again.new_ids == ["later@x"]  # the maildir changed: read again, the known skipped


def test_half_a_maildir_is_named_not_read_as_empty(tmp_path: Path) -> None:
    box = tmp_path / "Maildir"
    _maildir_message(box / "cur", "1700000001.M1P1.host:2,S", "read@x")
    with pytest.raises(InputError, match=f"{box}: a maildir needs both cur/ and new/, and new/ is"):
        FileSource(box).poll(None)
