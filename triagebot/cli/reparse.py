"""`triage reparse` — records rebuilt from the kept raw bytes after a parser upgrade.

Only records written by another parser version are rebuilt (`--all`: every one); a record
whose new form is the same is left untouched. Raw messages are never changed. A message that
fails to parse now keeps the record it has (the error is printed).

Quarantined messages (the parser could not read them) are tried again the same way: those
quarantined by another parser version (`--all`: every one). One that parses now is stored as a
normal message with its record and leaves the quarantine, in one transaction; one that still
fails stays, with the new error and parser version. A list entry a poll skipped (the server
would not give its message) is not a message: the polls of its source retry it, not this.
"""
from __future__ import annotations

import argparse
import sys

from triagebot.cli.common import add_db_argument, database_location, open_store
from triagebot.ingest.protocol import SKIPPED_ENTRY_SOURCE, FetchedMessage
from triagebot.ingest.runner import (
    PARSER_VERSION,
    IngestResult,
    describe_error,
    parse_alone,
    store_parsed,
)
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.store.protocol import Store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)
    parser.add_argument("--all", action="store_true",
                        help="rebuild every record and retry every quarantined message, not only older ones")


def run(args: argparse.Namespace) -> int:
    database = database_location(args)
    if not database.exists():
        print(f"triage reparse: {database}: no such database", file=sys.stderr)
        return 1
    changed = checked = 0
    with open_store(args) as store:
        for message in store.iter_raw():
            if not args.all and store.get_record_version(message.message_id) == PARSER_VERSION:
                continue
            checked += 1
            try:
                report = parse_message(message.raw, Source(message.source_name, message.source_url))
            except Exception as error:  # noqa: BLE001 - one message's failure: it keeps its record
                print(f"triage reparse: {message.message_id}: {describe_error(error)}", file=sys.stderr)
                continue
            changed += store.put_record(message.message_id, report, PARSER_VERSION)
        print(f"reparsed {checked} records, {changed} changed ({PARSER_VERSION})")
        retried, released, failing = retry_quarantined(store, every=args.all)
    if retried:
        print(f"quarantine: retried {retried}, {released} now parsed and stored, {failing} still failing"
              f"{' (see triage list --failed)' if failing else ''}")
    return 0


def retry_quarantined(store: Store, *, every: bool = False) -> tuple[int, int, int]:
    """Parse the quarantined messages again; (retried, stored now, still failing)."""
    retried = released = failing = 0
    for row in store.iter_quarantined():
        if row.source_name == SKIPPED_ENTRY_SOURCE:
            continue  # a list entry the server would not give: its source's polls retry it
        if not every and row.parser_version == PARSER_VERSION:
            continue
        retried += 1
        fetched = FetchedMessage(row.raw or b"", row.source_name, row.source_url, row.list_name)
        record, error = parse_alone(fetched)
        if record is not None:
            with store.transaction():
                failures = store_parsed(store, [(fetched, f"<{row.key}>", record)], row.received_at, IngestResult())
                if not failures:
                    store.release_quarantined(row.key)
                    released += 1
                    continue
            error = failures[0][2]
        store.still_quarantined(row.key, error or "the parser gave no record", PARSER_VERSION)
        failing += 1
        print(f"triage reparse: <{row.key}>: still quarantined: {error}", file=sys.stderr)
    return retried, released, failing
