"""`triage show MESSAGE-ID` — one stored report at a glance, with its thread.

The record's summary (commits, headline, testcase and machine, the top metric rows, reproducers,
stance), then the thread it belongs to: who reproduced, who did not, objections, fixes.
`--json` prints the stored record as it is kept (schema 1). An unknown id exits 1.
"""
from __future__ import annotations

import argparse
import json
import sys

from triagebot.cli.common import add_db_argument, add_json_argument, database_path, open_store
from triagebot.cli.keys import KeyRefused, asked_key, resolve_key, short_key
from triagebot.notify.render import short_commit
from triagebot.parse.thread import build_threads, render_thread, reports_by_key
from triagebot.records import report_to_json
from triagebot.summary import render_report
from triagebot.verdict.same_kernel import A_A_ONLY, as_stored, is_same_kernel


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="MESSAGE-ID",
                        help="with or without <>; a message without one: the sha256-… key `triage list` prints")
    add_db_argument(parser)
    add_json_argument(parser, "print the stored record as JSON")
    parser.add_argument("--all", action="store_true", help="every metric row, not the top ones")


_BLOCKS = "▁▂▃▄▅▆▇█"


def sample_plot(values: list[float], low: float, high: float) -> str:
    """One character a sample, its height between the run's lowest and highest value."""
    span = high - low
    return "".join(_BLOCKS[min(7, int((value - low) / span * 8))] if span > 0 else _BLOCKS[3] for value in values)


def render_run(run: dict) -> str:
    """The last rerun: its verdict, and each side's samples as a small plot in run order. A run
    whose host could not switch kernels says so: both sides ran one kernel (an A/A run)."""
    run = as_stored(run)
    base, suspect = short_commit(run["base_commit"]), short_commit(run["suspect_commit"])
    if is_same_kernel(run):
        lines = [f"  rerun:    on {run['host']}, A/A: base and suspect both on its running kernel (it cannot "
                 f"switch kernels; {base} and {suspect} were not booted), {run['status']}"]
    else:
        lines = [f"  rerun:    on {run['host']}, {base} (base) against {suspect} (suspect), {run['status']}"]
    verdict = run.get("verdict")
    if verdict and verdict.get("outcome") == A_A_ONLY:
        lines.append(f"  outcome:  {A_A_ONLY} (no verdict on the commit): {verdict['reason']}")
    elif verdict:
        lines.append(f"  verdict:  {verdict['outcome']}: {verdict['reason']}")
    elif run.get("error"):
        lines.append(f"  error:    {run['error']}")
    samples = run.get("samples", [])
    values = [sample["value"] for sample in samples]
    if values:
        low, high = min(values), max(values)
        for role in ("base", "suspect"):
            side = [sample["value"] for sample in samples if sample["role"] == role]
            if side:
                middle = sorted(side)[len(side) // 2]
                lines.append(f"  {role + ':':9} {sample_plot(side, low, high)}  median {middle:.6g} over "
                             f"{len(side)} runs ({low:.6g} .. {high:.6g})")
    return "\n".join(lines)


def render_triage(triage, notifications) -> str:
    """Where the daemon has this report: its state, channel, and what it has told the team."""
    host = f", host {triage.host}" if triage.host else ""
    lines = [f"  triage:   {triage.state} since {triage.updated_at} ({triage.channel}{host})"]
    for row in notifications:
        where = f" ts {row.posted_ts}" if row.posted_ts else ""
        problem = f": {row.last_error}" if row.status != "sent" and row.last_error else ""
        lines.append(f"    {row.kind:18} {row.status}{where}{problem}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    database = database_path(args)
    try:
        message_id = asked_key("show", args.message_id, database)
    except KeyRefused as refused:
        print(refused, file=sys.stderr)
        return refused.status
    with open_store(args) as store:
        message_id = resolve_key(store, message_id)
        report = store.get_record(message_id)
        if report is None:
            held = store.get_quarantined(message_id)
            if held is not None:
                print(f"triage show: {message_id}: quarantined since {held.received_at} (the parser could not "
                      f"read it; see triage list --failed): {held.error}", file=sys.stderr)
                return 1
            print(f"triage show: {message_id}: no such message in {database}", file=sys.stderr)
            return 1
        if args.json:  # indented for a person at a terminal, one line for a pipe
            print(json.dumps(report_to_json(report), ensure_ascii=False, indent=2 if sys.stdout.isatty() else None))
            return 0
        thread_records = [item for item in (store.get_record(key) for key in store.thread_of(message_id)) if item]
        latest_run = store.latest_run(message_id)
        triage = store.get_triage(message_id)
        notifications = store.outbox(message_id=message_id)
    text = render_report(report, all_rows=args.all)
    if not report.message_id:  # the key it was opened by, to open it again
        text = text.replace("(no Message-ID)", f"(no Message-ID; key {short_key(message_id)})", 1)
    print(text)
    if latest_run is not None:
        print(render_run(latest_run))
    if triage is not None:
        print(render_triage(triage, notifications))
    if len(thread_records) > 1:
        by_key = reports_by_key(thread_records)
        for thread in build_threads(thread_records):
            if message_id in {key for key, _ in thread.order}:
                print()
                print(render_thread(thread, by_key))
    return 0
