"""`triage daemon --once` waits for every run it dispatched and every post it owes, then exits.

The base of issue 36 stopped with a run it had just handed out ("run dispatched … daemon
stopped … run started"; the next pass: "run cut short: starts over"): its drain looked at the
lab after a dispatch, so a host freed in between (a bisection or fix test ending) was given its
next report by the clean-up after the drain, on a thread the exiting process then dropped. And
it exited with the posts Slack had refused for a moment still in the outbox.

The first test drives the drain in this process with a real store, dispatcher and lab run, and
after-verdict work that holds the host's lock and ends exactly between a dispatch and the look
after it. The second runs `triage daemon --once` as a process on both dispatchers (SQLite's
threads; PostgreSQL with a `triage worker`), Slack down from the run's halfway post until the
verdict has failed to post, and reads the order of events from the logs.
"""
from __future__ import annotations

import dataclasses
import io
import shutil
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.daemon_run import (
    CHANNEL_ID,
    SLACK_TOKEN,
    final_state,
    lab_rules,
    log_events,
    start_daemon,
    thread_shape,
    wait_for,
)
from tests.support.fake_slack import FakeSlack
from tests.support.lab import lab_path, report_copies, write_lab_rules
from tests.support.public_inbox import require_public_inbox, start_public_inbox
from tests.test_daemon import CLEAN_SHAPE, REPORT, REPORT_ID, chatter, daemon_env, stop_lab, with_routing
from triagebot.daemon import flow, loop
from triagebot.daemon.dispatch.inprocess import ThreadDispatcher
from triagebot.daemon.health import DaemonMetrics
from triagebot.notify import outbox
from triagebot.notify.terminal import TerminalNotifier
from triagebot.reproduce.host_lock import host_lock
from triagebot.rules.settings import load_settings
from triagebot.store.location import parse_location
from triagebot.store.sqlite import SqliteStore

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("stress-ng")),
                                reason="the lab needs sysbench and stress-ng (apt-get install sysbench stress-ng)")


class HostHeldAfterVerdict:
    """After-verdict work (a bisection, say) holding its host's lock, that ends when the loop
    looks at it the second time: after a dispatch found the host taken, before the drain decides."""

    def __init__(self, database: Path, host: str) -> None:
        self._release = threading.Event()
        held = threading.Event()

        def hold() -> None:
            with host_lock(database, host):
                held.set()
                self._release.wait()
        self._thread = threading.Thread(target=hold, name="held-after-verdict")
        self._thread.start()
        held.wait()
        self.looks = 0

    def poke(self, store) -> None:
        pass  # its work was handed out before the drain

    def busy(self) -> bool:
        self.looks += 1
        if self.looks == 2:  # it ends now: the host is free from here on
            self._release.set()
            self._thread.join()
        return self._thread.is_alive()

    def join(self) -> None:
        self._release.set()
        self._thread.join()


def test_a_host_freed_between_a_dispatch_and_the_look_gets_its_report_and_once_waits_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules, _state = write_lab_rules(tmp_path, PROJECT)
    (rules / "routing.toml").write_text('default_channel = "#perf-triage"\n')
    [message_id] = report_copies(tmp_path / "mail", 1)
    database = tmp_path / "once.db"
    subprocess.run([sys.executable, "-m", "triagebot.cli", "ingest", "--db", str(database), "--quiet",
                    str(tmp_path / "mail")], check=True, cwd=PROJECT)
    monkeypatch.setenv("PATH", lab_path(tmp_path))  # the lab's sysbench shim for the run's benchmark
    posted = io.StringIO()
    notifier = TerminalNotifier(posted, plot_dir=tmp_path / "plots")
    try:
        with SqliteStore(database) as store:
            lab = flow.DaemonContext(settings=load_settings(rules), database=database,
                                     deliver=lambda: outbox.deliver(store, notifier), budget=6)
            flow.admit(store, lab, admit_days=14, now=datetime(2099, 4, 16, tzinfo=UTC))
            flow.plan_new(store, lab)
            held = HostHeldAfterVerdict(database, "lab-local")
            threads = ThreadDispatcher(lambda: SqliteStore(database),
                                       lambda own, job: flow.run_job(own, worker_lab, job))
            worker_lab = dataclasses.replace(lab, deliver=threads.wake)
            metrics = DaemonMetrics(sources=[])
            loop.dispatch(store, lab, threads, metrics)  # the pass's run step: the host is taken
            assert store.get_triage(message_id).state == "planned" and not threads.running()
            loop.drain(store, lab, threads, metrics, loop.DaemonState(), held)
            assert held.looks >= 3  # it looked again after the work ended, before deciding it was done
            assert not threads.running()
            assert store.get_triage(message_id).state == "confirmed"
            assert store.outbox("pending", "sending") == []
    finally:
        stop_lab(tmp_path)
    assert "Verdict: confirmed" in posted.getvalue()


def _store_of(database: str):
    return parse_location(database).open()


def _events(*logs: Path) -> list[dict]:
    return sorted((item for log in logs for item in log_events(log)), key=lambda item: item["time"])


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_once_waits_for_its_run_and_every_post_it_owes(backend: str, tmp_path: Path, request) -> None:
    require_public_inbox()
    worker = None
    with start_public_inbox(tmp_path / "lore", "linux-kernel", [chatter(), REPORT]) as server, \
            FakeSlack(token=SLACK_TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
        rules = with_routing(lab_rules(tmp_path, server.list_url, poll_minutes=1))
        env = daemon_env(tmp_path, slack.base_url)
        if backend == "postgresql":
            postgres = request.getfixturevalue("postgres_server")
            database = postgres.url(postgres.new_schema())
            worker_log = tmp_path / "worker.log"
            with open(worker_log, "ab") as output:  # the run is the worker's job
                worker = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "worker", "--db", database,
                                           "--rules", str(rules)], cwd=PROJECT, env=env, stdin=subprocess.DEVNULL,
                                          stdout=output, stderr=subprocess.STDOUT)
            logs = [tmp_path / "daemon.log", worker_log]
        else:
            database = str(tmp_path / "once.db")
            logs = [tmp_path / "daemon.log"]

        def weather(call) -> None:  # Slack goes down once the run's halfway reply is posted
            if call.method == "chat.postMessage" and call.status == 200 and "halfway" in call.params.get("text", ""):
                slack.outage(True)

        slack.after_call = weather
        log = tmp_path / "daemon.log"
        daemon = start_daemon(database, rules, env, log, "--once", "--health-port", "off")
        try:
            # the verdict failed to post: the daemon owes it (and the plot, and the parent's update)
            wait_for(lambda: any(call.status == 503 and "Verdict" in str(call.params.get("text", ""))
                                 for call in slack.calls), 600, "the verdict's failed post", daemon, log)
            slack.after_call = None
            slack.outage(False)
            assert daemon.wait(timeout=900) == 0, log.read_text()[-3000:]
            messages = slack.messages(CHANNEL_ID)
            with _store_of(database) as store:
                assert store.get_triage(REPORT_ID).state == "confirmed"
                assert store.outbox("pending", "sending", "held") == []
            # the next pass: nothing was cut short, nothing is owed, nothing more is posted
            again = subprocess.run([sys.executable, "-m", "triagebot.cli", "daemon", "--once", "--db", database,
                                    "--rules", str(rules), "--health-port", "off"], capture_output=True, text=True,
                                   timeout=600, stdin=subprocess.DEVNULL, env=env, cwd=PROJECT)
        finally:
            slack.after_call = None
            if daemon.poll() is None:
                daemon.send_signal(signal.SIGKILL)
                daemon.wait()
            if worker is not None:
                worker.send_signal(signal.SIGTERM)
                worker.wait(timeout=120)
            stop_lab(tmp_path)
        assert again.returncode == 0, again.stderr
        assert '"event": "run.resumed"' not in again.stderr and '"event": "run.dispatched"' not in again.stderr
        assert slack.messages(CHANNEL_ID) == messages
    assert thread_shape(messages) == CLEAN_SHAPE and final_state(messages) == "confirmed"
    events = _events(*logs)

    def first(name: str, kind: str | None = None) -> int:
        return next(index for index, item in enumerate(events) if item.get("event") == name
                    and (kind is None or kind in item.get("kinds", ())))
    # run dispatched … run started … verdict … posted … daemon stopped
    assert first("run.dispatched") < first("run.started") < first("run.decided") < first("notify.sent", "verdict") \
        <= first("notify.sent", "plot") < first("daemon.stopped"), [item.get("event") for item in events]
    assert not any(item.get("event") in ("run.stopped", "notify.owed") for item in events)
