"""Reply stage: draft the reply a maintainer wants after a confirmed or not-reproduced verdict.

Pure: the report's raw headers, its record, its triage state and its last rerun in; one
`email.message.EmailMessage` out, threaded under the report (In-Reply-To, References, `Re:`
subject). What was rerun where (host, kernel commits, plan), the numbers and their interval, the
bisection and the fix tests on record when there are any (record.py: the first bad commit with its
steps and runs; what was tested, the recovery and its interval), the link to the report's page and
its plot, and for a confirmed regression the `#regzbot introduced: <sha> ^` line so regzbot tracks
it.

Who it goes to is the team's rule (rules/mail.toml), never the report's sender's
(parse/reply_to.py): the reporter, the culprit's author when the report names one, and the
allowed lists the report was sent to, at most `[reply] max_recipients`, each name quoted or
dropped. A header of the report that cannot be written into the reply is `UnwritableHeader`:
that report's error.
"""
from __future__ import annotations

import email
import email.policy
import re
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from typing import Any
from urllib.parse import quote

from triagebot.errors import TriageError
from triagebot.parse.reply_to import culprit_author, read_original, recipients, report_text
from triagebot.records.report import Report
from triagebot.reply.record import OnRecord
from triagebot.rules.mail import MailRules
from triagebot.untrusted.addresses import mailboxes
from triagebot.verdict.outcome import confidence_text

REPLY_STATES = ("confirmed", "not-reproduced")
NOTHING_ON_RECORD = OnRecord()  # no bisection, no fix test
MAX_REFERENCES = 20  # the newest ids kept in References (RFC 5322 asks for the chain, MUAs cut it too)
# CRLF on the wire; lines up to RFC 5322's 998, so a long link is not quoted-printable
MAIL_POLICY = email.policy.SMTP.clone(max_line_length=998)
_RE = re.compile(r"^\s*re\s*:", re.IGNORECASE)


class NoReply(TriageError):
    """There is nothing to reply yet (no verdict a reply follows, no rerun stored)."""


class UnwritableHeader(TriageError):
    """A header of the report cannot be written into the reply: that report's error, no one else's."""


def page_url(base_url: str, message_id: str) -> str:
    """The report's page on the team's web view: BASE/r/<message-id>."""
    return base_url.rstrip("/") + "/r/" + quote(message_id.strip("<>"), safe="@+=-._~!$&*,;:")


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
    series = run.get("series") or {}
    opening = ("We reran this report in our lab and see the regression too."
               if state == "confirmed" else
               "We reran this report in our lab and do not see the reported change.")
    if series:  # issue 38: a series under review, measured as its base against base+series
        opening = (f"We applied v{series.get('version')} of the series ({series.get('subject')}) with b4 on its base "
                   f"{series.get('base')} and measured it against the base: "
                   + ("we see the slowdown too." if state == "confirmed" else "we do not see the reported slowdown."))
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
    if state == "confirmed" and culprit and not series:  # a series not merged is nothing for regzbot to track
        lines += ["", f"#regzbot introduced: {culprit} ^"]
    return "\n".join(lines) + "\n"


def draft_reply(original_raw: bytes, report: Report, state: str, run: dict[str, Any] | None, *,
                from_: str | None, base_url: str, reply_message_id: str, date: datetime,
                rules: MailRules | None = None, record: OnRecord = NOTHING_ON_RECORD) -> EmailMessage:
    """The whole reply, ready to print or send, addressed by `rules` (rules/mail.toml: the allowed
    lists and the cap); NoReply when the verdict asks for none or no one can be written to,
    UnwritableHeader when a header of the report cannot be written into it. `record`: the
    bisections and fix tests on record (record.on_record), told after the verdict."""
    if state not in REPLY_STATES:
        raise NoReply(f"the report is {state}: a reply follows a {' or '.join(REPLY_STATES)} verdict")
    if not run or not run.get("verdict"):
        raise NoReply("no rerun with a verdict is stored for it")
    rules = rules or MailRules()
    original = read_original(original_raw)
    if not original.message_id:
        raise NoReply("the report has no Message-ID to reply to")
    series_author = mailboxes(str((run.get("series") or {}).get("author") or ""))
    # a series under review's regression (issue 38): the series' author is the culprit's
    author = (series_author[0] if series_author
              else culprit_author(original, report_text(original_raw), report, rules.is_list))
    to, cc = recipients(original, author, parseaddr(from_)[1] or None if from_ else None, rules)
    if not to:
        raise NoReply("the report names no address a reply can be written to (its From is not a plain address)")
    message = EmailMessage(policy=MAIL_POLICY)
    subject = " ".join(original.subject.split())
    headers: list[tuple[str, Any]] = [
        ("From", from_), ("To", to), ("Cc", cc), ("Subject", subject if _RE.match(subject) else f"Re: {subject}"),
        ("Date", format_datetime(date)), ("Message-ID", reply_message_id), ("In-Reply-To", original.message_id),
        ("References", " ".join([*original.references, original.message_id][-MAX_REFERENCES:]))]
    for name, value in headers:
        if not value:  # no From: printed for copy-paste without rules/mail.toml (the person's client sets it)
            continue
        try:
            message[name] = value
        except (ValueError, TypeError, email.errors.HeaderParseError) as error:
            raise UnwritableHeader(f"the report's {name} cannot be written into a reply "
                                   f"({' '.join(str(error).split())[:200]}): no reply is drafted for it") from None
    text = body_text(report, state, run, page_url(base_url, original.message_id), record)
    message.set_content(text, cte="7bit" if text.isascii() else "8bit")  # plain text, never quoted-printable
    return message
