"""The daemon tests a fix by itself on a host marked `untrusted_code = true` (and on no other: the
last case): `triage daemon` as a real process, a real public-inbox server, the test lab over a
real git repository, and the local Slack server.

A report whose culprit is the lab repository's slow commit is posted; the daemon confirms it.
Then a fix series arrives in its thread, v1 and v2 at once (real git format-patch, trailers given
in replies): no command is typed, and the daemon queues v2 (never v1), has b4 make it am-ready,
the host's build_patched hook apply it with real git am, and real sysbench measure suspect
against suspect+fix. The result is stored (`triage show`), posted once to the report's Slack
thread, and the report moves to fix-tested, its Slack parent edited. In the first case the
daemon is killed with SIGKILL while the fix's samples are being taken and started again: the
test starts over and still ends in exactly one message.
"""
from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.daemon_run import (
    CHANNEL_ID,
    final_state,
    kind_of,
    log_events,
    stop_daemon,
    wait_for,
)
from tests.support.fake_slack import FakeSlack
from tests.support.fix_thread import REVIEWER, TESTER, fix_thread
from tests.support.lab import FACTOR_FILE, HOOK, git, make_bisect_repo, write_lab_rules
from tests.support.public_inbox import require_public_inbox
from tests.support.world import lab_world

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("git") and shutil.which("b4")),
                                reason="the lab needs sysbench, git and b4 (apt-get install sysbench git; "
                                       "pip install b4)")

REPORT_ID = "20240415071244.lab1@tberg-ws"
SLOW = 37  # the repository's first slow commit: the report's culprit


def in_2099(raw: bytes) -> bytes:
    """Dated in 2099: within the admission window, and newest in the list's feed, in order."""
    return raw.replace(b" Apr 2024 ", b" Apr 2099 ")


def the_lab(root: Path, v2_factor: str, untrusted_code: bool = True):
    """The lab over a real repository, the report and the series; its host marked untrusted_code
    (a disposable machine: the daemon builds any sender's series there by itself) unless not."""
    repo = root / "linux"
    shas = make_bisect_repo(repo, 40, SLOW)
    report = in_2099((FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()).replace(
        b"c0ffee1234ab", shas[SLOW][:12].encode())  # the culprit is the repository's slow commit
    v1, v2 = fix_thread(repo, shas[SLOW], REPORT_ID, v2_factor=v2_factor)
    rules, state = write_lab_rules(root, PROJECT, "untrusted_code = true" if untrusted_code else "", repo=repo)
    return repo, shas, report, [in_2099(raw) for raw in (*v1, *v2)], rules, state


def rows(database: Path, sql: str) -> list[tuple]:
    try:
        with sqlite3.connect(database) as connection:
            return connection.execute(sql).fetchall()
    except sqlite3.Error:  # not created yet, or busy a moment
        return []


def fix_replies(slack: FakeSlack) -> list[dict]:
    return [message for message in slack.messages(CHANNEL_ID) if kind_of(message).startswith("test-fix-")]


@pytest.mark.parametrize("v2_factor, call, kill", [
    # v2 sets the slow commit's factor back to 1.0: it recovers; a SIGKILL mid-test changes nothing
    ("1.0", "recovers", True),
    # v2 writes the same slow factor anew: it does not
    ("0.60", "does not recover", False),
])
def test_the_daemon_tests_v2_of_a_fix_series_posted_in_a_confirmed_thread(tmp_path: Path, v2_factor: str,
                                                                          call: str, kill: bool) -> None:
    require_public_inbox()
    repo, shas, report, series, rules, state = the_lab(tmp_path, v2_factor)
    database, log = tmp_path / "daemon.db", tmp_path / "daemon.log"
    with lab_world(tmp_path, [report], lab=(rules, state), user_agent="triagebot-test (fix daemon tests)") as world:
        server, slack, env = world.server, world.slack, world.env
        daemon = world.start_daemon(database, log)
        try:
            wait_for(lambda: final_state(slack.messages(CHANNEL_ID)) == "confirmed", 600, "the verdict", daemon, log)
            server.bulk_add(series)  # v1 and v2 with their trailers, in the thread at once
            if kill:
                wait_for(lambda: rows(database, "SELECT status FROM fix_tests") == [("running",)]
                         and any(item.get("event") == "fix.queued" for item in log_events(log)), 300,
                         "the fix test to start", daemon, log)
                wait_for(lambda: (tmp_path / "lab-state" / "running").exists()
                         and (tmp_path / "lab-state" / "running").read_text().strip() not in shas, 300,
                         "the patched kernel to run", daemon, log)
                stop_daemon(daemon, signal.SIGKILL)
                assert not fix_replies(slack)  # killed before the result
                daemon = world.start_daemon(database, log)
            wait_for(lambda: fix_replies(slack), 900, "the fix test's reply", daemon, log)
            wait_for(lambda: "*fix-tested*" in json.dumps(next(message.get("blocks") for message
                                                               in slack.messages(CHANNEL_ID)
                                                               if kind_of(message) == "parent")),
                     60, "the parent's edit", daemon, log)
            assert stop_daemon(daemon) == 0
        finally:
            if daemon.poll() is None:
                stop_daemon(daemon, signal.SIGKILL)
            subprocess.run([*HOOK, "stop", str(state)], check=False)
        replies = fix_replies(slack)
        parent = next(message for message in slack.messages(CHANNEL_ID) if kind_of(message) == "parent")
    stored = rows(database, "SELECT series_key, status, cause_id, result_json FROM fix_tests")
    assert len(stored) == 1, stored  # v2 only: v1 was never tested
    series_key, status, cause_id, result_json = stored[0]
    result = json.loads(result_json)
    assert status == "done" and series_key.startswith("v2:") and result["version"] == 2
    assert cause_id.startswith("cover.")  # v2's cover letter, as git format-patch names it
    assert result["recovery"]["call"] == call, result["recovery"]["sentence"]
    # exactly one message for the result, in the report's thread, saying the call
    assert len(replies) == 1 and replies[0]["thread_ts"] == parent["ts"]
    assert replies[0]["text"] == f"Fix test (v2): {result['recovery']['sentence']}"
    assert "Drafted reply (not sent)" in json.dumps(replies[0]["blocks"])
    # the kernel measured is the suspect with b4's v2 mbox applied by the host's hook: v2's patches
    # and the trailers the replies gave
    patched = result["patched"]
    assert git(repo, "rev-parse", f"{patched}~2").strip() == shas[SLOW]
    assert git(repo, "show", f"{patched}:{FACTOR_FILE}").strip() == v2_factor
    applied = git(repo, "log", "--format=%s%n%b", f"{shas[SLOW]}..{patched}")
    assert "sched: restore the wakeup granularity on small machines" in applied
    assert f"Reviewed-by: {REVIEWER}" in applied and f"Tested-by: {TESTER}" in applied
    assert result["trailers"].count(f"Reviewed-by: {REVIEWER}") >= 1
    # the drafted reply: Tested-by only for a fix that recovers; stored, never sent
    assert result["draft"].startswith("Subject: Re: [PATCH v2 0/2]")
    assert ("Tested-by: triagebot lab <triagebot@localhost>" in result["draft"]) == (call == "recovers")
    # the lifecycle: fix-tested, caused by v2's cover letter; the one parent edited
    assert ("fix-tested", cause_id) in rows(database, "SELECT state, cause_id FROM lifecycle")
    assert parent["edited"] and ":test_tube: *fix-tested*" in json.dumps(parent["blocks"])
    show = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", "--db", str(database), REPORT_ID],
                          capture_output=True, text=True, cwd=PROJECT, env=env)
    assert show.returncode == 0, show.stderr
    assert "fix test 1 (v2, done, " in show.stdout and result["recovery"]["sentence"] in show.stdout
    assert ("fix-tested    lab       v2 on lab-local, by the daemon: host lab-local is marked untrusted_code = true: "
            in show.stdout) and f"<{cause_id}>" in show.stdout
    assert "    built by the daemon: host lab-local is marked untrusted_code = true\n" in show.stdout
    if kill:
        assert any(item.get("event") == "fix.resumed" for item in log_events(log))


def test_the_daemon_builds_no_series_on_a_host_not_marked_untrusted_code(tmp_path: Path) -> None:
    # the series' sender (lab@example.org, as git format-patch wrote it) is on no trust list and the
    # host is no disposable one: the daemon applies nothing, says once that it waits for a person
    repo, shas, report, series, rules, state = the_lab(tmp_path, "1.0", untrusted_code=False)
    database, log = tmp_path / "daemon.db", tmp_path / "daemon.log"
    with lab_world(tmp_path, [report], lab=(rules, state), user_agent="triagebot-test (fix daemon tests)") as world:
        server, slack = world.server, world.slack
        daemon = world.start_daemon(database, log)
        try:
            wait_for(lambda: final_state(slack.messages(CHANNEL_ID)) == "confirmed", 600, "the verdict", daemon, log)
            server.bulk_add(series)
            wait_for(lambda: rows(database, "SELECT status FROM fix_tests") == [("waiting",)], 300,
                     "the series to wait for a person", daemon, log)
            wait_for(lambda: any(kind_of(message).startswith("test-fix-waiting-")
                                 for message in slack.messages(CHANNEL_ID)), 120, "the note in the thread", daemon, log)
            assert stop_daemon(daemon) == 0
        finally:
            if daemon.poll() is None:
                stop_daemon(daemon, signal.SIGKILL)
            subprocess.run([*HOOK, "stop", str(state)], check=False)
        notes = [message["text"] for message in slack.messages(CHANNEL_ID)
                 if kind_of(message).startswith("test-fix-")]
    assert notes == [f"Fix series v2 not built: waiting for a person: lab@example.org is not on the trust list "
                     f"(rules/trust.toml) and host lab-local is not marked untrusted_code = true. A person may test "
                     f"it: the Test fix button, or `triage test-fix {REPORT_ID}`."]
    # the last kernel the lab ran is one of the repository's own: no patched kernel was built or booted
    running = (state / "running").read_text().strip()
    assert running and any(sha.startswith(running) for sha in shas)
    assert ("fix-tested",) not in rows(database, "SELECT state FROM lifecycle")  # proposed, never tested
