"""A regression tracker's forward of a bug tracker's report (issue 24, round three): the quoted
report is the report, so its figures and machine are the record's; the culprit is the one the
`#regzbot introduced` line names. Written for the test in the shape fixtures/labels/dev5 shows."""
from __future__ import annotations

from triagebot.parse.report import parse_message
from triagebot.records.report import Headline, Source

FORWARD = """From: Tracker <tracker@example.org>
To: subsystem@example.org
Subject: [regression] long delays at boot with secure boot since 6.12
Date: Tue, 10 Sep 2024 11:01:24 +0200
Message-ID: <forward-1@example.org>

Hi, I noticed a report about a regression in the bug tracker that appears to be caused by
0123456789ab ("foo: add checks"). To quote from the ticket:

> With secure boot on, the boot takes ~24 seconds after 6.12 kernel.
> It is ~8 seconds on 6.10 kernel version.
> CPU: Intel Xeon E3-1230 v5

See the ticket for details.

#regzbot introduced: 0123456789ab
"""


def _report(raw: str):
    draft = parse_message(raw.encode(), Source("eml"))
    return getattr(draft, "report", draft)


def test_a_forward_takes_its_figures_and_machine_from_the_quoted_report() -> None:
    report = _report(FORWARD)
    assert report.kind == "human-report"
    assert report.headline == Headline("s", 200.0, "regression")
    assert report.test_machine is not None and report.test_machine.cpu_model == "Intel Xeon E3-1230 v5"
    assert [(commit.sha, commit.role) for commit in report.commits] == [("0123456789ab", "culprit")]


def test_without_a_regzbot_line_the_quotation_is_someone_else_s_text() -> None:
    report = _report(FORWARD.replace("#regzbot introduced: 0123456789ab\n", ""))
    assert report.kind in ("human-report", "human-perf-complaint")  # headlines are read for both
    assert report.headline is None and report.test_machine is None
