"""What the subcommands share: the --db, --rules and --json options (declared here once) and the
one way a command opens the store."""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triagebot.store.location import StoreLocation
    from triagebot.store.sql import SqlStore

# The store's modules (some 30 ms of imports) load only when a command
# opens the database: `triage parse` and `triage decide` never do, and start without them.

DB_HELP = ("database: a file, sqlite:///PATH or postgresql://… (default: TRIAGE_DB, then "
           "~/.local/share/triagebot/triage.db)")
RULES_HELP = "rules directory (default: TRIAGE_RULES, then the packaged rules/)"


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help=DB_HELP)


def add_rules_argument(parser: argparse.ArgumentParser, help: str = RULES_HELP, **options) -> None:
    """--rules; a command whose --rules means something else (decide: a floors file) says so."""
    parser.add_argument("--rules", help=help, **options)


def add_json_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """--json; each command says what it prints as JSON."""
    parser.add_argument("--json", action="store_true", help=help)


def database_location(args: argparse.Namespace) -> StoreLocation:
    """The store the command's --db names (else TRIAGE_DB, else the XDG default file); a URL of
    an unknown scheme is refused here (LocationError, one line)."""
    from triagebot.store.location import resolve_location

    return resolve_location(args.db)


def database_path(args: argparse.Namespace) -> Path:
    """Where files beside the command's database go (host locks, plots): the SQLite file itself,
    or a local name standing for a PostgreSQL database (StoreLocation.local_path), whose
    directory is made here (0700) since no database file makes it."""
    location = database_location(args)
    if location.url is not None:
        from triagebot.store.sqlite import ensure_private_dir

        ensure_private_dir(location.local_path.parent)
    return location.local_path


@contextmanager
def open_store(args: argparse.Namespace) -> Iterator[SqlStore]:
    """The store at the command's database (a SQLite file, created 0600 in a 0700 directory if
    missing, or a PostgreSQL database), its schema migrated."""
    with database_location(args).open() as store:
        yield store
