"""`triage show MESSAGE-ID` — one stored report at a glance, with its thread.

The record's summary (commits, headline, testcase and machine, the top metric rows, reproducers,
stance), then the thread it belongs to: who reproduced, who did not, objections, fixes.
`--json` prints the stored record as it is kept (schema 1). An unknown id exits 1.
"""
from __future__ import annotations

import argparse
import json
import sys

from triagebot.cli.common import add_db_argument, add_json_argument, database_location, open_store
from triagebot.cli.keys import KeyRefused, asked_key, resolve_key, short_key
from triagebot.lifecycle.show import after_verdict
from triagebot.parse.thread import render_thread
from triagebot.present.fix_view import render_fix_test
from triagebot.present.report_view import gather_report
from triagebot.present.summary import render_report, render_run, render_triage
from triagebot.records.report import report_to_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="MESSAGE-ID",
                        help="with or without <>; a message without one: the sha256-… key `triage list` prints")
    add_db_argument(parser)
    add_json_argument(parser, "print the stored record as JSON")
    parser.add_argument("--all", action="store_true", help="every metric row, not the top ones")


def run(args: argparse.Namespace) -> int:
    database = database_location(args)
    try:
        message_id = asked_key("show", args.message_id, database)
    except KeyRefused as refused:
        print(refused, file=sys.stderr)
        return refused.status
    with open_store(args) as store:
        message_id = resolve_key(store, message_id)
        view = gather_report(store, message_id)
        after = after_verdict(store, message_id) if view is not None else ""
        if view is None:
            held = store.get_quarantined(message_id)
            if held is not None:
                print(f"triage show: {message_id}: quarantined since {held.received_at} (the parser could not "
                      f"read it; see triage list --failed): {held.error}", file=sys.stderr)
                return 1
            print(f"triage show: {message_id}: no such message in {database}", file=sys.stderr)
            return 1
    report = view.report
    if args.json:  # indented for a person at a terminal, one line for a pipe
        print(json.dumps(report_to_json(report), ensure_ascii=False, indent=2 if sys.stdout.isatty() else None))
        return 0
    text = render_report(report, all_rows=args.all)
    if not report.message_id:  # the key it was opened by, to open it again
        text = text.replace("(no Message-ID)", f"(no Message-ID; key {short_key(message_id)})", 1)
    print(text)
    if view.latest_run is not None:
        print(render_run(view.latest_run))
    if view.cut_short_run is not None:  # after the last finished run: interrupted, its samples kept
        print(render_run(view.cut_short_run))
    if view.bisects:  # the bisection's text module brings the verdict's (numpy) only when there is one
        from triagebot.bisect.search import bisect_log, bisect_summary
    for bisection in view.bisects:
        print(f"  bisect {bisection['bisect_id']} on {bisection.get('host', '?')}: {bisect_summary(bisection)}")
        print("\n".join(f"    {line}" for line in bisect_log(bisection).splitlines()))
    for fix_test in view.fix_tests:
        print(render_fix_test(fix_test))
    if view.triage is not None:
        print(render_triage(view.triage, view.notifications))
    if after:
        print(after)
    if view.thread is not None:
        print()
        print(render_thread(view.thread, view.thread_reports))
    return 0
