"""Parse stage: how a message is recognised when it has no Message-ID (archive pages).

The key is the date (UTC, to the minute), the subject (reply prefixes and spacing removed,
case folded) and the sender's display name: archive pages obfuscate addresses
(`josef@...icpanda.com`), so only the name is common to the page and the lore copy. A message
with no date (a paste) is known by its text as well: the key must never merge two texts.
"""
from __future__ import annotations

import email.utils
import hashlib
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


def strip_reply_prefixes(subject: str) -> str:
    """The subject without its leading `Re:`, `AW:`, `Fwd:` … prefixes."""
    return _REPLY_PREFIXES.sub("", subject or "")


def text_digest(text: str | bytes) -> str:
    """A short digest of a message's text, its line endings and trailing spaces aside."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").strip().split("\n")]
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()[:20]


def fallback_key(date_iso: str | None, subject: str, sender: str, text: str | bytes | None = None) -> str:
    """The key; without a date, a digest of `text` (when given) is part of it.

    A date to the minute with subject and sender tells two messages apart, and is what an
    archive page and its lore copy share (their texts differ: the page obfuscates addresses).
    Without a date, subject and sender alone would merge two different texts (two pastes with
    neither date nor subject), so the text decides.
    """
    subject = " ".join(strip_reply_prefixes(subject).split()).casefold()
    key = f"{_minute_utc(date_iso)}|{subject}|{_display_name(sender or '')}"
    if not _minute_utc(date_iso) and text is not None:
        key += f"|{text_digest(text)}"
    return key


def fallback_key_of_record(record: dict, raw: str | bytes | None = None) -> str:
    """The key of a schema-1 JSON record (its `date`, `subject` and `from`; `raw`, the
    message's bytes, counts when the record has no date)."""
    return fallback_key(record.get("date"), record.get("subject") or "", record.get("from") or "", raw)
