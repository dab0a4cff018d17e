"""Reply stage: draft the reply a maintainer wants after a confirmed or not-reproduced verdict.

Pure: the report's raw headers, its record, its triage state and its last rerun in; one
`email.message.EmailMessage` out, threaded under the report (In-Reply-To, References, `Re:`
subject, the original sender in To and its recipients in Cc). What was rerun where (host, kernel
commits, plan), the numbers and their interval, the link to the report's page and its plot, and
for a confirmed regression the `#regzbot introduced: <sha> ^` line so regzbot tracks it.
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

REPLY_STATES = ("confirmed", "not-reproduced")
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


def recipients(original: Original, own_address: str | None,
               also_to: str | None = None) -> tuple[list[str], list[str]]:
    """To: the original sender (and `also_to`: a series under review's author, issue 38); Cc: its To
    and Cc, each address once, never ourselves."""
    sender = [(name, address) for name, address in getaddresses([original.from_, also_to or ""]) if address]
    sender = [item for index, item in enumerate(sender)
              if item[1].lower() not in {address.lower() for _, address in sender[:index]}]
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


def body_text(report: Report, state: str, run: dict[str, Any], page: str) -> str:
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
    interval = (f" ({confidence * 100:.0f}% interval {_percent(verdict.get('ci_low'))} .. "
                f"{_percent(verdict.get('ci_high'))})" if confidence else "")
    p_value = verdict.get("p_value")
    lines.append(f"  change:    {_percent(verdict.get('measured_change_percent'))}{interval}"
                 + (f", p = {p_value:.2g}" if p_value is not None else ""))
    lines.append(f"  reported:  {_percent(verdict.get('reported_change_percent'))}")
    lines += ["", f"Verdict: {state}. {verdict.get('reason', '')}".rstrip(), "",
              f"Every sample, the plan and the plot: {page}",
              f"The plot: {page}/plot.svg"]
    culprit = next((commit.sha for commit in report.commits if commit.role == "culprit"), None)
    if state == "confirmed" and culprit and not series:  # a series not merged is nothing for regzbot to track
        lines += ["", f"#regzbot introduced: {culprit} ^"]
    return "\n".join(lines) + "\n"


def draft_reply(original_raw: bytes, report: Report, state: str, run: dict[str, Any] | None, *,
                from_: str | None, base_url: str, reply_message_id: str, date: datetime) -> EmailMessage:
    """The whole reply, ready to print or send; NoReply when the verdict asks for none."""
    if state not in REPLY_STATES:
        raise NoReply(f"the report is {state}: a reply follows a {' or '.join(REPLY_STATES)} verdict")
    if not run or not run.get("verdict"):
        raise NoReply("no rerun with a verdict is stored for it")
    original = read_original(original_raw)
    if not original.message_id:
        raise NoReply("the report has no Message-ID to reply to")
    to, cc = recipients(original, parseaddr(from_)[1] or None if from_ else None,
                        also_to=(run.get("series") or {}).get("author"))
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
    text = body_text(report, state, run, page_url(base_url, original.message_id))
    message.set_content(text, cte="7bit" if text.isascii() else "8bit")  # plain text, never quoted-printable
    return message
