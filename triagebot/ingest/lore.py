"""Ingest stage: a lore.kernel.org / public-inbox list, polled through its new.atom feed.

Each poll reads `<list>/new.atom` (newest entries first by date, at most `feedmax` of them, no
ETag), picks the entries it has not seen, and fetches each one's whole thread as
`<entry link>t.mbox.gz` (falling back to `<entry link>raw` when the thread is gone). Threads it
fetched are remembered and refetched every few polls, so replies that never show in the feed
(an old Date) are still found.

Gaps are healed, not only reported (lore_search.py): when none of the feed's entries was seen
before (a burst larger than the feed, a daemon that was down), the poll reads the list's search
for every message *received* (`rt:`) since HEAL_MARGIN_SECONDS before the last poll that reached
what was seen, oldest first, SEARCH_PAGE_SIZE results a page, handing back at most
`entries_per_poll` new entries a batch (`more`) and keeping its place (`heal`) in the cursor; a
page over SEARCH_PAGE_MAX_BYTES gives the heal up (an event line). When the results end, the
gap is healed, and the next poll reads the same window once more (`recheck`: the server's search
index lags its feed by seconds). A first poll does the same, quietly, from `since` (default: 14
days, the daemon's admission window). A server without a search index (HTTP 501) is said so in
an event line, and the poll falls back to the feed with the "may have been missed" warning.

The cursor is JSON text, version 2 (a version 1 cursor, without polled_at, heal and recheck, is
read: a gap after it heals from `since`):

    {"v": 2,
     "seen": ["<16 hex>", ...],          # sha1(Message-ID)[:16]: feed entries and thread
                                         # messages already fetched, current feed first
     "tracked": [{"root": "<msgid>", "n": 3, "digest": "<16 hex>"}, ...],
                                         # threads to refetch, most recently active first;
                                         # n and digest of their Message-IDs spot a change
     "since_refetch": 2,                 # polls since the tracked threads were last refetched
     "polled_at": 1764700000,            # our clock at the last poll that reached what was seen
     "heal": {"from": 1764600000, "offset": 150, "gap": true, "ids": ["<10 hex>", ...]},
                                         # a search heal under way, the ids of its last results
     "recheck": 1764600000,              # a healed window to read once more next poll
     "retry": [{"key": "<16 hex>", "qkey": "<msgid>", "url": "<message URL>", "tries": 1}],
                                         # skipped entries to try again, and how often tried
     "left": false}                      # the poll that wrote it left work for the next one

Bounds (each a named constant below): the feed is read up to FEED_MAX_BYTES and its newest
FEED_MAX_ENTRIES entries; a poll fetches the threads of at most ENTRIES_PER_POLL new entries,
oldest first, and says `more` when entries are left (they are not marked seen, so the next poll,
which the runner makes at once after storing this batch, takes them); a thread mbox is read up
to `max_thread_bytes` (THREAD_MAX_BYTES) gzipped and unpacked and THREAD_MAX_MESSAGES
messages, else the entry's message alone is fetched from `raw`, up to RAW_MESSAGE_MAX_BYTES
(larger: skipped with an event). A feed with a document type declaration (in any encoding the
XML declares) is refused, so no entity is ever declared, let alone expanded. An entry link is
used only for the one Message-ID segment it names under the list URL: a link with `.`, `..`
or empty path segments is unusable, and the thread URL is rebuilt from the Message-ID.

Failures: the feed unreadable after `policy.attempts` tries, or a server that cannot be reached,
raises SourceError, and the caller keeps the cursor of the last part stored (messages stored
twice are ignored by Message-ID); a feed refused for what it is (over its cap, redirected off
the list's scheme, host and port) raises at once. One entry never stops a poll: an entry whose
thread the server will not give (AnswerFailed: an error status, a body that never ends within
the deadline, a damaged gzip) or whose link cannot be read is skipped and handed back in
`Batch.skipped` (the runner quarantines it with the reason); it is tried again at each of the
next polls (the `retry` list in the cursor) up to `entry_attempts` polls, then given up;
SERVER_FAILURES_IN_A_ROW entries failing in a row fail the poll instead (the server's trouble,
not theirs; none is charged a try). An
entry whose message is gone (404 for both t.mbox.gz and raw), refused (over
RAW_MESSAGE_MAX_BYTES, redirected elsewhere) or that has no usable link is skipped with an
event. A refetch of the tracked threads that fails is logged as an event and retried on the
next poll (a thread whose own answer fails is no longer tracked); what the poll found before it
is returned.

With a sink (`poll(cursor, sink)`, what the runner passes), each entry's thread is handed over
as it is fetched, with the cursor after it (`left`: the next poll goes on), so memory holds one
thread and a poll, or a heal, killed midway keeps what it stored. The sink may say stop (a poll
bound reached): the poll then ends after that entry, its cursor saying `more`. Search pages that
cycle are told by the results' ids: a heal keeps the digests of its last HEAL_CYCLE_WINDOW
results and gives up on a page holding one of them.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import time
import urllib.parse
import xml.etree.ElementTree as ET
import xml.parsers.expat
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import compat32

from triagebot.http_client.client import fetch
from triagebot.http_client.protocol import (
    AnswerFailed,
    BodyTooLarge,
    HttpClient,
    HttpPolicy,
    HttpResponse,
    ResponseRefused,
    SourceError,
)
from triagebot.ingest.inputs import split_mbox
from triagebot.ingest.lore_search import (
    DEFAULT_SINCE,
    HEAL_ID_CHARS,
    HEAL_MARGIN_SECONDS,
    HEAL_MAX_RESULTS,
    HEAL_PAGES_PER_POLL,
    NO_SEARCH_STATUS,
    SEARCH_PAGE_MAX_BYTES,
    SEARCH_PAGE_SIZE,
    Heal,
    describe,
    search_url,
    since_epoch,
)
from triagebot.ingest.protocol import Batch, FetchedMessage, Sink, SkippedEntry, Sleeper

__all__ = ["LoreSource", "CURSOR_VERSION"]

CURSOR_VERSION = 2  # v1 (no polled_at, no heal) is still read
ATOM = "{http://www.w3.org/2005/Atom}"
# characters public-inbox leaves unescaped in Message-ID URL paths (PublicInbox::MID::MID_ESC)
_MID_SAFE = "!$&'()*+,;=:@"
_MID_RE = re.compile(r"<([^>]+)>")
MIB = 1 << 20
FEED_MAX_BYTES = 16 * MIB  # new.atom, decoded; lore's 25 entries with their text are ~1 MiB
FEED_MAX_ENTRIES = 1000  # entries read from one feed, newest first (lore's feedmax is 25)
ENTRIES_PER_POLL = 50  # new entries whose threads one poll fetches; the rest: the next poll
THREAD_MAX_BYTES = 64 * MIB  # a thread mbox, gzipped as fetched and again unpacked
THREAD_MAX_MESSAGES = 2000  # messages in one thread mbox; past it the message alone is fetched
RAW_MESSAGE_MAX_BYTES = 64 * MIB  # one message from `raw` (the per-message limit of mbox input)
_DOT_SEGMENTS = ("", ".", "..")
_HEADER_LINE_RE = re.compile(rb"^[!-9;-~]+:")  # "Name:" as RFC 5322 allows field names
_GZIP_MAGIC = b"\x1f\x8b"
_NULS = re.compile(rb"\0*")
UNPACK_CHUNK_BYTES = 1 << 20  # gzip fed to zlib at a time when unpacking a thread mbox
GZIP_MAX_MEMBERS = 64  # concatenated gzip members in one t.mbox.gz (public-inbox writes one)
# Polls that try an entry whose message the server will not give (an error status, a body that
# never ends, a link that cannot be read: that one at once) before it is given up; the entry is
# quarantined with its reason meanwhile, and the list's other messages go on being stored.
ENTRY_ATTEMPTS = 3
RETRY_MAX_ENTRIES = 100  # entries waiting for another try; past it the oldest is given up
# entries in a row whose answers fail: then it is the server, not the entries (lore answering
# 503 under load): the poll fails, its cursor at the last entry fetched, and none of them is
# charged a try (entries that fail are handed over only once an entry after them is fetched, or
# at the poll's end)
SERVER_FAILURES_IN_A_ROW = 5
ENTRY_KEEP_BYTES = 64 * 1024  # of a skipped entry's Atom XML, kept in the quarantine
# a skipped entry whose message URL is longer is given up at once (servers answer 414 to such
# URLs; the retry list lives in the cursor); a longer Message-ID is not a quarantine key
RETRY_URL_MAX_CHARS = 8192
MESSAGE_ID_KEY_MAX_CHARS = 998  # the RFC 5322 line limit
# digests of the results a heal has read, kept to notice pages that cycle (by their ids)
HEAL_CYCLE_WINDOW = 2000


class _TooLarge(Exception):
    pass


_OVER_BYTES = "over the byte cap"  # _accept_thread's answers for a thread too large to read
_OVER_MESSAGES = "over the message cap"
_OVER_MEMBERS = "over the gzip member cap"
_TOO_LARGE = (_OVER_BYTES, _OVER_MESSAGES, _OVER_MEMBERS)


class _Truncated(Exception):
    pass


@dataclass
class _Tracked:
    root: str
    count: int
    digest: str


@dataclass
class _Retry:
    """An entry skipped by a poll, to try again: where its message is and how often it failed."""

    key: str  # what `seen` holds for it
    quarantine_key: str
    url: str
    tries: int


@dataclass
class _State:
    seen: list[str] = field(default_factory=list)
    tracked: list[_Tracked] = field(default_factory=list)
    since_refetch: int = 0
    polled_at: int | None = None  # our clock when a poll last reached back to what was seen
    heal: Heal | None = None  # a search heal under way
    recheck: int | None = None  # a gap heal's start, read once more on the next poll
    retry: list[_Retry] = field(default_factory=list)  # skipped entries to try again
    left: bool = False  # the poll that wrote it left work (`more`): the next one goes on with it

    @property
    def fresh(self) -> bool:
        """Nothing known yet: a first poll (or a cursor that could not be read)."""
        return not self.seen and self.polled_at is None and self.heal is None


@dataclass
class _Work:
    """What one poll has done so far."""

    messages: dict[str, FetchedMessage] = field(default_factory=dict)  # by Message-ID
    fetched: set[str] = field(default_factory=set)  # digests of Message-IDs fetched
    touched: set[str] = field(default_factory=set)  # tracked roots whose thread was fetched
    handled: set[str] = field(default_factory=set)  # keys of the entries dealt with
    left: bool = False  # entries left for the next poll (entries_per_poll)
    retry: list[_Retry] = field(default_factory=list)  # skipped entries still to try again
    skipped: list[SkippedEntry] = field(default_factory=list)  # since the last part handed over
    recovered: list[str] = field(default_factory=list)  # quarantine keys of entries fetched now
    stopped: bool = False  # the sink said stop: no more entries this poll
    failing: int = 0  # entries in a row whose answers failed (SERVER_FAILURES_IN_A_ROW)
    checkpoint: Callable[[], None] = lambda: None  # hands what was fetched to the sink


@dataclass(frozen=True)
class _Entry:
    key: str  # what `seen` holds for it
    label: str  # for event lines: the entry link, or its id
    url: str | None  # the message's URL ending in "/", under list_url; None: unusable entry
    message_id: str | None = None
    problem: str = "no usable link"  # why `url` is None
    element: ET.Element | None = field(default=None, compare=False, repr=False)

    @property
    def quarantine_key(self) -> str:
        if self.message_id and len(self.message_id) <= MESSAGE_ID_KEY_MAX_CHARS:
            return self.message_id
        return f"entry-{self.key}@triagebot.invalid"

    def xml(self) -> bytes:
        return b"" if self.element is None else ET.tostring(self.element)[:ENTRY_KEEP_BYTES]


class LoreSource:
    """One public-inbox list (lore.kernel.org or any public-inbox-httpd) as a Source.

    list_url               the list's URL, e.g. "https://lore.kernel.org/oe-lkp/" (a missing
                           trailing "/" is added); the feed is `<list_url>new.atom`
    client, policy         the HTTP transport and how politely to use it (timeouts, attempts,
                           backoff); every request goes through `http.fetch`
    sleep                  how backoff waits (time.sleep; tests record instead)
    list_name              stored with each message; default: the last path segment of list_url
    track_threads          remember fetched threads and refetch them (default True)
    max_tracked            threads remembered, most recently active kept (default 200)
    refetch_tracked_every  refetch the tracked threads every this many polls (default 12: hourly
                           at a 5-minute poll interval)
    max_seen               feed entries / messages remembered as fetched (default 1000; the
                           current feed's entries are always kept, so this only needs to exceed
                           the server's feedmax, 25 on lore)
    max_thread_bytes       a thread mbox larger than this (gzipped or unpacked) or holding more
                           than THREAD_MAX_MESSAGES is not read; the entry's message alone is
                           fetched from `raw` (default THREAD_MAX_BYTES, 64 MiB)
    entries_per_poll       new feed entries handled per poll (default ENTRIES_PER_POLL, 50); the
                           rest are left for the next poll, and the batch says `more`
    rng                    jitter for the backoff (default: a fresh random.Random)
    since                  how far back a first poll reads through the list's search: a date,
                           or a span back from now (default DEFAULT_SINCE, 14 days: the daemon's
                           admission window)
    clock                  Unix seconds now (time.time; tests set the day)
    heal_interval_seconds  pause before each request of a heal after its first (search pages,
                           threads), through `sleep`: a first poll or a long gap reads days of a
                           list back to back, and lore's admins ask bots to pace themselves
                           (default 0, unpaced; `triage ingest` and the daemon pass
                           HEAL_REQUEST_INTERVAL_SECONDS)
    entry_attempts         polls that try an entry whose message the server will not give
                           before it is given up (default ENTRY_ATTEMPTS, 3)
    heal_max_results       search results one heal reads at most (default HEAL_MAX_RESULTS)
    """

    streams_parts = True  # poll(cursor, sink): parts handed over thread by thread (StreamingSource)

    def __init__(self, list_url: str, client: HttpClient, policy: HttpPolicy, *,
                 sleep: Sleeper = time.sleep, list_name: str | None = None,
                 track_threads: bool = True, max_tracked: int = 200,
                 refetch_tracked_every: int = 12, max_seen: int = 1000,
                 max_thread_bytes: int = THREAD_MAX_BYTES,
                 entries_per_poll: int = ENTRIES_PER_POLL,
                 rng: random.Random | None = None,
                 since: datetime | timedelta = DEFAULT_SINCE,
                 clock: Callable[[], float] = time.time,
                 heal_interval_seconds: float = 0.0,
                 entry_attempts: int = ENTRY_ATTEMPTS,
                 heal_max_results: int = HEAL_MAX_RESULTS) -> None:
        if not list_url.endswith("/"):
            list_url += "/"
        parts = urllib.parse.urlsplit(list_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) list URL: {list_url!r}")
        if refetch_tracked_every < 1 or max_tracked < 0 or max_seen < 1 or entries_per_poll < 1 \
                or entry_attempts < 1 or heal_max_results < 1:
            raise ValueError("refetch_tracked_every, max_seen, entries_per_poll, entry_attempts and "
                             "heal_max_results must be >= 1, max_tracked >= 0")
        self.list_url = list_url
        segments = [segment for segment in parts.path.split("/") if segment]
        self.list_name = list_name or (segments[-1] if segments else parts.netloc)
        self.client = client
        self.policy = policy
        self.sleep = sleep
        self.track_threads = track_threads
        self.max_tracked = max_tracked
        self.refetch_tracked_every = refetch_tracked_every
        self.max_seen = max_seen
        self.max_thread_bytes = max_thread_bytes
        self.entries_per_poll = entries_per_poll
        self.rng = rng or random.Random()
        self.since = since
        self.clock = clock
        self.heal_interval_seconds = heal_interval_seconds
        self.entry_attempts = entry_attempts
        self.heal_max_results = heal_max_results

    @property
    def key(self) -> str:
        return f"lore:{self.list_url}"

    @property
    def feed_url(self) -> str:
        return self.list_url + "new.atom"

    def message_url(self, message_id: str) -> str:
        """The URL of the message public-inbox files under `message_id` (bare, spaces kept)."""
        return self.list_url + _id_segment(message_id) + "/"

    # -- polling ---------------------------------------------------------------------------

    def poll(self, cursor: str | None, sink: Sink | None = None) -> Batch:
        """Messages new since `cursor`. With `sink`, the poll is handed over entry by entry
        (each thread with the cursor after it) as it is fetched, and returns only the rest."""
        events: list[str] = []
        state = self._load_cursor(cursor, events)
        now = int(self.clock())
        entries = self._read_feed(events)
        seen = set(state.seen)
        gap = bool(state.seen) and bool(entries) and not any(e.key in seen for e in entries)
        if state.heal is None and (state.fresh or gap):
            state.heal = self._start_heal(state, gap, events)
        elif state.heal is None and state.recheck is not None:
            state.heal = Heal(state.recheck, gap=False)  # quiet: what the index lagged on
        heal = state.heal

        work = _Work(retry=list(state.retry))
        tracked = list(state.tracked)
        healed: list[_Entry] = []  # search results this poll dealt with

        def done_entries() -> list[_Entry]:
            return [entry for entry in entries
                    if entry.key in seen or entry.key in work.handled or entry.key in work.fetched]

        def checkpoint() -> None:
            """Hand what was fetched since the last part to the sink, with the cursor after it."""
            if sink is None or work.stopped or work.failing:
                return  # failures are handed over once an entry after them was fetched
            part_state = _State(self._merge_seen(done_entries() + healed, work.fetched, state.seen),
                                tracked[:self.max_tracked], state.since_refetch, state.polled_at,
                                state.heal, state.recheck, work.retry, left=True)
            part = self._batch(work, part_state, events, more=True)
            if not sink(part):
                work.stopped = work.left = True

        work.checkpoint = checkpoint
        if not state.left:  # a poll of its own, not one going on with what the last one left
            self._retry_skipped(work, tracked, events)
        if heal is not None and not work.stopped:
            if self._heal(state, seen, work, tracked, healed, events):
                if state.heal is None and heal.gap:  # healed: read it again next poll, since
                    # the server's search lags its feed (public-inbox-httpd keeps its index
                    # snapshot open for up to 30 s after new mail)
                    state.recheck = heal.start if state.recheck is None else min(state.recheck,
                                                                                 heal.start)
                elif state.heal is None:
                    state.recheck = None
            else:
                state.heal = state.recheck = None  # no search index here: the feed alone, as before
                if gap:
                    events.append(f"{self.feed_url}: none of its {len(entries)} entries was "
                                  "seen before; messages may have been missed since the last "
                                  "poll (poll more often, or backfill from the list archive)")
        if not work.left:
            self._handle(reversed([e for e in entries if e.key not in seen]), work, tracked,
                         events)
        left = work.left or state.heal is not None

        # Polls that only go on with the entries a poll left count as that one poll.
        since_refetch = state.since_refetch + (0 if left else 1)
        if self.track_threads and not left and since_refetch >= self.refetch_tracked_every:
            if self._refetch_tracked(tracked, work.touched, work.messages, work.fetched, events):
                since_refetch = 0
        if not self.track_threads:
            tracked = []

        new_state = _State(self._merge_seen(done_entries() + healed, work.fetched, state.seen),
                           tracked[:self.max_tracked], since_refetch,
                           state.polled_at if left else now, state.heal, state.recheck,
                           work.retry, left)
        return self._batch(work, new_state, events, more=left)

    def _batch(self, work: _Work, state: _State, events: list[str], *, more: bool) -> Batch:
        """What was fetched since the last part, with `state` as its cursor; the work's
        messages, events and skipped entries are handed over (and cleared)."""
        batch = Batch(tuple(work.messages.values()), self._dump_cursor(state), tuple(events),
                      more=more, skipped=tuple(work.skipped), recovered=tuple(work.recovered))
        work.messages.clear()
        work.skipped.clear()
        work.recovered.clear()
        events.clear()
        return batch

    # -- entries the server would not give ---------------------------------------------------

    def _skip(self, entry: _Entry, reason: str, work: _Work, events: list[str]) -> None:
        """Record an entry whose message could not be fetched: quarantined with its reason by
        the runner, tried again at the next polls (a link that cannot be read: given up now)."""
        reason = _short(reason)
        retry = entry.url is not None and len(entry.url) <= RETRY_URL_MAX_CHARS and self.entry_attempts > 1
        events.append(f"{self.feed_url}: skipped entry {entry.label}: {reason}"
                      + ("; tried again at the next poll" if retry else ""))
        work.skipped.append(SkippedEntry(entry.quarantine_key, entry.url, reason, 1, not retry,
                                         entry.xml()))
        if retry and entry.url is not None:
            work.retry.append(_Retry(entry.key, entry.quarantine_key, entry.url, 1))
            while len(work.retry) > RETRY_MAX_ENTRIES:
                oldest = work.retry.pop(0)
                work.skipped.append(SkippedEntry(
                    oldest.quarantine_key, oldest.url,
                    f"given up: more than {RETRY_MAX_ENTRIES} entries waiting for another try",
                    oldest.tries, True))

    def _failed(self, work: _Work, error: AnswerFailed) -> None:
        """Count an entry whose answer failed; SERVER_FAILURES_IN_A_ROW of them fail the poll."""
        work.failing += 1
        if work.failing >= SERVER_FAILURES_IN_A_ROW:
            raise SourceError(f"{self.list_url}: {work.failing} entries in a row failed, the server's "
                              f"trouble rather than theirs (the last: {_short(str(error), 300)}); the "
                              "next poll tries them again")

    def _retry_skipped(self, work: _Work, tracked: list[_Tracked], events: list[str]) -> None:
        """Try the entries earlier polls skipped once more each; give up those out of tries."""
        waiting: list[_Retry] = list(work.retry)
        kept: list[_Retry] = []
        for position, item in enumerate(waiting):
            if work.stopped:
                break
            try:
                thread = self._fetch_thread(item.url, item.url, events)
            except AnswerFailed as error:
                self._failed(work, error)
                tries = item.tries + 1
                given_up = tries >= self.entry_attempts
                reason = _short(str(error) if not given_up else f"given up after {tries} polls: {error}")
                events.append(f"{self.feed_url}: skipped entry {item.url} again: {reason}")
                work.skipped.append(SkippedEntry(item.quarantine_key, item.url, reason, tries,
                                                 given_up))
                if not given_up:
                    kept.append(_Retry(item.key, item.quarantine_key, item.url, tries))
            else:
                work.failing = 0
                if thread is None:  # gone (404): the reason is final
                    work.skipped.append(SkippedEntry(item.quarantine_key, item.url,
                                                     "given up: the message is gone (HTTP 404)",
                                                     item.tries + 1, True))
                else:
                    ids = self._keep(thread, work.messages, work.fetched)
                    if self.track_threads:
                        work.touched.add(self._track(tracked, ids, thread))
                    work.recovered.append(item.quarantine_key)
            work.retry = kept + waiting[position + 1:]  # what a part's cursor says is still to try
            work.checkpoint()

    def _start_heal(self, state: _State, gap: bool, events: list[str]) -> Heal:
        """Where a heal through the list's search starts: a margin before the last poll that
        reached what was seen, else (a first poll, a v1 cursor) `since`."""
        if state.polled_at is not None:
            start = state.polled_at - HEAL_MARGIN_SECONDS
        else:
            start = since_epoch(self.since, self.clock())
        if gap:
            events.append(f"{self.feed_url}: the feed does not reach back to what was seen; "
                          "reading the list's search for every message received since "
                          f"{describe(start)}")
        return Heal(start, gap=gap)

    def _heal(self, state: _State, seen: set[str], work: _Work, tracked: list[_Tracked],
              healed: list[_Entry], events: list[str]) -> bool:
        """Go on with the heal in `state.heal`, oldest first, until the per-poll caps; it is
        set to None when the results are read to their end. False: the server has no search."""
        heal = state.heal
        assert heal is not None
        previous: list[str] = []
        requests = 0

        def pace() -> None:
            nonlocal requests
            if requests and self.heal_interval_seconds > 0:
                self.sleep(self.heal_interval_seconds)
            requests += 1

        for _ in range(HEAL_PAGES_PER_POLL):
            url = search_url(self.list_url, heal.start, heal.offset)
            pace()
            page = self._read_search_page(url, events)
            if page is None:
                return False
            keys = [entry.key for entry in page]
            # Pages that cycle (A, B, A, …) or ignore the offset are told by the results' ids: one
            # result read at two offsets of a heal (results come oldest first, each once).
            read = set(heal.ids)
            digests = [key[:HEAL_ID_CHARS] for key in keys]
            problem = ("the same results as the page before" if page and keys == previous
                       else "results read before at another offset (the pages cycle)"
                       if read.intersection(digests) or len(set(digests)) < len(digests)
                       else f"more than {self.heal_max_results} results"
                       if heal.offset + len(page) > self.heal_max_results else None)
            if problem:  # a server that ignores the offset, or an endless answer
                events.append(f"{url}: {problem}; the gap is not healed")
                return False
            previous = keys
            for entry in page:
                if entry.key not in seen and entry.key not in work.fetched:
                    if len(work.handled) >= self.entries_per_poll or work.stopped:
                        work.left = True
                        return True
                    pace()
                    self._handle([entry], work, tracked, events, checkpoint=False)
                    handled = True
                else:
                    handled = False
                healed.append(entry)
                heal.offset += 1
                heal.ids.append(entry.key[:HEAL_ID_CHARS])
                del heal.ids[:-HEAL_CYCLE_WINDOW]
                if handled:
                    work.checkpoint()  # stored as it arrives: a heal killed midway keeps it
            if len(page) < SEARCH_PAGE_SIZE:
                if heal.gap:
                    events.append(f"{self.list_url}: gap healed: {heal.offset} messages "
                                  f"received since {describe(heal.start)} read through the "
                                  "search")
                state.heal = None
                return True
        work.left = True  # HEAL_PAGES_PER_POLL pages of results seen before: go on next poll
        return True

    def _read_search_page(self, url: str, events: list[str]) -> list[_Entry] | None:
        """One page of search results (empty past the end); None: the server has no search,
        or a page over SEARCH_PAGE_MAX_BYTES (said in an event line either way)."""
        parsed: list[list[ET.Element]] = []

        def accept(response: HttpResponse) -> str | None:
            elements, _, problem = _parse_feed(response, SEARCH_PAGE_SIZE)
            if problem is None:
                parsed.append(elements)
            return problem

        try:
            response = fetch(self.client, url, self.policy, limit=SEARCH_PAGE_MAX_BYTES,
                             sleep=self.sleep, accept=accept, events=events, rng=self.rng)
        except BodyTooLarge as error:  # the same page again next poll: give the heal up
            events.append(f"{self.list_url}: search results refused ({error}); the gap is not "
                          "healed")
            return None
        except ResponseRefused:
            raise
        except SourceError as error:
            # fetch raises exactly this for a status it does not retry; 501: no Xapian index
            if str(error) != f"{url}: HTTP {NO_SEARCH_STATUS}":
                raise
            events.append(f"{self.list_url}: the server has no search index (HTTP "
                          f"{NO_SEARCH_STATUS} for {url}); reading the feed alone, which "
                          "holds only its newest entries")
            return None
        if response.status == 404:  # public-inbox: "[No results found]"
            return []
        return [self._entry(element) for element in parsed[-1]]

    def _handle(self, entries: Iterable[_Entry], work: _Work, tracked: list[_Tracked],
                events: list[str], checkpoint: bool = True) -> None:
        """Fetch the threads of new entries, oldest first, up to entries_per_poll. An entry the
        server will not give is skipped (`_skip`), never the poll's end."""
        for entry in entries:
            if entry.key in work.fetched:
                continue  # came with the thread of an entry fetched before it
            if len(work.handled) >= self.entries_per_poll or work.stopped:
                work.left = True
                return
            work.handled.add(entry.key)
            if entry.url is None:
                self._skip(entry, entry.problem, work, events)
            else:
                try:
                    thread = self._fetch_thread(entry.url, entry.label, events)
                except AnswerFailed as error:
                    self._skip(entry, str(error), work, events)
                    self._failed(work, error)
                    thread = None
                else:
                    work.failing = 0
                if thread is not None:
                    ids = self._keep(thread, work.messages, work.fetched)
                    if self.track_threads:
                        work.touched.add(self._track(tracked, ids, thread))
            if checkpoint:
                work.checkpoint()

    def _read_feed(self, events: list[str]) -> list[_Entry]:
        parsed: list[tuple[list[ET.Element], bool]] = []

        def accept(response: HttpResponse) -> str | None:
            elements, over, problem = _parse_feed(response, FEED_MAX_ENTRIES)
            if problem is None:
                parsed.append((elements, over))
            return problem

        fetch(self.client, self.feed_url, self.policy, limit=FEED_MAX_BYTES, sleep=self.sleep,
              accept=accept, events=events, rng=self.rng)
        if not parsed:  # a 404: the list does not exist here
            raise SourceError(f"{self.feed_url}: HTTP 404 (no such list?)")
        elements, over = parsed[-1]
        if over:
            events.append(f"{self.feed_url}: more than {FEED_MAX_ENTRIES} entries; only the "
                          f"newest {FEED_MAX_ENTRIES} read")
        return [self._entry(element) for element in elements]

    def _entry(self, element: ET.Element) -> _Entry:
        entry_id = (element.findtext(f"{ATOM}id") or "").strip()
        href = None
        for link in element.findall(f"{ATOM}link"):
            if link.get("rel", "alternate") == "alternate" and link.get("href"):
                href = link.get("href", "").strip()
                break
        problem = "no usable link"
        try:
            segment = _message_segment(href, self.list_url) if href else ""
        except ValueError as error:  # `http://[::1/`, a netloc that NFKC changes (a fullwidth ＃)
            segment, problem = "", f"its link cannot be read ({error})"
        # as the server names it: `< padded@x >` is filed as ` padded@x ` (stripped, it is a 404)
        message_id = _repaired(urllib.parse.unquote(segment))
        if not message_id.strip():
            label = (entry_id or href or "<no id>")[:200]
            return _Entry(_digest(entry_id or ET.tostring(element)), label, None, None, problem,
                          element)
        # A link is followed only as the one Message-ID segment it names, escaped again under
        # list_url (rebased if it names another host), so a feed cannot send the poller elsewhere.
        return _Entry(_digest(message_id), (href or entry_id)[:200], self.message_url(message_id),
                      message_id, problem, element)

    def _fetch_thread(self, url: str, label: str, events: list[str]) -> list[bytes] | None:
        """The thread of the message at `url` (t.mbox.gz, else raw); None: gone (404)."""
        found: list[list[bytes]] = []
        too_large: list[str] = []

        def accept_thread(response: HttpResponse) -> str | None:
            problem = self._accept_thread(response, found)
            if problem in _TOO_LARGE:
                too_large.append(problem)
                return None
            return problem

        try:  # AnswerFailed (an error status, a body that never ends) is raised: the caller
            # skips the entry and tries the whole thread again at its next polls
            response = fetch(self.client, url + "t.mbox.gz", self.policy,
                             limit=self.max_thread_bytes, sleep=self.sleep, accept=accept_thread,
                             events=events, rng=self.rng)
        except ResponseRefused as error:  # too large, or a redirect elsewhere: not the thread
            too_large.append(_OVER_BYTES if isinstance(error, BodyTooLarge) else str(error))
            response = None
        if response is not None and response.status == 200 and found:
            return found[-1]
        if too_large:
            events.append(f"{url}t.mbox.gz: {self._too_large_reason(too_large[-1])}; "
                          "fetching the message alone")
        else:
            events.append(f"{url}t.mbox.gz: HTTP 404; fetching the message alone")

        def accept_raw(response: HttpResponse) -> str | None:
            if _is_html(response):
                return "an HTML page, not a raw message"
            return _accept_messages(response.body, found, "a raw message")

        try:
            response = fetch(self.client, url + "raw", self.policy, limit=RAW_MESSAGE_MAX_BYTES,
                             sleep=self.sleep, accept=accept_raw, events=events, rng=self.rng)
        except ResponseRefused as error:
            events.append(f"{self.feed_url}: skipped entry {label}: {error}")
            return None
        if response.status == 200 and found:
            return found[-1]
        events.append(f"{self.feed_url}: skipped entry {label}: the message is gone "
                      "(HTTP 404 for t.mbox.gz and raw)")
        return None

    def _accept_thread(self, response: HttpResponse, found: list[list[bytes]]) -> str | None:
        """Unpack and split a t.mbox.gz answer into `found`; why not, or _OVER_* for too big."""
        try:
            data = _unpack(response, self.max_thread_bytes)
        except _TooLarge as error:
            return _OVER_MEMBERS if error.args == (_OVER_MEMBERS,) else _OVER_BYTES
        except _Truncated as error:
            return str(error)
        problem = _accept_messages(data, found, "a thread mbox")
        if problem is None and len(found[-1]) > THREAD_MAX_MESSAGES:
            found.pop()
            return _OVER_MESSAGES
        return problem

    def _too_large_reason(self, which: str) -> str:
        """The event text for a thread not read: too many messages, too large, else refused."""
        if which == _OVER_MESSAGES:
            return f"thread of more than {THREAD_MAX_MESSAGES} messages"
        if which == _OVER_BYTES:
            return f"thread larger than {self.max_thread_bytes} bytes"
        if which == _OVER_MEMBERS:
            return f"thread mbox of more than {GZIP_MAX_MEMBERS} gzip members"
        return which

    def thread_batch(self, message_url: str) -> Batch:
        """The whole thread of the message at `message_url` (…/<list>/<msgid>/), by itself.

        For `triage ingest <message URL or Message-ID>`: the same fetching, unpacking and
        fallbacks as a poll, without the feed or a cursor, cut to the strict thread of the
        message as b4 does (lore_liblore.strict_thread).
        """
        from triagebot.ingest.lore_liblore import strict_thread  # only this path needs liblore

        events: list[str] = []
        thread = self._fetch_thread(message_url, message_url, events)
        if thread is None:
            raise SourceError(f"{message_url}: no such message on the server (HTTP 404 for t.mbox.gz and raw)")
        # b4's strict thread: t.mbox.gz may hold messages public-inbox threads loosely (by
        # subject) with this one
        thread = strict_thread(thread, urllib.parse.unquote(message_url.rstrip("/").rsplit("/", 1)[1]))
        messages: dict[str, FetchedMessage] = {}
        self._keep(thread, messages, set())
        return Batch(messages=tuple(messages.values()), cursor=None, events=tuple(events))

    def _keep(self, thread: list[bytes], messages: dict[str, FetchedMessage],
              fetched: set[str]) -> list[tuple[str | None, bytes]]:
        """Add a thread's messages to the batch; (Message-ID, raw) of each, in order."""
        ids = []
        for raw in thread:
            message_id = _message_id(raw)
            url = self.message_url(message_id) if message_id else None
            key = message_id if message_id else "sha1:" + hashlib.sha1(raw).hexdigest()
            if key not in messages:
                messages[key] = FetchedMessage(raw, "lore", url, self.list_name)
            if message_id:
                fetched.add(_digest(message_id))
            ids.append((message_id, raw))
        return ids

    # -- tracked threads -------------------------------------------------------------------

    def _track(self, tracked: list[_Tracked], ids: list[tuple[str | None, bytes]],
               thread: list[bytes]) -> str:
        """Record a fetched thread as most recently active; its root's Message-ID."""
        message_ids = [m for m, _ in ids if m]
        known = {t.root for t in tracked}
        roots = [m for m in message_ids if m in known]
        if roots:
            root = roots[0]
            tracked[:] = [t for t in tracked if t.root not in roots]  # threads that merged
        else:
            root = next((m for m, raw in ids if m and _is_root(raw)), None) \
                or (message_ids[0] if message_ids else None)
        if root is None:
            return ""
        tracked.insert(0, _Tracked(root, len(set(message_ids)), _ids_digest(message_ids)))
        del tracked[self.max_tracked:]
        return root

    def _refetch_tracked(self, tracked: list[_Tracked], touched: set[str],
                         messages: dict[str, FetchedMessage], fetched: set[str],
                         events: list[str]) -> bool:
        """Refetch the tracked threads not fetched this poll; False if it had to stop."""
        for item in list(tracked):
            if item.root in touched or item not in tracked:  # fetched already, or merged
                continue
            url = self.message_url(item.root)
            found: list[list[bytes]] = []
            too_large: list[str] = []

            def accept(response: HttpResponse, found: list[list[bytes]] = found,
                       too_large: list[str] = too_large) -> str | None:
                problem = self._accept_thread(response, found)
                if problem in _TOO_LARGE:
                    too_large.append(problem)
                    return None
                return problem

            try:
                response = fetch(self.client, url + "t.mbox.gz", self.policy,
                                 limit=self.max_thread_bytes, sleep=self.sleep, accept=accept,
                                 events=events, rng=self.rng)
            except ResponseRefused as error:
                too_large.append(_OVER_BYTES if isinstance(error, BodyTooLarge) else str(error))
                response = None
            except AnswerFailed as error:  # this thread's answer, not the server's: the others go on
                events.append(f"{error}; no longer tracking that thread")
                tracked.remove(item)
                continue
            except SourceError as error:
                events.append(f"refetch of tracked threads stopped, retried next poll: {error}")
                return False
            if too_large:
                events.append(f"{url}t.mbox.gz: {self._too_large_reason(too_large[-1])}; "
                              "no longer tracking it")
                tracked.remove(item)
                continue
            if response.status == 404:
                events.append(f"{url}t.mbox.gz: HTTP 404; no longer tracking that thread")
                tracked.remove(item)
                continue
            thread = found[-1]
            message_ids = [m for m in (_message_id(raw) for raw in thread) if m]
            if (len(set(message_ids)), _ids_digest(message_ids)) == (item.count, item.digest):
                continue
            ids = self._keep(thread, messages, fetched)
            tracked.remove(item)
            touched.add(self._track(tracked, ids, thread))
        return True

    # -- the cursor ------------------------------------------------------------------------

    def _merge_seen(self, entries: Iterable[_Entry], fetched: set[str],
                    previous: list[str]) -> list[str]:
        current = list(dict.fromkeys(entry.key for entry in entries))
        rest = sorted(fetched - set(current)) + previous
        merged = list(dict.fromkeys(current + rest))
        return merged[:max(self.max_seen, len(current))]

    def _load_cursor(self, cursor: str | None, events: list[str]) -> _State:
        if cursor is None:
            return _State()
        try:
            data = json.loads(cursor)
            if not isinstance(data, dict) or data.get("v") not in (1, CURSOR_VERSION):
                raise ValueError(f"not a version 1 or {CURSOR_VERSION} lore cursor")
            polled_at = data.get("polled_at")  # v1 has neither: a gap heals from `since`
            return _State(
                [str(s) for s in data.get("seen", [])],
                [_Tracked(str(t["root"]), int(t["n"]), str(t["digest"]))
                 for t in data.get("tracked", [])],
                int(data.get("since_refetch", 0)),
                None if polled_at is None else int(polled_at),
                Heal.load(data.get("heal")),
                None if data.get("recheck") is None else int(data["recheck"]),
                [_Retry(str(r["key"]), str(r["qkey"]), str(r["url"]), int(r["tries"]))
                 for r in data.get("retry", [])],
                bool(data.get("left", False)))
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            events.append(f"{self.key}: stored cursor unreadable ({error}); starting as a first "
                          "poll (messages already stored are not stored twice)")
            return _State()

    @staticmethod
    def _dump_cursor(state: _State) -> str:
        return json.dumps({
            "v": CURSOR_VERSION,
            "seen": state.seen,
            "tracked": [{"root": t.root, "n": t.count, "digest": t.digest}
                        for t in state.tracked],
            "since_refetch": state.since_refetch,
            "polled_at": state.polled_at,
            "heal": None if state.heal is None else state.heal.dump(),
            "recheck": state.recheck,
            "retry": [{"key": r.key, "qkey": r.quarantine_key, "url": r.url, "tries": r.tries}
                      for r in state.retry],
            "left": state.left,
        }, separators=(",", ":"))


# -- pure helpers ------------------------------------------------------------------------------


def _short(reason: str, limit: int = 1000) -> str:
    """A reason as kept and logged: a URL of 100,000 characters is not worth a log line of them."""
    return reason if len(reason) <= limit else reason[:limit - 1] + "…"


def _digest(value: str | bytes) -> str:
    data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
    return hashlib.sha1(data).hexdigest()[:16]


def _ids_digest(message_ids: Iterable[str]) -> str:
    return _digest("\n".join(sorted(set(message_ids))))


def _message_segment(href: str, list_url: str) -> str:
    """The escaped Message-ID in an entry link: the segment after the list's own path
    (`/LIST/MSGID/`, also `/LIST/MSGID/T/#u`), else the link's last segment; "" for a link
    with a `.`, `..` or empty segment (escaped or not) anywhere in its path."""
    path = urllib.parse.urlsplit(href).path
    inner = path.strip("/")
    list_path = urllib.parse.urlsplit(list_url).path
    if path.startswith(list_path) and path[len(list_path):].strip("/") in (".", ".."):
        return path[len(list_path):].strip("/")  # a Message-ID `.` or `..`, escaped when fetched
    if not inner or any(urllib.parse.unquote(segment).strip() in _DOT_SEGMENTS
                        for segment in inner.split("/")):
        return ""
    if path.startswith(list_path) and len(path) > len(list_path):
        return path[len(list_path):].split("/", 1)[0]
    segments = [segment for segment in path.split("/") if segment]
    return segments[-1] if segments else ""


def _id_segment(message_id: str) -> str:
    """A Message-ID as one URL path segment, escaped as public-inbox does; `.` and `..` as
    `%2E`/`%2E%2E`, which public-inbox reads as the Message-ID and no client reads as a step
    up the path."""
    segment = urllib.parse.quote(message_id, safe=_MID_SAFE)
    return segment.replace(".", "%2E") if segment in (".", "..") else segment


def _repaired(message_id: str) -> str:
    """A feed link's Message-ID with public-inbox's double encoding undone: it writes a non-ASCII
    Message-ID's UTF-8 bytes as if each were a Latin-1 character (`café` as `cafÃ©`), and
    that link is a 404. A text that is not that (not Latin-1, or not UTF-8 once encoded) is kept."""
    if message_id.isascii():
        return message_id
    try:
        return message_id.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return message_id


def _headers(raw: bytes) -> Message:
    head = raw.split(b"\n\n", 1)[0]
    return BytesHeaderParser(policy=compat32).parsebytes(head + b"\n\n")


def _message_id(raw: bytes) -> str | None:
    """The Message-ID public-inbox files the message under: the first <...> of the last
    Message-ID field (public-inbox adds its own when a message reuses another's), no brackets,
    spaces inside them kept."""
    values = _headers(raw).get_all("Message-ID")
    value = values[-1] if values else None
    if value is None:
        return None
    text = str(value)
    found = _MID_RE.search(text)
    return (found.group(1) if found else text.strip()) or None


def _is_root(raw: bytes) -> bool:
    headers = _headers(raw)
    return headers.get("In-Reply-To") is None and headers.get("References") is None


def _is_html(response: HttpResponse) -> bool:
    content_type = response.headers.get("content-type", "").lower()
    start = response.body[:512].lstrip().lower()
    return "html" in content_type or start.startswith((b"<!doctype html", b"<html"))


class _Declaration(Exception):
    pass


def _declares_dtd(body: bytes) -> bool:
    """Whether the document has a DOCTYPE or an entity declaration, read by expat as the XML
    says it is encoded (UTF-16, UTF-32, a BOM, an encoding declaration), not as raw bytes."""
    parser = xml.parsers.expat.ParserCreate()

    def refuse(*args: object) -> None:
        raise _Declaration()

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    try:
        parser.Parse(body, True)
    except _Declaration:
        return True
    except (xml.parsers.expat.ExpatError, ValueError, LookupError):
        return False  # not XML: the parse below says so
    return False


def _parse_feed(response: HttpResponse,
                max_entries: int) -> tuple[list[ET.Element], bool, str | None]:
    """The feed's first `max_entries` entries and whether it holds more, or why the answer is
    not an Atom feed. Entries past the cap are not parsed into a tree."""
    if _is_html(response):
        content_type = response.headers.get("content-type", "?")
        return [], False, f"an HTML page ({content_type}), not an Atom feed (a challenge page?)"
    if _declares_dtd(response.body):
        return [], False, "a document type declaration in the feed (refused: entities stay off)"
    parser = ET.XMLPullParser(events=("start", "end"))
    entries: list[ET.Element] = []
    root: ET.Element | None = None
    depth = 0  # of the element an event is about: 1 the feed, 2 its children
    body = response.body
    try:
        for offset in range(0, max(len(body), 1), 1 << 16):
            parser.feed(body[offset:offset + (1 << 16)])
            for event, element in parser.read_events():
                if event == "start":
                    depth += 1
                    if root is None:
                        root = element
                        if root.tag != f"{ATOM}feed":
                            return [], False, f"XML but not an Atom feed (root element {root.tag})"
                    continue
                depth -= 1
                if depth != 1 or root is None:
                    continue  # inside a child of the feed, or the feed's own end
                if element.tag == f"{ATOM}entry":
                    if len(entries) == max_entries:
                        return entries, True, None
                    entries.append(element)
                root.remove(element)  # the tree holds only the child of the feed being read
        parser.close()
    except ET.ParseError as error:
        return [], False, f"not XML ({error})"
    if root is None:
        return [], False, "not XML (no element)"
    return entries, False, None


def _unpack(response: HttpResponse, limit: int) -> bytes:
    """The mbox of a t.mbox.gz answer: gunzipped, at most `limit` bytes, else _TooLarge.

    Incremental: the gzip is fed to zlib UNPACK_CHUNK_BYTES at a time and zlib is asked for no
    more than the room left, so a bomb stops at `limit` bytes out; at most GZIP_MAX_MEMBERS
    concatenated gzip members (public-inbox writes one), so many tiny members cost no more.
    """
    body = response.body
    if not body.startswith(_GZIP_MAGIC):
        return body  # the transport already decoded a Content-Encoding: gzip
    view = memoryview(body)
    out: list[bytes] = []
    total = 0
    members = 0
    position = 0
    decompressor = None
    while True:
        if decompressor is None:  # between members: NUL padding, then the next one or the end
            position = _NULS.match(body, position).end()
            if position == len(body):
                break
            if body[position:position + 2] != _GZIP_MAGIC:
                raise _Truncated("damaged gzip (trailing bytes after the stream)")
            members += 1
            if members > GZIP_MAX_MEMBERS:
                raise _TooLarge(_OVER_MEMBERS)
            decompressor = zlib.decompressobj(wbits=31)
        data = view[position:position + UNPACK_CHUNK_BYTES]
        if not data:
            raise _Truncated(f"truncated gzip ({len(body)} bytes, the stream does not end)")
        try:
            chunk = decompressor.decompress(data, limit - total + 1)
        except zlib.error as error:
            raise _Truncated(f"damaged gzip ({error})") from error
        total += len(chunk)
        if total > limit:
            raise _TooLarge()
        out.append(chunk)
        position += len(data) - len(decompressor.unconsumed_tail) - len(decompressor.unused_data)
        if decompressor.eof:
            decompressor = None
    return b"".join(out)


def _accept_messages(data: bytes, found: list[list[bytes]], what: str) -> str | None:
    """Split a public-inbox mboxrd into messages (into `found`), or say why it is not one."""
    if data.lstrip()[:1] == b"<":
        return f"an HTML or XML page, not {what}"
    if data.startswith(b"From "):
        messages = [_drop_mboxrd_blank(m) for m in split_mbox(data)]
    elif _HEADER_LINE_RE.match(data):
        messages = [data]  # a server that serves the message itself, without a From line
    else:
        return f"not {what} (no 'From ' line or header at the start)"
    if not messages:
        return f"{what} holding no message"
    found.append(messages)
    return None


def _drop_mboxrd_blank(message: bytes) -> bytes:
    # public-inbox's mboxrd appends one blank line to every message; it is not the message's
    return message[:-1] if message.endswith(b"\n\n") else message
