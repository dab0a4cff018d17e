"""Parse stage: a record holds finite numbers only.

A number of 309 digits or more reads as float infinity, and JSON has no infinity (`parse --json`
wrote `Infinity`, which no JSON reader accepts). `finite_only` leaves out what holds such a
value: an entry of a tuple (a prose number, a measurement, a metric row) is dropped, any other
field (the headline) becomes None, and the record says how many were left out in a defect.
"""
from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from triagebot.records.report import Report

# Only text with a long run of digits (or an exponent) can hold such a number: others are not walked.
_LONG_RUN = re.compile(r"[\d,.]{300}")
# The exponent is looked for from its letter, the digit before it checked after (a scan that
# starts at every digit of the text costs half again as much).
_EXPONENT = re.compile(r"[eE][+-]?\d{3}")
# A run of 300 such characters holds six consecutive characters of every 50th: that sample, a
# fiftieth of the text, is looked at first (a scan of the whole text for the run was an eighth
# of a list-year's parse).
RUN_STRIDE = 50
_SAMPLED_RUN = re.compile(r"[\d,.]{6}")


def may_hold_huge_number(text: str) -> bool:
    """True when the text has a run of 300 digits, commas and dots, or a digit before a
    three-digit exponent: what `finite_only` must then look for in its record."""
    if _SAMPLED_RUN.search(text[::RUN_STRIDE]) and _LONG_RUN.search(text):
        return True
    return any(match.start() and text[match.start() - 1].isdecimal() for match in _EXPONENT.finditer(text))


def finite_only(report: Report) -> Report:
    """`report` without the entries and fields that hold an infinite or NaN number."""
    changes: dict[str, Any] = {}
    dropped = 0
    for field in dataclasses.fields(report):
        value = getattr(report, field.name)
        cleaned, left_out, bad = _clean(value)
        if bad:
            changes[field.name], left_out = None, 1
        elif cleaned is not value:
            changes[field.name] = cleaned
        dropped += left_out
    if not dropped:
        return report
    defect = f"{dropped} number(s) too large to read left out"
    return dataclasses.replace(report, **changes, defects=(*report.defects, defect))


def _clean(value: Any) -> tuple[Any, int, bool]:
    """(the value cleaned, entries dropped inside it, whether the value itself is not finite)."""
    if isinstance(value, float):
        return value, 0, not math.isfinite(value)
    if isinstance(value, tuple):
        kept, dropped, changed = [], 0, False
        for item in value:
            cleaned, inner, bad = _clean(item)
            dropped += inner
            if bad:
                dropped, changed = dropped + 1, True
                continue
            changed = changed or cleaned is not item
            kept.append(cleaned)
        return (tuple(kept) if changed else value), dropped, False
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes: dict[str, Any] = {}
        dropped = 0
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            cleaned, inner, bad = _clean(item)
            if bad:
                return value, dropped + inner, True
            dropped += inner
            if cleaned is not item:
                changes[field.name] = cleaned
        return (dataclasses.replace(value, **changes) if changes else value), dropped, False
    return value, 0, False
