"""`triage take-on KEY` and `triage dismiss KEY` — decide a reading the daemon was unsure of (issue 38).

The command form of a digest line's button (actions/decide.py, the same checks and the same one
transaction): take it on (its triage row, its Slack parent: the daemon plans and reruns it) or
dismiss it; either is kept as a label with who decided (`--by`, default the user running it) and
why (`--note`). A refusal says why and exits 1; a key not stored exits 1.
"""
from __future__ import annotations

import argparse
import getpass
import hashlib
import socket
import sys
import time

from triagebot.actions.decide import Decision, decide
from triagebot.cli.common import add_db_argument, add_rules_argument, database_location, open_store
from triagebot.cli.keys import KeyRefused, asked_key, resolve_key
from triagebot.rules.settings import settings_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="KEY", help="the reading's Message-ID (with or without <>), or a "
                                                          "key `triage list --uncertain` prints")
    parser.add_argument("--note", default="", help="why: kept with the label")
    parser.add_argument("--by", default=None, help="who decides (default: USER@HOST)")
    add_db_argument(parser)
    add_rules_argument(parser, "rules directory (routing.toml says the channel a report taken on is posted to)")


def _who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def run(args: argparse.Namespace) -> int:
    decision = args.command  # take-on / dismiss
    try:
        key = asked_key(decision, args.message_id, database_location(args))
    except KeyRefused as refused:
        print(refused, file=sys.stderr)
        return refused.status
    settings = settings_for(args.rules)
    by = args.by or _who()
    with open_store(args) as store:
        message_id = resolve_key(store, key)
        # a command is its own request: the same command typed twice is two decisions, the second refused
        request_key = "cli:" + hashlib.sha256(f"{message_id}:{decision}:{by}:{time.time_ns()}".encode()).hexdigest()
        outcome = decide(store, settings.routing, Decision(request_key, message_id, decision, by, "cli", args.note))
    print(f"triage {decision}: {outcome.text}", file=sys.stdout if outcome.done else sys.stderr)
    return 0 if outcome.done else 1
