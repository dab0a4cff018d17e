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
        # one message per result, one progress message, and its edits coalesced while pending: one
        assert [row.kind for row in rows] == ["bisect-progress-1", "bisect-1"]
        assert [row.kind for row in store.outbox(message_id=MESSAGE_ID) if row.kind.startswith("edit-")] == [
            "edit-bisect-progress-1-1"]
        with FakeSlack(token=TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
            delivered = outbox.deliver(store, SlackNotifier(TOKEN, base_url=slack.base_url, timeout_seconds=5))
            assert delivered.sent == 4 and outbox.deliver(store, SlackNotifier(
                TOKEN, base_url=slack.base_url, timeout_seconds=5)).sent == 0
            posted = [message["text"] for message in slack.messages(CHANNEL_ID)
                      if message.get("thread_ts") not in (None, message["ts"])]  # replies in the thread
            edits = slack.calls_to("chat.update")
    assert len(posted) == 2 and posted[1].startswith(f"Bisect: first bad commit {shas[FIRST_SLOW]} (−")
    assert posted[1].endswith(f"good to bad; {len(result['steps'])} steps, {result['runs_used']} runs)")
    # the progress message, edited in place to its end: no post a sample
    assert posted[0].startswith(f"Bisect ended: {len(result['steps'])} steps, {result['runs_used']} runs: first bad")
    assert len(edits) == 1
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


# --- issue 36, finding 6: an estimate before it starts, progress a sample while it runs ----------

HISTORY_REPORT = FIXTURES / "mail" / "lkp" / "improvement-2024.eml"
HISTORY_ID = "202407081422.9d3e6b57-oliver.sang@intel.com"


def store_history(database: Path, run_seconds: float) -> None:
    """A rerun of another report on lab-local as the host's history: each sample `run_seconds` of
    wall time, 1 s of it the benchmark (the rest its kernel switch)."""
    from datetime import UTC, datetime, timedelta

    assert triage("ingest", "--db", str(database), str(HISTORY_REPORT)).returncode == 0
    start = datetime(2026, 1, 1, tzinfo=UTC)
    samples = [{"role": "base" if index % 2 == 0 else "suspect", "commit": "x", "value": 1.0, "seconds": 1.0,
                "started_at": (start + timedelta(seconds=index * run_seconds)).isoformat(),
                "finished_at": (start + timedelta(seconds=(index + 1) * run_seconds)).isoformat()}
               for index in range(12)]
    with SqliteStore(database) as store:
        store.save_run(HISTORY_ID, {"kind": "plan"}, {"host": "lab-local", "status": "done", "samples": samples})


def test_a_bisection_likely_over_its_hours_is_refused_before_any_run(lab) -> None:
    rules, _, database, shas = lab
    store_history(database, run_seconds=600.0)  # ten minutes a run on this host
    status, stderr = bisect_refused(rules, database, shas[0], shas[63], "--max-hours", "2")
    assert status == 1
    assert "estimate: 63 commits, 7 steps (the check of the ends, then ~log2 63 = 6)" in stderr
    assert "  time a run: 10 min switch (build, boot) + 1 s sample, the medians of 12 samples on lab-local" in stderr
    assert stderr.strip().endswith(f"{MESSAGE_ID}: not started: it likely takes 16.3 h, more than the 2.0 h "
                                   "--max-hours allows (raise --max-hours/--max-runs, or give a narrower --good/--bad)")
    with SqliteStore(database) as store:
        assert store.bisects(MESSAGE_ID) == []  # nothing run, nothing stored


def bisect_refused(rules: Path, database: Path, good: str, bad: str, *options: str) -> tuple[int, str]:
    result = triage("bisect", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--no-fetch",
                    "--good", good, "--bad", bad, *options)
    return result.returncode, result.stderr


def test_at_a_terminal_it_asks_then_says_each_sample_and_the_log_resolves_the_tag(lab) -> None:
    import os
    import pty

    from tests.support.lab import git

    rules, _, database, shas = lab
    git(rules.parent / "linux", "tag", "v1.0", shas[35])
    store_history(database, run_seconds=600.0)
    leader, follower = pty.openpty()
    printed = rules.parent / "bisect.json"  # a file, not a pipe: a pipe left full would stop it mid-way
    with printed.open("wb") as stdout:
        process = subprocess.Popen(
            [sys.executable, "-m", "triagebot.cli", "bisect", MESSAGE_ID, "--db", str(database), "--rules",
             str(rules), "--no-fetch", "--good", "v1.0", "--bad", shas[39], "--rounds", "6", "--attempts", "1",
             "--max-hours", "1", "--json"], stdin=follower, stderr=follower, stdout=stdout)
    os.close(follower)
    shown, answered = b"", False
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        shown += chunk
        if not answered and b"Start it anyway? [y/N] " in shown:
            os.write(leader, b"y\n")
            answered = True
    os.close(leader)
    assert process.wait(timeout=60) == 0, shown.decode(errors="replace")
    out = printed.read_bytes()
    text = shown.decode().replace("\r\n", "\n")
    assert "triage bisect: it likely takes 6.0 h, more than the 60 min --max-hours allows.\nStart it anyway? [y/N] y" \
        in text
    result = json.loads(out)
    assert result["status"] == "found" and result["first_bad"] == shas[FIRST_SLOW]
    # one line a sample, on the terminal: the step of the likely steps, the sample, the times
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("bisect: step ")]
    assert len(lines) == result["runs_used"] and result["runs_used"] == 12 * len(result["steps"])
    assert lines[0].startswith("bisect: step 1 of ~3, sample 1, ") and "left" in lines[0]
    assert lines[12].startswith("bisect: step 2 of ~3, sample 1, ")
    # the log names the tag's commit, and which name it was
    shown_log = triage("show", "--db", str(database), MESSAGE_ID).stdout
    assert f"git bisect start {shas[39]} {shas[35]}" in shown_log and f"# good v1.0 is {shas[35]}" in shown_log
    # the stored bisection kept its estimate and its last progress: the web page shows them
    with SqliteStore(database) as store:
        [stored] = store.bisects(MESSAGE_ID)
        assert stored["progress"]["runs"] == result["runs_used"] and stored["estimate"]["steps"] == 3
        running = {key: value for key, value in stored.items() if key != "bisect_id"} | {"status": "running"}
        store.save_bisect(MESSAGE_ID, running)  # as a crash would leave one, mid-way
    html = web_page(database)
    assert "bisect 1</strong> on <strong>lab-local</strong>: <span class=\"state state-found\">found</span> first " \
           f"bad commit {shas[FIRST_SLOW]}" in html
    assert f"<p class=\"progress\">{stored['progress']['line']}</p>" in html  # the running one: where it is
    assert "estimate: 4 commits, 3 steps" in html


def web_page(database: Path) -> str:
    import urllib.request

    from triagebot.web.app import build_app
    from triagebot.web.server import WebServer
    from triagebot.web.views import Site, report_href

    server = WebServer(build_app(Site(lambda: SqliteStore(database))), "127.0.0.1", 0).start()
    try:
        with urllib.request.urlopen(server.url + report_href(MESSAGE_ID), timeout=60) as answer:
            return answer.read().decode()
    finally:
        server.stop()
