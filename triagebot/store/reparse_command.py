"""Store stage: `triage reparse` — records rebuilt from the kept raw bytes after a parser upgrade.

Only records written by another parser version are rebuilt (`--all`: every one); a record
whose new form is the same is left untouched. Raw messages are never changed.
"""
from __future__ import annotations

import argparse
import sys

from triagebot.errors import MessageError
from triagebot.ingest.runner import PARSER_VERSION
from triagebot.parse.report import parse_message
from triagebot.records import Source, report_to_json
from triagebot.store.sqlite import SqliteStore, resolve_db_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="database file (default: TRIAGE_DB, then ~/.local/share/triagebot/triage.db)")
    parser.add_argument("--all", action="store_true", help="rebuild every record, not only older ones")


def run(args: argparse.Namespace) -> int:
    database = resolve_db_path(args.db)
    if not database.exists():
        print(f"triage reparse: {database}: no such database", file=sys.stderr)
        return 1
    changed = checked = 0
    with SqliteStore(database) as store:
        for message in store.iter_raw():
            if not args.all and store.get_record_version(message.message_id) == PARSER_VERSION:
                continue
            checked += 1
            try:
                report = parse_message(message.raw, Source(message.source_name, message.source_url))
            except MessageError as error:
                print(f"triage reparse: {message.message_id}: {error}", file=sys.stderr)
                continue
            changed += store.put_record(message.message_id, report_to_json(report), PARSER_VERSION)
    print(f"reparsed {checked} records, {changed} changed ({PARSER_VERSION})")
    return 0
