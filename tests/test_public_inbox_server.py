"""The public-inbox test server (tests/support/public_inbox.py) against the real programs.

No mocks: every test talks HTTP to a running public-inbox-httpd on 127.0.0.1.
"""
from __future__ import annotations

import gzip
import re
import shutil
import socket
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest
import requests

from tests.conftest import require_corpus
from tests.support.public_inbox import (
    MBOXRD_FROM,
    PublicInboxError,
    PublicInboxServer,
    _group_members,
    atom_entry_id,
    load_eml_dir,
    make_message,
    mboxrd_unescape,
    message_id_of,
    msgid_path,
    public_inbox,  # noqa: F401 - the factory fixture
    require_public_inbox,
    split_mboxrd,
    start_public_inbox,
)

A = "{http://www.w3.org/2005/Atom}"
THR = "{http://purl.org/syndication/thread/1.0}"
# headers public-inbox-mda removes (PublicInbox::MDA::BAD_HEADERS, Import::UNWANTED_HEADERS)
DROPPED = {"delivered-to", "x-original-to", "approved", "approve", "x-approved", "x-approve",
           "urgent", "return-receipt-to", "disposition-notification-to",
           "x-confirm-reading-to", "x-pmrqc", "bytes", "lines", "content-length", "status",
           "x-status"}

LKP = "lkp-perf_ext4-fiemap-15.8pct.eml"
LKP_REPLY = "reply_ext4-fiemap-15.8pct-reply.eml"
XFS_THREAD = ["human_xfs-6.1-vs-5.15-perf-regression.eml", "reply_xfs-6.1-vs-5.15-reply.eml",
              "reply_xfs-6.1-vs-5.15-I-could-reproduce.eml"]
N_CORPUS = 20


def http() -> requests.Session:
    s = requests.Session()
    s.trust_env = False  # never send 127.0.0.1 traffic through an http_proxy from the env
    return s


def feed(server: PublicInboxServer) -> list[ET.Element]:
    r = http().get(server.atom_url, timeout=10)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("application/atom+xml")
    root = ET.fromstring(r.content)
    assert root.tag == f"{A}feed"
    return root.findall(f"{A}entry")


def entry_ids(entries: list[ET.Element]) -> list[str]:
    return [e.findtext(f"{A}id") for e in entries]


def split_message(raw: bytes) -> tuple[list[bytes], bytes]:
    """Header fields (each with its continuation lines) and the body."""
    head, _, body = raw.partition(b"\n\n")
    fields: list[bytes] = []
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1] += b"\n" + line
        else:
            fields.append(line)
    return fields, body


def field_name(field: bytes) -> str:
    return field.split(b":", 1)[0].strip().decode("ascii", "replace").lower()


def connection_refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


# ---------------------------------------------------------------------------------------------
# a server built from the shared corpus (one per module: delivery + indexing take a few s)


@pytest.fixture(scope="module")
def corpus():
    directory = require_corpus()
    names = [LKP, LKP_REPLY, *XFS_THREAD]
    return {"raw": load_eml_dir(directory, limit=N_CORPUS, names=names),
            "files": {n: (directory / n).read_bytes() for n in names}}


@pytest.fixture(scope="module")
def lore(tmp_path_factory, corpus):
    require_public_inbox()
    with start_public_inbox(tmp_path_factory.mktemp("lore"), "linux-ext4",
                            corpus["raw"]) as server:
        yield server


def test_corpus_messages_keep_their_message_ids(lore, corpus):
    assert lore.duplicates == []
    assert lore.message_ids == [message_id_of(raw) for raw in corpus["raw"]]
    assert lore.list_url == f"http://127.0.0.1:{lore.port}/linux-ext4/"


def test_new_atom_lists_delivered_messages_newest_first(lore, corpus):
    entries = feed(lore)
    assert set(entry_ids(entries)) == {atom_entry_id(m) for m in lore.message_ids}
    hrefs = {e.find(f"{A}link").get("href") for e in entries}
    assert hrefs == {lore.message_url(m) for m in lore.message_ids}
    updated = [e.findtext(f"{A}updated") for e in entries]
    assert updated == sorted(updated, reverse=True)
    # a reply names its parent's entry id
    reply_id = atom_entry_id(message_id_of(corpus["files"][LKP_REPLY]))
    reply = next(e for e in entries if e.findtext(f"{A}id") == reply_id)
    assert reply.find(f"{THR}in-reply-to").get("ref") == atom_entry_id(
        message_id_of(corpus["files"][LKP]))


def test_raw_serves_the_message_with_only_documented_changes(lore, corpus):
    s = http()
    for original in corpus["raw"]:
        mid = message_id_of(original)
        r = s.get(lore.raw_url(mid), timeout=10)
        assert r.status_code == 200, mid
        assert r.headers["Content-Type"].startswith("text/plain")
        assert r.content.startswith(MBOXRD_FROM) and r.content.endswith(b"\n\n")
        served = mboxrd_unescape(r.content)
        assert message_id_of(served) == mid
        o_fields, o_body = split_message(original)
        s_fields, s_body = split_message(served)
        assert s_body == o_body, mid
        # every corpus message already has a List-Id, so nothing is added
        assert s_fields == [f for f in o_fields if field_name(f) not in DROPPED], mid


def test_raw_of_an_unknown_message_id_is_404(lore):
    assert http().get(lore.raw_url("no-such-message@example.org"), timeout=10).status_code == 404


def test_thread_mbox_gz_holds_the_whole_thread(lore, corpus):
    s = http()
    for names in ([LKP, LKP_REPLY], XFS_THREAD):
        files = [corpus["files"][n] for n in names]
        for f in files:  # any message of the thread yields the whole thread
            r = s.get(lore.thread_mbox_url(message_id_of(f)), timeout=10)
            assert r.status_code == 200
            assert r.headers["Content-Type"] == "application/gzip"
            assert r.content[:2] == b"\x1f\x8b"
            messages = split_mboxrd(gzip.decompress(r.content))
            assert sorted(message_id_of(m) for m in messages) == sorted(
                message_id_of(f) for f in files)
            for m in messages:
                assert split_message(m)[1] == split_message(
                    files[[message_id_of(f) for f in files].index(message_id_of(m))])[1]


def test_corpus_add_message_reply_is_first_and_joins_the_thread(lore, corpus):
    # reply to a message the thread test above does not look at, so test order does not matter
    parent = message_id_of(corpus["raw"][-1])
    raw = make_message("Re: regression", "Still seen on -rc3.\n",
                       msgid="late-reply-1@example.org", in_reply_to=parent,
                       date=datetime.now(UTC))
    assert lore.add_message(raw) == "late-reply-1@example.org"
    entries = feed(lore)
    assert entry_ids(entries)[0] == atom_entry_id("late-reply-1@example.org")
    assert entries[0].find(f"{THR}in-reply-to").get("ref") == atom_entry_id(parent)
    r = http().get(lore.thread_mbox_url(parent), timeout=10)
    ids = {message_id_of(m) for m in split_mboxrd(gzip.decompress(r.content))}
    assert {parent, "late-reply-1@example.org"} <= ids


# ---------------------------------------------------------------------------------------------
# servers built only from messages made here (run without the corpus)

DAY = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


def three_messages() -> list[bytes]:
    return [
        make_message("[REPORT] ext4 regression", "Numbers below.\nFrom the start it was slow.\n",
                     msgid="report-1@example.org", date=DAY),
        make_message("Re: [REPORT] ext4 regression", "Can reproduce.\n",
                     msgid="reply-1@example.org", in_reply_to="report-1@example.org",
                     date=DAY + timedelta(hours=1)),
        make_message("no id here", "public-inbox assigns one\n", msgid="",
                     date=DAY + timedelta(hours=2)),
    ]


def test_constructed_messages_feed_raw_and_assigned_ids(public_inbox):
    msgs = three_messages()
    server = public_inbox("linux-ext4", msgs)
    assigned = server.message_ids[2]
    assert server.message_ids[:2] == ["report-1@example.org", "reply-1@example.org"]
    assert re.fullmatch(r"20240301140000\.[A-Za-z0-9_-]+@z", assigned)
    assert entry_ids(feed(server)) == [atom_entry_id(m) for m in reversed(server.message_ids)]

    s = http()
    r = s.get(server.raw_url("report-1@example.org"), timeout=10)
    assert b"\n>From the start it was slow.\n" in r.content  # mboxrd escaping on the wire
    assert mboxrd_unescape(r.content) == msgs[0].replace(
        b"\n\n", b"\nList-Id: <linux-ext4.vger.kernel.org>\n\n", 1)
    r = s.get(server.raw_url(assigned), timeout=10)
    assert mboxrd_unescape(r.content) == msgs[2].replace(
        b"\n\n", b"\nList-Id: <linux-ext4.vger.kernel.org>\nMessage-ID: <%s>\n\n"
        % assigned.encode(), 1)
    # re-delivering identical bytes stores nothing
    assert server.add_message(msgs[1]) == "reply-1@example.org"
    assert server.duplicates == ["reply-1@example.org"]
    assert len(feed(server)) == 3


def test_add_message_stop_and_start(public_inbox):
    server = public_inbox("linux-ext4", three_messages())
    port, pid = server.port, server._proc.pid
    new = server.add_message(make_message("fresh", "new\n", msgid="fresh-1@example.org"))
    assert entry_ids(feed(server))[0] == atom_entry_id(new)

    server.stop()
    assert not server.running and _group_members(pid) == []
    assert connection_refused(port)
    with pytest.raises(requests.ConnectionError):
        http().get(server.atom_url, timeout=5)

    # mail keeps arriving while the web server is down
    later = server.add_message(make_message(
        "while down", "x\n", msgid="down-1@example.org",
        date=datetime.now(UTC) + timedelta(minutes=1)))
    server.start()
    assert server.port == port and server.running
    assert entry_ids(feed(server))[:2] == [atom_entry_id(later), atom_entry_id(new)]


def test_feed_orders_by_date_not_arrival_and_is_capped_by_feedmax(public_inbox):
    server = public_inbox("linux-ext4", three_messages(), feedmax=3)
    old = server.add_message(make_message("old mail, delivered late", "x\n",
                                          msgid="old-1@example.org", date=DAY - timedelta(days=1)))
    ids = entry_ids(feed(server))
    assert len(ids) == 3 and atom_entry_id(old) not in ids
    assert http().get(server.raw_url(old), timeout=10).status_code == 200


def test_message_ids_with_slashes_are_escaped_in_urls(public_inbox):
    mid = "bug-1-2@https.bugzilla.example.org/"
    server = public_inbox("linux-ext4", [make_message("bug", "x\n", msgid=mid, date=DAY)])
    assert msgid_path(mid) == "bug-1-2@https.bugzilla.example.org%2F"
    [entry] = feed(server)
    assert entry.find(f"{A}link").get("href") == server.message_url(mid)
    assert message_id_of(http().get(server.raw_url(mid), timeout=10).content) == mid


def test_busy_pinned_port_is_a_clear_error(tmp_path):
    require_public_inbox()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        server = PublicInboxServer(tmp_path, "linux-ext4", port=busy.getsockname()[1])
        with pytest.raises(PublicInboxError, match="(?s)exited with .*in use"):
            server.open()
    assert not server.running


def test_missing_programs_skip_with_the_install_hint(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match=r"apt-get install public-inbox"):
        require_public_inbox()


def test_bulk_add_serves_and_indexes_every_message(public_inbox):
    server = public_inbox("linux-ext4", [make_message("first", "x\n", msgid="first@example.org")])
    raws = [make_message(f"bulk {n}", f"body {n}\n", msgid=f"bulk-{n}@example.org",
                         extra_headers=[("Received", "by lists.example.org; "
                                         "Mon, 02 Jun 2025 09:00:00 +0000")])
            for n in range(3)]
    assert server.bulk_add(raws) == ["bulk-0@example.org", "bulk-1@example.org",
                                     "bulk-2@example.org"]
    assert server.message_ids[-3:] == ["bulk-0@example.org", "bulk-1@example.org",
                                       "bulk-2@example.org"]
    session = requests.Session()
    session.trust_env = False
    assert mboxrd_unescape(session.get(server.raw_url("bulk-1@example.org")).content) == raws[1]
    server.stop()  # httpd reads the new search index snapshot when it starts
    server.start()
    found = session.get(server.list_url, params={"q": "rt:1748854800..1748854801", "x": "A"})
    assert found.status_code == 200 and found.text.count("<entry") == 3
