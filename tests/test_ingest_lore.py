"""LoreSource against a real public-inbox-httpd on 127.0.0.1, and a misbehaving proxy in front.

No HTTP is mocked: the source talks to the server through RequestsClient. Faults come from
`FaultyProxy`, a small http.server on 127.0.0.1 that forwards to the public-inbox server and
misbehaves a set number of times first (500, a slow answer, an HTML challenge page, a feed
with a DOCTYPE, a truncated t.mbox.gz, a 404). Backoff waits go to a recorder, not to sleep.
"""
from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import require_corpus
from tests.support.public_inbox import (
    PublicInboxServer,
    atom_entry_id,
    load_eml_dir,
    make_message,
    mboxrd_unescape,
    message_id_of,
    public_inbox,  # noqa: F401 - the factory fixture
    require_public_inbox,
    start_public_inbox,
)
from triagebot.http_client.client import RequestsClient
from triagebot.http_client.protocol import HttpPolicy, SourceError
from triagebot.ingest.lore import LoreSource
from triagebot.ingest.protocol import Batch

ATOM = "{http://www.w3.org/2005/Atom}"
DAY = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
POLICY = HttpPolicy(user_agent="triagebot-test/0.1 (operator: lore-tests@example.org)",
                    timeout_seconds=1.0, attempts=4, backoff_seconds=0.25,
                    backoff_max_seconds=10.0)
SLOW_SECONDS = 1.6  # past POLICY.timeout_seconds


class MidpointRandom(random.Random):
    """Jitter pinned to its midpoint, so the backoff waits are exactly 0.25, 0.5, 1.0 s."""

    def uniform(self, a: float, b: float) -> float:
        return (a + b) / 2


class Waits(list):
    """A Sleeper that records the waits instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make_source(list_url: str, waits: Waits | None = None, **kwargs) -> LoreSource:
    return LoreSource(list_url, RequestsClient(POLICY, trust_environment=False), POLICY,
                      sleep=waits if waits is not None else Waits(), rng=MidpointRandom(),
                      **kwargs)


def ids_of(batch: Batch) -> list[str]:
    return [message_id_of(m.raw) for m in batch.messages]


def retries(batch_or_events) -> list[str]:
    events = batch_or_events.events if isinstance(batch_or_events, Batch) else batch_or_events
    return [e for e in events if "retrying in" in e]


def feed_ids(server: PublicInboxServer) -> list[str]:
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            server.atom_url, timeout=10) as response:
        root = ET.fromstring(response.read())
    return [e.findtext(f"{ATOM}id") for e in root.findall(f"{ATOM}entry")]


def served_raw(server: PublicInboxServer, message_id: str) -> bytes:
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            server.raw_url(message_id), timeout=10) as response:
        return mboxrd_unescape(response.read())


def assert_batch_is(batch: Batch, expected_ids, server: PublicInboxServer, list_url: str):
    """The batch holds each expected message exactly once, as served, with its URL."""
    got = ids_of(batch)
    assert len(got) == len(set(got)), "a message came twice"
    assert set(got) == set(expected_ids)
    for message in batch.messages:
        message_id = message_id_of(message.raw)
        assert message.source_kind == "lore"
        assert message.list_name == server.list_name
        assert message.source_url == list_url + server.message_url(message_id).split(
            "/", 4)[4]
        assert message.raw == served_raw(server, message_id), message_id


# ---------------------------------------------------------------------------------------------
# a misbehaving HTTP server in front of public-inbox

CHALLENGE = (b"<!DOCTYPE html><html><head><title>Making sure you&#39;re not a bot!</title>"
             b"</head><body><p>Please wait while we check your browser (proof of work)</p>"
             b"</body></html>")
DOCTYPE_FEED = (b'<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY a "aaaaaaaaaa">'
                b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
                b'<feed xmlns="http://www.w3.org/2005/Atom"><title>&b;</title></feed>')


@dataclass
class Fault:
    suffix: str  # request paths ending like this misbehave
    kind: str  # "500", "slow", "html", "doctype", "truncate", "404"
    times: int


class FaultyProxy:
    """Forwards GETs to `upstream` (passing its own Host, so feed links point back here) after
    answering each path in `faults` badly that many times; records path and User-Agent."""

    def __init__(self, upstream: PublicInboxServer, faults: list[Fault] = ()) -> None:
        self.upstream = upstream
        self.faults = list(faults)
        self.requests: list[tuple[str, str | None]] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep the test output quiet
                pass

            def do_GET(self) -> None:
                proxy.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def list_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{self.upstream.list_name}/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def paths(self, suffix: str) -> list[str]:
        return [path for path, _ in self.requests if path.endswith(suffix)]

    def _take_fault(self, path: str) -> str | None:
        with self.lock:
            self.requests.append((path, self._agent))
            for fault in self.faults:
                if fault.times > 0 and path.endswith(fault.suffix):
                    fault.times -= 1
                    return fault.kind
        return None

    def _forward(self, request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        host = f"127.0.0.1:{self.server.server_address[1]}"
        upstream = urllib.request.Request(self.upstream.base_url + request.path,
                                          headers={"Host": host})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(upstream, timeout=10) as response:
                return response.status, response.headers.get("Content-Type", ""), response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("Content-Type", ""), error.read()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        self._agent = request.headers.get("User-Agent")
        kind = self._take_fault(request.path)
        try:
            if kind == "500":
                self._send(request, 500, "text/plain", b"Internal Server Error\n")
            elif kind == "404":
                self._send(request, 404, "text/plain", b"Not Found\n")
            elif kind == "html":
                self._send(request, 200, "text/html; charset=UTF-8", CHALLENGE)
            elif kind == "doctype":
                self._send(request, 200, "application/atom+xml", DOCTYPE_FEED)
            else:
                if kind == "slow":
                    time.sleep(SLOW_SECONDS)
                status, content_type, body = self._forward(request)
                if kind == "truncate":
                    body = body[:len(body) // 2]
                self._send(request, status, content_type, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (the slow answers)

    @staticmethod
    def _send(request: BaseHTTPRequestHandler, status: int, content_type: str,
              body: bytes) -> None:
        request.send_response(status)
        request.send_header("Content-Type", content_type)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)


@pytest.fixture
def faulty():
    proxies: list[FaultyProxy] = []

    def factory(upstream: PublicInboxServer, faults: list[Fault] = ()) -> FaultyProxy:
        proxies.append(FaultyProxy(upstream, faults))
        return proxies[-1]

    yield factory
    for proxy in proxies:
        proxy.close()


# ---------------------------------------------------------------------------------------------
# inboxes


def small_inbox() -> list[bytes]:
    """A report with a reply, a standalone message, one with a '/' in its id, one without."""
    return [
        make_message("[REPORT] ext4 regression", "Numbers below.\nFrom the start it was slow.\n",
                     msgid="report-1@example.org", date=DAY),
        make_message("Re: [REPORT] ext4 regression", "> From the start\nCan reproduce.\n",
                     msgid="reply-1@example.org", in_reply_to="report-1@example.org",
                     date=DAY + timedelta(hours=1)),
        make_message("[PATCH] ext4: fix it", "diff\n", msgid="patch-1@example.org",
                     date=DAY + timedelta(hours=2)),
        make_message("bug 1", "x\n", msgid="bug-1-2@https.bugzilla.example.org/",
                     date=DAY + timedelta(hours=3)),
        make_message("no id here", "public-inbox assigns one\n", msgid="",
                     date=DAY + timedelta(hours=4)),
    ]


@pytest.fixture(scope="module")
def shared_inbox(tmp_path_factory):
    """Read-only across the module: fault tests poll it through proxies from scratch."""
    require_public_inbox()
    with start_public_inbox(tmp_path_factory.mktemp("lore"), "linux-ext4",
                            small_inbox()) as server:
        yield server


# ---------------------------------------------------------------------------------------------
# polling the real server


def test_first_poll_returns_every_message_and_a_second_poll_nothing(shared_inbox):
    server = shared_inbox
    source = make_source(server.list_url)
    assert source.key == f"lore:{server.list_url}" and source.list_name == "linux-ext4"

    first = source.poll(None)
    assert_batch_is(first, server.message_ids, server, server.list_url)
    assert first.events == () and not first.more
    cursor = json.loads(first.cursor)
    assert cursor["v"] == 2 and cursor["since_refetch"] == 1 and cursor["heal"] is None
    roots = {t["root"] for t in cursor["tracked"]}
    assert roots == set(server.message_ids) - {"reply-1@example.org"}  # one per thread

    second = source.poll(first.cursor)
    assert second.messages == () and second.events == ()


def test_corpus_threads_are_fetched_whole(tmp_path):
    directory = require_corpus()
    names = ["lkp-perf_ext4-fiemap-15.8pct.eml", "reply_ext4-fiemap-15.8pct-reply.eml",
             "human_xfs-6.1-vs-5.15-perf-regression.eml", "reply_xfs-6.1-vs-5.15-reply.eml",
             "reply_xfs-6.1-vs-5.15-I-could-reproduce.eml"]
    with start_public_inbox(tmp_path, "linux-ext4",
                            load_eml_dir(directory, limit=10, names=names)) as server:
        source = make_source(server.list_url)
        first = source.poll(None)
        assert server.duplicates == []
        assert_batch_is(first, server.message_ids, server, server.list_url)
        assert source.poll(first.cursor).messages == ()


def test_a_new_message_and_a_new_reply_are_the_only_things_fetched(public_inbox):
    server = public_inbox("linux-ext4", small_inbox())
    source = make_source(server.list_url, refetch_tracked_every=1000)
    cursor = source.poll(None).cursor
    assert source.poll(cursor).messages == ()

    new = server.add_message(make_message("[REPORT] xfs regression", "new\n",
                                          msgid="new-1@example.org", date=DAY + timedelta(days=1)))
    third = source.poll(cursor)
    assert ids_of(third) == [new]
    assert third.messages[0].source_url == server.message_url(new)
    assert source.poll(third.cursor).messages == ()

    reply = server.add_message(make_message(
        "Re: [REPORT] ext4 regression", "Bisected.\n", msgid="reply-2@example.org",
        in_reply_to="reply-1@example.org", references=["report-1@example.org"],
        date=DAY + timedelta(days=2)))
    fourth = source.poll(third.cursor)
    # the reply's thread whole, nothing from any other thread
    assert_batch_is(fourth, ["report-1@example.org", "reply-1@example.org", reply],
                    server, server.list_url)
    assert source.poll(fourth.cursor).messages == ()


def test_a_reply_that_never_shows_in_the_feed_is_found_in_a_tracked_thread(public_inbox):
    server = public_inbox("linux-ext4", small_inbox()[:3], feedmax=3)
    late = make_message("Re: [REPORT] ext4 regression", "Old date, delivered late.\n",
                        msgid="late-1@example.org", in_reply_to="reply-1@example.org",
                        date=DAY - timedelta(days=30))
    feed_only = make_source(server.list_url, refetch_tracked_every=1000)
    tracking = make_source(server.list_url, refetch_tracked_every=2)
    cursor = tracking.poll(None).cursor

    server.add_message(late)
    assert atom_entry_id("late-1@example.org") not in feed_ids(server)
    assert feed_only.poll(cursor).messages == ()  # the feed alone never shows it

    second = tracking.poll(cursor)  # the second poll refetches the tracked threads
    assert_batch_is(second,
                    ["report-1@example.org", "reply-1@example.org", "late-1@example.org"],
                    server, server.list_url)
    assert json.loads(second.cursor)["since_refetch"] == 0
    # refetching threads that did not change returns nothing
    third = tracking.poll(tracking.poll(second.cursor).cursor)
    assert third.messages == () and json.loads(third.cursor)["since_refetch"] == 0

    untracked = make_source(server.list_url, track_threads=False)
    assert json.loads(untracked.poll(None).cursor)["tracked"] == []


def test_more_new_messages_than_the_feed_holds_are_found_through_the_search(public_inbox):
    server = public_inbox("linux-ext4", small_inbox()[:1], feedmax=2)
    source = make_source(server.list_url)
    cursor = source.poll(None).cursor
    now = datetime.now(UTC)
    for n in range(3):  # the list received them now; their Dates are the senders'
        server.add_message(make_message(
            f"burst {n}", "x\n", msgid=f"burst-{n}@example.org",
            date=DAY + timedelta(days=1, hours=n),
            extra_headers=[("Received", "by lists.example.org; "
                            + format_datetime(now + timedelta(seconds=n)))]))
    # public-inbox-httpd reads its search index snapshot for up to 30 s after new mail; a
    # restart makes it read the current one now, without a sleep in the test
    server.stop()
    server.start()
    batch = source.poll(cursor)
    assert set(ids_of(batch)) == {"burst-0@example.org", "burst-1@example.org",
                                  "burst-2@example.org"}
    assert [e for e in batch.events if "gap healed" in e]
    assert not [e for e in batch.events if "may have been missed" in e]


def test_an_unreadable_cursor_starts_again_from_the_feed(shared_inbox):
    source = make_source(shared_inbox.list_url)
    batch = source.poll('{"v": 99}')
    assert set(ids_of(batch)) == set(shared_inbox.message_ids)
    assert len(batch.events) == 1 and "cursor unreadable" in batch.events[0]


# ---------------------------------------------------------------------------------------------
# faults


def test_server_stopped_then_started_loses_nothing(public_inbox):
    server = public_inbox("linux-ext4", small_inbox())
    waits = Waits()
    source = make_source(server.list_url, waits)
    cursor = source.poll(None).cursor

    server.stop()
    with pytest.raises(SourceError, match="gave up after 4 attempts"):
        source.poll(cursor)
    assert waits == [0.25, 0.5, 1.0]  # backoff doubles (jitter pinned to its midpoint)

    # mail arrives while the web server is down; the caller kept the old cursor
    new = server.add_message(make_message("while down", "x\n", msgid="down-1@example.org",
                                          date=DAY + timedelta(days=1)))
    server.start()
    batch = source.poll(cursor)
    assert ids_of(batch) == [new] and batch.events == ()


@pytest.mark.parametrize("suffix, kind, times, problem", [
    ("new.atom", "500", 2, "HTTP 500"),
    ("new.atom", "slow", 1, "Timeout"),
    ("new.atom", "html", 3, "an HTML page (text/html; charset=UTF-8), not an Atom feed"),
    ("new.atom", "doctype", 1, "document type declaration"),
    ("t.mbox.gz", "500", 2, "HTTP 500"),
    ("t.mbox.gz", "slow", 1, "Timeout"),
    ("t.mbox.gz", "truncate", 3, "truncated gzip"),
    ("t.mbox.gz", "html", 1, "not a thread mbox"),
])
def test_faults_are_retried_with_one_event_each_and_lose_nothing(
        shared_inbox, faulty, suffix, kind, times, problem):
    proxy = faulty(shared_inbox, [Fault(suffix, kind, times)])
    waits = Waits()
    source = make_source(proxy.list_url, waits)
    batch = source.poll(None)

    assert_batch_is(batch, shared_inbox.message_ids, shared_inbox, proxy.list_url)
    assert len(retries(batch)) == times == len(batch.events)
    assert all(problem in event for event in batch.events), batch.events
    assert waits == [0.25 * 2 ** n for n in range(times)]
    assert {agent for _, agent in proxy.requests} == {POLICY.user_agent}
    assert source.poll(batch.cursor).messages == ()


def test_a_fault_past_the_retry_budget_keeps_the_cursor_and_the_next_poll_recovers(
        shared_inbox, faulty):
    proxy = faulty(shared_inbox, [Fault("t.mbox.gz", "truncate", POLICY.attempts)])
    source = make_source(proxy.list_url)
    first = source.poll(None)  # that entry is skipped, the list's other threads are not held up
    (skipped,) = first.skipped
    assert "truncated gzip" in skipped.reason and "gave up after 4 attempts" in skipped.reason
    assert not skipped.given_up and skipped.attempt == 1
    batch = source.poll(first.cursor)  # the next poll tries it again, and gets it
    assert skipped.key in ids_of(batch)  # its thread, whole (messages seen twice are stored once)
    assert set(ids_of(first)) | set(ids_of(batch)) == set(shared_inbox.message_ids)
    assert batch.recovered == (skipped.key,) and batch.skipped == ()


def test_a_missing_thread_mbox_falls_back_to_raw_and_a_gone_message_is_skipped(
        shared_inbox, faulty):
    patch_path = "/patch-1@example.org/"
    proxy = faulty(shared_inbox, [Fault(patch_path + "t.mbox.gz", "404", 1),
                                  Fault("/bug-1-2@https.bugzilla.example.org%2F/t.mbox.gz",
                                        "404", 1),
                                  Fault("/bug-1-2@https.bugzilla.example.org%2F/raw", "404", 1)])
    source = make_source(proxy.list_url)
    batch = source.poll(None)
    gone = "bug-1-2@https.bugzilla.example.org/"
    assert_batch_is(batch, set(shared_inbox.message_ids) - {gone}, shared_inbox, proxy.list_url)
    assert proxy.paths(patch_path + "raw") == ["/linux-ext4" + patch_path + "raw"]
    assert [e for e in batch.events if "skipped entry" in e and "bugzilla" in e]
    assert len(batch.events) == 3  # two fallbacks, one skip
    assert source.poll(batch.cursor).messages == ()  # a skipped entry is not retried forever
