"""What the subcommands share: the --db, --rules and --json options (declared here once) and the
one way a command opens the store."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triagebot.kernels.config import KernelConfig
    from triagebot.records.report import Report
    from triagebot.rules.hosts import Host
    from triagebot.rules.settings import Settings
    from triagebot.store.location import StoreLocation
    from triagebot.store.protocol import Store
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
def open_store(args: argparse.Namespace) -> Iterator[SqlStore]:
    """The store at the command's database (a SQLite file, created 0600 in a 0700 directory if
    missing, or a PostgreSQL database), its schema migrated; a SQLite path that cannot hold a
    database is refused in one line first (check_database_place)."""
    location = database_location(args)
    if location.url is None:
        check_database_place(location.local_path)
    with location.open() as store:
        yield store


def report_kernels(command: str, host: Host, report: Report, store: Store,
                   settings: Settings) -> tuple[KernelConfig | None, tuple[tuple[str, str], ...]]:
    """For a host whose switcher builds the commits: say so on stderr and fetch the report's
    kernel config and options (`triage rerun` and `triage bisect` alike); (None, ()) otherwise."""
    if host.switcher is None:
        return None, ()
    # here, not at the top: every command imports this module, only these two build kernels
    from triagebot.reproduce.hosts import switcher_words
    from triagebot.reproduce.report_config import report_kernel_config_over_http

    print(f"  kernels: built from kernel tree {host.switcher.kernel_tree.name} and booted "
          f"{switcher_words(host)}", file=sys.stderr)
    return report_kernel_config_over_http(report, store, settings.http,
                                          announce=lambda line: print(f"triage {command}: {line}", file=sys.stderr))
