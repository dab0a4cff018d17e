"""Parse stage: the change a person's report states for its own measurement, as its headline.

An LKP report's headline is a fixed line ("-24.6% regression of sysbench.cpu.events_per_sec");
a person writes it in prose: "v6.8 gives 2360 events/s, v6.9-rc1 about 1780 events/s (-24.6%)".
Read by rules: the first sentence of the writer's own text that states one change in percent
and values of one known unit. The change is signed as the report states it: a sign ("-24.6%"),
a word for the quantity ("20% less IOPS", "15% more ms") or for the performance ("22% slower",
"a 10% regression": worse, so negative for a rate and positive for a time). The metric is named
by its unit ("events/s"), the only name such a sentence gives, and a rerun template says which
of its metrics a unit stands for; the direction follows from the unit: a rate is better higher,
a time better lower. No headline from a sentence with a percentage and no unit ("-31.8%
performance down"), with units of two kinds, or with two different changes (a table row, a list
of cases).
"""
from __future__ import annotations

import re

from triagebot.parse.prose import sentences
from triagebot.records.report import Headline
from triagebot.reference.units import UNITS

# Bytes per unit of a rate, to compare "2.9 gb/sec" with "949 mb/sec".
_RATE_BYTES = {"KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "KiB/s": 1024.0, "MiB/s": 1024.0 ** 2, "GiB/s": 1024.0 ** 3}
_UNIT = (r"(events/sec|events/s|ops/sec|ops/s|files/sec|files/s|kIOPS|IOPS|iops|MiB/s|MB/s|GiB/s|GB/s|KiB/s|"
         r"KB/s|kB/s|[KkMmGg]i?[Bb]/sec|msec|ms|usec|us|µs|seconds|secs|sec|minutes|mins|min)(?![\w/=])")
# "1780 events/s", and the quantity of a change in words: "20% less IOPS".
_VALUE_UNIT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s*+[kKM]?\s*+" + _UNIT + r"|%\s+(?:less|fewer|more)\s+" + _UNIT
                         + r"|(?<![\w/])" + _UNIT + r"\s+(?=(?:went\s+)?(?:down|up|dropped|drops|fell|decreased|"
                         r"increased)\b)")
# "files/sec down ~18%", "IOPS dropped by about 30%": the word before the change says its sign.
_PREFIX_WORDED = re.compile(r"\b(down|up|dropped|drops|fell|decreased|increased)\s+(?:by\s+)?"
                            r"(?:about\s+|around\s+|roughly\s+|~\s*)?(\d+(?:\.\d+)?)\s*%")
_PREFIX_SIGN = {"down": -1, "dropped": -1, "drops": -1, "fell": -1, "decreased": -1, "up": 1, "increased": 1}
# "20-25% slower", "a 5-10% drop": a range, read as its middle ("up to 2-3%" is a bound, not a change).
_RANGE_PERCENT = re.compile(r"(?<![\w.+−-])(?<!up to )(\d+(?:\.\d+)?)\s*(?:-|–|to)\s*(\d+(?:\.\d+)?)\s*%"
                            r"(?:\s+[\w/-]+){0,2}?\s+(\w+)")
_SIGNED_PERCENT = re.compile(r"(?<![\w.])([-+−])\s?(\d+(?:\.\d+)?)\s*%")
# "20% less IOPS", "a 22% slowdown", "about 25% slower": a word at most two words after it.
_WORDED_PERCENT = re.compile(r"(?<![\w.+−-])(\d+(?:\.\d+)?)\s*%(?:\s+[\w/-]+){0,2}?\s+(\w+)")
_QUANTITY_WORDS = {"less": -1, "fewer": -1, "lower": -1, "drop": -1, "down": -1, "decrease": -1, "reduction": -1,
                   "more": 1, "higher": 1, "up": 1, "increase": 1}
_WORSE_WORDS = {"slower", "slowdown", "regression", "degradation", "worse", "loss"}
_BETTER_WORDS = {"faster", "speedup", "improvement", "better", "gain"}
MAX_SENTENCE = 400  # characters; longer runs are logs or tables, not a statement of the result


# "max latency 4.1 ms before, 126 ms after", "kworker CPU time before: 2.1 seconds, after: 41.7
# seconds", "before 3 minutes … after 12 minutes": the same quantity before and after a change.
_BEFORE_AFTER = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s*" + _UNIT + r"\s+before\b[^.;\n]{0,40}?(?<![\w.])(\d+(?:\.\d+)?)\s*" + _UNIT
    + r"\s+after\b"
    r"|\bbefore\b[:,]?\s+(?:[\w-]+\s+){0,4}?(\d+(?:\.\d+)?)\s*" + _UNIT + r"[^.;]{0,80}?\bafter\b[:,]?\s+"
    r"(?:[\w-]+\s+){0,4}?(\d+(?:\.\d+)?)\s*" + _UNIT)
REVERT_REACH = 30  # characters after a before/after pair where "reverting" turns it round
# "has slowed from about 2.9 gb/sec to about 949 mb/sec": a value before and after, in words.
_FROM_TO = re.compile(r"\bfrom\s+(?:about\s+|around\s+|~\s*)?(\d+(?:\.\d+)?)\s*" + _UNIT +
                      r"\s+to\s+(?:about\s+|around\s+|~\s*)?(\d+(?:\.\d+)?)\s*" + _UNIT)
# Issue 24 round three (fixtures/labels/dev5), times people write glued or with words after them:
# "(from 2.36s since rootfs mounted to 8.55s since rootfs mounted)" (dev5:6), "takes ~3s, while
# in v6.7 it takes ~18s" (dev5:26), "is ~20 seconds after 6.10 kernel. it's ~7 seconds on 6.8"
# (dev5:23). A time's unit, glued "s" included ("2.36s"; "100s of" is no time: a decimal point
# or a word boundary after the "s" and no "of").
_TIME_UNIT = r"(ms|msec|usec|us|µs|seconds|secs|sec|s|minutes|mins|min)(?![\w/=])(?!\s+of\b)"
_TIME_VALUE = r"(?<![\w.])(\d+(?:\.\d+)?)\s*" + _TIME_UNIT
# "from 2.36s since rootfs mounted to 8.55s": at most a few words between a value and "to"
_FROM_TO_WORDED = re.compile(r"\bfrom\s+(?:about\s+|around\s+|~\s*)?" + _TIME_VALUE.replace("(?<![\\w.])", "")
                             + r"(?:\s+[A-Za-z]+){0,4}\s+to\s+(?:about\s+|around\s+|~\s*)?(\d+(?:\.\d+)?)\s*"
                             + _TIME_UNIT)
# "median performance of 427 ms up through 5.19-rc8. After this commit, median performance slows
# to 684 ms" (dev5:16), "dropped … to": a value, then within a few lines a verb of change "to" the
# value it became.
_BECAME = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*" + _UNIT + r"[^%]{0,160}?\b(?:slows|slowed|drops|dropped|falls|"
                     r"fell|grows|grew|rises|rose|increases|increased|decreases|decreased|goes|went)"
                     r"\s+(?:down\s+|up\s+)?to\s+(?:about\s+|around\s+|~\s*)?(\d+(?:\.\d+)?)\s*" + _UNIT)
BECAME_GATE = (" to ",)
_TIME_VALUE_SEARCH = re.compile(_TIME_VALUE)
# A time per kernel in prose, either way round: "in v6.6 it takes ~3s", "~20 seconds after 6.10",
# "~7 seconds on 6.8". Read over a sentence and the next, exactly two kernels.
_KERNEL = r"v?(\d+\.\d+(?:\.\d+)?(?:-rc\d+)?)\b"
_TIME_ON_KERNEL = re.compile(
    r"\b(?:in|on|with|under|for)\s+(?:kernel\s+|linux\s+)?" + _KERNEL + r"[^;.\n]{0,40}?~?\s*" + _TIME_VALUE
    + r"|~?\s*" + _TIME_VALUE + r"\s+(?:after|in|on|with|under|for)\s+(?:the\s+)?(?:kernel\s+|linux\s+)?" + _KERNEL,
    re.IGNORECASE)


def reported_headline(own_text: str) -> Headline | None:
    """The headline a person's report states in its own text, or None when it states none."""
    if "%" in own_text:
        for sentence in sentences(own_text):
            if "%" not in sentence or len(sentence) > MAX_SENTENCE:
                continue
            headline = _sentence_headline(sentence)
            if headline is not None:
                return headline
        headline = _unitless_change(own_text)
        if headline is not None:
            return headline
    if "before" in own_text and "after" in own_text:
        for match in _BEFORE_AFTER.finditer(own_text):
            values = [group for group in match.groups() if group is not None]
            if "revert" in own_text[match.start():match.end() + REVERT_REACH].lower():
                # "510 MB/s before and 590 MB/s after reverting it": before is the suspect kernel
                values = values[2:] + values[:2]
            headline = _before_after(float(values[0]), values[1], float(values[2]), values[3])
            if headline is not None:
                return headline
    headline = kernel_results_headline(own_text) or _kernels_in_prose(own_text)
    if headline is not None:
        return headline
    if "from " in own_text:
        for match in _FROM_TO.finditer(own_text):
            headline = _before_after(float(match.group(1)), match.group(2), float(match.group(3)), match.group(4))
            if headline is not None:
                return headline
        for match in _FROM_TO_WORDED.finditer(own_text):
            headline = _before_after(float(match.group(1)), _time_unit(match.group(2)), float(match.group(3)),
                                     _time_unit(match.group(4)))
            if headline is not None:
                return headline
    if any(gate in own_text for gate in BECAME_GATE):
        for match in _BECAME.finditer(own_text):
            headline = _before_after(float(match.group(1)), match.group(2), float(match.group(3)), match.group(4))
            if headline is not None:
                return headline
    if _TIME_VALUE_SEARCH.search(own_text):  # one scan first: most reports state no time
        headline = _kernels_timed(own_text)
        if headline is not None:
            return headline
    return _unitless_headline(own_text)


def _time_unit(unit: str) -> str:
    """A time unit as UNITS knows it ("s" glued to its value is seconds)."""
    return "sec" if unit.lower() == "s" else unit


def _kernels_timed(own_text: str) -> Headline | None:
    """The change between two kernels' times stated in prose, the older kernel as before."""
    pieces = sentences(own_text)
    for first, second in zip(pieces, [*pieces[1:], ""], strict=True):
        window = f"{first} {second}" if len(first) + len(second) <= MAX_SENTENCE else first
        if len(window) > MAX_SENTENCE or not any(digit in window for digit in "0123456789"):
            continue
        found: dict[tuple[int, ...], tuple[float, str]] = {}
        for match in _TIME_ON_KERNEL.finditer(window):
            version, value, unit, value2, unit2, version2 = match.groups()
            kernel = _version(version or version2)
            found.setdefault(kernel, (float(value or value2), _time_unit(unit or unit2)))
        if len(found) == 2:
            (_, (before, before_unit)), (_, (after, after_unit)) = sorted(found.items())
            return _before_after(before, before_unit, after, after_unit)
    return None


# "On v6.8 it averages 3.12 GB/s over five runs; on v6.9-rc1 it averages 2.68 GB/s": a rate
# per kernel in one stretch of prose.
_ON_KERNEL_RATE = re.compile(r"\b(?:on|with|under)\s+(?:kernel\s+|linux\s+)?v?(\d+\.\d+(?:\.\d+)?(?:-rc\d+)?)\b"
                             r"[^;.\n]{0,60}?(?<![\w.])(\d+(?:\.\d+)?)\s*" + _UNIT, re.IGNORECASE)


def _kernels_in_prose(own_text: str) -> Headline | None:
    if " on " not in own_text.lower() and "with " not in own_text.lower():
        return None
    for sentence in sentences(own_text):
        if len(sentence) > MAX_SENTENCE or "/s" not in sentence:
            continue
        found = {_version(version): (float(value), unit) for version, value, unit in _ON_KERNEL_RATE.findall(sentence)
                 if UNITS[unit.lower()][1] == "higher"}
        if len(found) == 2:
            (_, (before, before_unit)), (_, (after, after_unit)) = sorted(found.items())
            return _before_after(before, before_unit, after, after_unit)
    return None


# "So, it is -31.8% performance down with the commit." under the fio results it was computed
# from: the change is stated signed, its unit is that of the values just above it.
_UNITLESS_CHANGE = re.compile(r"(?<![\w.])([-−]\d+(?:\.\d+)?)\s*%\s+(?:(?:performance|throughput)\s+)?"
                              r"(?:down|drop|loss|regression|slower)\b")
_UNIT_VALUE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*+" + _UNIT)
LOOK_BACK = 1500  # characters above a unitless change where the values it compares stand


def _unitless_change(own_text: str) -> Headline | None:
    for match in _UNITLESS_CHANGE.finditer(own_text):
        # the rates on the last line of values above it, the first as written ("bw=1747MiB/s
        # (1832MB/s)"); a run time beside them ("run=438134msec") is not what is compared
        start = max(0, match.start() - LOOK_BACK)
        rates = [(own_text.rfind("\n", 0, value.start()), UNITS[value.group(2).lower()])
                 for value in _UNIT_VALUE.finditer(own_text, start, match.start())]
        rates = [(line, found) for line, found in rates if found[1] == "higher"]
        if not rates:
            continue
        last_line = rates[-1][0]
        unit, better = next(found for line, found in rates if line == last_line)
        change = float(match.group(1).replace("−", "-"))
        worse = change < 0 if better == "higher" else change > 0
        return Headline(metric=unit, change_percent=change, direction="regression" if worse else "improvement")
    return None


def _before_after(before: float, before_unit: str, after: float, after_unit: str) -> Headline | None:
    """The change from one value to another, in units of one kind (a rate's scale may differ)."""
    (unit, better), (other, _) = UNITS[after_unit.lower()], UNITS[before_unit.lower()]
    if unit != other:
        if unit not in _RATE_BYTES or other not in _RATE_BYTES:
            return None
        before = before * _RATE_BYTES[other] / _RATE_BYTES[unit]
    if before <= 0 or before == after:
        return None
    change = round((after - before) / before * 100.0, 1)
    worse = change < 0 if better == "higher" else change > 0
    return Headline(metric=unit, change_percent=change, direction="regression" if worse else "improvement")


# Results under each kernel's name, as people paste them: fio's summary or pv's rate per kernel,
# sometimes one per setup ("single", "raid1") under each kernel:
#   5.15.110                      6.4-rc3 result                 kernel 5.15.46
#   fio bw=6796MiB/s (7126MB/s)   	fio  WRITE: bw=2599MiB/s      raid1
#                                                                13.5GiB 0:00:29 [ 467MiB/s]
# Storage lists lead each kernel's program output with a line of prose (issue 24, dev6): "With
# 5.2.0 (and those patches):" … "With nvme-5.3 (and those patches …)" over hdparm's "= 1986.22
# MB/sec" (linux-nvme 2019, dev5:1), "for 5.4:" … "for 4.15:" over rsync's progress (ceph-devel
# 2021, dev6:5): a lead word, a branch's name before the version, a remark in brackets.
_KERNEL_LABEL = re.compile(r"^[ \t]*(?:(?:with|for|on)[ \t]+(?:[a-z]+-)?)?(?:kernel[ \t]+|linux[ \t]+)?"
                           r"v?(\d+\.\d+(?:\.\d+|\.[xy])?(?:-rc\d+)?)"
                           r"(?:/[\w.-]+)*(?:[ \t]+results?)?(?:[ \t]*\([^)\n]*\))?:?[ \t]*$", re.IGNORECASE)
_SETUP_LABEL = re.compile(r"^[ \t]*([A-Za-z][\w.+-]{0,19}):?[ \t]*$")
BLOCK_LINES = 8  # lines under a kernel's name where its results stand


def kernel_results_headline(own_text: str) -> Headline | None:
    """The change between exactly two kernels' results, the older kernel as before; where each
    kernel has a result per setup, the worst of the setups' changes (the one complained of)."""
    if "/s" not in own_text:
        return None
    lines = own_text.split("\n")
    kernels: dict[tuple[int, ...], dict[str, tuple[float, str]]] = {}
    for number, line in enumerate(lines):
        label = _KERNEL_LABEL.match(line)
        if label is None:
            continue
        results: dict[str, tuple[float, str]] = {}
        setup = ""
        for below in lines[number + 1:number + 1 + BLOCK_LINES]:
            if _KERNEL_LABEL.match(below):
                break
            named = _SETUP_LABEL.match(below)
            if named:
                setup = named.group(1).lower()
                continue
            rate = next((value for value in _UNIT_VALUE.finditer(below)
                         if UNITS[value.group(2).lower()][1] == "higher"), None)
            if rate is not None and setup not in results:
                results[setup] = (float(rate.group(1)), rate.group(2))
        if results:
            kernels.setdefault(_version(label.group(1)), results)
    if len(kernels) != 2:
        return None  # one kernel, or more than two: no single change stated
    (_, before), (_, after) = sorted(kernels.items())
    changes = [found for setup in before if setup in after
               if (found := _before_after(before[setup][0], before[setup][1], after[setup][0], after[setup][1]))]
    return min(changes, key=_badness) if changes else None


def _badness(headline: Headline) -> float:
    """Lower is worse: the change as a loss of the better direction."""
    better = next(direction for unit, direction in UNITS.values() if unit == headline.metric)
    return headline.change_percent if better == "higher" else -headline.change_percent


def _version(text: str) -> tuple[int, ...]:
    """A kernel version as numbers to order by: 5.15.y before 6.4-rc3 before 6.4."""
    release, _, rc = text.lower().partition("-rc")
    numbers = [int(part) if part.isdigit() else 10 ** 6 for part in release.split(".")]  # .y/.x: the newest
    return (*numbers, *([0] * (3 - len(numbers))), int(rc) if rc.isdigit() else 10 ** 6)


def _sentence_headline(sentence: str) -> Headline | None:
    units = {UNITS[next(unit for unit in found if unit).lower()] for found in _VALUE_UNIT.findall(sentence)}
    if len(units) != 1:
        return None
    (unit, better), = units
    changes = {float(sign.replace("−", "-") + number) for sign, number in _SIGNED_PERCENT.findall(sentence)}
    for number, word in _WORDED_PERCENT.findall(sentence):
        change = _worded_change(float(number), word.lower(), better)
        if change is not None:
            changes.add(change)
    for low, high, word in _RANGE_PERCENT.findall(sentence):
        change = _worded_change(round((float(low) + float(high)) / 2, 1), word.lower(), better)
        if change is not None:
            changes.add(change)
    for word, number in _PREFIX_WORDED.findall(sentence):
        changes.add(_PREFIX_SIGN[word.lower()] * float(number))
    if len(changes) != 1:
        return None
    change = changes.pop()
    if change == 0:
        return None
    worse = change < 0 if better == "higher" else change > 0
    return Headline(metric=unit, change_percent=change, direction="regression" if worse else "improvement")


def _worded_change(number: float, word: str, better: str) -> float | None:
    """The signed change "N% <word>" states for a metric better `better`, or None."""
    if word in _QUANTITY_WORDS:
        return number * _QUANTITY_WORDS[word]
    worse_sign = -1 if better == "higher" else 1
    if word in _WORSE_WORDS:
        return number * worse_sign
    if word in _BETTER_WORDS:
        return -number * worse_sign
    return None


# "This one is causing a 10-20% performance hit", "a ~35% performance regression", "15% slower",
# "approx 15% lower (2265 vs 2538)" (a bugzilla report's score per kernel):
# a change stated for performance itself, with no unit. Seen in replies that first report a
# regression inside a patch's thread; a reply's own numbers are judged against it.
_PERFORMANCE_WORSE = re.compile(
    # "a significant (25-30%) loss in NFS throughput" (dev5:2): the figure in parentheses
    r"(?<![\w.+−-])~?(\d+(?:\.\d+)?)(?:\s*(?:-|–|to)\s*(\d+(?:\.\d+)?))?\s*%\)?\s+(?:(?:performance|throughput|"
    r"bandwidth|IOPS)\s+)?(hit|regression|drop|slowdown|degradation|loss|slower|worse|penalty"
    # "approx 15% lower (2265 vs 2538)": lower, with the pair of results it compares (issue 24)
    r"|lower(?=\s*\(\s*\d[\d.,]*\s*(?:vs\.?|versus|against|compared to)\s*\d))\b",
    re.IGNORECASE)


def performance_worse_percent(text: str) -> float | None:
    """How much worse, in percent (positive), the text says performance got, unit aside; None
    when it says no such thing or two different amounts."""
    if "%" not in text:
        return None
    found = {round((float(low) + float(high or low)) / 2, 1) for low, high, _ in _PERFORMANCE_WORSE.findall(text)}
    return found.pop() if len(found) == 1 else None


# "You'll see a 5-10% increase in the latency time", "a 5-10% increase in IO latencies": a
# time's change with no unit, named "latency" (better lower).
_LATENCY_CHANGE = re.compile(
    r"(?<![\w.+−-])~?(\d+(?:\.\d+)?)(?:\s*(?:-|–|to)\s*(\d+(?:\.\d+)?))?\s*%\s+(increase|rise|regression|"
    r"decrease|reduction|drop)\s+(?:in|of)\s+(?:the\s+)?(?:[\w-]+\s+){0,2}?(?:latenc(?:y|ies)|run\s?time|"
    r"completion\s+time)\b", re.IGNORECASE)
# one percentage or one range of them, as written: "5-10%", "~35%", "-31.8 %"
_ANY_PERCENT = re.compile(r"\d+(?:\.\d+)?(?:\s*(?:-|–|to)\s*\d+(?:\.\d+)?)?\s*%")


def _unitless_headline(own_text: str) -> Headline | None:
    """A change stated with no unit, in a sentence that states one percentage (or one range) and
    no value of a unit: of a latency ("a 5-10% increase in the latency time": +7.5% of
    `latency`), else of performance itself ("a ~35% performance regression": −35% of
    `performance`). The last resort: where a unit is stated, it names the metric better."""
    if "%" not in own_text:
        return None
    for sentence in sentences(own_text):
        if "%" not in sentence or len(sentence) > MAX_SENTENCE or _VALUE_UNIT.search(sentence):
            continue
        if len(set(_ANY_PERCENT.findall(sentence))) != 1:
            continue  # "20% slower and 10% more": two changes, no headline
        latency = _LATENCY_CHANGE.search(sentence)
        if latency:
            low, high, word = latency.groups()
            change = round((float(low) + float(high or low)) / 2, 1)
            change = -change if word.lower() in ("decrease", "reduction", "drop") else change
            return Headline(metric="latency", change_percent=change,
                            direction="regression" if change > 0 else "improvement")
        worse = performance_worse_percent(sentence)
        if worse:
            return Headline(metric="performance", change_percent=-worse, direction="regression")
    return None

