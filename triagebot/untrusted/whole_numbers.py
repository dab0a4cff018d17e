"""Shared by every stage: a whole number written by a stranger (a request's header, query or form), read safely.

`str.isdigit()` accepts what `int()` refuses (a superscript two, `²`) and `int()` accepts what a
number in a request never is (Arabic-Indic digits `١٢`, `+5`, ` 5`, `1_000`), and a string of
5,000 digits takes `int()` past Python's own digit limit. `whole_number` takes ASCII digits only,
at most `MAX_DIGITS` of them, and refuses anything else with `BadNumber`, whose words name the
value (cut and escaped) and what is wrong: the reason a 400 answer gives.
"""
from __future__ import annotations

import re

from triagebot.untrusted.visible import visible

MAX_DIGITS = 18  # below 2**63: every count, size, port, limit and Unix time a request carries
_DIGITS = re.compile(r"[0-9]+")  # ASCII only: `[0-9]`, never `\d` (which takes every script's digits)
SHOWN = 40  # characters of a refused value repeated in its reason


class BadNumber(ValueError):
    """A value that is not a whole number in range; its text is the reason, naming the value."""


def shown(text: str) -> str:
    """`text` as a reason quotes it: at most SHOWN characters, hidden ones escaped."""
    cut = text if len(text) <= SHOWN else text[:SHOWN] + f"… ({len(text)} characters)"
    return repr(visible(cut))


def whole_number(text: str, name: str, *, low: int = 0, high: int | None = None,
                 max_digits: int = MAX_DIGITS) -> int:
    """The number `text` writes in ASCII digits (no sign, space or separator), from `low` to
    `high`; BadNumber naming `name`, the value and what is wrong otherwise."""
    if not text:
        raise BadNumber(f"{name}: empty, where a whole number is expected")
    if len(text) > max_digits:
        raise BadNumber(f"{name} {shown(text)}: {len(text)} characters, a whole number has at most {max_digits} "
                        "digits")
    if not _DIGITS.fullmatch(text):
        raise BadNumber(f"{name} {shown(text)}: not a whole number (ASCII digits 0-9 only)")
    value = int(text)
    if value < low or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise BadNumber(f"{name} {shown(text)}: out of range, a whole number {span}")
    return value
