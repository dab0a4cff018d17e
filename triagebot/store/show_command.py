"""Store stage: `triage show MESSAGE-ID` — one stored report at a glance, with its thread.

The record's summary (commits, headline, testcase and machine, the top metric rows, reproducers,
stance), then the thread it belongs to: who reproduced, who did not, objections, fixes.
`--json` prints the stored record as it is kept (schema 1). An unknown id exits 1.
"""
from __future__ import annotations

import argparse
import json
import sys

from triagebot.parse.thread import build_threads, render_thread, reports_by_key
from triagebot.records import report_from_json
from triagebot.store.protocol import normalize_message_id
from triagebot.store.sqlite import SqliteStore, resolve_db_path
from triagebot.summary import render_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="MESSAGE-ID", help="with or without <>")
    parser.add_argument("--db", help="database file (default: TRIAGE_DB, then ~/.local/share/triagebot/triage.db)")
    parser.add_argument("--json", action="store_true", help="print the stored record as JSON")
    parser.add_argument("--all", action="store_true", help="every metric row, not the top ones")


def run(args: argparse.Namespace) -> int:
    database = resolve_db_path(args.db)
    try:
        message_id = normalize_message_id(args.message_id)
    except ValueError:
        print(f"triage show: {args.message_id!r}: not a Message-ID", file=sys.stderr)
        return 2
    if not database.exists():
        print(f"triage show: {message_id}: no such message ({database} does not exist yet)", file=sys.stderr)
        return 1
    with SqliteStore(database) as store:
        record = store.get_record(message_id)
        if record is None:
            print(f"triage show: {message_id}: no such message in {database}", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps(record, ensure_ascii=False))
            return 0
        thread_records = [report_from_json(item) for item in
                          (store.get_record(key) for key in store.thread_of(message_id)) if item]
    report = report_from_json(record)
    print(render_report(report, all_rows=args.all))
    if len(thread_records) > 1:
        by_key = reports_by_key(thread_records)
        for thread in build_threads(thread_records):
            if message_id in {key for key, _ in thread.order}:
                print()
                print(render_thread(thread, by_key))
    return 0
