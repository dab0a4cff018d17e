"""`triage test-fix MESSAGE-ID [PATCH-MESSAGE-ID]` — does the fix posted in the thread recover
the confirmed regression?

The report's thread as stored (`triage ingest MESSAGE-ID` fetches it through the bounded lore
client) goes to a local mbox; b4 makes the newest version of the fix series am-ready
(triagebot.reproduce.fix; PATCH-MESSAGE-ID picks a series when the thread holds several); the
host of the report's confirmed rerun applies and builds it on the suspect (`build_patched`) and
runs suspect against suspect+fix with the rerun's plan (triagebot.reproduce.fix_run). Prints the
result and a drafted reply with `Tested-by:` (never sent); the result goes to the report's Slack
thread through the outbox when the daemon took the report on. The result is stored
(triagebot.fix_testing: the same flow the daemon runs by itself) and shown by `triage show`, with
who asked (`cli:<login>`): a person's ask builds any sender's series on any host (rules/trust.py),
the person answers for it.
Exit 0 with a result, 1 for a refusal (with its reason) or a run that failed.
"""
from __future__ import annotations

import argparse
import getpass
import json
import sys

from triagebot.cli.common import add_db_argument, add_json_argument, add_rules_argument, database_path, open_store
from triagebot.errors import TriageError
from triagebot.fix_test.flow import DEFAULT_TESTER, archive_of, run_fix_test
from triagebot.records.threads import normalize_message_id
from triagebot.rules.settings import settings_for


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
    return archive_of(url)


def run(args: argparse.Namespace) -> int:
    settings = settings_for(args.rules)
    message_id = normalize_message_id(args.message_id)
    with open_store(args) as store:
        report = store.get_record(message_id)
        if report is None:
            print(f"triage test-fix: {message_id}: no such message in {database_path(args)}", file=sys.stderr)
            return 1
        archive = None
        if args.fetch is not None:
            archive = _fetch(store, settings, args.fetch or _lore_reference(report.source.url, message_id))
        outcome = run_fix_test(store, settings, database_path(args), message_id, args.patch_message_id,
                               archive=archive, budget=args.budget, tester=args.tester,
                               asked_by=f"cli:{getpass.getuser()}",
                               announce=lambda line: print(line, file=sys.stderr))
    if outcome.status != "done":
        print(f"triage test-fix: {message_id}: {outcome.result['reason']}", file=sys.stderr)
        return 1
    result = outcome.result
    if args.json:
        print(json.dumps(result | {"draft": outcome.draft, "fix_test_id": outcome.fix_test_id}, ensure_ascii=False))
    else:
        print(result["recovery"]["sentence"])
        print("\n--- drafted reply (not sent) ---")
        print(outcome.draft, end="")
    return 0
