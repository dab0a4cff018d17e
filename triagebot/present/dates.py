"""The moments a person types: `--since` of `triage list` and the `since` filter of the web pages."""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from triagebot.errors import TriageError

SINCE_FORMS = "YYYY-MM-DD, an ISO date-time (2024-06-01T12:00:00+00:00), today, yesterday, or Nd (N days ago)"
_DAYS_AGO = re.compile(r"([0-9]{1,5})d")  # ASCII digits: `\d` takes every script's


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """--since as a moment (naive = UTC); TriageError naming the value and the accepted forms."""
    text = value.strip().lower()
    today = (now or datetime.now(UTC)).astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if text == "today":
        return today
    if text == "yesterday":
        return today - timedelta(days=1)
    days = _DAYS_AGO.fullmatch(text)
    if days:
        return today - timedelta(days=int(days.group(1)))
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise TriageError(f"--since {value!r}: not a date; give {SINCE_FORMS}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
