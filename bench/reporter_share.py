"""Benchmark: how many labelled reproductions are the reporter's own follow-ups (issue 24).

Reads the reply stance labels of development sets (fixtures/labels/dev2, dev3, dev4, dev6 by
default; never the blind set) and, for each labelled reply, the writer of its thread's first
message: in a public-inbox v2 git mirror each commit is one message whose author is the mail's
From and whose subject is the mail's Subject, so the first commit whose subject is the reply's
subject without its `Re:` prefixes (a bugzilla `New:` dropped) is the thread's first message.
A reply whose sender's address is that author's is the reporter's. Each reply is parsed on its own
as bench/blind.py does. Prints per set: replies by the reporter and by others, by label, and
triagebot's recall of `reproduced` in each group; replies whose thread's first message is not in
the mirror are counted as "first message not found".

    PYTHONPATH=$PWD python3 bench/reporter_share.py [--sets dev2,dev3,dev4,dev6] [--mirrors DIR] [--json]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from email.utils import parseaddr
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from blind import _SOURCE, MIRRORS, load_labels, mirror_dir, read_raw  # noqa: E402

from triagebot.parse.report import parse_message  # noqa: E402
from triagebot.records.report import Source  # noqa: E402

LABELS = PROJECT / "fixtures" / "labels"
DEFAULT_SETS = ("dev2", "dev3", "dev4", "dev6")
_REPLY_PREFIXES = re.compile(r"^(?:\s*(?:re|aw|sv|fwd?|antw)\s*(?:\[\d+\])?\s*:\s*)+", re.IGNORECASE)
_BUGZILLA_NEW = re.compile(r"^(\[Bug \d+\])\s*New:\s*", re.IGNORECASE)


def thread_subject(subject: str) -> str:
    """The subject a thread's first message carries, compared without case or runs of space."""
    bare = _BUGZILLA_NEW.sub(r"\1 ", _REPLY_PREFIXES.sub("", subject or ""))
    return " ".join(bare.split()).lower()


def first_authors(log: str) -> dict[str, str]:
    """Thread subject -> address of its first message's writer, from `git log --reverse
    --format=%ae%x09%s` (oldest first); replies' commits are skipped."""
    found: dict[str, str] = {}
    for line in log.splitlines():
        address, _, subject = line.partition("\t")
        if _REPLY_PREFIXES.match(subject):
            continue
        found.setdefault(thread_subject(subject), address.strip().lower())
    return found


def _mirror_authors(mirrors: Path, owner: str, name: str) -> dict[str, str]:
    directory = mirror_dir(mirrors, owner, name)
    if directory is None:
        return {}
    done = subprocess.run(["git", f"--git-dir={directory}", "log", "--reverse", "--format=%ae%x09%s"],
                          capture_output=True, text=True, errors="replace", check=False)
    return first_authors(done.stdout) if done.returncode == 0 else {}


def measure_set(directory: Path, mirrors: Path) -> dict:
    replies, _reports = load_labels(directory)
    raw, notes = read_raw(replies, mirrors)
    authors: dict[tuple[str, str], dict[str, str]] = {}
    groups: dict[str, Counter] = {"reporter": Counter(), "other": Counter(), "first message not found": Counter()}
    for label in replies:
        message = raw.get(label["_id"])
        if message is None:
            continue
        report = parse_message(message, Source("eml"))
        match = _SOURCE.match(label["source"])
        assert match is not None  # load_labels checked
        key = (match["owner"], match["name"])
        if key not in authors:
            authors[key] = _mirror_authors(mirrors, *key)
        first = authors[key].get(thread_subject(report.subject))
        group = ("first message not found" if first is None
                 else "reporter" if parseaddr(report.from_ or "")[1].lower() == first else "other")
        groups[group][label["stance"]] += 1
        if label["stance"] == "reproduced" and report.stance == "reproduced":
            groups[group]["reproduced found"] += 1
    return {"notes": notes, "groups": {name: dict(counts) for name, counts in groups.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(DEFAULT_SETS), help="development label sets, comma-separated")
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help="folder holding the git mirrors")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.sets.split(",") if name.strip()]
    if "blind" in names or "blind-second" in names:
        print("bench/reporter_share.py: the blind set is measured by bench/blind.py only", file=sys.stderr)
        return 2
    result = {name: measure_set(LABELS / name, args.mirrors) for name in names}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for name, figures in result.items():
        for note in figures["notes"]:
            print(f"{name}: {note}")
        print(name)
        for group, counts in figures["groups"].items():
            if not counts:
                continue
            reproduced = counts.get("reproduced", 0)
            print(f"  {group:24} reproduced {reproduced:3} (found {counts.get('reproduced found', 0):3}), "
                  f"not-reproduced {counts.get('not-reproduced', 0):3}, none {counts.get('none', 0):3}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
