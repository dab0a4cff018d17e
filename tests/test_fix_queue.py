"""The daemon's fix steps over a real store (triagebot.fix_testing): which confirmed threads get
a fix test queued, once; and a hostile series refused with its reason, stored and posted once,
with nothing applied, built or run on the lab host.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.lab import git, make_bisect_repo, write_lab_rules
from triagebot.fix_test import flow as fix_testing
from triagebot.lab.context import DaemonContext
from triagebot.notify import render
from triagebot.rules.settings import settings_for
from triagebot.store.sqlite import SqliteStore

REPORT_ID = "20240415071244.lab1@tberg-ws"

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("git") and shutil.which("b4")),
                                reason="the lab's plan needs sysbench; the fix, git and b4 (pip install b4)")


def patch(message_id: str, subject: str, path: str = "lab-factor") -> bytes:
    return (f"From: Carl Author <carl@example.org>\nSubject: {subject}\nDate: Tue, 16 Apr 2024 08:00:00 +0000\n"
            f"Message-ID: <{message_id}>\nIn-Reply-To: <{REPORT_ID}>\nReferences: <{REPORT_ID}>\n\n"
            f"Restore it.\n\nSigned-off-by: Carl Author <carl@example.org>\n---\n"
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-0.6\n+1.0\n").encode()


@pytest.fixture
def confirmed(tmp_path: Path):
    """A report the daemon took on and confirmed on the lab host (its stored plan and run), with
    a thread holding a v1 and a v2 whose part 2 writes outside the tree."""
    repo = tmp_path / "linux"
    shas = make_bisect_repo(repo, 3, 2)
    # a disposable host: the daemon builds any sender's series there (rules/trust.py), so the
    # hostile one reaches b4 and the path check
    rules, state = write_lab_rules(tmp_path, PROJECT, "untrusted_code = true", repo=repo)
    database = tmp_path / "lab.db"
    mails = tmp_path / "mails"
    mails.mkdir()
    thread = [(FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes(),
              patch("v1@example.org", "[PATCH] sched: restore the factor"),
              patch("v2-1@example.org", "[PATCH v2 1/2] sched: restore the factor"),
              patch("v2-2@example.org", "[PATCH v2 2/2] sched: and more", path="../../etc/cron.d/x")]
    for number, raw in enumerate(thread):
        (mails / f"{number}.eml").write_bytes(raw)
    run = lambda *args: subprocess.run([sys.executable, "-m", "triagebot.cli", *args],  # noqa: E731
                                       capture_output=True, text=True, cwd=PROJECT, timeout=300)
    assert run("ingest", "--db", str(database), str(mails)).returncode == 0
    planned = run("plan", REPORT_ID, "--db", str(database), "--rules", str(rules), "--host", "lab-local",
                  "--json", "--no-fetch")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    with SqliteStore(database) as store:
        store.start_triage(REPORT_ID, "#perf-triage")
        store.enqueue(REPORT_ID, "parent", "#perf-triage", {"text": "parent", "blocks": []})
        for state_name in ("planned", "running", "confirmed"):
            store.set_triage(REPORT_ID, state_name, plan=plan, host="lab-local")
        store.save_run(REPORT_ID, plan, {"host": "lab-local", "status": "done", "base_commit": shas[1],
                                         "suspect_commit": shas[2], "plan": plan, "samples": [],
                                         "verdict": {"outcome": "confirmed", "measured_change_percent": -40.0}})
    return rules, state, database, repo, shas


def test_the_newest_complete_series_is_queued_once_and_a_hostile_one_refused_with_nothing_run(confirmed) -> None:
    rules, state, database, repo, shas = confirmed
    lab = DaemonContext(settings=settings_for(rules), database=database, deliver=lambda: None)
    with SqliteStore(database) as store:
        [queued] = fix_testing.queue_fix_tests(store)
        assert fix_testing.queue_fix_tests(store) == []  # once per series
        [row] = store.fix_tests(REPORT_ID)
        assert (row.series_key, row.cause_id, row.status) == ("v2:v2-1@example.org", "v2-1@example.org", "queued")
        assert fix_testing.run_queued_fix_tests(store, lab) == [queued]
        [row] = store.fix_tests(REPORT_ID)
        assert row.status == "refused"
        # b4 itself drops the part that writes outside the tree and falls back to v1: what it would
        # apply is not the series queued (whose senders were looked at), so nothing is
        assert row.result["reason"] == ("refused: b4 picked <v1@example.org>, not one of the series' mails whose "
                                        "senders were looked at: not applied")
        replies = [item for item in store.outbox(message_id=REPORT_ID) if item.kind.startswith("test-fix-")]
        assert [(item.kind, item.payload["text"]) for item in replies] == [
            (f"test-fix-{queued}", render.escape(f"Fix test refused: {row.result['reason']}"))]  # Slack's mrkdwn
        assert [move.state for move in store.moves_of(REPORT_ID)] == []  # nothing was tested
        assert fix_testing.run_queued_fix_tests(store, lab) == []  # refused stays refused: posted once
    assert not (state / "running").exists()  # no kernel was switched to, no sample taken
    assert git(repo, "rev-list", "--all").split() == list(reversed(shas))  # nothing applied


def test_a_report_upstream_fixed_or_not_confirmed_gets_no_fix_test(confirmed) -> None:
    _, _, database, _, _ = confirmed
    with SqliteStore(database) as store:
        store.add_move(REPORT_ID, "fixed", "v1@example.org", "Fixes: in a commit")
        assert fix_testing.queue_fix_tests(store) == []  # fixed upstream: nothing left to test
    with SqliteStore(database) as store:
        store.database.execute("DELETE FROM lifecycle")
        store.set_triage(REPORT_ID, "planned", asked=True)  # a rerun asked for: no longer confirmed
        assert fix_testing.queue_fix_tests(store) == []


def test_the_daemon_reads_a_thread_again_only_when_it_gained_mail_or_a_test(confirmed, tmp_path: Path,
                                                                              monkeypatch) -> None:
    _, _, database, _, _ = confirmed
    reads: list[str] = []
    thread_patches = fix_testing.thread_patches
    monkeypatch.setattr(fix_testing, "thread_patches",
                        lambda store, message_id: reads.append(message_id) or thread_patches(store, message_id))
    looked: dict[str, tuple] = {}
    with SqliteStore(database) as store:
        [queued] = fix_testing.queue_fix_tests(store, looked)
        assert fix_testing.queue_fix_tests(store, looked) == []  # its series has a test now: read, nothing to queue
        assert fix_testing.queue_fix_tests(store, looked) == []  # nothing new in the thread: not read
        assert reads == [REPORT_ID, REPORT_ID]
    v3 = tmp_path / "v3.eml"
    v3.write_bytes(patch("v3@example.org", "[PATCH v3] sched: restore the factor"))
    ingested = subprocess.run([sys.executable, "-m", "triagebot.cli", "ingest", "--db", str(database), str(v3)],
                              capture_output=True, text=True, cwd=PROJECT, timeout=300)
    assert ingested.returncode == 0, ingested.stderr
    with SqliteStore(database) as store:
        [again] = fix_testing.queue_fix_tests(store, looked)  # the thread gained v3: read, and v3 queued
        assert again != queued and reads == [REPORT_ID] * 3
        assert store.fix_tests(REPORT_ID)[-1].series_key == "v3:v3@example.org"
