"""Ingest from a real public-inbox-httpd into a real SQLite store: records, polls, faults."""
from __future__ import annotations

from datetime import timedelta

import pytest

from tests.conftest import CORPUS, require_corpus
from tests.support.public_inbox import load_eml_dir, make_message, require_public_inbox, start_public_inbox
from tests.test_ingest_lore import DAY, Fault, Waits, faulty, make_source  # noqa: F401 (faulty: a fixture)
from triagebot.http_client.protocol import SourceError
from triagebot.ingest.runner import ingest_once
from triagebot.records.report import Source
from triagebot.store.sqlite import SqliteStore

THREAD_FILES = ["lkp-perf_xfs-fsmark-5.7pct.eml", "reply_xfs-fsmark-5.7pct-reply.eml",
                "human_ext4-dioread_nolock-buffered-randwrite.eml", "reply_ext4-dioread_nolock-reply.eml",
                "lkp-perf_iomap-metamix-98.4pct.eml"]


def test_corpus_inbox_ingested_over_http(tmp_path) -> None:
    require_public_inbox()
    require_corpus()
    messages = load_eml_dir(CORPUS, names=THREAD_FILES, limit=len(THREAD_FILES))
    with start_public_inbox(tmp_path / "lore", "linux-ext4", messages) as server, \
            SqliteStore(tmp_path / "t.db") as store:
        source = make_source(server.list_url)
        first = ingest_once(source, store, jobs=1)
        assert sorted(first.new_ids) == sorted(server.message_ids)
        report = store.get_record("202305090905.aff4e0e6-oliver.sang@intel.com")
        assert report.kind == "lkp-regression" and len(report.metrics) == 519
        assert report.source == Source("lore", server.message_url(report.message_id))
        assert store.thread_of("20230512230504.GF3223426@dread.disaster.area")[0] == report.message_id
        # a second poll fetches nothing
        assert ingest_once(source, store, jobs=1).new_ids == []
        # a message added afterwards is the only thing the next poll stores
        newcomer = make_message("[linus:master] [ext4] 0123456789: fsmark.files_per_sec -3.1% regression",
                                "Hello,\n\nkernel test robot noticed a -3.1% regression of fsmark.files_per_sec.\n",
                                msgid="newcomer@example.org", date=DAY + timedelta(days=30000))
        server.add_message(newcomer)
        assert ingest_once(source, store, jobs=1).new_ids == ["newcomer@example.org"]
        # a reply added to a tracked thread is attached to its report
        reply = make_message("Re: [linus:master] [ext4] 0123456789: fsmark.files_per_sec -3.1% regression",
                             "I could not reproduce this on my laptop: 41236 files/sec on both kernels.\n",
                             msgid="reply-newcomer@example.org", in_reply_to="newcomer@example.org",
                             date=DAY + timedelta(days=30001))
        server.add_message(reply)
        assert ingest_once(source, store, jobs=1).new_ids == ["reply-newcomer@example.org"]
        assert store.thread_of("reply-newcomer@example.org") == ["newcomer@example.org", "reply-newcomer@example.org"]
        assert store.get_record("reply-newcomer@example.org").stance == "not-reproduced"



@pytest.mark.parametrize("kind,suffix,times", [
    ("500", "new.atom", 2),            # server errors
    ("slow", "new.atom", 1),           # an answer slower than the timeout
    ("html", "new.atom", 2),           # an HTML challenge page instead of the feed
    ("truncate", "t.mbox.gz", 2),      # a thread cut off mid-gzip
])
def test_faults_are_logged_once_each_and_the_store_loses_nothing(tmp_path, faulty, kind, suffix, times) -> None:
    require_public_inbox()
    messages = [make_message(f"[REPORT] ext4 regression {number}", "slower\n", msgid=f"fault-{number}@example.org",
                             date=DAY + timedelta(hours=number)) for number in range(3)]
    with start_public_inbox(tmp_path / "lore", "linux-ext4", messages) as server, \
            SqliteStore(tmp_path / "t.db") as store:
        proxy = faulty(server, [Fault(suffix, kind, times)])
        waits = Waits()
        result = ingest_once(make_source(proxy.list_url, waits), store, jobs=1)
        assert len(result.events) == times and len(waits) == times  # one line per retry
        assert sorted(result.new_ids) == sorted(server.message_ids)
        assert store.count_messages() == 3  # nothing lost, nothing twice


def test_server_down_keeps_the_cursor_and_recovery_loses_nothing(tmp_path) -> None:
    require_public_inbox()
    messages = [make_message("[REPORT] first", "slower\n", msgid="down-1@example.org", date=DAY)]
    with start_public_inbox(tmp_path / "lore", "linux-ext4", messages) as server, \
            SqliteStore(tmp_path / "t.db") as store:
        source = make_source(server.list_url)
        ingest_once(source, store, jobs=1)
        cursor = store.get_cursor(source.key)
        server.stop()
        with pytest.raises(SourceError, match="gave up after 4 attempts"):
            ingest_once(source, store, jobs=1)
        assert store.get_cursor(source.key) == cursor and store.count_messages() == 1
        server.deliver(make_message("[REPORT] second", "slower\n", msgid="down-2@example.org",
                                    date=DAY + timedelta(days=1)))
        server.start()
        assert ingest_once(source, store, jobs=1).new_ids == ["down-2@example.org"]
        assert store.count_messages() == 2


def test_one_thread_by_message_url_or_id(tmp_path) -> None:
    from tests.test_ingest_lore import POLICY, served_raw
    from triagebot.http_client.client import RequestsClient
    from triagebot.ingest.lore_thread import LoreThreadSource, message_base_url

    require_public_inbox()
    report = make_message("[REPORT] ext4 regression", "slower\n", msgid="thread-root@example.org", date=DAY)
    reply = make_message("Re: [REPORT] ext4 regression", "I could not reproduce this on my box.\n",
                         msgid="thread-reply@example.org", in_reply_to="thread-root@example.org",
                         date=DAY + timedelta(hours=1))
    other = make_message("unrelated", "x\n", msgid="other@example.org", date=DAY + timedelta(hours=2))
    assert message_base_url("<thread-reply@example.org>") == "https://lore.kernel.org/all/thread-reply@example.org/"
    assert message_base_url("https://lore.kernel.org/oe-lkp/") is None
    with start_public_inbox(tmp_path / "lore", "linux-ext4", [report, reply, other]) as server, \
            SqliteStore(tmp_path / "t.db") as store:
        url = message_base_url(server.raw_url("thread-reply@example.org"))
        source = LoreThreadSource(url, RequestsClient(POLICY, trust_environment=False), POLICY, sleep=Waits())
        assert sorted(ingest_once(source, store, jobs=1).new_ids) == ["thread-reply@example.org",
                                                                       "thread-root@example.org"]
        assert store.get_raw("thread-root@example.org") == served_raw(server, "thread-root@example.org")
        gone = LoreThreadSource(message_base_url(server.message_url("nobody@example.org")),
                                RequestsClient(POLICY, trust_environment=False), POLICY, sleep=Waits())
        with pytest.raises(SourceError, match="no such message on the server"):
            ingest_once(gone, store, jobs=1)
