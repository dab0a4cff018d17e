"""`triage test-fix MESSAGE-ID [PATCH-MESSAGE-ID]` — does the fix posted in the thread recover
the confirmed regression?

The report's thread as stored (`triage ingest MESSAGE-ID` fetches it through the bounded lore
client) goes to a local mbox; b4 makes the newest version of the fix series am-ready
(triagebot.reproduce.fix; PATCH-MESSAGE-ID picks a series when the thread holds several); the
host of the report's confirmed rerun applies and builds it on the suspect (`build_patched`) and
runs suspect against suspect+fix with the rerun's plan (triagebot.reproduce.fix_run). Prints the
result and a drafted reply with `Tested-by:` (never sent); the result goes to the report's Slack
thread through the outbox when the daemon took the report on. Exit 0 with a result, 1 for a
refusal (with its reason) or a run that failed.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from triagebot.after_verdict import measure_fix_on_lab
from triagebot.cli.common import add_db_argument, add_json_argument, add_rules_argument, database_path, open_store
from triagebot.errors import TriageError
from triagebot.ingest.lore_thread import DEFAULT_ARCHIVE
from triagebot.reproduce.fix import FixRefused, prepare_fix
from triagebot.reproduce.plan import Plan, plan_from_json
from triagebot.reproduce.rounds import rounds_within
from triagebot.rules.settings import settings_for
from triagebot.store.protocol import normalize_message_id

DEFAULT_TESTER = "triagebot lab <triagebot@localhost>"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="MESSAGE-ID", help="the report (with a confirmed rerun)")
    parser.add_argument("patch_message_id", metavar="PATCH-MESSAGE-ID", nargs="?",
                        help="a message of the series to test (default: the newest series in the thread)")
    add_db_argument(parser)
    add_rules_argument(parser, "rules directory with hosts.toml and reproducers/")
    parser.add_argument("--budget", type=int, default=20, metavar="N", help="at most N runs a side (default 20)")
    parser.add_argument("--fetch", nargs="?", const="", metavar="URL",
                        help="fetch the thread first through the bounded lore client: from URL (a message "
                             "URL on a public-inbox archive), else the report's own lore URL or Message-ID")
    parser.add_argument("--tester", default=DEFAULT_TESTER, help=f"the drafted Tested-by: (default {DEFAULT_TESTER!r})")
    add_json_argument(parser, "print the result as JSON")


def _archive(source_url: str | None) -> str:
    """The archive a fix may be linked on: the report's own lore host, else lore's."""
    if source_url and urlsplit(source_url).hostname:
        return f"{urlsplit(source_url).scheme}://{urlsplit(source_url).hostname}/"
    return DEFAULT_ARCHIVE


def _lore_reference(source_url: str | None, message_id: str) -> str:
    """The report's own message URL when it came from lore, else its Message-ID (lore's /all/)."""
    return source_url if source_url and source_url.startswith(("http://", "https://")) else message_id


def _fetch(store, settings, reference: str) -> str:
    """The thread at `reference` into the store, through the bounded lore client; its archive."""
    from triagebot.ingest.lore_thread import message_base_url
    from triagebot.ingest.runner import ingest_once
    from triagebot.ingest.sources import build_source

    url = message_base_url(reference)
    if url is None:
        raise TriageError(f"--fetch {reference!r}: not a message URL or Message-ID")
    result = ingest_once(build_source(url, settings.http), store)
    print(f"triage test-fix: fetched {len(result.new_ids)} new messages of the thread from {url}", file=sys.stderr)
    return _archive(url)


def run(args: argparse.Namespace) -> int:
    settings = settings_for(args.rules)
    message_id = normalize_message_id(args.message_id)
    with open_store(args) as store:
        report = store.get_record(message_id)
        if report is None:
            print(f"triage test-fix: {message_id}: no such message in {database_path(args)}", file=sys.stderr)
            return 1
        latest = store.latest_run(message_id)
        verdict = (latest or {}).get("verdict") or {}
        if verdict.get("outcome") != "confirmed" or verdict.get("measured_change_percent") is None:
            print(f"triage test-fix: {message_id}: no confirmed rerun to test a fix against (triage rerun first)",
                  file=sys.stderr)
            return 1
        assert latest is not None
        host = next((item for item in settings.need_hosts() if item.name == latest["host"]), None)
        if host is None or not host.build_patched or not host.can_switch_kernel:
            raise TriageError(f"host {latest['host']} (of the confirmed rerun) cannot test fixes: it needs "
                              "switch_kernel and build_patched hooks in hosts.toml")
        plan = plan_from_json(latest["plan"])
        if not isinstance(plan, Plan):
            raise TriageError(f"{message_id}: the confirmed rerun's plan cannot be read")
        archive = _archive(report.source.url)
        if args.fetch is not None:
            archive = _fetch(store, settings, args.fetch or _lore_reference(report.source.url, message_id))
        thread = [raw for raw in (store.get_raw(key) for key in store.thread_of(message_id)) if raw is not None]
        suspect, regression = latest["suspect_commit"], float(verdict["measured_change_percent"])
        with tempfile.TemporaryDirectory(prefix="triage-fix-") as work:
            try:
                fix = prepare_fix(thread, Path(work), archive, args.patch_message_id)
            except FixRefused as refused:
                print(f"triage test-fix: {message_id}: refused: {refused}", file=sys.stderr)
                return 1
            mbox = fix.mbox.read_bytes()
        print(f"test-fix of {message_id} on {host.name}: v{fix.version}, {len(fix.subjects)} patches on {suspect}",
              file=sys.stderr)
        for subject in fix.subjects:
            print(f"  {subject}", file=sys.stderr)
        floor = settings.floors.floor_for(plan.report_metric or plan.metric)
        result, draft = measure_fix_on_lab(store, database_path(args), message_id, host, plan, floor, suspect,
                                           regression, fix, mbox, rounds=rounds_within(args.budget),
                                           tester=args.tester)
    if args.json:
        print(json.dumps(result | {"draft": draft}, ensure_ascii=False))
    else:
        print(result["recovery"]["sentence"])
        print("\n--- drafted reply (not sent) ---")
        print(draft, end="")
    return 0

