"""`triage list` — stored records, newest first, filtered by kind, list, date, testcase.

`--failed` lists the quarantined messages instead (the parser could not read them): key, when it
last failed, source, error; `triage reparse` tries them again.
"""
from __future__ import annotations

import argparse
import json

from triagebot.cli.common import add_db_argument, add_json_argument, database_path, open_store
from triagebot.records import KINDS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)
    parser.add_argument("--kind", action="append", choices=KINDS + ("reports",),
                        help="record kind; 'reports' = LKP, human and syzbot reports (repeatable)")
    parser.add_argument("--list", dest="list_name", help="mailing list name, e.g. linux-ext4")
    parser.add_argument("--since", help="ISO date, e.g. 2024-06-01")
    parser.add_argument("--testcase", help="LKP testcase or benchmark, e.g. fsmark")
    parser.add_argument("--verdict", choices=("confirmed", "not-reproduced", "inconclusive", "error", "none"),
                        help="verdict of the rerun ('none': not rerun yet)")
    parser.add_argument("--limit", type=int, default=50, help="at most this many (default 50; 0: all)")
    add_json_argument(parser, "JSON Lines, one record per line")
    parser.add_argument("--failed", action="store_true",
                        help="the quarantined messages the parser could not read, with the reason")


def _kinds(selected: list[str] | None) -> list[str] | None:
    if not selected:
        return None
    kinds: list[str] = []
    for kind in selected:
        kinds.extend(("lkp-regression", "lkp-improvement", "lkp-functional", "human-report", "syzbot")
                     if kind == "reports" else (kind,))
    return kinds


def run(args: argparse.Namespace) -> int:
    database = database_path(args)
    if not database.exists():
        print(f"(no records: {database} does not exist yet)")
        return 0
    if args.failed:
        with open_store(args) as store:
            rows = store.quarantined(limit=args.limit or None)
        _print_failed(rows, args.json)
        return 0
    with open_store(args) as store:
        records = store.list_records(kind=_kinds(args.kind), list_name=args.list_name, since=args.since,
                                     testcase=args.testcase, limit=args.limit or None)
    if args.verdict and args.verdict != "none":
        records = []  # no rerun has stored a verdict yet: the reproduce stage writes them
    for record in records:
        if args.json:
            print(json.dumps(record, ensure_ascii=False))
            continue
        headline = record.get("headline") or {}
        change = f"{headline['change_percent']:+g}% " if headline else ""
        print(f"{(record.get('date') or '')[:10]:10}  {record['kind']:15}  {change}"
              f"{record.get('subject', '')[:90]}  <{record.get('message_id') or '(no Message-ID)'}>")
    return 0


def _print_failed(rows, as_json: bool) -> None:
    if not rows and not as_json:
        print("(no quarantined messages)")
    for row in rows:
        if as_json:
            print(json.dumps({"key": row.key, "failed_at": row.failed_at, "received_at": row.received_at,
                              "source": row.source_name, "source_url": row.source_url, "list": row.list_name,
                              "parser_version": row.parser_version, "attempts": row.attempts, "size": row.size,
                              "error": row.error}, ensure_ascii=False))
            continue
        where = row.source_url or row.list_name or ""
        print(f"<{row.key}>  {row.failed_at}  {row.source_name}{' ' + where if where else ''}  {row.error}")
