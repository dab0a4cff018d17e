"""LKP performance reports posted as replies to the patch they blame ("Re: [PATCH …]").

The robot answers a patch with the same report it sends to the list: a regression is read as a
regression of the series under review (`patch-regression`, issue 38: its series from the report's
patch lines), an improvement as lkp-improvement, each with its LKP parameters; the regression is
taken on by the daemon like any other report. A person's reply that quotes or retells the robot's
sentence stays a reply.
"""
from __future__ import annotations

import csv
import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT, SHARED
from triagebot.daemon import flow
from triagebot.parse.classify import classify
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_from_json, report_to_json
from triagebot.reproduce.hosts import choose_host
from triagebot.reproduce.limits import host_shape
from triagebot.reproduce.plan import Plan, plan_report
from triagebot.rules.routing import parse_routing
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore

REPLY = FIXTURES / "mail" / "lkp" / "patch-reply-stress-ng-regression.eml"
REPLY_ID = "202506121525.5f1c0a7e-lkp@intel.com"
STREAM = SHARED / "corpus" / "lkp-stream"
ROBOT = "kernel test robot <oliver.sang@intel.com>"
PATCH = "Re: [PATCH v2 1/2] nfs: cache the change attribute across revalidations"
OPENING = "kernel test robot noticed a 23.6% regression of stress-ng.msg.ops_per_sec on:\n"

CASES = [
    # the robot's reply to a patch, its sentence after the greeting
    (PATCH, ROBOT, "\nHello,\n\n" + OPENING, "lkp-regression"),  # classify's word; report.py adds the series
    # an improvement, the lkp@intel.com sender of 2025 reports
    (PATCH, "kernel test robot <lkp@intel.com>",
     "Hello,\n\nkernel test robot noticed a 93.1% improvement of will-it-scale.per_process_ops on:\n",
     "lkp-improvement"),
    # a paragraph of the robot's own before the sentence ("we have no idea how …")
    (PATCH, ROBOT, "Hello,\n\nwe have no idea how this change could impact performance, however we saw\n"
                   "an improvement below.\n\n" + OPENING.replace("regression", "improvement"), "lkp-improvement"),
    # a person retelling the robot's sentence: a reply
    (PATCH, "Mira Holm <mira.holm@example.org>", OPENING, "reply"),
    # the robot's sentence inside a line of prose, not opening one: a reply
    (PATCH, ROBOT, "Hello, as before: " + OPENING, "reply"),
    # the robot replying with no performance sentence (a build report thread): a reply
    (PATCH, ROBOT, "Hello,\n\nkernel test robot noticed the following build errors:\n", "reply"),
]


@pytest.mark.parametrize(("subject", "sender", "own", "kind"), CASES)
def test_robot_reports_under_a_patch_are_reports(subject: str, sender: str, own: str, kind: str) -> None:
    assert classify(subject, sender, own) == kind
    assert classify(subject, sender, own.replace("\n", "\r\n")) == kind  # CRLF line endings


def test_the_reply_fixture_is_read_with_its_parameters() -> None:
    report = parse_message(REPLY.read_bytes(), Source("eml", str(REPLY)))
    assert report.kind == "patch-regression" and report.testcase == "stress-ng"
    assert report.series is not None and report.series.attributed
    assert report.series.subject.startswith("[PATCH v2 1/2] nfs: cache the change attribute")
    assert report.series.version == 2
    assert dict(report.parameters) == {"nr_threads": "100%", "testtime": "60s", "test": "msg",
                                       "cpufreq_governor": "performance"}
    assert report.headline is not None and report.headline.metric == "stress-ng.msg.ops_per_sec"
    assert report.in_reply_to == "20250601093012.44120-2-mira.holm@example.org"
    [culprit] = [commit for commit in report.commits if commit.role == "culprit"]
    assert culprit.sha == "3c5e8a91d07f2b64e1a9c0d5f7b3a2e4c6d8f012"


def test_the_daemon_takes_a_patch_reply_report_on_and_plans_it(tmp_path: Path) -> None:
    raw = REPLY.read_bytes()
    record = report_to_json(parse_message(raw, Source("eml")))
    patch_raw = (b"From: Mira Holm <mira.holm@example.org>\nSubject: [PATCH v2 1/2] nfs: cache the change "
                 b"attribute across revalidations\nDate: Sun, 1 Jun 2025 11:30:12 +0200\n"
                 b"Message-ID: <20250601093012.44120-2-mira.holm@example.org>\n\n---\n fs/nfs/inode.c | 2 +-\n")
    patch = report_to_json(parse_message(patch_raw, Source("eml")))
    settings = dataclasses.replace(load_settings(PROJECT / "rules"),
                                   routing=parse_routing('default_channel = "#perf-triage"\n', "test"))
    lab = flow.DaemonContext(settings=settings, database=tmp_path / "t.db", deliver=lambda: None)
    with SqliteStore(tmp_path / "t.db") as store:
        for item, body in ((patch, patch_raw), (record, raw)):
            store.put_message(item["message_id"], body, "linux-nfs", None, "2025-06-12T08:00:00+00:00")
            store.put_record(item["message_id"], report_from_json(item), "test")
        assert flow.admit(store, lab, admit_days=14, now=datetime(2025, 6, 13, tzinfo=UTC)) == [REPLY_ID]
        [parent] = store.outbox()
        assert parent.kind == "parent" and "stress-ng.msg.ops_per_sec" in parent.payload["text"]
        assert store.get_triage(REPLY_ID).state == "new"
        # planned as the daemon plans it: the closest host, its shape
        report = store.get_record(REPLY_ID)
        match = choose_host(settings.need_hosts(), report.test_machine, parameters=report.parameters)
        assert match is not None
        plan = plan_report(report, settings.need_templates(), host=host_shape(match.host))
        if "stress-ng" not in match.host.program_names:
            pytest.skip("stress-ng is not installed (Debian package stress-ng): its stressors are unknown")
        assert isinstance(plan, Plan), plan
        assert plan.template == "stress-ng" and "--msg" in plan.argv
        assert plan.report_metric == "stress-ng.msg.ops_per_sec" and plan.reported_change_percent == -23.6


def test_every_patch_reply_report_of_the_stream_is_read_as_a_report() -> None:
    if not (STREAM / "INDEX.tsv").is_file():
        pytest.skip(f"the shared corpus is absent: {STREAM}/INDEX.tsv not found (tests read it from ../shared)")
    with (STREAM / "INDEX.tsv").open(encoding="utf-8") as index:
        rows = [row for row in csv.DictReader(index, delimiter="\t") if row["subject"].lower().startswith("re:")]
    assert len(rows) >= 7
    for row in rows:
        report = parse_message((STREAM / row["file"]).read_bytes(), Source("eml"))
        assert report.kind in ("patch-regression", "lkp-improvement"), row["file"]
        if report.kind == "patch-regression":  # the series it tested, from the report's own lines
            assert report.series is not None and report.series.subject, row["file"]
        assert report.testcase and report.parameters and report.headline, row["file"]
