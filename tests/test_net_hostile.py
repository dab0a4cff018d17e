"""Hostile list servers on 127.0.0.1: lore- and openwall-shaped, built to break the poller.

Issue 13, findings 4 and 6: a feed entry link with `..` sent the poller to the server root, a
UTF-16 feed got past the DOCTYPE refusal and had an internal entity expanded into a link, a
feed of 100k entries meant 100k fetches before anything was stored, an openwall day index of
200k pages kept ingest busy for days, a thread mbox could be a gzip bomb. Each server here is
`tests/support/hostile_http.HostileServer` (or the openwall look-alike) answering in Python.
"""
from __future__ import annotations

import datetime
import gzip
import random
import re
from urllib.parse import unquote

import pytest

from tests.conftest import FIXTURES
from tests.support.hostile_http import MIB, HostileServer, answer, gzip_bomb, streamed, zeros
from tests.support.hostile_http import within_guard as guard
from tests.support.openwall_server import OpenwallServer
from triagebot.http_client.client import RequestsClient
from triagebot.http_client.protocol import HttpPolicy, SourceError
from triagebot.ingest.lore import (
    ENTRIES_PER_POLL,
    FEED_MAX_BYTES,
    FEED_MAX_ENTRIES,
    GZIP_MAX_MEMBERS,
    RAW_MESSAGE_MAX_BYTES,
    THREAD_MAX_BYTES,
    THREAD_MAX_MESSAGES,
    LoreSource,
)
from triagebot.ingest.lore_thread import message_base_url
from triagebot.ingest.openwall import PAGE_MAX_BYTES, PAGES_PER_RUN, OpenwallSource
from triagebot.ingest.runner import ingest_once
from triagebot.store.sqlite import SqliteStore

POLICY = HttpPolicy(user_agent="triagebot-tests/1 (hostile lists; operator tests@example.invalid)",
                    timeout_seconds=10.0, deadline_seconds=60.0, attempts=2, backoff_seconds=0.0,
                    backoff_max_seconds=0.0)
HANG_GUARD_SECONDS = 300  # only a hang (the old behaviour: 100k fetches, 200k pages) trips it
ATOM_NS = "http://www.w3.org/2005/Atom"
LIST = "list"


class Waits(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def within_guard(function, *args, **kwargs):
    return guard(HANG_GUARD_SECONDS, function, *args, **kwargs)


# --- a lore-shaped server ----------------------------------------------------------------------

def message(message_id: str, n: int = 0) -> bytes:
    return (f"Message-ID: <{message_id}>\nFrom: A Poster <a@example.org>\nTo: list@example.org\n"
            f"Subject: message {n}\nDate: Fri, 01 Mar 2024 12:00:00 +0000\n\nbody {n}\n").encode()


def mboxrd(messages: list[bytes]) -> bytes:
    return b"".join(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + raw + b"\n" for raw in messages)


def feed(hrefs: list[str], *, prologue: str = '<?xml version="1.0" encoding="UTF-8"?>') -> str:
    """An Atom feed, newest entry first, one entry per link."""
    entries = "".join(f'<entry><id>urn:n:{n}</id><link href="{href}"/></entry>'
                      for n, href in enumerate(hrefs))
    return f'{prologue}<feed xmlns="{ATOM_NS}"><title>t</title>{entries}</feed>'


def serve_lore(server: HostileServer, feed_body: bytes, *, thread=None) -> str:
    """new.atom as given; t.mbox.gz and raw of any `/list/<msgid>/` made up on the spot."""
    server.route(f"/{LIST}/new.atom", answer(feed_body, "application/atom+xml"))

    def any_message(request) -> None:
        match = re.fullmatch(rf"/{LIST}/([^/]+)/(t\.mbox\.gz|raw)", request.path)
        if match is None:
            return answer(b"not here\n", status=404)(request)
        message_id = unquote(match[1])
        if match[2] == "raw":
            return answer(message(message_id), "text/plain")(request)
        handler = thread(message_id) if thread else None
        if handler is None:
            handler = answer(gzip.compress(mboxrd([message(message_id)])), "application/gzip")
        return handler(request)

    server.route(None, any_message)
    return server.url(f"/{LIST}/")


def lore(list_url: str, **options) -> LoreSource:
    return LoreSource(list_url, RequestsClient(POLICY, trust_environment=False), POLICY,
                      sleep=Waits(), rng=random.Random(1), **options)


@pytest.fixture
def server():
    with HostileServer() as running:
        yield running


def message_requests(server: HostileServer) -> list[str]:
    # not the feed, nor the list's search (`/list/?q=rt:...`, read on a first poll)
    return [path for path in server.hits if not path.endswith(("/new.atom", f"/{LIST}/"))]


# --- feed links --------------------------------------------------------------------------------

def test_dot_segments_in_entry_links_never_send_the_poller_out_of_the_list(server):
    base = server.url(f"/{LIST}/")
    hrefs = [f"{base}../x@y/", f"{base}far/../x@y/", f"{base}%2e%2E/", f"{base}./x@y/",
             f"{base}/x@y/", server.url("/far/../x@y/"), f"{base}good@example.org/"]
    list_url = serve_lore(server, feed(hrefs).encode())
    batch = within_guard(lore(list_url).poll, None)

    fetched = message_requests(server)
    assert fetched == [f"/{LIST}/good@example.org/t.mbox.gz"], fetched  # nothing at the root
    assert [m.source_url for m in batch.messages] == [f"{list_url}good@example.org/"]
    skipped = [event for event in batch.events if "no usable link" in event]
    assert len(skipped) == len(hrefs) - 1 and not batch.more


@pytest.mark.parametrize("encoding, bom", [("utf-16-le", "\ufeff"), ("utf-16-be", "\ufeff"),
                                           ("utf-16", ""), ("utf-8", "")])
def test_a_feed_declaring_an_entity_is_refused_in_any_encoding(server, encoding, bom):
    pwned = server.url(f"/{LIST}/pwned@example.org/")
    label = encoding.split("-")[0].upper() + ("-16" if "16" in encoding else "")
    prologue = (f'{bom}<?xml version="1.0" encoding="{label}"?>'
                f'<!DOCTYPE feed [<!ENTITY e "{pwned}">]>')
    body = feed(["&e;"], prologue=prologue).encode(encoding)
    list_url = serve_lore(server, body)
    with pytest.raises(SourceError, match="document type declaration in the feed"):
        within_guard(lore(list_url).poll, None)
    assert not [path for path in server.hits if "pwned" in path]  # never expanded into a link


def test_a_feed_gzip_bomb_fails_the_poll_with_a_clear_error_and_fetches_nothing(server):
    list_url = serve_lore(server, b"")
    server.route(f"/{LIST}/new.atom", streamed(gzip_bomb(6 * 10**9), "application/atom+xml",
                                                headers={"Content-Encoding": "gzip"}))
    with pytest.raises(SourceError, match=rf"{list_url}new.atom: body is more than that, over the "
                                          rf"{FEED_MAX_BYTES} byte cap: refused"):
        within_guard(lore(list_url).poll, None)
    assert server.hits == [f"/{LIST}/new.atom"]


def test_a_raw_message_over_its_cap_skips_the_entry(server):
    base = server.url(f"/{LIST}/")
    list_url = serve_lore(server, feed([f"{base}huge@example.org/", f"{base}fine@example.org/"]).encode(),
                          thread=lambda message_id: answer(b"gone\n", status=404))
    server.route(f"/{LIST}/huge@example.org/raw",
                 streamed(zeros(RAW_MESSAGE_MAX_BYTES + MIB), headers={"Content-Type": "text/plain"}))
    batch = within_guard(lore(list_url).poll, None)
    assert [m.raw for m in batch.messages] == [message("fine@example.org")]
    assert [e for e in batch.events if "skipped entry" in e and "huge@example.org/raw" in e
            and f"over the {RAW_MESSAGE_MAX_BYTES} byte cap" in e]


# --- entries per poll ---------------------------------------------------------------------------

def test_a_feed_of_100k_entries_is_stored_in_small_batches_as_they_arrive(server, tmp_path):
    base = server.url(f"/{LIST}/")
    hrefs = [f"{base}m{n}@example.org/" for n in range(100_000, 0, -1)]  # newest first
    list_url = serve_lore(server, feed(hrefs).encode())
    source = lore(list_url)
    stored_at_each_batch: list[int] = []

    def ingest() -> tuple:
        with SqliteStore(tmp_path / "triage.db") as store:  # SQLite: one thread
            def progress(seen: int, total: int | None) -> None:
                stored_at_each_batch.append(store.count_messages())

            result = ingest_once(source, store, jobs=1, progress=progress)
            return result, store.count_messages(), store.get_cursor(source.key)

    result, stored, cursor = within_guard(ingest)
    assert stored == FEED_MAX_ENTRIES and cursor is not None
    batches = FEED_MAX_ENTRIES // ENTRIES_PER_POLL
    # stored thread by thread as each arrives (issue 21): one more message at each part at most
    steps = [after - before for before, after in zip([0, *stored_at_each_batch], stored_at_each_batch, strict=False)]
    assert set(steps) <= {0, 1} and stored_at_each_batch[-1] == FEED_MAX_ENTRIES
    assert len(result.new_ids) == FEED_MAX_ENTRIES
    # the newest FEED_MAX_ENTRIES entries, each fetched once, said once per poll
    wanted = {f"/{LIST}/m{n}@example.org/t.mbox.gz" for n in range(100_000 - FEED_MAX_ENTRIES + 1, 100_001)}
    assert sorted(message_requests(server)) == sorted(wanted)
    assert sum(f"more than {FEED_MAX_ENTRIES} entries" in e for e in result.events) == batches


def test_a_feed_padded_with_300k_other_elements_is_read_in_linear_time(server):
    base = server.url(f"/{LIST}/")
    hrefs = [f"{base}p{n}@example.org/" for n in range(FEED_MAX_ENTRIES + 1, 0, -1)]
    body = feed(hrefs).replace("<title>t</title>", "<x/>" * 300_000)
    list_url = serve_lore(server, body.encode())
    batch = within_guard(lore(list_url, entries_per_poll=1).poll, None)
    assert [m.source_url for m in batch.messages] == [f"{base}p2@example.org/"]  # the oldest kept
    assert batch.more and [e for e in batch.events if f"more than {FEED_MAX_ENTRIES} entries" in e]


def test_entries_left_for_the_next_poll_are_not_marked_seen(server):
    base = server.url(f"/{LIST}/")
    list_url = serve_lore(server, feed([f"{base}e{n}@example.org/" for n in range(5, 0, -1)]).encode())
    first = lore(list_url, entries_per_poll=2).poll(None)
    assert [m.source_url.rsplit("/", 2)[1] for m in first.messages] == ["e1@example.org", "e2@example.org"]
    assert first.more
    second = lore(list_url, entries_per_poll=2).poll(first.cursor)
    third = lore(list_url, entries_per_poll=2).poll(second.cursor)
    assert second.more and not third.more
    assert len(message_requests(server)) == 5  # each once
    assert lore(list_url).poll(third.cursor).messages == ()


# --- thread size --------------------------------------------------------------------------------

@pytest.mark.parametrize("content_encoding", [False, True], ids=["gzip-file", "content-encoding"])
def test_a_thread_mbox_gzip_bomb_falls_back_to_the_message_alone(server, content_encoding):
    base = server.url(f"/{LIST}/")
    headers = {"Content-Encoding": "gzip"} if content_encoding else {}
    bomb = streamed(gzip_bomb(6 * 10**9), "application/gzip", headers=headers)
    list_url = serve_lore(server, feed([f"{base}big@example.org/"]).encode(),
                          thread=lambda message_id: bomb)
    batch = within_guard(lore(list_url).poll, None)
    assert [m.raw for m in batch.messages] == [message("big@example.org")]
    assert [e for e in batch.events
            if f"thread larger than {THREAD_MAX_BYTES} bytes; fetching the message alone" in e]
    assert message_requests(server) == [f"/{LIST}/big@example.org/t.mbox.gz", f"/{LIST}/big@example.org/raw"]


def test_a_thread_of_too_many_messages_falls_back_to_the_message_alone(server):
    base = server.url(f"/{LIST}/")
    crowd = gzip.compress(mboxrd([message(f"r{n}@example.org", n)
                                  for n in range(THREAD_MAX_MESSAGES + 1)]))
    list_url = serve_lore(server, feed([f"{base}r0@example.org/"]).encode(),
                          thread=lambda message_id: answer(crowd, "application/gzip"))
    batch = within_guard(lore(list_url).poll, None)
    assert [m.raw for m in batch.messages] == [message("r0@example.org")]
    assert [e for e in batch.events if f"thread of more than {THREAD_MAX_MESSAGES} messages" in e]


@pytest.mark.parametrize("content_encoding", [False, True], ids=["gzip-file", "content-encoding"])
def test_a_thread_mbox_of_many_gzip_members_falls_back_to_the_message_alone(server, content_encoding):
    base = server.url(f"/{LIST}/")
    # 200k empty gzip members before the thread: each would restart zlib on the rest of the body
    members = gzip.compress(b"") * 200_000 + gzip.compress(mboxrd([message("many@example.org")]))
    headers = {"Content-Encoding": "gzip"} if content_encoding else {}
    list_url = serve_lore(server, feed([f"{base}many@example.org/"]).encode(),
                          thread=lambda message_id: answer(members, "application/gzip", headers=headers))
    batch = within_guard(lore(list_url).poll, None)
    assert [m.raw for m in batch.messages] == [message("many@example.org")]
    said = [e for e in batch.events if "fetching the message alone" in e]
    assert len(said) == 1 and f"more than {GZIP_MAX_MEMBERS} gzip members" in said[0], said


def test_a_thread_mbox_of_a_few_gzip_members_is_read_whole(server):
    base = server.url(f"/{LIST}/")
    two = gzip.compress(mboxrd([message("two-1@example.org", 1)])) + b"\0\0" + \
        gzip.compress(mboxrd([message("two-2@example.org", 2)]))
    list_url = serve_lore(server, feed([f"{base}two-1@example.org/"]).encode(),
                          thread=lambda message_id: answer(two, "application/gzip"))
    batch = within_guard(lore(list_url).poll, None)
    assert [m.raw for m in batch.messages] == [message("two-1@example.org", 1), message("two-2@example.org", 2)]
    assert batch.events == ()


def test_a_message_url_with_dot_segments_names_no_message():
    assert message_base_url("https://lore.kernel.org/oe-lkp/../x@y/") is None
    assert message_base_url("https://lore.kernel.org/oe-lkp/%2E%2E/x@y/raw") is None
    assert message_base_url("https://lore.kernel.org/oe-lkp/x@y/raw") == "https://lore.kernel.org/oe-lkp/x@y/"


# --- openwall ----------------------------------------------------------------------------------

OPENWALL = FIXTURES / "openwall-site"
PAGE = (OPENWALL / "site" / "linux-ext4" / "2024" / "12" / "01" / "1.html").read_bytes()
BUSY_DAY = "/linux-ext4/2024/12/03/"
BUSY_PAGES = 200_000


class BusyArchive(OpenwallServer):
    """The look-alike with one day listing 200k pages, each page made up when asked for."""

    def __init__(self) -> None:
        super().__init__(OPENWALL / "site")
        links = "".join(f'<li><a href="{n}">message {n}</a>\n' for n in range(1, BUSY_PAGES + 1))
        self.index = ("<html><body><h2>linux-ext4 mailing list - 2024/12/03</h2><ul>\n"
                      f"{links}</ul></body></html>\n").encode()

    def page(self, path: str) -> tuple[int, bytes, str]:
        if path == BUSY_DAY:
            return 200, self.index, "text/html; charset=utf-8"
        if path.startswith(BUSY_DAY) and path[len(BUSY_DAY):].isdigit():
            return 200, PAGE, "text/html; charset=utf-8"
        return super().page(path)


def openwall(archive: OpenwallServer, **options) -> OpenwallSource:
    return OpenwallSource(archive.list_url("linux-ext4"), RequestsClient(POLICY, trust_environment=False),
                          POLICY, Waits(), days_back=0, today=lambda: datetime.date(2024, 12, 3),
                          request_interval_seconds=0, rng=random.Random(2), **options)


def busy_pages(archive: OpenwallServer) -> list[int]:
    return [int(p[len(BUSY_DAY):]) for p in archive.paths() if p.startswith(BUSY_DAY) and p != BUSY_DAY]


def test_a_day_index_of_200k_pages_costs_one_poll_run_at_most_pages_per_run():
    assert len(BusyArchive().index) < PAGE_MAX_BYTES  # the index itself is within its cap
    with BusyArchive() as archive:
        def run(cursor):  # as runner.ingest_once does: poll again while the batch says more
            batches = []
            while True:
                batch = openwall(archive).poll(cursor)
                batches.append(batch)
                cursor = batch.cursor
                if not batch.more:
                    return batches, cursor

        batches, cursor = within_guard(run, None)
        assert [len(b.messages) for b in batches] == [100] * (PAGES_PER_RUN // 100)
        assert busy_pages(archive) == list(range(1, PAGES_PER_RUN + 1))
        assert [e for e in batches[-1].events if f"{PAGES_PER_RUN} pages fetched in this run" in e]

        archive.clear_requests()
        within_guard(run, cursor)  # the next scheduled poll goes on where it stopped
        assert busy_pages(archive) == list(range(PAGES_PER_RUN + 1, 2 * PAGES_PER_RUN + 1))


def test_oversize_openwall_pages_are_skipped_with_an_event():
    with OpenwallServer(OPENWALL / "site") as archive:
        huge = PAGE + b"<!-- " + b"x" * PAGE_MAX_BYTES + b" -->"
        archive.add_page("/linux-ext4/2024/12/01/2", huge)  # a message page
        archive.add_page("/linux-ext4/2024/12/02/", huge)  # a day index
        source = OpenwallSource(archive.list_url("linux-ext4"), RequestsClient(POLICY, trust_environment=False),
                                POLICY, Waits(), days_back=2, today=lambda: datetime.date(2024, 12, 3),
                                request_interval_seconds=0)
        batch = within_guard(source.poll, None)
        assert [m.source_url.split("linux-ext4/")[1] for m in batch.messages] == ["2024/12/01/1", "2024/12/01/3"]
        cap = f"over the {PAGE_MAX_BYTES} byte cap"
        assert [e for e in batch.events if "/2024/12/01/2" in e and cap in e and "skipped" in e]
        assert [e for e in batch.events if "/2024/12/02/" in e and cap in e and "day's pages are skipped" in e]

