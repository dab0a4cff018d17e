"""Ingest stage: one thread from a public-inbox server, by message URL or Message-ID.

`triage ingest https://lore.kernel.org/oe-lkp/<msgid>/` or `triage ingest '<msgid>'` fetches the
whole thread the way b4 does (LoreSource.thread_batch: t.mbox.gz cut to the strict thread with
liblore, else raw), through triagebot's bounded transport; a bare Message-ID (any characters but
whitespace and `<>`, so `/`, `+` and `%` too) is looked up under lore's `/all/`. Each call
fetches again (a thread grows); the store ignores the messages it has.
"""
from __future__ import annotations

import re
import time
from urllib.parse import quote, unquote, urlsplit

from triagebot.http_client.protocol import HttpClient, HttpPolicy
from triagebot.ingest.lore import LoreSource
from triagebot.ingest.lore_liblore import message_id_from_url
from triagebot.ingest.protocol import Batch, Sleeper

DEFAULT_ARCHIVE = "https://lore.kernel.org/all/"
_MESSAGE_ID = re.compile(r"^<?([^<>\s]+@[^<>\s]+)>?$")
# characters public-inbox leaves unescaped in Message-ID URL paths (PublicInbox::MID::MID_ESC)
_MID_SAFE = "!$&'()*+,;=:@"
_KNOWN_TAILS = ("t.mbox.gz", "raw", "T/", "t/", "t.atom")


def message_base_url(reference: str, archive: str = DEFAULT_ARCHIVE) -> str | None:
    """`…/<list>/<msgid>/` of a message URL (with or without raw, T/, t.mbox.gz…) or a bare
    Message-ID; None for anything else (a list URL names no message)."""
    bare = _MESSAGE_ID.match(reference.strip())
    if bare and not reference.startswith(("http://", "https://")):
        return f"{archive}{quote(message_id_from_url(bare.group(0)), safe=_MID_SAFE)}/"
    parts = urlsplit(reference)
    if parts.scheme not in ("http", "https"):
        return None
    path = parts.path
    for tail in _KNOWN_TAILS:
        if path.endswith("/" + tail):
            path = path[: -len(tail)]
            break
    segments = [segment for segment in path.split("/") if segment]
    if len(segments) < 2 or "@" not in segments[-1]:
        return None
    if any(unquote(segment).strip() in (".", "..") for segment in segments):
        return None  # the URL must name the message itself, not a way around the list
    return f"{parts.scheme}://{parts.netloc}/{'/'.join(segments)}/"


class LoreThreadSource:
    def __init__(self, message_url: str, client: HttpClient, policy: HttpPolicy, *, sleep: Sleeper = time.sleep,
                 list_name: str | None = None) -> None:
        self.message_url = message_url
        list_url = message_url.rstrip("/").rsplit("/", 1)[0] + "/"
        self._list = LoreSource(list_url, client, policy, sleep=sleep, list_name=list_name)

    @property
    def key(self) -> str:
        return f"lore-thread:{self.message_url}"

    def poll(self, cursor: str | None) -> Batch:
        return self._list.thread_batch(self.message_url)
