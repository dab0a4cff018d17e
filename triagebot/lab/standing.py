"""The lab and the daemon's polls as they stand, read once from the store: the one source for
what the web index and /hosts, `triage status` and /healthz say about the queue and the polls.

`standing()` gathers the lab view (lab/queue.py: which hosts are busy, the daemon's schedule),
each source's last poll as the daemon stored it (its cursor `daemon:last-poll:URL`: when, the
outcome, the error, how many polls in a row failed) and the outbox rows held for an operator.
Every view words a report's place (`Place.text`), a source's last poll (`SourcePoll.text`) and
the daemon's health (`Standing.problems`) through this module, so no two of them can disagree:
the index cannot say "queued on this-machine" while /hosts says its queue is empty, nor
/healthz say `ok` while `triage status` shows every poll failing.

Health: `degraded` when every source that was polled failed its last poll (no mail comes in at
all), when one source failed its last FAILING_POLLS polls in a row while others work (named,
with its error), or when the outbox holds rows Slack refused; else `ok`.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from triagebot.ingest.runner import LAST_POLL_KEY
from triagebot.lab.queue import BUSY_ELSEWHERE, LabView, lab_view
from triagebot.rules.settings import Settings
from triagebot.store.protocol import Store

# a source that failed this many polls in a row is named while the others work: one or two
# failures are a blip (a retry already happened inside each poll), three are an outage
FAILING_POLLS = 3


@dataclass(frozen=True)
class Place:
    """Where a report stands in the lab now."""

    kind: str  # "running", "next", "queued", "no-host" (no host can switch kernels), "waiting"
    host: str | None = None
    ahead: int = 0  # queued: the reports before it on its host, the one running there included

    def text(self) -> str:
        if self.kind == "running":
            return f"running on {self.host}"
        if self.kind == "next":
            return f"next on {self.host}: starts at the daemon's next step"
        if self.kind == "queued":
            return f"queued on {self.host} behind {self.ahead}"
        if self.kind == "no-host":
            return "waits for a host that can switch kernels (hosts.toml lists none)"
        return "waits for a host"


@dataclass(frozen=True)
class SourcePoll:
    """A source of rules/sources.toml and its last poll, as the daemon stored it."""

    url: str
    every_minutes: float
    last: Mapping[str, Any] | None  # {"at", "outcome": "ok" | "error", "error" | "new", ...}; None: never polled

    @property
    def failed(self) -> bool:
        return self.last is not None and self.last.get("outcome") == "error"

    @property
    def failed_in_a_row(self) -> int:
        """Polls in a row that failed, up to the last one (a cursor from before the count: 1 or 0)."""
        if self.last is None:
            return 0
        return int(self.last.get("failed_in_a_row", 1 if self.failed else 0))

    def text(self) -> str:
        if self.last is None:
            return "never polled"
        if not self.failed:
            return f"last poll {self.last.get('at')}: ok, {self.last.get('new', 0)} new"
        again = f" ({self.failed_in_a_row} in a row)" if self.failed_in_a_row > 1 else ""
        return f"last poll {self.last.get('at')}: FAILED{again}: {self.last.get('error')}"


def next_poll_record(previous: str | None, outcome: dict[str, Any]) -> dict[str, Any]:
    """The cursor a poll leaves: its outcome, with the count of failed polls in a row carried on
    from the `previous` cursor's text (0 after a poll that worked)."""
    failed = 0
    if outcome.get("outcome") == "error":
        before = SourcePoll("", 0, json.loads(previous)) if previous else None
        failed = (before.failed_in_a_row if before is not None else 0) + 1
    return outcome | {"failed_in_a_row": failed}


@dataclass(frozen=True)
class Standing:
    """The lab view, the polls and the held notifications, read together."""

    lab: LabView
    polls: tuple[SourcePoll, ...]
    held: int = 0  # outbox rows Slack refused, held for an operator

    def place(self, message_id: str) -> Place | None:
        """Where a report the daemon has taken on stands in the lab; None when it is not waiting
        or running (decided, refused, new)."""
        for host, running in self.lab.busy.items():
            if running == message_id and running != BUSY_ELSEWHERE:
                return Place("running", host)
        if (assigned := self.lab.schedule.assigned(message_id)) is not None:
            return Place("next", assigned.host)
        if (queued := self.lab.schedule.queued(message_id)) is not None:
            return Place("queued", queued.host, queued.ahead)
        if message_id in self.lab.schedule.unrunnable:
            return Place("no-host")
        if message_id in self.lab.waiting_since:
            return Place("waiting")  # planned for a host no longer in hosts.toml
        return None

    def queue_counts(self) -> dict[str, int]:
        """How many reports run, start next, wait in a host's queue, and wait for any host."""
        schedule = self.lab.schedule
        return {"running": sum(1 for report in self.lab.busy.values() if report and report != BUSY_ELSEWHERE),
                "next": len(schedule.assignments),
                "queued": sum(len(queue) for queue in schedule.queues.values()),
                "waiting_for_a_host": len(self.lab.waiting_since) - len(schedule.assignments)
                - sum(len(queue) for queue in schedule.queues.values())}

    def poll_problems(self, failing_polls: int = FAILING_POLLS) -> list[str]:
        """Why the polls make the daemon degraded, in words; empty when they do not."""
        polled = [poll for poll in self.polls if poll.last is not None]
        if polled and all(poll.failed for poll in polled):
            failures = "; ".join(f"{poll.url}: {poll.last.get('error') if poll.last else ''}" for poll in polled)
            return [f"polls failing: every polled source's last poll failed ({failures})"]
        return [f"polls failing: source {poll.url} failed its last {poll.failed_in_a_row} polls in a row: "
                f"{poll.last.get('error') if poll.last else ''}"
                for poll in polled if poll.failed_in_a_row >= failing_polls]

    def problems(self, failing_polls: int = FAILING_POLLS) -> list[str]:
        """Why the daemon is degraded (its polls, held notifications); empty when it is not."""
        problems = self.poll_problems(failing_polls)
        if self.held:
            problems.append(f"{self.held} outbox row(s) held: Slack refused them (triage status; fix the token or "
                            "channel, then restart)")
        return problems

    def health(self) -> str:
        return "degraded" if self.problems() else "ok"

    def polls_line(self) -> str:
        """The polls in one line, as every view heads its lab with it."""
        if not self.polls:
            return "polls: none (rules/sources.toml lists none)"
        problems = self.poll_problems()
        if problems:
            return "; ".join(problems)
        if all(poll.last is None for poll in self.polls):
            return "polls: none yet"
        return "polls: ok"


def source_polls(store: Store, settings: Settings) -> tuple[SourcePoll, ...]:
    """Each source of the rules and its last poll, from the daemon's cursors."""
    polls = []
    for source in settings.sources:
        text = store.get_cursor(LAST_POLL_KEY + source.url)
        polls.append(SourcePoll(source.url, source.poll_minutes, json.loads(text) if text else None))
    return tuple(polls)


def standing(store: Store, database: Path | None, settings: Settings, max_wait: timedelta, now: datetime,
             running: Mapping[str, str] | None = None, awaiting_worker: frozenset[str] = frozenset()) -> Standing:
    """The lab and the polls now (`running`: the daemon's own dispatcher's runs, when it asks)."""
    hosts = settings.hosts or ()
    view = lab_view(store, database, hosts, max_wait, now, running, awaiting_worker)
    return Standing(view, source_polls(store, settings), store.outbox_counts().get("held", 0))
