"""Presentation: a report's headline change, with ONE sign rule for every display.

`triage show`, `triage list`, the web pages and the Slack parent all show a report's headline
through `headline_change`: the headline metric's change as the report's own metric table has it
(LKP's table is signed: `-5.1%  fsmark.files_per_sec`), else the number as the report wrote it
(`-5.1% regression` keeps its sign). LKP subjects often give no sign (`fsmark.files_per_sec 5.1%
regression`, "noticed a 5.1% regression"): with no table row to read the sign from, the change
is shown unsigned, as written. A sign is never made up: a throughput regression is a fall, and a
`+` added to an unsigned number said the opposite of the table below it.

The record is not changed: `Headline.change_percent` stays what the text said.
"""
from __future__ import annotations

from dataclasses import dataclass

from triagebot.records.report import Report

# the kinds whose headline parse/report.py computes from the writer's numbers (signed)
COMPUTED_HEADLINE_KINDS = ("human-report", "human-perf-complaint")


@dataclass(frozen=True)
class HeadlineChange:
    """The change a headline shows, and whether its sign is known."""

    percent: float
    signed: bool  # from the table, or written with a sign, or computed from values (a person's report)

    def text(self) -> str:
        """`-5.1%`, `+12%`; `5.1%` when the sign is not known."""
        return f"{self.percent:+g}%" if self.signed else f"{self.percent:g}%"


def headline_change(report: Report) -> HeadlineChange | None:
    """The headline's change by the one rule (see the module text); None without a headline."""
    headline = report.headline
    if headline is None:
        return None
    for row in report.metrics:  # the report's own table (not an "also impacted" test's), in percent
        if row.name == headline.metric and row.test is None and row.change_unit == "percent":
            return HeadlineChange(row.change, True)
    # a person's report has its headline from the numbers it gave (parse/reported.py): signed by
    # computation; an LKP headline (an LKP report's, or the one a reply quotes) is signed only
    # when its text wrote a sign, and a `+` reads back as no sign at all
    computed = report.kind in COMPUTED_HEADLINE_KINDS
    return HeadlineChange(headline.change_percent, computed or headline.change_percent < 0)


def headline_text(report: Report) -> str:
    """`fsmark.files_per_sec -5.1% regression`: metric, change, direction; '' without a headline."""
    change = headline_change(report)
    if change is None or report.headline is None:
        return ""
    return f"{report.headline.metric} {change.text()} {report.headline.direction}".strip()


def change_text(report: Report) -> str:
    """The headline's change alone (`-5.1%`), as the index and `triage list` show it; '' without one."""
    change = headline_change(report)
    return change.text() if change is not None else ""
