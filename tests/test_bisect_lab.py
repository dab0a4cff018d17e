"""triage bisect end to end on the test lab: a real git repository of 64 commits, the lab's switch
hook reading each commit's `lab-factor` with git, real sysbench behind the lab's shim.

Commits from FIRST_SLOW on do each event's work slower by construction (tests/support/lab.py), so
the first bad commit is known. The bisection must find it in at most 7 steps with every step's
verdict stored, post one message to the report's Slack thread (the test Slack server), retry a
step when the noise is raised and never guess, and end inconclusive with the range left when its
budget is small.
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
from tests.support.lab import HOOK, lab_path, make_bisect_repo, write_lab_rules
from triagebot.notify import outbox
from triagebot.notify.slack import SlackNotifier
from triagebot.store.sqlite import SqliteStore

LAB_REPORT = FIXTURES / "lab" / "sysbench-cpu-regression.eml"
MESSAGE_ID = "20240415071244.lab1@tberg-ws"
FIRST_SLOW = 37  # the first bad commit's number among the 64
TOKEN, CHANNEL_ID = "xoxb-lab", "C0LAB"

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("git")),
                                reason="the lab needs sysbench and git (apt-get install sysbench git)")


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=1800)


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    shas = make_bisect_repo(tmp_path / "linux", 64, FIRST_SLOW)
    rules, state = write_lab_rules(tmp_path, PROJECT, repo=tmp_path / "linux")
    monkeypatch.setenv("PATH", lab_path(tmp_path))
    database = tmp_path / "lab.db"
    assert triage("ingest", "--db", str(database), str(LAB_REPORT)).returncode == 0
    yield rules, state, database, shas
    subprocess.run([*HOOK, "stop", str(state)], check=False)


def bisect(rules: Path, database: Path, good: str, bad: str, *options: str) -> tuple[int, dict, str]:
    result = triage("bisect", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--no-fetch",
                    "--good", good, "--bad", bad, "--json", *options)
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout), result.stderr


def truth(shas: list[str], commit: str) -> str:
    return "bad" if shas.index(commit) >= FIRST_SLOW else "good"


def test_the_first_bad_of_64_commits_in_seven_steps_stored_shown_and_posted_once(lab) -> None:
    rules, _, database, shas = lab
    with SqliteStore(database) as store:  # the daemon took the report on: its Slack thread's parent
        store.start_triage(MESSAGE_ID, "#perf-triage")
        store.enqueue(MESSAGE_ID, "parent", "#perf-triage", {"text": "parent", "blocks": []})
    status, result, stderr = bisect(rules, database, shas[0], shas[63], "--rounds", "6", "--attempts", "1")
    assert status == 0, stderr
    assert result["status"] == "found" and result["first_bad"] == shas[FIRST_SLOW]
    assert len(result["steps"]) <= 7 and result["commits"] == 63
    for step in result["steps"]:  # every step decided by its verdict, on the commit asked for
        verdict = step["attempts"][-1]["verdict"]
        assert verdict["outcome"] in ("confirmed", "not-reproduced")
        assert step["call"] == truth(shas, step["suspect"])
        assert all(sample["running_kernel"] == sample["commit"] for sample in step["attempts"][-1]["samples"])
    with SqliteStore(database) as store:
        stored = store.bisects(MESSAGE_ID)
        rows = [row for row in store.outbox(message_id=MESSAGE_ID) if row.kind.startswith("bisect-")]
        assert [item["steps"] for item in stored] == [result["steps"]]  # every step's verdict, stored
        assert len(rows) == 1  # one message per result
        with FakeSlack(token=TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
            delivered = outbox.deliver(store, SlackNotifier(TOKEN, base_url=slack.base_url, timeout_seconds=5))
            assert delivered.sent == 2 and outbox.deliver(store, SlackNotifier(
                TOKEN, base_url=slack.base_url, timeout_seconds=5)).sent == 0
            posted = [message["text"] for message in slack.messages(CHANNEL_ID)
                      if message.get("thread_ts") not in (None, message["ts"])]  # replies in the thread
    assert len(posted) == 1 and posted[0].startswith(f"Bisect: first bad commit {shas[FIRST_SLOW]} (−")
    assert posted[0].endswith(f"good to bad; {len(result['steps'])} steps, {result['runs_used']} runs)")
    shown = triage("show", "--db", str(database), MESSAGE_ID).stdout
    assert f"# first bad commit: {shas[FIRST_SLOW]}" in shown
    assert f"git bisect start {shas[63]} {shas[0]}" in shown


def test_with_noise_raised_a_step_is_retried_never_guessed(lab) -> None:
    rules, state, database, shas = lab
    subprocess.run([*HOOK, "noise", str(state), "0.5", "11"], check=True)  # each run x a log-normal(0, 0.5)
    status, result, stderr = bisect(rules, database, shas[35], shas[39], "--rounds", "6", "--attempts", "2",
                                    "--max-runs", "80")
    assert any(len(step["attempts"]) > 1 for step in result["steps"]), stderr  # retried with more runs
    for step in result["steps"]:
        for attempt in step["attempts"][:-1]:  # an attempt before the last: undecided, so retried
            assert attempt["verdict"]["outcome"] == "inconclusive"
        assert len(step["attempts"]) == 1 or step["attempts"][1]["rounds"] == [12]
        if step["call"] is not None:  # a call only from a decided verdict, and never a wrong one
            assert step["attempts"][-1]["verdict"]["outcome"] in ("confirmed", "not-reproduced")
            assert step["call"] == truth(shas, step["suspect"])
    if result["status"] == "found":
        assert status == 0 and result["first_bad"] == shas[FIRST_SLOW]
    else:  # not guessed: inconclusive, the range left still holds the first bad commit
        assert status == 1 and result["status"] == "inconclusive" and result["first_bad"] is None
        low, high = (shas.index(commit) for commit in result["range"])
        assert low < FIRST_SLOW <= high and result["steps"][-1]["call"] is None


def test_a_small_budget_ends_it_inconclusive_with_the_range_left(lab) -> None:
    rules, _, database, shas = lab
    status, result, _ = bisect(rules, database, shas[0], shas[63], "--rounds", "6", "--attempts", "1",
                               "--max-runs", "36")
    assert status == 1 and result["status"] == "inconclusive" and result["runs_used"] <= 36
    assert result["reason"] == "budget: step 4 attempt 1 may take 12 runs; 0 of 36 are left"
    low, high = (shas.index(commit) for commit in result["range"])
    assert (low, high) == (31, 47) and result["left"] == 16  # two steps taken: 31 good, 47 bad
    shown = triage("show", "--db", str(database), MESSAGE_ID).stdout
    assert f"# range left: {shas[31]}..{shas[47]} (16 commits)" in shown
