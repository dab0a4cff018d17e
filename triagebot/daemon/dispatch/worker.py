"""Dispatch on PostgreSQL, the workers' side: `triage worker` runs the lab jobs of its hosts.

A worker is a procrastinate worker on the store's database listening to the queues of the hosts
it serves (jobqueue.queue_for), one job at a time per host (their lock), as many at once as it
has hosts. Each job runs `flow.run_job` with a store of its own, exactly as the daemon's threads
do on SQLite; its notifications go to the outbox and the worker NOTIFYs the daemon, which
delivers them.

A worker runs the daemon's after-verdict jobs of its hosts too (`AFTER_VERDICT_TASK`, deferred
by after_verdict_queue.py): `run_after_verdict_jobs` for that host, every fix test and bisection
waiting there, with a store of its own, under the host's lock as the reruns.

A killed worker leaves its job `doing`. Every worker sweeps, at start and then every
`heartbeat_s`, for jobs of this task whose worker has sent no heartbeat for `stalled_after_s`
(procrastinate's stalled jobs: its workers beat every `heartbeat_s`) and retries them: the
report, still `running` on its host, starts over on whichever worker fetches the job. The
verdict is written only while the report is still `running` on that host (flow._run_one), so
a run retried beside one that was merely slow cannot decide twice.

A database that goes away (a restart, a failover) does not end the worker: procrastinate's
worker fails, and the worker waits (backoff, one line logged when it goes and one when it is
back) and starts it again. A job that was running then ends in an error it could not record: it
stays `doing` under the old worker's id, whose heartbeat has stopped, and the stalled-job sweep
retries it, as after a killed worker; nothing is lost, and the verdict is written once.

SIGTERM or SIGINT stops the worker: each run stops after its sample in progress, its report
waits again (`planned`) and the daemon hands it out anew; a fix test or bisection is queued
again, and the daemon defers its host's job anew.
"""
from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import psycopg

from triagebot.backoff import Backoff
from triagebot.daemon import flow
from triagebot.daemon.after_verdict_jobs import run_after_verdict_jobs
from triagebot.daemon.dispatch.jobqueue import ensure_job_schema, job_app, notify_outbox
from triagebot.daemon.dispatch.protocol import RunJob
from triagebot.daemon.outage import RECONNECT
from triagebot.lab.job_table import AFTER_VERDICT_TASK, TASK_NAME, TASKS, queue_for
from triagebot.logs import event
from triagebot.rules.settings import Settings
from triagebot.store.postgres import PostgresStore

log = logging.getLogger("triagebot.worker")
T = TypeVar("T")


@dataclass(frozen=True)
class WorkerOptions:
    """How a worker runs: the `triage worker` options once read."""

    budget: int = 20  # at most this many runs a side (as the daemon's --budget)
    stalled_after_s: float = 30.0  # a job whose worker sent no heartbeat this long is retried
    heartbeat_s: float = 5.0  # how often this worker beats, and sweeps for stalled jobs


def _on_own_store(url: str, settings: Settings, database: Path, options: WorkerOptions, stop: threading.Event,
                  work: Callable[[PostgresStore, flow.DaemonContext], T]) -> T:
    """`work` with a store of its own and the lab it runs in; the daemon is woken after each
    result and at the end (a job that ended without notifications, stopped or its host busy,
    frees its host too)."""
    with PostgresStore(url) as store:
        lab = flow.DaemonContext(settings=settings, database=database, deliver=lambda: notify_outbox(store),
                                 budget=options.budget, stop_requested=stop.is_set)
        try:
            return work(store, lab)
        finally:
            notify_outbox(store)


def run_lab_job(url: str, settings: Settings, database: Path, options: WorkerOptions, stop: threading.Event,
                message_id: str, host: str) -> str | None:
    """One job: the report's run on its host."""
    return _on_own_store(url, settings, database, options, stop,
                         lambda store, lab: flow.run_job(store, lab, RunJob(message_id, host)))


def run_after_verdict_job(url: str, settings: Settings, database: Path, options: WorkerOptions,
                          stop: threading.Event, host: str) -> int:
    """One host's after-verdict job: its fix tests and bisections waiting; the jobs that ended."""
    return _on_own_store(url, settings, database, options, stop,
                         lambda store, lab: run_after_verdict_jobs(store, lab, host))


async def retry_stalled(app, options: WorkerOptions) -> list[int]:
    """Retry every lab job (reruns and after-verdict jobs) whose worker stopped beating; their ids."""
    stalled = [job for task in TASKS for job in await app.job_manager.get_stalled_jobs(
        task_name=task, seconds_since_heartbeat=options.stalled_after_s)]
    retried = []
    for job in stalled:
        try:
            await app.job_manager.retry_job(job)
        except Exception as error:  # noqa: BLE001 - another worker's sweep retried it first
            event(log, logging.INFO, "stalled job already taken up", event="worker.stalled_taken",
                  job=job.id, error=f"{type(error).__name__}: {error}")
            continue
        retried.append(int(job.id or 0))
        event(log, logging.WARNING, "stalled job retried: its worker stopped beating", event="worker.stalled_retried",
              job=job.id, message_id=job.task_kwargs.get("message_id"), host=job.task_kwargs.get("host"),
              attempts=job.attempts)
    return retried


def serve_worker(url: str, settings: Settings, database: Path, hosts: Sequence[str], options: WorkerOptions) -> int:
    """Run `hosts`' lab jobs until SIGTERM or SIGINT; a database that goes away is waited for."""
    with PostgresStore(url) as store:
        ensure_job_schema(store)
    stop = threading.Event()
    app = job_app(url, min_size=1, max_size=len(hosts) + 4)

    @app.task(name=TASK_NAME)
    def lab_run(message_id: str, host: str) -> str | None:
        return run_lab_job(url, settings, database, options, stop, message_id, host)

    @app.task(name=AFTER_VERDICT_TASK)
    def after_verdict(host: str, message_id: str = "") -> int:  # message_id: the report it was deferred for
        return run_after_verdict_job(url, settings, database, options, stop, host)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()
        running: dict[str, asyncio.Task] = {}

        def stopping(signum: int) -> None:
            event(log, logging.INFO, "worker stopping: runs stop after their sample", event="worker.stopping",
                  signal=signal.Signals(signum).name)
            stop.set()
            stopped.set()
            if "work" in running:
                running["work"].cancel()  # procrastinate's graceful stop: the running jobs end (after their sample)

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stopping, signum)
        event(log, logging.INFO, "worker started", event="worker.started", hosts=list(hosts),
              db=url)  # the log formatter writes a password in it as *** (logs.py)
        outage = _Outage()
        while not stop.is_set():
            try:
                await _work(app, hosts, options, running, outage, stop)
            except Exception as error:  # noqa: BLE001 - judged below: the database gone is waited for
                if stop.is_set():
                    break
                if not _database_gone(url, error):
                    raise
                outage.lost(error)
                try:
                    await asyncio.wait_for(stopped.wait(), timeout=outage.next_wait())
                except TimeoutError:
                    pass

    asyncio.run(main())
    event(log, logging.INFO, "worker stopped", event="worker.stopped")
    return 0


class _Outage:
    """The worker's side of a database outage: one line when it goes, one when it is back, the
    backoff between attempts (triagebot/backoff.py, as the daemon's)."""

    def __init__(self, backoff: Backoff = RECONNECT) -> None:
        self.backoff = backoff
        self.since: float | None = None
        self.attempts = 0

    def lost(self, error: BaseException) -> None:
        if self.since is None:
            self.since = time.monotonic()
            event(log, logging.ERROR, "database unreachable: the worker waits for it, its jobs stay queued",
                  event="worker.database_lost", error=" ".join(str(error).split()) or type(error).__name__)
        self.attempts += 1

    def next_wait(self) -> float:
        return self.backoff.delay(self.attempts - 1)

    def back(self) -> None:
        if self.since is not None:
            event(log, logging.WARNING, "database back: the worker takes jobs again", event="worker.database_back",
                  away_seconds=round(time.monotonic() - self.since, 1), attempts=self.attempts)
        self.since, self.attempts = None, 0


async def _work(app, hosts: Sequence[str], options: WorkerOptions, running: dict[str, asyncio.Task],
                outage: _Outage, stop: threading.Event) -> None:
    """procrastinate's worker on `hosts`' queues, with the sweep for stalled jobs beside it, until
    it is cancelled (a stop) or fails (the database went away: raised)."""
    async with app.open_async():
        await retry_stalled(app, options)  # the first use of the database: it is there
        outage.back()
        work = asyncio.create_task(app.run_worker_async(
            queues=[queue_for(host) for host in hosts], concurrency=len(hosts), name="triage-worker",
            install_signal_handlers=False, update_heartbeat_interval=options.heartbeat_s,
            stalled_worker_timeout=options.stalled_after_s, delete_jobs="successful"))
        running["work"] = work
        try:
            while not work.done():
                if stop.is_set() and not work.cancelling():  # asked before the task was there to cancel
                    work.cancel()
                await asyncio.wait({work}, timeout=options.heartbeat_s)
                if not work.done():
                    await retry_stalled(app, options)
            try:
                await work
            except asyncio.CancelledError:
                return  # a stop
        finally:
            running.pop("work", None)
            if not work.done():
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
        raise WorkerEnded("the job queue's worker stopped by itself (a side task failed: the database went away?)")


class WorkerEnded(RuntimeError):
    """procrastinate's worker returned without being asked to stop."""


def _database_gone(url: str, error: BaseException) -> bool:
    """Whether the database cannot be reached now (whatever procrastinate or psycopg raised on
    the way): one connection is tried."""
    try:
        with psycopg.connect(url, connect_timeout=5, application_name="triagebot-worker-check") as connection:
            connection.execute("SELECT 1")
    except psycopg.Error:
        return True
    return isinstance(error, WorkerEnded | psycopg.OperationalError | psycopg.InterfaceError) or (
        type(error).__module__.startswith(("procrastinate", "psycopg_pool")))
