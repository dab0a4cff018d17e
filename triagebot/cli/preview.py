"""`triage preview MESSAGE-ID`: the Slack messages the daemon posts for a stored report, without
sending — each payload's exact Block Kit JSON and its terminal rendering.

A report the daemon has taken on: its outbox rows, as queued or sent (the exact payloads).
One it has not: the parent message it would post on taking it on ("new"), to the channel
rules/routing.toml names, and the plan reply where a plan is stored.
"""
from __future__ import annotations

import argparse
import json
import sys

from triagebot.cli.common import add_db_argument, add_json_argument, add_rules_argument, database_location, open_store
from triagebot.cli.keys import KeyRefused, asked_key, resolve_key
from triagebot.notify import render
from triagebot.notify.terminal import payload_to_text
from triagebot.rules.settings import settings_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="MESSAGE-ID", help="with or without <>, or the sha256-… key")
    add_db_argument(parser)
    add_rules_argument(parser)
    add_json_argument(parser, "JSON Lines: one {kind, channel, status, payload} a message, no rendering")


def payloads(store, message_id: str, rules: str | None) -> list[dict]:
    """[{kind, channel, status, payload}] for the report, in posting order."""
    rows = store.outbox(message_id=message_id)
    if rows:
        return [{"kind": row.kind, "channel": row.channel, "status": row.status, "payload": row.payload}
                for row in rows]
    report = store.get_record(message_id)
    if report is None:
        return []
    stored = store.get_message(message_id)
    channel = settings_for(rules).routing.channel_for(report, stored.list_name if stored else None)
    found = [{"kind": "parent", "channel": channel, "status": "would be posted on taking it on",
              "payload": render.parent_message(report, "new")}]
    triage = store.get_triage(message_id)
    if triage is not None and triage.plan:
        found.append({"kind": "plan", "channel": channel, "status": "would be posted",
                      "payload": render.plan_reply(triage.plan)})
    return found


def run(args: argparse.Namespace) -> int:
    database = database_location(args)
    try:
        message_id = asked_key("preview", args.message_id, database)
    except KeyRefused as refused:
        print(refused, file=sys.stderr)
        return refused.status
    with open_store(args) as store:
        message_id = resolve_key(store, message_id)
        if store.get_record(message_id) is None:
            print(f"triage preview: {message_id}: no such message in {database}", file=sys.stderr)
            return 1
        found = payloads(store, message_id, args.rules)
    for item in found:
        if args.json:
            print(json.dumps(item, ensure_ascii=False))
            continue
        print(f"== {item['kind']} to {item['channel']} ({item['status']}): Block Kit payload")
        print(json.dumps(item["payload"], ensure_ascii=False, indent=2))
        print(f"== {item['kind']}: as the terminal shows it")
        print(payload_to_text(item["payload"]))
        print()
    return 0
