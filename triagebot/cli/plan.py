"""`triage plan MESSAGE-ID` / `triage plan --command '…'` — the plan or the refusal.

Prints the argv the runner would start (never run here), the metric and its better direction,
what was scaled to the host and why, or the refusal's reason. `--json` prints the plan's or the
refusal's JSON object. A report that links LKP materials but carries no job.yaml has the
linked directory's job.yaml fetched (kept in the store) and planned from; `--no-fetch` plans
from the stored report alone. A report is planned for the host the daemon runs it on (or would:
triagebot.lab_queue.daemon_host), named on stderr; `--host` names another hosts.toml host, and
`--threads`/`--memory-gb`/`--scratch-gb` a made-up shape (the default shape for `--command`).
Exit 0 for a plan, 1 for a refusal or an unknown id, 2 for usage errors.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys

from triagebot.cli.common import (
    add_db_argument,
    add_json_argument,
    add_rules_argument,
    database_location,
    database_path,
    open_store,
)
from triagebot.cli.keys import resolve_key
from triagebot.errors import TriageError
from triagebot.records.threads import normalize_message_id
from triagebot.reproduce.plan import HostShape, Plan, PlanResult, plan_command, plan_report
from triagebot.rules.settings import settings_for
from triagebot.store.protocol import UnreadableRecord

_DEFAULT_HOST = HostShape()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", nargs="?", metavar="MESSAGE-ID", help="a stored report, with or without <>")
    parser.add_argument("--command", metavar="COMMAND", help="plan a bare command line instead of a stored report")
    add_db_argument(parser)
    add_rules_argument(parser)
    add_json_argument(parser, "print the plan or the refusal as JSON")
    parser.add_argument("--no-fetch", action="store_true",
                        help="do not fetch the report's LKP materials (job.yaml, reproduce, config): "
                             "plan from the mail")
    parser.add_argument("--host", metavar="NAME",
                        help="plan for this hosts.toml host (its threads, memory, scratch space, scratch "
                             "devices and programs) instead of --threads/--memory-gb/--scratch-gb")
    parser.add_argument("--threads", type=int,
                        help=f"fit the plan to a made-up host of this many threads (default {_DEFAULT_HOST.threads}; "
                             "without these three options a report is planned for the daemon's host)")
    parser.add_argument("--memory-gb", type=int, help=f"its memory in GB (default {_DEFAULT_HOST.memory_gb})")
    parser.add_argument("--scratch-gb", type=int, help=f"its scratch space in GB (default {_DEFAULT_HOST.scratch_gb})")


def run(args: argparse.Namespace) -> int:
    if (args.message_id is None) == (args.command is None):
        print("triage plan: give a MESSAGE-ID or --command, not both", file=sys.stderr)
        return 2
    shaped = [value for value in (args.threads, args.memory_gb, args.scratch_gb) if value is not None]
    if min(shaped, default=1) < 1:
        print("triage plan: --threads, --memory-gb and --scratch-gb must be at least 1", file=sys.stderr)
        return 2
    if shaped and args.host:
        print("triage plan: --host or --threads/--memory-gb/--scratch-gb, not both", file=sys.stderr)
        return 2
    host = HostShape(args.threads or _DEFAULT_HOST.threads, args.memory_gb or _DEFAULT_HOST.memory_gb,
                     args.scratch_gb or _DEFAULT_HOST.scratch_gb)
    try:
        settings = settings_for(args.rules)
        templates = settings.need_templates()
        if args.host:
            host = _host_shape(settings, args.host)
    except TriageError as error:
        print(f"triage plan: {error}", file=sys.stderr)
        return 1
    if args.command is not None:
        result = plan_command(args.command, templates, host=host)
    else:
        report = _stored_report(args)
        if report is None:
            return 1
        if not args.host and not shaped:
            try:
                host = _daemon_host_shape(args, settings, report)
            except TriageError as error:
                print(f"triage plan: {error}", file=sys.stderr)
                return 1
        if not args.no_fetch:
            report = _with_materials(args, report, settings.http)
        result = plan_report(report, templates, host=host)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        print(render_result(result))
    return 0 if isinstance(result, Plan) else 1


def _host_shape(settings, name: str) -> HostShape:
    from triagebot.reproduce.limits import host_shape

    for host in settings.need_hosts():
        if host.name == name:
            return host_shape(host)
    raise TriageError(f"--host {name!r}: no such host in {settings.rules_dir / 'hosts.toml'}")


def _daemon_host_shape(args: argparse.Namespace, settings, report) -> HostShape:
    """The shape of the host the daemon runs the report on (said on stderr, with why)."""
    from datetime import UTC, datetime, timedelta

    from triagebot.lab.queue import daemon_host
    from triagebot.reproduce.limits import host_shape

    with open_store(args) as store:
        host, why = daemon_host(store, database_path(args), settings.need_hosts(),
                                timedelta(minutes=settings.max_wait_minutes), report, datetime.now(UTC))
    if host is None:
        raise TriageError(f"no host to plan for: {why}")
    print(f"triage plan: for host {host.name}, the daemon's: {why}", file=sys.stderr)
    return host_shape(host)


def _stored_report(args: argparse.Namespace):
    database = database_location(args)
    try:
        message_id = normalize_message_id(args.message_id)
    except ValueError:
        print(f"triage plan: {args.message_id!r}: not a Message-ID", file=sys.stderr)
        return None
    if not database.exists():
        print(f"triage plan: {message_id}: no such message ({database} does not exist yet)", file=sys.stderr)
        return None
    with open_store(args) as store:
        try:
            message_id = resolve_key(store, message_id)  # a sha256-… short key or its prefix
            report = store.get_record(message_id)
        except UnreadableRecord as error:
            print(f"triage plan: {message_id}: {error}", file=sys.stderr)
            return None
    if report is None:
        print(f"triage plan: {message_id}: no such message in {database}", file=sys.stderr)
    return report


def _with_materials(args: argparse.Namespace, report, policy):
    """The report with its LKP materials' job.yaml (fetched, or from the store); notes to stderr."""
    from triagebot.reproduce.materials import needs_materials, quick_policy, with_materials_over_http

    if not needs_materials(report):
        return report
    with open_store(args) as store:
        report, notes = with_materials_over_http(
            report, store, quick_policy(policy),
            announce=lambda line: print(f"triage plan: {line}", file=sys.stderr, flush=True))
    for note in notes:
        print(f"triage plan: {note}", file=sys.stderr)
    return report


def render_result(result: PlanResult) -> str:
    """The plan or refusal as a few lines for a terminal."""
    if not isinstance(result, Plan):
        lines = [f"refused: {result.reason}"]
        lines += [f"  missing: {item}" for item in result.missing]
        return "\n".join(lines)
    change = "" if result.reported_change_percent is None else f", reported {result.reported_change_percent:+g}%"
    named = f" ({result.report_metric}{change})" if result.report_metric else ""
    lines = [f"plan: {result.template} from {result.source}"
             + (f" of {result.message_id}" if result.message_id else ""),
             f"  argv:    {shlex.join(result.argv)}"]
    lines += [f"  prepare: {shlex.join(step)}" for step in result.prepare_steps]
    if result.setup_argv:
        lines.append(f"  setup:   {shlex.join(result.setup_argv)}")
    if result.cleanup_argv:
        lines.append(f"  cleanup: {shlex.join(result.cleanup_argv)}")
    lines += [f"  release: {shlex.join(step)} (after each sample, always)" for step in result.release_steps]
    if result.runs_on:
        lines.append(f"  storage: {result.runs_on}")
    lines += [f"  differs: {item}" for item in result.storage_differs]
    lines.append(f"  metric:  {result.metric}, {result.better} is better{named}; parser {result.parser} "
                 f"({result.output_metric})")
    lines.append(f"  timeout: {result.timeout_seconds}s")
    lines += [f"  scaled:  {item}" for item in result.scaled]
    lines += [f"  note:    {item}" for item in result.notes]
    for path, text in result.files:  # written into the scratch dir before each sample
        lines.append(f"  file:    {path}")
        lines += [f"           {line}" for line in text.splitlines()]
    return "\n".join(lines)
