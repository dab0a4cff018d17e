"""`triage labels export` — people's decisions on unsure readings, as labels to measure against.

One JSON object a line, in the shape of fixtures/labels/*/reports.jsonl: `message_id`, `list`,
`year`, `kind` (what the parser read when the person decided), `taken_on` (the decision), and the
decision's `decided_by`, `via`, `decided_at`, `note` and the daemon's `reasons` for being unsure;
`source` is `store:<the message's source>` (lore's URL, a file), where the raw message is kept.
The last decision on a message stands (`--every` writes each one). `--since DATE` keeps those
decided from then; `--out FILE` writes there instead of stdout (whole, or not at all).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from triagebot.cli.common import add_db_argument, open_store
from triagebot.store.protocol import UnreadableRecord


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="labels_action", required=True)
    export = actions.add_parser("export", help="write the decisions as labels (JSON Lines)")
    export.add_argument("--since", help="only decisions made from this date (YYYY-MM-DD or ISO 8601)")
    export.add_argument("--every", action="store_true", help="every decision, not the last on each message")
    export.add_argument("--out", type=Path, help="write to FILE (default: stdout)")
    add_db_argument(export)


def labels(store, since: str | None, every: bool) -> list[dict]:
    rows = store.decisions(since)
    if not every:
        last = {row.message_id: row for row in rows}  # oldest first: the last one stands
        rows = sorted(last.values(), key=lambda row: row.decision_id)
    found = []
    for row in rows:
        stored = store.get_message(row.message_id)
        try:
            report = store.get_record(row.message_id)
        except UnreadableRecord:  # an unreadable record still has its decision: a label without a date
            report = None
        date = report.date if report is not None and report.date else None
        found.append({
            "source": f"store:{(stored.source_url or stored.source_name) if stored else 'unknown'}",
            "list": stored.list_name if stored else None,
            "year": int(date[:4]) if date and date[:4].isdigit() else None,
            "message_id": row.message_id,
            "kind": row.kind_read,
            "taken_on": row.decision == "take-on",
            "decided_by": row.decided_by, "via": row.via, "decided_at": row.decided_at,
            "note": row.note, "reasons": row.reasons,
            "subject": report.subject if report is not None else None,
        })
    return found


def run(args: argparse.Namespace) -> int:
    since = None
    if args.since:
        from triagebot.errors import TriageError
        from triagebot.present.dates import parse_since
        from triagebot.store.protocol import utc_text

        try:
            since = utc_text(parse_since(args.since))
        except TriageError as error:
            print(f"triage labels export: {error}", file=sys.stderr)
            return 2
    with open_store(args) as store:
        found = labels(store, since, args.every)
    text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in found)
    if args.out is None:
        sys.stdout.write(text)
    else:
        # written whole or not at all: a temporary file beside it, renamed
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=args.out.parent, delete=False,
                                         prefix=f".{args.out.name}.") as handle:
            handle.write(text)
        os.replace(handle.name, args.out)
    print(f"triage labels export: {len(found)} labels", file=sys.stderr)
    return 0
