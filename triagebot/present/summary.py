"""Presentation: one report as `triage show` prints it and the web page shows it: its summary, line by
line, its last rerun and where the daemon has it."""
from __future__ import annotations

import re
from dataclasses import dataclass

from triagebot.present.headline import headline_text
from triagebot.records.report import Commit, Report
from triagebot.records.states import RUN_CUT_SHORT
from triagebot.untrusted.visible import visible

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


def metric_order(report: Report) -> list[int]:
    """Indexes of the report's metric rows in the order people are shown them everywhere (`triage
    show`, the Slack parent, the terminal): the headline, the testcase's own metrics, the rest."""
    return sorted(range(len(report.metrics)), key=lambda index: _row_priority(report, report.metrics[index]))


@dataclass(frozen=True)
class SummaryLine:
    """One line of a report's summary, as `triage show` prints it and the web page shows it.

    `form` says how it is laid out: "field" (label, then text), "commit" (a commit's role as
    label; `commit` holds it, for a link), "heading" (a line of its own, rows follow), "row"
    (a table row under the heading before it) or "note" (a remark on the whole record)."""

    form: str
    label: str
    text: str
    commit: Commit | None = None


def _field(label: str, text: str) -> SummaryLine:
    return SummaryLine("field", label, text)


def summary_lines(report: Report, *, all_rows: bool = False) -> list[SummaryLine]:
    """The summary of one report, line by line (the headline line, kind and id, is not one)."""
    lines = [_field("subject", report.subject),
             _field("from", report.from_),
             _field("date", report.date or "(unknown)")]
    if report.headline:
        lines.append(_field("headline", headline_text(report)))
    for commit in report.commits:
        subject = f' ("{commit.subject}")' if commit.subject else ""
        where = f"  [{commit.tree} {commit.branch}]" if commit.tree else ""
        lines.append(SummaryLine("commit", commit.role, f"{commit.sha}{subject}{where}", commit))
    if report.testcase:
        lines.append(_field("testcase", report.testcase))
    if report.parameters:
        lines.append(_field("params", " ".join(f"{k}={v}" for k, v in report.parameters)))
    if report.test_machine:
        machine = report.test_machine
        tbox = f" [{machine.tbox_group}]" if machine.tbox_group else ""
        lines.append(_field("machine", f"{machine.description}{tbox}"))
    if report.syzbot:
        lines.append(_field("syzbot", f"{report.syzbot.title}  {report.syzbot.dashboard or ''}"))
    numbers = report.stance_numbers
    if report.stance != "none":
        lines.append(_field("stance", f"{report.stance}{stance_evidence(report)}"))
    if numbers is not None:
        lines.append(_field("numbers", numbers.evidence))
    for objection in report.objections:
        lines.append(_field("raises", f"[{objection.kind}] \"{objection.evidence}\""))
    if report.metrics:
        rows = report.metrics
        shown = rows if all_rows else [rows[index] for index in metric_order(report)[:TOP_METRIC_ROWS]]
        note = "" if all_rows or len(rows) <= TOP_METRIC_ROWS else \
            f", top {TOP_METRIC_ROWS}: the headline, then the testcase's own metrics, by change; --all for every row"
        lines.append(SummaryLine("heading", "metrics", f"metrics ({len(rows)} rows{note}):"))
        for row in shown:
            unit = "%" if row.change_unit == "percent" else ""
            base_sd = f" ±{row.base_stddev_percent:g}%" if row.base_stddev_percent is not None else ""
            head_sd = f" ±{row.head_stddev_percent:g}%" if row.head_stddev_percent is not None else ""
            lines.append(SummaryLine("row", "metrics", f"{_format_number(row.base) + base_sd:>16} "
                                     f"{row.change:>+9g}{unit:1} {_format_number(row.head) + head_sd:>16}  {row.name}"))
    if report.failures:
        lines.append(SummaryLine("heading", "failures", f"failures ({len(report.failures)} rows):"))
        for failure in report.failures[:TOP_METRIC_ROWS]:
            lines.append(SummaryLine("row", "failures", f"{failure.base_fail}:{failure.base_runs} -> "
                                     f"{failure.head_fail}:{failure.head_runs}  {failure.name}"))
    for reproducer in report.reproducers:
        what = reproducer.command or reproducer.url or ("(attached job file)" if reproducer.content else "")
        lines.append(_field("repro", f"[{reproducer.kind}] {what}"))
    if report.kernel_config:
        lines.append(_field("config", " ".join(f"{k}={v}" for k, v in report.kernel_config)))
    if report.quoted:
        lines.append(SummaryLine("note", "", "(facts above come from quoted text)"))
    for defect in report.defects:
        lines.append(_field("defect", defect))
    return lines


def stance_evidence(report: Report) -> str:
    """What the stance line adds after the stance: the writer's words, or that their numbers decided."""
    numbers = report.stance_numbers
    said = report.stance_evidence
    if numbers is not None and said and said.startswith(numbers.evidence):
        # The stance came from the writer's numbers (printed below); any words they overruled follow.
        rest = said[len(numbers.evidence):].lstrip("; ")
        return "  from the writer's numbers" + (f"; {rest}" if rest else "")
    return f'  "{said}"' if said else ""


def format_line(line: SummaryLine) -> str:
    """One summary line as the terminal shows it."""
    if line.form == "commit":
        return f"  {line.label + ':':11}{line.text}"
    if line.form == "row":
        return f"    {line.text}"
    if line.form in ("heading", "note"):
        return f"  {line.text}"
    return f"  {line.label + ':':10}{line.text}"


def render_report(report: Report, *, all_rows: bool = False) -> str:
    lines = [f"{report.kind}  {report.message_id or '(no Message-ID)'}"]
    lines += [format_line(line) for line in summary_lines(report, all_rows=all_rows)]
    # every line holds someone's text: hidden characters shown as escapes, line by line
    return "\n".join(visible(line) for line in lines)


_BLOCKS = "▁▂▃▄▅▆▇█"


_COMMIT = re.compile(r"([0-9a-f]{12})[0-9a-f]*(.*)", re.DOTALL)


def short_commit(commit: str) -> str:
    """A commit as 12 hex digits, keeping what follows them: "c0ffee1234ab^" stays whole."""
    match = _COMMIT.fullmatch(commit)
    return match.group(1) + match.group(2) if match else commit


def sample_plot(values: list[float], low: float, high: float) -> str:
    """One character a sample, its height between the run's lowest and highest value."""
    span = high - low
    return "".join(_BLOCKS[min(7, int((value - low) / span * 8))] if span > 0 else _BLOCKS[3] for value in values)


def render_run(run: dict) -> str:
    """The last rerun: its verdict, and each side's samples as a small plot in run order. A run
    whose host could not switch kernels says so: both sides ran one kernel (an A/A run)."""
    from triagebot.verdict.median import median
    from triagebot.verdict.same_kernel import A_A_ONLY, SAME_KERNEL_SIDES, as_stored, is_same_kernel

    run = as_stored(run)
    base, suspect = short_commit(run["base_commit"]), short_commit(run["suspect_commit"])
    same_kernel = is_same_kernel(run)
    if same_kernel:
        lines = [f"  rerun:    on {run['host']}, A/A: base and suspect both on its running kernel (it cannot "
                 f"switch kernels; {base} and {suspect} were not booted), {run['status']}"]
    else:
        lines = [f"  rerun:    on {run['host']}, {base} (base) against {suspect} (suspect), {run['status']}"]
    verdict = run.get("verdict")
    if run.get("status") == RUN_CUT_SHORT:
        lines.append(f"  cut short: {run.get('error') or 'interrupted'}; the samples below are kept as taken, "
                     "with no verdict (a new run starts over)")
    elif verdict and verdict.get("outcome") == A_A_ONLY:
        lines.append(f"  outcome:  {A_A_ONLY} (no verdict on the commit): {verdict['reason']}")
    elif verdict:
        lines.append(f"  verdict:  {verdict['outcome']}: {verdict['reason']}")
    elif run.get("error"):
        lines.append(f"  error:    {run['error']}")
    samples = run.get("samples", [])
    values = [sample["value"] for sample in samples]
    if values:
        low, high = min(values), max(values)
        for role in ("base", "suspect"):
            side = [sample["value"] for sample in samples if sample["role"] == role]
            if side:
                middle = median(side)
                name = SAME_KERNEL_SIDES[role] if same_kernel else role
                lines.append(f"  {name + ':':9} {sample_plot(side, low, high)}  median {middle:.6g} over "
                             f"{len(side)} runs ({low:.6g} .. {high:.6g})")
    return "\n".join(lines)


def render_triage(triage, notifications) -> str:
    """Where the daemon has this report: its state, channel, and what it has told the team."""
    host = f", host {triage.host}" if triage.host else ""
    lines = [f"  triage:   {triage.state} since {triage.updated_at} ({triage.channel}{host})"]
    edits: dict[str, int] = {}  # a progress message's edits (edit-TARGET-N): one line, the last
    for row in notifications:
        target = _edited(row.kind)
        if target is not None:
            edits[target] = edits.get(target, 0) + 1
    shown: set[str] = set()
    for row in reversed(notifications):
        target = _edited(row.kind)
        if target is not None and target in shown:
            continue
        where = f" ts {row.posted_ts}" if row.posted_ts else ""
        problem = f": {row.last_error}" if row.status != "sent" and row.last_error else ""
        if target is not None:
            shown.add(target)
            count = edits[target]
            lines.append(f"    {'edit-' + target:18} {row.status}{where}{problem} "
                         f"({count} edit{'' if count == 1 else 's'}, the last shown)")
        else:
            lines.append(f"    {row.kind:18} {row.status}{where}{problem}")
    return "\n".join([lines[0], *reversed(lines[1:])])


def _edited(kind: str) -> str | None:
    """The kind an edit row (`edit-TARGET-N`) edits; None for any other row."""
    if not kind.startswith("edit-"):
        return None
    target, _, number = kind[len("edit-"):].rpartition("-")
    return target if target and number.isdigit() else None
