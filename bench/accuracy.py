"""Benchmark: how often the parser agrees with the hand labels of people's mail.

Labels are golden data in fixtures/labels/: reports.jsonl (people's reports and look-alikes:
kind, culprit, testcase, headline, machine) and replies.jsonl (replies: stance, and any of the
same fields). Either file may be absent. Each label names its source — a list-year of
../shared/corpus/lists/ (read once, only the labelled messages parsed) or "corpus"
(../shared/corpus/messages/, found through INDEX.tsv) — and its Message-ID. Only the fields a
label holds are compared; a headline only where the label states one.

    PYTHONPATH=. python3 bench/accuracy.py [--json] [--labels DIR] [--shared DIR]
    PYTHONPATH=. python3 bench/accuracy.py --set dev7 [--set dev5 ...] [--mirrors DIR] [--json]

Prints, per field, agreement (n of N, percent) and every disagreement. The first label set
predates issue 24's reservation of lists for independent measurement: its linux-btrfs and
linux-nfs labels (list-years and corpus messages of those lists) are counted apart, as totals
only, so that no rule is written from what they disagree on.

`--set NAME` (a folder of fixtures/labels/, or a path) measures a development set whose labels
name their raw message as `<owner>/<repo>@<commit>` of a public-inbox git mirror (read under
--mirrors, default ../.mirror, as `<owner>+<repo>/repo`; one `git cat-file --batch` a mirror; an
absent mirror is skipped, said). It gives issue 38's figures, each with its count: reach (of the
people's clear regression reports, the share the daemon takes on or lists in the day's digest),
taken-on precision (of what the daemon takes on, the share labelled a regression report to take
on), stance agreement and the recall of `reproduced`. A label of a reserved list (RESERVED) is
counted apart, totals only: no message of such a list is ever printed. The blind sets are refused.
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from triagebot.ingest.inputs import read_messages
from triagebot.parse.report import parse_message
from triagebot.records.certainty import uncertain_reasons
from triagebot.records.report import Report, Source

PROJECT = Path(__file__).resolve().parents[1]
LABELS = PROJECT / "fixtures" / "labels"
SHARED = PROJECT.parent / "shared"
LABEL_FILES = ("reports.jsonl", "replies.jsonl")
FIELDS = ("kind", "stance", "culprit", "testcase", "headline", "machine")
TARGETS = {"stance": 95.0, "kind": 98.0, "headline": 90.0, "culprit": 95.0}
HEADLINE_TOLERANCE = 0.15  # percentage points: labels round to one decimal
# Lists kept for independent measurement (issue 24; issue 38 added linux-nvme, linux-fsdevel,
# netdev, linux-rdma and linux-crypto): no rule is written from their mail. Development set four
# (fixtures/labels/dev4, linux-nvme) is therefore measured as totals only.
RESERVED = ("linux-btrfs", "linux-nfs", "linux-pm", "linux-raid", "io-uring", "cgroups", "linux-block",
            "linux-scsi", "dm-devel", "linux-f2fs-devel", "linux-xfs",
            "linux-nvme", "linux-fsdevel", "netdev", "linux-rdma", "linux-crypto")
MIRRORS = PROJECT.parent / ".mirror"
BLIND = ("blind", "blind-second")  # never read here: the lead measures them (bench/blind.py)
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


# --- development sets read from the mirrors (issue 38's figures) -------------------------------

_SOURCE = re.compile(r"^(?P<owner>[A-Za-z0-9][\w.-]*)/(?P<name>[\w.-]+)@(?P<commit>[0-9a-f]{40})$")
ROBOT_FROM = re.compile(r"kernel test robot|lkp@intel\.com|(?:oliver\.sang|yujie\.liu|rong\.a\.chen)@intel\.com",
                        re.IGNORECASE)
PEOPLE_REPORT_KINDS = ("human-report", "patch-regression")  # a person's regression report, by the labels


class LabelError(ValueError):
    """A label set that cannot be measured here (a line that is no label, or a blind set)."""


def set_directory(name: str) -> Path:
    """A label set by name (a folder of fixtures/labels/) or path; LabelError for a blind set."""
    path = Path(name) if ("/" in name or Path(name).is_dir()) and not (LABELS / name).is_dir() else LABELS / name
    if path.resolve().name in BLIND or path.resolve().parent.name in BLIND or "blind" in path.resolve().name:
        raise LabelError(f"{name}: a blind set is measured by the lead alone (bench/blind.py), never here")
    if not path.is_dir():
        raise LabelError(f"{name}: no such label set ({path} is not a folder)")
    return path


def read_label_file(path: Path, id_prefix: str = "") -> list[dict]:
    """The labels of one JSON-lines file of mirrored messages; each gains `_id` =
    `<id_prefix><file name>:<line>` (bench/blind.py reads its sets with this too)."""
    labels: list[dict] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            label = json.loads(line)
        except json.JSONDecodeError as error:
            raise LabelError(f"{path}:{number}: not JSON ({error.msg})") from None
        if not _SOURCE.match(str(label.get("source", ""))):
            raise LabelError(f"{path}:{number}: source must be <owner>/<repo>@<40-hex commit>")
        label["_id"] = f"{id_prefix}{path.name}:{number}"
        labels.append(label)
    return labels


def load_set(directory: Path) -> tuple[list[dict], list[dict]]:
    """(replies, reports) of a mirror-sourced set; each label gains `_id` = set/file:line."""
    found = [read_label_file(path, f"{directory.name}/") if path.exists() else []
             for path in (directory / "replies.jsonl", directory / "reports.jsonl")]
    return found[0], found[1]


def mirror_dir(mirrors: Path, owner: str, name: str) -> Path | None:
    for candidate in (mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}"):
        if (candidate / "objects").is_dir() or (candidate / "HEAD").is_file():
            return candidate
    return None


def read_mirrored(labels: list[dict], mirrors: Path) -> tuple[dict[str, bytes], list[str]]:
    """Raw message by label `_id`, each mirror read by one `git cat-file --batch`; and what was skipped."""
    by_repo: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for label in labels:
        match = _SOURCE.match(label["source"])
        assert match is not None  # load_set checked
        by_repo.setdefault((match["owner"], match["name"]), []).append((label["_id"], match["commit"]))
    found: dict[str, bytes] = {}
    notes: list[str] = []
    for (owner, name), wanted in sorted(by_repo.items()):
        directory = mirror_dir(mirrors, owner, name)
        if directory is None:
            notes.append(f"skipped: mirror {owner}/{name} not found under {mirrors} ({len(wanted)} labels)")
            continue
        request = "".join(f"{commit}:m\n" for _, commit in wanted).encode()
        done = subprocess.run(["git", f"--git-dir={directory}", "cat-file", "--batch"], input=request,
                              capture_output=True, check=False)
        if done.returncode != 0:
            notes.append(f"skipped: git cat-file failed in {directory}: {done.stderr.decode(errors='replace').strip()}")
            continue
        output, position = done.stdout, 0
        for label_id, commit in wanted:
            end = output.index(b"\n", position)
            header = output[position:end].split()
            position = end + 1
            if header[-1] == b"missing":
                notes.append(f"missing: {label_id} {owner}/{name}@{commit} has no file m")
                continue
            size = int(header[2])
            found[label_id] = output[position:position + size]
            position += size + 1
    return found, notes


def fate(report: Report, report_kinds: tuple[str, ...], digest_kinds: tuple[str, ...]) -> str:
    """What the daemon does with a message read alone (flow.admit, flow.post_digests): `taken on`
    (a thread of its own), `digest` (a line of the day's unsure readings) or `stored`. A reply is
    listed only in a thread the daemon runs, which a message read alone is not."""
    unsure = bool(uncertain_reasons(report))
    if report.kind in report_kinds and not unsure:
        return "taken on"
    if report.kind in digest_kinds and report.kind != "reply" and unsure:
        return "digest"
    return "stored"


def _count(agree: int, total: int) -> dict:
    return {"agree": agree, "total": total, "percent": round(100.0 * agree / total, 1) if total else None}


def _reserved(label: dict) -> bool:
    return str(label.get("list", "")) in RESERVED or any(
        f"/{name}." in label["source"] for name in RESERVED)


def measure_set(replies: list[dict], reports: list[dict], raw: dict[str, bytes],
                report_kinds: tuple[str, ...], digest_kinds: tuple[str, ...]) -> dict:
    """Issue 38's figures on one set: development lists with every disagreement, reserved lists
    as totals only (no message id, subject or output kept for them)."""
    sides: dict[str, dict[str, Any]] = {}
    for side in ("development", "reserved"):
        sides[side] = {"stance": Counter(), "confusion": Counter(), "reach": Counter(), "taken": Counter(),
                       "fates": Counter(), "disagreements": []}

    def parsed(label: dict) -> Report | None:
        message = raw.get(label["_id"])
        return None if message is None else parse_message(message, Source("eml"))

    for label in replies:
        report = parsed(label)
        if report is None:
            continue
        side = sides["reserved" if _reserved(label) else "development"]
        side["stance"]["total"] += 1
        side["stance"]["agree"] += report.stance == label["stance"]
        side["confusion"][(label["stance"], report.stance)] += 1
        if report.stance != label["stance"] and not _reserved(label):
            side["disagreements"].append({"id": label["_id"], "field": "stance", "label": label["stance"],
                                          "output": report.stance, "subject": report.subject[:80]})
    for label in reports:
        report = parsed(label)
        if report is None:
            continue
        reserved = _reserved(label)
        side = sides["reserved" if reserved else "development"]
        what = fate(report, report_kinds, digest_kinds)
        side["fates"][(label["kind"], what)] += 1
        person = label["kind"] in PEOPLE_REPORT_KINDS and label.get("taken_on") \
            and not ROBOT_FROM.search(report.from_ or "")
        if person:
            side["reach"]["total"] += 1
            side["reach"]["agree"] += what in ("taken on", "digest")
            if what == "stored" and not reserved:
                side["disagreements"].append({"id": label["_id"], "field": "reach", "label": label["kind"],
                                              "output": report.kind, "subject": report.subject[:80]})
        if what == "taken on":
            side["taken"]["total"] += 1
            side["taken"]["agree"] += bool(label.get("taken_on"))
            if not label.get("taken_on") and not reserved:
                side["disagreements"].append({"id": label["_id"], "field": "taken on", "label": label["kind"],
                                              "output": report.kind, "subject": report.subject[:80]})
    result: dict[str, Any] = {}
    for name, side in sides.items():
        confusion = side["confusion"]
        reproduced = sum(count for (expected, _), count in confusion.items() if expected == "reproduced")
        result[name] = {
            "reach": _count(side["reach"]["agree"], side["reach"]["total"]),
            "taken_on_precision": _count(side["taken"]["agree"], side["taken"]["total"]),
            "stance": _count(side["stance"]["agree"], side["stance"]["total"]),
            "reproduced_recall": _count(confusion[("reproduced", "reproduced")], reproduced),
            "fates": {f"{kind} -> {what}": count for (kind, what), count in sorted(side["fates"].items())},
        }
        if name == "development":
            result[name]["confusion"] = {f"{a} -> {b}": count for (a, b), count in sorted(confusion.items())}
            result[name]["disagreements"] = side["disagreements"]
    return result


def _figure(value: dict) -> str:
    return "-" if not value["total"] else f"{value['agree']} of {value['total']} ({value['percent']:.1f}%)"


def print_set(name: str, result: dict, notes: list[str]) -> None:
    for note in notes:
        print(note)
    for side in ("development", "reserved"):
        figures = result[side]
        if not any(figures[key]["total"] for key in ("reach", "taken_on_precision", "stance")):
            continue
        title = name if side == "development" else f"{name}, reserved lists (totals only)"
        print(f"{title}: reach {_figure(figures['reach'])}; taken-on precision "
              f"{_figure(figures['taken_on_precision'])}; stance {_figure(figures['stance'])}; "
              f"reproduced recall {_figure(figures['reproduced_recall'])}")
        if side == "development":
            fates = figures["fates"].items()
            print("  fates (label -> daemon): " + "; ".join(f"{key} {count}" for key, count in fates))
            for item in figures["disagreements"]:
                print(f"  {item['id']} [{item['field']}] label {item['label']} | output {item['output']}"
                      f" | {item['subject']}")


def main_sets(names: list[str], mirrors: Path, as_json: bool) -> int:
    from triagebot.daemon.flow import DIGEST_KINDS, REPORT_KINDS

    out: dict[str, Any] = {}
    for name in names:
        try:
            replies, reports = load_set(set_directory(name))
        except LabelError as error:
            print(f"bench/accuracy.py: {error}", file=sys.stderr)
            return 2
        raw, notes = read_mirrored(replies + reports, mirrors)
        result = measure_set(replies, reports, raw, tuple(REPORT_KINDS), tuple(DIGEST_KINDS))
        if as_json:
            out[name] = {"notes": notes, **result}
        else:
            print_set(name, result, notes)
    if as_json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--labels", type=Path, default=LABELS, help="folder of reports.jsonl / replies.jsonl")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared folder holding corpus/")
    parser.add_argument("--set", action="append", default=[], dest="sets",
                        help="a mirror-sourced development set (fixtures/labels/NAME): issue 38's figures")
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help="the folder holding the git mirrors")
    args = parser.parse_args(argv)
    if args.sets:
        return main_sets(args.sets, args.mirrors, args.json)
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
