"""Parse stage: a writer's own measurements — benchmark output pasted into a reply, and numbers.

Structure, read by rules: fio result lines (`read: IOPS=363k, BW=88.5GiB/s …`, `clat (usec):
min=78, max=1351, avg=174.46, stdev=28.86`), mmtests comparison rows (`Amean 1 97.93 ( 0.00%)
135.67 ( -38.54%)`), and numbers with a rate unit and a k/M multiplier in prose ("~500k iops",
"40-50k write IOPS", "1607kIOPs"). Each is kept with the text it came from.

Numbers on a side, for a stance from numbers (numbers.py compares them):

- A labelled value, with the spread and run count written beside it: "before: 2341 events/s
  (mean of 5 runs, σ 41)", "vanilla: 954MB/s (mean out of 5 runs, σ: 30.83)", "6.8: 2341 ± 41
  events/s (n=5)", "patched: 1780 events/s ±1.8% (5 runs)", and plain "With patchset: 404.81MiB/s".
  Only a label that names a side counts (before/after, with/without, base/patched, vanilla,
  good/bad, old/new, reverted, a kernel version): "Note: 5 files" is no measurement, nor is a
  value with neither a unit nor a spread ("Parent ID: 5").
  A spread written `±N` or `+/-N` is taken as the standard deviation (LKP's tables and most
  writers mean that), `±N%` as relative to the value.
- A side header on its own line ("Unpatched Linus:", "after:") labels the benchmark results
  below it (fio's `write: IOPS=…` lines, sysbench's `events per second:`) until the next header.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterator

from triagebot.records.report import Measurement

MAX_MEASUREMENTS = 200
_MULTIPLIER = {"": 1.0, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6}

_FIO_RESULT = re.compile(
    r"^[ \t]*(read|write|trim)\s*:\s*IOPS=([\d.]+)([kKM]?)\s*,\s*BW=([\d.]+)([KMGT]i?B/s)", re.MULTILINE)
_FIO_LATENCY = re.compile(
    r"^[ \t]*(clat|slat|lat)\s*\((nsec|usec|msec)\)\s*:\s*min=\s*([\d.]+)\s*,\s*max=\s*([\d.]+)\s*,"
    r"\s*avg=\s*([\d.]+)\s*,\s*stdev=\s*([\d.]+)", re.MULTILINE)
_MMTESTS_ROW = re.compile(
    r"^[ \t]*(Amean|Hmean|Gmean|Stddev|CoeffVar|Min|Max|BAmean-\d+)\s+(\S+)\s+([\d.]+)\s*\(\s*[-+\d.]+%\)"
    r"\s+([\d.]+)\s*+\*?\s*+\(\s*([-+\d.]+)%\)", re.MULTILINE)
_RATE = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s*(?:-|–|to)\s*(\d+(?:\.\d+)?))?\s*+([kKM])?\s*+"
    r"((?:write |read )?(?:IOPS|IOPs|iops)|files/s(?:ec)?|ops/s(?:ec)?)\b")


_NUMBER = r"\d[\d,]*(?:\.\d+)?"
# "before: 2341 events/s (mean of 5 runs, σ 41)": a short label, a colon (or =), one value.
_LABELLED_VALUE = re.compile(
    r"^[ \t]*+(?:[-*•][ \t]*+)?(?P<label>[A-Za-z0-9(][^\n:=]{0,48}?)[ \t]*[:=][ \t]*~?[ \t]*"
    r"(?P<value>" + _NUMBER + r")(?![\d.:/-]|[0-9a-fA-F]{2})"
    r"(?:[ \t]*(?:±|\+/-|\+-)[ \t]*(?P<pm>" + _NUMBER + r")(?P<pm_percent>[ \t]*%)?)?"
    r"[ \t]*(?P<multiplier>[kKM](?![A-Za-z]))?[ \t]*"
    r"(?P<unit>[A-Za-zµ%][\w/%µ.-]*(?:[ \t]+per[ \t]+sec(?:ond)?)?)?(?P<rest>[^\n]*)$",
    re.MULTILINE)
_SPREAD = re.compile(
    r"(?:(?:σ|sigma|std\.?[ \t]?dev\.?|stdev|stddev|standard deviation|\bsd\b)[ \t]*[:=]?[ \t]*|"
    r"(?:±|\+/-|\+-)[ \t]*)(?P<spread>" + _NUMBER + r")(?P<percent>[ \t]*%)?", re.IGNORECASE)
_RUNS = re.compile(r"\b(?P<runs>\d{1,4})[ \t]+(?:runs|iterations|samples|tries|trials|repetitions|times)\b|"
                   r"\bn[ \t]*=[ \t]*(?P<n>\d{1,4})\b", re.IGNORECASE)
# A header naming a side, alone on its line: "before:", "Unpatched Linus:", "6.5.2 kernel:".
_SIDE_HEADER = re.compile(r"^[ \t]*+(?:[-*•][ \t]*+)?([A-Za-z0-9(][^\n:]{0,48}?)[ \t]*:[ \t]*$", re.MULTILINE)
_SYSBENCH_RATE = re.compile(r"^[ \t]*events per second:[ \t]*(" + _NUMBER + r")[ \t]*$", re.MULTILINE)

# What a label says of its side, by its first word; numbers.py orders the sides from it.
REFERENCE_WORDS = ("before", "without", "w/o", "unpatched", "vanilla", "stock", "baseline", "base", "good",
                   "old", "reverted")
CHANGED_WORDS = ("after", "with", "w/", "patched", "bad", "new")
# A feature switched off by name: the scheduler's `NO_DELAY_DEQUEUE`, `NO_PLACE_LAG`,
# `NO_RUN_TO_PARITY` (written to /sys/kernel/debug/sched/features), alone or after "with": the
# state without the change under discussion, so the reference side.
_FEATURE_OFF = re.compile(r"^(?:with[ \t]+)?NO_[A-Z][A-Z0-9_]{2,40}$")
_VERSION = re.compile(r"^(?:linux[- ]?|kernel[- ]?)?v?(\d+)\.(\d+)(?:\.(\d+))?(?:-rc(\d+))?(?![\w.])")
# A label is a few plain words: register dumps, lock classes and quoted code are not.
_PLAIN_LABEL = re.compile(r"[\w .,/()+-]+")
MAX_LABEL_WORDS = 6


def is_feature_off(label: str) -> bool:
    """A label naming a feature switched off (`NO_DELAY_DEQUEUE`)."""
    return bool(_FEATURE_OFF.match(label.strip()))


def side_of(label: str) -> str | tuple[int, ...] | None:
    """"reference", "changed", a kernel version as a tuple, or None for no side.

    The side is said by the label's first word ("Without patchset", "Unpatched Linus", "with X
    reverted": a revert is the reference state) or by a kernel version. A label about a fix ("with
    the fix") is no side: numbers for a fix say nothing of whether the regression reproduces.
    """
    if _FEATURE_OFF.match(label.strip()):
        return "reference"
    text = label.strip().lower()
    words = text.split()
    if not words or len(words) > MAX_LABEL_WORDS or "fix" in text or not _PLAIN_LABEL.fullmatch(text):
        return None
    version = _VERSION.match(text)
    if version:
        major, minor, patch, candidate = version.groups()
        # an -rcN comes before its release: 6.9-rc1 < 6.9
        return (int(major), int(minor), int(patch or 0), int(candidate) if candidate else 1_000)
    first = words[0].rstrip(",")
    if first in REFERENCE_WORDS or (first in CHANGED_WORDS and "revert" in text):
        return "reference"
    if first in CHANGED_WORDS:
        return "changed"
    return None


def _number(text: str) -> float:
    return float(text.replace(",", ""))


# Where a labelled value may be: a colon or = before a digit (found fast, then its line is read).
_VALUE_AFTER_SEPARATOR = re.compile(r"[:=][ \t]*~?[ \t]*\d")


_SIDE_START = re.compile(r"[ \t]*+(?:[-*•][ \t]*+)?(?:before|after|with|w/|base|patched|unpatched|vanilla|stock|good|"
                         r"bad|old|new|reverted|linux|kernel|v?\d+\.\d|NO_[A-Z])", re.IGNORECASE)


def _labelled_lines(own_text: str) -> Iterator[re.Match[str]]:
    """Matches of _LABELLED_VALUE on the lines that hold a separator before a digit, once a line."""
    done = -1
    for hint in _VALUE_AFTER_SEPARATOR.finditer(own_text):
        start = own_text.rfind("\n", 0, hint.start()) + 1
        if start <= done:
            continue
        done = start
        if not _SIDE_START.match(own_text, start):
            continue  # most such lines are logs and headers: their first word names no side
        match = _LABELLED_VALUE.match(own_text, start)
        if match is not None:
            yield match


def _labelled_values(own_text: str) -> list[tuple[int, Measurement]]:
    found: list[tuple[int, Measurement]] = []
    for match in _labelled_lines(own_text):
        label = match.group("label").strip()
        if side_of(label) is None:
            continue
        value = _number(match.group("value")) * _MULTIPLIER[match.group("multiplier") or ""]
        unit = (match.group("unit") or "").rstrip(".,;")
        rest = match.group("rest")
        if not unit and not match.group("pm") and not _SPREAD.search(rest):
            continue  # "Parent ID: 5": a bare number is no measurement
        stddev = None
        if match.group("pm"):
            stddev = _number(match.group("pm"))
            if match.group("pm_percent"):
                stddev = value * stddev / 100.0
        else:
            spread = _SPREAD.search(rest)
            if spread:
                stddev = _number(spread.group("spread"))
                if spread.group("percent"):
                    stddev = value * stddev / 100.0
        if not math.isfinite(value) or (stddev is not None and not math.isfinite(stddev)):
            continue  # 400 digits read as a float are infinite: no measurement, and no JSON number
        runs_match = _RUNS.search(rest)
        runs = int(runs_match.group("runs") or runs_match.group("n")) if runs_match else None
        text = " ".join(match.group(0).split())
        found.append((match.start(), Measurement(text, None, value, unit, label=label, stddev=stddev, runs=runs)))
    return found


def _side_headers(own_text: str) -> list[tuple[int, str | None]]:
    """(offset, label) of each header line alone; the label is None for a header naming no side
    ("Synchronous crcs:"), which still ends the side above it."""
    return [(match.start(), match.group(1).strip() if side_of(match.group(1)) is not None else None)
            for match in _SIDE_HEADER.finditer(own_text)]


def _with_headers(found: list[tuple[int, Measurement]],
                  headers: list[tuple[int, str | None]]) -> list[tuple[int, Measurement]]:
    """Benchmark results below a side header carry its label (a result above every header none)."""
    if not any(label for _, label in headers):
        return found
    labelled: list[tuple[int, Measurement]] = []
    for offset, measurement in found:
        label = None
        for header_offset, header in headers:
            if header_offset > offset:
                break
            label = header
        if label is not None and measurement.label is None and measurement.name is not None:
            measurement = Measurement(measurement.text, measurement.name, measurement.value, measurement.unit,
                                      label=label, runs=1)
        labelled.append((offset, measurement))
    return labelled


def read_measurements(own_text: str) -> tuple[Measurement, ...]:
    """Measurements in the writer's own text, in order of appearance."""
    found: list[tuple[int, Measurement]] = []
    if ":" in own_text or "=" in own_text:
        found.extend(_labelled_values(own_text))
    if "events per second" in own_text:
        found.extend((match.start(), Measurement(match.group(0).strip(), "sysbench.events_per_second",
                                                 _number(match.group(1)), "events/s"))
                     for match in _SYSBENCH_RATE.finditer(own_text))
    if "IOPS=" in own_text or "clat" in own_text or "lat (" in own_text:
        for match in _FIO_RESULT.finditer(own_text):
            direction = match.group(1)
            iops = float(match.group(2)) * _MULTIPLIER[match.group(3)]
            found.append((match.start(), Measurement(match.group(0).strip(), f"fio.{direction}_iops", iops, "IOPS")))
            found.append((match.start() + 1, Measurement(match.group(0).strip(), f"fio.{direction}_bw",
                                                         float(match.group(4)), match.group(5))))
        for match in _FIO_LATENCY.finditer(own_text):
            kind, unit = match.group(1), match.group(2)
            for offset, (name, group) in enumerate((("min", 3), ("max", 4), ("avg", 5), ("stdev", 6))):
                found.append((match.start() + offset, Measurement(match.group(0).strip(), f"fio.{kind}_{name}",
                                                                  float(match.group(group)), unit)))
    if "mean" in own_text or "Stddev" in own_text:
        for match in _MMTESTS_ROW.finditer(own_text):
            statistic, column = match.group(1), match.group(2)
            text = " ".join(match.group(0).split())
            found.append((match.start(), Measurement(text, f"{statistic} {column} base", float(match.group(3)), "")))
            found.append((match.start() + 1, Measurement(text, f"{statistic} {column} new", float(match.group(4)), "")))
            found.append((match.start() + 2,
                          Measurement(text, f"{statistic} {column} change", float(match.group(5)), "%")))
    lowered = own_text.lower()
    if "iops" in lowered or "files/s" in lowered or "ops/s" in lowered:
        for match in _RATE.finditer(own_text):
            multiplier = _MULTIPLIER[match.group(3) or ""]
            unit = match.group(4)
            text = match.group(0).strip()
            found.append((match.start(), Measurement(text, None, float(match.group(1)) * multiplier, unit)))
            if match.group(2):
                found.append((match.start() + 1, Measurement(text, None, float(match.group(2)) * multiplier, unit)))
    found.sort(key=lambda item: item[0])
    if any(measurement.name is not None for _, measurement in found):
        found = _with_headers(found, _side_headers(own_text))
    return tuple(measurement for _, measurement in found[:MAX_MEASUREMENTS])
