"""`triage reply MESSAGE-ID` — the reply upstream after a confirmed or not-reproduced verdict.

Prints the whole message (headers and text) for copy-paste, and on stderr the addresses it would
be sent to (the envelope `--send` uses); `--send` sends it through the SMTP server of
rules/mail.toml, once (triagebot/reply/send.py). Once a reply is stored for the report,
the stored bytes are what is printed and sent, not a new draft.
"""
from __future__ import annotations

import argparse
import getpass
import os
import sys
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import make_msgid, parseaddr

from triagebot.cli.common import add_db_argument, add_rules_argument, database_path, open_store
from triagebot.cli.keys import KeyRefused, asked_key, resolve_key
from triagebot.errors import TriageError
from triagebot.reply.draft import MAIL_POLICY, draft_reply
from triagebot.reply.record import on_record
from triagebot.reply.send import SmtpTransport, envelope, send_reply
from triagebot.rules.loader import rules_dir
from triagebot.rules.mail import MAIL_FILE, load_mail_rules


def printable(message: EmailMessage) -> bytes:
    """The message as it is sent, with the terminal's line ends (UTF-8 text stays UTF-8)."""
    return message.as_bytes(policy=MAIL_POLICY.clone(linesep="\n"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="MESSAGE-ID", help="the report replied to, with or without <>")
    add_db_argument(parser)
    add_rules_argument(parser)
    parser.add_argument("--base-url", metavar="URL",
                        help="where the team's report pages are (default: [web] base_url of rules/mail.toml)")
    parser.add_argument("--send", action="store_true",
                        help="send it through the SMTP server of rules/mail.toml (once; it is never sent otherwise)")
    parser.add_argument("--resend-in-doubt", action="store_true",
                        help="with --send: send again a reply an earlier --send may have sent (cut off)")


def run(args: argparse.Namespace) -> int:
    database = database_path(args)
    try:
        message_id = asked_key("reply", args.message_id, database)
    except KeyRefused as refused:
        print(refused, file=sys.stderr)
        return refused.status
    folder = rules_dir(args.rules)
    rules = load_mail_rules(folder)
    if args.resend_in_doubt and not args.send:
        raise TriageError("--resend-in-doubt goes with --send")
    if args.send and rules.server is None:
        raise TriageError(f"{folder / MAIL_FILE}: no [smtp] server: nothing can be sent (the reply is printed "
                          "without --send)")
    with open_store(args) as store:
        message_id = resolve_key(store, message_id)
        report = store.get_record(message_id)
        raw = store.get_raw(message_id)
        if report is None or raw is None:
            raise TriageError(f"{message_id}: no such report in {database}")
        stored = store.mail_of(message_id)
        if stored is not None:
            message_bytes = stored.raw
            from triagebot.reply.send import read_mail

            message = read_mail(message_bytes)
        else:
            base_url = args.base_url or rules.base_url
            if not base_url:
                raise TriageError(f"the reply links to the report's page: give --base-url or [web] base_url in "
                                  f"{folder / MAIL_FILE}")
            triage = store.get_triage(message_id)
            run_json = store.latest_run(message_id)
            state = str(triage.state) if triage else str(((run_json or {}).get("verdict") or {}).get("outcome"))
            domain = (parseaddr(rules.from_)[1].rpartition("@")[2] if rules.from_ else "") or "triagebot.invalid"
            message = draft_reply(raw, report, state, run_json, from_=rules.from_, base_url=base_url,
                                  reply_message_id=make_msgid("triage", domain=domain), date=datetime.now(UTC),
                                  rules=rules, record=on_record(store, message_id))
        if not args.send:
            sys.stdout.flush()
            sys.stdout.buffer.write(printable(message))
            sys.stdout.flush()
            _sender, recipients = envelope(message)
            print(f"triage reply: not sent; --send sends it to {len(recipients)} "
                  f"recipient{'s' if len(recipients) != 1 else ''}: {', '.join(recipients)}", file=sys.stderr)
            return 0
        from triagebot.parse.report import parse_message

        sent = send_reply(store, message_id, message, rules, SmtpTransport(rules, os.environ),
                          requested_by=getpass.getuser(), resend_in_doubt=args.resend_in_doubt, parse=parse_message)
    print(f"triage reply: <{sent.row.reply_message_id}>: {sent.how}"
          + (f" at {sent.row.sent_at}" if sent.row.sent_at else ""))
    return 0
