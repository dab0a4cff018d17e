"""Reply stage: send a drafted reply upstream through SMTP, at most once, through the mail outbox.

Only `triage reply MESSAGE-ID --send` calls this: a person's explicit action. The daemon never
sends mail. One reply per report; its exact bytes are stored first, then:

1. the row is marked `sending` and committed before the SMTP conversation;
2. the server is given the message;
3. the row is marked `sent` and, in the same transaction, the reply is stored as a message of
   the report's thread (so `triage show` and the web page show it).

A crash between 2 and 3 leaves the row `sending`: the next `--send` does not send again. If the
list's copy of the reply has come back by then (ingest stored a message with the reply's
Message-ID), the row is taken as sent; otherwise the command stops and says the reply may have
gone out, and only `--resend-in-doubt` (a person who checked the archive) sends the same bytes,
Message-ID included, again. A server that refuses the message before accepting it (a
refused recipient or sender, a failed login, no connection) leaves nothing sent: the row is
`failed` and a later `--send` tries again.
"""
from __future__ import annotations

import smtplib
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Protocol

from triagebot.errors import TriageError
from triagebot.records.report import Report, Source
from triagebot.records.threads import normalize_message_id
from triagebot.reply.draft import MAIL_POLICY
from triagebot.rules.mail import MailRules
from triagebot.store.lifecycle_protocol import MailRow
from triagebot.store.protocol import Store
from triagebot.untrusted.addresses import mailboxes

SMTP_TIMEOUT_SECONDS = 60.0
SENT_PARSER_VERSION = "reply-sent"  # the record of a reply we sent; `triage reparse` reads it again


class SendFailed(TriageError):
    """The reply was not sent: `delivered_maybe` says whether it may have reached the server."""

    def __init__(self, message: str, *, delivered_maybe: bool) -> None:
        super().__init__(message)
        self.delivered_maybe = delivered_maybe


class ReplyInDoubt(TriageError):
    """An earlier `--send` was cut off after handing the reply to the server: maybe sent."""


class Transport(Protocol):
    """Hands one message to a mail server (SmtpTransport; a test may wrap it)."""

    def send(self, raw: bytes, sender: str, recipients: list[str]) -> None: ...


@dataclass
class SmtpTransport:
    """smtplib against the server `rules/mail.toml` names; the password from its variable."""

    rules: MailRules
    environ: Mapping[str, str]
    timeout: float = SMTP_TIMEOUT_SECONDS

    def send(self, raw: bytes, sender: str, recipients: list[str]) -> None:
        rules = self.rules
        if rules.server is None:
            raise SendFailed("no [smtp] server in rules/mail.toml", delivered_maybe=False)
        password = None
        if rules.user:
            password = self.environ.get(rules.password_env or "")
            if not password:
                raise SendFailed(f"the SMTP password variable {rules.password_env} is not set", delivered_maybe=False)
        context = ssl.create_default_context(cafile=rules.ca_file)
        handed = False  # whether DATA has begun: from then on the server may have the message
        try:
            if rules.security == "tls":
                client: smtplib.SMTP = smtplib.SMTP_SSL(rules.server, rules.port, timeout=self.timeout,
                                                        context=context)
            else:
                client = smtplib.SMTP(rules.server, rules.port, timeout=self.timeout)
            with client:
                client.ehlo()
                if rules.security == "starttls":
                    client.starttls(context=context)
                    client.ehlo()
                if rules.user and password:
                    client.login(rules.user, password)
                refused = {}
                eight_bit = any(byte > 127 for byte in raw)
                client.mail(sender, ["BODY=8BITMIME"] if eight_bit and client.has_extn("8bitmime") else [])
                for recipient in recipients:
                    code, answer = client.rcpt(recipient)
                    if code not in (250, 251):
                        refused[recipient] = (code, answer)
                if refused:  # all or nothing: a reply some of its readers never get is not sent
                    client.rset()
                    raise SendFailed(f"{rules.server}:{rules.port}: refused recipients: " + ", ".join(
                        f"{address} ({code} {answer.decode('utf-8', 'replace')})"
                        for address, (code, answer) in refused.items()) + "; nothing was sent",
                        delivered_maybe=False)
                handed = True
                code, answer = client.data(raw)
                if code != 250:
                    handed = False  # a refusal of the data: the server does not have it
                    raise smtplib.SMTPDataError(code, answer)
        except smtplib.SMTPServerDisconnected as error:
            raise SendFailed(f"{rules.server}:{rules.port}: the connection ended: {error}",
                             delivered_maybe=handed) from error
        except smtplib.SMTPResponseException as error:
            raise SendFailed(f"{rules.server}:{rules.port}: refused: {error.smtp_code} "
                             f"{answer_text(error.smtp_error)}", delivered_maybe=False) from error
        except smtplib.SMTPException as error:
            raise SendFailed(f"{rules.server}:{rules.port}: {error}", delivered_maybe=handed) from error
        except (OSError, ssl.SSLError) as error:
            raise SendFailed(f"{rules.server}:{rules.port}: {error}", delivered_maybe=handed) from error


@dataclass(frozen=True)
class Sent:
    row: MailRow
    how: str  # "sent" / "already sent" / "the list's copy came back"


def read_mail(raw: bytes) -> EmailMessage:
    parsed = BytesParser(policy=MAIL_POLICY).parsebytes(raw)
    assert isinstance(parsed, EmailMessage)  # the default policy's message class
    return parsed


def envelope(message: EmailMessage) -> tuple[str, list[str]]:
    """MAIL FROM and RCPT TO of a message: its From, and every To and Cc address once (read by the
    same parser the draft's addresses were chosen with: a quoted name is a name, never an address)."""
    senders = mailboxes(str(message["From"] or ""))
    seen: dict[str, str] = {}
    for value in (message.get_all("To") or []) + (message.get_all("Cc") or []):
        for mailbox in mailboxes(str(value)):
            seen.setdefault(mailbox.addr_spec.lower(), mailbox.addr_spec)
    return (senders[0].addr_spec if senders else ""), list(seen.values())


def refuse_lists(message: EmailMessage, rules: MailRules) -> None:
    _, addresses = envelope(message)
    refused = rules.refused_lists(addresses)
    if refused:
        raise TriageError(f"not sent: {', '.join(refused)} "
                          f"{'is a list' if len(refused) == 1 else 'are lists'} rules/mail.toml does not allow "
                          f"([lists] allowed); nothing was sent")


def _store_sent(store: Store, row: MailRow, parse: Callable[[bytes, Source], Report] | None) -> None:
    """Mark the row sent and keep the reply as a message of the report's thread, in one transaction."""
    message = read_mail(row.raw)
    in_reply_to = str(message.get("In-Reply-To") or "") or None
    references = tuple(str(message.get("References") or "").split())
    with store.transaction():
        store.mark_mail_sent(row.reply_id)
        if store.put_message(row.reply_message_id, row.raw, "eml", None, store.now_text()) and parse is not None:
            store.put_record(row.reply_message_id, parse(row.raw, Source("eml")), SENT_PARSER_VERSION)
        store.link_thread(row.reply_message_id, in_reply_to, references)


def send_reply(store: Store, report_id: str, message: EmailMessage, rules: MailRules, transport: Transport, *,
               requested_by: str, resend_in_doubt: bool = False,
               parse: Callable[[bytes, Source], Report] | None = None) -> Sent:
    """Send the reply to `report_id` once (see the module text); raises TriageError when it cannot."""
    report_id = normalize_message_id(report_id)
    refuse_lists(message, rules)
    row = store.mail_of(report_id)
    if row is None:
        row = store.enqueue_mail(report_id, str(message["Message-ID"]), message.as_bytes(policy=MAIL_POLICY),
                                 requested_by)
    if row.status == "sent":
        return Sent(row, "already sent")
    if row.status == "sending":
        if store.has_message(row.reply_message_id):
            _store_sent(store, row, None)  # the list's copy is stored already: it went out
            return Sent(store.mail_of(report_id) or row, "the list's copy came back")
        if not resend_in_doubt:
            raise ReplyInDoubt(
                f"the reply <{row.reply_message_id}> may have gone out: an earlier --send was cut off after "
                f"handing it to the server; nothing was sent now. Look for it in the list archive; to send the "
                f"same message again: --send --resend-in-doubt")
    stored = read_mail(row.raw)
    sender, recipients = envelope(stored)
    refuse_lists(stored, rules)
    store.mark_mail_sending(row.reply_id)
    try:
        transport.send(row.raw, sender, recipients)
    except SendFailed as error:
        if not error.delivered_maybe:
            store.mark_mail_failed(row.reply_id, str(error))
        raise
    _store_sent(store, row, parse)
    return Sent(store.mail_of(report_id) or row, "sent")


def answer_text(answer: bytes | str) -> str:
    """An SMTP server's answer as text: smtplib gives bytes from the wire, but an exception raised
    with a str (smtplib itself does for some local failures) carries a str."""
    return answer.decode("utf-8", "replace") if isinstance(answer, bytes) else answer
