"""Reproduce stage: which waiting report runs on which lab host next (pure).

`schedule(waiting, hosts, busy, now, max_wait)` is the whole rule, a function of its arguments
only (no store, no clock, no lock files), so the daemon, `triage status` and `triage plan`
compute the same answer and the tests call it with made-up moments:

- Only hosts that can switch kernels run reports (an A/A run says nothing about a commit).
- Reports are taken newest first: by the report's date, or the date of the latest reply in its
  thread that brings numbers (a reply with measurements moves its report ahead); ties by the
  time taken on, then in the order given (the store's: the order reports were taken on).
- A report runs on the most similar host (`score_host`); hosts of equal score are one choice,
  and the report takes whichever of them is free. When none is free it waits in the queue of
  the one with the fewest reports waiting.
- A report that has waited `max_wait` or longer since it was taken on does not wait for its
  most similar host: it takes the most similar free host, and the assignment says what differs
  (`past_cap`, the score it gave up, the host's differences) for the plan to state.
- Each host runs one report at a time: a busy host gets nothing.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from triagebot.records.report import TestMachine
from triagebot.reproduce.hosts import HostMatch, score_host
from triagebot.rules.hosts import Host

DEFAULT_MAX_WAIT = timedelta(hours=2)  # rules/hosts.toml `max_wait_minutes` overrides it


@dataclass(frozen=True)
class Waiting:
    """A report waiting for a lab host, with what the schedule weighs."""

    message_id: str
    machine: TestMachine | None  # the report's test machine, compared with each host
    parameters: tuple[tuple[str, str], ...]  # its LKP parameters (disk, filesystem)
    newest_at: datetime  # its date, or its thread's latest reply with numbers (aware)
    waiting_since: datetime  # when it was taken on (aware)
    host: str | None = None  # the host a team member asked its rerun on: only that host runs it


@dataclass(frozen=True)
class Assignment:
    """One report given to one free host."""

    message_id: str
    host: str
    match: HostMatch  # how like the report's machine the host is
    preferred: tuple[str, ...]  # the most similar hosts (equal scores)
    preferred_score: float
    waited: timedelta
    past_cap: bool  # waited past the cap and took a less similar host

    def moved_note(self, max_wait: timedelta) -> str | None:
        """What the plan says when the report gave up its most similar host; None otherwise."""
        if not self.past_cap:
            return None
        note = (f"waited {describe_wait(self.waited)}, past the {describe_wait(max_wait)} cap, for "
                f"{' or '.join(self.preferred)} (match {self.preferred_score:.2f}): runs on {self.host} "
                f"(match {self.match.score:.2f}) instead")
        if self.match.differences:
            note += "; differs: " + "; ".join(self.match.differences)
        return note


@dataclass(frozen=True)
class Queued:
    """A report waiting in a host's queue: `ahead` reports (the running one included) before it."""

    message_id: str
    host: str
    ahead: int
    waited: timedelta


@dataclass(frozen=True)
class Schedule:
    assignments: tuple[Assignment, ...] = ()
    queues: Mapping[str, tuple[Queued, ...]] = field(default_factory=dict)  # every runnable host
    unrunnable: tuple[str, ...] = ()  # waiting, but no host can switch kernels

    def queued(self, message_id: str) -> Queued | None:
        return next((item for queue in self.queues.values() for item in queue
                     if item.message_id == message_id), None)

    def assigned(self, message_id: str) -> Assignment | None:
        return next((item for item in self.assignments if item.message_id == message_id), None)


def describe_wait(wait: timedelta) -> str:
    """`45 s`, `12 min`, `2 h 5 min`: a wait as a person reads it."""
    seconds = max(0, int(wait.total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h" + (f" {minutes} min" if minutes else "")


def priority_order(waiting: Sequence[Waiting]) -> list[Waiting]:
    """Newest first (a reply with numbers renews a report); then taken on earlier; then as given."""
    return sorted(waiting, key=lambda item: (-item.newest_at.timestamp(), item.waiting_since.timestamp()))


def most_similar(report: Waiting, hosts: Sequence[Host]) -> tuple[list[HostMatch], float]:
    """Every host's match, and the best score (hosts of that score are equally good)."""
    matches = [score_host(host, report.machine, parameters=report.parameters) for host in hosts]
    return matches, max((match.score for match in matches), default=0.0)


def schedule(waiting: Sequence[Waiting], hosts: Sequence[Host], busy: Mapping[str, object] | frozenset[str],
             now: datetime, max_wait: timedelta = DEFAULT_MAX_WAIT) -> Schedule:
    """Which waiting reports start now, and where the others wait (see the module's rules)."""
    runnable = [host for host in hosts if host.can_switch_kernel]
    if not runnable:
        return Schedule(unrunnable=tuple(item.message_id for item in priority_order(waiting)))
    busy_names = set(busy)
    free = [host.name for host in runnable if host.name not in busy_names]
    queues: dict[str, list[Queued]] = {host.name: [] for host in runnable}
    assignments: list[Assignment] = []
    for report in priority_order(waiting):
        matches, best = most_similar(report, [host for host in runnable if host.name == report.host]
                                     if report.host else runnable)
        if not matches:
            continue  # its asked host is gone from hosts.toml: it waits (`triage status` shows it)
        preferred = [match for match in matches if match.score == best]
        waited = now - report.waiting_since
        take = next((match for match in preferred if match.host.name in free), None)
        past_cap = False
        if take is None and waited >= max_wait and free:
            take = max((match for match in matches if match.host.name in free), key=lambda match: match.score)
            past_cap = True
        if take is not None:
            free.remove(take.host.name)
            assignments.append(Assignment(report.message_id, take.host.name, take,
                                          tuple(match.host.name for match in preferred), best, waited, past_cap))
            continue
        line = min((match.host.name for match in preferred), key=lambda name: len(queues[name]))
        # the host is running a report (or was just given one): that one is ahead too
        queues[line].append(Queued(report.message_id, line, len(queues[line]) + 1, waited))
    return Schedule(tuple(assignments), {name: tuple(queue) for name, queue in queues.items()})
