"""The digest is a place to decide (issue 38's second acceptance): each line of the day's "Unsure
readings" post carries a button; a person's "take on" starts the report (its triage row, its Slack
parent, then the daemon plans it), a "dismiss" keeps it out of the next digests; both are kept
as labels `triage labels export` writes, on SQLite and on PostgreSQL. The same from the command
line (`triage take-on`, `triage dismiss`) and `/triage take-on|dismiss`. The web page lists what
is still to look at.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.fake_slack import FakeSlack
from tests.support.slack_world import CHANNEL, ROUTING, TOKEN, World
from triagebot.daemon import flow
from triagebot.parse.report import parse_message
from triagebot.records.certainty import uncertain_reasons
from triagebot.records.report import Report, Source
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore
from triagebot.web.app import build_app
from triagebot.web.server import WebServer
from triagebot.web.views import Site

PERSON = "Lena Quist <lena@example.org>"
DAY = "2024-04-16"


def _mail(subject: str, body: str, message_id: str, reply_to: str | None = "20240415.77-1-ivo@example.org") -> bytes:
    parent = f"In-Reply-To: <{reply_to}>\nReferences: <{reply_to}>\n" if reply_to else ""
    return (f"From: {PERSON}\nTo: linux-kernel@vger.kernel.org\nSubject: {subject}\n"
            f"Date: Tue, 16 Apr 2024 09:12:00 +0000\nMessage-ID: <{message_id}>\n{parent}\n{body}\n").encode()


# a slowdown measured against a series, with a figure but no word tying it to the series: unsure
UNSURE = _mail("Re: [PATCH v2 2/3] sched: batch the wakeups", "Quickly comparing on my box, sysbench cpu events/s "
               "drop by 20%:\n\n  $ sysbench cpu --threads=2 --time=1 run\n", "unsure@example.org")
# slow, no kernel change named: a complaint, unsure by definition
COMPLAINT = _mail("RAID10 slower than a single drive", "fio gives 310 MB/s on the array, 450 MB/s on one disk.",
                  "complaint@example.org", reply_to=None)


def store_day(store, messages: list[bytes]) -> list[Report]:
    reports = []
    for raw in messages:
        report = parse_message(raw, Source("eml"))
        store.put_message(report.message_id, raw, "test", "linux-kernel", f"{DAY}T10:00:00+00:00")
        store.put_record(report.message_id, report, "test")
        store.link_thread(report.message_id, report.in_reply_to, report.references)
        reports.append(report)
    return reports


@pytest.fixture
def world(stores, tmp_path: Path):
    rules = tmp_path / "rules"
    shutil.copytree(PROJECT / "rules", rules)
    (rules / "routing.toml").write_text(ROUTING)
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}) as slack:
        made = World(stores, slack, load_settings(rules), routing=load_settings(rules).routing)
        try:
            yield made
        finally:
            made.close()


def digest_line_buttons(world: World) -> dict[str, dict]:
    [digest] = [message for message in world.slack.messages(CHANNEL) if message["text"].startswith("Unsure readings")]
    return {block["accessory"]["value"]: block["accessory"] for block in digest["blocks"] if "accessory" in block}


def test_a_take_on_from_the_digest_starts_the_report_and_is_kept_as_a_label(world: World, tmp_path: Path) -> None:
    lab = flow.DaemonContext(settings=world.settings, database=tmp_path / "lab.db", deliver=lambda: None)
    unsure, complaint = store_day(world.store, [UNSURE, COMPLAINT])
    assert unsure.kind == "patch-regression" and uncertain_reasons(unsure)
    assert flow.admit(world.store, lab, admit_days=14, now=datetime(2024, 4, 20, tzinfo=UTC)) == []  # unsure
    assert flow.post_digests(world.store, lab, now=datetime(2024, 4, 17, 6, 0, tzinfo=UTC))
    world.deliver()
    buttons = digest_line_buttons(world)
    assert set(buttons) == {unsure.message_id, complaint.message_id}  # one button a line
    assert buttons[unsure.message_id]["action_id"] == "decide"
    # the button opens the choice; taking it on starts the report
    status, _ = world.send(world.click("U0RUNNER", "decide", unsure.message_id))
    assert status == 200
    [(view_id, view)] = list(world.slack.views.items())
    assert view["callback_id"] == "decide"
    status, _ = world.send(world.slack.submit_view(view_id, "U0RUNNER", {"decision": "take-on",
                                                                          "note": "the numbers look real"}))
    assert status == 200
    row = world.store.get_triage(unsure.message_id)
    assert row is not None and row.state == "new"
    decision = world.store.decision_of(unsure.message_id)
    assert (decision.decision, decision.decided_by, decision.via, decision.kind_read) == (
        "take-on", "U0RUNNER", "slack", "patch-regression")
    assert decision.note == "the numbers look real" and "no tie to the series" in decision.reasons
    world.deliver()
    texts = world.thread_texts()
    assert any(text.startswith("[new]") for text in texts)  # its parent, as any report taken on
    assert "<@U0RUNNER> took this on from the unsure readings: the numbers look real" in texts
    # started: the daemon's next pass plans it (here: no series mail stored, so it says why)
    assert flow.plan_new(world.store, lab) == [unsure.message_id]
    assert world.store.get_triage(unsure.message_id).state in ("planned", "refused")
    # the same again is refused and nothing changes
    status, _ = world.send(world.click("U0RUNNER", "decide", unsure.message_id))
    [(view_id, _view)] = [(key, value) for key, value in world.slack.views.items() if key != view_id]
    world.send(world.slack.submit_view(view_id, "U0RUNNER", {"decision": "take-on"}))
    assert len(world.store.decisions()) == 1
    assert world.slack.ephemeral[-1]["text"].startswith("Not done: the report is taken on already")
    # dismissed by the slash command: kept, and the next digest leaves both out
    status, answer = world.send(world.command("U0MARKER", f"dismiss <{complaint.message_id}>"))
    assert status == 200 and answer.startswith("Done:")
    assert world.store.decision_of(complaint.message_id).decision == "dismiss"
    assert flow._unsure_item(world.store, lab, complaint.message_id) is None


# read only by the second look (parse/possible_report.py): a reply in a discussion thread that states
# a slowdown in words the kind rules do not know, and a plain review reply beside it
SECOND_LOOK = _mail("Re: eMMC trouble on the new boards", "Since we moved the boards to 6.9, boot time increased "
                    "by 9 seconds, all of it in mmc probing.", "second-look@example.org",
                    reply_to="trouble@example.org")
REVIEW = _mail("Re: [PATCH v2 2/3] sched: batch the wakeups", "Looks fine to me, one nit below.",
               "review@example.org")


def test_a_slowdown_only_the_second_look_reads_is_a_digest_line(world: World, tmp_path: Path) -> None:
    lab = flow.DaemonContext(settings=world.settings, database=tmp_path / "lab.db", deliver=lambda: None)
    second, review = store_day(world.store, [SECOND_LOOK, REVIEW])
    assert (second.kind, review.kind) == ("human-perf-complaint", "reply")
    assert flow.admit(world.store, lab, admit_days=14, now=datetime(2024, 4, 20, tzinfo=UTC)) == []
    assert flow.post_digests(world.store, lab, now=datetime(2024, 4, 17, 6, 0, tzinfo=UTC))
    world.deliver()
    assert set(digest_line_buttons(world)) == {second.message_id}  # the review is no line


def test_who_may_not_decide_is_refused_and_nothing_is_kept(world: World) -> None:
    store_day(world.store, [UNSURE])
    status, answer = world.send(world.command("U0NOBODY", "take-on <unsure@example.org>"))
    assert status == 200 and "may not take-on" in answer
    assert world.store.decisions() == [] and world.store.get_triage("unsure@example.org") is None


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True, cwd=PROJECT,
                          stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(PROJECT)})


def test_the_commands_decide_and_the_labels_are_exported(tmp_path: Path) -> None:
    database = tmp_path / "t.db"
    with SqliteStore(database) as store:
        store_day(store, [UNSURE, COMPLAINT])
    taken = triage("take-on", "unsure@example.org", "--db", str(database), "--by", "lena", "--note", "real")
    assert taken.returncode == 0, taken.stderr
    assert "taken on" in taken.stdout
    dismissed = triage("dismiss", "<complaint@example.org>", "--db", str(database), "--by", "lena")
    assert dismissed.returncode == 0, dismissed.stderr
    again = triage("dismiss", "complaint@example.org", "--db", str(database), "--by", "lena")
    assert again.returncode == 1 and "decided already" in again.stderr
    missing = triage("take-on", "nobody@example.org", "--db", str(database))
    assert missing.returncode == 1 and "no message <nobody@example.org> is stored" in missing.stderr
    with SqliteStore(database) as store:
        assert store.get_triage("unsure@example.org").state == "new"
        assert store.get_triage("complaint@example.org") is None
    out = tmp_path / "labels.jsonl"
    exported = triage("labels", "export", "--db", str(database), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    labels = {item["message_id"]: item for item in map(json.loads, out.read_text().splitlines())}
    assert labels["unsure@example.org"] | {"decided_at": None} == {
        "source": "store:test", "list": "linux-kernel", "year": 2024, "message_id": "unsure@example.org",
        "kind": "patch-regression", "taken_on": True, "decided_by": "lena", "via": "cli", "decided_at": None,
        "note": "real", "reasons": labels["unsure@example.org"]["reasons"],
        "subject": "Re: [PATCH v2 2/3] sched: batch the wakeups"}
    assert labels["complaint@example.org"]["taken_on"] is False
    assert labels["complaint@example.org"]["kind"] == "human-perf-complaint"


def test_the_web_page_lists_what_is_still_to_look_at(tmp_path: Path) -> None:
    import urllib.request

    database = tmp_path / "t.db"
    with SqliteStore(database) as store:
        store_day(store, [UNSURE, COMPLAINT])
        store.record_decision("k1", "complaint@example.org", "dismiss", "lena", "cli", "human-perf-complaint", "")
    team = WebServer(build_app(Site(open_store=lambda: SqliteStore(database)))).start()
    public = WebServer(build_app(Site(open_store=lambda: SqliteStore(database), public=True))).start()
    try:
        page = urllib.request.urlopen(team.url + "/look").read().decode()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(public.url + "/look")
        assert refused.value.code == 404  # what the team is unsure of is its own
    finally:
        team.stop()
        public.stop()
    assert "Re: [PATCH v2 2/3] sched: batch the wakeups" in page
    assert "triage take-on unsure@example.org" in page and "no tie to the series in words" in page
    assert "RAID10 slower" not in page  # dismissed: decided, not to look at
