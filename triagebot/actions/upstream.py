"""Actions stage: the reply upstream a person is about to send, shown before anything is sent.

`reply_for` is the one place the message to send is found: the report's stored reply (the mail
outbox: once a reply is stored, those bytes are what is shown and sent), else a new draft
(reply/draft.py, addressed by rules/mail.toml). The Slack "Send reply upstream" button shows
`preview_reply` (the draft and who it goes to) in a modal, whose metadata keeps the draft's
Message-ID, Date and digest; its submission drafts again with that Message-ID and Date and keeps
the message in the mail outbox, with the ask, only when its bytes are the ones shown (the same
digest: no rerun or rules change came between); the daemon's pass then sends those bytes
(carry_out.py). `triage reply` prints the same message and its recipients.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import make_msgid, parseaddr, parsedate_to_datetime

from triagebot.reply.draft import MAIL_POLICY, NoReply, draft_reply
from triagebot.reply.record import on_record
from triagebot.reply.send import envelope, read_mail
from triagebot.rules.mail import MailRules, load_mail_rules
from triagebot.rules.settings import Settings
from triagebot.store.protocol import Store


@dataclass(frozen=True)
class ReplyPreview:
    """The reply as it would be sent: its bytes, its envelope and the digest a submission checks."""

    raw: bytes
    reply_message_id: str
    date: str  # its Date header, as drafted again at the submission
    recipients: tuple[str, ...]
    digest: str  # sha256 of `raw`

    @property
    def text(self) -> str:
        """The whole message as a person reads it (headers, then the text; line ends as on a terminal)."""
        return read_mail(self.raw).as_bytes(policy=MAIL_POLICY.clone(linesep="\n")).decode("utf-8", "replace")


def reply_for(store: Store, message_id: str, rules: MailRules, *, reply_message_id: str | None = None,
              date: datetime | None = None) -> EmailMessage | str:
    """The message a send of `message_id`'s reply sends: the stored one, else a new draft (with
    `reply_message_id` and `date` when given: the draft a modal showed, made again); the reason as
    a string when there is none to send."""
    stored = store.mail_of(message_id)
    if stored is not None:
        return read_mail(stored.raw)
    report, raw = store.get_record(message_id), store.get_raw(message_id)
    if report is None or raw is None:
        return "the report is not stored"
    if not rules.base_url:
        return "rules/mail.toml has no [web] base_url: the reply links to the report's page"
    triage = store.get_triage(message_id)
    domain = (parseaddr(rules.from_)[1].rpartition("@")[2] if rules.from_ else "") or "triagebot.invalid"
    try:
        return draft_reply(raw, report, str(triage.state) if triage else "", store.latest_run(message_id),
                           from_=rules.from_, base_url=rules.base_url,
                           reply_message_id=f"<{reply_message_id}>" if reply_message_id
                           else make_msgid("triage", domain=domain),
                           date=date or datetime.now(UTC).replace(microsecond=0), rules=rules,
                           record=on_record(store, message_id))
    except NoReply as refused:
        return str(refused)


def preview_reply(store: Store, settings: Settings, message_id: str, *, reply_message_id: str | None = None,
                  date: str | None = None) -> ReplyPreview | str:
    """What "Send reply upstream" would send for the report, to whom (with `reply_message_id` and
    `date`, as a modal showed it: the same bytes when nothing changed since); the reason when
    nothing can be (no SMTP server, no verdict, no address). UnwritableHeader (the report's own
    headers) and a rules error propagate: the caller tells the person."""
    rules = load_mail_rules(settings.rules_dir)
    if rules.server is None:
        return "rules/mail.toml has no [smtp] server: nothing can be sent"
    when = None
    if date:
        try:
            when = parsedate_to_datetime(date)
        except (TypeError, ValueError):
            return f"the date the draft was shown with, {date[:60]!r}, is no date: open it again"
    message = reply_for(store, message_id, rules, reply_message_id=reply_message_id, date=when)
    if isinstance(message, str):
        return message
    _sender, recipients = envelope(message)
    raw = message.as_bytes(policy=MAIL_POLICY)
    return ReplyPreview(raw, str(message["Message-ID"] or "").strip().strip("<>"), str(message["Date"] or ""),
                        tuple(recipients), hashlib.sha256(raw).hexdigest())
