"""Parse stage: LKP comparison tables (`%stddev %change %stddev`) and `fail:runs` tables."""
from __future__ import annotations

import math
import re

from triagebot.records.report import FailureRow, MetricRow

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_STDDEV = r"(?:\s*±\s*(\d+(?:\.\d+)?)%)?"
# `   37.99 ±  9%     +92.5%      73.13        fileio.latency_95th_ms`
# `    0.95 ± 15%      +0.3        1.26 ± 11%  perf-profile.calltrace...`
# A row LKP points at in its preamble ("no diff for fsmark.files_per_sec as below (a)") ends
# with an arrow and a label: `6.40  +0.0%  6.40  fsmark.files_per_sec     <-------- (a)`.
_ROW = re.compile(
    rf"^\s*({_NUMBER}){_STDDEV}\s+([-+]?(?:{_NUMBER}|Inf|inf|nan)%?)\s+({_NUMBER}){_STDDEV}"
    r"\s+(\S+)(?:\s++<-++\s*+(?:\(\w{1,3}\))?)?\s*$"
)
# `          1:4          -25%            :4     dmesg.WARNING:at#for_ip_interrupt_entry/0x`
_FAILURE_ROW = re.compile(
    r"^\s*(\d*):(\d+)\s+([-+]?\d+(?:\.\d+)?)%\s+(\d*):(\d+)\s+(\S(?:.*\S)?)\s*$"  # not (\S.*?)\s*$: quadratic
)
_TABLE_HEADER = re.compile(r"^\s*%stddev\s+%change\s+%stddev\s*$")
_FAILURE_HEADER = re.compile(r"^\s*fail:runs\s+%reproduction\s+fail:runs\s*$")


def _float(text: str) -> float:
    return float(text)


def parse_metric_row(line: str, quoted: bool = False, test: str | None = None) -> MetricRow | None:
    """One comparison row (marked with `quoted` and `test`), or None when the line is not one."""
    match = _ROW.match(line)
    if not match:
        return None
    base, base_sd, change, head, head_sd, name = match.groups()
    unit = "percent" if change.endswith("%") else "absolute"
    change_value = _float(change.rstrip("%"))
    if math.isnan(change_value) or math.isinf(change_value):
        return None  # LKP never prints these in reports; a line that does is not a row we trust
    return MetricRow(
        name=name,
        base=_float(base),
        base_stddev_percent=_float(base_sd) if base_sd is not None else None,
        change=change_value,
        change_unit=unit,
        head=_float(head),
        head_stddev_percent=_float(head_sd) if head_sd is not None else None,
        quoted=quoted,
        test=test,
    )


def parse_failure_row(line: str) -> FailureRow | None:
    match = _FAILURE_ROW.match(line)
    if not match:
        return None
    base_fail, base_runs, reproduction, head_fail, head_runs, name = match.groups()
    return FailureRow(
        name=name,
        base_fail=int(base_fail) if base_fail else 0,
        base_runs=int(base_runs),
        reproduction_percent=float(reproduction),
        head_fail=int(head_fail) if head_fail else 0,
        head_runs=int(head_runs),
    )


def _axes_values(lines: list[str], index: int) -> str | None:
    """The `/`-joined value line under a details block's axes header at lines[index], if it is one."""
    stripped = lines[index].strip()
    if not (stripped.endswith(":") and "/" in stripped and "tbox_group" in stripped):
        return None
    if index + 1 >= len(lines):
        return None
    values = lines[index + 1].strip()
    return values if values.count("/") == stripped.count("/") else None


def parse_tables(lines: list[str], *, quoted: bool = False) -> tuple[list[MetricRow], list[FailureRow]]:
    """Every row of every comparison and failure table, in order.

    A report's details hold its own test's table first; the tables of the other tests it
    names ("also has significant impact on the following tests") follow, each under its own
    axes block: their rows carry that block's value line in `test`. `quoted` marks every row
    (tables read from the text a reply quotes).
    """
    metrics: list[MetricRow] = []
    failures: list[FailureRow] = []
    mode = None
    own_test: str | None = None  # the first details block's values: the report's own test
    test: str | None = None  # the current table's, when another test's
    for index, line in enumerate(lines):
        if "tbox_group" in line:
            values = _axes_values(lines, index)
            if values is not None:
                if own_test is None:
                    own_test = values
                test = None if values == own_test else values
                mode = None
                continue
        if _TABLE_HEADER.match(line):
            mode = "metrics"
            continue
        if _FAILURE_HEADER.match(line):
            mode = "failures"
            continue
        if mode is None:
            continue
        stripped = line.strip()
        if stripped in ("", "\\          |                \\", "|             |             |"):
            continue
        if set(stripped) <= set("\\| "):
            continue  # the `\  |  \` guide line under a header
        if mode == "metrics":
            row = parse_metric_row(line, quoted, test)
            if row is not None:
                metrics.append(row)
                continue
            failure = parse_failure_row(line)
            if failure is not None:
                failures.append(failure)
                continue
        else:
            failure = parse_failure_row(line)
            if failure is not None:
                failures.append(failure)
                continue
            row = parse_metric_row(line, quoted, test)
            if row is not None:
                mode = "metrics"
                metrics.append(row)
                continue
        mode = None  # anything else ends the table
    return metrics, failures
