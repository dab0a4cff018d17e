"""The lab's job queue on PostgreSQL (daemon/dispatch/jobqueue.py, daemon/dispatch/worker.py, `triage worker`),
on a real server the tests start: a job commits or rolls back with the state change that makes
it, each host's jobs share its queue and lock, a stalled job is retried and a live one is not."""
from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.lab import write_lab_rules
from tests.test_dispatch import planned, three_host_lab

procrastinate = pytest.importorskip("procrastinate", reason="procrastinate is not installed (pip install -e '.[test]')")

from triagebot.daemon import flow  # noqa: E402
from triagebot.daemon.dispatch.jobqueue import JobQueueDispatcher, ensure_job_schema, job_app  # noqa: E402
from triagebot.daemon.dispatch.protocol import RunJob  # noqa: E402
from triagebot.daemon.dispatch.worker import WorkerOptions, retry_stalled  # noqa: E402
from triagebot.lab.job_table import TASK_NAME, lock_for, queue_for  # noqa: E402
from triagebot.store.postgres import PostgresStore  # noqa: E402


def jobs(url: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        return [tuple(row) for row in connection.execute(
            "SELECT args->>'message_id', args->>'host', queue_name, lock, status, attempts FROM procrastinate_jobs"
            " ORDER BY id").fetchall()]


def test_a_job_commits_with_its_state_change_and_not_without_it(tmp_path: Path, postgres_server) -> None:
    url = postgres_server.url(postgres_server.new_schema())
    lab = three_host_lab(tmp_path)
    with PostgresStore(url) as store:
        for number in range(1, 5):
            planned(store, f"r{number}@lab", f"2026-11-0{number}T10:00:00+00:00")
        dispatcher = JobQueueDispatcher(url)
        try:
            # a transaction that fails after the job was deferred leaves neither the state nor the job
            row = store.get_triage("r1@lab")
            with pytest.raises(RuntimeError, match="rolled back"):
                with store.transaction():
                    store.set_triage("r1@lab", "running", host="lab-2")
                    dispatcher.enqueue(store, RunJob("r1@lab", "lab-2"))
                    raise RuntimeError("rolled back")
            assert store.get_triage("r1@lab").state == row.state == "planned" and jobs(url) == []
            # the schedule's three: each a job in its host's queue, under its host's lock, with its state
            handed = flow.assign(store, lab, dispatcher)
            assert [(job.message_id, job.host) for job in handed] == [
                ("r4@lab", "lab-local"), ("r3@lab", "lab-2"), ("r2@lab", "lab-3")]
            assert jobs(url) == [(job.message_id, job.host, queue_for(job.host), lock_for(job.host), "todo", 0)
                                 for job in handed]
            assert {job.message_id: store.get_triage(job.message_id).state for job in handed} == dict.fromkeys(
                ("r4@lab", "r3@lab", "r2@lab"), "running")
            assert dispatcher.running() == {"lab-local": "r4@lab", "lab-2": "r3@lab", "lab-3": "r2@lab"}
            # busy hosts are given nothing more; a running report with its job is not "cut short"
            assert flow.assign(store, lab, dispatcher) == [] and len(jobs(url)) == 3
            # the report's one waiting job: a second is refused (its queueing lock)
            with pytest.raises(procrastinate.exceptions.AlreadyEnqueued):
                with store.transaction():
                    dispatcher.enqueue(store, RunJob("r4@lab", "lab-local"))
        finally:
            dispatcher.close()


def test_a_running_report_whose_job_is_gone_starts_over(tmp_path: Path, postgres_server) -> None:
    url = postgres_server.url(postgres_server.new_schema())
    lab = three_host_lab(tmp_path)
    with PostgresStore(url) as store:
        planned(store, "cut@lab", "2026-11-01T10:00:00+00:00")
        store.set_triage("cut@lab", "running")  # e.g. moved from a SQLite store mid-run: no job carries it
        dispatcher = JobQueueDispatcher(url)
        try:
            assert flow.take_up_cut_runs(store, lab, dispatcher) == ["cut@lab"]
            assert store.get_triage("cut@lab").state == "planned"
        finally:
            dispatcher.close()


def test_the_schema_is_applied_once_and_db_migrate_says_so(postgres_server) -> None:
    url = postgres_server.url(postgres_server.new_schema())
    migrate = [sys.executable, "-m", "triagebot.cli", "db", "migrate", "--db", url]
    first = subprocess.run(migrate, capture_output=True, text=True, cwd=PROJECT, timeout=120)
    assert first.returncode == 0, first.stderr
    queue, schema = first.stdout.splitlines()
    assert queue.endswith(": job queue (procrastinate) created") and schema.endswith(" (postgresql)"), first.stdout
    again = subprocess.run(migrate, capture_output=True, text=True, cwd=PROJECT, timeout=120)
    assert again.stdout.splitlines()[0].endswith(": job queue (procrastinate) present"), again.stdout
    with PostgresStore(url) as store:
        assert ensure_job_schema(store) is False


def test_a_job_whose_worker_stopped_beating_is_retried_and_a_live_ones_is_not(postgres_server) -> None:
    import psycopg

    url = postgres_server.url(postgres_server.new_schema())
    with PostgresStore(url) as store:
        ensure_job_schema(store)
    app = job_app(url)
    options = WorkerOptions(stalled_after_s=30)

    async def scenario() -> tuple[list[int], list[int], list[int]]:
        async with app.open_async():
            ids = []
            for host in ("lab-1", "lab-2"):
                job = await app.configure_task(TASK_NAME, queue=queue_for(host), lock=lock_for(host)).defer_async(
                    message_id=f"r@{host}", host=host)
                ids.append(job)
            live = await app.job_manager.register_worker()
            dead = await app.job_manager.register_worker()
            for job_id, worker in zip(ids, (live, dead), strict=True):
                fetched = await app.job_manager.fetch_job(queues=None, worker_id=worker)
                assert fetched is not None and fetched.id == job_id
            first = await retry_stalled(app, options)  # both beat just now: nothing stalled
            with psycopg.connect(url, autocommit=True) as connection:  # the dead one's last beat, long ago
                connection.execute("UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 hour'"
                                   " WHERE id = %s", (dead,))
            second = await retry_stalled(app, options)
            third = await retry_stalled(app, options)  # retried once: todo now, not stalled
            return ids, first + third, second

    ids, nothing, retried = asyncio.run(scenario())
    assert nothing == [] and retried == [ids[1]]
    assert [(row[0], row[4], row[5]) for row in jobs(url)] == [("r@lab-1", "doing", 0), ("r@lab-2", "todo", 1)]


@pytest.mark.parametrize("args, message", [
    (["--db", "{tmp}/triage.db"], "is a SQLite store; workers need a PostgreSQL one"),
    (["--db", "{url}", "--host", "nowhere"], "--host 'nowhere': no such host in"),
    # a name with a terminal escape is shown escaped, as `triage plan --host` shows it
    (["--db", "{url}", "--host", "no\x1b[31mwhere"], "--host 'no\\x1b[31mwhere': no such host in"),
])
def test_a_worker_refuses_what_it_cannot_serve_in_one_line(tmp_path: Path, postgres_server, args, message) -> None:
    rules, _ = write_lab_rules(tmp_path, PROJECT)
    url = postgres_server.url(postgres_server.new_schema())
    argv = [part.format(tmp=tmp_path, url=url) for part in args]
    result = subprocess.run([sys.executable, "-m", "triagebot.cli", "worker", "--rules", str(rules), *argv],
                            capture_output=True, text=True, cwd=PROJECT, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("triage worker: ") and result.stderr.count("triage worker:") == 1
    assert "\x1b" not in result.stderr
    assert not (tmp_path / "triage.db").exists()


def test_a_run_whose_report_was_decided_meanwhile_writes_no_second_verdict(tmp_path: Path) -> None:
    """A job retried beside a run that was only slow: the slow run, ending second, decides nothing."""
    import dataclasses
    import shutil

    from triagebot.store.sqlite import SqliteStore

    if not shutil.which("sysbench"):
        pytest.skip("the lab's benchmark needs sysbench (apt-get install sysbench)")
    decided_elsewhere = []

    def at_each_sample() -> None:
        if not decided_elsewhere:  # at the first sample: the other run's verdict lands
            with SqliteStore(lab.database) as other:
                with other.transaction():
                    other.set_triage("slow@lab", "not-reproduced")
                    other.enqueue("slow@lab", "verdict", "#perf-triage", {"text": "the other run's verdict"})
            decided_elsewhere.append(True)

    lab = dataclasses.replace(three_host_lab(tmp_path), heartbeat=at_each_sample)
    with SqliteStore(lab.database) as store:
        planned(store, "slow@lab", "2026-11-01T10:00:00+00:00")
        store.set_triage("slow@lab", "running", host="lab-local")
        assert flow.run_job(store, lab, RunJob("slow@lab", "lab-local")) is None
        assert decided_elsewhere and store.get_triage("slow@lab").state == "not-reproduced"
        assert store.latest_run("slow@lab") is None  # no run, no verdict stored by the slow one
        assert [(row.kind, row.payload["text"]) for row in store.outbox(message_id="slow@lab")
                if row.kind in ("verdict", "plot", "update-final")] == [("verdict", "the other run's verdict")]
