"""Lifecycle: later mail moves a report taken on (fix proposed, invalid, stale), each move stored
with its message, shown by `triage show`, and the Slack parent edited in place. A mail is a fix
posted, never one landed: a `Fixes:` patch or a revert posted is fix-proposed (issue 36); fixed,
fix-queued and reverted come from a watched tree's commits (tests/test_tree_watch.py)."""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.fake_slack import FakeSlack
from tests.support.report_mail import CHANNEL, MAIL, REPORT, store_mail, take_on
from triagebot.lifecycle import follow
from triagebot.lifecycle.detect import same_commit
from triagebot.lifecycle.same import relation
from triagebot.notify import outbox
from triagebot.notify.slack import SlackNotifier
from triagebot.parse.report import parse_message
from triagebot.records.report import Commit, Headline, Report, Source, report_to_json
from triagebot.store.protocol import IncomingMessage
from triagebot.store.sqlite import SqliteStore

TOKEN = "xoxb-life"


def confirm(store: SqliteStore, message_id: str = REPORT) -> None:
    take_on(store, message_id)


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}) as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path / "t.db") as opened:
        store_mail(opened, "lkp-first-linux-next")
        confirm(opened)
        yield opened


def deliver(store: SqliteStore, slack: FakeSlack) -> outbox.Delivery:
    return outbox.deliver(store, SlackNotifier(TOKEN, base_url=slack.base_url, timeout_seconds=5))


def test_a_posted_patch_with_fixes_culprit_is_a_fix_proposed_only_and_edits_the_parent(
        store: SqliteStore, slack: FakeSlack) -> None:
    deliver(store, slack)
    [parent] = slack.messages(CHANNEL)
    new = store_mail(store, "fix-patch")
    moves = follow.observe(store, new)
    # a patch nobody merged yet: incoming, not fixed (regzbot's meaning)
    assert [(move.state, move.cause_id) for move in moves] == [
        ("fix-proposed", "20250121081455.31337-1-mara.quist@example.org")]
    assert [move.state for move in store.moves_of(REPORT)] == ["fix-proposed"]
    assert moves[0].note == "Fixes: 5c3f9e2a71d0 in sched/fair: stop the LLC scan at the first idle group again"
    assert deliver(store, slack).sent == 1
    # one parent, edited: no new post, no thread reply
    [edited] = slack.messages(CHANNEL)
    assert edited["ts"] == parent["ts"] and "thread_ts" not in edited
    updates = slack.calls_to("chat.update")
    assert len(updates) == 1 and updates[0].params["ts"] == parent["ts"]
    blocks = str(updates[0].params["blocks"])
    assert "*fix-proposed* posted" in blocks and "20250121081455.31337" in blocks and "*fixed*" not in blocks
    # seen again (a second poll, the daemon restarted): nothing moves twice
    assert follow.observe(store, new) == []


def test_a_posted_revert_of_the_culprit_is_a_fix_proposed(store: SqliteStore, slack: FakeSlack) -> None:
    deliver(store, slack)
    moves = follow.observe(store, store_mail(store, "revert-patch"))
    assert [move.state for move in moves] == ["fix-proposed"]  # reverted when the revert lands in the tree
    assert moves[0].cause_id == "20250123164002.GA4471@noisy.programming.kicks-ass.net"
    assert moves[0].note.startswith("revert of 5c3f9e2a71d0: ")
    deliver(store, slack)
    assert "*fix-proposed*" in str(slack.calls_to("chat.update")[-1].params["blocks"])
    # another fix posted after it is another proposal
    assert [move.state for move in follow.observe(store, store_mail(store, "fix-patch"))] == ["fix-proposed"]


def test_a_patch_in_the_thread_then_a_fixes_patch_are_two_proposals(store: SqliteStore) -> None:
    assert [move.state for move in follow.observe(store, store_mail(store, "patch-in-thread"))] == ["fix-proposed"]
    assert [move.state for move in follow.observe(store, store_mail(store, "fix-patch"))] == ["fix-proposed"]
    assert [move.state for move in store.moves_of(REPORT)] == ["fix-proposed", "fix-proposed"]


def test_a_person_saying_invalid_in_the_thread(store: SqliteStore) -> None:
    [move] = follow.observe(store, store_mail(store, "invalid-reply"))
    assert move.state == "invalid" and move.note == "#regzbot invalid: the bisect ran on a debug kernel"


def test_a_fix_for_another_commit_moves_nothing(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "t.db") as store:
        store_mail(store, "lkp-first-linux-next")
        # the fix's Fixes: names 5c3f9e2a71d0; a report whose culprit differs is not moved
        raw = (MAIL / "lkp-first-linux-next.eml").read_bytes().replace(b"5c3f9e2a71", b"77aa0b12c9")
        raw = raw.replace(b"202501061203.4d2a9c1e", b"202501071203.000000aa")
        other = report_to_json(parse_message(raw, Source("eml")))
        store.ingest_batch([IncomingMessage(other["message_id"], raw, "eml", "2025-01-07T00:00:00+00:00",
                                            record=other, parser_version="test")])
        confirm(store, other["message_id"])
        assert follow.observe(store, store_mail(store, "fix-patch")) == []


def test_no_activity_for_n_days_is_stale_and_a_fix_still_moves_it(store: SqliteStore) -> None:
    assert follow.mark_stale(store, now=datetime(2025, 2, 10, tzinfo=UTC), days=30) == []  # stored 2025-02-01
    # the triage row was written now (the store's clock): look from far enough ahead
    later = datetime.now(UTC).replace(year=datetime.now(UTC).year + 1)
    [stale] = follow.mark_stale(store, now=later, days=30)
    assert stale.state == "stale" and stale.cause_id == ""
    assert follow.mark_stale(store, now=later, days=30) == []  # stale once
    assert [move.state for move in follow.observe(store, store_mail(store, "fix-patch"))] == ["fix-proposed"]


@pytest.mark.parametrize(("one", "other", "same"), [
    ("5c3f9e2a71d0", "5c3f9e2a71d04b8e6a9f0c13d2b7e4a58f61c902", True),  # short and full
    ("5C3F9E2A71", "5c3f9e2a71d0", True),  # case
    ("5c3f9e", "5c3f9e2a71d0", False),  # six digits name nothing
    ("5c3f9e2a72", "5c3f9e2a71d0", False),
])
def test_same_commit(one: str, other: str, same: bool) -> None:
    assert same_commit(one, other) is same


def test_triage_show_lists_each_move_with_its_message(store: SqliteStore, tmp_path: Path) -> None:
    follow.observe(store, store_mail(store, "patch-in-thread"))
    follow.observe(store, store_mail(store, "fix-patch"))
    shown = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", REPORT, "--db", str(store.path)],
                           capture_output=True, text=True, cwd=PROJECT, check=True).stdout
    lines = [line for line in shown.splitlines() if line.startswith(("  after:", "    20"))]
    assert lines[0] == "  after:    fix-proposed"
    assert "fix-proposed  posted    patch: sched/fair: try one more group before giving up " \
           "<20250108090217.8812-1-mara.quist@example.org>" in lines[1]
    assert "fix-proposed  posted    Fixes: 5c3f9e2a71d0 in sched/fair: stop the LLC scan at the first idle " \
           "group again <20250121081455.31337-1-mara.quist@example.org>" in lines[2]


def test_the_web_page_lists_the_moves(store: SqliteStore) -> None:
    import urllib.request

    from triagebot.web.app import build_app
    from triagebot.web.server import WebServer
    from triagebot.web.views import Site, report_href

    follow.observe(store, store_mail(store, "fix-patch"))
    follow.join_reports(store, store_mail(store, "lkp-rereport-mainline"))
    server = WebServer(build_app(Site(lambda: SqliteStore(store.path))), "127.0.0.1", 0).start()
    try:
        with urllib.request.urlopen(server.url.rstrip("/") + report_href(REPORT), timeout=30) as answer:
            html = answer.read().decode()
    finally:
        server.stop()
    assert "fix-proposed posted: Fixes: 5c3f9e2a71d0 in sched/fair: stop the LLC scan at the first idle group again" \
        in html
    assert "&lt;20250121081455.31337-1-mara.quist@example.org&gt;" in html
    assert "also-seen: &lt;202502031517.9b7e05fa-lkp@intel.com&gt;" in html


def test_an_lkp_re_report_of_the_same_culprit_joins_the_first(store: SqliteStore, slack: FakeSlack) -> None:
    deliver(store, slack)
    [parent] = slack.messages(CHANNEL)
    new = store_mail(store, "lkp-rereport-mainline")
    assert follow.join_reports(store, new) == [("202502031517.9b7e05fa-lkp@intel.com", REPORT, "also-seen")]
    link = store.joined_to("202502031517.9b7e05fa-lkp@intel.com")
    assert link is not None and link.rule == "same culprit (sha)"
    # the first report's parent names it; no new thread is opened for it
    deliver(store, slack)
    assert [message["ts"] for message in slack.messages(CHANNEL)] == [parent["ts"]]
    update = slack.calls_to("chat.update")[-1]
    blocks = str(update.params["blocks"])
    assert "*also-seen*" in blocks and "will-it-scale.per_thread_ops" in blocks
    # and the daemon does not take it on
    from triagebot.daemon import flow
    from triagebot.rules.settings import Settings

    context = flow.DaemonContext(settings=Settings(rules_dir=PROJECT / "rules"), database=store.path,
                                 deliver=lambda: None)
    assert flow.admit(store, context, admit_days=100000) == []
    assert follow.join_reports(store, new) == []  # joined once


def test_an_improvement_of_the_same_commit_is_linked_not_merged(store: SqliteStore) -> None:
    new = store_mail(store, "lkp-improvement-same-commit")
    assert follow.join_reports(store, new) == [("202502051122.e41b7d30-lkp@intel.com", REPORT, "linked")]
    link = store.joined_to("202502051122.e41b7d30-lkp@intel.com")
    assert link is not None and link.relation == "linked" and link.rule == "same culprit (sha), other direction"


def test_show_lists_the_joined_reports(store: SqliteStore) -> None:
    follow.join_reports(store, store_mail(store, "lkp-rereport-mainline", "lkp-improvement-same-commit"))
    shown = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", REPORT, "--db", str(store.path)],
                           capture_output=True, text=True, cwd=PROJECT, check=True).stdout
    assert "  also-seen: <202502031517.9b7e05fa-lkp@intel.com> (same culprit (sha))" in shown
    assert "  linked:   <202502051122.e41b7d30-lkp@intel.com> (same culprit (sha), other direction)" in shown
    later = subprocess.run([sys.executable, "-m", "triagebot.cli", "show", "202502031517.9b7e05fa-lkp@intel.com",
                            "--db", str(store.path)], capture_output=True, text=True, cwd=PROJECT, check=True).stdout
    assert f"  joined:   also-seen of <{REPORT}> (same culprit (sha))" in later


def _report(kind: str, sha: str, subject: str | None, direction: str | None = None,
            date: str = "2025-01-01T00:00:00+00:00") -> Report:
    headline = Headline("m", -5.0 if direction == "regression" else 5.0, direction) if direction else None
    return Report(message_id=None, in_reply_to=None, subject="s", from_="f", date=date, source=Source("eml"),
                  kind=kind, commits=(Commit(sha, subject, "culprit"),), headline=headline)


@pytest.mark.parametrize(("first", "later", "expected"), [
    # the same sha, short and long
    (_report("lkp-regression", "38f83090f5", "cpuidle: menu: Remove iowait influence", "regression"),
     _report("lkp-regression", "38f83090f515aa", None, "regression"), ("also-seen", "same culprit (sha)")),
    # the same subject, another sha (linux-next, then mainline); case and spacing do not matter
    (_report("lkp-regression", "40b77b3e82", "btrfs: switch to the new mount API", "regression"),
     _report("lkp-regression", "ad21f15b0f", "btrfs:  Switch to the new mount API", "regression"),
     ("also-seen", "same culprit (subject)")),
    # an improvement of that commit: linked
    (_report("lkp-regression", "40b77b3e82", "btrfs: switch to the new mount API", "regression"),
     _report("lkp-improvement", "40b77b3e82", None, "improvement"),
     ("linked", "same culprit (sha), other direction")),
    # a human report of the same culprit, no headline: a claimed slowdown
    (_report("lkp-regression", "40b77b3e82", None, "regression"), _report("human-report", "40b77b3e82", None),
     ("also-seen", "same culprit (sha)")),
    # subjects too short, merges and reverts stand for no one commit
    (_report("lkp-regression", "1111111111", "Merge branch 'for-next' of git.kernel.org", "regression"),
     _report("lkp-regression", "2222222222", "Merge branch 'for-next' of git.kernel.org", "regression"), None),
    (_report("lkp-regression", "1111111111", "Revert \"mm: one\"", "regression"),
     _report("lkp-regression", "2222222222", "Revert \"mm: one\"", "regression"), None),
    (_report("lkp-regression", "1111111111", "fix it", "regression"),
     _report("lkp-regression", "2222222222", "fix it", "regression"), None),
    # another commit, the same testcase: another regression
    (_report("lkp-regression", "1111111111", "mm: one thing", "regression"),
     _report("lkp-regression", "2222222222", "mm: another thing", "regression"), None),
    # a reply quoting the report is no report
    (_report("lkp-regression", "1111111111", None, "regression"), _report("reply", "1111111111", None), None),
])
def test_the_rule_for_same(first: Report, later: Report, expected: tuple[str, str] | None) -> None:
    assert relation(first, later) == expected


def test_a_linked_regression_is_still_taken_on(tmp_path: Path) -> None:
    from triagebot.daemon import flow
    from triagebot.rules.settings import Settings

    with SqliteStore(tmp_path / "t.db") as store:
        # the improvement first, then the regression of the same commit: linked, and triaged
        store_mail(store, "lkp-improvement-same-commit")
        raw = (MAIL / "lkp-rereport-mainline.eml").read_bytes().replace(b"Mon, 3 Feb 2025", b"Mon, 10 Feb 2025")
        record = report_to_json(parse_message(raw, Source("eml")))
        new = store.ingest_batch([IncomingMessage(record["message_id"], raw, "eml", "2025-02-10T00:00:00+00:00",
                                                  record=record, parser_version="test")])
        assert follow.join_reports(store, new) == [(record["message_id"], "202502051122.e41b7d30-lkp@intel.com",
                                                    "linked")]
        context = flow.DaemonContext(settings=Settings(rules_dir=PROJECT / "rules"), database=store.path,
                                     deliver=lambda: None)
        assert flow.admit(store, context, admit_days=100000) == [record["message_id"]]


def test_closes_the_report_in_a_patch_fixes_it_a_link_in_a_reply_does_not(store: SqliteStore) -> None:
    def message(name: str, subject: str, body: str) -> list[str]:
        raw = (f"Message-ID: <{name}@example.org>\nFrom: A <a@example.org>\nDate: Mon, 3 Mar 2025 10:00:00 +0000\n"
               f"Subject: {subject}\n\n{body}").encode()
        record = report_to_json(parse_message(raw, Source("eml")))
        return store.ingest_batch([IncomingMessage(record["message_id"], raw, "eml", "2025-03-03T10:00:00+00:00",
                                                   record=record, parser_version="test")])

    link = f"Link: https://lore.kernel.org/oe-lkp/{REPORT}\n"
    assert follow.observe(store, message("talk", "Re: the hackbench numbers", "See this one.\n\n" + link)) == []
    [move] = follow.observe(store, message("patch", "[PATCH] sched/fair: bound the scan",
                                           "Bound it.\n\nCloses: https://lore.kernel.org/oe-lkp/" + REPORT
                                           + "\nSigned-off-by: A <a@example.org>\n"))
    assert move.state == "fix-proposed" and move.note == "Closes: the report, in sched/fair: bound the scan"


def test_a_daemon_pass_follows_what_its_poll_stored(store: SqliteStore, tmp_path: Path, monkeypatch) -> None:
    from types import SimpleNamespace

    from triagebot.daemon import flow as flow_module
    from triagebot.daemon import loop as daemon
    from triagebot.daemon.health import DaemonMetrics
    from triagebot.http_client.bounds import PollBounds
    from triagebot.ingest.files import FileSource

    mbox = tmp_path / "list.mbox"
    separator = b"From mailer@example.org Mon Jan  1 00:00:00 2025\n"
    mbox.write_bytes(b"".join(separator + (MAIL / f"{name}.eml").read_bytes() + b"\n"
                              for name in ("fix-patch", "lkp-rereport-mainline")))
    monkeypatch.setattr(daemon, "build_source", lambda url, policy, **_: FileSource(mbox))
    for name in ("admit", "plan_new", "run_planned"):  # the lab's steps are not this test's
        monkeypatch.setattr(flow_module, name, lambda *args, **kwargs: [])
    settings = SimpleNamespace(http=None, bounds=PollBounds(), trees=(),
                               sources=[SimpleNamespace(url="https://lists.example/lkml/", poll_minutes=1)])
    daemon.run_pass(settings, store, daemon.DaemonState(), SimpleNamespace(deliver=lambda: None), DaemonMetrics(),
                    admit_days=14)
    assert [(move.state, move.cause_id) for move in store.moves_of(REPORT)] == [
        ("fix-proposed", "20250121081455.31337-1-mara.quist@example.org")]
    assert [link.joined_id for link in store.links_of(REPORT)] == ["202502031517.9b7e05fa-lkp@intel.com"]


@pytest.mark.parametrize(("stale_days", "today", "stale"), [
    (30, datetime(2025, 2, 20, tzinfo=UTC), False),  # 19 days without a word: not yet
    (30, datetime(2025, 3, 5, tzinfo=UTC), True),  # 32 days
    (10, datetime(2025, 2, 20, tzinfo=UTC), True),  # the operator's shorter N
])
def test_the_daemon_pass_marks_stale_after_n_days_on_the_clock_it_is_given(
        tmp_path: Path, monkeypatch, stale_days: float, today: datetime, stale: bool) -> None:
    from types import SimpleNamespace

    from triagebot.daemon import flow as flow_module
    from triagebot.daemon import loop as daemon
    from triagebot.daemon.health import DaemonMetrics

    for name in ("admit", "plan_new", "run_planned"):  # the lab's steps are not this test's
        monkeypatch.setattr(flow_module, name, lambda *args, **kwargs: [])
    taken_on = datetime(2025, 2, 1, 8, 0, tzinfo=UTC)
    with SqliteStore(tmp_path / "t.db", clock=lambda: taken_on) as store:  # every stored time is that day's
        store_mail(store, "lkp-first-linux-next", received_at="2025-02-01T08:00:00+00:00")
        confirm(store)
        daemon.run_pass(SimpleNamespace(sources=[], http=None, trees=()), store, daemon.DaemonState(),
                        SimpleNamespace(deliver=lambda: None), DaemonMetrics(), admit_days=14,
                        stale_days=stale_days, clock=lambda: today)
        moves = [(move.state, move.cause_id, move.note) for move in store.moves_of(REPORT)]
    assert moves == ([("stale", "", f"no activity since 2025-02-01 ({stale_days:g} days)")] if stale else [])


SERIES = ("series-v1-0", "series-v1-1", "series-v1-2", "series-v2-0", "series-v2-1", "series-v2-2")


def test_a_patch_series_moves_once_per_version_and_edits_the_parent_once_each(
        store: SqliteStore, slack: FakeSlack) -> None:
    deliver(store, slack)
    edits_before = len(slack.calls_to("chat.update"))
    # v1 and v2, each a cover letter and two patches, all in the report's thread: the first mail
    # of each version moves the report, the rest of that version does not
    moves = follow.observe(store, store_mail(store, *SERIES))
    assert [(move.state, move.cause_id) for move in moves] == [
        ("fix-proposed", "202501110900.4410-0-ivo.brandt@example.net"),
        ("fix-proposed", "202501120900.4410-0-ivo.brandt@example.net")]
    assert [move.note for move in moves] == ["patch: sched/fair: bound the idle-group scan"] * 2
    assert deliver(store, slack).sent == 2
    assert len(slack.calls_to("chat.update")) - edits_before == 2


def test_a_version_without_a_cover_letter_moves_on_its_first_patch_and_a_later_part_does_not(
        store: SqliteStore) -> None:
    # a poll may bring patch 2 of v1 alone, patch 1 in the next
    [move] = follow.observe(store, store_mail(store, "series-v1-2"))
    assert move.cause_id == "202501110900.4410-2-ivo.brandt@example.net"
    assert follow.observe(store, store_mail(store, "series-v1-1")) == []
    # another patch that is no part of a series version already seen still moves it
    assert [move.state for move in follow.observe(store, store_mail(store, "patch-in-thread"))] == ["fix-proposed"]
    assert [move.cause_id for move in follow.observe(store, store_mail(store, "series-v2-1", "series-v2-2"))] == [
        "202501120900.4410-1-ivo.brandt@example.net"]
