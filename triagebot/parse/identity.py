"""Parse stage: how a message is recognised when it has no Message-ID (archive pages).

The key is the date (UTC, to the minute), the subject (reply prefixes and spacing removed,
case folded) and the sender's display name: archive pages obfuscate addresses
(`josef@...icpanda.com`), so only the name is common to the page and the lore copy.
"""
from __future__ import annotations

import email.utils
import re
from datetime import UTC, datetime

_REPLY_PREFIXES = re.compile(r"^(?:\s*(?:re|aw|sv|fwd?)\s*+(?:\[\d+\])?\s*+:)+", re.IGNORECASE)


def _minute_utc(date_iso: str | None) -> str:
    if not date_iso:
        return ""
    try:
        moment = datetime.fromisoformat(date_iso)
    except ValueError:
        return date_iso.strip()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def _display_name(sender: str) -> str:
    name, address = email.utils.parseaddr(sender)
    name = name or address.split("@", 1)[0]
    return " ".join(name.replace('"', "").split()).casefold()


def fallback_key(date_iso: str | None, subject: str, sender: str) -> str:
    subject = " ".join(_REPLY_PREFIXES.sub("", subject or "").split()).casefold()
    return f"{_minute_utc(date_iso)}|{subject}|{_display_name(sender or '')}"


def fallback_key_of_record(record: dict) -> str:
    """The key of a schema-1 JSON record (its `date`, `subject` and `from`)."""
    return fallback_key(record.get("date"), record.get("subject") or "", record.get("from") or "")
