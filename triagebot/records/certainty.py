"""Records: how sure a reading of a message is — a report's kind, a reply's stance (issue 24).

What the daemon is unsure of is no thread of its own: it goes to the day's digest in the
channel (flow.post_digests) and `triage list --uncertain` shows it. Pure functions of a record.

A person's report (`human-report`) is sure in proportion to the evidence the rules found for a
regression they could rerun, each item weighted by how much it says on its own:

    regzbot or bugzilla marked it a regression     0.4   the community said so
    a culprit commit                                0.4   what to rerun
    a headline (a stated change)                    0.3   what to measure
    a benchmark command or named testcase           0.2   how to measure

and sure from KIND_CONFIDENCE_FLOOR (0.6) on: a culprit with a headline (0.7) or a command
(0.6), or a marked report with either. LKP's reports are machine-written and always sure. A
performance complaint (`human-perf-complaint`, slow with no kernel change named) is below the
floor by definition: the rules may have missed a change written in words they do not know.

A regression measured against a patch under review (`patch-regression`, issue 38) is sure when
the writer gives a figure in or around the sentence stating it and ties it to the series in words
(parse/patch_reports.py): each is worth 0.45 and the series named by the thread 0.1, so either
alone stays below the floor and the day's digest lists it. The robot's pre-merge reports are
always sure.

A reply's stance is unsure when its sentences decide both ways (it abstains to `none`, the
evidence starts with "conflicting:"), or when its own numbers were inconclusive while its words
decided: numbers that could not decide are no support for the words.
"""
from __future__ import annotations

from triagebot.records.report import Report

KIND_CONFIDENCE_FLOOR = 0.6
WEIGHTS = {"marked": 0.4, "culprit": 0.4, "headline": 0.3, "command": 0.2}
_COMMAND_KINDS = ("fio", "sysbench", "fs_mark", "stress-ng", "hackbench", "perf-bench", "fsperf", "command")
_SURE_KINDS = ("lkp-regression", "lkp-improvement", "lkp-functional", "syzbot")


PATCH_WEIGHTS = {"series": 0.1, "figure": 0.45, "tie": 0.45}


def _patch_confidence(report: Report) -> tuple[float, tuple[str, ...]]:
    series = report.series
    found = {"series": series is not None,
             "figure": series is not None and bool(series.numbers) or report.headline is not None,
             "tie": series is not None and series.attributed}
    score = round(sum(PATCH_WEIGHTS[name] for name, present in found.items() if present), 2)
    names = {"series": "series under review", "figure": "figure", "tie": "tie to the series in words"}
    return score, tuple(names[name] for name, present in found.items() if not present)


def kind_confidence(report: Report) -> tuple[float, tuple[str, ...]]:
    """(confidence in [0, 1], what is missing) of a report's kind; replies and `other` are 1.0."""
    if report.kind == "patch-regression":
        return _patch_confidence(report)
    if report.kind in _SURE_KINDS or report.kind not in ("human-report", "human-perf-complaint"):
        return 1.0, ()
    found = {
        "marked": any(trailer.name == "regzbot introduced" for trailer in report.trailers),
        "culprit": any(commit.role == "culprit" for commit in report.commits),
        "headline": report.headline is not None,
        "command": report.testcase is not None or any(item.kind in _COMMAND_KINDS for item in report.reproducers),
    }
    score = min(1.0, sum(WEIGHTS[name] for name, present in found.items() if present))
    missing = tuple(name for name, present in found.items() if not present and name != "marked")
    if report.kind == "human-perf-complaint":
        return min(score, KIND_CONFIDENCE_FLOOR - 0.1), ("a kernel change", *missing)
    return round(score, 2), missing


def stance_uncertain(report: Report) -> str | None:
    """Why a reply's stance is unsure, or None when it is not."""
    if report.kind != "reply":
        return None
    if report.stance_evidence and report.stance_evidence.startswith("conflicting:"):
        return "its sentences decide both ways"
    numbers = report.stance_numbers
    if numbers is not None and numbers.outcome == "inconclusive" and report.stance != "none":
        return f"its own numbers were inconclusive while its words said {report.stance}"
    return None


def uncertain_reasons(report: Report) -> tuple[str, ...]:
    """Why the reading of this record is unsure; empty when it is sure enough to act on."""
    reasons = []
    confidence, missing = kind_confidence(report)
    if confidence < KIND_CONFIDENCE_FLOOR:
        what = "no " + ", no ".join(missing) if missing else "little evidence"
        reasons.append(f"kind {report.kind} at {confidence:.0%} (floor {KIND_CONFIDENCE_FLOOR:.0%}): {what}")
    stance = stance_uncertain(report)
    if stance:
        reasons.append(f"stance: {stance}")
    return tuple(reasons)
