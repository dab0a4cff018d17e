"""Benchmark: how many reports of the shared corpus join an earlier one (one regression, one report).

    PYTHONPATH=. python3 bench/joins.py ../shared/corpus/lkp-stream ../shared/corpus/lists/*.mbox.gz

Reads every message of each PATH (a directory of .eml files, an mbox, mbox.gz or maildir) as the
parser's first pass does (no language readers: kind, commits and headline do not depend on them),
keeps the reports naming a culprit (triagebot/lifecycle/same.py), and applies the daemon's rule in
date order: each report joins the oldest earlier report of its culprit that is not itself joined.
Prints one block per join (both subjects, dates, Message-IDs, the rule) for checking by hand, then
the counts. bench/README.md lists the joins and what the hand check found.
"""
from __future__ import annotations

import argparse
import collections
import sys
from datetime import datetime
from pathlib import Path

from triagebot.errors import MessageError
from triagebot.ingest.inputs import read_messages
from triagebot.lifecycle.same import culprit, first_of, relation
from triagebot.parse.report import read_message
from triagebot.records.report import Report, Source


def reports(path: Path) -> list[tuple[str, Report]]:
    found = []
    files = sorted(path.glob("*.eml")) if path.is_dir() else [path]
    for file in files:
        for _name, source_kind, raw in read_messages(str(file)):
            try:
                report = read_message(raw, Source(source_kind)).report
            except MessageError:
                continue
            if culprit(report) is not None and report.message_id:
                found.append((report.message_id, report))
    return found


def _when(report: Report) -> datetime:
    try:
        return datetime.fromisoformat(report.date or "")
    except ValueError:
        return datetime.min


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    every: dict[str, Report] = {}
    per_path: collections.Counter = collections.Counter()
    for path in args.paths:
        for key, report in reports(path):
            if key not in every:
                every[key] = report
                per_path[path.name] += 1
    ordered = sorted(every.items(), key=lambda item: (_when(item[1]).timestamp() if item[1].date else 0, item[0]))
    joined: dict[str, tuple[str, str, str]] = {}
    for index, (key, report) in enumerate(ordered):
        first = first_of(key, report, ordered[:index], lambda other: other in joined)
        if first is not None:
            found = relation(first[1], report)
            assert found is not None
            joined[key] = (first[0], *found)
    counts = collections.Counter(relation_name for _first, relation_name, _rule in joined.values())
    for key, (first_key, relation_name, rule) in joined.items():
        first, later = every[first_key], every[key]
        sha = culprit(later)
        print(f"{relation_name} ({rule}), culprit {sha[0][:12] if sha else '?'} {sha[1] if sha else ''}\n"
              f"  first: {first.date}  <{first_key}>\n         {first.subject}\n"
              f"  later: {later.date}  <{key}>\n         {later.subject}")
    print(f"reports with a culprit: {len(every)} ({', '.join(f'{name} {count}' for name, count in per_path.items())})")
    print(f"joined: also-seen {counts['also-seen']}, linked {counts['linked']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
