"""A person's report: the change it states in its own prose becomes its headline, and its plan's."""
from __future__ import annotations

import pytest

from tests.conftest import PROJECT
from triagebot.errors import RulesError
from triagebot.parse.report import parse_message
from triagebot.parse.reported import reported_headline
from triagebot.records.report import Headline, Source
from triagebot.reproduce.plan import Plan, plan_report
from triagebot.rules.templates import load_templates

TEMPLATES = load_templates(PROJECT / "rules")

STATED = [
    ("v6.8 gives 2360 events/s, v6.9-rc1 about 1780 events/s (-24.6%), stable over ten runs.",
     Headline("events/s", -24.6, "regression")),
    ("which suggests around 20% less IOPS (and total IO) for iomap in 4k writes",
     Headline("IOPS", -20.0, "regression")),
    ("fsync went from 10 ms to 13 ms, 30% slower.", Headline("ms", 30.0, "regression")),
    ("we see a 15% regression: 900 IOPS instead of 1060 IOPS.", Headline("IOPS", -15.0, "regression")),
    ("5% faster: 1.2 seconds instead of 1.26 seconds.", Headline("s", -5.0, "improvement")),
    ("Sequential reads: 2.1 GB/s before, 2.6 GB/s after (+23.8%).", Headline("GB/s", 23.8, "improvement")),
    ("Hi,\n\nfs_mark drops from\n41000 files/s to 30500 files/s\n(\u221225.6%) on the new kernel.",
     Headline("files/s", -25.6, "regression")),
    # each kernel's program output led by a line of prose (storage lists, dev6): hdparm under
    # "With <kernel> (remark):", a branch named before its version
    ("With 6.1.0 (plus the quirk):\n\n$ sudo hdparm -t /dev/sdb\n\n/dev/sdb:\n"
     " Timing buffered disk reads: 1500 MB in  3.00 seconds = 500.00 MB/sec\n\n"
     "With ata-6.2 (plus the quirk)\n\n$ sudo hdparm -t /dev/sdb\n\n/dev/sdb:\n"
     " Timing buffered disk reads: 1200 MB in  3.00 seconds = 400.00 MB/sec\n",
     Headline("MB/s", -20.0, "regression")),
    # rsync's progress line under "for <kernel>:", the newer kernel first
    ("for 6.2:\nroot@box:/mnt# rsync -a --progress /data x\n   80.00M  10%    4.00MB/s    0:03:00\n"
     "for 6.1:\nroot@box:/mnt# rsync -a --progress /data y\n   800.00M 100%  200.00MB/s    0:00:04\n",
     Headline("MB/s", -98.0, "regression")),
]

NOT_STATED = [
    "So, it is -31.8% performance down with the commit.",  # a change, but of no unit
    "read 500 MB/s (-10%), write 300 MB/s (-20%).",  # two changes in one sentence
    "It is 20% slower and uses 3 ms more (10% more).",  # two changes
    "2360 events/s against 1780 events/s.",  # values, but no change stated
    "up to 2-3% more IOPS",  # a range
    "1.2 seconds, 40 MB/s; -5%",  # units of two kinds
    "Amean 1 64.29 ( 0.00%) 73.11 * -13.70%*",  # a table row without a unit
    "0% difference at 900 IOPS (+0%).",  # no change
]


@pytest.mark.parametrize("text,expected", STATED, ids=[text[:40] for text, _ in STATED])
def test_a_stated_change_with_a_unit_is_the_headline(text, expected):
    assert reported_headline(text) == expected


@pytest.mark.parametrize("text", NOT_STATED, ids=[text[:40] for text in NOT_STATED])
def test_no_headline_without_one_change_of_one_unit(text):
    assert reported_headline(text) is None


def test_the_first_sentence_that_states_one_wins():
    text = ("The biggest drop is on 70% reads. We measured 2360 events/s and then 1780 events/s "
            "(-24.6%). Later runs showed -10% at 30 events/s.")
    assert reported_headline(text) == Headline("events/s", -24.6, "regression")


def _human_report(body: str) -> bytes:
    return ("From: Tomas Berg <tomas.berg@example.org>\nSubject: [REGRESSION] sysbench cpu slower since v6.9-rc1\n"
            "Date: Mon, 15 Apr 2024 09:12:44 +0200\nMessage-ID: <h1@example.org>\n\n" + body).encode()


def test_the_lab_fixture_report_carries_its_stated_change_into_its_plan():
    report = parse_message((PROJECT / "fixtures/lab/sysbench-cpu-regression.eml").read_bytes(), Source("eml"))
    assert report.kind == "human-report"
    assert report.headline == Headline("events/s", -24.6, "regression")
    plan = plan_report(report, TEMPLATES)
    assert isinstance(plan, Plan)
    assert (plan.metric, plan.report_metric, plan.reported_change_percent) == ("events_per_sec", "events/s", -24.6)


def test_only_a_human_report_reads_its_change_from_prose():
    reply = (b"From: Someone <s@example.org>\nSubject: Re: [REGRESSION] sysbench cpu slower since v6.9-rc1\n"
             b"Message-ID: <r1@example.org>\nIn-Reply-To: <h1@example.org>\n\n"
             b"Here 2360 events/s and 2350 events/s (-0.4%), no regression on my box.\n")
    assert parse_message(reply, Source("eml")).headline is None
    report = parse_message(_human_report("  $ sysbench cpu --threads=2 run\n\n2360 events/s, now 1780 events/s "
                                         "(-24.6%).\n"), Source("eml"))
    assert report.kind == "human-report" and report.headline == Headline("events/s", -24.6, "regression")


def test_a_unit_the_template_cannot_place_leaves_the_primary_metric_with_a_note():
    # fio with rw=randread: the primary metric is read_iops, stated in IOPS, not MB/s; both
    # bandwidth metrics are stated in MB/s, so the unit alone does not say which.
    report = parse_message(_human_report("  $ fio --name=t --rw=randread --bs=4k --size=1G\n\n"
                                         "It gave 800 MB/s, now 600 MB/s (-25%).\n"), Source("eml"))
    assert report.headline == Headline("MB/s", -25.0, "regression")
    plan = plan_report(report, TEMPLATES)
    assert isinstance(plan, Plan) and plan.metric == "read_iops" and plan.reported_change_percent is None
    assert any("the headline metric MB/s is not one fio yields" in note for note in plan.notes)
    iops = parse_message(_human_report("  $ fio --name=t --rw=randread --bs=4k --size=1G\n\n"
                                       "It gave 200k IOPS, now 150k IOPS (-25%).\n"), Source("eml"))
    plan = plan_report(iops, TEMPLATES)
    assert (plan.metric, plan.reported_change_percent) == ("read_iops", -25.0)


GOOD = """
program = "fio"
parser = "fio-json"
argv = ["fio", "{options}"]
primary_metric = "write_iops"
[[metrics]]
name = "write_iops"
better = "higher"
"""


@pytest.mark.parametrize("units,fragment", [
    ('["furlongs"]', "units must be a list of units a report is read in"),
    ('"IOPS"', "units must be a list"),
    ('["ms"]', "better is 'higher' but ms is better lower"),
])
def test_template_units_are_checked(tmp_path, units, fragment):
    path = tmp_path / "reproducers" / "broken.toml"
    path.parent.mkdir()
    path.write_text(GOOD + f"units = {units}\n")
    with pytest.raises(RulesError) as caught:
        load_templates(tmp_path)
    assert str(path) in str(caught.value) and fragment in str(caught.value)


def test_slack_names_a_person_s_report_by_its_subject_and_an_lkp_report_by_its_headline():
    from triagebot.notify import render
    from triagebot.records.report import report_from_json, report_to_json

    person = report_to_json(parse_message((PROJECT / "fixtures/lab/sysbench-cpu-regression.eml").read_bytes(),
                                          Source("eml")))
    assert person["headline"] == {"metric": "events/s", "change_percent": -24.6, "direction": "regression"}
    assert render.parent_message(report_from_json(person), "new")["text"].startswith(
        "[new] [REGRESSION] sysbench cpu events/s down ~25% since v6.9-rc1")
    lkp = dict(person, kind="lkp-regression",
               headline={"metric": "sysbench-cpu.events_per_sec", "change_percent": -24.6, "direction": "regression"})
    assert render.parent_message(report_from_json(lkp), "new")["text"].startswith(
        "[new] sysbench-cpu.events_per_sec -24.6% regression")
