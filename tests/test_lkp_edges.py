"""LKP report shapes seen on real reports the first parser got wrong (our own fixtures, real layout)."""
from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from triagebot.parse.metrics import parse_metric_row, parse_tables
from triagebot.parse.report import parse_message
from triagebot.records.report import Report, Source

EDGES = FIXTURES / "lkp-edges"
AIM7_DETAILS = ("gcc-9/performance/4BRD_12G/ext4/x86_64-rhel-8.3/3000/RAID0/debian-10.4-x86_64-20200603.cgz/"
                "lkp-csl-2sp9/disk_wrt/aim7/0x5003006")


def report(name: str) -> Report:
    return parse_message((EDGES / name).read_bytes(), Source("eml"))


@pytest.fixture(scope="module")
def older() -> Report:
    return report("tag-base-two-tables-2021.eml")


@pytest.fixture(scope="module")
def preamble() -> Report:
    return report("preamble-padded-link-2023.eml")


def test_an_annotated_row_is_a_row_and_the_table_goes_on(older: Report) -> None:
    own = [row.name for row in older.metrics if row.test is None]
    assert own == ["fio.write_bw_MBps", "fio.write_iops", "fio.write_clat_mean_us", "vmstat.system.cs"]
    row = parse_metric_row("     61785           -14.9%      52577        fio.write_iops     <-------- (a)")
    assert row is not None and row.name == "fio.write_iops" and row.change == -14.9
    assert parse_metric_row("     61785           -14.9%      52577        fio.write_iops     see below") is None


def test_a_tag_base_is_kept(older: Report) -> None:
    assert [(commit.sha, commit.role) for commit in older.commits] == [
        ("5d1e9a3c7b2f4e6a8c0d1b3f5e7a9c2d4b6f8e01", "culprit"), ("v5.13-rc2", "base")]


def test_compiler_and_config_come_from_the_details_axes(older: Report) -> None:
    assert (older.compiler, older.lkp_config) == ("gcc-9", "x86_64-rhel-8.3")


def test_rows_of_an_also_impacted_tests_table_name_that_test(older: Report) -> None:
    other = [(row.name, row.test) for row in older.metrics if row.test is not None]
    assert other == [("aim7.jobs-per-min", AIM7_DETAILS), ("aim7.time.elapsed_time", AIM7_DETAILS)]
    assert [entry.testcase for entry in older.also_impacted] == ["aim7"]
    assert older.testcase == "fio-basic" and older.headline is not None
    assert older.headline.metric in [row.name for row in older.metrics if row.test is None]


def test_the_culprit_is_the_reports_own_commit_line_not_the_preambles(preamble: Report) -> None:
    roles = {commit.sha: commit.role for commit in preamble.commits}
    assert roles["c3a5f1e9b7d2c4a6e8f0b1d3c5e7a9b2d4f6a8c0"] == "culprit"
    assert roles["0b7e2d4f16a8c9e3b5d7f1a2c4e6b8d0f2a4c6e8"] == "mentioned"
    culprit = next(commit for commit in preamble.commits if commit.role == "culprit")
    assert culprit.branch == "master" and culprit.tree and culprit.tree.endswith("torvalds/linux.git")


def test_padded_status_lines_give_their_commits(preamble: Report) -> None:
    mentioned = [(commit.sha, commit.branch) for commit in preamble.commits
                 if commit.role == "mentioned" and commit.branch]
    assert mentioned == [("7e4b1c9d3a5f2e8b6d0c4a7f1e3b5d9c2a6f8e04", "linus/master"),
                         ("1f3d5b7a9c2e4f6a8b0d2c4e6f8a1b3d5c7e9f02", "linux-next/master")]


def test_the_older_link_trailer_is_the_closes_link(preamble: Report) -> None:
    closes = "https://lore.kernel.org/oe-lkp/202302271508.6e4d2a91-oliver.sang@intel.com"
    assert preamble.links.closes == closes and closes not in preamble.links.other
    assert preamble.links.reported_by == "kernel test robot <oliver.sang@intel.com>"


def test_quoted_tables_mark_their_rows() -> None:
    lines = ["         %stddev     %change         %stddev",
             "             \\          |                \\  ",
             "     20224            -8.3%      18546        will-it-scale.per_thread_ops"]
    rows, _ = parse_tables(lines, quoted=True)
    assert [(row.name, row.quoted, row.test) for row in rows] == [("will-it-scale.per_thread_ops", True, None)]
    assert parse_tables(lines)[0][0].quoted is False


def test_a_plan_reads_the_reported_change_from_the_reports_own_table() -> None:
    from tests.conftest import PROJECT
    from triagebot.records.report import Headline, MetricRow
    from triagebot.reproduce.plan import Plan, plan_report
    from triagebot.rules.templates import load_templates

    other_run = MetricRow("fileio.latency_95th_ms", 10.0, None, 40.0, "percent", 14.0, None,
                          test="gcc-12/performance/1SSD/ext4/seqwr/lkp-icl-2sp7/fileio")
    report = Report(message_id="edge@example", in_reply_to=None, subject="s", from_="f", date=None,
                    source=Source("text"), kind="lkp-regression", testcase="fileio",
                    parameters=(("rwmode", "seqwr"), ("iomode", "sync"), ("filenum", "1024f"), ("size", "64G"),
                                ("nr_threads", "100%"), ("period", "600s"), ("disk", "1HDD"), ("fs", "ext4")),
                    headline=Headline("fileio.latency_95th_ms", 92.5, "regression"), metrics=(other_run,))
    plan = plan_report(report, load_templates(PROJECT / "rules"))
    assert isinstance(plan, Plan) and plan.reported_change_percent == 92.5  # not the other run's +40%
