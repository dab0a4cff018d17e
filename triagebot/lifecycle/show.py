"""Presentation: a report's life after its verdict as `triage show` prints it — its moves, each
with the message that caused it, the reports joined to it, and the reply sent upstream."""
from __future__ import annotations

from triagebot.lifecycle.follow import render_moves
from triagebot.store.protocol import Store


def after_verdict(store: Store, message_id: str) -> str:
    """The lines under a report's triage state; '' when nothing happened after the verdict."""
    lines = []
    moves = store.moves_of(message_id)
    if moves:
        lines.append(render_moves(moves))
    first = store.joined_to(message_id)
    if first is not None:
        lines.append(f"  joined:   {first.relation} of <{first.message_id}> ({first.rule})")
    for link in store.links_of(message_id):
        lines.append(f"  {link.relation + ':':9} <{link.joined_id}> ({link.rule})")
    mail = store.mail_of(message_id)
    if mail is not None:
        when = f" at {mail.sent_at}" if mail.sent_at else ""
        problem = f": {mail.last_error}" if mail.last_error and mail.status != "sent" else ""
        lines.append(f"  reply:    <{mail.reply_message_id}> {mail.status}{when}, asked by {mail.requested_by}"
                     f"{problem}")
    return "\n".join(lines)
