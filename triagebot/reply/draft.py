"""Reply stage: draft the reply a maintainer wants after a confirmed or not-reproduced verdict.

Pure: the report's raw headers, its record, its triage state and its last rerun in; one
`email.message.EmailMessage` out, threaded under the report (In-Reply-To, References, `Re:`
subject, the original sender in To and its recipients in Cc). What was rerun where (host, kernel
commits, plan), the numbers and their interval, the bisection and the fix tests on record when
there are any (record.py: the first bad commit with its steps and runs; what was tested, the
recovery and its interval), the link to the report's page and its plot, and for a confirmed
regression the `#regzbot introduced: <sha> ^` line so regzbot tracks it.
"""
from __future__ import annotations

import email.policy
import re
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from email.utils import format_datetime, getaddresses, parseaddr
from typing import Any
from urllib.parse import quote

from triagebot.errors import TriageError
from triagebot.records.report import Report
from triagebot.reply.record import OnRecord
from triagebot.verdict.outcome import confidence_text

REPLY_STATES = ("confirmed", "not-reproduced")
NOTHING_ON_RECORD = OnRecord()  # no bisection, no fix test
MAX_REFERENCES = 20  # the newest ids kept in References (RFC 5322 asks for the chain, MUAs cut it too)
# CRLF on the wire; lines up to RFC 5322's 998, so a long link is not quoted-printable
MAIL_POLICY = email.policy.SMTP.clone(max_line_length=998)
_RE = re.compile(r"^\s*re\s*:", re.IGNORECASE)


class NoReply(TriageError):
    """There is nothing to reply yet (no verdict a reply follows, no rerun stored)."""


@dataclass(frozen=True)
class Original:
    """The headers of the report being answered, as the reply threads under them."""

    message_id: str
    subject: str
    from_: str
    to: tuple[str, ...]
    cc: tuple[str, ...]
    references: tuple[str, ...]


def read_original(raw: bytes) -> Original:
    headers = BytesHeaderParser(policy=email.policy.default).parsebytes(raw)
    message_id = str(headers.get("Message-ID") or "").strip()
    references = tuple(re.findall(r"<[^<>\s]+>", str(headers.get("References") or "")))
    return Original(message_id=message_id, subject=str(headers.get("Subject") or ""),
                    from_=str(headers.get("From") or ""),
                    to=tuple(str(value) for value in headers.get_all("To") or ()),
                    cc=tuple(str(value) for value in headers.get_all("Cc") or ()),
                    references=references)


def page_url(base_url: str, message_id: str) -> str:
    """The report's page on the team's web view: BASE/r/<message-id>."""
    return base_url.rstrip("/") + "/r/" + quote(message_id.strip("<>"), safe="@+=-._~!$&*,;:")


def recipients(original: Original, own_address: str | None) -> tuple[list[str], list[str]]:
    """To: the original sender; Cc: its To and Cc, each address once, never ourselves."""
    sender = [(name, address) for name, address in getaddresses([original.from_]) if address]
    seen = {address.lower() for _, address in sender} | ({own_address.lower()} if own_address else set())
    copies = []
    for name, address in getaddresses([*original.to, *original.cc]):
        if address and "@" in address and address.lower() not in seen:
            seen.add(address.lower())
            copies.append((name, address))

    def show(name: str, address: str) -> str:
        return f"{name} <{address}>" if name else address
    return [show(*item) for item in sender], [show(*item) for item in copies]


def _percent(value: Any) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _short(commit: Any) -> str:
    text = str(commit or "?")
    return text[:12] if len(text) > 12 and all(char in "0123456789abcdef" for char in text) else text


def bisection_lines(bisection: dict[str, Any]) -> list[str]:
    """A bisection on record, in the reply's plain style: where, the range, what it found."""
    commits = bisection.get("commits")
    lines = [f"  host:      {bisection.get('host', '?')}",
             f"  range:     {bisection.get('good', '?')}..{bisection.get('bad', '?')}"
             + (f" ({commits} commits)" if commits else "")]
    steps, runs = len(bisection.get("steps") or []), bisection.get("runs_used", 0)
    regression = bisection.get("regression_percent")
    if bisection.get("status") == "found":
        lines.append(f"  first bad: {bisection.get('first_bad')}")
        lines.append(f"  steps:     {steps} steps, {runs} runs"
                     + (f"; good to bad {_percent(regression)}" if regression is not None else ""))
    else:
        low, high = (bisection.get("range") or ["?", "?"])[:2]
        lines.append(f"  result:    {bisection.get('status')}: {bisection.get('reason', '')}".rstrip())
        if bisection.get("status") == "inconclusive":
            lines.append(f"  left:      {low}..{high} ({bisection.get('left', '?')} commits) after {steps} steps, "
                         f"{runs} runs")
    return lines


def fix_test_lines(result: dict[str, Any]) -> list[str]:
    """A fix test on record: the series and kernels tested, the runs, the change and the recovery."""
    verdict = result.get("verdict") or {}
    recovery = result.get("recovery") or {}
    confidence = verdict.get("confidence")
    interval = (f" ({confidence_text(confidence)} interval {_percent(verdict.get('ci_low'))} .. "
                f"{_percent(verdict.get('ci_high'))})" if confidence else "")
    series = f" <{result['series']}>" if result.get("series") else ""
    return [f"  series:    v{result.get('version', '?')}{series}",
            f"  host:      {result.get('host', '?')}",
            f"  kernels:   {result.get('suspect', '?')} against it patched ({_short(result.get('patched'))})",
            f"  runs:      {verdict.get('runs_base', '?')} unpatched, {verdict.get('runs_suspect', '?')} patched",
            f"  change:    {_percent(verdict.get('measured_change_percent'))}{interval}",
            f"  recovery:  {recovery.get('sentence', '?')}"]


def record_text(record: OnRecord) -> list[str]:
    """The bisections, then the fix tests on record, each under a line saying what it is."""
    lines: list[str] = []
    for bisection in record.bisections:
        lines += ["", "We bisected it on our lab:", "", *bisection_lines(bisection)]
    for result in record.fix_tests:
        lines += ["", f"We tested v{result.get('version', '?')} of the fix on our lab:", "", *fix_test_lines(result)]
    return lines


def body_text(report: Report, state: str, run: dict[str, Any], page: str, record: OnRecord = NOTHING_ON_RECORD) -> str:
    """The reply's text (see the module text for what it says)."""
    verdict = run.get("verdict") or {}
    plan = run.get("plan") or {}
    samples = run.get("samples") or []
    base = [sample["value"] for sample in samples if sample.get("role") == "base"]
    suspect = [sample["value"] for sample in samples if sample.get("role") == "suspect"]
    metric = plan.get("metric") or (report.headline.metric if report.headline else "the metric")
    opening = ("We reran this report in our lab and see the regression too."
               if state == "confirmed" else
               "We reran this report in our lab and do not see the reported change.")
    command = " ".join(plan.get("argv") or []) or plan.get("template") or "?"
    lines = ["Hello,", "", opening, "",
             f"  host:      {run.get('host', '?')}",
             f"  base:      {run.get('base_commit', '?')}",
             f"  suspect:   {run.get('suspect_commit', '?')}",
             f"  plan:      {plan.get('template', '?')}: {command}",
             f"  measuring: {metric} ({plan.get('better', verdict.get('better', '?'))} is better)",
             f"  runs:      {verdict.get('runs_base', len(base))} base, "
             f"{verdict.get('runs_suspect', len(suspect))} suspect", ""]
    base_median, suspect_median = _median(base), _median(suspect)
    if base_median is not None and suspect_median is not None:
        lines.append(f"  median:    base {base_median:.6g}, suspect {suspect_median:.6g}")
    confidence = verdict.get("confidence")
    interval = (f" ({confidence_text(confidence)} interval {_percent(verdict.get('ci_low'))} .. "
                f"{_percent(verdict.get('ci_high'))})" if confidence else "")
    p_value = verdict.get("p_value")
    lines.append(f"  change:    {_percent(verdict.get('measured_change_percent'))}{interval}"
                 + (f", p = {p_value:.2g}" if p_value is not None else ""))
    lines.append(f"  reported:  {_percent(verdict.get('reported_change_percent'))}")
    lines += ["", f"Verdict: {state}. {verdict.get('reason', '')}".rstrip()]
    lines += record_text(record)
    lines += ["", f"Every sample, the plan and the plot: {page}",
              f"The plot: {page}/plot.svg"]
    culprit = next((commit.sha for commit in report.commits if commit.role == "culprit"), None)
    if state == "confirmed" and culprit:
        lines += ["", f"#regzbot introduced: {culprit} ^"]
    return "\n".join(lines) + "\n"


def draft_reply(original_raw: bytes, report: Report, state: str, run: dict[str, Any] | None, *,
                from_: str | None, base_url: str, reply_message_id: str, date: datetime,
                record: OnRecord = NOTHING_ON_RECORD) -> EmailMessage:
    """The whole reply, ready to print or send; NoReply when the verdict asks for none. `record`:
    the bisections and fix tests on record (record.on_record), told after the verdict."""
    if state not in REPLY_STATES:
        raise NoReply(f"the report is {state}: a reply follows a {' or '.join(REPLY_STATES)} verdict")
    if not run or not run.get("verdict"):
        raise NoReply("no rerun with a verdict is stored for it")
    original = read_original(original_raw)
    if not original.message_id:
        raise NoReply("the report has no Message-ID to reply to")
    to, cc = recipients(original, parseaddr(from_)[1] or None if from_ else None)
    message = EmailMessage(policy=MAIL_POLICY)
    if from_:  # printed for copy-paste without rules/mail.toml: the person's own client sets it
        message["From"] = from_
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    subject = " ".join(original.subject.split())
    message["Subject"] = subject if _RE.match(subject) else f"Re: {subject}"
    message["Date"] = format_datetime(date)
    message["Message-ID"] = reply_message_id
    message["In-Reply-To"] = original.message_id
    message["References"] = " ".join([*original.references, original.message_id][-MAX_REFERENCES:])
    text = body_text(report, state, run, page_url(base_url, original.message_id), record)
    message.set_content(text, cte="7bit" if text.isascii() else "8bit")  # plain text, never quoted-printable
    return message
