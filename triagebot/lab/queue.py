"""The lab's queue as the store and the host locks show it: what `schedule` is given, and its answer.

The daemon (flow.assign, /metrics), `triage status`, `triage plan` and the web's /hosts read the
same view, so what a team is shown is what the daemon does; which hosts are busy is answered in
one place, `occupancy` (the job queue on PostgreSQL, the host locks on SQLite). The rule itself
is triagebot.reproduce.schedule (pure); this module only gathers its arguments: the waiting
reports (state `planned`) with the date that orders them, which hosts are busy and with which
report.
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from triagebot.records.report import Report
from triagebot.records.states import TriageState
from triagebot.reproduce.host_lock import host_busy
from triagebot.reproduce.hosts import HostMatch, score_host
from triagebot.reproduce.schedule import Schedule, Waiting, schedule
from triagebot.rules.hosts import Host
from triagebot.store.protocol import Store, TriageRow, UnreadableRecord

BUSY_ELSEWHERE = ""  # a host whose lock another process holds (`triage rerun`): busy, no report known


@dataclass(frozen=True)
class LabView:
    """Each host's report (busy) or None (idle), and the schedule of the waiting reports."""

    hosts: tuple[Host, ...]
    busy: Mapping[str, str]  # host -> the report it runs (BUSY_ELSEWHERE: locked by another process)
    schedule: Schedule
    now: datetime
    waiting_since: Mapping[str, datetime] = field(default_factory=dict)  # every waiting report
    # the waiting reports' records as read for the schedule (None: unreadable), for a page to show
    reports: Mapping[str, Report | None] = field(default_factory=dict)
    # busy hosts whose job waits for a worker to fetch it (PostgreSQL: no `triage worker` serves it yet)
    awaiting_worker: frozenset[str] = frozenset()
    busy_from: str = ""  # where `busy` was read (Occupancy.source)
    beat_ago: Mapping[str, float] = field(default_factory=dict)  # Occupancy.beat_ago

    def waited(self, message_id: str) -> timedelta | None:
        since = self.waiting_since.get(message_id)
        return None if since is None else self.now - since


def moment(text: str | None) -> datetime | None:
    """An ISO 8601 time as an aware datetime (naive: UTC); None when absent or unreadable."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _has_numbers(record: Report) -> bool:
    return bool(record.measurements) or record.stance_numbers is not None


def newest_activity(store: Store, message_id: str, report: Report | None, taken_on: datetime) -> datetime:
    """The report's date (else when it was taken on), or a later reply in its thread that brings
    numbers (measurements, or numbers that take a stance): a thread that grows moves ahead."""
    newest = (moment(report.date) if report else None) or taken_on
    for other in store.thread_of(message_id):
        if other == message_id:
            continue
        try:
            reply = store.get_record(other)
        except UnreadableRecord:
            continue
        if reply is None or not _has_numbers(reply):
            continue
        stored = store.get_message(other)
        when = moment(reply.date) or (moment(stored.received_at) if stored else None)
        if when is not None and when > newest:
            newest = when
    return newest


def _record(store: Store, message_id: str) -> Report | None:
    try:
        return store.get_record(message_id)
    except UnreadableRecord:
        return None


def waiting_report(store: Store, row: TriageRow, report: Report | None = None) -> Waiting:
    """A planned report as the schedule weighs it, its record read unless given (an unreadable
    record: no machine to compare)."""
    taken_on = moment(row.created_at) or datetime.now(UTC)
    if report is None:
        report = _record(store, row.message_id)
    return Waiting(row.message_id, report.test_machine if report else None,
                   tuple(report.parameters) if report else (), newest_activity(store, row.message_id, report, taken_on),
                   taken_on, pinned_host(store, row.message_id))


@dataclass(frozen=True)
class Occupancy:
    """Which hosts are busy, with the report each runs, and where that was read."""

    busy: dict[str, str]  # host -> the report it runs (BUSY_ELSEWHERE: locked by another process)
    awaiting_worker: frozenset[str] = frozenset()  # hosts whose job no worker has fetched yet (PostgreSQL)
    source: str = "host locks"  # "job queue", "host locks", "this process" or "triage table"
    # job queue: each busy host's worker, seconds since it last beat (a dead worker's job is retried)
    beat_ago: dict[str, float] = field(default_factory=dict)


def _job_connection(store: Store):
    """The store's PostgreSQL connection, where procrastinate's job table is; None on SQLite.
    A PostgresStore exists only once its module is loaded, so the module is looked up, never
    imported here: on SQLite, psycopg (and the importlib.metadata it pulls in) stays unloaded,
    which keeps `triage status` quick (psycopg may not even be installed there)."""
    module = sys.modules.get("triagebot.store.postgres")
    if module is None:
        return None
    return store.connection if isinstance(store, module.PostgresStore) else None


def occupancy(store: Store, database: Path | None, hosts: tuple[Host, ...],
              running: Mapping[str, str] | None = None, awaiting_worker: frozenset[str] = frozenset()) -> Occupancy:
    """The one answer to "which hosts are busy, with which report", below every view (`triage
    status`, `triage plan`, the web's /hosts, the daemon's schedule and /metrics):

    - `running`: the caller's own runs (the daemon's dispatcher: its threads on SQLite, the job
      table read the same way as here on PostgreSQL), with `awaiting_worker` those of its hosts
      whose job no worker has taken yet;
    - else on PostgreSQL the job queue (lab/job_table.py): a host is busy with the report
      of the job in its queue, held by a worker (`doing`) wherever that worker runs, or waiting
      for one (`todo`: the report is `running` there already, nothing else is given the host);
    - else, and beside the job queue, a held host lock on this machine (a `triage rerun` by
      hand, or the daemon's threads on SQLite), with the report the triage table says runs there;
    - no `database` and no job queue (nothing to try): the triage table's running reports."""
    busy = dict(running or {})
    awaiting: set[str] = set(awaiting_worker) if running is not None else set()
    beat_ago: dict[str, float] = {}
    connection = _job_connection(store) if running is None else None
    source = ("this process" if running is not None else "job queue" if connection is not None
              else "triage table" if database is None else "host locks")
    if connection is not None:
        from triagebot.lab.job_table import jobs_by_host, lab_jobs

        known = {host.name for host in hosts}
        for name, job in jobs_by_host(lab_jobs(connection)).items():
            if name in known:
                busy[name] = job.message_id
                if not job.doing:
                    awaiting.add(name)
                elif job.heartbeat_age is not None:
                    beat_ago[name] = job.heartbeat_age
    on_host = {row.host: row.message_id for row in store.triage_in(TriageState.RUNNING) if row.host}
    for host in hosts:
        if host.name in busy:
            continue
        if database is None:
            if connection is None and host.name in on_host:
                busy[host.name] = on_host[host.name]
        elif host_busy(database, host.name):
            busy[host.name] = on_host.get(host.name, BUSY_ELSEWHERE)
    return Occupancy(busy, frozenset(awaiting), source, beat_ago)


def busy_hosts(store: Store, database: Path | None, hosts: tuple[Host, ...],
               running: Mapping[str, str] | None = None) -> dict[str, str]:
    """Which hosts are busy, with the report each runs (see `occupancy`)."""
    return occupancy(store, database, hosts, running).busy


def lab_view(store: Store, database: Path | None, hosts: tuple[Host, ...], max_wait: timedelta, now: datetime,
             running: Mapping[str, str] | None = None, awaiting_worker: frozenset[str] = frozenset()) -> LabView:
    """The hosts' state and the schedule of every planned report, now."""
    rows = store.triage_in(TriageState.PLANNED)
    reports = {row.message_id: _record(store, row.message_id) for row in rows}
    waiting = [waiting_report(store, row, reports[row.message_id]) for row in rows]
    found = occupancy(store, database, hosts, running, awaiting_worker)
    return LabView(hosts, found.busy, schedule(waiting, hosts, found.busy, now, max_wait), now,
                   {item.message_id: item.waiting_since for item in waiting}, reports, found.awaiting_worker,
                   found.source, found.beat_ago)


def preferred_host(hosts: tuple[Host, ...], report: Report) -> tuple[HostMatch | None, tuple[str, ...]]:
    """The host a report is planned for: the most similar of those that can switch kernels (of
    all hosts when none can), the first in hosts.toml of equal ones; and the other equal ones,
    on any of which the schedule may run it (triagebot.reproduce.schedule)."""
    candidates = [host for host in hosts if host.can_switch_kernel] or list(hosts)
    matches = [score_host(host, report.test_machine, parameters=report.parameters) for host in candidates]
    if not matches:
        return None, ()
    best = max(match.score for match in matches)
    equal = [match for match in matches if match.score == best]
    return equal[0], tuple(match.host.name for match in equal[1:])


def daemon_host(store: Store, database: Path, hosts: tuple[Host, ...], max_wait: timedelta, report: Report,
                now: datetime) -> tuple[Host | None, str]:
    """The host the daemon runs (or would run) `report` on, and why, in a few words: where it
    runs or is queued when the daemon took it on, else its most similar host, a free one of
    equal ones first."""
    by_name = {host.name: host for host in hosts}
    message_id = report.message_id or ""
    row = store.get_triage(message_id) if message_id else None
    if row is not None and row.state == TriageState.RUNNING and row.host in by_name:
        return by_name[row.host], f"it runs on {row.host} now"
    if row is not None and row.state == TriageState.PLANNED:
        view = lab_view(store, database, hosts, max_wait, now)
        if (assigned := view.schedule.assigned(message_id)) is not None:
            return by_name[assigned.host], (f"{assigned.host} is free: it runs there next"
                                            + (" (past the wait cap)" if assigned.past_cap else ""))
        if (queued := view.schedule.queued(message_id)) is not None:
            return by_name[queued.host], f"queued behind {queued.ahead} on {queued.host}"
    match, alternatives = preferred_host(hosts, report)
    if match is None:
        return None, "hosts.toml lists no host"
    busy = busy_hosts(store, database, hosts)
    name = next((candidate for candidate in (match.host.name, *alternatives) if candidate not in busy),
                match.host.name)
    return by_name[name], f"the most similar host (match {match.score:.2f})"


RERUNS = ("rerun", "rerun-on-host")


def pinned_host(store: Store, message_id: str) -> str | None:
    """The host a team member asked a waiting report's rerun on (None: the schedule chooses)."""
    reruns = [action for action in store.actions_of(message_id) if action.action in RERUNS]
    if not reruns or reruns[-1].action != "rerun-on-host":
        return None
    row = store.get_triage(message_id)
    return row.host if row is not None else None
