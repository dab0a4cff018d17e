"""`triage daemon`: its options, read and checked, then the loop (triagebot/daemon/loop.py) run."""
from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from triagebot import logs
from triagebot.cli.common import add_db_argument, add_rules_argument, database_location, database_path, open_store
from triagebot.daemon.loop import DEFAULT_HEALTH_PORT, DaemonOptions, serve
from triagebot.errors import TriageError
from triagebot.notify import outbox
from triagebot.rules.settings import settings_for
from triagebot.store.protocol import Store
from triagebot.untrusted.whole_numbers import BadNumber, whole_number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)
    add_rules_argument(parser)
    parser.add_argument("--once", action="store_true", help="one pass over every source, then exit")
    parser.add_argument("--tick", type=float, default=30.0, help="seconds between checks for due sources")
    parser.add_argument("--admit-days", type=float, default=14.0, metavar="DAYS",
                        help="take on reports dated at most DAYS ago (default 14): a backfill is not triaged")
    parser.add_argument("--stale-days", type=float, default=30.0, metavar="DAYS",
                        help="a decided report with no mail for DAYS is moved to stale (default 30)")
    parser.add_argument("--budget", type=int, default=20, metavar="N", help="at most N runs a side (default 20)")
    parser.add_argument("--health-port", metavar="PORT",
                        help=f"port for /healthz and /metrics (default {DEFAULT_HEALTH_PORT}, none with --once; "
                             "0: any free port, off: none)")
    parser.add_argument("--health-address", default="127.0.0.1", metavar="ADDRESS",
                        help="address /healthz and /metrics listen on (default 127.0.0.1; 0.0.0.0 in a container)")
    parser.add_argument("--notify-retry-seconds", type=float, default=outbox.DEFAULT_RETRY_SECONDS,
                        metavar="S", help="first wait after Slack fails (doubled per try, at most 600)")
    parser.add_argument("--log-format", choices=logs.LOG_FORMATS, default="auto",
                        help="text: a line a person reads; json: JSON lines (default auto: text on a terminal)")


def health_port(value: str | None, once: bool) -> int | None:
    """The port --health-port names: the default unless --once, None for `off`."""
    if value is None:
        return None if once else DEFAULT_HEALTH_PORT  # one pass (from cron, say) serves no health check
    if value == "off":
        return None
    try:
        return whole_number(value, "--health-port", high=65535)
    except BadNumber:
        raise TriageError(f"--health-port {value!r}: a port number from 0 to 65535, or off") from None


def run(args: argparse.Namespace) -> int:
    logs.configure(log_format=args.log_format)
    settings = settings_for(args.rules)  # every rules file, read and checked once, here
    if not settings.sources:
        raise TriageError(f"no sources in {settings.rules_dir / 'sources.toml'}: nothing to watch")
    options = DaemonOptions(once=args.once, tick=args.tick, admit_days=args.admit_days, budget=args.budget,
                            health_port=health_port(args.health_port, args.once),
                            health_address=args.health_address, notify_retry_seconds=args.notify_retry_seconds,
                            stale_days=args.stale_days)
    location = database_location(args)
    options = dataclasses.replace(options, store=location.url or str(location.path))
    make_dispatcher = None
    if location.url is not None:  # the job queue: `triage worker` runs the lab jobs
        from triagebot.daemon.dispatch.jobqueue import JobQueueDispatcher

        url = location.url
        make_dispatcher = lambda: JobQueueDispatcher(url)  # noqa: E731
    return serve(settings, database_path(args), lambda: _writable_store(args), options, make_dispatcher)


@contextmanager
def _writable_store(args: argparse.Namespace) -> Iterator[Store]:
    """The store, checked writable at the start: the daemon on a read-only database (which
    `list` and `show` may still read) stops with that one line instead of failing every step."""
    with open_store(args) as store:
        with store.transaction():
            pass
        yield store
