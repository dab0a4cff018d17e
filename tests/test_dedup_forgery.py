"""Issue 21 finding 1: a mail copying an archive page's date, subject and sender name must
never replace the stored report. Before: the forged mail deleted the page's message, record,
triage row and outbox rows (`delete_message` in the runner's dedup); now dedup never deletes, a
copy whose text agrees only adds its Message-ID to the stored record, any other text is stored
beside it.
"""
from __future__ import annotations

import html
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from triagebot.ingest.protocol import Batch, FetchedMessage
from triagebot.ingest.runner import IngestResult, store_batch
from triagebot.parse.twins import same_text
from triagebot.store.sqlite import SqliteStore

PROJECT = Path(__file__).resolve().parent.parent
PAGE = PROJECT / "fixtures/openwall/lkp-report-page-no-message-id.html"
NOW = datetime(2024, 12, 2, tzinfo=UTC)
HEADERS = ("From: kernel test robot <{sender}>\n"
           "Subject: Re: [linus:master] [ext4] 4f3d1e4533: fileio.requests_per_sec -12.4% regression\n"
           "Date: Sun, 1 Dec 2024 12:00:{seconds} +0800\nMessage-ID: <{message_id}>\n\n")


def page_body() -> str:
    """The page's text, as the lore copy of it would carry it (addresses spelled out)."""
    markup = PAGE.read_text()
    text = html.unescape(re.search(r"<pre[^>]*>(.*?)</pre>", markup, re.S).group(1))
    body = text.split("\n\n", 1)[1]
    body = re.sub(r'<a href="[^"]*">(View attachment[^<]*)</a>\n', "", body)
    return body.replace("@...el.com", "@intel.com")


def mail(message_id: str, body: str, sender: str = "oliver.sang@intel.com", seconds: str = "30") -> bytes:
    return (HEADERS.format(sender=sender, seconds=seconds, message_id=message_id) + body).encode()


FORGED = mail("forged-1@evil.example", "Please ignore the earlier report, it was a false positive.\n",
              sender="mallory@evil.example")
TWIN = mail("202412011200.lkp-copy@intel.example", page_body())


def ingest(store: SqliteStore, raw: bytes, kind: str) -> IngestResult:
    result = IngestResult()
    batch = Batch((FetchedMessage(raw, kind, source_url=f"https://example.invalid/{kind}", list_name="linux-ext4"),),
                  None)
    store_batch(store, kind, batch, jobs=1, clock=lambda: NOW, result=result)
    return result


def stored_page(store: SqliteStore) -> str:
    (page_key,) = ingest(store, PAGE.read_bytes(), "openwall").new_ids
    assert store.get_record(page_key).message_id is None  # stored under its synthetic key
    store.start_triage(page_key, "#perf")
    store.enqueue(page_key, "report", "#perf", {"text": "taken on"})
    return page_key


def test_the_texts_compared(tmp_path: Path) -> None:
    page = PAGE.read_bytes()
    assert same_text(page, TWIN)  # obfuscated addresses and attachment lines set aside
    assert not same_text(page, FORGED)
    assert not same_text(page, mail("x@y", page_body().replace("-12.4%", "-2.4%")))  # one number differs


def test_a_forged_mail_is_stored_beside_the_page_and_deletes_nothing(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "t.db") as store:
        page_key = stored_page(store)
        result = ingest(store, FORGED, "lore")
        assert result.new_ids == ["forged-1@evil.example"]  # a different message, kept beside
        assert store.get_record(page_key) is not None and store.get_raw(page_key) == PAGE.read_bytes()
        assert store.get_triage(page_key) is not None
        assert [row.kind for row in store.outbox(message_id=page_key)] == ["report"]
        assert store.count_messages() == 2
        # ingested again, in either order, nothing changes
        assert ingest(store, FORGED, "lore").new_ids == []
        assert ingest(store, PAGE.read_bytes(), "openwall").new_ids == []
        assert store.count_messages() == 2 and store.get_triage(page_key) is not None


def test_the_lore_copy_adds_its_message_id_to_the_pages_record(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "t.db") as store:
        page_key = stored_page(store)
        assert ingest(store, TWIN, "lore").new_ids == []  # one message, one record
        assert store.count_messages() == 1 and store.get_raw(page_key) == PAGE.read_bytes()
        assert store.resolve_alias("202412011200.lkp-copy@intel.example") == page_key
        assert store.get_triage(page_key) is not None and len(store.outbox(message_id=page_key)) == 1
        assert ingest(store, TWIN, "lore").new_ids == [] and store.count_messages() == 1
    # `triage show` opens the record by the Message-ID the lore copy brought
    shown = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", "--db", str(tmp_path / "t.db"),
                            "202412011200.lkp-copy@intel.example"], capture_output=True, text=True,
                           cwd=PROJECT, env={"PYTHONPATH": str(PROJECT), "PATH": "/usr/bin:/bin"})
    assert shown.returncode == 0, shown.stderr
    assert "fileio.requests_per_sec -12.4% regression" in shown.stdout


@pytest.mark.parametrize("first", ["lore", "openwall"])
def test_a_page_is_dropped_only_when_its_text_agrees_with_the_stored_mail(tmp_path: Path, first: str) -> None:
    with SqliteStore(tmp_path / "t.db") as store:
        if first == "lore":
            ingest(store, FORGED, "lore")  # a forgery first: the page is a different message
            assert ingest(store, PAGE.read_bytes(), "openwall").new_ids != []
            assert store.count_messages() == 2
        else:
            ingest(store, TWIN, "lore")  # the true copy first: the page is the same message
            assert ingest(store, PAGE.read_bytes(), "openwall").new_ids == []
            assert store.count_messages() == 1
