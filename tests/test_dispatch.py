"""The daemon's dispatch: the schedule's jobs handed to a dispatcher with their state change, run
on threads of their own with stores of their own, the waiting reports' parents told where they
queue, and the lab shown in /metrics.

The runs here are stand-ins that meet at a barrier: it opens only when every host's job runs at
the same moment, an ordering fact (a one-at-a-time dispatcher would leave it shut and the
barrier's own timeout would fail the test), not a measure of time.
"""
from __future__ import annotations

import dataclasses
import json
import threading
from datetime import UTC, datetime
from pathlib import Path

from prometheus_client import generate_latest

from tests.conftest import FIXTURES, PROJECT
from tests.support.lab import write_lab_rules
from triagebot.daemon import flow
from triagebot.daemon.dispatch.inprocess import InlineDispatcher, ThreadDispatcher
from triagebot.daemon.dispatch.protocol import RunJob
from triagebot.daemon.health import DaemonMetrics
from triagebot.notify import render
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_from_json, report_to_json
from triagebot.reproduce.plan import Plan, plan_command
from triagebot.rules.routing import parse_routing
from triagebot.rules.settings import load_settings
from triagebot.rules.templates import load_templates
from triagebot.store.sqlite import SqliteStore

LAB_REPORT = FIXTURES / "lab" / "sysbench-cpu-regression.eml"
HOSTS = ("lab-local", "lab-2", "lab-3")


def three_host_lab(tmp_path: Path) -> flow.DaemonContext:
    rules, _ = write_lab_rules(tmp_path, PROJECT)
    text = (rules / "hosts.toml").read_text()
    block = text[text.index("[[host]]"):]
    for name in HOSTS[1:]:  # the same machine again, under other names: equally similar hosts
        text += block.replace('name = "lab-local"', f'name = "{name}"', 1)
    (rules / "hosts.toml").write_text(text)
    settings = dataclasses.replace(load_settings(rules),
                                   routing=parse_routing('default_channel = "#perf-triage"\n', "test"))
    return flow.DaemonContext(settings=settings, database=tmp_path / "t.db", deliver=lambda: None, budget=6)


def planned(store: SqliteStore, message_id: str, date: str, machine: dict | None = None) -> None:
    record = report_to_json(parse_message(LAB_REPORT.read_bytes(), Source("eml"))) | {"message_id": message_id,
                                                                                     "date": date}
    if machine is not None:
        record["test_machine"] = machine
    plan = plan_command("sysbench cpu --threads=2 --time=1 run", load_templates(PROJECT / "rules"))
    assert isinstance(plan, Plan)
    store.put_message(message_id, LAB_REPORT.read_bytes(), "test", None, "2026-12-01T00:00:00+00:00")
    store.put_record(message_id, report_from_json(record), "test")
    store.start_triage(message_id, "#perf-triage")
    store.set_triage(message_id, "planned", plan=plan.to_json(), host="lab-local")


def test_every_free_host_runs_at_once_and_the_rest_are_told_where_they_wait(tmp_path: Path) -> None:
    lab = three_host_lab(tmp_path)
    together = threading.Barrier(len(HOSTS), timeout=120)
    release = threading.Event()
    ran: list[tuple[str, str, int]] = []

    def run(store, job: RunJob) -> str:
        together.wait()  # opens only with a job on every host at once
        assert release.wait(120)  # held running until the test has looked at the queues
        with store.transaction():  # each thread writes through its own connection
            store.set_triage(job.message_id, "error", note=f"ran on {job.host}")
        ran.append((job.message_id, job.host, threading.get_ident()))
        return "error"

    with SqliteStore(lab.database) as store:
        for number in range(1, 6):  # r5 is the newest
            planned(store, f"r{number}@lab", f"2026-11-0{number}T10:00:00+00:00")
        dispatcher = ThreadDispatcher(lambda: SqliteStore(lab.database), run)
        jobs = flow.assign(store, lab, dispatcher)
        assert [(job.message_id, job.host) for job in jobs] == [("r5@lab", "lab-local"), ("r4@lab", "lab-2"),
                                                              ("r3@lab", "lab-3")]
        # the waiting ones: each parent says where it queues (the running report counts)
        for message_id, place in (("r2@lab", "queued behind 1 on lab-local"), ("r1@lab", "queued behind 1 on lab-2")):
            [update] = [row for row in store.outbox(message_id=message_id) if row.kind.startswith("update-queued-")]
            assert update.payload["text"].endswith(place) and update.payload["text"].startswith("[planned] ")
        assert flow.announce_queue(store, lab, flow.lab_now(store, lab, dispatcher)) == 0  # said once
        release.set()
        while dispatcher.running():
            dispatcher.wait(1.0)
        assert sorted(item.job.message_id for item in dispatcher.finished()) == ["r3@lab", "r4@lab", "r5@lab"]
        assert len({thread for _, _, thread in ran}) == 3
        assert {store.get_triage(f"r{number}@lab").note for number in (3, 4, 5)} == {
            "ran on lab-local", "ran on lab-2", "ran on lab-3"}
        # the freed hosts take the two left; nobody queues now
        together = threading.Barrier(2, timeout=120)
        assert sorted(job.message_id for job in flow.assign(store, lab, dispatcher)) == ["r1@lab", "r2@lab"]
        dispatcher.join()
        assert store.triage_counts() == {"error": 5}


def test_a_run_nobody_runs_any_more_starts_over(tmp_path: Path) -> None:
    lab = three_host_lab(tmp_path)
    with SqliteStore(lab.database) as store:
        planned(store, "cut@lab", "2026-11-01T10:00:00+00:00")
        store.set_triage("cut@lab", "running")  # a daemon killed mid-run left it so
        dispatcher = InlineDispatcher(lambda: SqliteStore(lab.database), lambda own, job: None)
        assert flow.take_up_cut_runs(store, lab, dispatcher) == ["cut@lab"]
        row = store.get_triage("cut@lab")
        assert row.state == "planned" and row.note == "its run was cut short: it starts over"


def test_a_job_whose_report_moved_on_is_not_run(tmp_path: Path) -> None:
    lab = three_host_lab(tmp_path)
    with SqliteStore(lab.database) as store:
        planned(store, "moved@lab", "2026-11-01T10:00:00+00:00")
        # still planned, or running on another host: not this job's to run
        assert flow.run_job(store, lab, RunJob("moved@lab", "lab-2")) is None
        store.set_triage("moved@lab", "running", host="lab-3")
        assert flow.run_job(store, lab, RunJob("moved@lab", "lab-2")) is None
        assert store.get_triage("moved@lab").state == "running"


def test_metrics_show_each_host_its_report_and_the_queues(tmp_path: Path) -> None:
    metrics = DaemonMetrics()
    taken_on = datetime.now(UTC).timestamp() - 600
    metrics.set_lab({"hosts": {"lab-1": "r5@lab", "lab-2": None},
                     "queues": {"lab-1": [("r2@lab", taken_on), ("r1@lab", taken_on - 60)], "lab-2": []}})
    text = generate_latest(metrics.registry).decode()
    assert 'triage_host_busy{host="lab-1"} 1.0' in text and 'triage_host_busy{host="lab-2"} 0.0' in text
    assert 'triage_host_running{host="lab-1",message_id="r5@lab"} 1.0' in text
    assert 'triage_host_queue_length{host="lab-1"} 2.0' in text and 'triage_host_queue_length{host="lab-2"} 0.0' in text
    waits = {line.split("}")[0]: float(line.split()[-1]) for line in text.splitlines()
             if line.startswith("triage_report_waiting_seconds{")}
    assert set(waits) == {'triage_report_waiting_seconds{host="lab-1",message_id="r2@lab",place="1"',
                          'triage_report_waiting_seconds{host="lab-1",message_id="r1@lab",place="2"'}
    assert all(wait >= 600 for wait in waits.values())  # at least as long as since they were taken on
    longest = next(line for line in text.splitlines()
                   if line.startswith('triage_host_queue_longest_wait_seconds{host="lab-1"}'))
    assert float(longest.split()[-1]) >= 660


def test_the_parent_of_a_waiting_report_says_where_it_queues() -> None:
    report = parse_message(LAB_REPORT.read_bytes(), Source("eml"))
    payload = render.parent_message(report, "planned", queued=(2, "lab-1"))
    assert payload["text"].endswith(" · queued behind 2 on lab-1")
    assert "queued behind 2 on lab-1" in json.dumps(payload["blocks"])
    assert "queued" not in render.parent_message(report, "planned")["text"]


def test_past_the_cap_a_report_is_planned_again_for_the_free_host_saying_what_differs(tmp_path: Path) -> None:
    rules, _ = write_lab_rules(tmp_path, PROJECT)
    text = (rules / "hosts.toml").read_text()
    block = text[text.index("[[host]]"):]
    # lab-local and a much bigger host: a 2-thread report is far less like the big one
    big = block.replace('name = "lab-local"', 'name = "lab-big"').replace("threads = 2", "threads = 64")
    (rules / "hosts.toml").write_text("max_wait_minutes = 0\n" + text + big)
    settings = dataclasses.replace(load_settings(rules),
                                   routing=parse_routing('default_channel = "#perf-triage"\n', "test"))
    assert settings.max_wait_minutes == 0
    lab = flow.DaemonContext(settings=settings, database=tmp_path / "t.db", deliver=lambda: None, budget=6)
    release = threading.Event()

    def run(store, job: RunJob) -> str:
        assert release.wait(120)
        with store.transaction():
            store.set_triage(job.message_id, "error", note="stand-in run")
        return "error"

    with SqliteStore(lab.database) as store:
        machine = {"description": "2 threads 1 sockets test lab with 24G memory", "threads": 2, "sockets": 1,
                   "memory_gb": 24}
        planned(store, "newer@lab", "2026-11-02T10:00:00+00:00", machine)
        planned(store, "older@lab", "2026-11-01T10:00:00+00:00", machine)
        dispatcher = ThreadDispatcher(lambda: SqliteStore(lab.database), run)
        jobs = flow.assign(store, lab, dispatcher)
        assert [(job.message_id, job.host) for job in jobs] == [("newer@lab", "lab-local"), ("older@lab", "lab-big")]
        moved = store.get_triage("older@lab")
        assert moved.state == "running" and moved.host == "lab-big"
        [note] = [note for note in moved.plan["notes"] if note.startswith("waited ")]
        assert ", past the 0 s cap, for lab-local (match 1.00): runs on lab-big (match " in note
        assert "threads: host 64, test machine 2" in note
        [reply] = [row for row in store.outbox(message_id="older@lab") if row.kind == "moved"]
        assert reply.payload["text"] == f"Moved: {note}"
        assert not any(note.startswith("waited ") for note in store.get_triage("newer@lab").plan["notes"])
        release.set()
        dispatcher.join()


def test_a_runs_write_waits_out_another_writer_instead_of_losing_the_run(tmp_path: Path) -> None:
    import sqlite3

    import pytest

    from triagebot.store.protocol import StoreBusyError

    lab = three_host_lab(tmp_path)
    with SqliteStore(lab.database) as store:
        planned(store, "busy@lab", "2026-11-01T10:00:00+00:00")
    other = sqlite3.connect(lab.database, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the loop storing a poll's batch holds the write lock
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the other writer commits while the run's write waits
        waits.append(seconds)
        if len(waits) == 2:
            other.execute("COMMIT")

    lab = dataclasses.replace(lab, sleep=sleep)
    with SqliteStore(lab.database, busy_timeout_ms=20) as store:
        flow.patiently(lab, lambda: store.set_triage("busy@lab", "running"))
        assert store.get_triage("busy@lab").state == "running" and len(waits) == 2
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreBusyError):  # past its patience the error stands
            flow.patiently(dataclasses.replace(lab, busy_patience_s=1, sleep=lambda seconds: None),
                           lambda: store.set_triage("busy@lab", "planned"))
        other.execute("ROLLBACK")
    other.close()


def test_a_reply_with_numbers_renews_its_report_and_chatter_does_not(tmp_path: Path) -> None:
    from triagebot.lab.queue import newest_activity, waiting_report
    from triagebot.records.report import Measurement

    lab = three_host_lab(tmp_path)
    with SqliteStore(lab.database) as store:
        planned(store, "report@lab", "2026-11-01T10:00:00+00:00")
        report = store.get_record("report@lab")
        for message_id, date, measured in (("numbers@lab", "2026-11-20T08:00:00+00:00", True),
                                           ("chatter@lab", "2026-11-25T08:00:00+00:00", False)):
            reply = dataclasses.replace(report, message_id=message_id, in_reply_to="report@lab", kind="reply",
                                        date=date, measurements=(Measurement("IOPS=363k", "fio.read_iops",
                                                                             363000.0, "IOPS"),) if measured else ())
            store.put_message(message_id, b"Subject: Re\n\nbody\n", "test", None, date)
            store.put_record(message_id, reply, "test")
            store.link_thread(message_id, "report@lab")
        store.link_thread("report@lab", None)
        taken_on = datetime(2026, 12, 1, tzinfo=UTC)
        assert newest_activity(store, "report@lab", report, taken_on) == datetime(2026, 11, 20, 8, tzinfo=UTC)
        waiting = waiting_report(store, store.get_triage("report@lab"))
        assert waiting.newest_at == datetime(2026, 11, 20, 8, tzinfo=UTC)
        assert newest_activity(store, "report@lab", dataclasses.replace(report, date=None), taken_on) == taken_on


def test_triage_plan_picks_the_host_the_daemon_runs_the_report_on(tmp_path: Path) -> None:
    from datetime import timedelta

    from triagebot.lab.queue import daemon_host
    from triagebot.reproduce.host_lock import host_lock

    lab = three_host_lab(tmp_path)
    hosts = lab.settings.need_hosts()
    with SqliteStore(lab.database) as store:
        for number in range(1, 5):
            planned(store, f"r{number}@lab", f"2026-11-0{number}T10:00:00+00:00")
        for number, host in ((4, "lab-local"), (3, "lab-2"), (2, "lab-3")):  # three run now
            store.set_triage(f"r{number}@lab", "running", host=host)
        now = datetime.now(UTC)
        choice = {number: daemon_host(store, lab.database, hosts, timedelta(hours=2),
                                      store.get_record(f"r{number}@lab"), now) for number in range(1, 5)}
        # without the daemon's threads, a running report's host counts as busy only while locked:
        # r1 would start at once on the first host nobody holds
        assert choice[3][0].name == "lab-2" and choice[3][1] == "it runs on lab-2 now"
        assert choice[1][0].name == "lab-local" and choice[1][1] == "lab-local is free: it runs there next"
        # with every host's lock held (the daemon's runs), it queues behind the report running there
        with host_lock(lab.database, "lab-local"), host_lock(lab.database, "lab-2"), host_lock(lab.database, "lab-3"):
            host, why = daemon_host(store, lab.database, hosts, timedelta(hours=2), store.get_record("r1@lab"), now)
        assert (host.name, why) == ("lab-local", "queued behind 1 on lab-local")
