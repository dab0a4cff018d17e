"""Uncertain is not a thread (issue 24): what the daemon is unsure of is not taken on; a daily
digest message lists it in the channel, and `triage list --uncertain` shows it with why."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from tests.conftest import FIXTURES, PROJECT
from triagebot.daemon import flow
from triagebot.notify import outbox
from triagebot.notify.slack import Posted
from triagebot.parse.report import parse_message
from triagebot.records.certainty import KIND_CONFIDENCE_FLOOR, kind_confidence, stance_uncertain, uncertain_reasons
from triagebot.records.report import Report, Source, Trailer
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore

PERSON = "Dana Whitfield <dana@example.org>"
SURE = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()  # culprit, headline, command


def _mail(subject: str, body: str, message_id: str, *, reply_to: str | None = None) -> bytes:
    parent = f"In-Reply-To: <{reply_to}>\nReferences: <{reply_to}>\n" if reply_to else ""
    return (f"From: {PERSON}\nTo: linux-nfs@vger.kernel.org\nSubject: {subject}\n"
            f"Date: Tue, 16 Apr 2024 09:12:00 +0000\nMessage-ID: <{message_id}>\n{parent}\n{body}\n").encode()


# a slowdown after an upgrade, with figures, but no culprit and no command: a report, unsure
NO_CULPRIT = _mail("nfs reads got slower after upgrading to 6.8",
                   "Since upgrading to 6.8 our reads are 20% slower: 412 MB/s on 6.7, 330 MB/s on 6.8.",
                   "no-culprit@example.org")
# slow, no kernel change named: a complaint, unsure by definition
COMPLAINT = _mail("RAID10 slower than a single drive", "fio gives 310 MB/s on the array, 450 MB/s on one disk.",
                  "complaint@example.org")


def parsed(raw: bytes) -> Report:
    return parse_message(raw, Source("eml"))


def test_a_report_is_sure_with_a_culprit_and_a_headline() -> None:
    sure = parsed(SURE)
    assert sure.kind == "human-report"
    confidence, missing = kind_confidence(sure)
    assert confidence >= KIND_CONFIDENCE_FLOOR and uncertain_reasons(sure) == ()
    unsure = parsed(NO_CULPRIT)
    assert unsure.kind == "human-report" and unsure.headline is not None
    confidence, missing = kind_confidence(unsure)
    assert confidence == 0.3 and "culprit" in missing
    assert uncertain_reasons(unsure) == ("kind human-report at 30% (floor 60%): no culprit, no command",)
    # regzbot's marker makes up for the command: marked + headline
    marked = dataclasses.replace(unsure, trailers=(Trailer("regzbot introduced", "v6.7..v6.8"),))
    assert kind_confidence(marked)[0] == 0.7 and uncertain_reasons(marked) == ()


def test_a_complaint_is_below_the_floor_and_an_lkp_report_always_sure() -> None:
    complaint = parsed(COMPLAINT)
    assert complaint.kind == "human-perf-complaint"
    assert kind_confidence(complaint)[0] < KIND_CONFIDENCE_FLOOR
    assert uncertain_reasons(complaint)[0].startswith("kind human-perf-complaint at ")
    lkp = dataclasses.replace(complaint, kind="lkp-regression")
    assert kind_confidence(lkp) == (1.0, ())


def test_a_reply_whose_sentences_disagree_is_unsure() -> None:
    reply = parsed(_mail("Re: nfs reads got slower after upgrading to 6.8",
                         "I can reproduce it on my NUC.\n\nOn the Xeon I could not reproduce it at all.",
                         "reply-both@example.org", reply_to="no-culprit@example.org"))
    assert reply.kind == "reply" and reply.stance == "none"
    assert stance_uncertain(reply) == "its sentences decide both ways"
    plain = parsed(_mail("Re: nfs reads got slower after upgrading to 6.8", "I can reproduce it on my NUC.",
                         "reply-one@example.org", reply_to="no-culprit@example.org"))
    assert plain.stance == "reproduced" and uncertain_reasons(plain) == ()


def _store_day(store: SqliteStore, messages: list[bytes]) -> list[Report]:
    reports = []
    for raw in messages:
        report = parsed(raw)
        store.put_message(report.message_id, raw, "test", None, "2024-04-16T10:00:00+00:00")
        store.put_record(report.message_id, report, "test")
        store.link_thread(report.message_id, report.in_reply_to, report.references)
        reports.append(report)
    return reports


def test_the_daemon_takes_on_only_what_it_is_sure_of_and_digests_the_rest(tmp_path: Path) -> None:
    lab = flow.DaemonContext(settings=load_settings(PROJECT / "rules"), database=tmp_path / "t.db",
                             deliver=lambda: None)
    conflicted = _mail("Re: [REGRESSION] sysbench cpu events/s down on 6.9",
                       "I can reproduce it on my NUC.\n\nOn the Xeon I could not reproduce it at all.",
                       "conflicted@example.org", reply_to=parsed(SURE).message_id)
    with SqliteStore(tmp_path / "t.db") as store:
        sure, unsure, complaint, reply = _store_day(store, [SURE, NO_CULPRIT, COMPLAINT, conflicted])
        admitted = flow.admit(store, lab, admit_days=14, now=datetime(2024, 4, 20, tzinfo=UTC))
        assert admitted == [sure.message_id]
        assert store.get_triage(unsure.message_id) is None and store.get_triage(complaint.message_id) is None
        # the day is not over: no digest yet
        assert flow.post_digests(store, lab, now=datetime(2024, 4, 16, 23, 0, tzinfo=UTC)) == []
        keys = flow.post_digests(store, lab, now=datetime(2024, 4, 17, 6, 0, tzinfo=UTC))
        assert len(keys) == 1 and keys[0].startswith("digest-2024-04-16-")
        assert flow.post_digests(store, lab, now=datetime(2024, 4, 17, 7, 0, tzinfo=UTC)) == []  # once a day
        digest = [row for row in store.outbox() if row.kind == keys[0]]
        assert len(digest) == 1 and digest[0].message_id == unsure.message_id  # hung off the day's first item
        text = digest[0].payload["text"]
        assert text.startswith("Unsure readings of 2024-04-16: 3")
        blocks = json.dumps(digest[0].payload["blocks"])
        for report in (unsure, complaint, reply):
            assert report.subject in blocks
        assert sure.subject not in text
        # one parent message for the report taken on, one digest: nothing else posted
        assert sorted((row.message_id, row.kind) for row in store.outbox()) == sorted(
            [(sure.message_id, "parent"), (unsure.message_id, keys[0])])


def test_the_digest_goes_out_as_a_post_of_its_own(tmp_path: Path) -> None:
    lab = flow.DaemonContext(settings=load_settings(PROJECT / "rules"), database=tmp_path / "t.db",
                             deliver=lambda: None)
    posts: list[tuple[str, str | None, str]] = []

    class Recorder:
        def post(self, channel, payload, thread_ts=None, key=""):
            posts.append((channel, thread_ts, payload["text"]))
            return Posted(channel, f"{len(posts)}.0")

        def find(self, channel, key, thread_ts=None, file_name=None):
            return None

    with SqliteStore(tmp_path / "t.db") as store:
        _store_day(store, [NO_CULPRIT, COMPLAINT])
        assert flow.admit(store, lab, admit_days=14, now=datetime(2024, 4, 20, tzinfo=UTC)) == []
        flow.post_digests(store, lab, now=datetime(2024, 4, 17, 6, 0, tzinfo=UTC))
        result = outbox.deliver(store, Recorder())
    assert result.sent == 1 and result.waiting == 0
    (channel, thread_ts, text), = posts
    assert thread_ts is None and text.startswith("Unsure readings of 2024-04-16: 2")


def test_triage_list_uncertain_shows_them_with_why(tmp_path: Path) -> None:
    database = tmp_path / "t.db"
    with SqliteStore(database) as store:
        _store_day(store, [SURE, NO_CULPRIT, COMPLAINT])
    result = subprocess.run([sys.executable, "-m", "triagebot.cli", "list", "--uncertain", "--db", str(database),
                             "--json"], capture_output=True, text=True, cwd=PROJECT, stdin=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(PROJECT)})
    assert result.returncode == 0, result.stderr
    listed = {item["message_id"]: item["uncertain"] for item in map(json.loads, result.stdout.splitlines())}
    assert set(listed) == {"no-culprit@example.org", "complaint@example.org"}
    assert listed["no-culprit@example.org"] == ["kind human-report at 30% (floor 60%): no culprit, no command"]
    plain = subprocess.run([sys.executable, "-m", "triagebot.cli", "list", "--uncertain", "--db", str(database)],
                           capture_output=True, text=True, cwd=PROJECT, stdin=subprocess.DEVNULL,
                           env={**os.environ, "PYTHONPATH": str(PROJECT)})
    assert plain.returncode == 0 and "unsure: kind human-perf-complaint" in plain.stdout
