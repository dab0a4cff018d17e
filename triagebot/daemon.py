"""The scheduled loop: poll each source on its interval, then triage what arrived.

`triage daemon` (or `--once` for one pass) polls the sources of rules/sources.toml when each
is due, stores what they give, and for every new report (LKP or human) makes its plan and,
when a lab host can switch kernels, reruns it and stores the verdict. Every step works from
stored state: a report with a stored run is done, so a restart resumes where it stopped.
Notices go to the terminal (the Slack notifier follows its issue). SIGTERM and SIGINT stop the
loop after the step in progress.
"""
from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from triagebot.config import load_settings, rules_dir
from triagebot.errors import TriageError
from triagebot.ingest.command import build_source
from triagebot.ingest.runner import ingest_once
from triagebot.records import report_from_json
from triagebot.reproduce.hosts import choose_host, load_hosts
from triagebot.reproduce.plan import HostShape, Plan, plan_report
from triagebot.reproduce.templates import load_templates
from triagebot.store.sqlite import SqliteStore, resolve_db_path

REPORT_KINDS = ("lkp-regression", "human-report")  # what the daemon reruns: claimed slowdowns


@dataclass
class DaemonState:
    """When each source was last polled (monotonic seconds) and whether a stop was asked for."""

    last_poll: dict[str, float] = field(default_factory=dict)
    stop: bool = False


def _notice(stream, text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


def triage_report(store: SqliteStore, message_id: str, rules, stream, rerun_report: Callable[[str], int]) -> None:
    """Plan one new report and, when a host can switch kernels, rerun it (the verdict is stored)."""
    record = store.get_record(message_id)
    if record is None or record.get("kind") not in REPORT_KINDS or store.latest_run(message_id) is not None:
        return
    report = report_from_json(record)
    _notice(stream, f"new report: {report.subject}  <{message_id}>")
    hosts = load_hosts(rules)
    match = choose_host(hosts, report.test_machine)
    if match is None:
        _notice(stream, "  no lab host is free: queued for the next pass")
        return
    plan = plan_report(report, load_templates(rules), host=HostShape(threads=match.host.threads,
                                                                       memory_gb=match.host.memory_gb))
    if not isinstance(plan, Plan):
        _notice(stream, f"  not planned: {plan.reason}")
        return
    _notice(stream, f"  plan: {' '.join(plan.argv)} -> {plan.output_metric}")
    if not match.host.can_switch_kernel:
        _notice(stream, f"  not rerun: host {match.host.name} cannot switch kernels (describe a lab in hosts.toml)")
        return
    rerun_report(message_id)


def run_pass(settings, store: SqliteStore, state: DaemonState, stream, *, now: Callable[[], float] = time.monotonic,
             rerun_report: Callable[[str], int] | None = None, jobs: int | None = None) -> list[str]:
    """Poll the sources that are due and triage what they brought; returns the new message ids."""
    new_ids: list[str] = []
    for source_settings in settings.sources:
        if state.stop:
            break
        due = state.last_poll.get(source_settings.url, -1e18) + source_settings.poll_minutes * 60
        if now() < due:
            continue
        state.last_poll[source_settings.url] = now()
        try:
            result = ingest_once(build_source(source_settings.url, settings.http), store, jobs=jobs)
        except TriageError as error:
            _notice(stream, f"poll {source_settings.url}: {error}")
            continue
        for event in result.events:
            _notice(stream, f"poll {source_settings.url}: {event}")
        new_ids.extend(result.new_ids)
    for message_id in new_ids:
        if state.stop:
            break
        triage_report(store, message_id, settings.rules_dir, stream, rerun_report or (lambda _: 0))
    return new_ids


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="database file (default: TRIAGE_DB, then ~/.local/share/triagebot/triage.db)")
    parser.add_argument("--rules", help="rules directory (default: TRIAGE_RULES, then the packaged rules/)")
    parser.add_argument("--once", action="store_true", help="one pass over every source, then exit")
    parser.add_argument("--tick", type=float, default=30.0, help="seconds between checks for due sources")


def run(args: argparse.Namespace) -> int:
    settings = load_settings(rules_dir(args.rules))
    if not settings.sources:
        raise TriageError(f"no sources in {settings.rules_dir / 'sources.toml'}: nothing to watch")
    state = DaemonState()

    def stop(signum, _frame) -> None:
        state.stop = True
        _notice(sys.stderr, f"triage daemon: {signal.Signals(signum).name}: stopping after the current step")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    database = resolve_db_path(args.db)
    database.parent.mkdir(parents=True, exist_ok=True)

    def rerun_report(message_id: str) -> int:
        from triagebot.cli import main  # the same path a person takes: `triage rerun <id>`

        return main(["rerun", message_id, "--db", str(database), "--rules", str(settings.rules_dir)])

    with SqliteStore(database) as store:
        while not state.stop:
            run_pass(settings, store, state, sys.stdout, rerun_report=rerun_report)
            if args.once:
                break
            deadline = time.monotonic() + args.tick
            while not state.stop and time.monotonic() < deadline:
                time.sleep(min(1.0, args.tick))
    return 0
