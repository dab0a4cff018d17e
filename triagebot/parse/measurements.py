"""Parse stage: a writer's own measurements — benchmark output pasted into a reply, and numbers.

Structure, read by rules: fio result lines (`read: IOPS=363k, BW=88.5GiB/s …`, `clat (usec):
min=78, max=1351, avg=174.46, stdev=28.86`), mmtests comparison rows (`Amean 1 97.93 ( 0.00%)
135.67 ( -38.54%)`), and numbers with a rate unit and a k/M multiplier in prose ("~500k iops",
"40-50k write IOPS", "1607kIOPs"). Each is kept with the text it came from.
"""
from __future__ import annotations

import re

from triagebot.records import Measurement

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


def read_measurements(own_text: str) -> tuple[Measurement, ...]:
    """Measurements in the writer's own text, in order of appearance."""
    found: list[tuple[int, Measurement]] = []
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
    return tuple(measurement for _, measurement in found[:MAX_MEASUREMENTS])
