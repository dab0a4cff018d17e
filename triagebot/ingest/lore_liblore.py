"""Ingest stage: what liblore (b4's lore library) does for triagebot, over triagebot's transport.

b4 fetches a thread by Message-ID as `get_pi_thread_by_msgid` does: `<msgid>/t.mbox.gz`, split
and deduplicated, cut to the strict thread of that Message-ID (the messages whose
In-Reply-To/References chain meets it), else `<msgid>/raw`. triagebot does the same, but every
request goes through its own bounded transport (http.RequestsClient: byte caps counted after
decoding, a total deadline, same-origin redirects only), so liblore is used for what it computes,
not for fetching:

- `strict_thread`: the thread liblore.utils.get_strict_thread (b4's strict-thread walk) finds,
  found by a linear walk of our own (liblore's is quadratic: see the function);
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

import re
from collections import deque
from email.parser import BytesHeaderParser
from email.policy import compat32

from liblore.utils import get_clean_msgid, get_msgid_from_url

_REFERENCE = re.compile(r"<([^>]+)>")
_FOLD = re.compile(r"\r?\n")  # unfolding a header value removes its line breaks (RFC 5322 2.2.3)
_REFERRING = ("in-reply-to", "references")


def strict_thread(raws: list[bytes], message_id: str) -> list[bytes]:
    """The messages of `raws` in the thread of `message_id` (liblore's strict thread), in their
    order; all of `raws` when none of them is in it (the Message-ID is not among them).

    The strict thread is what liblore.utils.get_strict_thread finds: the messages joined to
    `message_id` through In-Reply-To/References, in either direction and through Message-IDs no
    message here carries. liblore walks every message once per round and adds about one generation
    a round, so a reply chain in reverse order costs messages² header reads (2,000 messages:
    never finishes); this reads each message's headers once and walks the links breadth-first,
    linear in the references. tests/test_lore_b4.py checks it against liblore's walk. Unlike
    liblore, which keeps the last message of a repeated Message-ID, every copy is kept: which one
    is stored is the store's choice.
    """
    # compat32 keeps header values as written: the default policy's parse of a References field
    # naming hundreds of ids costs milliseconds, and an id is read from the raw value anyway
    parser = BytesHeaderParser(policy=compat32)
    own_ids: list[str | None] = []
    references: list[set[str]] = []
    carriers: dict[str, list[int]] = {}  # Message-ID -> the messages carrying it
    referrers: dict[str, list[int]] = {}  # Message-ID -> the messages referring to it
    for index, raw in enumerate(raws):
        headers = parser.parsebytes(raw)
        own = get_clean_msgid(headers)
        refs = {ref for name, value in headers.raw_items() if name.lower() in _REFERRING
                for ref in _REFERENCE.findall(_FOLD.sub("", value))}
        refs.discard(own)  # a self-reference is never a parent (liblore drops it too)
        own_ids.append(own)
        references.append(refs)
        if own is None:
            continue  # liblore keys messages by Message-ID: one without is in no thread
        carriers.setdefault(own, []).append(index)
        for ref in refs:
            referrers.setdefault(ref, []).append(index)
    start = message_id.strip().strip("<>")
    kept: set[int] = set()
    visited = {start}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for index in carriers.get(current, []) + referrers.get(current, []):
            if index in kept:
                continue
            kept.add(index)
            for linked in (own_ids[index], *references[index]):
                if linked is not None and linked not in visited:
                    visited.add(linked)
                    queue.append(linked)
    if not kept:
        return raws
    return [raw for index, raw in enumerate(raws) if index in kept]


def message_id_from_url(reference: str) -> str:
    """The Message-ID a lore message URL names (unescaped: `%2F` is `/`), or a bare Message-ID
    without its angle brackets."""
    return get_msgid_from_url(reference.strip())
