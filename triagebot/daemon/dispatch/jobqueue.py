"""Dispatch on PostgreSQL: each lab run a procrastinate job, a row in the store's own database.

`JobQueueDispatcher.enqueue` defers the job on the store's connection inside the transaction
that moves the report to `running` (procrastinate's `configure(connection=…)`), so the state
change, its outbox rows and the job commit together or not at all. Each job goes to its host's
queue (`queue_for`) under its host's lock (`lock_for`): procrastinate starts no job while
another of the same lock is `doing`, so a host runs one report at a time whichever worker, on
whichever machine, fetched it. A report has at most one waiting job (its queueing lock).

The jobs are run by `triage worker` processes (daemon/dispatch/worker.py), anywhere that reaches the
database. They never deliver notifications: after writing the outbox they NOTIFY
`OUTBOX_CHANNEL`, which `wait` LISTENs on, and the daemon's loop delivers.

The loop's own connection (LISTEN, the job table read) can be lost like any (a restart of the
server): `wait`, `jobs_now` and `finished` then raise StoreUnavailable instead of psycopg's
errors, and `reconnect` opens a new one and LISTENs again (the daemon's loop waits for the
server with it, daemon/outage.py). A NOTIFY sent while it was away is not missed for long: the
loop runs its pass once it is back, which reads the job table and delivers the outbox anyway.

procrastinate's schema lives beside the store's tables, applied by `ensure_job_schema` (`triage
db migrate`, and the daemon and workers at start) under the store's write lock, so processes
starting at once apply it once.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import procrastinate
import psycopg
from procrastinate.schema import SchemaManager

from triagebot.daemon.dispatch.after_verdict_queue import AfterVerdictJobs
from triagebot.daemon.dispatch.protocol import Finished, JobsNow, RunJob
from triagebot.lab.context import DaemonContext
from triagebot.lab.job_table import (
    TASK_NAME,
    LabJob,
    jobs_by_host,
    lab_jobs,
    lock_for,
    queue_for,
    queueing_lock_for,
)
from triagebot.lab.job_table import job_table_present as _job_table_present
from triagebot.logs import event
from triagebot.records.states import TriageState
from triagebot.store.postgres import PostgresStore
from triagebot.store.protocol import Store, StoreError, StoreUnavailable

log = logging.getLogger("triagebot.daemon")

OUTBOX_CHANNEL = "triagebot_outbox"  # workers NOTIFY it after writing notifications or ending a job
T = TypeVar("T")


def job_app(url: str, **pool_options: Any) -> procrastinate.App:
    """A procrastinate app on the store's database (its pool is opened by whoever runs jobs;
    deferring on the store's own connection needs none)."""
    connector = procrastinate.PsycopgConnector(conninfo=url, kwargs={"application_name": "triagebot-jobs"},
                                               **pool_options)
    return procrastinate.App(connector=connector)


def job_schema_present(store: Store) -> bool:
    return _job_table_present(store.connection)


def ensure_job_schema(store: Store) -> bool:
    """Apply procrastinate's schema to the store's database unless it is there; True when applied.
    One transaction under the store's write lock: two processes starting at once apply it once."""
    if not isinstance(store, PostgresStore):
        raise StoreError("the job queue needs a PostgreSQL store (--db postgresql://…)")
    with store.transaction():
        if job_schema_present(store):
            return False
        # procrastinate's own schema file, as its `schema --apply` runs it (no parameters: `%` is `%`)
        store.connection.execute(SchemaManager.get_schema())
    event(log, logging.INFO, "job queue schema applied", event="jobs.schema", version=procrastinate.__version__)
    return True


def notify_outbox(store: Store) -> None:
    """Wake the daemon's loop (JobQueueDispatcher.wait): notifications or a finished job."""
    store.connection.execute(f"NOTIFY {OUTBOX_CHANNEL}")


class JobQueueDispatcher:
    """The daemon's side: jobs deferred in the state change's transaction; the lab seen in the job table."""

    def __init__(self, url: str, app: procrastinate.App | None = None) -> None:
        self._app = app if app is not None else job_app(url)
        self._store = PostgresStore(url)  # the loop's own connection: LISTEN, and the job table read
        try:
            ensure_job_schema(self._store)
            self._store.connection.execute(f"LISTEN {OUTBOX_CHANNEL}")
        except BaseException:
            self._store.close()
            raise
        self._seen: dict[str, str] = {}
        self._finished: list[Finished] = []

    def close(self) -> None:
        """Close the loop's connection (its LISTEN ends with it); the daemon calls it at stop."""
        self._store.close()

    def connection_lost(self) -> bool:
        return self._store.connection_lost()

    def reconnect(self) -> None:
        """A new connection for the loop, listening again (StoreUnavailable while the server is away)."""
        self._store.reconnect()
        with self._unless_lost():
            self._store.connection.execute(f"LISTEN {OUTBOX_CHANNEL}")

    @contextmanager
    def _unless_lost(self) -> Iterator[None]:
        """psycopg's error on the loop's own connection as StoreUnavailable when it was lost."""
        if self._store.connection_lost():
            raise StoreUnavailable(f"{self._store.path}: the job queue's connection was lost")
        try:
            yield
        except (psycopg.OperationalError, psycopg.InterfaceError) as error:
            if self._store.connection_lost():
                raise StoreUnavailable(f"{self._store.path}: the job queue's connection was lost: "
                                       f"{' '.join(str(error).split())}") from error
            raise

    def _read(self, read: Callable[[], T]) -> T:
        with self._unless_lost():
            return read()

    def enqueue(self, store: Store, job: RunJob) -> None:
        self._app.configure_task(
            TASK_NAME, queue=queue_for(job.host), lock=lock_for(job.host),
            queueing_lock=queueing_lock_for(job.message_id), connection=store.connection,
        ).defer(message_id=job.message_id, host=job.host)

    def launch(self) -> None:
        pass  # the job committed with the state change: a worker fetches it

    def abandon(self) -> None:
        pass  # the job row rolled back with the transaction

    def running(self) -> Mapping[str, str]:
        """Host -> report of every lab job waiting for or held by a worker (todo or doing): the
        job table read as `triage status` and the web pages read it (lab_jobs.py)."""
        return self.jobs_now().running

    def jobs_now(self) -> JobsNow:
        """The job table read once: every job's host and report (a host's after-verdict job
        makes it busy too, with the report it was deferred for), and the hosts whose job is still
        `todo`; a rerun's job gone since the last read is finished."""
        every = [job for job in self._read(lambda: lab_jobs(self._store.connection)) if not self._ended(job)]
        jobs = jobs_by_host(every)
        reruns = {host: job.message_id for host, job in jobs_by_host([job for job in every
                                                                      if not job.after_verdict]).items()}
        for host, message_id in self._seen.items():
            if reruns.get(host) != message_id:
                row = self._store.get_triage(message_id)
                outcome = row.state if row is not None and row.state not in (
                    TriageState.RUNNING, TriageState.PLANNED) else None
                self._finished.append(Finished(RunJob(message_id, host), outcome))
        self._seen = reruns
        return JobsNow({host: job.message_id for host, job in jobs.items()},
                       frozenset(host for host, job in jobs.items() if not job.doing),
                       frozenset(job.message_id for job in every if not job.after_verdict))

    def _ended(self, job: LabJob) -> bool:
        """A rerun job whose run is over (its report left `running` on that host: decided, or
        waiting again) while its worker is still returning from it. Its host counts as free: the
        worker's NOTIFY comes before procrastinate marks the job done, and waiting for the next
        wake-up to see it done would hold every freed host up to a second. A job deferred for the
        host meanwhile starts once this one is marked done (the host's lock)."""
        if job.after_verdict or not job.doing:
            return False
        row = self._store.get_triage(job.message_id)
        return row is None or row.state != TriageState.RUNNING or row.host != job.host

    def after_verdict_runner(self, lab: DaemonContext) -> AfterVerdictJobs:
        """The daemon's after-verdict work on PostgreSQL: one job per host with work, for the
        workers (after_verdict_queue.py), read on this loop's connection."""
        return AfterVerdictJobs(self._app, self._store, lab)

    def wait(self, timeout: float) -> bool:
        with self._unless_lost():
            for _notice in self._store.connection.notifies(timeout=timeout, stop_after=1):
                return True
        return False

    def wake(self) -> None:
        with self._unless_lost():
            notify_outbox(self._store)

    def finished(self) -> list[Finished]:
        self.running()
        done, self._finished = self._finished, []
        return done

    def join(self) -> None:
        pass  # the runs are the workers': they go on while the daemon is stopped
