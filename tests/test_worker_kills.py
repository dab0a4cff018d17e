"""The lab at scale on PostgreSQL: two `triage worker` processes, one SIGKILLed mid-run twenty times.

A real PostgreSQL server (started by the tests), a real public-inbox with six reports of six
distinct culprits (so none is joined to another as "also seen"), the test lab's three hosts (this
machine and two real sshd's on 127.0.0.1, tests/support/lab.py), the daemon posting to the test
Slack server, and two workers serving every host.

First a clean run, nothing killed. Then the same with kills: a worker is killed when it holds a
job (`doing`, read from the job table) whose host has switched kernels since this attempt of
the job was first seen (the host's switch count, which the lab's hook stores): mid-run by stored
state, never by a sleep. The killed worker is started again at once; its job is retried once its
heartbeat is `--stalled-after` old and runs from the start on whichever worker fetches it. At the
end every report has exactly one verdict and the Slack channel holds exactly the clean run's
messages: each report's thread the same kinds in the same order, the parent showing the same state.

Twenty kills take a few minutes (each kill waits out the 5 s stall and the run's start again).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.daemon_run import CHANNEL_ID, SLACK_TOKEN, kind_of, start_daemon, stop_daemon, wait_for
from tests.support.fake_slack import FakeSlack
from tests.support.lab import REPORT, SLOW_COMMIT, lab_path, write_lab_rules, write_shim
from tests.support.public_inbox import require_public_inbox, start_public_inbox
from tests.support.sshd import TestSshd, find_sshd
from tests.test_lab_parallel import ssh_host

pytestmark = pytest.mark.skipif(not (find_sshd() and shutil.which("ssh") and shutil.which("sysbench")),
                                reason="needs sshd, ssh and sysbench (apt-get install openssh-server sysbench)")

REPORTS = 6
KILLS = 20
STALLED_AFTER = "5"  # seconds without a heartbeat before a killed worker's job is retried
VERDICTS = {"confirmed", "not-reproduced", "inconclusive"}
CULPRIT_SUBJECT = b"sched: retune the wakeup granularity for small machines"


def distinct_reports(count: int) -> list[bytes]:
    """`count` reports of the lab's regression, each its own Message-ID, date and culprit (sha and
    subject): the first blames the lab's slow commit, the others commits the lab runs at full speed."""
    original = REPORT.read_bytes()
    reports = []
    for number in range(1, count + 1):
        culprit = SLOW_COMMIT if number == 1 else f"5eed{number:08x}"
        text = (original.replace(b"20240415071244.lab1@tberg-ws", f"20990415071244.kill{number}@tberg-ws".encode())
                .replace(b"Date: Mon, 15 Apr 2024 09:12:44", f"Date: Wed, 15 Apr 2099 09:{number:02}:44".encode())
                .replace(SLOW_COMMIT.encode(), culprit.encode())
                .replace(CULPRIT_SUBJECT, CULPRIT_SUBJECT + f" (part {number})".encode()))
        assert f"kill{number}@".encode() in text and b"2099" in text and culprit.encode() in text
        reports.append(text)
    return reports


def rows(url: str, sql: str, parameters: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        return [tuple(row) for row in connection.execute(sql, parameters or None).fetchall()]


def switches(state: Path) -> int:
    try:
        return int((state / "switches").read_text() or 0)
    except (OSError, ValueError):
        return 0


class Lab:
    """The rules, the three hosts' state directories, and the processes of one run."""

    def __init__(self, root: Path, url: str, inbox_url: str, slack_url: str) -> None:
        self.root, self.url = root, url
        self.rules, local_state = write_lab_rules(root, PROJECT)
        (self.rules / "routing.toml").write_text('default_channel = "#perf-triage"\n')
        (self.rules / "sources.toml").write_text(f'''
[http]
user_agent = "triagebot-test (worker kills)"
timeout_seconds = 5

[[lore]]
url = "{inbox_url}"
poll_minutes = 0.1
''')
        self.states = {"lab-local": local_state}
        self.servers: list[TestSshd] = []
        hosts_toml = (self.rules / "hosts.toml").read_text()
        for number in (1, 2):
            base = root / f"ssh-{number}"
            state = base / "lab-state"
            state.mkdir(parents=True)
            shim = write_shim(base, state)  # this host's sysbench reads this host's "kernel"
            sshd = TestSshd(base / "sshd", environment={"PATH": f"{shim.parent}:/usr/bin:/bin"})
            sshd.start()
            self.servers.append(sshd)
            self.states[f"lab-ssh-{number}"] = state
            hosts_toml += ssh_host(f"lab-ssh-{number}", sshd, state, base / "scratch")
        (self.rules / "hosts.toml").write_text(hosts_toml)
        self.env = {"PATH": lab_path(root, "/usr/bin:/bin:/usr/sbin"), "HOME": str(root), "NO_PROXY": "*",
                    "PYTHONUNBUFFERED": "1"}
        self.daemon_env = self.env | {"SLACK_BOT_TOKEN": SLACK_TOKEN, "SLACK_API_URL": slack_url}
        self.log = root / "processes.log"

    def worker(self) -> tuple[subprocess.Popen, int]:
        """A `triage worker` for every host, and its id in the job queue's worker table."""
        before = max((row[0] for row in rows(self.url, "SELECT id FROM procrastinate_workers")), default=0) \
            if self.jobs_ready() else 0
        with open(self.log, "ab") as output:
            process = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "worker", "--db", self.url,
                                        "--rules", str(self.rules), "--budget", "6", "--stalled-after", STALLED_AFTER],
                                       cwd=PROJECT, env=self.env, stdin=subprocess.DEVNULL, stdout=output,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        registered = wait_for(lambda: self.jobs_ready() and [row[0] for row in rows(
            self.url, "SELECT id FROM procrastinate_workers WHERE id > %s", (before,))], 120,
            "the worker to register", process, self.log)
        assert isinstance(registered, list) and len(registered) == 1, registered
        return process, registered[0]

    def jobs_ready(self) -> bool:
        return bool(rows(self.url, "SELECT to_regclass('procrastinate_workers')")[0][0])

    def states_now(self) -> dict[str, str]:
        return dict(rows(self.url, "SELECT message_id, state FROM triage"))

    def close(self) -> None:
        for sshd in self.servers:
            sshd.stop()


def threads(messages: list[dict]) -> dict[str, tuple[str, list[str]]]:
    """Per report: its parent's state (the text's "[state]") and its thread's kinds, in posting order."""
    parents = {message["ts"]: message for message in messages if kind_of(message) == "parent"}
    shown: dict[str, tuple[str, list[str]]] = {}
    for ts, parent in parents.items():
        report = parent["metadata"]["event_payload"]["key"].rsplit("#", 1)[0]
        replies = [kind_of(message) for message in messages if message.get("thread_ts") == ts and message["ts"] != ts]
        shown[report] = (parent["text"].split("]", 1)[0].lstrip("["), replies)
    return shown


def run_lab(root: Path, server, kills: int, seed: int = 23) -> dict:
    """Six reports through the daemon and two workers, killing a worker mid-run `kills` times."""
    url = server.url(server.new_schema())
    randomness = random.Random(seed)
    killed: list[tuple[str, int, str]] = []
    started = time.monotonic()
    with start_public_inbox(root / "lore", "linux-kernel", distinct_reports(REPORTS)) as inbox, \
            FakeSlack(token=SLACK_TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
        lab = Lab(root, url, inbox.list_url, slack.base_url)
        processes: list[subprocess.Popen] = []
        try:
            daemon = start_daemon(url, lab.rules, lab.daemon_env, lab.log, "--health-port", "off")  # type: ignore[arg-type]
            processes.append(daemon)
            workers = [lab.worker(), lab.worker()]
            processes.extend(process for process, _ in workers)
            first_seen: dict[tuple[int, int], int] = {}
            target = randomness.randint(1, 3)
            turn = 0

            def victim() -> tuple[int, str] | None:
                """The worker to kill now: one holding a job whose host switched kernels `target`
                times since this attempt was first seen (the preferred worker first)."""
                ids = [worker_id for _, worker_id in workers]
                doing = rows(url, "SELECT id, attempts, worker_id, args->>'host', args->>'message_id'"
                                  " FROM procrastinate_jobs WHERE status = 'doing' AND worker_id = ANY(%s)", (ids,))
                for index in (turn % 2, (turn + 1) % 2):
                    for job_id, attempts, worker_id, host, message_id in doing:
                        if worker_id != workers[index][1]:
                            continue
                        seen = first_seen.setdefault((job_id, attempts), switches(lab.states[host]))
                        if switches(lab.states[host]) >= seen + target:
                            return index, f"{message_id} on {host} (attempt {attempts + 1})"
                return None

            while len(killed) < kills:
                states = lab.states_now()
                assert not (len(states) == REPORTS and all(state in VERDICTS for state in states.values())), \
                    f"every report was decided after {len(killed)} kills: {killed}"
                found = wait_for(victim, 600, f"a worker mid-run (kill {len(killed) + 1})", daemon, lab.log)
                assert isinstance(found, tuple)
                index, what = found
                process, worker_id = workers[index]
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=60)
                killed.append((f"worker {worker_id}", len(killed) + 1, what))
                workers[index] = lab.worker()
                processes.append(workers[index][0])
                turn += 1
                target = randomness.randint(1, 3)
            wait_for(lambda: len(lab.states_now()) == REPORTS and all(
                state in VERDICTS for state in lab.states_now().values()), 1200, "every verdict", daemon, lab.log)
            wait_for(lambda: rows(url, "SELECT DISTINCT status FROM outbox") == [("sent",)], 300,
                     "every notification sent", daemon, lab.log)
            for process, _ in workers:
                assert stop_daemon(process) == 0, lab.log.read_text(errors="replace")[-3000:]
            assert stop_daemon(daemon) == 0, lab.log.read_text(errors="replace")[-3000:]
        finally:
            for process in processes:
                if process.poll() is None:
                    stop_daemon(process, signal.SIGKILL)
            lab.close()
        return {"threads": threads(slack.messages(CHANNEL_ID)), "killed": killed, "url": url,
                "states": lab.states_now(), "seconds": round(time.monotonic() - started),
                "verdicts": rows(url, "SELECT message_id, count(*) FROM verdicts GROUP BY message_id"),
                "messages": len(slack.messages(CHANNEL_ID)), "log": lab.log}


def test_two_workers_one_killed_mid_run_twenty_times_end_as_the_clean_run(tmp_path: Path, postgres_server) -> None:
    require_public_inbox()
    pytest.importorskip("procrastinate", reason="procrastinate is not installed (pip install -e '.[test]')")
    clean = run_lab(tmp_path / "clean", postgres_server, kills=0)
    assert len(clean["threads"]) == REPORTS and all(state in VERDICTS for state in clean["states"].values())
    # the slow culprit's report is confirmed, the others run at full speed on both commits
    outcomes = sorted(state for state, _ in clean["threads"].values())
    assert outcomes == ["confirmed"] + ["not-reproduced"] * (REPORTS - 1), clean["threads"]
    assert all(kinds[:2] == ["plan", "progress-started"] and "verdict" in kinds
               for _, kinds in clean["threads"].values()), clean["threads"]

    crashed = run_lab(tmp_path / "kills", postgres_server, kills=KILLS)
    assert len(crashed["killed"]) == KILLS
    assert sorted(crashed["verdicts"]) == sorted((message_id, 1) for message_id in crashed["states"])
    assert crashed["threads"] == clean["threads"], (crashed["killed"], crashed["threads"], clean["threads"])
    assert crashed["messages"] == clean["messages"]
    retried = [json.loads(line) for line in crashed["log"].read_text(errors="replace").splitlines()
               if '"event": "worker.stalled_retried"' in line]
    assert len(retried) >= KILLS, len(retried)  # each kill left a job that a sweep retried
    print(f"clean run {clean['seconds']} s; {KILLS} kills {crashed['seconds']} s: {crashed['killed']}")
