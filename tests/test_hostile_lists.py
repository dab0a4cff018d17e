"""Issue 21, findings 2, 3 and 9: a list server that misbehaves on purpose (tests/support/hostile_lore.py).

Before: an entry whose thread answered 500 or 414, trickled past the deadline, or whose link
could not be read (`http://[::1/`, a fullwidth `＃`: a ValueError) failed the whole poll every
time, the cursor never moved; a feed showing new entries on every request kept `triage
ingest` polling for ever; search pages that alternate ran to the 100,000-result limit; a poll
held every thread it fetched in memory and stored nothing before its end, so a heal killed
within its first paced batch stored nothing.
"""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.hostile_lore import Behaviour, HostileLore
from triagebot.http_client.bounds import PollBounds
from triagebot.http_client.client import RequestsClient
from triagebot.http_client.protocol import HttpPolicy, SourceError
from triagebot.ingest.lore import LoreSource
from triagebot.ingest.protocol import SKIPPED_ENTRY_SOURCE
from triagebot.ingest.runner import ingest_once
from triagebot.store.sqlite import SqliteStore

POLICY = HttpPolicy(user_agent="triagebot-test (hostile lists)", timeout_seconds=5, deadline_seconds=1,
                    attempts=1, backoff_seconds=0)
NOW = datetime(2026, 1, 2, tzinfo=UTC)


def lore(server: HostileLore, **options) -> LoreSource:
    options.setdefault("clock", lambda: NOW.timestamp())
    return LoreSource(server.list_url, RequestsClient(POLICY), POLICY, sleep=lambda seconds: None, **options)


def stored_ids(store: SqliteStore) -> set[str]:
    return {message.message_id for message in store.iter_raw()}


# -- finding 2: one bad entry --------------------------------------------------------------------

class BadEntries(Behaviour):
    """Good entries around five the server will not give, in each way the issue names."""

    def feed_entries(self, request):
        return [("good-2@ok", None), ("ipv6@bad", "http://[::1/"),
                ("fullwidth@bad", self.base.replace("/list/", "\uff03x/list/") + "fw@bad/"),
                ("err500@bad", None), ("long414@bad", None), ("trickle@bad", None), ("good-1@ok", None)]

    def thread(self, message_id, kind):
        if message_id == "err500@bad":
            return 500, b"oops"
        if message_id == "long414@bad":
            return 414, b"URI Too Long"
        return None

    def trickle(self, message_id, kind):
        return message_id == "trickle@bad"


def test_entries_the_server_will_not_give_are_quarantined_and_the_list_goes_on(tmp_path: Path) -> None:
    with HostileLore(BadEntries()) as server, SqliteStore(tmp_path / "t.db") as store:
        source = lore(server)
        first = ingest_once(source, store, jobs=1)
        assert len(first.skipped) == 5
        assert stored_ids(store) == {"good-1@ok", "good-2@ok"}  # the list's other messages
        assert store.get_cursor(source.key) is not None  # and the cursor moved on
        held = {row.key: row for row in store.quarantined()}
        assert set(held) == set(first.skipped)
        assert {"err500@bad", "long414@bad", "trickle@bad"} < set(held)
        assert all(row.source_name == SKIPPED_ENTRY_SOURCE for row in held.values())
        assert "HTTP 500" in held["err500@bad"].error and "HTTP 414" in held["long414@bad"].error
        assert "deadline" in held["trickle@bad"].error
        links = [row for key, row in held.items() if key.startswith("entry-")]
        assert len(links) == 2 and all("link cannot be read" in row.error for row in links)
        assert sorted(row.error.split(" (")[0] for row in links) == ["its link cannot be read"] * 2
        # retried at the next polls, a bounded number of times, then given up with the reason kept
        for _ in range(3):
            ingest_once(source, store, jobs=1)
        assert len(server.paths("/err500@bad/t.mbox.gz")) == 3  # three polls tried it, no more
        held = {row.key: row for row in store.quarantined()}
        for key in ("err500@bad", "long414@bad", "trickle@bad"):
            assert held[key].attempts == 3 and held[key].error.startswith("given up after 3 polls: ")
        assert "HTTP 500" in held["err500@bad"].error
        assert stored_ids(store) == {"good-1@ok", "good-2@ok"}


def test_a_skipped_entry_that_comes_back_leaves_the_quarantine(tmp_path: Path) -> None:
    class Flaky(Behaviour):
        broken = True

        def feed_entries(self, request):
            return [("flaky@x", None), ("fine@x", None)]

        def thread(self, message_id, kind):
            return (503, b"busy") if message_id == "flaky@x" and self.broken else None

    behaviour = Flaky()
    with HostileLore(behaviour) as server, SqliteStore(tmp_path / "t.db") as store:
        source = lore(server)
        ingest_once(source, store, jobs=1)
        assert store.get_quarantined("flaky@x") is not None and stored_ids(store) == {"fine@x"}
        behaviour.broken = False
        ingest_once(source, store, jobs=1)
        assert store.get_quarantined("flaky@x") is None and stored_ids(store) == {"fine@x", "flaky@x"}


def test_a_server_failing_every_entry_fails_the_poll_and_charges_no_entry(tmp_path: Path) -> None:
    """Five entries in a row failing is the server's trouble (lore answering 503 under load), not
    theirs: nothing is quarantined or given up, and the next poll, the server well, stores all."""
    class Overloaded(Behaviour):
        busy = True

        def feed_entries(self, request):
            return [(f"m{index}@busy", None) for index in range(7)]

        def thread(self, message_id, kind):
            return (503, b"busy") if self.busy and message_id != "m6@busy" else None

    behaviour = Overloaded()
    with HostileLore(behaviour) as server, SqliteStore(tmp_path / "t.db") as store:
        source = lore(server)
        with pytest.raises(SourceError, match="5 entries in a row failed"):
            ingest_once(source, store, jobs=1)
        assert store.count_quarantined() == 0
        behaviour.busy = False
        ingest_once(source, store, jobs=1)
        assert stored_ids(store) == {f"m{index}@busy" for index in range(7)} and store.count_quarantined() == 0


# -- finding 3: polls without bounds -------------------------------------------------------------

class EndlessFeed(Behaviour):
    def feed_entries(self, request):
        return [(f"f{request}.{index}@endless", None) for index in range(1000)]


@pytest.mark.parametrize("bound", ["messages", "seconds", "bytes"])
def test_a_feed_new_on_every_request_ends_the_poll_at_its_bound(tmp_path: Path, bound: str) -> None:
    ticks = iter(range(10**6))  # a clock that moves one second each time it is read
    bounds = {"messages": PollBounds(messages=120), "seconds": PollBounds(seconds=90),
              "bytes": PollBounds(bytes=20_000)}[bound]
    with HostileLore(EndlessFeed()) as server, SqliteStore(tmp_path / "t.db") as store:
        result = ingest_once(lore(server), store, jobs=1, bounds=bounds, monotonic=lambda: float(next(ticks)))
        assert result.bounded is not None and "a poll" in result.bounded
        assert [event for event in result.events if "poll ended at" in event]
        stored = store.count_messages()
        assert 0 < stored <= 120
        # the next poll goes on, bounded the same way
        again = ingest_once(lore(server), store, jobs=1, bounds=bounds, monotonic=lambda: float(next(ticks)))
        assert again.bounded is not None and store.count_messages() > stored


def test_bytes_stored_per_source_per_day_are_bounded(tmp_path: Path) -> None:
    day = [NOW]
    with HostileLore(EndlessFeed()) as server, SqliteStore(tmp_path / "t.db") as store:
        bounds = PollBounds(bytes_per_day=10_000)
        first = ingest_once(lore(server), store, jobs=1, bounds=bounds, clock=lambda: day[0])
        assert "a day" in (first.bounded or "")
        feeds = len(server.paths("new.atom"))
        later = ingest_once(lore(server), store, jobs=1, bounds=bounds, clock=lambda: day[0])
        assert "not polled until the next UTC day" in (later.bounded or "") and later.seen == 0
        assert len(server.paths("new.atom")) == feeds  # not even the feed was asked for
        day[0] = NOW + timedelta(days=1)
        assert ingest_once(lore(server), store, jobs=1, bounds=bounds, clock=lambda: day[0]).seen > 0


class Cycling(Behaviour):
    """Search pages that alternate between two sets of results, whatever the offset."""

    def feed_entries(self, request):
        return [("feed-0@cycle", None)]

    def search(self, query, offset, request):
        page = "A" if request % 2 else "B"
        return [f"cyc{page}{index}@cycle" for index in range(50)]


def test_search_pages_that_cycle_are_noticed_by_their_results_ids(tmp_path: Path) -> None:
    with HostileLore(Cycling()) as server:
        source = lore(server)
        cursor, events = None, []
        for _ in range(6):
            batch = source.poll(cursor)
            cursor, events = batch.cursor, events + list(batch.events)
            if not batch.more:
                break
        assert not batch.more and json.loads(cursor)["heal"] is None
        assert [event for event in events if "the pages cycle" in event]
        assert len(server.paths("?q=")) <= 3  # A, B, then A again: given up


def test_a_poll_is_stored_thread_by_thread(tmp_path: Path) -> None:
    """Memory holds one thread, not the poll: each thread is stored as it arrives."""
    class Big(Behaviour):
        def feed_entries(self, request):
            return [(f"big{index}@x", None) for index in range(20)]

        def thread(self, message_id, kind):
            import gzip

            from tests.support.hostile_lore import mboxrd, message
            return 200, gzip.compress(mboxrd([message(message_id, body="y" * 200_000 + "\n")]))

    sizes: list[int] = []

    class Recording(SqliteStore):
        def ingest_batch(self, messages, cursor=None):
            messages = list(messages)
            sizes.append(sum(len(message.raw) for message in messages))
            return super().ingest_batch(messages, cursor)

    with HostileLore(Big()) as server, Recording(tmp_path / "t.db") as store:
        ingest_once(lore(server), store, jobs=1)
        assert store.count_messages() == 20
    assert max(sizes) < 2 * 200_000  # never two threads at once


# -- finding 9: a heal killed within its first paced batch ---------------------------------------

class Killed(BaseException):
    """The process killed (SIGKILL, a restart): nothing after it runs."""


class Backlog(Behaviour):
    def feed_entries(self, request):
        return [("new-0@heal", None)]

    def search(self, query, offset, request):
        ids = [f"old{index}@heal" for index in range(offset, min(offset + 50, 30))]
        return ids or None


def test_a_paced_heal_killed_midway_keeps_what_it_fetched_and_progresses(tmp_path: Path) -> None:
    with HostileLore(Backlog()) as server, SqliteStore(tmp_path / "t.db") as store:
        counts = []
        for _ in range(20):  # each run is killed at its 6th paced request
            waits = iter(range(6))

            def sleep(seconds: float, waits=waits) -> None:
                if next(waits, None) is None:
                    raise Killed()

            source = LoreSource(server.list_url, RequestsClient(POLICY), POLICY, sleep=sleep,
                                heal_interval_seconds=1.0, clock=lambda: NOW.timestamp())
            try:
                ingest_once(source, store, jobs=1)
                break
            except Killed:
                counts.append(store.count_messages())
        assert counts and counts[0] > 0  # the first run, killed, kept what it fetched
        assert counts == sorted(counts) and len(set(counts)) == len(counts)  # every run progressed
        assert {f"old{index}@heal" for index in range(30)} <= stored_ids(store)


def test_reparse_leaves_skipped_entries_to_the_polls(tmp_path: Path) -> None:
    """A skipped entry's row holds the feed entry's XML, not a message: reparse must not make a
    record of it."""
    from triagebot.cli.reparse import retry_quarantined

    with HostileLore(BadEntries()) as server, SqliteStore(tmp_path / "t.db") as store:
        ingest_once(lore(server), store, jobs=1)
        before = {row.key: row.error for row in store.quarantined()}
        assert retry_quarantined(store, every=True) == (0, 0, 0)
        assert {row.key: row.error for row in store.quarantined()} == before
        assert stored_ids(store) == {"good-1@ok", "good-2@ok"}


def test_files_the_user_imports_are_not_bounded(tmp_path: Path) -> None:
    from tests.support.hostile_lore import mboxrd, message
    from triagebot.ingest.files import FileSource

    mbox = tmp_path / "own.mbox"
    mbox.write_bytes(mboxrd([message(f"file{index}@x") for index in range(30)]))
    with SqliteStore(tmp_path / "t.db") as store:
        result = ingest_once(FileSource(mbox), store, jobs=1, bounds=PollBounds(messages=5, bytes_per_day=100))
        assert result.bounded is None and store.count_messages() == 30
