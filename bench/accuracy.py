"""Benchmark: how often the parser agrees with the hand labels of people's mail.

Labels are golden data in fixtures/labels/: reports.jsonl (people's reports and look-alikes:
kind, culprit, testcase, headline, machine) and replies.jsonl (replies: stance, and any of the
same fields). Either file may be absent. Each label names its source — a list-year of
../shared/corpus/lists/ (read once, only the labelled messages parsed) or "corpus"
(../shared/corpus/messages/, found through INDEX.tsv) — and its Message-ID. Only the fields a
label holds are compared; a headline only where the label states one.

    PYTHONPATH=. python3 bench/accuracy.py [--json] [--labels DIR] [--shared DIR]

Prints, per field, agreement (n of N, percent) and every disagreement. The first label set
predates issue 24's reservation of lists for independent measurement: its linux-btrfs and
linux-nfs labels (list-years and corpus messages of those lists) are counted apart, as totals
only, so that no rule is written from what they disagree on.
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

from triagebot.ingest.inputs import read_messages
from triagebot.parse.report import parse_message
from triagebot.records.report import Report, Source

PROJECT = Path(__file__).resolve().parents[1]
LABELS = PROJECT / "fixtures" / "labels"
SHARED = PROJECT.parent / "shared"
LABEL_FILES = ("reports.jsonl", "replies.jsonl")
FIELDS = ("kind", "stance", "culprit", "testcase", "headline", "machine")
TARGETS = {"stance": 95.0, "kind": 98.0, "headline": 90.0, "culprit": 95.0}
HEADLINE_TOLERANCE = 0.15  # percentage points: labels round to one decimal
# Lists kept for independent measurement (issue 24): no rule is written from their mail.
RESERVED = ("linux-btrfs", "linux-nfs", "linux-pm", "linux-raid", "io-uring", "cgroups", "linux-block",
            "linux-scsi", "dm-devel", "linux-f2fs-devel", "linux-xfs")
_MESSAGE_ID = re.compile(rb"^Message-ID:[ \t]*(?:\r?\n[ \t]+)?<([^>\r\n]+)>", re.IGNORECASE | re.MULTILINE)


def load_labels(directory: Path) -> list[dict]:
    labels: list[dict] = []
    for name in LABEL_FILES:
        path = directory / name
        if not path.exists():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                label = json.loads(line)
                label["_file"] = f"{name}:{number}"
                labels.append(label)
    return labels


def label_list(label: dict, corpus_lists: dict[str, str]) -> str:
    """The list of a first-set label: `linux-ext4-2024` -> linux-ext4; a corpus message by INDEX.tsv."""
    if label["source"] == "corpus":
        return corpus_lists.get(label["message_id"], "corpus")
    return label["source"].rsplit("-", 1)[0]


def corpus_lists(shared: Path) -> dict[str, str]:
    """The list each corpus message came from, by Message-ID, from corpus/INDEX.tsv."""
    index = shared / "corpus" / "INDEX.tsv"
    found: dict[str, str] = {}
    if index.exists():
        with open(index, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                source = row.get("source") or ""
                name = source.split("linux-mailinglist-archives/", 1)[-1].split(" ", 1)[0]
                found[row["message_id"].strip("<>")] = name.split(".", 1)[0] if "/" not in name else "corpus"
    return found


def _header_id(raw: bytes) -> str | None:
    end = raw.find(b"\n\n")
    match = _MESSAGE_ID.search(raw[: end if end != -1 else 65536])
    return match.group(1).decode("utf-8", "replace").strip() if match else None


def find_messages(labels: list[dict], shared: Path) -> dict[tuple[str, str], bytes]:
    """The raw bytes of each labelled message, by (source, Message-ID); each list-year read once."""
    wanted: dict[str, set[str]] = {}
    for label in labels:
        wanted.setdefault(label["source"], set()).add(label["message_id"])
    found: dict[tuple[str, str], bytes] = {}
    for source, ids in wanted.items():
        if source == "corpus":
            index = shared / "corpus" / "INDEX.tsv"
            if not index.exists():
                continue
            with open(index, newline="", encoding="utf-8") as handle:
                for row in csv.DictReader(handle, delimiter="\t"):
                    message_id = row["message_id"].strip("<>")
                    if message_id in ids:
                        found[(source, message_id)] = (shared / "corpus" / "messages" / row["file"]).read_bytes()
            continue
        path = shared / "corpus" / "lists" / f"{source}.mbox.gz"
        if not path.exists():
            continue
        for _name, _kind, raw in read_messages(str(path)):
            message_id = _header_id(raw)
            if message_id in ids:
                found[(source, message_id)] = raw
    return found


def _culprit(report: Report) -> str | None:
    return next((commit.sha for commit in report.commits if commit.role == "culprit"), None)


def _same_sha(expected: str | None, got: str | None) -> bool:
    if expected is None or got is None:
        return expected is got
    expected, got = expected.lower(), got.lower()
    return expected.startswith(got) or got.startswith(expected)


def _headline(report: Report) -> dict | None:
    if report.headline is None:
        return None
    return {"metric": report.headline.metric, "change_percent": report.headline.change_percent,
            "direction": report.headline.direction}


def _same_headline(expected: dict, got: dict | None) -> bool:
    return (got is not None and expected["metric"] == got["metric"]
            and expected["direction"] == got["direction"]
            and abs(float(expected["change_percent"]) - float(got["change_percent"])) <= HEADLINE_TOLERANCE)


def _machine(report: Report, keys: list[str]) -> dict:
    machine = report.test_machine
    return {key: getattr(machine, key, None) if machine else None for key in keys}


def _same_machine(expected: dict | None, got: dict) -> bool:
    if not expected:
        return not any(value is not None for value in got.values())
    for key, value in expected.items():
        found = got.get(key)
        if key == "cpu_model":
            if not found or " ".join(str(value).split()).lower() not in " ".join(str(found).split()).lower():
                return False
        elif found != value:
            return False
    return True


def compare(label: dict, report: Report) -> dict[str, tuple[bool, object, object]]:
    """Per field present in the label: (agrees, expected, got)."""
    result: dict[str, tuple[bool, object, object]] = {}
    if "kind" in label:
        result["kind"] = (report.kind == label["kind"], label["kind"], report.kind)
    if "stance" in label:
        result["stance"] = (report.stance == label["stance"], label["stance"], report.stance)
    if "culprit" in label:
        got = _culprit(report)
        result["culprit"] = (_same_sha(label["culprit"], got), label["culprit"], got)
    if "testcase" in label:
        result["testcase"] = (report.testcase == label["testcase"], label["testcase"], report.testcase)
    if label.get("headline") is not None:  # headline agreement counts where one is stated
        got_headline = _headline(report)
        result["headline"] = (_same_headline(label["headline"], got_headline), label["headline"], got_headline)
    if "machine" in label:
        expected = label["machine"]
        got_machine = _machine(report, sorted(expected) if expected else ["cpu_model", "threads", "memory_gb"])
        result["machine"] = (_same_machine(expected, got_machine), expected, got_machine)
    return result


def measure(labels: list[dict], messages: dict[tuple[str, str], bytes],
            lists: dict[str, str] | None = None) -> dict:
    """Agreement per field; labels of reserved lists (`lists` maps corpus messages to their list)
    go to `reserved`, totals only."""
    fields: dict[str, dict] = {name: {"agree": 0, "total": 0, "disagreements": []} for name in FIELDS}
    reserved: dict[str, dict] = {name: {"agree": 0, "total": 0} for name in FIELDS}
    missing = []
    for label in labels:
        raw = messages.get((label["source"], label["message_id"]))
        if raw is None:
            missing.append(f"{label['source']}:{label['message_id']}")
            continue
        report = parse_message(raw, Source("eml"))
        if label_list(label, lists or {}) in RESERVED:
            for name, (agrees, _expected, _got) in compare(label, report).items():
                reserved[name]["total"] += 1
                reserved[name]["agree"] += agrees
            continue
        for name, (agrees, expected, got) in compare(label, report).items():
            field = fields[name]
            field["total"] += 1
            if agrees:
                field["agree"] += 1
            else:
                field["disagreements"].append({"source": label["source"], "message_id": label["message_id"],
                                               "subject": report.subject[:90], "expected": expected, "got": got})
    for field in (*fields.values(), *reserved.values()):
        field["percent"] = round(100.0 * field["agree"] / field["total"], 1) if field["total"] else None
    return {"labels": len(labels), "missing": missing, "fields": fields, "reserved": reserved}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--labels", type=Path, default=LABELS, help="folder of reports.jsonl / replies.jsonl")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared folder holding corpus/")
    args = parser.parse_args(argv)
    labels = load_labels(args.labels)
    if not labels:
        print(f"no labels in {args.labels}", file=sys.stderr)
        return 1
    result = measure(labels, find_messages(labels, args.shared), corpus_lists(args.shared))
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    print(f"{result['labels']} labels; {len(result['missing'])} messages not found")
    for name in result["missing"]:
        print(f"  not found: {name}")
    for name, field in result["fields"].items():
        if not field["total"]:
            continue
        target = TARGETS.get(name)
        goal = f"  (target >= {target:.0f}%)" if target else ""
        print(f"{name:9} {field['agree']:3} of {field['total']:3}  {field['percent']:5.1f}%{goal}")
        for item in field["disagreements"]:
            print(f"    {item['source']} {item['message_id'][:60]}  expected {item['expected']!r}, "
                  f"got {item['got']!r}  ({item['subject']})")
    counted = {name: field for name, field in result["reserved"].items() if field["total"]}
    if counted:
        print("labels of lists kept for independent measurement (issue 24), totals only:")
        for name, field in counted.items():
            print(f"  {name:9} {field['agree']:3} of {field['total']:3}  {field['percent']:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
