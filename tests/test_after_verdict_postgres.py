"""On PostgreSQL the daemon's after-verdict work — fix tests and its own bisections — is jobs of
the job queue, run by `triage worker`s like the reruns (dispatch/after_verdict_queue.py): one job
per host with work, in that host's queue under that host's lock, at most one waiting per host.
The daemon's process runs none of it, and a host whose after-verdict job waits or runs is busy
to the schedule, `triage status` and the web alike.

On a real PostgreSQL server the tests start; the first tests take jobs the way a worker does
(procrastinate's own register_worker and fetch_job), with no worker process and no sleep; the
last runs the real daemon and a real `triage worker` on the test lab: a confirmed merge is
bisected by the worker, stored and posted once."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.daemon_run import (
    CHANNEL_ID,
    SLACK_TOKEN,
    daemon_env,
    final_state,
    kind_of,
    log_events,
    start_daemon,
    stop_daemon,
    wait_for,
)
from tests.support.fake_slack import FakeSlack
from tests.support.lab import HOOK, lab_path, write_lab_rules
from tests.support.public_inbox import require_public_inbox, start_public_inbox
from tests.test_after_verdict_hosts import _confirmed
from tests.test_bisect_daemon import MERGE_SUBJECT, REPORT_ID, merge_repo
from tests.test_dispatch import planned, three_host_lab
from tests.test_lab_occupancy import fetch_as_a_worker, finish_as_a_worker, triage

pytest.importorskip("procrastinate", reason="procrastinate is not installed (pip install -e '.[test]')")

from triagebot import bisect_flow, flow  # noqa: E402
from triagebot.dispatch.jobqueue import (  # noqa: E402
    AFTER_VERDICT_TASK,
    JobQueueDispatcher,
    lock_for,
    queue_for,
)
from triagebot.lab_queue import lab_view, occupancy  # noqa: E402
from triagebot.store.postgres import PostgresStore  # noqa: E402


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
