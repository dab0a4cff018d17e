"""Which lab hosts are busy, and with which report, answered in one place (lab_queue.occupancy)
for `triage status`, `triage plan`, the web's /hosts and the daemon's /metrics: on PostgreSQL from
procrastinate's job rows (a job a worker holds, wherever that worker runs; one waiting for a
worker), on SQLite from the host locks beside the database. Also: `triage status` shows each
watched git tree's last fetch, and the daemon closes its job queue's connection when it stops.

The PostgreSQL tests run on a real server the tests start; a job is made `doing` the way a worker
does it (procrastinate's own register_worker and fetch_job), with no worker process and no sleep.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from tests.conftest import PROJECT
from tests.test_dispatch import HOSTS, planned, three_host_lab
from triagebot.daemon import flow
from triagebot.daemon import loop as daemon
from triagebot.daemon.health import DaemonMetrics
from triagebot.lab.queue import BUSY_ELSEWHERE, lab_view, occupancy
from triagebot.reproduce.host_lock import host_lock
from triagebot.store.sqlite import SqliteStore
from triagebot.web.views import Site, hosts_view


def triage(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_DATA_HOME=str(home / "data"), PYTHONPATH=str(PROJECT))
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, env=env, cwd=PROJECT)


def test_on_sqlite_a_held_host_lock_makes_its_host_busy(tmp_path: Path) -> None:
    lab = three_host_lab(tmp_path)
    hosts = lab.settings.need_hosts()
    with SqliteStore(lab.database) as store:
        planned(store, "r1@lab", "2026-11-01T10:00:00+00:00")
        assert occupancy(store, lab.database, hosts).busy == {}
        with host_lock(lab.database, "lab-2"):  # a `triage rerun` by hand, in another process as far as we know
            found = occupancy(store, lab.database, hosts)
            assert found.busy == {"lab-2": BUSY_ELSEWHERE} and found.source == "host locks"
            assert found.awaiting_worker == frozenset()
            # the daemon's schedule sees it too: the report goes to a free host
            view = lab_view(store, lab.database, hosts, timedelta(hours=2), datetime.now(UTC))
            assert [item.host for item in view.schedule.assignments] == ["lab-local"]
        assert occupancy(store, lab.database, hosts).busy == {}


def test_status_shows_each_watched_tree_s_last_fetch(tmp_path: Path) -> None:
    from triagebot.lifecycle import watch
    from triagebot.rules.trees import WatchedTree

    lab = three_host_lab(tmp_path)
    rules = tmp_path / "rules"
    served = tmp_path / "served"
    subprocess.run(["git", "init", "-q", "-b", "master", str(served)], check=True, timeout=60)
    subprocess.run(["git", "-C", str(served), "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-q",
                    "--allow-empty", "-m", "init: the first commit"], check=True, timeout=60)
    (rules / "trees.toml").write_text(f'[[tree]]\nname = "mainline"\nurl = "file://{served}"\nbranch = "master"\n\n'
                                      f'[[tree]]\nname = "gone"\nurl = "file://{tmp_path}/nowhere"\n'
                                      'branch = "master"\nevery_minutes = 30\n')
    with SqliteStore(lab.database) as store:
        unfetched = json.loads(triage(tmp_path, "status", "--db", str(lab.database), "--rules", str(rules),
                                      "--json").stdout)["trees"]
        assert [(tree["tree"], tree["fetched_at"]) for tree in unfetched] == [("mainline", None), ("gone", None)]
        trees = (WatchedTree("mainline", f"file://{served}", "master"),
                 WatchedTree("gone", f"file://{tmp_path}/nowhere", "master"))
        now = datetime(2026, 12, 5, 4, 0, tzinfo=UTC)
        passes = watch.watch_trees(store, trees, tmp_path / "state", now)  # real git fetches: one fails
        assert passes[0].error is None and passes[1].error is not None
    result = triage(tmp_path, "status", "--db", str(lab.database), "--rules", str(rules))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    shown = lines[lines.index("trees:") + 1:lines.index("trees:") + 3]
    assert shown[0] == "  mainline (master, every 60 min): last fetch 2026-12-05T04:00:00+00:00: ok"
    assert shown[1].startswith("  gone (master, every 30 min): last fetch 2026-12-05T04:00:00+00:00: FAILED: tree gone")
    assert shown[1].endswith(passes[1].error)


# --- PostgreSQL: the job queue ------------------------------------------------------------------

procrastinate_missing = not bool(__import__("importlib").util.find_spec("procrastinate"))


@pytest.fixture
def jobs_lab(tmp_path: Path, postgres_server):
    """Four planned reports on PostgreSQL, three handed out by the daemon's step (a job each, todo)."""
    if procrastinate_missing:
        pytest.skip("procrastinate is not installed (pip install -e '.[test]')")
    from triagebot.daemon.dispatch.jobqueue import JobQueueDispatcher
    from triagebot.store.postgres import PostgresStore

    url = postgres_server.url(postgres_server.new_schema())
    lab = three_host_lab(tmp_path)
    with PostgresStore(url) as store:
        for number in range(1, 5):
            planned(store, f"r{number}@lab", f"2026-11-0{number}T10:00:00+00:00")
        dispatcher = JobQueueDispatcher(url)
        try:
            handed = flow.assign(store, lab, dispatcher)
            assert {(job.host, job.message_id) for job in handed} == {
                ("lab-local", "r4@lab"), ("lab-2", "r3@lab"), ("lab-3", "r2@lab")}
            yield url, lab, store, dispatcher
        finally:
            dispatcher.close()


def fetch_as_a_worker(url: str, host: str):
    """What a `triage worker` does to take a job: register, fetch from the host's queue (-> doing)."""
    from triagebot.daemon.dispatch.jobqueue import job_app
    from triagebot.lab.job_table import queue_for

    app = job_app(url)

    async def fetch():
        async with app.open_async():
            worker = await app.job_manager.register_worker()
            job = await app.job_manager.fetch_job(queues=[queue_for(host)], worker_id=worker)
            assert job is not None
            return job

    return app, asyncio.run(fetch())


def finish_as_a_worker(app, job) -> None:
    from procrastinate.jobs import Status

    async def finish():
        async with app.open_async():
            await app.job_manager.finish_job(job, status=Status.SUCCEEDED, delete_job=True)

    asyncio.run(finish())


def test_on_postgresql_a_job_a_worker_holds_makes_its_host_busy_in_every_view(tmp_path: Path, jobs_lab) -> None:
    url, lab, store, dispatcher = jobs_lab
    hosts = lab.settings.need_hosts()
    locks = tmp_path / "data" / "locks.db"  # no lock file is held on this machine: only the job rows say busy
    before = occupancy(store, locks, hosts)
    assert before.busy == {"lab-local": "r4@lab", "lab-2": "r3@lab", "lab-3": "r2@lab"}
    assert before.awaiting_worker == frozenset(HOSTS) and before.source == "job queue"

    app, job = fetch_as_a_worker(url, "lab-2")  # a worker on some other machine takes lab-2's job
    found = occupancy(store, locks, hosts)
    assert found.busy == before.busy and found.awaiting_worker == {"lab-local", "lab-3"}
    assert set(found.beat_ago) == {"lab-2"} and found.beat_ago["lab-2"] >= 0
    # the daemon's own reading (its schedule and /metrics) is the same rows read the same way
    assert dict(dispatcher.running()) == found.busy
    snapshot = daemon.lab_snapshot(flow.lab_now(store, lab, dispatcher))
    assert snapshot["hosts"] == found.busy and snapshot["awaiting_worker"] == ["lab-3", "lab-local"]
    metrics = DaemonMetrics()
    metrics.set_lab(snapshot)
    exported = generate_latest(metrics.registry).decode()
    assert {host: value for host, value in re.findall(r'^triage_host_awaiting_worker\{host="([^"]+)"\} (\S+)$',
                                                       exported, re.MULTILINE)} == {
        "lab-local": "1.0", "lab-2": "0.0", "lab-3": "1.0"}

    # `triage status`, a process of its own on the URL
    status = triage(tmp_path, "status", "--db", url, "--rules", str(tmp_path / "rules"), "--json")
    assert status.returncode == 0, status.stderr
    shown = {host["name"]: host for host in json.loads(status.stdout)["hosts"]}
    assert {name: (host["busy"], host["running"], host["awaiting_worker"]) for name, host in shown.items()} == {
        "lab-local": (True, "r4@lab", True), "lab-2": (True, "r3@lab", False), "lab-3": (True, "r2@lab", True)}
    assert shown["lab-2"]["worker_beat_seconds_ago"] >= 0
    text = triage(tmp_path, "status", "--db", url, "--rules", str(tmp_path / "rules")).stdout
    assert "hosts (busy: a job a worker holds or that waits for one, from the job queue;" in text
    line = next(line for line in text.splitlines() if line.startswith("  lab-2 "))
    assert " busy  running <r3@lab> (its worker last beat " in line
    line = next(line for line in text.splitlines() if line.startswith("  lab-3 "))
    assert line.endswith("running <r2@lab> (its job waits for a `triage worker` serving this host)")

    # `triage plan` of the report left waiting: every host is busy, so it is queued, not "free"
    plan = triage(tmp_path, "plan", "r1@lab", "--db", url, "--rules", str(tmp_path / "rules"), "--no-fetch")
    assert "triage plan: for host lab-local, the daemon's: queued behind 1 on lab-local" in plan.stderr, plan.stderr

    # the web's /hosts page
    page = hosts_view(store, Site(open_store=lambda: contextlib.nullcontext(store), settings=lab.settings,
                                  database=locks))
    assert {host["name"]: (host["busy"], [item["key"] for item in host["running"]], host["awaiting_worker"])
            for host in page["hosts"]} == {"lab-local": (True, ["r4@lab"], True), "lab-2": (True, ["r3@lab"], False),
                                           "lab-3": (True, ["r2@lab"], True)}

    # the worker's job ends (a successful job is deleted): its host is idle again, in every view
    finish_as_a_worker(app, job)
    after = occupancy(store, locks, hosts)
    assert after.busy == {"lab-local": "r4@lab", "lab-3": "r2@lab"}
    assert dict(dispatcher.running()) == after.busy
    page = hosts_view(store, Site(open_store=lambda: contextlib.nullcontext(store), settings=lab.settings,
                                  database=locks))
    assert [host["busy"] for host in page["hosts"]] == [True, False, True]


def test_a_store_whose_job_queue_was_never_applied_has_no_busy_host(tmp_path: Path, postgres_server) -> None:
    from triagebot.store.postgres import PostgresStore

    url = postgres_server.url(postgres_server.new_schema())
    lab = three_host_lab(tmp_path)
    with PostgresStore(url) as store:  # e.g. just copied from SQLite with `triage db copy`
        planned(store, "r1@lab", "2026-11-01T10:00:00+00:00")
        found = occupancy(store, tmp_path / "data" / "locks.db", lab.settings.need_hosts())
    assert found.busy == {} and found.source == "job queue"


def test_the_daemon_closes_its_job_queue_connection_when_it_stops(tmp_path: Path, postgres_server) -> None:
    if procrastinate_missing:
        pytest.skip("procrastinate is not installed (pip install -e '.[test]')")
    from triagebot.daemon.dispatch.jobqueue import JobQueueDispatcher
    from triagebot.store.postgres import PostgresStore

    url = postgres_server.url(postgres_server.new_schema())
    lab = three_host_lab(tmp_path)
    made: list[JobQueueDispatcher] = []

    def make_dispatcher() -> JobQueueDispatcher:
        made.append(JobQueueDispatcher(url))
        return made[-1]

    options = daemon.DaemonOptions(once=True, health_port=None)
    found = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT))
    assert daemon.serve(lab.settings, tmp_path / "data" / "t.db", lambda: PostgresStore(url), options,
                        make_dispatcher) == 0
    assert len(made) == 1 and made[0]._store.connection.closed
    # the loop's handlers are put back: a pool forked later by this process must die on SIGTERM
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == found
