"""The lab's rerun through a real OpenSSH server on 127.0.0.1, surviving a dropped connection."""
from __future__ import annotations

import dataclasses
import shutil
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.lab import SLOW_COMMIT, write_shim
from tests.support.sshd import TestSshd, find_sshd
from triagebot.reproduce.executors.ssh import SshExecutor
from triagebot.reproduce.plan import Plan, plan_command
from triagebot.reproduce.runner import rerun
from triagebot.rules.hosts import Host
from triagebot.rules.templates import load_templates
from triagebot.verdict.sequential import LookSchedule

pytestmark = pytest.mark.skipif(not (find_sshd() and shutil.which("ssh") and shutil.which("sysbench")),
                                reason="needs sshd, ssh and sysbench (apt-get install openssh-server sysbench)")

SLOW = SLOW_COMMIT


def test_rerun_over_ssh_survives_the_connection_dropping(tmp_path: Path) -> None:
    state = tmp_path / "lab-state"
    state.mkdir()
    (state / "slow").write_text(SLOW)
    hook = (sys.executable, str(PROJECT / "tests" / "support" / "lab.py"))
    with TestSshd(tmp_path / "sshd") as sshd:
        host = Host(name="lab-ssh", reach="ssh", cpu_model="test lab", threads=2, sockets=1, memory_gb=24,
                    disk="ssd", scratch_dir=str(tmp_path / "scratch"), ssh=sshd.access(),
                    switch_kernel=(*hook, "switch", "{commit}", str(state)),
                    running_kernel=(*hook, "running", str(state)), reboot_timeout_s=30)
        plan = plan_command("sysbench cpu --threads=2 --time=1 run", load_templates(PROJECT / "rules"))
        assert isinstance(plan, Plan)
        # the lab's sysbench (slow by construction on the slow commit), named by its path: the
        # SSH login's PATH is sshd's own
        plan = dataclasses.replace(plan, argv=(str(write_shim(tmp_path, state)), *plan.argv[1:]))
        dropped = threading.Event()

        def drop_once(sample) -> None:
            # after the third sample the host goes away (a reboot) and comes back 2 s later
            if sample.index == 2 and not dropped.is_set():
                dropped.set()
                sshd.stop()
                threading.Timer(2.0, sshd.start).start()

        executor = SshExecutor(host.ssh, host.scratch_dir, name=host.name, reboot_timeout=30, max_backoff=1.0)
        try:
            record = rerun(plan, host, executor, "v6.8", SLOW, on_sample=drop_once, rounds=LookSchedule(rounds=(6, 4)))
        finally:
            executor.close()
            import subprocess
            subprocess.run([*hook, "stop", str(state)], check=False)
    assert dropped.is_set()
    assert record.status == "done", record.error
    assert record.verdict["outcome"] == "confirmed", record.verdict["reason"]
    assert [sample.role for sample in record.samples[:4]] == ["base", "suspect", "base", "suspect"]
    assert all(sample.running_kernel == sample.commit for sample in record.samples)
    assert len(record.samples) >= 12
