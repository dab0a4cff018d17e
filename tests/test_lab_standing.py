"""One source for the queue and the polls: the web index, /hosts, `triage status` and /healthz agree.

Each test builds one store state with the daemon's own steps (the lab report's copies ingested,
taken on and planned; the sources polled through the daemon's poll step, failing or not), then
reads it through all four, as a team would: the daemon's web server over HTTP (the index,
/hosts and /healthz, served together as the daemon serves them) and `triage status` as a
process. The base of issue 36 said "queued on this-machine" on the index while /hosts put the
same report under "Waiting for a host" with every queue empty, and /healthz said `ok` after
every poll had failed.
"""
from __future__ import annotations

import dataclasses
import html
import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import PROJECT
from tests.support.lab import report_copies, write_lab_rules
from tests.test_daemon_parts import get
from triagebot.daemon import flow
from triagebot.daemon import loop as daemon
from triagebot.daemon.health import DaemonMetrics, HealthServer
from triagebot.http_client.bounds import PollBounds
from triagebot.http_client.protocol import SourceError
from triagebot.ingest.protocol import Batch
from triagebot.reproduce.host_lock import host_lock
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore
from triagebot.web.views import Site

FIRST, SECOND = "https://lore.example/first/", "https://lore.example/second/"


class Down:
    def __init__(self, url: str) -> None:
        self.key = "lore:" + url
        self.url = url

    def poll(self, cursor):
        raise SourceError(f"{self.url}: name does not resolve (offline?)")


class Quiet:
    def __init__(self, url: str) -> None:
        self.key = "lore:" + url

    def poll(self, cursor):
        return Batch((), "cursor")


def one_kernel_host(rules: Path, scratch: Path) -> None:
    """hosts.toml as on a fresh install: one host, this machine, that cannot switch kernels."""
    (rules / "hosts.toml").write_text(f"""
[[host]]
name = "this-machine"
reach = "local"
cpu_model = "test lab"
threads = 2
sockets = 1
memory_gb = 24
disk = "ssd"
scratch_dir = "{scratch}"
switch_kernel = []
""")


def build_state(root: Path, monkeypatch: pytest.MonkeyPatch, *, lab: bool, polls_fail: bool) -> dict:
    """A store with three of the lab's reports taken on and planned (on `lab`: one running on the
    lab's host, whose lock is held as a running rerun holds it), and two sources polled once."""
    rules, _state = write_lab_rules(root, PROJECT)
    (rules / "routing.toml").write_text('default_channel = "#perf-triage"\n')
    (rules / "sources.toml").write_text(f'[[lore]]\nurl = "{FIRST}"\npoll_minutes = 1\n'
                                        f'[[lore]]\nurl = "{SECOND}"\npoll_minutes = 1\n')
    if not lab:
        one_kernel_host(rules, root / "scratch")
    ids = report_copies(root / "mail", 3)
    database = root / "standing.db"
    subprocess.run([sys.executable, "-m", "triagebot.cli", "ingest", "--db", str(database), "--quiet",
                    str(root / "mail")], check=True, cwd=PROJECT, capture_output=True)
    settings = load_settings(rules)
    context = flow.DaemonContext(settings=settings, database=database, deliver=lambda: None)
    monkeypatch.setattr(daemon, "build_source",
                        lambda url, policy, **_: Down(url) if polls_fail else Quiet(url))
    polling = dataclasses.replace(settings, bounds=PollBounds())
    with SqliteStore(database) as store:
        daemon.poll_due_sources(polling, store, daemon.DaemonState(), DaemonMetrics(), jobs=1)
        flow.admit(store, context, admit_days=14, now=datetime(2099, 4, 16, tzinfo=UTC))
        flow.plan_new(store, context)
        if lab:  # the newest report runs on the lab's host: the other two wait behind it
            store.set_triage(ids[-1], "running", host="lab-local")
    return {"rules": rules, "database": database, "settings": settings, "ids": ids}


def read_all(state: dict) -> dict:
    """The index, /hosts and /healthz from the daemon's server, and `triage status --json` and text."""
    database, settings = state["database"], state["settings"]
    site = Site(open_store=lambda: SqliteStore(database), settings=settings, database=database)
    server = HealthServer(DaemonMetrics(sources=[FIRST, SECOND]), port=0, site=site).start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        index, hosts, healthz = (get(base + path) for path in ("/", "/hosts", "/healthz"))
    finally:
        server.stop()
    status = [subprocess.run([sys.executable, "-m", "triagebot.cli", "status", "--db", str(database),
                              "--rules", str(state["rules"]), *extra], capture_output=True, text=True, cwd=PROJECT)
              for extra in (["--json"], [])]
    assert all(result.returncode == 0 for result in status), [result.stderr for result in status]
    return {"index": html.unescape(index[2]), "hosts": html.unescape(hosts[2]), "healthz": healthz,
            "status": json.loads(status[0].stdout), "status_text": status[1].stdout}


def index_places(page: str) -> dict[str, str]:
    """Each report's place in the index's host column, by the subject's link."""
    rows = re.findall(r'<a href="/r/([^"]+)">.*?</td>\s*<td class="host">([^<]*)</td>', page, re.S)
    return {key.replace("%40", "@"): place for key, place in rows}


def test_with_no_host_that_can_switch_kernels_and_every_poll_failed_all_four_agree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = build_state(tmp_path, monkeypatch, lab=False, polls_fail=True)
    seen = read_all(state)
    status = seen["status"]
    places = {item["message_id"]: item["place"] for item in status["queue"]}
    waits = "waits for a host that can switch kernels (hosts.toml lists none)"
    assert places == {message_id: waits for message_id in state["ids"]}
    # the index says it in the same words, never "queued on this-machine"
    assert index_places(seen["index"]) == places, seen["index"]
    assert "queued on" not in seen["index"]
    # /hosts: this-machine's queue is empty, and the three wait for a host, in the same words
    waiting = seen["hosts"][seen["hosts"].index("<h2>Waiting for a host</h2>"):]
    assert waiting.count(waits) == 3
    assert "Queue empty." in seen["hosts"]
    # the polls: degraded everywhere, with why
    assert status["health"] == "degraded" and status["polls"].startswith(
        "polls failing: every polled source's last poll failed")
    assert "health: degraded\n  polls failing: every polled source's last poll failed" in seen["status_text"]
    assert status["polls"] in seen["index"] and status["polls"] in seen["hosts"]
    code, _kind, body = seen["healthz"]
    answer = json.loads(body)
    assert code == 503 and answer["status"] == "degraded", answer
    assert answer["reasons"] == status["problems"] and answer["polls"] == status["polls"]
    assert answer["queue"] == status["queue_counts"] == {"running": 0, "next": 0, "queued": 0,
                                                         "waiting_for_a_host": 3}
    assert answer["failed_polls_in_a_row"] == {FIRST: 1, SECOND: 1}


def test_with_a_busy_host_and_polls_working_all_four_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = build_state(tmp_path, monkeypatch, lab=True, polls_fail=False)
    first, second, newest = state["ids"]
    with host_lock(state["database"], "lab-local"):  # as a rerun there holds it
        seen = read_all(state)
    status = seen["status"]
    places = {item["message_id"]: item["place"] for item in status["queue"]}
    assert places == {newest: "running on lab-local", second: "queued on lab-local behind 1",
                      first: "queued on lab-local behind 2"}
    assert index_places(seen["index"]) == places
    assert seen["hosts"].count("behind 1") == 1 and seen["hosts"].count("behind 2") == 1
    assert "Waiting for a host" not in seen["hosts"]
    assert status["health"] == "ok" and status["polls"] == "polls: ok" and status["problems"] == []
    assert "polls: ok" in seen["index"] and "polls: ok" in seen["hosts"]
    code, _kind, body = seen["healthz"]
    answer = json.loads(body)
    assert code == 200 and answer["status"] == "ok" and "reasons" not in answer
    assert answer["queue"] == status["queue_counts"] == {"running": 1, "next": 0, "queued": 2,
                                                         "waiting_for_a_host": 0}


def test_a_source_failing_three_polls_in_a_row_is_named_everywhere_while_another_works(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = build_state(tmp_path, monkeypatch, lab=True, polls_fail=False)
    monkeypatch.setattr(daemon, "build_source", lambda url, policy, **_: Down(url) if url == FIRST else Quiet(url))
    settings = SimpleNamespace(http=None, bounds=PollBounds(),
                               sources=[SimpleNamespace(url=url, poll_minutes=1) for url in (FIRST, SECOND)])
    with SqliteStore(state["database"]) as store:
        for _ in range(3):
            daemon.poll_due_sources(settings, store, daemon.DaemonState(), DaemonMetrics(), jobs=1)
    seen = read_all(state)
    status = seen["status"]
    [problem] = status["problems"]
    assert problem.startswith(f"polls failing: source {FIRST} failed its last 3 polls in a row: ")
    assert json.loads(seen["healthz"][2])["reasons"] == [problem]
    assert problem in seen["index"] and problem in seen["hosts"]
    assert f"{FIRST} (every 1 min): last poll " in seen["status_text"] and "FAILED (3 in a row)" in seen["status_text"]
