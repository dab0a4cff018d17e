"""`triage list` — stored records, newest first, filtered by kind, list, date, testcase.

`--uncertain` lists only what the daemon is unsure of (certainty.py), each with why: the items of
its daily digest. `--failed` lists the quarantined messages instead (the parser could not read them): key, when it
last failed, source, error; `triage reparse` tries them again.
"""
from __future__ import annotations

import argparse
import json

from triagebot.cli.common import add_db_argument, add_json_argument, database_location, open_store
from triagebot.cli.keys import record_key
from triagebot.present.dates import SINCE_FORMS, parse_since
from triagebot.present.headline import change_text
from triagebot.records.certainty import uncertain_reasons
from triagebot.records.report import KINDS, report_to_json
from triagebot.untrusted.visible import visible
from triagebot.verdict.same_kernel import A_A_ONLY, run_outcome

UNSURE_KINDS = ("human-report", "human-perf-complaint", "patch-regression", "reply")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)
    parser.add_argument("--kind", action="append", choices=KINDS + ("reports",),
                        help="record kind; 'reports' = LKP, human and syzbot reports (repeatable)")
    parser.add_argument("--list", dest="list_name", help="mailing list name, e.g. linux-ext4")
    parser.add_argument("--since", help=f"messages dated at or after: {SINCE_FORMS}")
    parser.add_argument("--testcase", help="LKP testcase or benchmark, e.g. fsmark")
    parser.add_argument("--verdict", choices=("confirmed", "not-reproduced", "inconclusive", "error", A_A_ONLY,
                                              "none"),
                        help=f"outcome of the last rerun ('none': not rerun yet; '{A_A_ONLY}': base and suspect "
                             "ran on one kernel, no verdict on the commit)")
    parser.add_argument("--limit", type=_limit, default=50, help="at most this many (default 50; 0: all)")
    add_json_argument(parser, "JSON Lines, one record per line")
    parser.add_argument("--failed", action="store_true",
                        help="the quarantined messages the parser could not read, with the reason")
    parser.add_argument("--uncertain", action="store_true",
                        help="what the daemon is unsure of (a report's kind, a reply's stance), with why: "
                             "the daily digest's items")


def _kinds(selected: list[str] | None) -> list[str] | None:
    if not selected:
        return None
    kinds: list[str] = []
    for kind in selected:
        kinds.extend(("lkp-regression", "lkp-improvement", "lkp-functional", "patch-regression", "human-report",
                      "human-perf-complaint", "human-bug", "syzbot")
                     if kind == "reports" else (kind,))
    return kinds


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; give a count, or 0 for all")
    return value


def _filters_text(args: argparse.Namespace) -> str:
    """The filters given, as typed: what `no records match` names."""
    given = [f"--kind {kind}" for kind in args.kind or ()]
    given += [f"--{name} {value}" for name, value in (("list", args.list_name), ("since", args.since),
                                                      ("testcase", args.testcase), ("verdict", args.verdict))
              if value]
    return " ".join(given)


def run(args: argparse.Namespace) -> int:
    database = database_location(args)
    if not database.exists():
        print(f"(no records: {database} does not exist yet)")
        return 0
    if args.failed:
        with open_store(args) as store:
            rows = store.quarantined(limit=args.limit or None)
        _print_failed(rows, args.json)
        return 0
    since = parse_since(args.since) if args.since else None
    limit = args.limit or None
    reasons: dict[str, tuple[str, ...]] = {}
    with open_store(args) as store:
        filters = {"kind": _kinds(args.kind), "list_name": args.list_name, "since": since,
                   "testcase": args.testcase}
        if args.uncertain:
            # the unsure ones among every match: the kinds the digest covers unless --kind says
            filters["kind"] = filters["kind"] or list(UNSURE_KINDS)
            records = []
            for listed in store.list_records(**filters):
                why = uncertain_reasons(listed.report)
                if why:
                    reasons[listed.key] = why
                    records.append(listed)
        elif args.verdict:
            # the last stored rerun's outcome (a same-kernel run: a-a-only, never a verdict)
            wanted = None if args.verdict == "none" else args.verdict
            records = [listed for listed in store.list_records(**filters)
                       if run_outcome(store.latest_run(listed.key)) == wanted]
        else:
            records = store.list_records(**filters, limit=limit + 1 if limit else None)
        more = 0
        if limit and len(records) > limit:
            more = (len(records) if args.uncertain or args.verdict else len(store.list_records(**filters))) - limit
            records = records[:limit]
    if not records and not args.json:
        print(f"(no records match {_filters_text(args)})" if _filters_text(args) else "(no records)")
    for listed in records:
        report = listed.report
        if args.json:
            data = report_to_json(report)
            if not report.message_id:
                data["stored_as"] = listed.key  # no Message-ID: the key `triage show` opens it by
            if args.uncertain:
                data["uncertain"] = list(reasons[listed.key])
            print(json.dumps(data, ensure_ascii=False))
            continue
        change = f"{change_text(report)} " if report.headline else ""
        # a subject or Message-ID is anyone's text: bidi controls and zero-width characters are
        # shown as escapes, so what a terminal shows is what was sent
        print(f"{(report.date or 'undated')[:10]:10}  {report.kind:15}  {change}"
              f"{visible((report.subject or '')[:90])}  <{visible(record_key(listed))}>")
        if args.uncertain:
            print(f"            unsure: {'; '.join(reasons[listed.key])}")
    if more and not args.json:
        print(f"({more} more, use --limit {limit + more} or --limit 0 for all)")
    return 0


def _print_failed(rows, as_json: bool) -> None:
    if not rows and not as_json:
        print("(no quarantined messages)")
    for row in rows:
        if as_json:
            print(json.dumps({"key": row.key, "failed_at": row.failed_at, "received_at": row.received_at,
                              "source": row.source_name, "source_url": row.source_url, "list": row.list_name,
                              "parser_version": row.parser_version, "attempts": row.attempts, "size": row.size,
                              "error": row.error}, ensure_ascii=False))
            continue
        where = row.source_url or row.list_name or ""
        print(visible(f"<{row.key}>  {row.failed_at}  {row.source_name}{' ' + where if where else ''}  {row.error}"))
