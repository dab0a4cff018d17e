"""Store stage: the parts kept for a report's life after its verdict — its moves (fixed, reverted,
…), its links to other reports of the same regression, and the replies sent upstream.

Protocols and value types only; `sqlite_lifecycle.py` implements them. Ids are normalized as
everywhere in the store (see protocol.normalize_message_id)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

MAIL_STATUSES = ("pending", "sending", "sent", "failed")


@dataclass(frozen=True)
class LifecycleMove:
    """One move of a report: to `state`, caused by message `cause_id` ('' when none did)."""

    move_id: int
    message_id: str
    state: str
    cause_id: str
    note: str
    moved_at: str


@dataclass(frozen=True)
class ReportLink:
    """`joined_id` is another report of `message_id`'s regression (`also-seen`) or of its
    commit in the other direction (`linked`); `rule` names the rule that said so."""

    joined_id: str
    message_id: str
    relation: str
    rule: str
    linked_at: str


@dataclass(frozen=True)
class MailRow:
    """One reply upstream: its exact bytes and where its delivery is (one of MAIL_STATUSES)."""

    reply_id: int
    message_id: str  # the report replied to
    reply_message_id: str
    status: str
    requested_by: str
    attempts: int
    last_error: str | None
    created_at: str
    sent_at: str | None
    raw: bytes


@runtime_checkable
class LifecycleStore(Protocol):
    """Moves after the verdict and links between reports."""

    def add_move(self, message_id: str, state: str, cause_id: str, note: str) -> LifecycleMove | None:
        """Keep a move; None when this cause already moved this report to this state."""
        ...

    def moves_of(self, message_id: str) -> list[LifecycleMove]:
        """A report's moves, oldest first."""
        ...

    def link_report(self, joined_id: str, message_id: str, relation: str, rule: str) -> bool:
        """Join `joined_id` to the first report `message_id`; False when it was joined already."""
        ...

    def links_of(self, message_id: str) -> list[ReportLink]:
        """The reports joined or linked to this first report, oldest first."""
        ...

    def joined_to(self, joined_id: str) -> ReportLink | None:
        """The first report this one was joined or linked to, if any."""
        ...


@runtime_checkable
class MailOutboxStore(Protocol):
    """Replies upstream, each sent at most once (reply/send.py)."""

    def enqueue_mail(self, message_id: str, reply_message_id: str, raw: bytes, requested_by: str) -> MailRow:
        """Keep a reply to send; the report's existing row (unchanged) when it has one."""
        ...

    def mail_of(self, message_id: str) -> MailRow | None: ...

    def mark_mail_sending(self, reply_id: int) -> None:
        """Committed before the SMTP call: after a crash the row says "maybe sent"."""
        ...

    def mark_mail_sent(self, reply_id: int) -> None: ...

    def mark_mail_failed(self, reply_id: int, error: str) -> None:
        """The server refused it before accepting it: nothing went out, a later `--send` may retry."""
        ...
