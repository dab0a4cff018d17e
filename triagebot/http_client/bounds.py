"""HTTP client: how much one poll of a source may take, and one source in a day.

A poll here is one `triage ingest` of a source, or one source's share of a daemon pass: the
batches the runner stores from it until the source has nothing more right now. A source that
shows new entries on every request (or pages of search results that never end) would otherwise
keep `triage ingest` running for ever and starve the daemon's other sources. When a bound is
reached the batch in hand is stored with its cursor and the poll ends with an event line; the
rest is read at the next poll. The bytes a source stores in a UTC day are bounded too: past
`bytes_per_day` its polls are put off to the next day (its cursor stays, nothing is lost).

Values come from rules/sources.toml `[bounds]` (rules/sources.py validates them).
"""
from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20


@dataclass(frozen=True)
class PollBounds:
    """The bounds of one poll of one source, and of a source's day."""

    # messages stored by one poll (lore's busiest list, lkml, gets about 1,500 a day)
    messages: int = 5000
    # raw bytes stored by one poll (a lore thread mbox is capped at 64 MiB)
    bytes: int = 512 * MIB
    # seconds one poll may go on storing batches (checked between entries and batches; one
    # request is bounded on its own by `deadline_seconds`)
    seconds: float = 600.0
    # raw bytes one source may store in one UTC day (lkml: about 100 MiB a day)
    bytes_per_day: int = 4096 * MIB
    # polls that try a list entry whose message the server will not give, then it is given up
    entry_attempts: int = 3
    # search results one lore gap heal reads at most (lkml receives ~1,500 a day)
    heal_max_results: int = 100_000

    def __post_init__(self) -> None:
        if min(self.messages, self.bytes, self.bytes_per_day, self.entry_attempts, self.heal_max_results) < 1 \
                or not self.seconds > 0:
            raise ValueError(f"every poll bound must be positive: {self}")
