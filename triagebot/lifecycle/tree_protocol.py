"""Lifecycle stage: what the tree watcher (watch.py) needs of a watched git tree — fetch it, and
hand out the commits not yet read, oldest first. Protocol and value types only; git_tree.py runs
git for it."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from triagebot.errors import TriageError


class TreeError(TriageError):
    """A tree could not be fetched or read: one line naming the tree and what went wrong."""


@dataclass(frozen=True)
class TreeCommit:
    sha: str  # 40 hex digits
    message: str  # the commit's message (its first line the subject), cut at the tree's message bound
    cut: bool = False  # the message was longer than the bound


class TreeReader(Protocol):
    def fetch(self, since: datetime) -> None:
        """Bring the branch's tip into the mirror (the first fetch: history back to `since` only)."""
        ...

    def start_walk(self) -> bool:
        """Walk from the last walked tip to the fetched one; False when there is nothing new."""
        ...

    def walking(self) -> bool:
        """A walk started and not yet finished."""
        ...

    def commits(self, skip: int, take: int) -> list[TreeCommit]:
        """Commits of the walk, oldest first: `take` of them after the first `skip`."""
        ...

    def finish_walk(self) -> None:
        """The walk is done: its tip is the last walked."""
        ...

    def stop(self) -> None:
        """Kill the git at work for this reader, if any (the daemon is stopping)."""
        ...
