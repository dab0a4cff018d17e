"""triage daemon --once against a real public-inbox server and the test lab: no command typed."""
from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.lab import write_lab_rules
from tests.support.public_inbox import make_message, require_public_inbox, start_public_inbox

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("stress-ng")),
                                reason="the lab needs sysbench and stress-ng (apt-get install sysbench stress-ng)")


def lab_rules(tmp_path: Path, list_url: str) -> Path:
    rules, _ = write_lab_rules(tmp_path, PROJECT)
    (rules / "sources.toml").write_text(f'''
[http]
user_agent = "triagebot-test (daemon tests)"
timeout_seconds = 5
attempts = 2
backoff_seconds = 0.1

[[lore]]
url = "{list_url}"
poll_minutes = 1
''')
    return rules


def test_a_new_report_is_planned_rerun_and_decided_with_no_command_typed(tmp_path: Path) -> None:
    require_public_inbox()
    chatter = make_message("Re: [PATCH] ext4: tidy a helper", "Looks good.\n", msgid="chatter@example.org")
    with start_public_inbox(tmp_path / "lore", "linux-kernel", [chatter]) as server:
        rules = lab_rules(tmp_path, server.list_url)
        database = tmp_path / "daemon.db"
        first = subprocess.run([sys.executable, "-m", "triagebot.cli", "daemon", "--once", "--db", str(database),
                                "--rules", str(rules)], capture_output=True, text=True, timeout=600,
                               stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "NO_PROXY": "*",
                                                              "HOME": str(tmp_path)})
        assert first.returncode == 0, first.stderr
        assert "new report" not in first.stdout  # a patch review is no report
        server.add_message((FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()
                           .replace(b"Date: Mon, 15 Apr 2024", b"Date: Mon, 15 Apr 2099"))
        second = subprocess.run([sys.executable, "-m", "triagebot.cli", "daemon", "--once", "--db", str(database),
                                 "--rules", str(rules)], capture_output=True, text=True, timeout=600,
                                stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "NO_PROXY": "*",
                                                               "HOME": str(tmp_path)})
        assert second.returncode == 0, second.stderr
        subprocess.run([sys.executable, str(PROJECT / "tests" / "support" / "lab.py"), "stop",
                        str(tmp_path / "lab-state")], check=False)
    assert "new report: [REGRESSION] sysbench cpu events/s down ~25%" in second.stdout
    assert "plan: sysbench cpu --threads=2 --time=1" in second.stdout
    assert "confirmed: suspect is" in second.stdout, second.stdout + second.stderr
    with sqlite3.connect(database) as connection:
        [(outcome,)] = connection.execute("SELECT verdict FROM verdicts").fetchall()
    assert outcome == "confirmed"
