"""Ingest stage: what liblore (b4's lore library) does for triagebot, over triagebot's transport.

b4 fetches a thread by Message-ID as `get_pi_thread_by_msgid` does: `<msgid>/t.mbox.gz`, split
and deduplicated, cut to the strict thread of that Message-ID (the messages whose
In-Reply-To/References chain meets it), else `<msgid>/raw`. triagebot does the same, but every
request goes through its own bounded transport (http.RequestsClient: byte caps counted after
decoding, a total deadline, same-origin redirects only), so liblore is used for what it computes,
not for fetching:

- `strict_thread`: liblore.utils.get_strict_thread, b4's strict-thread walk;
- `message_id_from_url`: liblore.utils.get_msgid_from_url, b4's reading of a lore message URL
  (or a bare Message-ID) into the Message-ID it names.

Not used, and why: liblore's LoreNode (which b4's get_pi_thread_by_msgid calls) reads the whole
answer with `resp.content` and unpacks it with `gzip.decompress`, so a small gzip can unpack to
gigabytes however the session is bounded; on a 404 it sends a HEAD that follows any redirect,
to any host, and on a partial mirror it follows the `X-Archive-*` headers to an upstream
archive. b4's own function also reads the user's git configuration (b4.* keys) for the server
to ask and logs at CRITICAL level for a missing thread. Giving LoreNode a session whose adapter
enforces the byte cap would not bound the unpacking, so its fetch functions are not called.
"""
from __future__ import annotations

from email.message import EmailMessage

from liblore.utils import get_msgid_from_url, get_strict_thread, parse_message

STRICT_THREAD_MAX_MESSAGES = 2000  # thread mboxes larger than this are kept whole, not walked


def strict_thread(raws: list[bytes], message_id: str) -> list[bytes]:
    """The messages of `raws` in the thread of `message_id` (liblore's strict thread), in their
    order; all of `raws` when liblore finds none of it (the Message-ID is not among them)."""
    if len(raws) > STRICT_THREAD_MAX_MESSAGES:
        return raws
    parsed: list[tuple[bytes, EmailMessage]] = [(raw, parse_message(raw)) for raw in raws]
    strict = get_strict_thread([message for _, message in parsed], message_id.strip().strip("<>"))
    if not strict:
        return raws
    kept = {id(message) for message in strict}
    return [raw for raw, message in parsed if id(message) in kept]


def message_id_from_url(reference: str) -> str:
    """The Message-ID a lore message URL names (unescaped: `%2F` is `/`), or a bare Message-ID
    without its angle brackets."""
    return get_msgid_from_url(reference.strip())
