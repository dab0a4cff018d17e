"""Watched git trees: a fix or a revert of a report's culprit landing in a tree rules/trees.toml
names moves the report, with the commit that caused it; against a real `git daemon` on
127.0.0.1, with commits carrying the trailers; a hostile tree is bounded and its failure its own."""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.fake_slack import FakeSlack
from tests.support.git_server import ServedTree, git_daemon, git_daemon_missing, silent_server
from tests.support.report_mail import CHANNEL, REPORT, store_mail, take_on
from triagebot.errors import RulesError
from triagebot.lifecycle import watch
from triagebot.lifecycle.git_tree import GitTree, parse_commit_object
from triagebot.notify import outbox
from triagebot.notify.slack import SlackNotifier
from triagebot.rules.loader import parse_text
from triagebot.rules.trees import TreeBounds, TreeRules, WatchedTree, tree_rules_from, trees_from
from triagebot.store.sqlite import SqliteStore

pytestmark = pytest.mark.skipif(git_daemon_missing() is not None, reason=str(git_daemon_missing()))

TOKEN = "xoxb-trees"
CULPRIT = "5c3f9e2a71d04b8e6a9f0c13d2b7e4a58f61c902"
CULPRIT_SUBJECT = "sched/fair: scan fewer groups when the LLC is busy"
LANDED = datetime(2025, 1, 20, 9, 0, tzinfo=UTC)
NOW = datetime(2025, 2, 1, tzinfo=UTC)
FIX = ("sched/fair: stop the LLC scan at the first idle group again\n\n"
       "The scan of busy groups gave up too late on large LLCs.\n\n"
       f"Fixes: 5c3f9e2a71d0 (\"{CULPRIT_SUBJECT}\")\n"
       f"Closes: https://lore.kernel.org/oe-lkp/{REPORT}\n"
       "Signed-off-by: Mara Quist <mara.quist@example.org>\n")
REVERT = (f"Revert \"{CULPRIT_SUBJECT}\"\n\nThis reverts commit {CULPRIT}.\n\n"
          "hackbench lost 11% on two-socket machines.\n\nSigned-off-by: P Z <pz@example.org>\n")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServedTree, str]]:
    base = tmp_path / "served"
    base.mkdir()
    tree = ServedTree(base, "mainline")
    tree.commit("init: the tree's first commit\n", when=LANDED - timedelta(days=3))
    with git_daemon(base) as url:
        yield tree, url + "mainline.git"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path / "state" / "t.db") as opened:
        store_mail(opened, "lkp-first-linux-next")
        take_on(opened)
        yield opened


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}) as server:
        yield server


def tree_of(url: str, name: str = "mainline", **bounds) -> WatchedTree:
    return WatchedTree(name, url, "master", TreeBounds(**bounds))


def state_dir(store: SqliteStore) -> Path:
    return Path(store.path).parent


def deliver(store: SqliteStore, slack: FakeSlack) -> outbox.Delivery:
    return outbox.deliver(store, SlackNotifier(TOKEN, base_url=slack.base_url, timeout_seconds=5))


def test_a_fix_commit_moves_the_report_to_fixed_with_its_commit_and_edits_the_parent(
        served, store: SqliteStore, slack: FakeSlack) -> None:
    tree, url = served
    deliver(store, slack)
    [parent] = slack.messages(CHANNEL)
    _other, fix = tree.commit("mm: an unrelated change\n\nSigned-off-by: X <x@example.org>\n", FIX, when=LANDED)
    [result] = watch.watch_trees(store, [tree_of(url)], state_dir(store), NOW)
    assert result.error is None and result.fetched and result.read == 3  # the first commit too
    [move] = result.moves
    assert (move.state, move.cause_id) == ("fixed", f"commit:mainline:{fix}")
    assert move.note == ("Fixes: 5c3f9e2a71d0 in sched/fair: stop the LLC scan at the first idle group again "
                         f"(commit {fix[:12]} in mainline)")
    # the mirror is a bare repository under the state folder, one per tree
    assert (state_dir(store) / "trees" / "mainline.git" / "HEAD").is_file()
    # one parent, edited
    assert deliver(store, slack).sent == 1
    assert [message["ts"] for message in slack.messages(CHANNEL)] == [parent["ts"]]
    [update] = slack.calls_to("chat.update")
    assert update.params["ts"] == parent["ts"] and f"commit {fix[:12]} in mainline" in str(update.params["blocks"])
    # triage show names the commit
    shown = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", REPORT, "--db", str(store.path)],
                           capture_output=True, text=True, cwd=PROJECT, check=True).stdout
    assert "  after:    fixed" in shown
    assert f"fixed         in mainline Fixes: 5c3f9e2a71d0 in sched/fair: stop the LLC scan at the first idle group " \
           f"again (commit {fix[:12]} in mainline) commit {fix} in mainline" in shown
    # the next pass: not due yet, nothing read again, nothing moved twice
    [again] = watch.watch_trees(store, [tree_of(url)], state_dir(store), NOW + timedelta(minutes=5))
    assert (again.fetched, again.read, again.moves) == (False, 0, ())


def test_a_revert_of_the_culprit_moves_it_to_reverted(served, store: SqliteStore) -> None:
    tree, url = served
    [revert] = tree.commit(REVERT, when=LANDED)
    [result] = watch.watch_trees(store, [tree_of(url)], state_dir(store), NOW)
    assert [(move.state, move.cause_id) for move in result.moves] == [("reverted", f"commit:mainline:{revert}")]
    assert result.moves[0].note.startswith(f"revert of 5c3f9e2a71d0: Revert \"{CULPRIT_SUBJECT}\"")


def test_a_commit_closing_the_report_fixes_it_without_a_fixes_trailer(served, store: SqliteStore) -> None:
    tree, url = served
    [commit] = tree.commit("sched/fair: bound the scan\n\nBound it.\n\n"
                           f"Link: https://lore.kernel.org/all/{REPORT}/\nSigned-off-by: A <a@example.org>\n",
                           when=LANDED)
    [result] = watch.watch_trees(store, [tree_of(url)], state_dir(store), NOW)
    assert [(move.state, move.note) for move in result.moves] == [
        ("fixed", f"Link: the report, in sched/fair: bound the scan (commit {commit[:12]} in mainline)")]


def test_new_commits_are_read_from_the_cursor_on_the_tree_s_interval_a_bounded_number_a_pass(
        served, store: SqliteStore) -> None:
    tree, url = served
    watched = tree_of(url, every_minutes=60, commits_per_pass=2)
    # first pass: the tree's one commit, nothing to move
    [first] = watch.watch_trees(store, [watched], state_dir(store), NOW)
    assert (first.fetched, first.read, first.moves) == (True, 1, ())
    shas = tree.commit("a: one\n", "b: two\n", "c: three\n", "d: four\n", FIX, when=LANDED + timedelta(days=1))
    # not due: the new commits are not fetched yet
    assert watch.watch_trees(store, [watched], state_dir(store), NOW + timedelta(minutes=30))[0].read == 0
    later = NOW + timedelta(hours=1)
    passes = [watch.watch_trees(store, [watched], state_dir(store), later + timedelta(seconds=step))[0]
              for step in range(4)]
    # 5 new commits, 2 a pass, oldest first; the fix on the third pass; a fourth has nothing left
    assert [(item.fetched, item.read) for item in passes] == [(True, 2), (False, 2), (False, 1), (False, 0)]
    assert [len(item.moves) for item in passes] == [0, 0, 1, 0]
    assert passes[2].moves[0].cause_id == f"commit:mainline:{shas[-1]}"
    state = watch.tree_state(store, "mainline")
    assert state["last_commit"] == shas[-1] and state["outcome"] == "ok" and state["walked"] == 0


def test_the_first_fetch_goes_back_first_days_only(served, store: SqliteStore) -> None:
    tree, url = served
    tree.commit(FIX, when=datetime(2024, 6, 1, tzinfo=UTC))  # a fix long before: beyond the window
    tree.commit("x: recent\n", when=LANDED)
    [result] = watch.watch_trees(store, [tree_of(url, first_days=30)], state_dir(store), NOW)
    assert result.error is None and result.read == 1 and result.moves == ()


def test_a_huge_commit_message_is_read_only_message_kib_far(served, store: SqliteStore) -> None:
    tree, url = served
    huge = ("mm: a long story\n\n" + "word " * 2_000_000 + f"\nFixes: {CULPRIT[:12]}\n").encode()  # ~10 MB
    [big] = tree.commit(huge, when=LANDED)
    watched = tree_of(url, message_kib=64)
    reader = GitTree(watched, state_dir(store))
    reader.fetch(NOW - timedelta(days=30))
    assert reader.start_walk()
    commits = reader.commits(0, 10)
    read = next(commit for commit in commits if commit.sha == big)
    assert read.cut and len(read.message.encode()) <= 64 * 1024 and read.message.startswith("mm: a long story")
    # the trailer past the bound is not seen: no move, and the tree's pass ends well
    [result] = watch.watch_trees(store, [watched], state_dir(store), NOW)
    assert result.error is None and result.moves == ()


def test_thousands_of_commits_are_read_a_bounded_number_a_pass(served, store: SqliteStore) -> None:
    tree, url = served
    tree.commit(*[f"drivers: change {number}\n" for number in range(3000)], when=LANDED)
    watched = tree_of(url, commits_per_pass=1000)
    reads = [watch.watch_trees(store, [watched], state_dir(store), NOW + timedelta(seconds=step))[0].read
             for step in range(5)]
    assert reads == [1000, 1000, 1000, 1, 0]


def test_a_failing_tree_is_reported_and_the_other_trees_go_on(served, store: SqliteStore, tmp_path: Path) -> None:
    tree, url = served
    tree.commit(FIX, when=LANDED)
    missing = tree_of(url.replace("mainline.git", "gone.git"), name="gone")
    [failed, watched] = watch.watch_trees(store, [missing, tree_of(url)], state_dir(store), NOW)
    assert failed.error is not None and failed.error.startswith("tree gone: git fetch git://127.0.0.1:")
    assert "gone.git master failed" in failed.error
    assert "failed (exit 128)" in failed.error and "\n" not in failed.error
    assert watch.tree_state(store, "gone")["outcome"] == "error"
    assert [move.state for move in watched.moves] == ["fixed"]


def test_a_fetch_that_hangs_is_stopped_at_fetch_seconds(store: SqliteStore) -> None:
    with silent_server() as url:
        [result] = watch.watch_trees(store, [tree_of(url + "linux.git", name="hangs", fetch_seconds=1)],
                                     state_dir(store), NOW)
    assert result.error == "tree hangs: git fetch stopped after 1 s (fetch_seconds in rules/trees.toml)"
    assert watch.tree_state(store, "hangs")["error"] == result.error


def test_a_daemon_pass_watches_the_trees_on_its_clock(served, store: SqliteStore, monkeypatch) -> None:
    from types import SimpleNamespace

    from triagebot.daemon import flow as flow_module
    from triagebot.daemon import loop as daemon
    from triagebot.daemon.health import DaemonMetrics
    from triagebot.http_client.bounds import PollBounds

    tree, url = served
    [fix] = tree.commit(FIX, when=LANDED)
    for name in ("admit", "plan_new", "run_planned"):  # the lab's steps are not this test's
        monkeypatch.setattr(flow_module, name, lambda *args, **kwargs: [])
    settings = SimpleNamespace(http=None, bounds=PollBounds(), sources=[], trees=(tree_of(url),),
                               tree_rules=TreeRules((tree_of(url),)))
    daemon.run_pass(settings, store, daemon.DaemonState(),
                    SimpleNamespace(deliver=lambda: None, database=Path(store.path)), DaemonMetrics(), admit_days=14,
                    clock=lambda: NOW)
    assert [(move.state, move.cause_id) for move in store.moves_of(REPORT)] == [("fixed", f"commit:mainline:{fix}")]
    assert watch.tree_state(store, "mainline")["fetched_at"].startswith("2025-02-01T00:00:00")


@pytest.mark.parametrize(("text", "error"), [
    # a transport that runs a command, or ssh, is never named by a rules file
    ('[[tree]]\nname = "x"\nurl = "ext::sh -c touch% /tmp/pwned"\nbranch = "master"\n',
     "trees.toml:1: [[tree]] entry 1 (x): url must be an https, http, git, file URL"),
    ('[[tree]]\nname = "x"\nurl = "ssh://git@example.org/linux.git"\nbranch = "master"\n',
     "trees.toml:1: [[tree]] entry 1 (x): url must be an https, http, git, file URL"),
    # a branch that reads as an option
    ('[[tree]]\nname = "x"\nurl = "https://example.org/linux.git"\nbranch = "--upload-pack=touch"\n',
     "trees.toml:1: [[tree]] entry 1 (x): branch must be a branch name"),
    # a name that would leave the state folder
    ('[[tree]]\nname = "../up"\nurl = "https://example.org/linux.git"\nbranch = "master"\n',
     "trees.toml:1: [[tree]] entry 1 (../up): name must be lower-case letters"),
    ('[bounds]\ncommits_per_pass = 0\n', "trees.toml:1: [bounds]: commits_per_pass must be a whole number from 1"),
    ('[[tree]]\nname = "x"\nurl = "https://example.org/l.git"\nbranch = "master"\nfetch_seconds = 0\n',
     "trees.toml:1: [[tree]] entry 1 (x): fetch_seconds must be a number above 0"),
    ('[[tree]]\nname = "x"\nurl = "https://example.org/l.git"\nbranch = "master"\n'
     '[[tree]]\nname = "x"\nurl = "https://example.org/m.git"\nbranch = "master"\n',
     "trees.toml:5: [[tree]] entry 2 (x): name 'x' is given twice"),
])
def test_the_rules_file_is_validated(text: str, error: str) -> None:
    with pytest.raises(RulesError) as raised:
        trees_from(parse_text(text, "trees.toml"))
    assert str(raised.value).startswith(error)


def test_the_rules_file_bounds_and_their_defaults() -> None:
    [mainline, next_tree] = trees_from(parse_text(
        '[bounds]\nevery_minutes = 30\n\n[[tree]]\nname = "mainline"\nurl = "https://example.org/linux.git"\n'
        'branch = "master"\n\n[[tree]]\nname = "next"\nurl = "git://example.org/next.git"\nbranch = "master"\n'
        'commits_per_pass = 100\n', "trees.toml"))
    assert mainline.bounds == TreeBounds(every_minutes=30)
    assert next_tree.bounds == TreeBounds(every_minutes=30, commits_per_pass=100)


@pytest.mark.parametrize(("data", "message"), [
    (b"tree 1\nparent 2\nauthor a\ncommitter c\n\nsubject\n\nbody\n", "subject\n\nbody\n"),
    # headers not ended within what was read: no message
    (b"tree 1\nparent 2\ngpgsig -----BEGIN", ""),
    # not UTF-8: read all the same
    (b"tree 1\n\nsubj\xe9ct\n", "subj\ufffdct\n"),
])
def test_parse_commit_object(data: bytes, message: str) -> None:
    assert parse_commit_object(data) == message


def test_no_hook_runs_in_the_mirror(served, store: SqliteStore, tmp_path: Path) -> None:
    tree, url = served
    watched = tree_of(url)
    reader = GitTree(watched, state_dir(store))
    reader.fetch(NOW - timedelta(days=30))
    # a hook planted in the mirror (the refs move on every fetch): git is told to run none
    planted = tmp_path / "hook-ran"
    hook = reader.mirror / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {planted}\n")
    hook.chmod(0o755)
    tree.commit(FIX, when=LANDED)
    reader.fetch(NOW - timedelta(days=30))
    assert reader.start_walk() and not planted.exists()


def test_a_mirror_that_cannot_be_made_is_that_tree_s_failure(served, store: SqliteStore, tmp_path: Path) -> None:
    _tree, url = served
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the state folder would be\n")
    [result] = watch.watch_trees(store, [tree_of(url)], blocked, NOW)
    assert result.error is not None and result.error.startswith("tree mainline: ")
    assert watch.tree_state(store, "mainline")["outcome"] == "error"


def test_the_web_page_names_the_commit(served, store: SqliteStore) -> None:
    import urllib.request

    from triagebot.web.app import build_app
    from triagebot.web.server import WebServer
    from triagebot.web.views import Site, report_href

    tree, url = served
    [fix] = tree.commit(FIX, when=LANDED)
    watch.watch_trees(store, [tree_of(url)], state_dir(store), NOW)
    server = WebServer(build_app(Site(lambda: SqliteStore(store.path))), "127.0.0.1", 0).start()
    try:
        with urllib.request.urlopen(server.url.rstrip("/") + report_href(REPORT), timeout=30) as answer:
            html = answer.read().decode()
    finally:
        server.stop()
    assert f"commit {fix} in mainline" in html and "&lt;commit:" not in html


def test_fetches_in_the_background_a_hanging_tree_holds_up_nothing_else(served, store: SqliteStore) -> None:
    tree, url = served
    [fix] = tree.commit(FIX, when=LANDED)
    fetches = watch.TreeFetches()
    with silent_server() as silent:
        hanging = tree_of(silent + "linux.git", name="hangs", fetch_seconds=3600)
        trees = [hanging, tree_of(url)]
        try:
            # the pass starts both fetches and returns: nothing is read yet
            first = watch.watch_trees(store, trees, state_dir(store), NOW, fetches=fetches)
            assert [(item.fetched, item.read, item.error) for item in first] == [(False, 0, None), (False, 0, None)]
            assert fetches.running("hangs")
            fetches.wait("mainline")
            # the next pass reads what the finished fetch brought; the hanging one is still at it
            second = watch.watch_trees(store, trees, state_dir(store), NOW + timedelta(seconds=1), fetches=fetches)
            assert [(move.state, move.cause_id) for move in second[1].moves] == [
                ("fixed", f"commit:mainline:{fix}")]
            assert (second[0].fetched, second[0].error) == (False, None) and fetches.running("hangs")
        finally:
            fetches.close()  # kills the hanging git
    assert not fetches.running("hangs")
    # what the stopped fetch left is reported at the next look
    [stopped] = watch.watch_trees(store, [hanging], state_dir(store), NOW + timedelta(seconds=2), fetches=fetches)
    assert stopped.error == "tree hangs: stopped (the daemon is stopping)"


def test_triage_daemon_once_reads_trees_toml_and_moves_the_report(served, tmp_path: Path) -> None:
    from tests.support.daemon_run import daemon_env
    from tests.support.public_inbox import make_message, start_public_inbox

    tree, url = served
    [fix] = tree.commit(FIX, when=datetime.now(UTC) - timedelta(days=1))
    database = tmp_path / "daemon" / "triage.db"
    with SqliteStore(database) as store:
        store_mail(store, "lkp-first-linux-next")
        take_on(store)
    chatter = make_message("Re: [PATCH] ext4: tidy a helper", "Looks good.\n", msgid="chatter@example.org")
    with start_public_inbox(tmp_path / "lore", "linux-kernel", [chatter]) as server:
        rules = tmp_path / "rules"
        rules.mkdir()
        (rules / "sources.toml").write_text(f'[[lore]]\nurl = "{server.list_url}"\npoll_minutes = 1\n')
        (rules / "routing.toml").write_text('default_channel = "#perf-triage"\n')
        (rules / "trees.toml").write_text(f'[[tree]]\nname = "mainline"\nurl = "{url}"\nbranch = "master"\n')
        done = subprocess.run([sys.executable, "-m", "triagebot.cli", "daemon", "--once", "--db", str(database),
                               "--rules", str(rules), "--health-port", "off"], capture_output=True, text=True,
                              timeout=600, stdin=subprocess.DEVNULL, env=daemon_env(tmp_path, None), cwd=PROJECT)
    assert done.returncode == 0, done.stderr
    assert '"event": "tree.read"' in done.stderr or "tree read" in done.stderr
    shown = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", REPORT, "--db", str(database)],
                           capture_output=True, text=True, cwd=PROJECT, check=True).stdout
    assert "  after:    fixed" in shown and f"commit {fix} in mainline" in shown
    assert (database.parent / "trees" / "mainline.git").is_dir()


def test_a_pack_past_file_mib_fails_the_fetch(served, store: SqliteStore) -> None:
    import os

    from triagebot.lifecycle.git_tree import PRLIMIT

    if PRLIMIT is None:
        pytest.skip("prlimit (util-linux) is not installed: git's files are not bounded here")
    tree, url = served
    tree.commit(FIX, when=LANDED, blob=os.urandom(3 * 1024 * 1024))  # 3 MiB that no compression shrinks
    [result] = watch.watch_trees(store, [tree_of(url, file_mib=1)], state_dir(store), NOW)
    assert result.error is not None and result.error.startswith("tree mainline: git fetch ")
    assert result.error.endswith("(each file git writes is bounded by file_mib = 1 MiB)")
    assert result.moves == () and store.moves_of(REPORT) == []
    # with room for it, the same tree is read
    [again] = watch.watch_trees(store, [tree_of(url, file_mib=64)], state_dir(store), NOW + timedelta(hours=2))
    assert again.error is None and [move.state for move in again.moves] == ["fixed"]


def test_the_packaged_rules_watch_no_tree() -> None:
    from triagebot.rules.loader import read_file
    from triagebot.rules.settings import load_settings

    assert load_settings(PROJECT / "rules").trees == ()
    # its [bounds] are read and checked all the same, and are the defaults it documents
    assert trees_from(read_file(PROJECT / "rules" / "trees.toml")) == ()
    bounds = parse_text((PROJECT / "rules" / "trees.toml").read_text() + '[[tree]]\nname = "mainline"\n'
                        'url = "file:///srv/t.git"\nbranch = "master"\n', "trees.toml")
    assert trees_from(bounds)[0].bounds == TreeBounds()


def test_a_fetch_writes_one_pack_and_the_packs_are_made_one_past_max_packs(served, store: SqliteStore,
                                                                            monkeypatch) -> None:
    """No loose objects (the file bound covers all a fetch writes); gc is off, so past MAX_PACKS
    the mirror is repacked rather than read through a pack a pass for ever."""
    from triagebot.lifecycle import git_tree

    monkeypatch.setattr(git_tree, "MAX_PACKS", 3)
    tree, url = served
    watched = tree_of(url, every_minutes=1)
    reader = GitTree(watched, state_dir(store))

    def loose_objects() -> int:
        out = subprocess.run(["git", "--git-dir", str(reader.mirror), "count-objects", "-v"], capture_output=True,
                             text=True, check=True).stdout
        return int(dict(line.split(": ", 1) for line in out.splitlines())["count"])

    packs = []
    for step in range(5):
        tree.commit(f"step {step}: a small change\n", when=LANDED + timedelta(days=1, minutes=step))
        [result] = watch.watch_trees(store, [watched], state_dir(store), NOW + timedelta(hours=step))
        assert result.error is None and result.fetched
        assert loose_objects() == 0
        packs.append(reader.packs())
    assert packs == [1, 2, 3, 1, 2]  # the fourth fetch's pack made four: repacked into one


# --- issue 36: fixed as regzbot means it ---------------------------------------------------------

NEXT_FIX = FIX.replace("The scan of busy groups", "In linux-next: the scan of busy groups")


@pytest.fixture
def two_trees(tmp_path: Path) -> Iterator[tuple[ServedTree, ServedTree, ServedTree, str]]:
    """mainline, linux-next (upstream of mainline) and an unrelated maintainer tree, served by one git daemon."""
    base = tmp_path / "served"
    base.mkdir()
    served = [ServedTree(base, name) for name in ("mainline", "linux-next", "other")]
    for tree in served:
        tree.commit(f"init: {tree} first commit\n", when=LANDED - timedelta(days=3))
    with git_daemon(base) as url:
        yield served[0], served[1], served[2], url


def test_a_fix_in_linux_next_is_queued_and_fixed_only_when_it_lands_in_mainline(two_trees, store: SqliteStore) -> None:
    mainline, linux_next, other, url = two_trees
    rules = tree_rules_from(parse_text(
        f'regression_tree = "mainline"\n\n[[tree]]\nname = "mainline"\nurl = "{url}mainline.git"\nbranch = "master"\n\n'
        f'[[tree]]\nname = "linux-next"\nurl = "{url}linux-next.git"\nbranch = "master"\nupstream_of = ["mainline"]\n\n'
        f'[[tree]]\nname = "other"\nurl = "{url}other.git"\nbranch = "master"\n', "trees.toml"))
    [unrelated] = other.commit(FIX, when=LANDED)  # a tree neither the regression's nor upstream of it
    [queued] = linux_next.commit(NEXT_FIX, when=LANDED)
    passes = watch.watch_trees(store, rules.trees, state_dir(store), NOW, rules=rules)
    assert [(item.tree, [move.state for move in item.moves]) for item in passes] == [
        ("mainline", []), ("linux-next", ["fix-queued"]), ("other", [])]
    [move] = passes[1].moves
    assert move.cause_id == f"commit:linux-next:{queued}" and unrelated not in move.cause_id
    assert move.note.endswith(f"(commit {queued[:12]} in linux-next, upstream of mainline)")
    [landed] = mainline.commit(FIX, when=LANDED + timedelta(days=2))
    later = watch.watch_trees(store, rules.trees, state_dir(store), NOW + timedelta(hours=2), rules=rules)
    assert [move.state for item in later for move in item.moves] == ["fixed"]
    assert [(move.state, move.cause_id) for move in store.moves_of(REPORT)] == [
        ("fix-queued", f"commit:linux-next:{queued}"), ("fixed", f"commit:mainline:{landed}")]
    shown = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", REPORT, "--db", str(store.path)],
                           capture_output=True, text=True, cwd=PROJECT, check=True).stdout
    assert "  after:    fixed" in shown
    assert "fix-queued    in linux-next Fixes: 5c3f9e2a71d0 in " in shown  # each move says which tree
    assert "fixed         in mainline Fixes: 5c3f9e2a71d0 in " in shown


def test_where_a_regression_lives_and_what_a_tree_is_to_it() -> None:
    rules = tree_rules_from(parse_text(
        '[[tree]]\nname = "mainline"\nurl = "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git"\n'
        'branch = "master"\n\n[[tree]]\nname = "linux-next"\n'
        'url = "https://git.kernel.org/pub/scm/linux/kernel/git/next/linux-next.git"\nbranch = "master"\n'
        'upstream_of = ["mainline"]\n', "trees.toml"))
    assert rules.regression_tree == "mainline"  # the default
    # LKP names the culprit's tree by its cgit URL; the rules by the git remote's: the same repository
    assert rules.regression_tree_of("https://git.kernel.org/cgit/linux/kernel/git/next/linux-next.git") == "linux-next"
    assert rules.regression_tree_of("https://git.kernel.org/cgit/linux/kernel/git/tytso/ext4.git") == "mainline"
    assert rules.regression_tree_of(None) == "mainline"
    assert rules.relation("mainline", "mainline") == "own"
    assert rules.relation("linux-next", "mainline") == "upstream"
    assert rules.relation("mainline", "linux-next") is None  # mainline is not on its way to linux-next
    assert rules.relation("linux-next", "linux-next") == "own"  # a linux-next regression is fixed there


@pytest.mark.parametrize(("text", "error"), [
    ('[[tree]]\nname = "mainline"\nurl = "https://e.org/l.git"\nbranch = "master"\nupstream_of = ["next"]\n',
     "trees.toml:1: [[tree]] entry 1 (mainline): upstream_of names 'next': no [[tree]] of this file"),
    ('[[tree]]\nname = "mainline"\nurl = "https://e.org/l.git"\nbranch = "master"\nupstream_of = ["mainline"]\n',
     "trees.toml:1: [[tree]] entry 1 (mainline): upstream_of names the tree itself ('mainline')"),
    ('[[tree]]\nname = "mainline"\nurl = "https://e.org/l.git"\nbranch = "master"\nupstream_of = ["next"]\n'
     '[[tree]]\nname = "next"\nurl = "https://e.org/n.git"\nbranch = "master"\nupstream_of = ["mainline"]\n',
     "trees.toml:1: [[tree]] entry 1 (mainline): upstream_of makes a cycle through 'mainline'"),
    ('[[tree]]\nname = "linus"\nurl = "https://e.org/l.git"\nbranch = "master"\n',
     "trees.toml: regression_tree 'mainline' (the default) is no [[tree]] of this file"),
    ('regression_tree = "next"\n[[tree]]\nname = "linus"\nurl = "https://e.org/l.git"\nbranch = "master"\n',
     "trees.toml:1: regression_tree 'next' is no [[tree]] of this file"),
])
def test_which_tree_is_upstream_of_which_is_validated(text: str, error: str) -> None:
    with pytest.raises(RulesError) as raised:
        tree_rules_from(parse_text(text, "trees.toml"))
    assert str(raised.value).startswith(error)
