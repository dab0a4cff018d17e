"""Presentation: a readable text summary of one Report for the terminal."""
from __future__ import annotations

from triagebot.records import Report
from triagebot.visible import visible

TOP_METRIC_ROWS = 15


def _format_number(value: float) -> str:
    if abs(value) >= 1e6:
        return f"{value:.4g}"
    return f"{value:g}"


def _row_priority(report: Report, row) -> tuple[int, float]:
    """Headline metric first, then the benchmark's own metrics, then the rest; bigger change first."""
    headline = report.headline.metric if report.headline else None
    prefix = headline.split(".", 1)[0] if headline else (report.testcase or "")
    own = bool(prefix) and row.name.startswith(prefix + ".")
    rank = 0 if row.name == headline else 1 if own else 2 if not row.name.startswith("perf-profile.") else 3
    return rank, -abs(row.change) if row.change_unit == "percent" else 0.0


def render_report(report: Report, *, all_rows: bool = False) -> str:
    lines = [f"{report.kind}  {report.message_id or '(no Message-ID)'}",
             f"  subject:  {report.subject}",
             f"  from:     {report.from_}",
             f"  date:     {report.date or '(unknown)'}"]
    if report.headline:
        headline = report.headline
        lines.append(f"  headline: {headline.metric} {headline.change_percent:+g}% {headline.direction}")
    for commit in report.commits:
        subject = f' ("{commit.subject}")' if commit.subject else ""
        where = f"  [{commit.tree} {commit.branch}]" if commit.tree else ""
        lines.append(f"  {commit.role + ':':11}{commit.sha}{subject}{where}")
    if report.testcase:
        lines.append(f"  testcase: {report.testcase}")
    if report.parameters:
        lines.append("  params:   " + " ".join(f"{k}={v}" for k, v in report.parameters))
    if report.test_machine:
        machine = report.test_machine
        tbox = f" [{machine.tbox_group}]" if machine.tbox_group else ""
        lines.append(f"  machine:  {machine.description}{tbox}")
    if report.syzbot:
        lines.append(f"  syzbot:   {report.syzbot.title}  {report.syzbot.dashboard or ''}")
    numbers = report.stance_numbers
    if report.stance != "none":
        said = report.stance_evidence
        if numbers is not None and said and said.startswith(numbers.evidence):
            # The stance came from the writer's numbers (printed below); any words they overruled follow.
            rest = said[len(numbers.evidence):].lstrip("; ")
            evidence = "  from the writer's numbers" + (f"; {rest}" if rest else "")
        else:
            evidence = f'  "{said}"' if said else ""
        lines.append(f"  stance:   {report.stance}{evidence}")
    if numbers is not None:
        lines.append(f"  numbers:  {numbers.evidence}")
    for objection in report.objections:
        lines.append(f"  raises:   [{objection.kind}] \"{objection.evidence}\"")
    if report.metrics:
        rows = report.metrics
        shown = rows if all_rows else sorted(rows, key=lambda row: _row_priority(report, row))[:TOP_METRIC_ROWS]
        note = "" if all_rows or len(rows) <= TOP_METRIC_ROWS else \
            f", top {TOP_METRIC_ROWS}: the headline, then the testcase's own metrics, by change; --all for every row"
        lines.append(f"  metrics ({len(rows)} rows{note}):")
        for row in shown:
            unit = "%" if row.change_unit == "percent" else ""
            base_sd = f" ±{row.base_stddev_percent:g}%" if row.base_stddev_percent is not None else ""
            head_sd = f" ±{row.head_stddev_percent:g}%" if row.head_stddev_percent is not None else ""
            lines.append(f"    {_format_number(row.base) + base_sd:>16} {row.change:>+9g}{unit:1} "
                         f"{_format_number(row.head) + head_sd:>16}  {row.name}")
    if report.failures:
        lines.append(f"  failures ({len(report.failures)} rows):")
        for failure in report.failures[:TOP_METRIC_ROWS]:
            lines.append(f"    {failure.base_fail}:{failure.base_runs} -> "
                         f"{failure.head_fail}:{failure.head_runs}  {failure.name}")
    for reproducer in report.reproducers:
        what = reproducer.command or reproducer.url or ("(attached job file)" if reproducer.content else "")
        lines.append(f"  repro:    [{reproducer.kind}] {what}")
    if report.kernel_config:
        lines.append("  config:   " + " ".join(f"{k}={v}" for k, v in report.kernel_config))
    if report.quoted:
        lines.append("  (facts above come from quoted text)")
    for defect in report.defects:
        lines.append(f"  defect:   {defect}")
    # every line holds someone's text: hidden characters shown as escapes, line by line
    return "\n".join(visible(line) for line in lines)
