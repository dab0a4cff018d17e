"""Dispatch on PostgreSQL: the daemon's after-verdict work — fix tests and its own bisections —
as jobs of the job queue, run by `triage worker`s like the reruns (jobqueue.py, worker.py).

`AfterVerdictJobs` has the face of after_verdict_jobs.AfterVerdictWorker (`poke`, `busy`,
`join`), which runs that work on threads of the daemon's own on SQLite. Here `poke` defers one
job of `AFTER_VERDICT_TASK` for each host with work (after_verdict_jobs.work_by_host) that
has no such job waiting or running: in the host's queue, under the host's lock (procrastinate
never runs it beside a rerun of that host) and with a queueing lock per host (at most one waits).
The worker that fetches it runs `run_after_verdict_jobs(store, lab, host)`: every fix test and
bisection waiting on that host, one after another. The job names the report it was deferred
for (the first in line), which the lab's occupancy shows as the host's report.

Work whose report has no rerun host, or whose host hosts.toml no longer lists as one that can
switch kernels, needs no lab host: no worker serves it, and it ends at once as an error said in
the report's thread. The daemon runs that in its own process, as on SQLite.
"""
from __future__ import annotations

import logging

import procrastinate
from procrastinate.exceptions import AlreadyEnqueued

from triagebot.daemon.after_verdict_jobs import run_after_verdict_jobs, work_by_host
from triagebot.lab.context import DaemonContext
from triagebot.lab.job_table import AFTER_VERDICT_TASK, after_verdict_queueing_lock_for, lab_jobs, lock_for, queue_for
from triagebot.logs import event
from triagebot.store.protocol import Store

log = logging.getLogger("triagebot.daemon")


class AfterVerdictJobs:
    """The daemon's side: one after-verdict job per host with work, deferred for the workers."""

    def __init__(self, app: procrastinate.App, own: Store, lab: DaemonContext) -> None:
        self._app = app
        self._own = own  # the daemon loop's job-queue connection: `busy` reads the job table on it
        self._lab = lab

    def _queued_hosts(self, store: Store) -> set[str]:
        return {job.host for job in lab_jobs(store.connection) if job.after_verdict}

    def poke(self, store: Store) -> None:
        """Defer a job for every served host with work and no after-verdict job waiting or
        running; run here the work that needs no lab host."""
        firsts = work_by_host(store, self._lab.settings)  # host -> the report its job is deferred for
        if not firsts:
            return
        served = {host.name for host in self._lab.settings.need_hosts() if host.can_switch_kernel}
        queued = self._queued_hosts(store)
        for host in sorted(firsts):
            if host not in served:
                # no worker serves it and no lab host is touched: each job ends as its error, posted
                run_after_verdict_jobs(store, self._lab, host)
                continue
            if host in queued:
                continue  # its job runs every job of the host, the new ones too
            try:
                self._app.configure_task(
                    AFTER_VERDICT_TASK, queue=queue_for(host), lock=lock_for(host),
                    queueing_lock=after_verdict_queueing_lock_for(host), connection=store.connection,
                ).defer(host=host, message_id=firsts[host])
            except AlreadyEnqueued:
                continue  # one waits already (deferred since the job table was read)
            event(log, logging.INFO, "after-verdict job deferred for a worker", event="after.deferred", host=host,
                  message_id=firsts[host])

    def busy(self) -> bool:
        """Whether an after-verdict job waits for a worker or runs (`--once` waits for them)."""
        return bool(self._queued_hosts(self._own))

    def join(self) -> None:
        pass  # the jobs are the workers': they go on while the daemon is stopped
