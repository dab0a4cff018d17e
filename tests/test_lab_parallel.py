"""The lab at scale, on the embedded default: three hosts run at once, six reports get verdicts.

Three lab hosts: this machine and two real sshd's on 127.0.0.1, each with the test lab's switch
hooks and its own "running kernel" and sysbench shim (tests/support/lab.py). `triage daemon
--once` reads six reports from a real public-inbox server (copies of the lab's report, each
bisected to its own slow commit, so six regressions and not one "also seen" six times), takes
them on and runs them through its in-process dispatcher; meanwhile `triage status` shows every
host busy with its report and the other three queued, and /metrics and the daemon's /hosts page
show every host busy with one of the reports. That all three hosts ran at once is read from the
stored sample times: some run on each host started before any of the three ended. The lab's
hosts switch kernels in step at first (lab.write_together), so runs started together
overlap whatever the machine's load; runs taken one at a time could not (see lab.py).
"""
from __future__ import annotations

import json
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from datetime import datetime
from itertools import product
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.daemon_run import free_port, start_daemon, stop_daemon, wait_for
from tests.support.lab import HOOK, lab_path, report_copies, write_lab_rules, write_shim, write_together
from tests.support.public_inbox import require_public_inbox, start_public_inbox
from tests.support.sshd import TestSshd, find_sshd

pytestmark = pytest.mark.skipif(not (find_sshd() and shutil.which("ssh") and shutil.which("sysbench")),
                                reason="needs sshd, ssh and sysbench (apt-get install openssh-server sysbench)")

VERDICTS = {"confirmed", "not-reproduced", "inconclusive"}


def ssh_host(name: str, sshd: TestSshd, state: Path, scratch: Path) -> str:
    access = sshd.access()
    return f"""
[[host]]
name = "{name}"
reach = "ssh"
cpu_model = "test lab"
threads = 2
sockets = 1
memory_gb = 24
disk = "ssd"
scratch_dir = "{scratch}"
reboot_timeout_s = 60
switch_kernel = {json.dumps([*HOOK, "switch", "{commit}", str(state)])}
running_kernel = {json.dumps([*HOOK, "running", str(state)])}
[host.ssh]
host = "{access.host}"
port = {access.port}
user = "{access.user}"
identity_file = "{access.identity_file}"
known_hosts_file = "{access.known_hosts_file}"
"""


def triage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600, cwd=PROJECT, env=env)


def all_busy(database: Path, rules: Path, env: dict[str, str]) -> dict | None:
    """`triage status --json` once every host runs a report, else None."""
    if not database.exists():
        return None
    shown = triage("status", "--db", str(database), "--rules", str(rules), "--json", env=env)
    if shown.returncode != 0:
        return None
    status = json.loads(shown.stdout)
    return status if all(host["busy"] and host["running"] for host in status["hosts"]) else None


def fetch_text(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.read().decode()
    except OSError:
        return None


def every_host_busy_in_metrics(port: int) -> str | None:
    """The daemon's /metrics once it shows every host busy, else None."""
    text = fetch_text(f"http://127.0.0.1:{port}/metrics")
    busy = re.findall(r'^triage_host_busy\{host="[^"]+"\} 1\.0$', text or "", re.MULTILINE)
    return text if len(busy) == 3 else None


def every_host_busy_on_the_page(port: int) -> str | None:
    """The daemon's /hosts page once it shows every host busy, else None."""
    html = fetch_text(f"http://127.0.0.1:{port}/hosts")
    return html if html and html.count('<span class="busy yes">busy</span>') == 3 else None


def interval(run: dict) -> tuple[datetime, datetime]:
    samples = run["samples"]
    return datetime.fromisoformat(samples[0]["started_at"]), datetime.fromisoformat(samples[-1]["finished_at"])


def test_three_hosts_run_at_once_and_six_reports_get_their_verdicts(tmp_path: Path) -> None:
    require_public_inbox()
    rules, local_state = write_lab_rules(tmp_path, PROJECT)
    (rules / "routing.toml").write_text('default_channel = "#perf-triage"\n')
    states = [local_state]
    hosts_toml = (rules / "hosts.toml").read_text()
    servers = []
    closing: list = []  # the inbox and the daemon, stopped in reverse
    try:
        for number in (1, 2):
            root = tmp_path / f"ssh-{number}"
            state = root / "lab-state"
            state.mkdir(parents=True)
            shim = write_shim(root, state)  # this host's sysbench reads this host's "kernel"
            sshd = TestSshd(root / "sshd", environment={"PATH": f"{shim.parent}:/usr/bin:/bin"})
            sshd.start()
            servers.append(sshd)
            states.append(state)
            hosts_toml += ssh_host(f"lab-ssh-{number}", sshd, state, root / "scratch")
        (rules / "hosts.toml").write_text(hosts_toml)
        write_together(states, switches=4, timeout_s=300)
        env = {"PATH": lab_path(tmp_path, "/usr/bin:/bin:/usr/sbin"), "HOME": str(tmp_path), "NO_PROXY": "*",
               "PYTHONUNBUFFERED": "1"}
        database = tmp_path / "lab.db"
        ids = report_copies(tmp_path / "mail", 6)
        inbox = start_public_inbox(tmp_path / "lore", "linux-kernel",
                                   [path.read_bytes() for path in sorted((tmp_path / "mail").iterdir())])
        closing.append(inbox.close)
        (rules / "sources.toml").write_text(f'''
[http]
user_agent = "triagebot-test (lab tests)"
timeout_seconds = 5

[[lore]]
url = "{inbox.list_url}"
poll_minutes = 1
''')
        log = tmp_path / "daemon.log"
        port = free_port()
        daemon = start_daemon(database, rules, env, log, "--once", "--budget", "6", "--health-port", str(port))
        closing.append(lambda: stop_daemon(daemon, signal.SIGKILL))
        # what the team sees meanwhile: every host busy with a report, the other three queued
        during = wait_for(lambda: all_busy(database, rules, env), 600, "all three hosts busy", daemon, log)
        assert isinstance(during, dict)
        running = [host["running"] for host in during["hosts"]]
        queued = [item["message_id"] for host in during["hosts"] for item in host["queue"]]
        assert sorted(running + queued) == sorted(ids) and len(set(running)) == 3
        assert all(item["waited_seconds"] >= 0 for host in during["hosts"] for item in host["queue"])
        text = triage("status", "--db", str(database), "--rules", str(rules), env=env).stdout
        assert all(f"running <{message_id}>" in text for message_id in running), text
        assert all(f". <{message_id}> waiting " in text for message_id in queued), text
        # the same in /metrics and on the daemon's /hosts page: each host busy with one of the reports
        scraped = wait_for(lambda: every_host_busy_in_metrics(port), 600, "/metrics: all three hosts busy", daemon, log)
        assert isinstance(scraped, str)
        shown_running = re.findall(r'triage_host_running\{host="[^"]+",message_id="([^"]+)"\} 1\.0', scraped)
        assert len(set(shown_running)) == 3 and set(shown_running) <= set(ids), scraped
        hosts_page = wait_for(lambda: every_host_busy_on_the_page(port), 600, "/hosts: all three busy", daemon, log)
        assert isinstance(hosts_page, str)
        for name in ("lab-local", "lab-ssh-1", "lab-ssh-2"):
            section = hosts_page[hosts_page.index(f"<h2>{name}"):].split("</section>", 1)[0]
            assert re.search(r'<p>running: <a href="/r/([^"]+)">', section).group(1) in ids, section
        assert daemon.wait(timeout=1500) == 0, log.read_text()[-3000:]
        status = triage("status", "--db", str(database), "--rules", str(rules), "--json", env=env)
    finally:
        for close in reversed(closing):
            close()
        for sshd in servers:
            sshd.stop()
        for state in states:
            subprocess.run([*HOOK, "stop", str(state)], check=False)
    with sqlite3.connect(database) as connection:
        states_now = dict(connection.execute("SELECT message_id, state FROM triage").fetchall())
        verdicts = connection.execute("SELECT message_id, count(*) FROM verdicts GROUP BY message_id").fetchall()
        runs = [json.loads(text) for (text,) in connection.execute("SELECT run_json FROM runs ORDER BY run_id")]
    assert sorted(states_now) == sorted(ids)
    assert all(state in VERDICTS for state in states_now.values()), (states_now, log.read_text()[-3000:])
    assert sorted(verdicts) == sorted((message_id, 1) for message_id in ids)  # one verdict each
    by_host: dict[str, list[tuple[datetime, datetime]]] = {}
    for run in runs:
        assert run["status"] == "done", run.get("error")
        assert all(sample["running_kernel"] == sample["commit"] for sample in run["samples"])
        by_host.setdefault(run["host"], []).append(interval(run))
    assert sorted(by_host) == ["lab-local", "lab-ssh-1", "lab-ssh-2"]
    # all three hosts ran at once: one run on each whose intervals share a moment
    assert any(max(start for start, _ in triple) < min(end for _, end in triple)
               for triple in product(*by_host.values())), by_host
    shown = json.loads(status.stdout)
    assert [(host["name"], host["busy"], host["queue"]) for host in shown["hosts"]] == [
        ("lab-local", False, []), ("lab-ssh-1", False, []), ("lab-ssh-2", False, [])]
    assert shown["queue"] == []
