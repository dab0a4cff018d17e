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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from triagebot.backoff import Sleeper  # noqa: F401 (the ingest stage's name for it)


@dataclass(frozen=True)
class FetchedMessage:
    """One message as a source got it: bytes as served, and where from."""

    raw: bytes
    source_kind: str  # record.md source.kind: lore / openwall / mbox / eml / text
    source_url: str | None = None
    list_name: str | None = None
    # where in a local input it was read, as a person names it in a warning: the file, and in an
    # mbox the message's number (`…/2024.mbox, message 58`); None for a server's message
    origin: str | None = None


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


