"""`triage db` — the store itself: `db copy FROM TO` moves a whole store between backends (SQLite
file <-> PostgreSQL) and checks every table's count; `db migrate` brings a store to this
triagebot's schema and says which version it is at (on PostgreSQL it also applies the lab job
queue's schema, procrastinate's, when absent).

FROM and TO take what --db takes (a file path, sqlite:///PATH, postgresql://…). The copy prints
one line per table (rows in the source, rows in the target) and exits 1 when any count differs;
a target that holds anything is refused unless --replace (which empties it first, in the same
transaction as the copy).
"""
from __future__ import annotations

import argparse
import sys

from triagebot.cli.common import add_db_argument, database_location


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    copy = actions.add_parser("copy", help="copy a whole store from FROM to TO and check the counts")
    copy.add_argument("source", metavar="FROM", help="the store to copy: a file, sqlite:///PATH or postgresql://…")
    copy.add_argument("target", metavar="TO", help="where to copy it: a file, sqlite:///PATH or postgresql://…")
    copy.add_argument("--replace", action="store_true",
                      help="empty a target that holds a store already (otherwise it is refused)")
    migrate = actions.add_parser("migrate", help="bring the store to this triagebot's schema; print its version")
    add_db_argument(migrate)


def run(args: argparse.Namespace) -> int:
    return _copy(args) if args.action == "copy" else _migrate(args)


def _migrate(args: argparse.Namespace) -> int:
    from triagebot.store.migrations import LATEST_VERSION

    location = database_location(args)
    with location.open() as store:
        if location.url is not None:  # the lab's job queue lives beside the store (daemon/dispatch/jobqueue.py)
            from triagebot.daemon.dispatch.jobqueue import ensure_job_schema

            print(f"{location}: job queue (procrastinate) {'created' if ensure_job_schema(store) else 'present'}")
    print(f"{location}: schema version {LATEST_VERSION} ({location.backend})")
    return 0


def _copy(args: argparse.Namespace) -> int:
    from triagebot.store.copy import copy_store
    from triagebot.store.location import parse_location

    source_location = parse_location(args.source, "FROM")
    target_location = parse_location(args.target, "TO")
    if not source_location.exists():
        print(f"triage db copy: {source_location}: no such store", file=sys.stderr)
        return 1
    with source_location.open() as source, target_location.open() as target:
        counts = copy_store(source, target, replace=args.replace)
    width = max(len(count.table) for count in counts)
    print(f"{'table':<{width}}  {'from':>9}  {'to':>9}")
    for count in counts:
        print(f"{count.table:<{width}}  {count.source:>9}  {count.target:>9}  {'ok' if count.ok else 'MISMATCH'}")
    wrong = [count.table for count in counts if not count.ok]
    if wrong:
        print(f"triage db copy: {target_location}: counts differ in {', '.join(wrong)}", file=sys.stderr)
        return 1
    print(f"copied {source_location} -> {target_location}: {sum(count.source for count in counts)} rows, "
          f"every count matches")
    return 0
