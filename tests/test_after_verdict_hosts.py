"""The daemon's after-verdict jobs (fix tests, bisections) run on one thread per lab host with
work, all at once: a lab of many hosts is not held to one bisection at a time."""
from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import PROJECT
from triagebot.actions import carry_out as asked
from triagebot.bisect import flow as bisect_flow
from triagebot.daemon import after_verdict_jobs
from triagebot.fix_test import flow as fix_testing
from triagebot.lab.context import DaemonContext
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore

SETTINGS = load_settings(PROJECT / "rules")  # the embedded defaults: this machine, which cannot bisect


def _confirmed(store: SqliteStore, message_id: str, host: str | None) -> None:
    raw = (f"From: Ada <ada@example.org>\nSubject: [REGRESSION] fio randread 20% slower since 6.8\n"
           f"Message-ID: <{message_id}>\nDate: Mon, 1 Apr 2024 10:00:00 +0000\n\n"
           "fio randread dropped from 500 MB/s to 400 MB/s since v6.8, bisected to commit 0123456789ab.\n").encode()
    store.put_message(message_id, raw, "eml", None, "2024-04-01T10:00:00+00:00")
    store.put_record(message_id, parse_message(raw, Source("eml")), "test")
    store.start_triage(message_id, "#perf")
    for state in ("planned", "running", "confirmed"):
        store.set_triage(message_id, state, plan={"plan": True}, host=host)
    run = {"status": "done", "verdict": {"outcome": "confirmed"}}
    store.save_run(message_id, {"plan": True}, run | ({"host": host} if host else {}))



def _lab_of_three(path: Path) -> Path:
    database = path / "lab.db"
    with SqliteStore(database) as store:
        for number, host in enumerate(("lab-a", "lab-b", "lab-c", None)):
            _confirmed(store, f"r{number}@example.org", host)
        store.queue_fix_test("r0@example.org", "v1:p0@example.org", "p0@example.org")
        store.queue_fix_test("r1@example.org", "v1:p1@example.org", "p1@example.org")
        store.save_bisect("r2@example.org", {"kind": "bisect", "status": bisect_flow.QUEUED, "good": "a", "bad": "b",
                                             "steps": [], "reason": "merge"} | bisect_flow.BY_DAEMON)
        store.queue_fix_test("r3@example.org", "v1:p3@example.org", "p3@example.org")  # no rerun host
    return database


def test_the_hosts_with_work_are_those_of_the_queued_jobs(tmp_path: Path) -> None:
    database = _lab_of_three(tmp_path)
    with SqliteStore(database) as store:
        assert fix_testing.waiting_hosts(store) == {"lab-a": "r0@example.org", "lab-b": "r1@example.org",
                                                    "": "r3@example.org"}
        assert bisect_flow.waiting_hosts(store) == {"lab-c": "r2@example.org"}
        assert after_verdict_jobs.hosts_with_work(store, SETTINGS) == {"lab-a", "lab-b", "lab-c", ""}
        [done] = [row.fix_test_id for row in store.fix_tests("r0@example.org")]
        store.set_fix_test(done, "done", {"outcome": "fixed"})
        # a bisection a person started is theirs: the daemon takes up only its own
        store.save_bisect("r1@example.org", {"kind": "bisect", "status": "queued", "good": "a", "bad": "b",
                                             "steps": [], "reason": "asked"})
        assert after_verdict_jobs.hosts_with_work(store, SETTINGS) == {"lab-b", "lab-c", ""}


def test_each_host_gets_one_thread_and_they_run_together(tmp_path: Path) -> None:
    database = _lab_of_three(tmp_path)
    # every host's thread must be inside its run at once for any to finish: one thread at a time
    # would break the barrier (its timeout only ends a failing run)
    together = threading.Barrier(5, timeout=300)
    calls: Counter[str] = Counter()
    delivered: list[str] = []

    def run(store, lab, host):
        calls[host] += 1
        assert isinstance(store, SqliteStore) and lab is context
        together.wait()
        return 1

    @contextmanager
    def open_store():
        with SqliteStore(database) as store:
            yield store

    context = SimpleNamespace(deliver=lambda: delivered.append("x"), settings=SETTINGS)
    worker = after_verdict_jobs.AfterVerdictWorker(open_store, context, run=run)
    with SqliteStore(database) as store:
        worker.poke(store)
        assert worker.busy()
        worker.poke(store)  # every host's thread is still in its run: none is started twice
    together.wait()
    worker.join()
    assert not together.broken and not worker.busy()
    assert calls == {"lab-a": 1, "lab-b": 1, "lab-c": 1, "": 1}
    assert delivered == ["x"] * 4


def test_with_nothing_queued_no_thread_starts(tmp_path: Path) -> None:
    database = tmp_path / "empty.db"
    started: list[str] = []
    with SqliteStore(database) as store:
        worker = after_verdict_jobs.AfterVerdictWorker(
            lambda: SqliteStore(database), SimpleNamespace(deliver=lambda: None, settings=SETTINGS),
            run=lambda _store, _lab, host: started.append(host) or 0)
        worker.poke(store)
    assert not worker.busy() and started == []


def test_a_fix_test_or_bisection_asked_from_slack_runs_on_its_hosts_runner_not_in_the_pass(tmp_path: Path) -> None:
    """The daemon's pass sends the replies asked for; a test of a fix or a bisection (hours of a
    lab host) is its host's after-verdict work, so the pass polls and posts meanwhile."""
    database = tmp_path / "lab.db"
    with SqliteStore(database) as store:
        _confirmed(store, "fixed@example.org", "lab-a")
        _confirmed(store, "bisect@example.org", "lab-a")
        fix_ask = store.record_action("k1", "fixed@example.org", "test-fix", "U1", "asked")
        bisect_ask = store.record_action("k2", "bisect@example.org", "bisect", "U1", "asked")
        # a test of a fix runs on the confirmed rerun's host; no host here can bisect (no list_commits)
        assert asked.waiting_hosts(store, SETTINGS) == {"lab-a": "fixed@example.org", "": "bisect@example.org"}
        assert after_verdict_jobs.hosts_with_work(store, SETTINGS) == {"lab-a", ""}
        lab = DaemonContext(settings=SETTINGS, database=database, deliver=lambda: None)
        # the pass's step: the mail asks only, the lab's wait
        assert asked.carry_out(store, SETTINGS, database, 5, names=asked.MAIL_ASKS) == []
        assert [row.action for row in store.waiting_actions(*asked.LAB_ASKS)] == ["test-fix", "bisect"]
        # the runner of "" (work with no lab host) ends the bisection at once, as its error
        assert after_verdict_jobs.run_after_verdict_jobs(store, lab, "") == 1
        [result] = [row for row in store.actions_of("bisect@example.org") if row.action != "bisect"]
        assert result.action == "bisect:failed" and result.request_key == f"result:{bisect_ask}"
        assert "no host in hosts.toml can bisect" in result.detail
        # lab-a's runner takes the test of a fix (it fails here: the rerun stored has no plan to run)
        assert after_verdict_jobs.run_after_verdict_jobs(store, lab, "lab-a") == 1
        [result] = [row for row in store.actions_of("fixed@example.org") if row.action != "test-fix"]
        assert result.action == "test-fix:failed" and result.request_key == f"result:{fix_ask}"
        assert store.waiting_actions(*asked.LAB_ASKS) == []
        assert after_verdict_jobs.hosts_with_work(store, SETTINGS) == set()
