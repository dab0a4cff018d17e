"""`triage worker`: run the daemon's lab jobs for some hosts, on a PostgreSQL store (daemon/dispatch/worker.py)."""
from __future__ import annotations

import argparse

from triagebot import logs
from triagebot.cli.common import add_db_argument, add_rules_argument, database_location, database_path
from triagebot.errors import TriageError
from triagebot.rules.settings import settings_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)
    add_rules_argument(parser)
    parser.add_argument("--host", action="append", default=[], metavar="NAME", dest="hosts",
                        help="run the jobs of this lab host (repeat for more; default: every host in hosts.toml "
                             "that can switch kernels)")
    parser.add_argument("--budget", type=int, default=20, metavar="N", help="at most N runs a side (default 20)")
    parser.add_argument("--stalled-after", type=float, default=30.0, metavar="S",
                        help="retry a job whose worker sent no heartbeat for S seconds (default 30)")
    parser.add_argument("--log-format", choices=logs.LOG_FORMATS, default="auto",
                        help="text: a line a person reads; json: JSON lines (default auto: text on a terminal)")


def chosen_hosts(settings, names: list[str]) -> list[str]:
    """The hosts named (each checked against hosts.toml), else every host that can switch kernels."""
    hosts = settings.need_hosts()
    known = {host.name: host for host in hosts}
    for name in names:
        if name not in known:
            raise TriageError(f"--host {name!r}: no such host in {settings.rules_dir / 'hosts.toml'} "
                              f"(it lists {', '.join(known) or 'none'})")
        if not known[name].can_switch_kernel:
            raise TriageError(f"--host {name!r}: this host cannot switch kernels, so the daemon runs nothing on it")
    chosen = list(dict.fromkeys(names)) or [host.name for host in hosts if host.can_switch_kernel]
    if not chosen:
        raise TriageError(f"no host in {settings.rules_dir / 'hosts.toml'} can switch kernels: no job to run")
    return chosen


def run(args: argparse.Namespace) -> int:
    logs.configure(log_format=args.log_format)
    location = database_location(args)
    if location.url is None:
        raise TriageError(f"{location} is a SQLite store; workers need a PostgreSQL one "
                          "(--db postgresql://…): on SQLite the daemon runs its lab jobs itself")
    if args.budget < 1 or args.stalled_after <= 0:
        raise TriageError("--budget must be at least 1 and --stalled-after more than 0")
    settings = settings_for(args.rules)
    hosts = chosen_hosts(settings, args.hosts)
    from triagebot.daemon.dispatch.worker import WorkerOptions, serve_worker  # procrastinate only for a worker

    options = WorkerOptions(budget=args.budget, stalled_after_s=args.stalled_after,
                            heartbeat_s=min(5.0, max(0.2, args.stalled_after / 5)))
    return serve_worker(location.url, settings, database_path(args), hosts, options)
