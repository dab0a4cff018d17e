"""triage test-fix end to end on the test lab: a confirmed rerun of a real git repository's slow
commit, a fix series posted in the thread as v1 then v2 (real git format-patch), b4 making v2
am-ready, the lab's build_patched hook applying it with real git am, real sysbench measuring
suspect against suspect+fix, and the result posted to the test Slack server's thread.

v2 of one series sets the commit's `lab-factor` back to 1.0 (it recovers the regression); v2 of
the other leaves it as it is (it does not).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.fake_slack import FakeSlack
from tests.support.fix_thread import REVIEWER, fix_thread
from tests.support.lab import FACTOR_FILE, HOOK, git, lab_path, make_bisect_repo, write_lab_rules
from triagebot.notify import outbox
from triagebot.notify.slack import SlackNotifier
from triagebot.store.sqlite import SqliteStore

LAB_REPORT = FIXTURES / "lab" / "sysbench-cpu-regression.eml"
MESSAGE_ID = "20240415071244.lab1@tberg-ws"
SLOW = 37
TOKEN, CHANNEL_ID = "xoxb-lab", "C0LAB"

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("git") and shutil.which("b4")),
                                reason="the lab needs sysbench, git and b4 (apt-get install sysbench git; "
                                       "pip install b4)")


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=1200)


def lab_with_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, v2_factor: str, ingest_thread: bool = True):
    repo = tmp_path / "linux"
    shas = make_bisect_repo(repo, 40, SLOW)
    v1, v2 = fix_thread(repo, shas[SLOW], MESSAGE_ID, v2_factor=v2_factor)
    rules, state = write_lab_rules(tmp_path, PROJECT, repo=repo)
    monkeypatch.setenv("PATH", lab_path(tmp_path))
    mails = tmp_path / "mails"
    mails.mkdir()
    thread = [LAB_REPORT.read_bytes(), *v1, *v2]
    for number, raw in enumerate(thread if ingest_thread else thread[:1]):
        (mails / f"{number:02}.eml").write_bytes(raw)
    database = tmp_path / "lab.db"
    assert triage("ingest", "--db", str(database), str(mails)).returncode == 0
    confirmed = triage("rerun", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--no-fetch",
                       "--base", shas[SLOW - 1], "--suspect", shas[SLOW], "--budget", "10", "--json")
    assert json.loads(confirmed.stdout)["verdict"]["outcome"] == "confirmed", confirmed.stderr
    with SqliteStore(database) as store:  # the daemon took the report on: its Slack thread
        store.start_triage(MESSAGE_ID, "#perf-triage")
        store.enqueue(MESSAGE_ID, "parent", "#perf-triage", {"text": "parent", "blocks": []})
    return rules, state, database, repo, shas, thread


def posted_replies(database: Path) -> list[str]:
    with SqliteStore(database) as store, FakeSlack(token=TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
        outbox.deliver(store, SlackNotifier(TOKEN, base_url=slack.base_url, timeout_seconds=5))
        return [message["text"] for message in slack.messages(CHANNEL_ID)
                if message.get("thread_ts") not in (None, message["ts"])]


def test_v2_that_removes_the_slowdown_recovers_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  public_inbox) -> None:
    # only the report is stored; the fix series is fetched from a real public-inbox server
    rules, state, database, repo, shas, thread = lab_with_fix(tmp_path, monkeypatch, "1.0", ingest_thread=False)
    server = public_inbox("linux-kernel", thread)
    try:
        result = triage("test-fix", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--json",
                        "--fetch", server.message_url(MESSAGE_ID))
    finally:
        subprocess.run([*HOOK, "stop", str(state)], check=False)
    assert result.returncode == 0, result.stderr
    fix = json.loads(result.stdout)
    assert "fetched 7 new messages of the thread" in result.stderr  # through the bounded lore client
    assert fix["version"] == 2 and f"Reviewed-by: {REVIEWER}" in fix["trailers"]
    # the kernel measured is the suspect with b4's v2 applied by the host's hook
    assert git(repo, "show", f"{fix['patched']}:{FACTOR_FILE}").strip() == "1.0"
    assert git(repo, "rev-parse", f"{fix['patched']}~2").strip() == shas[SLOW]
    # what the hook applied is b4's mbox: the trailers given in replies are in the commits
    applied = git(repo, "log", "--format=%B", f"{shas[SLOW]}..{fix['patched']}")
    assert f"Reviewed-by: {REVIEWER}" in applied and "Tested-by: Ben Tester <ben@example.org>" in applied
    recovery = fix["recovery"]
    assert recovery["call"] == "recovers" and 70 < recovery["recovered_percent"] < 130
    assert recovery["sentence"].startswith("the fix recovers ") and "of the regression (" in recovery["sentence"]
    assert "Tested-by: triagebot lab <triagebot@localhost>" in fix["draft"]
    assert fix["draft"].startswith("Subject: Re: [PATCH v2 0/2]")
    assert posted_replies(database) == [f"Fix test (v2): {recovery['sentence']}"]


def test_v2_that_leaves_the_slowdown_does_not_recover(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules, state, database, _, _, _ = lab_with_fix(tmp_path, monkeypatch, "0.60")  # the same factor, written anew
    try:
        result = triage("test-fix", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--json")
    finally:
        subprocess.run([*HOOK, "stop", str(state)], check=False)
    assert result.returncode == 0, result.stderr
    fix = json.loads(result.stdout)
    assert fix["recovery"]["call"] == "does not recover", fix["recovery"]["sentence"]
    assert fix["recovery"]["sentence"].startswith("the fix does not recover the regression")
    assert "Tested-by:" not in fix["draft"]  # no Tested-by for a fix that does not work
    assert posted_replies(database) == [f"Fix test (v2): {fix['recovery']['sentence']}"]
