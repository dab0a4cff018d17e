"""`triage web`: the read-only pages (triagebot/web/) served alone by uvicorn, against a store.

The team's view by default (host names, channels, the daemon's notes, the lab page); `--public`
serves only what may leave the team. Binds to 127.0.0.1 unless told otherwise. The store is a
SQLite file or a PostgreSQL database (`--db postgresql://…`, as every command takes it): one
connection a request, each opened and closed by the request (a server that is away answers that
request 503, the next one tries again).
"""
from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from triagebot import logs
from triagebot.cli.common import add_db_argument, add_rules_argument, database_location, database_path
from triagebot.errors import TriageError
from triagebot.rules.settings import settings_for

DEFAULT_PORT = 9465  # beside the daemon's 9464, which serves the same pages with its health check


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)
    add_rules_argument(parser)
    parser.add_argument("--address", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", default=str(DEFAULT_PORT),
                        help=f"port to listen on (default {DEFAULT_PORT}; 0: any free port, printed)")
    parser.add_argument("--public", action="store_true",
                        help="serve only what may leave the team: reports routing.toml allows, their plan, numbers "
                             "and plot; no host names, channels, notes or lab page")


def run(args: argparse.Namespace) -> int:
    from triagebot.store.protocol import Store
    from triagebot.untrusted.whole_numbers import BadNumber, whole_number
    from triagebot.web.app import build_app
    from triagebot.web.bounds import raise_fd_soft_limit
    from triagebot.web.server import WebServer, cannot_listen
    from triagebot.web.views import Site

    try:
        port = whole_number(args.port, "--port", high=65535)
    except BadNumber:
        raise TriageError(f"--port {args.port!r}: a port number from 0 to 65535") from None
    logs.configure(log_format="auto")  # uvicorn's warnings as the daemon's lines, passwords redacted
    location = database_location(args)
    # a file, or a PostgreSQL database holding triagebot's schema (connecting says so when it cannot)
    there = location.path.is_file() if location.path is not None else location.exists()
    if not there:
        where = "no database there" if location.url is None else "no triagebot store in this database"
        raise TriageError(f"{location}: {where} (start `triage daemon` or `triage ingest`, or give --db)")
    database = database_path(args)
    settings = settings_for(args.rules)

    @contextmanager
    def open_store() -> Iterator[Store]:
        with location.open() as store:  # one connection a request: connections stay in their thread
            yield store

    site = Site(open_store=open_store, settings=settings, database=database, public=args.public)
    raise_fd_soft_limit()  # before the connection cap is sized under it (web/bounds.py)
    try:
        server = WebServer(build_app(site), args.address, port)
    except OSError as error:
        raise TriageError(cannot_listen(error, args.address, args.port)) from None
    audience = "public view: no host names, channels or notes" if args.public else "team view"
    print(f"triage web: serving {server.url}/ ({audience}) from {location}; Ctrl-C stops", file=sys.stderr,
          flush=True)
    # uvicorn stops on SIGINT or SIGTERM, then raises the signal again for the handler it found:
    # after a clean stop that is a clean exit
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(0))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0
