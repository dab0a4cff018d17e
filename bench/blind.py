"""Benchmark: triagebot on the blind set (issue 24), mail no rule was written from.

Labels are fixtures/labels/blind/replies.jsonl (stance) and reports.jsonl (candidate reports:
kind, taken_on, and for people's performance reports culprit, headline, machine, reproducers),
written before triagebot read these messages (fixtures/labels/blind/README.md). Each label names
its raw message as `<owner>/<repo>@<commit>` in a public-inbox git mirror (one message per commit,
file `m`), looked for under --mirrors as `<owner>+<repo>/repo` (what the fetch tool makes) or
`<owner>+<repo>`. A mirror that is absent is skipped with a line saying so (CI has none); each
message is parsed on its own, as bench/accuracy.py does (a reply's quoted text is its thread
context), with `parse_message(raw, Source("eml"))`.

    PYTHONPATH=$PWD python3 bench/blind.py [--labels DIR] [--mirrors DIR] [--json]

Prints, on the blind set only: stance accuracy and the recall of `reproduced` and
`not-reproduced`; reports taken on (precision, recall), both as the issue counts them (a message
read as `human-report` or `lkp-regression`, against the labels' `taken_on`) and for people's
reports alone (read as `human-report`, as bench/taken_on.py lists them); robot mail read as a
person's; what the daemon's admission kinds would open a thread for; per-field agreement on the
people's reports (culprit, headline, machine, reproducers); then every disagreement (label id,
label, output).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from accuracy import LabelError, fate, read_label_file  # noqa: E402
from accuracy import read_mirrored as read_raw  # noqa: E402

from triagebot.daemon.flow import DIGEST_KINDS, REPORT_KINDS  # noqa: E402
from triagebot.parse.report import parse_message  # noqa: E402
from triagebot.records.report import Report, Source  # noqa: E402

LABELS = PROJECT / "fixtures" / "labels" / "blind"
MIRRORS = PROJECT.parent / ".mirror"
STANCES = ("reproduced", "not-reproduced", "none")
TAKEN_KINDS = ("human-report", "lkp-regression", "patch-regression")  # a regression report the team takes on
ROBOT_KINDS = ("lkp-regression", "lkp-improvement", "lkp-functional", "syzbot", "bot")
PEOPLE_KINDS = ("human-report", "human-bug")
PEOPLE_REPORT_KINDS = ("human-report", "patch-regression")  # issue 38: a person's regression report, either form
ROBOT_SENDERS = ("lkp@intel.com", "oliver.sang@intel.com", "kernel test robot")
FIELDS = ("culprit", "headline", "machine", "reproducers")
TARGETS = {"stance": 95.0, "reproduced": 90.0, "not-reproduced": 90.0, "precision": 95.0, "recall": 90.0,
           "culprit": 90.0, "headline": 90.0, "machine": 90.0, "reproducers": 90.0}
HEADLINE_TOLERANCE = 0.15  # percentage points: labels round to one decimal
_MESSAGE_ID = re.compile(rb"^Message-ID:[ \t]*(?:\r?\n[ \t]+)?<?([^>\s]+)>?", re.IGNORECASE | re.MULTILINE)


def _robot(label: dict) -> bool:
    """A report the robot sent (its pre-merge reports are patch-regressions too): not a person's."""
    reporter = str(label.get("reporter") or "").lower()
    return any(sender in reporter for sender in ROBOT_SENDERS)


def load_labels(directory: Path) -> tuple[list[dict], list[dict]]:
    """(replies, reports); each label gains `_id` = file:line. A set of candidate reports only
    (fixtures/labels/dev) has no replies.jsonl; reports.jsonl must be there."""
    replies, reports = directory / "replies.jsonl", directory / "reports.jsonl"
    if not reports.exists():
        raise LabelError(f"{reports}: not found")
    return (read_label_file(replies) if replies.exists() else []), read_label_file(reports)


def _header_id(raw: bytes) -> str | None:
    head = re.split(rb"\r?\n\r?\n", raw, maxsplit=1)[0]
    match = _MESSAGE_ID.search(head)
    return match.group(1).decode("utf-8", "replace") if match else None


def _culprit(report: Report) -> str | None:
    return next((commit.sha for commit in report.commits if commit.role == "culprit"), None)


def _same_sha(expected: str | None, got: str | None) -> bool:
    if expected is None or got is None:
        return expected is got
    expected, got = expected.lower(), got.lower()
    return len(got) >= 7 and (expected.startswith(got) or got.startswith(expected))


def _headline(report: Report) -> dict | None:
    if report.headline is None:
        return None
    return {"metric": report.headline.metric, "change_percent": report.headline.change_percent,
            "direction": report.headline.direction}


def _same_headline(expected: dict | None, got: dict | None) -> bool:
    """The claimed change: sign, size (±0.15 points) and direction; the metric's name is shown, not compared."""
    if expected is None or got is None:
        return expected is got
    return (expected["direction"] == got["direction"]
            and abs(float(expected["change_percent"]) - float(got["change_percent"])) <= HEADLINE_TOLERANCE)


_MACHINE_KEYS = ("cpu_model", "sockets", "threads", "memory_gb")


def _machine(report: Report) -> dict:
    machine = report.test_machine
    return {key: getattr(machine, key, None) if machine else None for key in _MACHINE_KEYS}


def _same_machine(expected: dict | None, got: dict) -> bool:
    """Every stated key right (a CPU model as a case-blind substring); nothing stated, nothing found."""
    if not expected:
        return all(value is None for value in got.values())
    for key, value in expected.items():
        found = got.get(key)
        if key == "cpu_model":
            if not found or " ".join(str(value).split()).lower() not in " ".join(str(found).split()).lower():
                return False
        elif found != value:
            return False
    return True


def _reproducers(report: Report) -> list[dict]:
    return [{"kind": item.kind, "command": item.command} for item in report.reproducers if not item.quoted]


def _normal(items: list[dict]) -> list[tuple[str, str]]:
    return [(item["kind"], " ".join(str(item["command"]).split())) for item in items]


def compare_fields(label: dict, report: Report) -> dict[str, tuple[bool, object, object]]:
    """Per field the label states: (agrees, expected, got)."""
    result: dict[str, tuple[bool, object, object]] = {}
    if "culprit" in label:
        got = _culprit(report)
        result["culprit"] = (_same_sha(label["culprit"], got), label["culprit"], got)
    if "headline" in label:
        got_headline = _headline(report)
        result["headline"] = (_same_headline(label["headline"], got_headline), label["headline"], got_headline)
    if "machine" in label:
        got_machine = _machine(report)
        result["machine"] = (_same_machine(label["machine"], got_machine), label["machine"], got_machine)
    if "reproducers" in label:
        got_list = _reproducers(report)
        result["reproducers"] = (_normal(label["reproducers"]) == _normal(got_list), label["reproducers"], got_list)
    return result


def _ratio(numerator: int, denominator: int) -> float | None:
    return round(100.0 * numerator / denominator, 1) if denominator else None


def _precision_recall(pairs: list[tuple[bool, bool]]) -> dict:
    true_positive = sum(1 for expected, got in pairs if expected and got)
    said = sum(1 for _, got in pairs if got)
    real = sum(1 for expected, _ in pairs if expected)
    return {"true_positive": true_positive, "taken": said, "expected": real,
            "precision": _ratio(true_positive, said), "recall": _ratio(true_positive, real)}


def measure(replies: list[dict], reports: list[dict], raw: dict[str, bytes]) -> dict:
    disagreements: list[dict] = []
    id_mismatch: list[str] = []

    def parsed(label: dict) -> Report | None:
        message = raw.get(label["_id"])
        if message is None:
            return None
        if _header_id(message) != label["message_id"]:
            id_mismatch.append(f"{label['_id']}: the mirror's message is {_header_id(message)!r}, "
                               f"the label says {label['message_id']!r}")
            return None
        return parse_message(message, Source("eml"))

    by_label: dict[str, Counter] = {name: Counter() for name in STANCES}
    stance: dict[str, Any] = {"agree": 0, "total": 0, "by_label": by_label}
    for label in replies:
        report = parsed(label)
        if report is None:
            continue
        stance["total"] += 1
        stance["by_label"][label["stance"]][report.stance] += 1
        if report.stance == label["stance"]:
            stance["agree"] += 1
        else:
            disagreements.append({"id": label["_id"], "message_id": label["message_id"], "field": "stance",
                                  "label": label["stance"], "output": report.stance, "subject": report.subject})
    stance_result = {
        "agree": stance["agree"], "total": stance["total"], "percent": _ratio(stance["agree"], stance["total"]),
        "recall": {name: _ratio(stance["by_label"][name][name], sum(stance["by_label"][name].values()))
                   for name in STANCES},
        "precision": {name: _ratio(stance["by_label"][name][name],
                                   sum(stance["by_label"][other][name] for other in STANCES))
                      for name in STANCES},
        "confusion": {name: dict(stance["by_label"][name]) for name in STANCES},
    }

    taken: list[tuple[bool, bool]] = []
    people: list[tuple[bool, bool]] = []
    kinds: Counter = Counter()
    admitted: Counter = Counter()
    digested: Counter = Counter()
    robots_as_people: list[str] = []
    # issue 38's figures, as the daemon treats each message (flow.admit, flow.post_digests)
    reach = {"reached": 0, "clear": 0}  # people's clear regression reports taken on or in the digest
    admitted_real = {"real": 0, "admitted": 0}  # what the daemon takes on that is a real regression report
    fields: dict[str, dict[str, Any]] = {name: {"agree": 0, "total": 0, "stated_agree": 0, "stated_total": 0}
                                         for name in FIELDS}
    for label in reports:
        report = parsed(label)
        if report is None:
            continue
        kinds[(label["kind"], report.kind)] += 1
        # what the daemon does with it (flow.admit, flow.post_digests): a thread, the day's digest, or stored
        # (accuracy.fate: a reply is listed only in a thread the daemon runs, which a message read
        # alone is not; before issue 38's third round this script counted any unsure reply)
        what = fate(report, REPORT_KINDS, DIGEST_KINDS)
        is_admitted, is_digested = what == "taken on", what == "digest"
        if is_admitted:
            admitted[label["kind"]] += 1
            admitted_real["admitted"] += 1
            admitted_real["real"] += bool(label["taken_on"])
        elif is_digested:
            digested[label["kind"]] += 1
        if label["kind"] in PEOPLE_REPORT_KINDS and label["taken_on"] and not _robot(label):
            reach["clear"] += 1
            reach["reached"] += is_admitted or is_digested
        expected_taken = bool(label["taken_on"])
        got_taken = report.kind in TAKEN_KINDS
        taken.append((expected_taken, got_taken))
        people.append((label["kind"] == "human-report", report.kind == "human-report"))
        if expected_taken != got_taken:
            disagreements.append({"id": label["_id"], "message_id": label["message_id"], "field": "taken_on",
                                  "label": f"{label['kind']} (taken_on {expected_taken})",
                                  "output": f"{report.kind} (taken_on {got_taken})", "subject": report.subject})
        if label["kind"] in ROBOT_KINDS and report.kind in PEOPLE_KINDS:
            robots_as_people.append(f"{label['_id']}: {label['kind']} read as {report.kind}")
        if label["kind"] != "human-report":
            continue
        for name, (agrees, expected, got) in compare_fields(label, report).items():
            stated = expected not in (None, [], {})
            fields[name]["total"] += 1
            fields[name]["stated_total"] += stated
            if agrees:
                fields[name]["agree"] += 1
                fields[name]["stated_agree"] += stated
            else:
                disagreements.append({"id": label["_id"], "message_id": label["message_id"], "field": name,
                                      "label": expected, "output": got, "subject": report.subject})
    for field in fields.values():
        field["percent"] = _ratio(field["agree"], field["total"])
    return {
        "replies_measured": stance["total"], "reports_measured": len(taken),
        "stance": stance_result,
        "taken_on": _precision_recall(taken),
        "people_taken_on": _precision_recall(people),
        "robots_read_as_people": robots_as_people,
        "reach": reach | {"percent": _ratio(reach["reached"], reach["clear"])},
        "daemon_taken_on_precision": admitted_real | {"percent": _ratio(admitted_real["real"],
                                                                        admitted_real["admitted"])},
        "admitted_by_daemon": {"kinds": list(REPORT_KINDS), "by_label_kind": dict(admitted),
                               "digest_by_label_kind": dict(digested)},
        "kinds": {f"{expected} -> {got}": count for (expected, got), count in sorted(kinds.items())},
        "fields": fields,
        "id_mismatch": id_mismatch,
        "disagreements": disagreements,
    }


def _target(name: str, value: float | None) -> str:
    goal = TARGETS.get(name)
    if value is None or goal is None:
        return ""
    return f"  (target >= {goal:.0f}%{'' if value >= goal else ', missed'})"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _show(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if not isinstance(value, str) else value


def print_result(result: dict, notes: list[str]) -> None:
    for note in notes:
        print(note)
    for note in result["id_mismatch"]:
        print(f"message-id mismatch: {note}")
    stance = result["stance"]
    print(f"blind set: {result['replies_measured']} replies, {result['reports_measured']} candidate reports read")
    if stance["total"]:
        print(f"stance          {stance['agree']:3} of {stance['total']:3}  {stance['percent']:5.1f}%"
              f"{_target('stance', stance['percent'])}")
        for name in ("reproduced", "not-reproduced"):
            row = stance["confusion"][name]
            recall = stance["recall"][name]
            print(f"  recall {name:15} {row.get(name, 0):3} of {sum(row.values()):3}  "
                  f"{recall if recall is not None else float('nan'):5.1f}%{_target(name, recall)}"
                  f"   precision {stance['precision'][name]}%")
        print("  confusion (label -> output): " + "; ".join(
            f"{name}: {dict(sorted(row.items()))}" for name, row in stance["confusion"].items()))
    for title, key in (("reports taken on (human-report or lkp-regression)", "taken_on"),
                       ("people's reports taken on (read as human-report)", "people_taken_on")):
        figure = result[key]
        if not result["reports_measured"]:
            break
        print(f"{title}: {figure['taken']} taken, {figure['expected']} labelled, {figure['true_positive']} right; "
              f"precision {figure['precision']}%{_target('precision', figure['precision'])}, "
              f"recall {figure['recall']}%{_target('recall', figure['recall'])}")
    if result["reports_measured"]:
        print(f"robot mail read as a person's: {len(result['robots_read_as_people'])}")
        for line in result["robots_read_as_people"]:
            print(f"  {line}")
        admitted = result["admitted_by_daemon"]
        print(f"the daemon ({', '.join(admitted['kinds'])} above the confidence floor) would open threads for, "
              "by label: "
              + (", ".join(f"{kind} {count}" for kind, count in sorted(admitted["by_label_kind"].items())) or "none")
              + "; list in the day's digest: "
              + (", ".join(f"{kind} {count}" for kind, count in sorted(admitted["digest_by_label_kind"].items()))
                 or "none"))
        reach, real = result["reach"], result["daemon_taken_on_precision"]
        print(f"reach (issue 38): {reach['reached']} of {reach['clear']} people's clear regression reports "
              f"taken on or in the digest ({_percent(reach['percent'])})")
        print(f"taken on by the daemon: {real['real']} of {real['admitted']} are real regression reports "
              f"({_percent(real['percent'])})")
        print("kinds (label -> output): " + "; ".join(f"{pair} {count}" for pair, count in result["kinds"].items()))
    for name, field in result["fields"].items():
        if field["total"]:
            print(f"{name:11} {field['agree']:3} of {field['total']:3}  {field['percent']:5.1f}%"
                  f"{_target(name, field['percent'])}   where the label states one: "
                  f"{field['stated_agree']} of {field['stated_total']}")
    print(f"disagreements ({len(result['disagreements'])}):")
    for item in result["disagreements"]:
        print(f"  {item['id']} [{item['field']}] label {_show(item['label'])} | output {_show(item['output'])}"
              f" | {item['message_id'][:60]} | {item['subject'][:70]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, default=LABELS, help="folder of replies.jsonl and reports.jsonl")
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help="folder holding the git mirrors")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    try:
        replies, reports = load_labels(args.labels)
    except LabelError as error:
        print(f"bench/blind.py: {error}", file=sys.stderr)
        return 2
    raw, notes = read_raw(replies + reports, args.mirrors)
    if not raw:
        for note in notes:
            print(note)
        print(f"nothing measured: no labelled message found under {args.mirrors}")
        return 0
    result = measure(replies, reports, raw)
    if args.json:
        print(json.dumps({"notes": notes, **result}, indent=2, ensure_ascii=False, default=str))
    else:
        print_result(result, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
