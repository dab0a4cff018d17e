"""Parts of the daemon on their own: /healthz and /metrics, `triage status`, a refused token, admission."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from tests.conftest import FIXTURES, PROJECT
from tests.support.fake_slack import FakeSlack
from triagebot.daemon import flow
from triagebot.daemon.health import DaemonMetrics, HealthServer
from triagebot.http_client.bounds import PollBounds
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_from_json, report_to_json
from triagebot.rules.routing import parse_routing
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


def test_healthz_is_503_once_the_loop_stops_beating_and_metrics_are_prometheus_text() -> None:
    metrics = DaemonMetrics()
    metrics.polls.labels("https://lore.example/list/", "ok").inc(3)
    metrics.set_counts({"confirmed": 2, "planned": 1}, {"sent": 9, "held": 1}, ("confirmed", "planned", "new"),
                       ("pending", "sent", "held"))
    server = HealthServer(metrics, port=0, stale_seconds=60).start()
    try:
        status, kind, body = get(f"http://127.0.0.1:{server.port}/healthz")
        assert status == 503 and kind == "application/json"  # a held row: degraded
        assert json.loads(body)["status"] == "degraded" and json.loads(body)["outbox_held"] == 1
        metrics.set_counts({}, {"sent": 9}, (), ("pending", "sent", "held"))
        status, kind, body = get(f"http://127.0.0.1:{server.port}/healthz")
        assert status == 200 and json.loads(body)["status"] == "ok"
        server.stale_seconds = 0.0  # as if the last beat were long ago
        status, _, body = get(f"http://127.0.0.1:{server.port}/healthz")
        assert status == 503 and json.loads(body)["status"] == "stuck"
        status, kind, text = get(f"http://127.0.0.1:{server.port}/metrics")
        assert status == 200 and kind.startswith("text/plain")
        assert 'triage_polls_total{outcome="ok",source="https://lore.example/list/"} 3.0' in text
        assert 'triage_reports{state="confirmed"} 2.0' in text and 'triage_reports{state="new"} 0.0' in text
        assert 'triage_outbox{status="held"} 0.0' in text
        assert get(f"http://127.0.0.1:{server.port}/other")[0] == 404
    finally:
        server.stop()


def triage(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          cwd=PROJECT, stdin=subprocess.DEVNULL, timeout=120, env=env)


def test_status_of_a_missing_database_says_so(tmp_path: Path) -> None:
    result = triage("status", "--db", str(tmp_path / "none.db"))
    assert result.returncode == 1 and "no database yet" in result.stderr and str(tmp_path / "none.db") in result.stderr


def test_status_shows_the_queue_held_rows_and_sources_never_polled(tmp_path: Path) -> None:
    database = tmp_path / "triage.db"
    raw = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()
    record = report_to_json(parse_message(raw, Source("eml")))
    with SqliteStore(database) as store:
        store.put_message(record["message_id"], raw, "test", None, "2026-12-01T00:00:00+00:00")
        store.put_record(record["message_id"], report_from_json(record), "test")
        store.start_triage(record["message_id"], "#perf-triage")
        store.enqueue(record["message_id"], "parent", "#perf-triage", {"text": "parent"})
        [row] = store.outbox()
        store.mark_held(row.outbox_id, "slack chat.postMessage to #perf-triage failed: channel_not_found")
    result = triage("status", "--db", str(database), "--rules", str(PROJECT / "rules"))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "new                 1  received, not yet planned" in out
    assert "  new      since " in out and f"<{record['message_id']}>  [REGRESSION] sysbench cpu" in out
    assert "https://lore.kernel.org/oe-lkp/ (every 15 min): never polled" in out
    assert "outbox: 1 held" in out and "held: parent of <" in out and "channel_not_found" in out
    as_json = json.loads(triage("status", "--db", str(database), "--json").stdout)
    assert as_json["queue"][0]["state"] == "new" and as_json["held"][0]["kind"] == "parent"


def test_a_token_slack_refuses_stops_the_daemon_at_start(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "sources.toml").write_text('[[lore]]\nurl = "http://127.0.0.1:9/list/"\n')
    with FakeSlack(token="xoxb-the-right-one") as slack:
        result = triage("daemon", "--once", "--db", str(tmp_path / "d.db"), "--rules", str(rules),
                        "--health-port", "off",
                        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SLACK_BOT_TOKEN": "xoxb-revoked",
                             "SLACK_API_URL": slack.base_url})
    assert result.returncode == 1
    assert "triage daemon: SLACK_BOT_TOKEN does not work: slack auth.test failed: invalid_auth" in result.stderr


def test_a_bad_health_port_is_refused_by_name(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "sources.toml").write_text('[[lore]]\nurl = "http://127.0.0.1:9/list/"\n')
    result = triage("daemon", "--once", "--db", str(tmp_path / "d.db"), "--rules", str(rules),
                    "--health-port", "ninety", env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 1 and "--health-port 'ninety': a port number" in result.stderr


def test_only_recent_reports_are_taken_on_and_each_once(tmp_path: Path) -> None:
    raw = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()  # dated April 2024
    record = report_to_json(parse_message(raw, Source("eml")))
    settings = dataclasses.replace(load_settings(PROJECT / "rules"), routing=parse_routing(
        'default_channel = "#perf-triage"\n[[route]]\nchannel = "#sched-perf"\nsubsystem = "sched"\n', "test"))
    lab = flow.DaemonContext(settings=settings, database=tmp_path / "t.db", deliver=lambda: None)
    with SqliteStore(tmp_path / "t.db") as store:
        store.put_message(record["message_id"], raw, "test", None, "2026-12-01T00:00:00+00:00")
        store.put_record(record["message_id"], report_from_json(record), "test")
        in_2026 = datetime(2026, 12, 3, tzinfo=UTC)
        assert flow.admit(store, lab, admit_days=14, now=in_2026) == []  # a backfilled old report
        in_2024 = datetime(2024, 4, 20, tzinfo=UTC)
        assert flow.admit(store, lab, admit_days=14, now=in_2024) == [record["message_id"]]
        assert flow.admit(store, lab, admit_days=14, now=in_2024) == []  # once
        [parent] = store.outbox()
        assert parent.kind == "parent" and parent.channel == "#perf-triage"
        assert parent.payload["text"].startswith("[new] [REGRESSION] sysbench cpu events/s down ~25%")
        assert store.get_triage(record["message_id"]).state == "new"


# -- one source, one message, one step cannot stop the daemon (issue 13 finding 1) ---------------

def _counter(metrics: DaemonMetrics, name: str, labels: dict) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_a_source_raising_anything_is_logged_and_the_next_source_still_polled(
        tmp_path: Path, monkeypatch, caplog) -> None:
    import logging
    from types import SimpleNamespace

    from tests.test_quarantine import mail, mbox, poison
    from triagebot.daemon import loop as daemon
    from triagebot.ingest.files import FileSource

    path = mbox(tmp_path / "list.mbox", [mail("good@example.org", "good"), poison()])
    broken_url, file_url = "https://broken.example/list/", "https://file.example/list/"

    class Broken:
        key = "lore:" + broken_url

        def poll(self, cursor):
            raise RuntimeError("a bug in a source")

    monkeypatch.setattr(daemon, "build_source",
                        lambda url, policy, **_: Broken() if url == broken_url else FileSource(path))
    settings = SimpleNamespace(http=None, bounds=PollBounds(), trees=(),
                               sources=[SimpleNamespace(url=broken_url, poll_minutes=1),
                                        SimpleNamespace(url=file_url, poll_minutes=1)])
    metrics = DaemonMetrics()
    with SqliteStore(tmp_path / "d.db") as store:
        new_ids = daemon.poll_due_sources(settings, store, daemon.DaemonState(), metrics, jobs=1)
        assert new_ids == ["good@example.org"] and store.count_quarantined() == 1
        broken = json.loads(store.get_cursor(daemon.LAST_POLL_KEY + broken_url))
        assert broken["outcome"] == "error"
        assert broken["error"] == f"lore:{broken_url}: the poll failed: RuntimeError: a bug in a source"
        polled = json.loads(store.get_cursor(daemon.LAST_POLL_KEY + file_url))
        assert (polled["outcome"], polled["new"], polled["quarantined"]) == ("ok", 1, 1)
    assert _counter(metrics, "triage_polls_total", {"source": broken_url, "outcome": "error"}) == 1
    assert _counter(metrics, "triage_messages_quarantined_total", {"source": file_url}) == 1
    [failed] = [record for record in caplog.records if getattr(record, "fields", {}).get("event") == "poll.failed"]
    assert failed.levelno == logging.ERROR and failed.exc_info is not None  # a bug: logged with its traceback


def test_a_step_that_raises_is_logged_and_the_pass_goes_on(tmp_path: Path, monkeypatch) -> None:
    from types import SimpleNamespace

    from triagebot.daemon import loop as daemon

    ran: list[str] = []

    def plan_new(store, lab):
        raise KeyError("a field one report lacks")

    monkeypatch.setattr(flow, "admit", lambda store, lab, days: ran.append("admit") or [])
    monkeypatch.setattr(flow, "plan_new", plan_new)
    monkeypatch.setattr(flow, "run_planned", lambda store, lab: ran.append("run") or [])
    lab = SimpleNamespace(deliver=lambda: ran.append("deliver"))
    metrics = DaemonMetrics()
    with SqliteStore(tmp_path / "d.db") as store:
        daemon.run_pass(SimpleNamespace(sources=[], http=None, trees=()), store, daemon.DaemonState(), lab, metrics,
                        admit_days=14)
    assert ran == ["deliver", "admit", "run", "deliver"]
    assert _counter(metrics, "triage_step_failures_total", {"step": "plan"}) == 1
