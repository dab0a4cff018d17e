"""Parse stage: patch mails — the `[PATCH vN m/n]` subject, a series' version and parts, and who
sent each mail of a version (whose code it is: rules/trust.py decides where it may run). Pure."""
from __future__ import annotations

import email
import email.policy
import re
from dataclasses import dataclass
from email.message import Message

from triagebot.untrusted.addresses import mailboxes

_PATCH_SUBJECT = re.compile(r"\[(?P<tags>[^\]]*\bPATCH\b[^\]]*)\]", re.IGNORECASE)


_VERSION = re.compile(r"\bv(\d{1,3})\b", re.IGNORECASE)


_PART = re.compile(r"\b(\d{1,4})/(\d{1,4})\b")


@dataclass(frozen=True)
class PatchMail:
    message_id: str
    subject: str
    version: int
    part: int  # 0: a cover letter
    total: int


def message_headers(raw: bytes) -> Message:
    return email.message_from_bytes(raw, policy=email.policy.compat32)


def patch_mail(raw: bytes) -> PatchMail | None:
    """What a `[PATCH vN m/n]` subject says, or None for a message that is no patch mail."""
    message = message_headers(raw)
    return patch_subject(str(message.get("Message-ID", "")), str(message.get("Subject", "")))


def patch_subject(message_id: str, subject: str) -> PatchMail | None:
    """A `[PATCH vN m/n]` subject read (pure), or None for a subject of no patch mail (`Re:`)."""
    subject = " ".join(subject.split())
    match = _PATCH_SUBJECT.search(subject)
    if match is None or re.match(r"\s*re:", subject, re.IGNORECASE):
        return None
    tags = match.group("tags")
    version_match = _VERSION.search(tags)
    version = int(version_match.group(1)) if version_match else 1
    part = _PART.search(tags)
    return PatchMail(message_id.strip().strip("<>"), subject, version,
                     int(part.group(1)) if part else 1, int(part.group(2)) if part else 1)


def series_key(patches: list[PatchMail], version: int) -> str:
    """What names one version of a series, whichever of its mails arrived first: `v2:<the
    Message-ID of its lowest-numbered patch>` (a cover letter may come late or not at all)."""
    parts = sorted((item for item in patches if item.version == version and item.part > 0),
                   key=lambda item: (item.part, item.message_id))
    return f"v{version}:{parts[0].message_id if parts else ''}"


def applied_version(patches: list[PatchMail], patch_message_id: str | None = None) -> int:
    """The version b4 makes am-ready: the named message's, else the newest in the thread."""
    named = next((item for item in patches if item.message_id == patch_message_id), None)
    return named.version if named is not None else max(item.version for item in patches)


def series_senders(thread: list[bytes], patches: list[PatchMail], version: int) -> dict[str, str]:
    """Message-ID -> the From address (lower case; "" when it has none) of every patch mail of
    `version` in the thread, its cover letter too: whose code that version is."""
    wanted = {item.message_id for item in patches if item.version == version}
    senders: dict[str, str] = {}
    for raw in thread:
        headers = message_headers(raw[:65536])
        message_id = str(headers.get("Message-ID", "")).strip().strip("<>")
        if message_id in wanted:
            found = mailboxes(str(headers.get("From", "")))
            senders[message_id] = found[0].addr_spec.lower() if found else ""
    return senders
