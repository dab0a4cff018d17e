"""Reply stage: draft the reply a maintainer wants after a confirmed or not-reproduced verdict.

Pure: the report's raw headers, its record, its triage state and its last rerun in; one
`email.message.EmailMessage` out, threaded under the report (In-Reply-To, References, `Re:`
subject). What was rerun where (host, kernel commits, plan), the numbers and their interval, the
link to the report's page and its plot, and for a confirmed regression the `#regzbot introduced:
<sha> ^` line so regzbot tracks it.

Who it goes to is the team's rule (rules/mail.toml), never the report's sender's: To the
reporter, Cc the culprit's author (`culprit_author`: an `Author:` line under the culprit's
`commit` line of the report, else, in an LKP robot's report, the first address it was sent To that
is no list) and the lists of `[lists] allowed` the report was sent to; at most `[reply]
max_recipients` (triagebot/untrusted/addresses.py writes each name quoted, or drops it). A header
of the report that cannot be written into the reply is `UnwritableHeader`: that report's error.
"""
from __future__ import annotations

import email
import email.policy
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from email.header import decode_header, make_header
from email.headerregistry import Address
from email.message import EmailMessage, Message
from email.parser import BytesHeaderParser
from email.utils import format_datetime, parseaddr
from typing import Any
from urllib.parse import quote

from triagebot.errors import TriageError
from triagebot.records.report import Report
from triagebot.rules.mail import MailRules
from triagebot.untrusted.addresses import Mailbox, choose_recipients, mailboxes

REPLY_STATES = ("confirmed", "not-reproduced")
MAX_REFERENCES = 20  # the newest ids kept in References (RFC 5322 asks for the chain, MUAs cut it too)
# CRLF on the wire; lines up to RFC 5322's 998, so a long link is not quoted-printable
MAIL_POLICY = email.policy.SMTP.clone(max_line_length=998)
_RE = re.compile(r"^\s*re\s*:", re.IGNORECASE)
_MESSAGE_ID = re.compile(r"<[^<>\s]+>")
# `git log`/`git show` pasted into a report: the commit line, then (a merge's line) and its Author line
_AUTHOR_LINE = re.compile(r"^[ \t>]*commit ([0-9a-f]{7,40})\b[^\n]*\n(?:[ \t>]*Merge:[^\n]*\n)?[ \t>]*Author:[ \t]*"
                          r"([^\n]+)$", re.MULTILINE | re.IGNORECASE)
MAX_BODY_CHARS = 1 << 20  # what of the report's text is read for the culprit's Author line


class NoReply(TriageError):
    """There is nothing to reply yet (no verdict a reply follows, no rerun stored)."""


class UnwritableHeader(TriageError):
    """A header of the report cannot be written into the reply: that report's error, no one else's."""


@dataclass(frozen=True)
class Original:
    """The headers of the report being answered, as the reply threads under them (addresses as
    the parser read them: names decoded, never trusted)."""

    message_id: str
    subject: str
    from_: tuple[Mailbox, ...]
    to: tuple[Mailbox, ...]
    cc: tuple[Mailbox, ...]
    references: tuple[str, ...]


def _decoded(value: str) -> str:
    """An RFC 2047 header value decoded; as it is when it cannot be."""
    try:
        return str(make_header(decode_header(value)))
    except (ValueError, LookupError, UnicodeError, email.errors.HeaderParseError):
        return value


def read_original(raw: bytes) -> Original:
    """The headers a reply threads under and is addressed from. Headers are read as sent (compat32:
    nothing is decoded that could raise); each part is decoded on its own."""
    headers = BytesHeaderParser(policy=email.policy.compat32).parsebytes(raw)
    found = _MESSAGE_ID.search(str(headers.get("Message-ID") or ""))
    references = tuple(_MESSAGE_ID.findall(str(headers.get("References") or "")))

    def addresses(name: str) -> tuple[Mailbox, ...]:
        return tuple(item for value in headers.get_all(name) or () for item in mailboxes(str(value)))
    return Original(message_id=found.group(0) if found else "", subject=_decoded(str(headers.get("Subject") or "")),
                    from_=addresses("From"), to=addresses("To"), cc=addresses("Cc"), references=references)


def report_text(raw: bytes) -> str:
    """The report's first text part, decoded (its first MAX_BODY_CHARS)."""
    message = email.message_from_bytes(raw, policy=email.policy.compat32)
    for part in message.walk():
        if isinstance(part, Message) and part.get_content_type() == "text/plain":
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes):
                charset = part.get_content_charset() or "utf-8"
                try:
                    return payload[:MAX_BODY_CHARS].decode(charset, "replace")
                except LookupError:
                    return payload[:MAX_BODY_CHARS].decode("utf-8", "replace")
    return ""


def culprit_author(original: Original, text: str, report: Report, is_list: Callable[[str], bool]) -> Mailbox | None:
    """The culprit's author as the report names it: the `Author:` line under the culprit's
    `commit` line (git log pasted), else for an LKP robot's report, which is sent To the
    culprit's author, the first address of To that is no list; None when not known. Pure."""
    culprit = next((commit.sha.lower() for commit in report.commits if commit.role == "culprit"), None)
    if culprit:
        for match in _AUTHOR_LINE.finditer(text):
            sha = match.group(1).lower()
            if culprit.startswith(sha) or sha.startswith(culprit):
                found = mailboxes(match.group(2))
                if found:
                    return found[0]
    if report.kind.startswith("lkp-"):
        return next((mailbox for mailbox in original.to if not is_list(mailbox.addr_spec)), None)
    return None


def page_url(base_url: str, message_id: str) -> str:
    """The report's page on the team's web view: BASE/r/<message-id>."""
    return base_url.rstrip("/") + "/r/" + quote(message_id.strip("<>"), safe="@+=-._~!$&*,;:")


def recipients(original: Original, author: Mailbox | None, own_address: str | None,
               rules: MailRules) -> tuple[list[Address], list[Address]]:
    """(To, Cc) of the reply: the reporter, the culprit's author and the allowed lists the report
    was sent to (see the module text)."""
    return choose_recipients(original.from_, author, [*original.to, *original.cc], allowed_lists=rules.allowed_lists,
                             own_address=own_address, cap=rules.max_recipients)


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
    if state == "confirmed" and culprit:
        lines += ["", f"#regzbot introduced: {culprit} ^"]
    return "\n".join(lines) + "\n"


def draft_reply(original_raw: bytes, report: Report, state: str, run: dict[str, Any] | None, *,
                from_: str | None, base_url: str, reply_message_id: str, date: datetime,
                rules: MailRules | None = None) -> EmailMessage:
    """The whole reply, ready to print or send, addressed by `rules` (rules/mail.toml: the allowed
    lists and the cap); NoReply when the verdict asks for none or no one can be written to,
    UnwritableHeader when a header of the report cannot be written into it."""
    if state not in REPLY_STATES:
        raise NoReply(f"the report is {state}: a reply follows a {' or '.join(REPLY_STATES)} verdict")
    if not run or not run.get("verdict"):
        raise NoReply("no rerun with a verdict is stored for it")
    rules = rules or MailRules()
    original = read_original(original_raw)
    if not original.message_id:
        raise NoReply("the report has no Message-ID to reply to")
    author = culprit_author(original, report_text(original_raw), report, rules.is_list)
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
    text = body_text(report, state, run, page_url(base_url, original.message_id))
    message.set_content(text, cte="7bit" if text.isascii() else "8bit")  # plain text, never quoted-printable
    return message
