"""The lab on PostgreSQL: the lab's jobs as procrastinate's job table holds them, in plain SQL.

Each lab run is a job of `TASK_NAME` in its host's queue (`queue_for`) under its host's lock
(`lock_for`); so is each host's after-verdict job (`AFTER_VERDICT_TASK`: its fix tests and the
daemon's bisections, one after another), so it never runs beside a rerun of that host. A job
is `todo` while it waits for a worker to fetch it and `doing` while a worker runs it; a job that
ended well is deleted, a failed one is `failed`. So the host of a `doing` job is busy with that
job's report, wherever its worker runs; the host of a `todo` job is taken too (a rerun's report
is `running` there; an after-verdict job's host is given no rerun), waiting for a worker. An
after-verdict job's report is the one it was deferred for: the first whose work it runs.

This module reads the table with the store's own connection and imports no procrastinate, so
`triage status`, `triage plan`, the web pages and the daemon (jobqueue.py) read the same rows
the same way. A database whose job queue was never applied has no jobs.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

TASK_NAME = "triagebot.lab_run"  # the job's task: rerun one report on one host (daemon/dispatch/worker.py)
# a host's fix tests and daemon's bisections, all those waiting (daemon/dispatch/after_verdict_queue.py)
AFTER_VERDICT_TASK = "triagebot.after_verdict"
TASKS = (TASK_NAME, AFTER_VERDICT_TASK)
JOB_TABLE = "procrastinate_jobs"
WORKER_TABLE = "procrastinate_workers"
QUEUE_PREFIX = "triagebot-lab-"


def queue_for(host: str) -> str:
    """The queue of one host's jobs: `triage worker --host NAME` listens to NAME's queue."""
    return f"{QUEUE_PREFIX}{host}"


def lock_for(host: str) -> str:
    """The lock every job of one host takes: one run per host at a time, across workers."""
    return f"triagebot-host-{host}"


def queueing_lock_for(message_id: str) -> str:
    """At most one waiting job per report."""
    return f"triagebot-report-{message_id}"


def after_verdict_queueing_lock_for(host: str) -> str:
    """At most one waiting after-verdict job per host."""
    return f"triagebot-after-verdict-{host}"


@dataclass(frozen=True)
class LabJob:
    """One lab job waiting for a worker (`todo`) or held by one (`doing`)."""

    host: str  # the host whose queue it is in
    message_id: str  # a rerun's report; an after-verdict job's: the report it was deferred for
    status: str  # "todo" or "doing"
    heartbeat_age: float | None = None  # doing: seconds since its worker last beat (None: unknown)
    task: str = TASK_NAME

    @property
    def doing(self) -> bool:
        return self.status == "doing"

    @property
    def after_verdict(self) -> bool:
        return self.task == AFTER_VERDICT_TASK


def job_table_present(connection: Any) -> bool:
    """Whether the job queue's schema is in the connection's schema (`triage db migrate` applies it)."""
    found = connection.execute(
        "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = %s",
        (JOB_TABLE,)).fetchone()
    return found is not None


def lab_jobs(connection: Any) -> list[LabJob]:
    """Every lab job (reruns and after-verdict jobs) waiting or running, oldest first; none when
    the job queue was never applied."""
    if not job_table_present(connection):
        return []
    rows = connection.execute(
        f"SELECT job.queue_name, job.args->>'message_id', job.status::text,"
        f" EXTRACT(EPOCH FROM now() - worker.last_heartbeat), job.task_name"
        f" FROM {JOB_TABLE} job LEFT JOIN {WORKER_TABLE} worker ON worker.id = job.worker_id"
        " WHERE job.task_name = ANY(%s) AND job.status IN ('todo', 'doing') AND job.queue_name LIKE %s"
        " ORDER BY job.id", (list(TASKS), QUEUE_PREFIX + "%")).fetchall()
    return [LabJob(queue[len(QUEUE_PREFIX):], message_id or "", status,
                   None if age is None else float(age), task)
            for queue, message_id, status, age, task in rows]


def jobs_by_host(jobs: Sequence[LabJob]) -> dict[str, LabJob]:
    """Each host's job: the one a worker runs (`doing`) before one that waits, else the oldest waiting."""
    found: dict[str, LabJob] = {}
    for job in jobs:
        held = found.get(job.host)
        if held is None or (job.doing and not held.doing):
            found[job.host] = job
    return found
