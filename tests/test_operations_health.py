"""Issue 17, part 2: /healthz says `degraded` (503, with the reason) when every source has failed
its last poll (issue 36; it was its last 3 in a row), or any one source its last 3 (issue 21,
named); /metrics carries each source's poll lag and the polls that healed a gap."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from tests.test_daemon_parts import get
from triagebot.daemon import loop as daemon
from triagebot.daemon.health import FAILING_POLLS, DaemonMetrics, HealthServer
from triagebot.http_client.bounds import PollBounds
from triagebot.http_client.protocol import SourceError
from triagebot.ingest.protocol import Batch
from triagebot.store.sqlite import SqliteStore

DOWN, UP = "https://down.example/list/", "https://up.example/list/"


class Failing:
    key = "lore:" + DOWN

    def poll(self, cursor):
        raise SourceError(f"{DOWN}: NameResolutionError (gave up after 5 attempts)")


class Healing:
    key = "lore:" + UP

    def poll(self, cursor):
        return Batch((), "cursor", (f"{UP}new.atom: the feed does not reach back to what was seen; reading the "
                                    "list's search for every message received since 2026-12-01",))


def _poll(tmp_path: Path, monkeypatch, sources: dict, times: int) -> DaemonMetrics:
    monkeypatch.setattr(daemon, "build_source", lambda url, policy, **_: sources[url]())
    settings = SimpleNamespace(http=None, bounds=PollBounds(),
                               sources=[SimpleNamespace(url=url, poll_minutes=1) for url in sources])
    metrics = DaemonMetrics()
    with SqliteStore(tmp_path / "d.db") as store:
        for _ in range(times):
            daemon.poll_due_sources(settings, store, daemon.DaemonState(), metrics, jobs=1)
    return metrics


def test_healthz_degraded_when_every_source_failed_its_last_polls(tmp_path, monkeypatch):
    """Issue 36: when every poll fails no mail comes in at all; /healthz says so from the first
    failed poll of each source (it said `ok` until the third)."""
    metrics = _poll(tmp_path, monkeypatch, {DOWN: Failing}, 1)
    server = HealthServer(metrics, port=0, stale_seconds=600).start()
    try:
        status, _kind, body = get(f"http://127.0.0.1:{server.port}/healthz")
        assert status == 503 and json.loads(body)["failed_polls_in_a_row"] == {DOWN: 1}
        with SqliteStore(tmp_path / "d.db") as store:
            settings = SimpleNamespace(http=None, bounds=PollBounds(),
                                       sources=[SimpleNamespace(url=DOWN, poll_minutes=1)])
            for _ in range(FAILING_POLLS - 1):
                daemon.poll_due_sources(settings, store, daemon.DaemonState(), metrics, jobs=1)
        status, kind, body = get(f"http://127.0.0.1:{server.port}/healthz")
        answer = json.loads(body)
        assert status == 503 and kind == "application/json" and answer["status"] == "degraded"
        assert answer["failed_polls_in_a_row"] == {DOWN: FAILING_POLLS}
        assert any("polls failing: every polled source's last poll failed" in reason for reason in answer["reasons"])
        _, _, text = get(f"http://127.0.0.1:{server.port}/metrics")
        assert f'triage_poll_lag_seconds{{source="{DOWN}"}}' in text
    finally:
        server.stop()


def test_one_failing_source_is_named_while_another_polls_and_gap_heals_are_counted(tmp_path, monkeypatch):
    metrics = _poll(tmp_path, monkeypatch, {DOWN: Failing, UP: Healing}, FAILING_POLLS - 1)
    assert metrics.problems() == []  # two failures: a blip
    metrics = _poll(tmp_path, monkeypatch, {DOWN: Failing, UP: Healing}, FAILING_POLLS + 1)
    # issue 21: the source that fails is named, though the other one works
    assert list(metrics.degraded_sources()) == [DOWN] and "NameResolutionError" in metrics.degraded_sources()[DOWN]
    assert [reason for reason in metrics.problems() if "every source" not in reason] == \
        [f"source {DOWN} degraded: {metrics.degraded_sources()[DOWN]}"]
    assert metrics.registry.get_sample_value("triage_gap_heals_total", {"source": UP}) == FAILING_POLLS + 1
    assert metrics.registry.get_sample_value("triage_gap_heals_total", {"source": DOWN}) is None
    lag = metrics.registry.get_sample_value("triage_poll_lag_seconds", {"source": UP})
    assert lag is not None and lag >= 0
    metrics.poll_failed(UP)
    metrics.poll_troubled(UP, "a blip")
    assert UP not in metrics.degraded_sources()  # UP failed once only


class Delivering:
    key = "lore:" + UP

    def poll(self, cursor):
        from triagebot.ingest.protocol import FetchedMessage

        raw = (b"From: A <a@example.org>\nSubject: hello\nMessage-ID: <age@example.org>\n"
               b"Date: Tue, 01 Dec 2026 00:00:00 +0000\n\nbody\n")
        return Batch((FetchedMessage(raw, "lore", None, "list"),), "cursor")


def test_metrics_carry_the_age_of_the_newest_message_a_source_gave(tmp_path, monkeypatch):
    metrics = _poll(tmp_path, monkeypatch, {UP: Delivering}, 1)
    assert metrics.newest[UP] == 1796083200.0  # 2026-12-01T00:00:00Z, the message's Date
    server = HealthServer(metrics, port=0, stale_seconds=600).start()
    try:
        _, _, text = get(f"http://127.0.0.1:{server.port}/metrics")
        line = next(line for line in text.splitlines()
                    if line.startswith(f'triage_newest_message_age_seconds{{source="{UP}"}}'))
        assert float(line.split()[-1]) > 0  # now is after that Date
    finally:
        server.stop()


def test_unreadable_or_missing_dates_leave_the_newest_as_it_was():
    metrics = DaemonMetrics()
    metrics.saw_dates(UP, [None, "not a date"])
    assert UP not in metrics.newest
    metrics.saw_dates(UP, ["2026-12-01T00:00:00+00:00", "2026-11-30T00:00:00+00:00"])
    metrics.saw_dates(UP, ["2026-01-01T00:00:00+00:00"])  # an old Date does not move it back
    assert metrics.newest[UP] == 1796083200.0
