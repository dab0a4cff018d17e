"""On PostgreSQL the daemon's after-verdict work — fix tests and its own bisections — is jobs of
the job queue, run by `triage worker`s like the reruns (daemon/dispatch/after_verdict_queue.py): one job
per host with work, in that host's queue under that host's lock, at most one waiting per host.
The daemon's process runs none of it, and a host whose after-verdict job waits or runs is busy
to the schedule, `triage status` and the web alike.

On a real PostgreSQL server the tests start; the first tests take jobs the way a worker does
(procrastinate's own register_worker and fetch_job), with no worker process and no sleep; the
last runs the real daemon and a real `triage worker` on the test lab: a confirmed merge is
bisected by the worker, stopped by a SIGTERM and taken up again by another worker, stored and
posted once; a fix series posted in a confirmed thread is tested by the worker and posted once."""
from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.daemon_run import (
    CHANNEL_ID,
    final_state,
    kind_of,
    log_events,
    stop_daemon,
    wait_for,
)
from tests.support.lab import HOOK
from tests.support.public_inbox import require_public_inbox
from tests.support.world import lab_world
from tests.test_after_verdict_hosts import _confirmed
from tests.test_bisect_daemon import REPORT_ID, merge_lab
from tests.test_dispatch import planned, three_host_lab
from tests.test_lab_occupancy import fetch_as_a_worker, finish_as_a_worker, triage

pytest.importorskip("procrastinate", reason="procrastinate is not installed (pip install -e '.[test]')")

from triagebot.bisect import flow as bisect_flow  # noqa: E402
from triagebot.daemon import flow
from triagebot.daemon.dispatch.jobqueue import JobQueueDispatcher
from triagebot.daemon.loop import lab_snapshot  # noqa: E402
from triagebot.lab.job_table import AFTER_VERDICT_TASK, lock_for, queue_for
from triagebot.lab.queue import lab_view, occupancy  # noqa: E402
from triagebot.store.postgres import PostgresStore  # noqa: E402
from triagebot.web.views import Site, hosts_view  # noqa: E402


def job_rows(store: PostgresStore) -> list[tuple]:
    return [tuple(row) for row in store.connection.execute(
        "SELECT task_name, args->>'host', args->>'message_id', queue_name, lock, status FROM procrastinate_jobs"
        " ORDER BY id").fetchall()]


def queue_bisect(store: PostgresStore, message_id: str) -> None:
    store.save_bisect(message_id, {"kind": "bisect", "status": bisect_flow.QUEUED, "good": "a", "bad": "b",
                                   "steps": [], "reason": "merge"} | bisect_flow.BY_DAEMON)


def test_the_daemon_defers_one_job_per_host_with_work_and_runs_none_itself(tmp_path: Path, postgres_server) -> None:
    url = postgres_server.url(postgres_server.new_schema())
    lab = three_host_lab(tmp_path)
    hosts = lab.settings.need_hosts()
    with PostgresStore(url) as store:
        _confirmed(store, "bisect-me@lab", "lab-2")
        queue_bisect(store, "bisect-me@lab")
        _confirmed(store, "fix-me@lab", "lab-3")
        store.queue_fix_test("fix-me@lab", "v1:p@lab", "p@lab")
        _confirmed(store, "and-me@lab", "lab-3")  # a second report's work on lab-3: the same job runs it
        queue_bisect(store, "and-me@lab")
        for number in (1, 2):
            planned(store, f"r{number}@lab", f"2026-11-0{number}T10:00:00+00:00")
        dispatcher = JobQueueDispatcher(url)
        try:
            runner = dispatcher.after_verdict_runner(lab)
            assert not runner.busy()
            runner.poke(store)
            runner.poke(store)  # each host's job waits already: no second one
            assert job_rows(store) == [
                (AFTER_VERDICT_TASK, "lab-2", "bisect-me@lab", queue_for("lab-2"), lock_for("lab-2"), "todo"),
                (AFTER_VERDICT_TASK, "lab-3", "fix-me@lab", queue_for("lab-3"), lock_for("lab-3"), "todo")]
            assert runner.busy()
            # the daemon ran none of it: the work still waits, for a worker
            assert [row.status for row in store.fix_tests("fix-me@lab")] == ["queued"]
            assert [item["status"] for item in store.bisects("bisect-me@lab")] == [bisect_flow.QUEUED]

            # busy to the schedule: the two planned reports, whose most similar hosts are all three,
            # the newest gets lab-local, the other waits; neither is given a host whose after-verdict job waits
            view = lab_view(store, None, hosts, timedelta(hours=2), datetime.now(UTC))
            assert view.busy == {"lab-2": "bisect-me@lab", "lab-3": "fix-me@lab"}
            assert view.awaiting_worker == {"lab-2", "lab-3"}
            handed = flow.assign(store, lab, dispatcher)
            assert [(job.message_id, job.host) for job in handed] == [("r2@lab", "lab-local")]
            assert store.get_triage("r1@lab").state == "planned"
            assert dict(dispatcher.running()) == {"lab-local": "r2@lab", "lab-2": "bisect-me@lab",
                                                  "lab-3": "fix-me@lab"}

            # a worker takes lab-2's job: busy with it, no longer waiting for a worker, in every view
            app, job = fetch_as_a_worker(url, "lab-2")
            assert job.task_name == AFTER_VERDICT_TASK
            found = occupancy(store, tmp_path / "locks.db", hosts)
            assert found.busy["lab-2"] == "bisect-me@lab" and found.awaiting_worker == {"lab-local", "lab-3"}
            status = triage(tmp_path, "status", "--db", url, "--rules", str(tmp_path / "rules"), "--json")
            assert status.returncode == 0, status.stderr
            shown = {host["name"]: (host["busy"], host["running"], host["awaiting_worker"])
                     for host in json.loads(status.stdout)["hosts"]}
            assert shown == {"lab-local": (True, "r2@lab", True), "lab-2": (True, "bisect-me@lab", False),
                             "lab-3": (True, "fix-me@lab", True)}
            page = hosts_view(store, Site(open_store=lambda: contextlib.nullcontext(store), settings=lab.settings,
                                          database=tmp_path / "locks.db"))
            assert {host["name"]: (host["busy"], [item["key"] for item in host["running"]], host["awaiting_worker"])
                    for host in page["hosts"]} == {"lab-local": (True, ["r2@lab"], True),
                                                   "lab-2": (True, ["bisect-me@lab"], False),
                                                   "lab-3": (True, ["fix-me@lab"], True)}
            snapshot = lab_snapshot(flow.lab_now(store, lab, dispatcher))  # what /metrics shows
            assert snapshot["hosts"] == found.busy and snapshot["awaiting_worker"] == ["lab-3", "lab-local"]
            # its job ends: lab-2 is free again, and no rerun counts as finished for it
            finish_as_a_worker(app, job)
            assert dispatcher.finished() == []
            assert "lab-2" not in dispatcher.running()
            assert [(job.message_id, job.host) for job in flow.assign(store, lab, dispatcher)] == [
                ("r1@lab", "lab-2")]
        finally:
            dispatcher.close()


def test_work_that_needs_no_lab_host_ends_in_the_daemon_and_gets_no_job(tmp_path: Path, postgres_server) -> None:
    """A fix test of a report with no rerun host: no worker serves "", and it ends at once as its error."""
    url = postgres_server.url(postgres_server.new_schema())
    lab = three_host_lab(tmp_path)
    with PostgresStore(url) as store:
        _confirmed(store, "nohost@lab", None)
        store.queue_fix_test("nohost@lab", "v1:p@lab", "p@lab")
        dispatcher = JobQueueDispatcher(url)
        try:
            runner = dispatcher.after_verdict_runner(lab)
            runner.poke(store)
            assert job_rows(store) == [] and not runner.busy()
            [row] = store.fix_tests("nohost@lab")
            assert row.status == "error"
        finally:
            dispatcher.close()


def _bisect_reply(message: dict) -> bool:
    """The bisection's result in the thread (not its progress message, edited while it runs)."""
    kind = kind_of(message)
    return kind.startswith("bisect-") and not kind.startswith("bisect-progress-")


@pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("git")),
                    reason="the lab needs sysbench and git (apt-get install sysbench git)")
def test_a_worker_bisects_a_merge_confirmed_on_postgresql_and_it_is_posted_once(tmp_path: Path,
                                                                               postgres_server) -> None:
    require_public_inbox()
    url = postgres_server.url(postgres_server.new_schema())
    merge, branch, lab, raw = merge_lab(tmp_path, 6, 3)  # slow from the branch's 4th commit
    daemon_log, worker_log = tmp_path / "daemon.log", tmp_path / "worker.log"
    # the daemon's PATH has no lab on it: every rerun and the bisection must be the worker's
    with lab_world(tmp_path, [raw], lab=lab, user_agent="triagebot-test (bisect on postgresql)",
                   lab_on_daemon_path=False) as world:
        slack, state, env = world.slack, world.state, world.env

        def start_worker() -> subprocess.Popen:
            return world.start_worker(url, worker_log)

        daemon = world.start_daemon(url, daemon_log)
        worker = start_worker()
        try:
            wait_for(lambda: final_state(slack.messages(CHANNEL_ID)) == "confirmed", 600, "the verdict", daemon,
                     daemon_log)
            # SIGTERM to the worker once the bisection runs: it stops after its sample in progress, and
            # the bisection is queued again (a stop signal reaches the next sample; one takes seconds)
            wait_for(lambda: "bisect.started" in [item.get("event") for item in log_events(worker_log)], 300,
                     "the bisection to start", worker, worker_log)
            assert stop_daemon(worker) == 0
            with PostgresStore(url) as store:
                assert [item["status"] for item in store.bisects(REPORT_ID)] == [bisect_flow.QUEUED]
            assert not [message for message in slack.messages(CHANNEL_ID) if _bisect_reply(message)]
            worker = start_worker()  # the daemon defers the host's job anew; this worker takes it
            wait_for(lambda: [message for message in slack.messages(CHANNEL_ID) if _bisect_reply(message)], 1500,
                     "the bisection's reply", daemon,
                     worker_log)
            with PostgresStore(url) as store:  # the worker's job ended (deleted): nothing waits on the host
                wait_for(lambda: job_rows(store) == [], 120, "the after-verdict job to end", daemon, worker_log)
            assert stop_daemon(daemon) == 0
            assert stop_daemon(worker) == 0
        finally:
            for process in (daemon, worker):
                if process.poll() is None:
                    stop_daemon(process, signal.SIGKILL)
            subprocess.run([*HOOK, "stop", str(state)], check=False)
        messages = slack.messages(CHANNEL_ID)
    parent = next(message for message in messages if kind_of(message) == "parent")
    replies = [message for message in messages if _bisect_reply(message)]
    assert len(replies) == 1 and replies[0]["thread_ts"] == parent["ts"]
    # its progress is one message of the thread, edited in place, the interrupted attempt's included
    progress = [message for message in messages if kind_of(message).startswith("bisect-progress-")]
    assert len(progress) == 1 and progress[0]["thread_ts"] == parent["ts"]
    assert replies[0]["text"].startswith(f"Bisect: first bad commit {branch[3]} (")
    with PostgresStore(url) as store:
        [result] = store.bisects(REPORT_ID)
    assert result["status"] == "found" and result["queued_by"] == "daemon" and result["first_bad"] == branch[3]
    # who ran what: the worker both the rerun and the bisection; the daemon deferred the job and posted
    daemon_events = {item.get("event") for item in log_events(daemon_log)}
    worker_events = [item.get("event") for item in log_events(worker_log)]
    assert {"bisect.queued", "after.deferred", "run.dispatched"} <= daemon_events, daemon_events
    assert not daemon_events & {"bisect.started", "bisect.ended", "run.started"}, daemon_events
    assert worker_events.count("bisect.started") == 2 and worker_events.count("bisect.ended") == 1
    assert worker_events.count("worker.stopped") == 2
    show = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", "--db", url, REPORT_ID],
                          capture_output=True, text=True, cwd=PROJECT, env=env)
    assert show.returncode == 0, show.stderr
    assert f"  bisect 1 on lab-local: first bad commit {branch[3]}" in show.stdout


def test_an_after_verdict_job_whose_worker_stopped_beating_is_retried(postgres_server) -> None:
    import asyncio

    import psycopg

    from triagebot.daemon.dispatch.jobqueue import ensure_job_schema, job_app
    from triagebot.daemon.dispatch.worker import WorkerOptions, retry_stalled

    url = postgres_server.url(postgres_server.new_schema())
    with PostgresStore(url) as store:
        ensure_job_schema(store)
    app = job_app(url)

    async def scenario() -> tuple[int, list[int]]:
        async with app.open_async():
            job_id = await app.configure_task(AFTER_VERDICT_TASK, queue=queue_for("lab-2"),
                                              lock=lock_for("lab-2")).defer_async(host="lab-2", message_id="r@x")
            dead = await app.job_manager.register_worker()
            fetched = await app.job_manager.fetch_job(queues=None, worker_id=dead)
            assert fetched is not None and fetched.id == job_id
            with psycopg.connect(url, autocommit=True) as connection:  # its last beat, long ago
                connection.execute("UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 hour'")
            return job_id, await retry_stalled(app, WorkerOptions(stalled_after_s=30))

    job_id, retried = asyncio.run(scenario())
    assert retried == [job_id]
    with PostgresStore(url) as store:
        assert [row[5] for row in job_rows(store)] == ["todo"]


@pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("git") and shutil.which("b4")),
                    reason="the lab needs sysbench, git and b4 (apt-get install sysbench git; pip install b4)")
def test_a_worker_tests_a_fix_posted_in_a_thread_confirmed_on_postgresql(tmp_path: Path, postgres_server) -> None:
    from tests.test_fix_daemon import fix_replies, the_lab

    require_public_inbox()
    url = postgres_server.url(postgres_server.new_schema())
    _repo, _shas, report, series, rules, state = the_lab(tmp_path, "1.0")
    daemon_log, worker_log = tmp_path / "daemon.log", tmp_path / "worker.log"
    with lab_world(tmp_path, [report], lab=(rules, state), user_agent="triagebot-test (fix tests on postgresql)",
                   lab_on_daemon_path=False) as world:  # no lab on the daemon's PATH
        server, slack = world.server, world.slack
        daemon = world.start_daemon(url, daemon_log)
        worker = world.start_worker(url, worker_log)
        try:
            wait_for(lambda: final_state(slack.messages(CHANNEL_ID)) == "confirmed", 600, "the verdict", daemon,
                     daemon_log)
            server.bulk_add(series)
            wait_for(lambda: fix_replies(slack), 900, "the fix test's reply", daemon, worker_log)
            assert stop_daemon(daemon) == 0
            assert stop_daemon(worker) == 0
        finally:
            for process in (daemon, worker):
                if process.poll() is None:
                    stop_daemon(process, signal.SIGKILL)
            subprocess.run([*HOOK, "stop", str(state)], check=False)
        replies = fix_replies(slack)
    with PostgresStore(url) as store:
        [stored] = store.fix_tests(REPORT_ID)
    assert stored.status == "done" and stored.series_key.startswith("v2:")
    assert len(replies) == 1 and replies[0]["text"].startswith("Fix test (v2): ")
    daemon_events = {item.get("event") for item in log_events(daemon_log)}
    worker_events = [item.get("event") for item in log_events(worker_log)]
    assert {"fix.queued", "after.deferred"} <= daemon_events and "fix.ended" not in daemon_events
    assert worker_events.count("fix.ended") == 1


def test_a_rerun_waiting_behind_its_hosts_after_verdict_job_is_not_taken_for_cut_short(tmp_path: Path,
                                                                                        postgres_server) -> None:
    """A host shows one report (the job a worker holds), but a rerun waiting behind it on the same
    host still has its job: the daemon must not start it over as if nobody ran it."""
    from triagebot.daemon.dispatch.protocol import RunJob

    url = postgres_server.url(postgres_server.new_schema())
    lab = three_host_lab(tmp_path)
    with PostgresStore(url) as store:
        _confirmed(store, "bisect-me@lab", "lab-2")
        queue_bisect(store, "bisect-me@lab")
        planned(store, "late@lab", "2026-11-01T10:00:00+00:00")
        dispatcher = JobQueueDispatcher(url)
        try:
            dispatcher.after_verdict_runner(lab).poke(store)
            app, job = fetch_as_a_worker(url, "lab-2")  # a worker runs lab-2's after-verdict job
            assert job.task_name == AFTER_VERDICT_TASK
            with store.transaction():  # a rerun handed to lab-2 all the same: it waits behind the lock
                store.set_triage("late@lab", "running", host="lab-2")
                dispatcher.enqueue(store, RunJob("late@lab", "lab-2"))
            assert dispatcher.running()["lab-2"] == "bisect-me@lab"  # the job a worker holds is the host's
            assert "late@lab" in dispatcher.jobs_now().reports
            assert flow.take_up_cut_runs(store, lab, dispatcher) == []
            assert store.get_triage("late@lab").state == "running"
            finish_as_a_worker(app, job)
        finally:
            dispatcher.close()
