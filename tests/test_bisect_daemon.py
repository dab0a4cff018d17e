"""The daemon bisects by itself a confirmed regression whose culprit is a merge: `triage daemon` as
a real process, a real public-inbox server, the test lab over a real git repository with a merged
branch, and the local Slack server.

The merged branch has 16 commits; from its 10th on, `lab-factor` is slow, so the merge is slower
than its first parent and the first bad commit is known. The report blames the merge; the daemon
confirms it, queues a bisection (the culprit is a merge), runs it on the lab host (whose
list_commits hook lists the merged commits: rev-list without --first-parent), stores every step
and posts one message with the first bad commit to the report's Slack thread. Which reports are
bisected at all is a pure rule, tested on records.
"""
from __future__ import annotations

import json
import re
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
    stop_daemon,
    wait_for,
)
from tests.support.lab import FACTOR_FILE, HOOK, SLOW_FACTOR, git, write_lab_rules
from tests.support.world import lab_world
from triagebot.bisect.flow import bisect_reason
from triagebot.records.report import Commit, Report, Source

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("git")),
                                reason="the lab needs sysbench and git (apt-get install sysbench git)")

REPORT_ID = "20240415071244.lab1@tberg-ws"
RESULT = re.compile(r"bisect-\d+")  # the bisection's one result reply (bisect-progress-N is its progress)
MERGE_SUBJECT = "Merge branch 'sched/wakeup' into main"


def report(*commits: Commit) -> Report:
    return Report(message_id="r@x", in_reply_to=None, subject="slower", from_="a@x", date=None,
                  source=Source("mbox"), kind="human-report", commits=commits)


@pytest.mark.parametrize("commits, reason", [
    # one culprit commit, its parent the base: nothing to bisect
    ((Commit("a" * 12, "sched: retune", "culprit"),), None),
    # a merge blamed: which of its commits?
    ((Commit("b" * 12, "Merge tag 'sched-core' of git://x", "culprit"),), f"the culprit {'b' * 12} is a merge"),
    # a base named: a range (the host says whether more than the culprit lies in it)
    ((Commit("c" * 12, None, "base"), Commit("d" * 12, "sched: retune", "culprit")),
     f"the report names a range, {'c' * 12}..{'d' * 12}"),
    # no culprit: nothing was confirmed against a commit
    ((Commit("e" * 12, None, "mentioned"),), None),
])
def test_which_confirmed_reports_are_bisected(commits, reason) -> None:
    found = bisect_reason(report(*commits))
    assert (found is None) if reason is None else found.startswith(reason)


def merge_repo(repo: Path, side: int, first_slow: int) -> tuple[str, list[str]]:
    """A main line of 4 commits, a branch of `side` commits off it (slow from `first_slow`, 0-based),
    merged back with --no-ff; (the merge's sha, the branch's shas)."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for number in range(4):
        (repo / FACTOR_FILE).write_text("1.0\n")
        (repo / "history.txt").open("a").write(f"main {number}\n")
        git(repo, "add", FACTOR_FILE, "history.txt")
        git(repo, "commit", "-q", "-m", f"main change {number}")
    git(repo, "checkout", "-q", "-b", "sched/wakeup")
    branch = []
    for number in range(side):
        (repo / FACTOR_FILE).write_text(f"{SLOW_FACTOR if number >= first_slow else 1.0}\n")
        (repo / "wakeup.txt").open("a").write(f"wakeup {number}\n")
        git(repo, "add", FACTOR_FILE, "wakeup.txt")
        git(repo, "commit", "-q", "-m", f"sched: wakeup change {number}")
        branch.append(git(repo, "rev-parse", "HEAD").strip())
    git(repo, "checkout", "-q", "main")
    (repo / "history.txt").open("a").write("main 4\n")
    git(repo, "commit", "-q", "-am", "main change 4")
    git(repo, "merge", "-q", "--no-ff", "-m", MERGE_SUBJECT, "sched/wakeup")
    return git(repo, "rev-parse", "HEAD").strip(), branch


def merge_lab(root: Path, commits: int = 16, slow: int = 9) -> tuple[str, list[str], tuple[Path, Path], bytes]:
    """A lab whose repository merges a branch of `commits` commits, slow from its `slow`-th on
    (counted from 0), listing the merged commits; and the lab's report naming the merge as its
    culprit, dated in 2099."""
    merge, branch = merge_repo(root / "linux", commits, slow)
    rules, state = write_lab_rules(root, PROJECT, repo=root / "linux")
    hosts = (rules / "hosts.toml").read_text()
    (rules / "hosts.toml").write_text(hosts.replace('"--first-parent", ', ""))  # list the merged commits
    raw = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes().replace(b" Apr 2024 ", b" Apr 2099 ")
    raw = raw.replace(b'c0ffee1234ab ("sched: retune the wakeup granularity for small machines")',
                      f'{merge[:12]} ("{MERGE_SUBJECT}")'.encode())
    assert merge[:12].encode() in raw
    return merge, branch, (rules, state), raw


def test_the_daemon_bisects_a_confirmed_merge_and_posts_the_first_bad_commit_once(tmp_path: Path) -> None:
    merge, branch, lab, raw = merge_lab(tmp_path, 16, 9)
    database, log = tmp_path / "daemon.db", tmp_path / "daemon.log"
    with lab_world(tmp_path, [raw], lab=lab, user_agent="triagebot-test (bisect daemon)") as world:
        slack, env = world.slack, world.env
        daemon = world.start_daemon(database, log)
        try:
            wait_for(lambda: final_state(slack.messages(CHANNEL_ID)) == "confirmed", 600, "the verdict", daemon, log)
            wait_for(lambda: [message for message in slack.messages(CHANNEL_ID)
                              if RESULT.fullmatch(kind_of(message))], 1500, "the bisection's reply", daemon, log)
            assert stop_daemon(daemon) == 0
        finally:
            if daemon.poll() is None:
                stop_daemon(daemon, signal.SIGKILL)
            subprocess.run([*HOOK, "stop", str(world.state)], check=False)
        messages = slack.messages(CHANNEL_ID)
    parent = next(message for message in messages if kind_of(message) == "parent")
    replies = [message for message in messages if RESULT.fullmatch(kind_of(message))]
    assert len(replies) == 1 and replies[0]["thread_ts"] == parent["ts"]
    # and its one progress message in the thread, edited in place, never a post a sample
    [progress] = [message for message in messages if kind_of(message).startswith("bisect-progress-")]
    assert progress["thread_ts"] == parent["ts"] and progress["text"].startswith("Bisect ended: ")
    assert replies[0]["text"].startswith(f"Bisect: first bad commit {branch[9]} (")
    show = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", "--db", str(database), REPORT_ID],
                          capture_output=True, text=True, cwd=PROJECT, env=env)
    assert show.returncode == 0, show.stderr
    assert f"  bisect 1 on lab-local: first bad commit {branch[9]}" in show.stdout
    first_parent = git(tmp_path / "linux", "rev-parse", f"{merge}^").strip()
    assert f"git bisect start {merge} {first_parent}" in show.stdout  # good: the merge's first parent, by sha
    assert f"# good {merge[:12]}^ is {first_parent}" in show.stdout
    with sqlite3.connect(database) as connection:
        (stored,) = connection.execute("SELECT bisect_json FROM bisects").fetchone()
    result = json.loads(stored)
    assert result["status"] == "found" and result["queued_by"] == "daemon"
    # it built the host's own commits, no code from mail: the decision fix tests ask (rules/trust.py)
    assert result["code"] == "no code from mail: the lab's own tree"
    assert result["commits"] == 17  # the branch's 16 and the merge
    assert all(step["attempts"] and step["attempts"][-1]["verdict"] for step in result["steps"])
    assert len(result["steps"]) <= 6  # the ends checked, then at most ceil(log2(17)) steps
