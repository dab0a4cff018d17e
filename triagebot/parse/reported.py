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
from triagebot.records import Headline

# Unit as written (lower case) -> (unit as named in the headline, better direction).
# Rerun templates name these units (their metrics' `units`) to say what a headline stands for.
UNITS = {
    "events/s": ("events/s", "higher"), "events/sec": ("events/s", "higher"),
    "ops/s": ("ops/s", "higher"), "ops/sec": ("ops/s", "higher"),
    "files/s": ("files/s", "higher"), "files/sec": ("files/s", "higher"),
    "iops": ("IOPS", "higher"), "kiops": ("IOPS", "higher"),
    "mb/s": ("MB/s", "higher"), "mib/s": ("MiB/s", "higher"), "gb/s": ("GB/s", "higher"),
    "gib/s": ("GiB/s", "higher"), "kb/s": ("KB/s", "higher"), "kib/s": ("KiB/s", "higher"),
    "ms": ("ms", "lower"), "msec": ("ms", "lower"), "usec": ("us", "lower"), "us": ("us", "lower"),
    "µs": ("us", "lower"), "seconds": ("s", "lower"), "secs": ("s", "lower"), "sec": ("s", "lower"),
}
_UNIT = (r"(events/sec|events/s|ops/sec|ops/s|files/sec|files/s|kIOPS|IOPS|iops|MiB/s|MB/s|GiB/s|GB/s|KiB/s|"
         r"KB/s|kB/s|msec|ms|usec|us|µs|seconds|secs|sec)(?![\w/])")
# "1780 events/s", and the quantity of a change in words: "20% less IOPS".
_VALUE_UNIT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s*+[kKM]?\s*+" + _UNIT + r"|%\s+(?:less|fewer|more)\s+" + _UNIT)
_SIGNED_PERCENT = re.compile(r"(?<![\w.])([-+−])\s?(\d+(?:\.\d+)?)\s*%")
# "20% less IOPS", "a 22% slowdown", "about 25% slower": a word at most two words after it.
_WORDED_PERCENT = re.compile(r"(?<![\w.+−-])(\d+(?:\.\d+)?)\s*%(?:\s+[\w/-]+){0,2}?\s+(\w+)")
_QUANTITY_WORDS = {"less": -1, "fewer": -1, "lower": -1, "drop": -1, "down": -1, "decrease": -1, "reduction": -1,
                   "more": 1, "higher": 1, "up": 1, "increase": 1}
_WORSE_WORDS = {"slower", "slowdown", "regression", "degradation", "worse", "loss"}
_BETTER_WORDS = {"faster", "speedup", "improvement", "better", "gain"}
MAX_SENTENCE = 400  # characters; longer runs are logs or tables, not a statement of the result


def reported_headline(own_text: str) -> Headline | None:
    """The headline a person's report states in its own text, or None when it states none."""
    if "%" not in own_text:
        return None  # the common case: no percentage, no stated change
    for sentence in sentences(own_text):
        if "%" not in sentence or len(sentence) > MAX_SENTENCE:
            continue
        headline = _sentence_headline(sentence)
        if headline is not None:
            return headline
    return None


def _sentence_headline(sentence: str) -> Headline | None:
    units = {UNITS[(after_value or after_change).lower()]
             for after_value, after_change in _VALUE_UNIT.findall(sentence)}
    if len(units) != 1:
        return None
    (unit, better), = units
    changes = {float(sign.replace("−", "-") + number) for sign, number in _SIGNED_PERCENT.findall(sentence)}
    for number, word in _WORDED_PERCENT.findall(sentence):
        change = _worded_change(float(number), word.lower(), better)
        if change is not None:
            changes.add(change)
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
