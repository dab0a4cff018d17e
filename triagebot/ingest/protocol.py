"""Ingest stage: the protocols every source and its HTTP transport implement.

A source is polled with the cursor it last returned (None on the first poll) and answers with a
batch: the raw messages it found and the cursor to store with them. The ingest runner stores
the messages and the new cursor in one transaction, so a crash between polls loses nothing and
duplicates nothing: the next poll starts again from the last stored cursor, and messages seen
twice are ignored by Message-ID.

A cursor is opaque text owned by its source (JSON, a URL, a byte offset).

HTTP goes through `HttpClient`, so sources are tested against real servers on 127.0.0.1 and
their waiting goes through `Sleeper`, so backoff is tested without waiting.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from triagebot.backoff import Sleeper  # noqa: F401 (the ingest stage's name for it)
from triagebot.errors import TriageError


class SourceError(TriageError):
    """A source could not be read this time (server down, bad answer); the poll may be retried."""


class ResponseRefused(SourceError):
    """An answer refused for what it is, not for bad luck (a redirect elsewhere, a body over its
    cap): asking again would get the same, so `http.fetch` does not retry it."""


class AnswerFailed(SourceError):
    """The server answered, but not with what was asked for: an error status, a body that is not
    one, a body that never ended within the deadline. Charged to the URL asked for, not to the
    server: a list source skips that entry and goes on (a connection that fails is the server's)."""


class BodyTooLarge(ResponseRefused):
    """A body over the byte cap of its kind of request (counted after Content-Encoding)."""

    def __init__(self, url: str, limit: int, declared: int | None = None) -> None:
        self.url = url
        self.limit = limit
        self.declared = declared  # the Content-Length the server announced, if it did
        size = f"{declared} bytes" if declared is not None else "more than that"
        super().__init__(f"{url}: body is {size}, over the {limit} byte cap: refused")


@dataclass(frozen=True)
class FetchedMessage:
    """One message as a source got it: bytes as served, and where from."""

    raw: bytes
    source_kind: str  # record.md source.kind: lore / openwall / mbox / eml / text
    source_url: str | None = None
    list_name: str | None = None


# `QuarantineRow.source_name` of a list entry skipped by a poll (not a message the parser failed
# on): `triage reparse` leaves these to the polls that retry them.
SKIPPED_ENTRY_SOURCE = "lore-entry"


@dataclass(frozen=True)
class SkippedEntry:
    """A list entry whose message could not be fetched this poll, and why. The runner keeps it
    in the quarantine (its `entry` bytes, the feed entry as served) with the reason; the source
    tries it again at its next polls, `given_up` after the last try."""

    key: str  # the quarantine key: the entry's Message-ID, else `entry-<hex>@triagebot.invalid`
    url: str | None  # the message URL tried, None for a link that could not be read
    reason: str
    attempt: int  # polls that have tried it, this one included
    given_up: bool  # no more tries: the reason is the last word
    entry: bytes = b""


@dataclass(frozen=True)
class Batch:
    """What one poll found and the cursor to store with it (None: keep the stored one)."""

    messages: tuple[FetchedMessage, ...]
    cursor: str | None
    events: tuple[str, ...] = ()  # one line per thing worth logging: retries, skipped entries
    more: bool = False  # the source has more right now (a long file read in chunks): poll again
    total: int | None = None  # messages the source holds in all, where it knows (progress display)
    skipped: tuple[SkippedEntry, ...] = ()  # entries that could not be fetched (quarantined)
    recovered: tuple[str, ...] = ()  # keys of entries skipped before, fetched this time


# Stores a part of a poll as it arrives (with the cursor after it); False: stop the poll there.
Sink = Callable[[Batch], bool]


class Source(Protocol):
    """A place messages come from: a public-inbox list, an openwall list, a file."""

    @property
    def key(self) -> str:
        """Stable name under which the store keeps this source's cursor ("lore:<list URL>")."""

    def poll(self, cursor: str | None) -> Batch:
        """Messages new since `cursor`; raises SourceError when the source cannot be read now."""


@runtime_checkable
class StreamingSource(Protocol):
    """A source that hands a poll over in parts as it fetches them (a lore list: thread by
    thread), so a poll killed midway keeps what it stored and memory holds one part."""

    @property
    def key(self) -> str: ...

    def poll(self, cursor: str | None, sink: Sink | None = None) -> Batch:
        """As Source.poll; with `sink`, each part is given to it as it is fetched, with the
        cursor after it, and the returned batch holds only what came after the last part."""


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    url: str  # after redirects


class HttpClient(Protocol):
    """GET with bounds; raises SourceError on connection failures, timeouts and a passed deadline,
    BodyTooLarge past `limit` bytes of body, ResponseRefused for a redirect it will not follow.

    timeout   seconds one read (or the connection) may wait for the server
    deadline  seconds the whole request may take, headers, redirects and body included
    limit     bytes of body kept at most, counted as decoded (a gzip bomb stops here)
    """

    def get(self, url: str, *, timeout: float, deadline: float, limit: int,
            headers: Mapping[str, str] | None = None) -> HttpResponse:
        ...




@dataclass(frozen=True)
class HttpPolicy:
    """How politely a source talks to a server. Defaults are what lore.kernel.org asks of bots."""

    user_agent: str = "triagebot/0.1 (kernel performance triage; operator not configured)"
    timeout_seconds: float = 30.0  # per read: how long the server may stay silent
    # The whole of one request (headers, redirects, body): a server dribbling a byte every few
    # seconds never trips the read timeout, this it does. Retried like a timeout.
    deadline_seconds: float = 120.0
    max_redirects: int = 5  # same scheme, host and port only (see http.RequestsClient)
    attempts: int = 5  # tries of one request before the poll gives up with SourceError
    backoff_seconds: float = 2.0  # first wait; doubled each retry, with +-50% jitter
    backoff_max_seconds: float = 300.0
    extra_headers: Mapping[str, str] = field(default_factory=dict)
