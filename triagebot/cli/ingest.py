"""`triage ingest SOURCE...` — files, list URLs, message URLs or ids, into the store.

SOURCE is read as, in order: an existing path (mbox, mbox.gz, maildir, a folder of messages,
one message); a lists.openwall.net URL (a list, or one message page); a public-inbox message
URL or a bare Message-ID (its whole thread); a public-inbox list URL (its new.atom). With no
SOURCE, every source in rules/sources.toml is polled once. Exit status 1 if any source failed
(it is named on one line, whatever went wrong, and the next SOURCE is still read). A message the
parser cannot read is quarantined, not lost: it does not make the exit status non-zero; a line
on stderr says how many were, and `triage list --failed` lists them.
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
from datetime import UTC, datetime

from triagebot.cli.common import add_db_argument, add_rules_argument, database_location, open_store
from triagebot.errors import TriageError
from triagebot.ingest.batch import default_jobs
from triagebot.ingest.runner import IngestResult, describe_error, ingest_once
from triagebot.ingest.sources import build_source
from triagebot.rules.settings import settings_for
from triagebot.store.protocol import StoreError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="*", metavar="SOURCE",
                        help="file, maildir, list URL, message URL or Message-ID (none: rules/sources.toml)")
    add_db_argument(parser)
    add_rules_argument(parser)
    parser.add_argument("--list", dest="list_name", help="list name to record for file sources")
    parser.add_argument("--jobs", type=int, default=default_jobs(), metavar="N", help="parser processes")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--since", type=_since_date, metavar="DATE",
                        help="a list's first poll reads back to DATE (YYYY-MM-DD; default: 14 days)")


def _since_date(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from None


class _Progress:
    """A one-line progress display on a terminal: messages handled, of how many."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label = label
        self.enabled = enabled
        self.shown = False

    def __call__(self, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        of = f" of {total}" if total else ""
        percent = f" ({100 * done // total}%)" if total else ""
        sys.stderr.write(f"\r{self.label}: {done}{of} messages{percent}")
        sys.stderr.flush()
        self.shown = True

    def end(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def run(args: argparse.Namespace) -> int:
    settings = settings_for(args.rules)
    references = list(args.sources)
    if not references:
        references = [source.url for source in settings.sources]
        if not references:
            raise TriageError(f"no SOURCE given and no sources in {settings.rules_dir / 'sources.toml'}")
    database = database_location(args)
    failures = 0
    quarantined = 0
    with open_store(args) as store:
        for reference in references:
            try:
                source = build_source(reference, settings.http, list_name=args.list_name, since=args.since,
                                      bounds=settings.bounds)
                progress = _Progress(reference, enabled=not args.quiet and sys.stderr.isatty())
                try:
                    result = ingest_once(source, store, jobs=args.jobs, progress=progress, bounds=settings.bounds)
                finally:
                    progress.end()
            except (StoreError, sqlite3.Error):
                raise  # the database failed, not this source: the next one would fail the same way
            except TriageError as error:
                print(f"triage ingest: {error}", file=sys.stderr)
                failures += 1
                continue
            except Exception as error:  # noqa: BLE001 - a bug met with one source: name it, go on
                print(f"triage ingest: {reference}: {describe_error(error)}", file=sys.stderr)
                failures += 1
                continue
            _report(reference, result)
            quarantined += len(result.quarantined)
    print(f"store: {database}")
    if quarantined:
        print(f"{quarantined} message{'s' if quarantined > 1 else ''} quarantined: see triage list --failed",
              file=sys.stderr)
    return 1 if failures else 0


def _report(reference: str, result: IngestResult) -> None:
    for event in result.events:
        print(f"triage ingest: {reference}: {event}", file=sys.stderr)
    held = f", {len(result.quarantined)} quarantined" if result.quarantined else ""
    print(f"{reference}: {len(result.new_ids)} new of {result.seen} messages{held}")
