"""The daemon on PostgreSQL: a report from a real public-inbox is taken on, planned, rerun on the
test lab and decided, with every notification sent, the store being a real PostgreSQL server the
tests start (`--db postgresql://…`), as test_daemon.py does on SQLite. The run is a job the
daemon defers and a `triage worker` process runs (daemon/dispatch/jobqueue.py)."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.daemon_run import lab_rules
from tests.support.public_inbox import require_public_inbox, start_public_inbox
from tests.test_daemon import REPORT, REPORT_ID, chatter, daemon_env, stop_lab
from triagebot.store.location import parse_location

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("stress-ng")),
                                reason="the lab needs sysbench and stress-ng (apt-get install sysbench stress-ng)")


def triage(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, env=daemon_env(home, None), cwd=PROJECT)


def test_the_daemon_takes_a_report_to_its_verdict_on_postgresql(tmp_path: Path, postgres_server) -> None:
    require_public_inbox()
    url = postgres_server.url(postgres_server.new_schema())
    with start_public_inbox(tmp_path / "lore", "linux-kernel", [chatter()]) as server:
        rules = lab_rules(tmp_path, server.list_url, poll_minutes=1)
        first = triage(tmp_path, "daemon", "--once", "--db", url, "--rules", str(rules), "--health-port", "off")
        assert first.returncode == 0, first.stderr
        server.add_message(REPORT)
        # on PostgreSQL the daemon defers the run as a job; a `triage worker` runs it
        worker = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "worker", "--db", url, "--rules", str(rules)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=daemon_env(tmp_path, None), cwd=PROJECT)
        try:
            second = triage(tmp_path, "daemon", "--once", "--db", url, "--rules", str(rules), "--health-port", "off")
        finally:
            worker.send_signal(signal.SIGTERM)
            worker_log = worker.communicate(timeout=120)[1]
            stop_lab(tmp_path)
        assert worker.returncode == 0, worker_log
        assert '"event": "worker.started"' in worker_log and '"event": "worker.stopped"' in worker_log
        assert second.returncode == 0, second.stderr
        status = triage(tmp_path, "status", "--db", url, "--rules", str(rules))
    assert "Verdict: confirmed" in second.stdout
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"database: {parse_location(url)}\n")
    assert "confirmed           1" in status.stdout and "queue: empty" in status.stdout
    with parse_location(url).open() as store:
        assert store.get_triage(REPORT_ID).state == "confirmed"
        assert store.latest_run(REPORT_ID)["verdict"]["outcome"] == "confirmed"
        statuses = store.outbox_counts()
    assert set(statuses) == {"sent"} and f"outbox: {statuses['sent']} sent" in status.stdout
    # the plot beside a database that is no file: under the data directory (HOME here)
    plots = list((tmp_path / ".local" / "share" / "triagebot" / "postgresql" / "plots").iterdir())
    assert len(plots) == 1 and plots[0].read_bytes().startswith(b"\x89PNG")
