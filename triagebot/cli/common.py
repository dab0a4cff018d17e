"""What the subcommands share: the --db, --rules and --json options (declared here once) and the
one way a command opens the store."""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triagebot.store.sqlite import SqliteStore

# The store's modules (some 30 ms of imports) load only when a command
# opens the database: `triage parse` and `triage decide` never do, and start without them.

DB_HELP = "database file (default: TRIAGE_DB, then ~/.local/share/triagebot/triage.db)"
RULES_HELP = "rules directory (default: TRIAGE_RULES, then the packaged rules/)"


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help=DB_HELP)


def add_rules_argument(parser: argparse.ArgumentParser, help: str = RULES_HELP, **options) -> None:
    """--rules; a command whose --rules means something else (decide: a floors file) says so."""
    parser.add_argument("--rules", help=help, **options)


def add_json_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """--json; each command says what it prints as JSON."""
    parser.add_argument("--json", action="store_true", help=help)


def database_path(args: argparse.Namespace) -> Path:
    """The database the command's --db names (else TRIAGE_DB, else the XDG default)."""
    from triagebot.store.sqlite import resolve_db_path

    return resolve_db_path(args.db)


def check_database_place(database: Path) -> None:
    """StoreError naming the database and why it cannot be there: a directory given as the file,
    a folder that is a file, or a folder that cannot be made (read-only filesystem, no permission)."""
    from triagebot.store.protocol import StoreError
    from triagebot.store.sqlite import ensure_private_dir

    try:
        if database.is_dir():
            raise StoreError(f"database {database}: is a directory; give a file path, such as "
                             f"{database / 'triage.db'}")
        folder = next((parent for parent in database.parents if parent.exists()), None)
        if folder is not None and not folder.is_dir():
            raise StoreError(f"database {database}: {folder} is a file, not a folder")
    except OSError as error:  # a folder on the way that may not be looked into, a name too long
        raise StoreError(f"database {database}: {error.strerror or error}") from None
    try:
        ensure_private_dir(database.parent)
    except OSError as error:
        raise StoreError(f"database {database}: cannot make its folder {error.filename or database.parent}: "
                         f"{error.strerror or error}") from None


@contextmanager
def open_store(args: argparse.Namespace) -> Iterator[SqliteStore]:
    """The store at the command's database, its directory created private (0700) if missing."""
    from triagebot.store.sqlite import SqliteStore

    database = database_path(args)
    check_database_place(database)
    with SqliteStore(database) as store:
        yield store
