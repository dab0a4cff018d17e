"""Parse stage: a slowdown told only by the writer's own pair of figures, one without the change
and one with it, and no word of slowness — the second look's last form (issue 38). Pure.

A series' author or reviewer often answers "what does it cost?" with two figures and nothing
else: "about 1.2 seconds of sys time before the kernel is patched, and about 1.3 seconds after"
(dev12:53, linux-mips), "With hardened_usercopy=on, the execution time would be around 2.121
seconds … With hardened_usercopy=off … around 2.011 seconds" (dev12:58, an arm64 series). The
same reading agrees with reports the word forms already reach: a FTDI rate from 71 to 24.65
MB/s (dev9:14), a TPM call from 102.8 ms to 1941 ms (dev5:64), a u-boot start from 10 s to 22 s
(dev9:10).

How: each line or sentence (at most MAX_PIECE characters) of the writer's own text that holds a
value of a time or a rate unit and a mark naming a side; each value goes to the mark nearest it
(within SIDE_REACH characters). A mark names the reference (a label opening a line: before,
without, w/o, baseline, base, vanilla, stock, unpatched, original, old; "before/without … the
patch"; unpatched, vanilla, baseline anywhere; `=off`) or the changed kernel (a label: after,
with, w/, patched, new; "after/with … the patch"; patched; `=on`). When both sides hold values of
one kind, their means are compared: a time grown or a rate fallen by the verdict's default floor
or more is a slowdown. Values of both kinds that disagree (one worse, the other better) are a
mixed result and no reading. A bare "on", "off", "before" or "after" names no side: "On an 885,
null_syscall reports 2227ns" names a board.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from triagebot.parse.patch_reports import MAX_OWN
from triagebot.rules.floors import DEFAULT_FLOOR_PERCENT

MAX_PIECE = 400  # characters of one line or sentence read: a longer one is prose, not a figure's line
SIDE_REACH = 80  # characters between a value and the side word it is given to

_TIME_UNITS = {"ns": 1e-9, "nsec": 1e-9, "nsecs": 1e-9, "us": 1e-6, "usec": 1e-6, "usecs": 1e-6, "µs": 1e-6,
               "ms": 1e-3, "msec": 1e-3, "msecs": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0,
               "seconds": 1.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0}
# the micro sign (U+00B5) and the Greek mu (U+03BC) are one letter to a case-blind match: one key
_MU = str.maketrans({"\u03bc": "\u00b5"})
_VALUE = re.compile(
    r"(?<![\w.])(?P<number>\d+(?:\.\d+)?)\s*"
    r"(?:(?P<time>nsecs?|ns|usecs?|us|µs|msecs?|ms|secs?|seconds?|s|mins?|minutes?)\b"
    r"|(?P<rate>[KMGT]i?B/s(?:ec)?|[kmg]b/s|[KMG]bps|[KMG]bits?/s(?:ec)?|[kKM]?\s?IOPS|iops|ops/s(?:ec)?|fps|tps|"
    r"events/s(?:ec)?|req/s))", re.IGNORECASE)
# A side is named three ways: a label opening a line ("before:", "Without patches:", "w/o series
# 244.1"), a preposition before the change's own words ("before the kernel is patched", "with this
# patch", "w/o series"), or a switch's value ("=off", "=on"). A bare "before" or "after" is time in
# prose: "the 50ms the host should wait before de-asserting PERST#" and "the second 100ms delay
# after a reset" (linux-pci 2023, a controller's review) name no side.
# the change's own words, "kernel" among them ("before the kernel is" ending a wrapped line of
# dev12:53) but not before a version ("with kernel 6.1" names one); and no revert between ("after
# reverting the commit" is the side without it, "before reverting" the side with it)
_CHANGE_WORDS = r"(?:patch\w*|series|change\w*|commit|fix\w*|kernel(?![ \t]+v?\d))"
_REFERENCE = re.compile(
    r"^[ \t]*(?:[-*•][ \t]*)?(?:before|without|w/o|baseline|base|vanilla|stock|unpatched|original|old)\b[^\n:=]{0,40}:"
    r"|\b(?:before|without|w/o)\s+(?:(?!revert)[\w-]+\s+){0,3}?" + _CHANGE_WORDS + r"\b"
    r"|\b(?:unpatched|vanilla|baseline)\b|=\s*off\b",
    re.IGNORECASE | re.MULTILINE)
_CHANGED = re.compile(
    r"^[ \t]*(?:[-*•][ \t]*)?(?:after|with|w/|patched|new)\b[^\n:=]{0,40}:"
    r"|\b(?:after|with|w/)\s+(?:(?!revert)[\w-]+\s+){0,3}?" + _CHANGE_WORDS + r"\b"
    r"|\bpatched\b|=\s*on\b",
    re.IGNORECASE | re.MULTILINE)
_PIECE = re.compile(r"(?<=[.!?])\s+|\n")


@dataclass(frozen=True)
class MeasuredPair:
    kind: str  # time / rate
    reference: float  # the mean of the reference side's values, in seconds for a time
    changed: float  # the changed side's
    percent: float  # the change, signed: positive when the value grew
    pieces: tuple[str, ...]  # the lines or sentences the values stand in, whitespace folded
    numbers: tuple[str, ...]  # the values as written, reference side first


def _value(match: re.Match[str]) -> float | None:
    """The value in seconds for a time, as written for a rate; None for a unit a case-blind match
    let through in another script ("10 ſ": the long s folds to s)."""
    number = float(match["number"])
    if not match["time"]:
        return number
    scale = _TIME_UNITS.get(match["time"].lower().translate(_MU))
    return None if scale is None else number * scale


def _sides(piece: str) -> list[tuple[str, int]]:
    """The side words of one piece and where each stands ("without" is not also "with")."""
    references = [(match.start(), match.end()) for match in _REFERENCE.finditer(piece)]
    marks = [("reference", start) for start, _ in references]
    marks += [("changed", match.start()) for match in _CHANGED.finditer(piece)
              if not any(start <= match.start() < end for start, end in references)]
    return marks


def measured_pair(own: str) -> MeasuredPair | None:
    """The writer's own reference and changed figures of one kind when the changed side is the
    slower by the floor or more (see the module text), else None."""
    text = own[:MAX_OWN]  # as much of the writer's own text as the word forms read
    # most review replies hold no two values of a unit at all: one pass over the text says so
    first = _VALUE.search(text)
    if first is None or _VALUE.search(text, first.end()) is None:
        return None
    found: dict[tuple[str, str], list[tuple[float, str, str]]] = {}
    for piece in _PIECE.split(text):
        if len(piece) > MAX_PIECE or not any(char.isdigit() for char in piece):
            continue
        values = list(_VALUE.finditer(piece))
        if not values:
            continue
        marks = _sides(piece)
        if not marks:
            continue
        for value in values:
            side, at = min(marks, key=lambda mark: abs(mark[1] - value.start()))
            number = _value(value)
            if abs(at - value.start()) <= SIDE_REACH and number is not None:
                kind = "time" if value["time"] else "rate"
                found.setdefault((side, kind), []).append((number, " ".join(value.group(0).split()),
                                                           " ".join(piece.split())))
    pairs = []
    for kind in ("time", "rate"):
        reference, changed = found.get(("reference", kind)), found.get(("changed", kind))
        if not reference or not changed:
            continue
        before = sum(item[0] for item in reference) / len(reference)
        after = sum(item[0] for item in changed) / len(changed)
        if before <= 0:
            continue
        percent = (after - before) / before * 100.0
        slower = percent if kind == "time" else -percent
        pieces = tuple(dict.fromkeys(item[2][:400] for item in (*reference, *changed)))
        numbers = tuple(dict.fromkeys(item[1] for item in (*reference, *changed)))
        pairs.append((slower, MeasuredPair(kind, before, after, round(percent, 1), pieces, numbers)))
    if not pairs or any(slower <= -DEFAULT_FLOOR_PERCENT for slower, _ in pairs):
        return None  # no pair, or a mixed result: one kind faster
    slower, pair = max(pairs, key=lambda item: item[0])
    return pair if slower >= DEFAULT_FLOOR_PERCENT else None
