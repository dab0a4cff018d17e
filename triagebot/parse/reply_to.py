"""Parse stage: who a reply to a message is written to. Pure: raw headers and records in.

`read_original` reads the headers a reply threads under and is addressed from (as sent: nothing
is decoded that could raise; each address through triagebot/untrusted/addresses.py). The
recipients are the team's rule (rules/mail.toml), never the message's sender's: To the message's
sender, Cc the culprit's author (`culprit_author`: an `Author:` line under the culprit's `commit`
line of the report, else, in an LKP robot's report, which is sent To the culprit's author, the
first address of To that is no list) and the lists of `[lists] allowed` the message was sent
to; at most `[reply] max_recipients`. The reply upstream (reply/draft.py) and the drafted
Tested-by reply to a fix series (fix_test/) both address through `recipients`.
"""
from __future__ import annotations

import email
import email.policy
import re
from collections.abc import Callable
from dataclasses import dataclass
from email.header import decode_header, make_header
from email.headerregistry import Address
from email.message import Message
from email.parser import BytesHeaderParser

from triagebot.records.report import Report
from triagebot.rules.mail import MailRules
from triagebot.untrusted.addresses import Mailbox, choose_recipients, mailboxes

_MESSAGE_ID = re.compile(r"<[^<>\s]+>")
# `git log`/`git show` pasted into a report: the commit line, then (a merge's line) and its Author line
_AUTHOR_LINE = re.compile(r"^[ \t>]*commit ([0-9a-f]{7,40})\b[^\n]*\n(?:[ \t>]*Merge:[^\n]*\n)?[ \t>]*Author:[ \t]*"
                          r"([^\n]+)$", re.MULTILINE | re.IGNORECASE)
MAX_BODY_CHARS = 1 << 20  # what of the report's text is read for the culprit's Author line


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


def recipients(original: Original, author: Mailbox | None, own_address: str | None,
               rules: MailRules) -> tuple[list[Address], list[Address]]:
    """(To, Cc) of the reply: the reporter, the culprit's author and the allowed lists the report
    was sent to (see the module text)."""
    return choose_recipients(original.from_, author, [*original.to, *original.cc], allowed_lists=rules.allowed_lists,
                             own_address=own_address, cap=rules.max_recipients)
