"""Parse stage: the stance a reply's own before/after numbers give, and how it meets the words'.

A reply that reruns the benchmark and posts its numbers is the strongest evidence a thread has,
even when no sentence says "reproduced". measurements.py reads the values with their side
labels; here the two sides are found and ordered, and the verdict's summary statistics decide
(verdict/summary.py: Welch's test, the delta-method interval on the ratio of means, and the
verdict's own rules, with no numpy or scipy imported).

- Sides: the first labelled values of one unit on a reference side (before, without, base,
  vanilla, unpatched, good, old, reverted) and on a changed side (after, with, patched, bad,
  new); or two kernel versions, the older being the reference; or a feature switched off by
  name (`NO_DELAY_DEQUEUE`, the reference) against the stock kernel that carries it. Several values of one label,
  name and unit (benchmark results pasted under a side header) are runs: their mean, sample
  standard deviation and count.
- The reported change: the headline of the report the reply quotes (LKP's headline line, or a
  person's "2360 events/s … 1780 events/s (-24.6%)"), else the record's own headline. When the
  report's metric is better the other way than the reply's unit (a throughput report answered
  with latencies), its percent says nothing about the unit and is not used. A quoted change
  stated for performance with no unit ("a 10-20% performance hit") is read as worse by its
  middle in the reply's unit. With no reported
  change, the verdict's default is tested: "the changed side is worse", by the unit's good
  direction, ruled out down to the floor. With neither, the statistics are kept and the
  outcome is inconclusive.
- The floor is the verdict's default, 1.5%: a reply's metric is named by a unit, not by an LKP
  metric name the floors file matches.
- Numbers beat words: a reproduced / not-reproduced from the numbers is the stance, and the
  words' stance, when it differs, is kept in the evidence; inconclusive numbers (one run a
  side, no spread, a wide interval) leave the words' stance as it was. `combine_stance` is the
  one place where the two meet.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from triagebot.parse import lkp as lkp_parser
from triagebot.parse.measurements import is_feature_off, side_of
from triagebot.parse.reported import reported_headline
from triagebot.parse.stance import Stance
from triagebot.records.report import Headline, Measurement, NumbersStance
from triagebot.reference.units import UNITS
from triagebot.rules.floors import DEFAULT_FLOOR_PERCENT
from triagebot.verdict.outcome import Outcome, signed_percent
from triagebot.verdict.summary import Side, SummaryVerdict, decide_summaries, describe

_STANCE_OF_OUTCOME = {Outcome.CONFIRMED: "reproduced", Outcome.NOT_REPRODUCED: "not-reproduced"}
_WHY_INCONCLUSIVE = {
    "too few runs": "fewer than 2 runs a side",
    "no run count": "no run count given",
    "no spread": "no spread given",
    "a mean that is not positive": "a mean that is not positive",
    "no claim": "no reported change and no known good direction",
    "wide": "the interval is too wide to decide",
    "shape": "the interval spans 0",
    "under-floor-wide": "under the floor, but the interval is wide",
}
_HIGHER_NAME_HINTS = ("per_sec", "per_s", "iops", "_bw", "throughput", "ops", "score", "jobs-per-min",
                      "works/sec", "files_per_sec", "events")
_LOWER_NAME_HINTS = ("latency", "elapsed", "time", "_ms", "duration", "runtime")


@dataclass(frozen=True)
class _Group:
    label: str
    side: str | tuple[int, ...]
    unit: str
    key: str  # unit, or name and unit: results of one benchmark line
    values: tuple[Measurement, ...]

    def summary(self) -> Side:
        if len(self.values) == 1:
            only = self.values[0]
            return Side(only.value, only.stddev, only.runs)
        values = [item.value for item in self.values]
        return Side(statistics.fmean(values), statistics.stdev(values), len(values))


def better_direction(unit: str, name: str | None = None) -> str | None:
    """'higher' or 'lower' from a unit ("events/s", "ms") or a metric name; None if unknown."""
    known = UNITS.get(unit.lower())
    if known is not None:
        return known[1]
    lowered = unit.lower()
    if "/s" in lowered or "iops" in lowered or "per sec" in lowered:
        return "higher"
    text = (name or "").lower()
    # A rate first: "stress-ng.utime.ops_per_sec" is a rate of a stressor named after a time.
    if any(hint in text for hint in _HIGHER_NAME_HINTS):
        return "higher"
    if any(hint in text for hint in _LOWER_NAME_HINTS):
        return "lower"
    return None


def _groups(measurements: tuple[Measurement, ...]) -> list[_Group]:
    """Labelled values grouped by label and unit (and benchmark line), in order of appearance."""
    order: list[tuple[str, str]] = []
    members: dict[tuple[str, str], list[Measurement]] = {}
    for item in measurements:
        if item.label is None:
            continue
        key = (item.label, f"{item.name or ''}|{_unit_key(item.unit)}")
        if key not in members:
            order.append(key)
            members[key] = []
        members[key].append(item)
    groups = []
    for label, line_key in order:
        side = side_of(label)
        if side is None:
            continue
        values = members[(label, line_key)]
        groups.append(_Group(label, side, _unit_key(values[0].unit), line_key, tuple(values)))
    return groups


def _unit_key(unit: str) -> str:
    known = UNITS.get(unit.lower())
    return known[0] if known else unit


def _pair(groups: list[_Group]) -> tuple[_Group, _Group] | None:
    """The first (reference, changed) pair of one unit, or two kernel versions, older first."""
    for index, first in enumerate(groups):
        for second in groups[index + 1:]:
            if first.key != second.key or first.label == second.label:
                continue
            sides = {first.side, second.side}
            if sides == {"reference"} and is_feature_off(first.label) != is_feature_off(second.label):
                # "vanilla features: 954MB/s" against "NO_DELAY_DEQUEUE: 932MB/s": the stock kernel
                # carries the feature under suspicion; the feature switched off is the reference
                return (first, second) if is_feature_off(first.label) else (second, first)
            if sides == {"reference", "changed"}:
                return (first, second) if first.side == "reference" else (second, first)
            if isinstance(first.side, tuple) and isinstance(second.side, tuple) and first.side != second.side:
                return (first, second) if first.side < second.side else (second, first)
    return None


def reported_change(headline: Headline | None, quoted_text: str) -> Headline | None:
    """The headline of the report a reply answers: the quoted report's, else the record's own."""
    if quoted_text:
        quoted = None
        if "noticed a" in quoted_text or "kernel test robot" in quoted_text:
            quoted = lkp_parser.parse_lkp(quoted_text).headline
        if quoted is None:
            quoted = reported_headline(quoted_text)
        if quoted is not None:
            return quoted
    return headline


def judge_numbers(measurements: tuple[Measurement, ...], headline: Headline | None,
                  quoted_text: str = "", floor_percent: float = DEFAULT_FLOOR_PERCENT) -> NumbersStance | None:
    """What the writer's own before/after numbers say of the reported change; None without a pair."""
    if not any(item.label for item in measurements):
        return None  # the common case: no labelled values at all
    pair = _pair(_groups(measurements))
    if pair is None:
        return None
    base_group, suspect_group = pair
    base, suspect = base_group.summary(), suspect_group.summary()
    unit = base_group.unit
    name = base_group.values[0].name
    better = better_direction(unit, name)
    report = reported_change(headline, quoted_text)
    reported = report.change_percent if report is not None else None
    if report is not None and report.metric == "performance":
        # "a 10-20% performance hit", no unit: worse by that much in the reply's own unit
        reported = report.change_percent if better == "higher" else (
            -report.change_percent if better == "lower" else None)
    elif report is not None and better is not None:
        report_better = better_direction(report.metric, report.metric)
        if report_better is not None and report_better != better:
            reported = None  # a rate's percent says nothing about a time, or back
    verdict = decide_summaries(base, suspect, better, reported, floor_percent)
    stance = _STANCE_OF_OUTCOME.get(verdict.outcome, "inconclusive")
    return NumbersStance(
        outcome=stance,
        evidence=_evidence(base_group, base, suspect_group, suspect, verdict, stance),
        unit=unit,
        base_label=base_group.label, base_mean=base.mean, base_stddev=base.stddev, base_runs=base.runs,
        suspect_label=suspect_group.label, suspect_mean=suspect.mean, suspect_stddev=suspect.stddev,
        suspect_runs=suspect.runs,
        change_percent=_finite(verdict.change_percent), ci_low_percent=_finite(verdict.ci_low_percent),
        ci_high_percent=_finite(verdict.ci_high_percent), p_value=verdict.p_value,
        reported_change_percent=verdict.reported_change_percent)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _side_text(label: str, side: Side, unit: str) -> str:
    spread = f"±{side.stddev:.3g}" if side.stddev is not None else ""
    runs = f" (n={side.runs})" if side.runs is not None else ""
    unit_text = f" {unit}" if unit else ""
    return f"{label} {side.mean:.6g}{spread}{unit_text}{runs}"


def _evidence(base_group: _Group, base: Side, suspect_group: _Group, suspect: Side, verdict: SummaryVerdict,
              stance: str) -> str:
    """"before 2341±41 events/s (n=5) vs after 2322±38 events/s (n=5): −0.8% [−3.2%, +1.7%],
    Welch p=0.47 → not reproduced (reported −24.6%)"."""
    said = (f"reported {signed_percent(verdict.reported_change_percent)}"
            if verdict.reported_change_percent is not None else "no reported change")
    outcome = stance.replace("-", " ")
    if stance == "inconclusive":
        outcome += f": {_WHY_INCONCLUSIVE.get(verdict.why, verdict.why)}"
    return (f"{_side_text(base_group.label, base, base_group.unit)} vs "
            f"{_side_text(suspect_group.label, suspect, suspect_group.unit)}: {describe(verdict)} "
            f"\u2192 {outcome} ({said})")


def combine_stance(words: Stance, numbers: NumbersStance | None) -> Stance:
    """The record's stance from the words' and the numbers': decisive numbers win.

    Numbers that reproduce or rule out the reported change are the stance, with their
    statistics as the evidence (the words' differing stance appended); inconclusive or absent
    numbers leave the words' stance.
    """
    if numbers is None or numbers.outcome not in ("reproduced", "not-reproduced"):
        return words
    if words.stance in ("none", numbers.outcome):
        return Stance(numbers.outcome, numbers.evidence)
    overruled = f'; the words said {words.stance}: "{words.evidence}"' if words.evidence else ""
    return Stance(numbers.outcome, numbers.evidence + overruled)
