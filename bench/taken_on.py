"""Benchmark: which messages of a list-year the daemon would take on as a person's report.

    PYTHONPATH=. python3 bench/taken_on.py ../shared/corpus/lists/linux-btrfs-2023.mbox.gz [--kind KIND] [--json]

Reads every message of FILE (an mbox, mbox.gz, maildir or one message) as the parser does, without
the language readers (the kind does not depend on them), and prints one line per message read as
`human-report` (or `--kind`): Message-ID, date, sender, subject; then the counts of every kind.
Precision is then measured by reading the listed messages (bench/README.md gives the figures).
"""
from __future__ import annotations

import argparse
import collections
import json
import sys

from triagebot.errors import MessageError
from triagebot.ingest.inputs import read_messages
from triagebot.parse.report import read_message
from triagebot.records.report import Source


def listed(path: str, kind: str) -> tuple[list[dict], collections.Counter]:
    found: list[dict] = []
    kinds: collections.Counter = collections.Counter()
    for _name, source_kind, raw in read_messages(path):
        try:
            report = read_message(raw, Source(source_kind)).report
        except MessageError:
            kinds["(not a message)"] += 1
            continue
        kinds[report.kind] += 1
        if report.kind == kind:
            found.append({"message_id": report.message_id, "date": report.date, "from": report.from_,
                          "subject": report.subject})
    return found, kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="an mbox, mbox.gz, maildir or message")
    parser.add_argument("--kind", default="human-report", help="the kind to list (default human-report)")
    parser.add_argument("--json", action="store_true", help="JSON Lines, one message per line, then the counts")
    args = parser.parse_args(argv)
    found, kinds = listed(args.file, args.kind)
    if args.json:
        for item in found:
            print(json.dumps(item, ensure_ascii=False))
        print(json.dumps({"counts": dict(kinds)}))
        return 0
    for item in found:
        print(f"{item['message_id']}  {item['date'][:10]}  {item['from'][:40]}  {item['subject'][:100]}")
    print(f"{len(found)} {args.kind} of {sum(kinds.values())} messages; "
          + ", ".join(f"{name} {count}" for name, count in kinds.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
