"""Dispatch: the interface between the daemon's flow and whatever carries out its lab runs.

The flow (flow.assign) decides, by the schedule, that a report runs on a host now. It moves the
report to `running` on that host in one store transaction, and hands the `RunJob` to the
dispatcher INSIDE that transaction (`enqueue`). After the commit it calls `launch`; if the
transaction fails it calls `abandon`. So a dispatcher whose jobs are rows in the same database
(a PostgreSQL job queue such as procrastinate: `enqueue` defers the job on the store's own
connection) commits the job together with the state change and its outbox rows, exactly once,
and `launch` has nothing left to do; an in-process dispatcher (inprocess.py) keeps the job in
memory and starts it at `launch`, the `running` row being its durable record (a restart takes
a `running` row nobody runs up again).

Whoever runs a job calls `flow.run_job(store, lab, job)` with a store of its own (one
connection per worker thread or process): it takes the host's lock, reruns the report and
writes the verdict with its notifications. Workers never deliver notifications; the daemon's
loop does, woken by `wait`.

The daemon's after-verdict work (fix tests, its bisections) goes to an `AfterVerdictRunner`: its
own threads (after_verdict_jobs.AfterVerdictWorker) unless the dispatcher `QueuesAfterVerdict`,
as the job queue does on PostgreSQL (that work is then jobs for the workers too).

This module names no implementation.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from triagebot.store.protocol import Store


@dataclass(frozen=True)
class RunJob:
    """Rerun one report on one host (the report's stored plan, made for that host)."""

    message_id: str
    host: str


@dataclass(frozen=True)
class JobsNow:
    """One reading of the dispatcher's jobs: host -> report of every job started and not yet
    finished, and of those hosts the ones whose job no worker has taken yet (a job queue's
    `todo`; empty where the dispatcher runs its jobs itself)."""

    running: Mapping[str, str]
    awaiting_worker: frozenset[str]
    # every report a rerun job is for: on a job queue a host may hold one rerun waiting behind the
    # after-verdict job it runs, so `running` (one report a host) need not name it
    reports: frozenset[str]


@dataclass(frozen=True)
class Finished:
    """A job that ended: the report's state after it, None when it did not decide (stopped, or
    its host was taken by another process: the report waits again)."""

    job: RunJob
    outcome: str | None


class Dispatcher(Protocol):
    def enqueue(self, store: Store, job: RunJob) -> None:
        """Take the job inside `store`'s open transaction (the one moving the report to running)."""
        ...

    def launch(self) -> None:
        """The transaction committed: the enqueued jobs may start."""
        ...

    def abandon(self) -> None:
        """The transaction rolled back: forget the jobs enqueued since the last launch."""
        ...

    def running(self) -> Mapping[str, str]:
        """Host -> report of every job started and not yet finished."""
        ...

    def jobs_now(self) -> JobsNow:
        """`running` with the hosts whose job waits for a worker, read together (one read: a job
        a worker takes between two reads cannot be counted both ways)."""
        ...

    def wait(self, timeout: float) -> bool:
        """Block until a job finished or a worker has notifications to deliver, at most `timeout`
        seconds; True when woken."""
        ...

    def finished(self) -> list[Finished]:
        """Jobs that ended since the last call."""
        ...

    def join(self) -> None:
        """Wait for every started job to end (the daemon is stopping: runs stop after a sample)."""
        ...

    def close(self) -> None:
        """Release what the dispatcher holds (a job queue's connection); the daemon stops after it."""
        ...

    def connection_lost(self) -> bool:
        """Whether the dispatcher's own connection to the database was lost (a job queue's; never
        for one that holds none): `wait` and `finished` fail with StoreUnavailable until `reconnect`."""
        ...

    def reconnect(self) -> None:
        """A new connection in place of a lost one, listening again; StoreUnavailable while the
        server cannot be reached."""
        ...


class AfterVerdictRunner(Protocol):
    """Carries out the fix tests and bisections queued after confirmed verdicts."""

    def poke(self, store: Store) -> None:
        """Start (or hand out) the work waiting now; called each pass."""
        ...

    def busy(self) -> bool:
        """Whether some of that work is still under way or waiting to be taken up."""
        ...

    def join(self) -> None:
        """Wait for the work this process runs (the daemon is stopping)."""
        ...


@runtime_checkable
class QueuesAfterVerdict(Protocol):
    """A dispatcher whose runs are done elsewhere hands out the after-verdict work the same way."""

    def after_verdict_runner(self, lab: Any) -> AfterVerdictRunner:
        """The runner for the daemon's `lab` (a flow.DaemonContext)."""
        ...
