"""`triage daemon` as a real process: a real public-inbox server, the test lab, a local Slack.

No command is typed between a report landing in the inbox and its verdict in the channel.
The crash test kills the daemon with SIGKILL at more than twenty points of that flow,
restarting it each time, and compares the channel with a clean run's.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.daemon_run import (
    CHANNEL_ID,
    SLACK_TOKEN,
    final_state,
    free_port,
    lab_rules,
    log_events,
    start_daemon,
    stop_daemon,
    thread_shape,
    wait_for,
)
from tests.support.daemon_run import daemon_env as plain_env
from tests.support.fake_slack import FakeSlack
from tests.support.lab import lab_path
from tests.support.public_inbox import make_message, require_public_inbox, start_public_inbox

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("stress-ng")),
                                reason="the lab needs sysbench and stress-ng (apt-get install sysbench stress-ng)")

REPORT = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes().replace(
    b"Date: Mon, 15 Apr 2024", b"Date: Mon, 15 Apr 2099")  # newest in the feed, within the admission window
REPORT_ID = "20240415071244.lab1@tberg-ws"
CLEAN_SHAPE = [("parent", None), ("plan", "parent"), ("progress-started", "parent"),
               ("progress-halfway", "parent"), ("verdict", "parent"), ("plot", "parent")]
POLL_SECONDS = 6  # poll_minutes = 0.1


def daemon_env(home: Path, slack_url: str | None) -> dict[str, str]:
    """The daemon's environment with the lab's sysbench first on its PATH (tests/support/lab.py)."""
    env = plain_env(home, slack_url)
    return env | {"PATH": lab_path(home, env["PATH"])}


def chatter() -> bytes:
    return make_message("Re: [PATCH] ext4: tidy a helper", "Looks good.\n", msgid="chatter@example.org")


def stop_lab(root: Path) -> None:
    subprocess.run([sys.executable, str(PROJECT / "tests" / "support" / "lab.py"), "stop", str(root / "lab-state")],
                   check=False)


def with_routing(rules: Path) -> Path:
    (rules / "routing.toml").write_text('default_channel = "#perf-triage"\n')
    return rules


def run_once(database: Path, rules: Path, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", "daemon", "--once", "--db", str(database),
                           "--rules", str(rules), "--health-port", "off"], capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL, env=daemon_env(home, None), cwd=PROJECT)


def test_on_the_terminal_a_new_report_is_planned_rerun_and_decided(tmp_path: Path) -> None:
    require_public_inbox()
    with start_public_inbox(tmp_path / "lore", "linux-kernel", [chatter()]) as server:
        rules = lab_rules(tmp_path, server.list_url, poll_minutes=1)
        database = tmp_path / "daemon.db"
        first = run_once(database, rules, tmp_path)
        assert first.returncode == 0, first.stderr
        assert first.stdout == ""  # a patch review is no report: nothing to say
        server.add_message(REPORT)
        try:
            second = run_once(database, rules, tmp_path)
        finally:
            stop_lab(tmp_path)
        assert second.returncode == 0, second.stderr
        status = subprocess.run([sys.executable, "-m", "triagebot.cli", "status", "--db", str(database),
                                 "--rules", str(rules)], capture_output=True, text=True, cwd=PROJECT,
                                env=daemon_env(tmp_path, None))
        show = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", "--db", str(database), REPORT_ID],
                              capture_output=True, text=True, cwd=PROJECT, env=daemon_env(tmp_path, None))
    out = second.stdout
    headings = [line for line in out.splitlines() if line.startswith("── ")]
    assert headings == ["── #perf-triage · new report [local.000001]", "── #perf-triage · reply to [local.000001]",
                        "── #perf-triage · updated [local.000001]", "── #perf-triage · reply to [local.000001]",
                        "── #perf-triage · updated [local.000001]", "── #perf-triage · reply to [local.000001]",
                        "── #perf-triage · reply to [local.000001]", "── #perf-triage · plot in [local.000001]",
                        "── #perf-triage · updated [local.000001]"]
    assert "[REGRESSION] sysbench cpu events/s down ~25% since v6.9-rc1, bisected" in out
    assert "sysbench cpu --threads=2 --time=1 run" in out
    assert "Verdict: confirmed" in out and "State: confirmed: the rerun shows the reported change" in out
    plots = list((tmp_path / "plots").iterdir())
    assert len(plots) == 1 and plots[0].read_bytes().startswith(b"\x89PNG")
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT verdict FROM verdicts").fetchall() == [("confirmed",)]
        assert connection.execute("SELECT state FROM triage").fetchall() == [("confirmed",)]
    events = [line["event"] for line in map(json.loads, second.stderr.splitlines()) if "event" in line]
    assert events[:3] == ["notify.start", "daemon.started", "poll.done"]
    assert {"triage.admitted", "triage.planned", "run.started", "run.decided"} <= set(events)
    assert status.returncode == 0, status.stderr
    assert "confirmed           1" in status.stdout and "queue: empty" in status.stdout
    assert "lab-local        local idle" in status.stdout
    assert f"{server.list_url} (every 1 min): last poll " in status.stdout and ": ok, 1 new" in status.stdout
    assert "outbox: 9 sent" in status.stdout
    assert "  triage:   confirmed since " in show.stdout and "(#perf-triage, host lab-local)" in show.stdout
    assert "    update-final       sent ts local.000001" in show.stdout


def outbox_statuses(database: Path) -> list[tuple[str, int]]:
    try:
        with sqlite3.connect(database) as connection:
            return connection.execute("SELECT status, count(*) FROM outbox GROUP BY status ORDER BY status").fetchall()
    except sqlite3.Error:  # not created yet
        return []


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> dict:
    """One uninterrupted daemon run, from a report appended to the inbox to the final parent."""
    require_public_inbox()
    root = tmp_path_factory.mktemp("clean")
    with start_public_inbox(root / "lore", "linux-kernel", [chatter()]) as server, \
            FakeSlack(token=SLACK_TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
        rules = with_routing(lab_rules(root, server.list_url))
        log = root / "daemon.log"
        port = free_port()
        daemon = start_daemon(root / "daemon.db", rules, daemon_env(root, slack.base_url), log,
                              "--health-port", str(port))
        try:
            wait_for(lambda: any(item.get("event") == "poll.done" for item in log_events(log)), 60,
                     "the first poll", daemon, log)
            health_before = get(f"http://127.0.0.1:{port}/healthz")
            server.add_message(REPORT)
            appended = time.monotonic()
            wait_for(lambda: slack.messages(CHANNEL_ID), 60, "the parent message", daemon, log)
            parent_seconds = time.monotonic() - appended
            wait_for(lambda: final_state(slack.messages(CHANNEL_ID)) == "confirmed"
                     and len(slack.messages(CHANNEL_ID)) == len(CLEAN_SHAPE), 300, "the verdict", daemon, log)
            health = get(f"http://127.0.0.1:{port}/healthz")
            metrics = get(f"http://127.0.0.1:{port}/metrics")
            wait_for(lambda: 'triage_outbox{status="sent"} 9.0' in get(f"http://127.0.0.1:{port}/metrics")[1],
                     30, "the metrics to count the outbox", daemon, log)
            exit_code = stop_daemon(daemon)
        finally:
            if daemon.poll() is None:
                stop_daemon(daemon, signal.SIGKILL)
            stop_lab(root)
        messages = slack.messages(CHANNEL_ID)
        return {"shape": thread_shape(messages), "state": final_state(messages), "messages": messages,
                "parent_seconds": parent_seconds, "exit_code": exit_code, "health_before": health_before,
                "health": health, "metrics": metrics, "calls": [call.method for call in slack.calls],
                "log": log}


def test_a_new_report_reaches_slack_with_no_command_typed(clean_run: dict) -> None:
    assert clean_run["shape"] == CLEAN_SHAPE
    assert clean_run["state"] == "confirmed"
    assert clean_run["parent_seconds"] <= POLL_SECONDS + 5  # within one poll interval (+ start of the pass)
    parent, plan, started, halfway, verdict, plot = clean_run["messages"]
    assert parent["edited"] and "[confirmed] [REGRESSION] sysbench cpu events/s down ~25%" in parent["text"]
    assert "Plan: sysbench-cpu measuring events_per_sec: sysbench cpu --threads=2 --time=1 run" in plan["text"]
    assert started["text"].startswith("Run started on lab-local: base c0ffee1234ab^ vs suspect c0ffee1234ab")
    assert "Medians so far" in halfway["text"]
    assert verdict["text"].startswith("Verdict: confirmed. suspect is") and "worse" in verdict["text"]
    assert plot["files"][0]["mimetype"] == "image/png"
    calls = clean_run["calls"]
    assert calls[0] == "auth.test" and calls.count("chat.postMessage") == 5 and calls.count("chat.update") == 3
    assert calls.count("files.completeUploadExternal") == 1
    assert clean_run["exit_code"] == 0  # SIGTERM: a clean stop


def test_healthz_and_metrics_are_served_while_the_daemon_runs(clean_run: dict) -> None:
    status, body = clean_run["health"]
    assert status == 200 and json.loads(body)["status"] == "ok" and json.loads(body)["outbox_held"] == 0
    assert clean_run["health_before"][0] == 200
    status, text = clean_run["metrics"]
    assert status == 200
    assert 'triage_polls_total{outcome="ok",source="http://127.0.0.1:' in text
    assert "triage_notifications_sent_total" in text and 'triage_reports{state="confirmed"}' in text
    events = [item["event"] for item in log_events(clean_run["log"]) if "event" in item]
    assert "health.listening" in events and events[-1] == "daemon.stopped"


def test_sigkill_at_many_points_ends_with_exactly_the_clean_runs_messages(clean_run: dict, tmp_path: Path) -> None:
    """SIGKILL right after Slack answered each post and at 15 random moments; one SIGTERM mid-run."""
    require_public_inbox()
    randomness = random.Random(20261203)
    with start_public_inbox(tmp_path / "lore", "linux-kernel", [chatter(), REPORT]) as server, \
            FakeSlack(token=SLACK_TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
        rules = with_routing(lab_rules(tmp_path, server.list_url))
        database, log, env = tmp_path / "daemon.db", tmp_path / "daemon.log", daemon_env(tmp_path, slack.base_url)
        kills = []
        answered = {"count": 0, "target": None, "pid": None}
        lock = threading.Lock()

        def kill_after_post(call) -> None:
            if call.method not in ("chat.postMessage", "chat.update", "files.completeUploadExternal") \
                    or call.status != 200:
                return
            with lock:
                answered["count"] += 1
                if answered["target"] is not None and answered["count"] >= answered["target"] and answered["pid"]:
                    os.killpg(answered["pid"], signal.SIGKILL)
                    answered["pid"] = None

        def kill_after_next_posts(times: int) -> None:
            """Right after Slack answered a post, before the daemon could mark it sent."""
            for _ in range(times):
                if final_state(slack.messages(CHANNEL_ID)) == "confirmed":
                    return
                with lock:
                    answered["target"] = answered["count"] + 1
                process = start_daemon(database, rules, env, log, "--health-port", "off")
                with lock:
                    answered["pid"] = process.pid
                process.wait(timeout=300)
                kills.append(("after post", answered["count"], len(slack.messages(CHANNEL_ID))))

        slack.after_call = kill_after_post
        try:
            kill_after_next_posts(3)  # the parent, the plan reply, the parent's update
            # Random moments: start-up, the look-ups of posts in doubt, poll, a run's first samples.
            for _ in range(15):
                daemon = start_daemon(database, rules, env, log, "--health-port", "off")
                moment = randomness.uniform(0.2, 3.0)
                time.sleep(moment)
                stop_daemon(daemon, signal.SIGKILL)
                kills.append(("random", round(moment, 2), len(slack.messages(CHANNEL_ID))))
            # A graceful stop in the middle of a run: the sample in progress ends, the run starts over.
            daemon = start_daemon(database, rules, env, log, "--health-port", "off")
            wait_for(lambda: any(item.get("event") == "run.started" and item["pid"] == daemon.pid
                                 for item in log_events(log)), 120, "a run to start", daemon, log)
            time.sleep(2.0)
            asked = time.monotonic()
            assert stop_daemon(daemon, signal.SIGTERM) == 0
            assert time.monotonic() - asked < 30
            assert any(item.get("event") == "run.stopped" for item in log_events(log))
            kill_after_next_posts(9)  # each post left: progress, verdict, plot, the final parent
            slack.after_call = None
            # Then left alone to finish.
            daemon = start_daemon(database, rules, env, log, "--health-port", "off")
            wait_for(lambda: outbox_statuses(database) == [("sent", 9)], 300, "every notification sent", daemon, log)
            time.sleep(1.0)  # anything still to come would come now
            stop_daemon(daemon)
        finally:
            slack.after_call = None
            for process in [locals().get("daemon")]:
                if process is not None and process.poll() is None:
                    stop_daemon(process, signal.SIGKILL)
            stop_lab(tmp_path)
        messages = slack.messages(CHANNEL_ID)
    assert thread_shape(messages) == clean_run["shape"], (kills, thread_shape(messages))
    assert len(kills) >= 20, kills
    assert final_state(messages) == clean_run["state"]
    assert outbox_statuses(database) == [("sent", 9)]


def test_a_429_storm_and_an_outage_during_the_verdict_lose_nothing(clean_run: dict, tmp_path: Path) -> None:
    require_public_inbox()
    with start_public_inbox(tmp_path / "lore", "linux-kernel", [chatter(), REPORT]) as server, \
            FakeSlack(token=SLACK_TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
        rules = with_routing(lab_rules(tmp_path, server.list_url))
        log = tmp_path / "daemon.log"
        storm = {"started": False}

        def weather(call) -> None:
            # Halfway through the run Slack starts failing: 429s with Retry-After, then a full outage.
            if call.method == "chat.postMessage" and call.status == 200 and "halfway" in call.params.get("text", "") \
                    and not storm["started"]:
                storm["started"] = True
                slack.outage(True)

        slack.after_call = weather
        daemon = start_daemon(tmp_path / "daemon.db", rules, daemon_env(tmp_path, slack.base_url), log,
                              "--health-port", "off")
        try:
            wait_for(lambda: any(item.get("event") == "run.decided" for item in log_events(log)), 300,
                     "the verdict to be decided", daemon, log)
            time.sleep(1.5)
            assert len(slack.messages(CHANNEL_ID)) == 4  # the verdict and the plot wait in the outbox
            failed = [call for call in slack.calls if call.status == 503]
            assert failed
            slack.outage(False)
            slack.rate_limit("chat.postMessage", 12, retry_after=1)
            wait_for(lambda: final_state(slack.messages(CHANNEL_ID)) == "confirmed"
                     and len(slack.messages(CHANNEL_ID)) == len(CLEAN_SHAPE), 180, "the posts after the storm",
                     daemon, log)
            stop_daemon(daemon)
        finally:
            slack.after_call = None
            if daemon.poll() is None:
                stop_daemon(daemon, signal.SIGKILL)
            stop_lab(tmp_path)
        messages = slack.messages(CHANNEL_ID)
        limited = [call for call in slack.calls if call.status == 429]
    assert thread_shape(messages) == clean_run["shape"]
    assert len(limited) == 12
    retries = [item for item in log_events(log) if item.get("event") == "notify.retry"]
    assert {item["code"] for item in retries} >= {"http_503", "ratelimited"}
