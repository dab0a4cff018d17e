"""`triage bisect MESSAGE-ID [--good REV --bad REV]` — find the first bad commit on the lab.

The report is planned as for a rerun, on the closest host that can switch kernels and list
commits (or `--host`). Good and bad default to the report's base (else the culprit's parent) and
its culprit; a report that names only versions takes `--good` and `--bad`. The host's
`list_commits` hook gives the commits between them, its `switch_kernel` hook builds and boots each
one, and every step is an adaptive base/suspect run decided by the verdict's statistics
(triagebot.reproduce.bisect). The bisection is stored after every attempt; its result is posted
to the report's Slack thread through the outbox (one message per bisection) when the daemon has
taken the report on. Exit 0 when the first bad commit is found, 1 otherwise.

Before the first run it prints its estimate (commits, steps, runs a step, the host's switch and
sample times from its stored runs, the total) and refuses one likely over --max-hours or
--max-runs; at a terminal it asks instead. On a terminal it prints one line a sample while it
runs: `bisect: step 3 of ~7, sample 5, 2 min elapsed, about 9 min left`.
"""
from __future__ import annotations

import argparse
import json
import sys

from triagebot.bisect.estimate import Estimate
from triagebot.bisect.lab import NO_BISECT_HOST, BisectRefused, bisect_on_lab, plan_bisect
from triagebot.bisect.search import FOUND, BisectBudget, bisect_log, bisect_summary
from triagebot.cli.common import (
    add_db_argument,
    add_json_argument,
    add_rules_argument,
    database_path,
    open_store,
    report_kernels,
)
from triagebot.errors import TriageError
from triagebot.lab.runner import can_bisect
from triagebot.records.threads import normalize_message_id
from triagebot.reproduce.hosts import choose_host, score_host
from triagebot.reproduce.materials import with_materials_over_http
from triagebot.rules.hosts import Host
from triagebot.rules.settings import settings_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="MESSAGE-ID")
    add_db_argument(parser)
    add_rules_argument(parser, "rules directory with hosts.toml and reproducers/")
    parser.add_argument("--host", help="host name from hosts.toml (default: the closest one that can bisect)")
    parser.add_argument("--good", metavar="REV", help="a good commit or tag (default: the report's base)")
    parser.add_argument("--bad", metavar="REV", help="a bad commit or tag (default: the report's culprit)")
    defaults = BisectBudget()
    parser.add_argument("--max-runs", type=int, default=defaults.max_runs, metavar="N",
                        help=f"at most N runs in all, both sides of every step (default {defaults.max_runs})")
    parser.add_argument("--max-hours", type=float, default=defaults.max_seconds / 3600, metavar="H",
                        help=f"wall time, checked before each attempt (default {defaults.max_seconds / 3600:g})")
    parser.add_argument("--attempts", type=int, default=defaults.attempts, metavar="N",
                        help=f"an inconclusive step is taken again with twice the runs, N times in all "
                             f"(default {defaults.attempts})")
    parser.add_argument("--rounds", default=",".join(map(str, defaults.rounds)), metavar="N,N,...",
                        help="runs a side added at each look of a step's first attempt "
                             f"(default {','.join(map(str, defaults.rounds))})")
    add_json_argument(parser, "print the stored bisection as JSON")
    parser.add_argument("--no-fetch", action="store_true", help="do not fetch the report's LKP materials")


def _budget(args: argparse.Namespace) -> BisectBudget:
    try:
        rounds = tuple(int(part) for part in args.rounds.split(","))
        return BisectBudget(max_runs=args.max_runs, max_seconds=args.max_hours * 3600, attempts=args.attempts,
                            rounds=rounds)
    except ValueError as error:
        raise TriageError(f"--max-runs/--max-hours/--attempts/--rounds: {error}") from None


def _host(hosts: tuple[Host, ...], args: argparse.Namespace, report):
    able = [host for host in hosts if can_bisect(host)]
    if args.host:
        chosen = [host for host in hosts if host.name == args.host]
        if not chosen:
            raise TriageError(f"no host {args.host!r} in hosts.toml")
        if chosen[0] not in able:
            raise TriageError(f"host {args.host} cannot bisect: it needs a switcher, or switch_kernel and "
                              "list_commits hooks")
        return score_host(chosen[0], report.test_machine, parameters=report.parameters)
    match = choose_host(able, report.test_machine, parameters=report.parameters)
    if match is None:
        raise TriageError(NO_BISECT_HOST)
    return match


def ask(_estimate: Estimate, why: str) -> bool:
    """At a terminal: whether the person wants a bisection over its budget to start all the same."""
    # asked on stderr, as every other line of its talk: stdout holds only the result (--json)
    print(f"triage bisect: {why}.", file=sys.stderr)
    print("Start it anyway? [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def run(args: argparse.Namespace) -> int:
    settings = settings_for(args.rules)
    message_id = normalize_message_id(args.message_id)
    budget = _budget(args)
    with open_store(args) as store:
        report = store.get_record(message_id)
        if report is None:
            print(f"triage bisect: {message_id}: no such message in {database_path(args)}", file=sys.stderr)
            return 1
        match = _host(settings.need_hosts(), args, report)
        host = match.host
        if not args.no_fetch:
            report, notes = with_materials_over_http(report, store, settings.http)
            for note in notes:
                print(f"triage bisect: {note}", file=sys.stderr)
        setup = plan_bisect(report, host, settings.need_templates(), settings.floors, args.good, args.bad)
        if isinstance(setup, str):
            print(f"triage bisect: {message_id}: {setup}", file=sys.stderr)
            return 1
        plan, good, bad = setup.plan, setup.good, setup.bad
        print(f"bisect of {message_id} on {host.name}: {good}..{bad}", file=sys.stderr)
        print(f"  plan: {' '.join(plan.argv)}  -> {plan.output_metric}, {plan.better} is better", file=sys.stderr)
        kernel_config, report_options = report_kernels("bisect", host, report, store, settings)
        terminal = sys.stderr.isatty()
        try:
            stored, bisect_id, posted = bisect_on_lab(
                store, database_path(args), message_id, host, plan, setup.floor_percent, good, bad, budget,
                announce=lambda line: print(f"  {line}", file=sys.stderr),
                confirm=ask if terminal and sys.stdin.isatty() else None,
                announce_sample=(lambda line: print(f"  {line}", file=sys.stderr, flush=True)) if terminal else None,
                kernel_config=kernel_config, report_options=report_options)
        except BisectRefused as refused:
            print(f"triage bisect: {message_id}: {refused}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(stored | {"bisect_id": bisect_id}, ensure_ascii=False))
    else:
        print(bisect_log(stored))
        print(bisect_summary(stored))
    if not posted:
        print(f"triage bisect: {message_id}: not posted: the daemon has not taken this report on (no Slack thread)",
              file=sys.stderr)
    return 0 if stored["status"] == FOUND else 1
