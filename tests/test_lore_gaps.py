"""Lore without gaps: bursts past new.atom's 25 entries and a daemon down for a day are healed
through public-inbox's own search (a real public-inbox-httpd with a Xapian index built by
public-inbox-index); an inbox without a search index degrades to the feed, with the warning.

Messages carry a Received: header stamped when "the list got them" (public-inbox's received
time, what `rt:` searches), and many carry a much older Date: (patch series with author dates,
replies to old threads, a sender with a broken clock), which `dt:` would miss. The poller's
clock is injected, so "a day later" is a number, not a wait.

public-inbox-httpd keeps the search index snapshot it opened for up to 30 s after new mail
(PublicInbox::Inbox's cleanup timer); after adding mail the tests restart it, so it answers from
the current index at once, without sleeping.
"""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from tests.support.public_inbox import (  # noqa: F401
    make_message,
    message_id_of,
    public_inbox,
    require_public_inbox,
    start_public_inbox,
)
from tests.test_ingest_lore import make_source
from triagebot.ingest.runner import ingest_once
from triagebot.store.sqlite import SqliteStore

# "now" for the first poll; the list's Received times are set around it
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(days=3)
OLD = datetime(2019, 5, 1, tzinfo=UTC)  # the Date of a sender whose clock is wrong


class Clock:
    def __init__(self, when: datetime) -> None:
        self.when = when

    def __call__(self) -> float:
        return self.when.timestamp()


def received(raw_kwargs: dict, when: datetime) -> bytes:
    headers = [("Received", "from relay.example.org by lists.example.org; "
                + format_datetime(when))]
    return make_message(extra_headers=headers, **raw_kwargs)


def burst(tag: str, count: int, first: datetime, span: timedelta,
          old_roots: list[str]) -> list[bytes]:
    """`count` messages the list received between `first` and `first + span`: patch series
    (cover letter and patches, author Dates a month old), replies to `old_roots` (Dates of
    their threads' days) and messages dated years back."""
    messages: list[bytes] = []
    step = span / count
    n = 0
    while len(messages) < count:
        when = first + step * len(messages)
        kind = n % 3
        if kind == 0:  # a series: cover letter and up to 9 patches replying to it
            cover = f"{tag}-series-{n}@example.org"
            size = min(10, count - len(messages))
            for patch in range(size):
                msgid = cover if patch == 0 else f"{tag}-series-{n}-{patch}@example.org"
                messages.append(received(dict(
                    subject=f"[PATCH {patch}/{size - 1}] {tag} series {n}", body="diff\n",
                    msgid=msgid, in_reply_to=None if patch == 0 else cover,
                    date=T0 - timedelta(days=30, minutes=-patch)),
                    first + step * len(messages)))
        elif kind == 1:  # a reply to an old thread
            root = old_roots[n % len(old_roots)]
            messages.append(received(dict(
                subject=f"Re: old thread {root}", body="> old\nstill seen here\n",
                msgid=f"{tag}-reply-{n}@example.org", in_reply_to=root,
                date=T0 - timedelta(days=10)), when))
        else:
            messages.append(received(dict(
                subject=f"{tag} note {n}", body="hello\n", msgid=f"{tag}-old-{n}@example.org",
                date=OLD + timedelta(minutes=n)), when))
        n += 1
    return messages


def seed(count: int = 30) -> list[bytes]:
    """What the list held before the first poll: `count` threads received the two days
    before T0."""
    return [received(dict(subject=f"seed thread {n}", body="first\n",
                          msgid=f"seed-{n}@example.org", date=T0 - timedelta(days=2, minutes=-n)),
                     T0 - timedelta(days=2, minutes=-n)) for n in range(count)]


def ids(messages: list[bytes]) -> set[str]:
    return {message_id_of(raw) for raw in messages}


@pytest.fixture(scope="module")
def full_inbox(tmp_path_factory):
    require_public_inbox()
    with start_public_inbox(tmp_path_factory.mktemp("pi-full"), "lkml", seed()[:1]) as server:
        server.bulk_add(seed()[1:])
        server.stop()
        server.start()
        yield server


@pytest.fixture(scope="module")
def unindexed_inbox(tmp_path_factory):
    require_public_inbox()
    with start_public_inbox(tmp_path_factory.mktemp("pi-basic"), "lkml", seed()[:1],
                            indexlevel="basic") as server:
        server.bulk_add(seed()[1:])
        server.stop()
        server.start()
        yield server


def test_300_between_two_polls_then_a_day_down_lose_nothing(full_inbox, tmp_path):
    server = full_inbox
    clock = Clock(T0)
    source = make_source(server.list_url, clock=clock)
    with SqliteStore(tmp_path / "t.db") as store:
        first = ingest_once(source, store, jobs=1)
        assert set(first.new_ids) == ids(seed())  # the first poll reads back 14 days

        roots = sorted(ids(seed()))
        between = burst("b300", 300, T0 + timedelta(seconds=30), timedelta(minutes=14), roots)
        server.bulk_add(between)
        server.stop()
        server.start()
        clock.when = T0 + timedelta(minutes=15)
        second = ingest_once(source, store, jobs=1)
        assert set(second.new_ids) == ids(between)
        assert len(second.new_ids) == 300

        # the daemon is down for a day: 1,000 messages arrive, then it polls again
        day = burst("day", 1000, T0 + timedelta(minutes=20), timedelta(hours=23), roots)
        server.bulk_add(day)
        server.stop()
        server.start()
        clock.when = T0 + timedelta(days=1, minutes=15)
        third = ingest_once(source, store, jobs=1)
        assert set(third.new_ids) == ids(day)

        # caught up: the next poll (the recheck of the healed window) finds nothing new
        clock.when += timedelta(minutes=5)
        assert ingest_once(source, store, jobs=1).new_ids == []
        assert json.loads(store.get_cursor(source.key))["recheck"] is None


def test_each_poll_hands_back_a_bounded_batch_while_healing(full_inbox):
    server = full_inbox
    source = make_source(server.list_url, clock=Clock(T0 + timedelta(days=2)),
                         entries_per_poll=7, track_threads=False)
    batch = source.poll(None)
    assert batch.more and json.loads(batch.cursor)["heal"]["offset"] > 0
    seen = set()
    polls = 1
    while batch.more:
        seen |= {m.raw for m in batch.messages}
        batch = source.poll(batch.cursor)
        polls += 1
    seen |= {m.raw for m in batch.messages}
    # 7 threads a poll: the 30 seed threads alone take 5 polls (more once other tests of this
    # module have added their bursts to the shared inbox)
    assert polls >= 5 and len(seen) >= 30


def test_a_heal_paces_its_requests_through_the_sources_sleeper(full_inbox):
    from tests.test_ingest_lore import Waits

    server = full_inbox
    waits = Waits()
    source = make_source(server.list_url, waits, clock=Clock(T0 + timedelta(days=2)),
                         entries_per_poll=5, track_threads=False, heal_interval_seconds=1.5)
    batch = source.poll(None)
    # one search page, then five threads: a pause before each request after the first
    assert len(batch.messages) >= 5 and waits == [1.5] * 5
    unpaced = Waits()
    make_source(server.list_url, unpaced, clock=Clock(T0 + timedelta(days=2)),
                entries_per_poll=5, track_threads=False).poll(None)
    assert unpaced == []


def test_without_a_search_index_the_feed_alone_with_the_warning(unindexed_inbox):
    server = unindexed_inbox
    clock = Clock(T0)
    source = make_source(server.list_url, clock=clock)
    first = source.poll(None)
    assert [e for e in first.events if "no search index" in e]
    assert len(first.messages) == 25  # the feed's newest 25 of 30: all there is to read

    more = burst("nosearch", 40, T0 + timedelta(minutes=1), timedelta(minutes=10),
                 sorted(ids(seed())))
    server.bulk_add(more)
    server.stop()
    server.start()
    clock.when = T0 + timedelta(minutes=15)
    second = source.poll(first.cursor)
    assert [e for e in second.events if "no search index" in e]
    assert [e for e in second.events if "may have been missed" in e]
    assert len({m.raw for m in second.messages}) < 40


def test_a_version_1_cursor_is_read_and_a_gap_after_it_heals_from_since(full_inbox):
    server = full_inbox
    source = make_source(server.list_url, clock=Clock(T0 + timedelta(days=3)))
    batch = source.poll(None)
    while batch.more:
        batch = source.poll(batch.cursor)
    cursor = json.loads(batch.cursor)
    v1 = json.dumps({"v": 1, "seen": ["0123456789abcdef"], "tracked": [], "since_refetch": 0})
    healed = source.poll(v1)
    assert not [e for e in healed.events if "unreadable" in e]
    assert [e for e in healed.events if "does not reach back" in e]
    assert cursor["v"] == 2 and json.loads(healed.cursor)["v"] == 2


def test_since_sets_how_far_back_a_first_poll_reads(full_inbox):
    server = full_inbox
    clock = Clock(T0 + timedelta(days=4))

    def first_poll_ids(**kwargs) -> set[str]:
        source = make_source(server.list_url, clock=clock, track_threads=False, **kwargs)
        batch, found = source.poll(None), set()
        while True:
            found |= {message_id_of(m.raw) for m in batch.messages}
            if not batch.more:
                return found
            batch = source.poll(batch.cursor)

    # received after every message on the list: the feed's newest entries only
    late = first_poll_ids(since=T0 + timedelta(days=3))
    everything = first_poll_ids()  # the default, 14 days back: all of the list
    assert everything == set(server.message_ids)
    assert late < everything


def test_a_healed_window_is_read_once_more_since_the_search_lags_the_feed(public_inbox):
    """public-inbox-httpd answers searches from the index snapshot it opened (for up to 30 s
    after new mail) while its feed is current: the heal may end before messages the feed no
    longer shows; the next poll reads the window again. Whether the snapshot is stale at the
    second poll or not, the two polls together must hold every message."""
    clock = Clock(T0)
    server = public_inbox("linux-ext4", seed(1), feedmax=2)
    source = make_source(server.list_url, clock=clock)
    first = source.poll(None)
    burst_ids = []
    for n in range(3):
        burst_ids.append(server.add_message(received(dict(
            subject=f"burst {n}", body="x\n", msgid=f"lag-{n}@example.org",
            date=OLD + timedelta(hours=n)), T0 + timedelta(minutes=1, seconds=n))))
    clock.when = T0 + timedelta(minutes=5)
    second = source.poll(first.cursor)
    assert json.loads(second.cursor)["recheck"] is not None
    server.stop()
    server.start()
    clock.when = T0 + timedelta(minutes=10)
    third = source.poll(second.cursor)
    assert {message_id_of(m.raw) for m in second.messages + third.messages} == set(burst_ids)
    assert json.loads(third.cursor)["recheck"] is None


def test_a_search_page_over_its_cap_gives_the_heal_up_and_keeps_the_feed(full_inbox, monkeypatch):
    import triagebot.ingest.lore as lore

    monkeypatch.setattr(lore, "SEARCH_PAGE_MAX_BYTES", 4096)  # a page of 50 entries is larger
    batch = make_source(full_inbox.list_url, clock=Clock(T0 + timedelta(days=5))).poll(None)
    assert [e for e in batch.events if "search results refused" in e and "4096" in e]
    assert len(batch.messages) >= 25 and not batch.more  # the feed's, as without a search


def test_a_search_that_ignores_the_offset_cannot_keep_the_poller_going(tmp_path):
    from tests.support.hostile_http import HostileServer, answer
    from tests.test_net_hostile import ATOM_NS

    def feed(ids: range) -> bytes:
        entries = "".join(f'<entry><id>urn:n:{n}</id><link href="{base}m{n}@example.org/"/>'
                          "</entry>" for n in ids)
        return f'<?xml version="1.0"?><feed xmlns="{ATOM_NS}"><title>t</title>{entries}</feed>'.encode()

    with HostileServer() as server:
        base = server.url("/list/")
        server.route("/list/new.atom", answer(feed(range(3)), "application/atom+xml"))
        server.route("/list/", answer(feed(range(100, 150)), "application/atom+xml"))  # any ?o=
        server.route(None, answer(b"gone\n", status=404))
        with SqliteStore(tmp_path / "t.db") as store:
            source = make_source(base, clock=Clock(T0))
            result = ingest_once(source, store, jobs=1)  # returns: the poller is not stuck
        assert [e for e in result.events if "the same results as the page before" in e]
        assert server.hits.count("/list/") < 10  # a page or two a poll, not HEAL_MAX_RESULTS/50
