"""Ingest stage: healing a lore feed's gap through public-inbox's own search.

`new.atom` holds only the newest `feedmax` entries (25 on lore). When a poll's feed does not
reach back to an entry seen before (a burst, a daemon that was down), or on a first poll, the
list's search is read instead, oldest first, for everything *received* since a point in time:

    <list>/?q=rt:<epoch>..&x=A&l=50&o=-<offset + 1>

- `rt:` matches the time of the message's topmost Received: header (public-inbox's "received
  time"), which is when the list got it; `dt:` matches the Date: header a sender wrote, and a
  reply to an old thread, or a patch series with its author dates, would be missed by it.
  `rt:` takes Unix seconds (`rt:1793491800..`), not `YYYYMMDDhhmmss`.
- `x=A`: the results as an Atom feed, with the same entries (links) as new.atom.
- `l=50`: results per page (public-inbox allows up to 200, PublicInbox::SearchQuery::LIM); each
  entry carries its whole message, so a page of 200 patches can be hundreds of MiB, and a poll
  hands back 50 new entries at most anyway.
- `o=-N`: a negative offset sorts ascending by received time, oldest first, and skips N-1
  results; so a heal interrupted by the per-poll cap goes on at the same offset next poll, and
  messages arriving meanwhile sort after it.
- A search without results answers HTTP 404 (an HTML page); an inbox without a Xapian index
  answers HTTP 501 ("Search is not available"): then the poll falls back to the feed alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

SEARCH_PAGE_SIZE = 50  # results per search page (public-inbox's own cap is 200)
SEARCH_PAGE_MAX_BYTES = 64 << 20  # one page of results, decoded (entries hold whole messages)
# Received times are read back this far before the last poll that reached what was seen: the
# list's clock and ours disagree, and mail stamped Received is indexed a little later.
HEAL_MARGIN_SECONDS = 6 * 3600
HEAL_PAGES_PER_POLL = 40  # search pages one poll reads (2,000 results); the rest: next poll
# results one heal reads at most (lkml receives ~1,000 a day): past it the heal is given up, so a
# server that answers every offset with more results cannot keep the runner polling forever
HEAL_MAX_RESULTS = 100_000
# Pause before each request of a heal after its first, for `triage ingest` and the daemon: a
# first poll of a busy list reads two weeks of threads, and lore's admins ask bots to pace.
HEAL_REQUEST_INTERVAL_SECONDS = 1.0
HEAL_ID_CHARS = 10  # hex digits of a result's digest a heal keeps to notice cycling pages
DEFAULT_SINCE = timedelta(days=14)  # a first poll's reach: the daemon's admission window
NO_SEARCH_STATUS = 501  # public-inbox's answer for "Search is not available for this inbox"


@dataclass
class Heal:
    """A heal under way: results received since `start` (Unix seconds), `offset` of them done."""

    start: int
    offset: int = 0
    gap: bool = True  # healing a gap (said in event lines), not a first poll's quiet backfill
    ids: list[str] = field(default_factory=list)  # digests of the last results read, oldest first

    def dump(self) -> dict[str, int | bool | list[str]]:
        return {"from": self.start, "offset": self.offset, "gap": self.gap, "ids": self.ids}

    @classmethod
    def load(cls, data: object) -> Heal | None:
        if data is None:
            return None
        if not isinstance(data, dict):
            raise TypeError("heal is not an object")
        start, offset = int(data["from"]), int(data["offset"])
        if offset < 0:
            raise ValueError("negative heal offset")
        ids = data.get("ids", [])
        if not isinstance(ids, list):
            raise TypeError("heal ids is not a list")
        return cls(start, offset, bool(data.get("gap", True)), [str(item) for item in ids])


def search_url(list_url: str, start: int, offset: int) -> str:
    """The page of results received since `start` whose first result is the `offset`th, oldest
    first."""
    return f"{list_url}?q=rt:{int(start)}..&x=A&l={SEARCH_PAGE_SIZE}&o=-{offset + 1}"


def since_epoch(since: datetime | timedelta, now: float) -> int:
    """Unix seconds of a first poll's start: a date, or a span back from `now`."""
    if isinstance(since, timedelta):
        return int(now - since.total_seconds())
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return int(since.timestamp())


def describe(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
