"""Ingest stage: one thread from a public-inbox server, by message URL or Message-ID.

`triage ingest https://lore.kernel.org/oe-lkp/<msgid>/` or `triage ingest '<msgid>'` fetches the
whole thread as `t.mbox.gz`; a bare Message-ID is looked up under lore's `/all/`. Each call
fetches again (a thread grows); the store ignores the messages it has.
"""
from __future__ import annotations

import gzip
import re
import time
import zlib
from urllib.parse import quote, urlsplit

from triagebot.ingest.http import fetch
from triagebot.ingest.protocol import Batch, FetchedMessage, HttpClient, HttpPolicy, HttpResponse, Sleeper, SourceError
from triagebot.inputs import split_mbox

DEFAULT_ARCHIVE = "https://lore.kernel.org/all/"
_MESSAGE_ID = re.compile(r"^<?([^<>\s/]+@[^<>\s/]+)>?$")
_KNOWN_TAILS = ("t.mbox.gz", "raw", "T/", "t/", "t.atom")


def thread_mbox_url(reference: str, archive: str = DEFAULT_ARCHIVE) -> str | None:
    """The t.mbox.gz URL of a message URL (…/<list>/<msgid>/[raw|T/|…]) or a bare Message-ID."""
    bare = _MESSAGE_ID.match(reference.strip())
    if bare and not reference.startswith(("http://", "https://")):
        return f"{archive}{quote(bare.group(1), safe='@')}/t.mbox.gz"
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
        return None  # a list URL, not a message
    return f"{parts.scheme}://{parts.netloc}/{'/'.join(segments)}/t.mbox.gz"


def _gzip_problem(response: HttpResponse) -> str | None:
    try:
        data = gzip.decompress(response.body)
    except (OSError, EOFError, zlib.error) as error:
        return f"not a complete gzip file ({error})"
    if data and not data.startswith(b"From "):
        return "not an mbox"
    return None


_MESSAGE_ID_HEADER = re.compile(rb"^Message-ID:[ \t]*<([^<>\s]+)>", re.IGNORECASE | re.MULTILINE)


def _message_url(list_base: str, raw: bytes) -> str | None:
    header_end = raw.find(b"\n\n")
    match = _MESSAGE_ID_HEADER.search(raw, 0, header_end if header_end != -1 else 65536)
    return f"{list_base}{quote(match.group(1).decode('utf-8', 'replace'), safe='@')}/" if match else None


class LoreThreadSource:
    def __init__(self, url: str, client: HttpClient, policy: HttpPolicy, *, sleep: Sleeper = time.sleep,
                 list_name: str | None = None) -> None:
        self.url = url
        self.client = client
        self.policy = policy
        self.sleep = sleep
        self.list_name = list_name

    @property
    def key(self) -> str:
        return f"lore-thread:{self.url}"

    def poll(self, cursor: str | None) -> Batch:
        events: list[str] = []
        response = fetch(self.client, self.url, self.policy, sleep=self.sleep, accept=_gzip_problem, events=events)
        if response.status == 404:
            raise SourceError(f"{self.url}: no such message on the server (HTTP 404)")
        list_base = self.url[: -len("t.mbox.gz")].rstrip("/").rsplit("/", 1)[0] + "/"
        messages = tuple(FetchedMessage(raw, "lore", source_url=_message_url(list_base, raw), list_name=self.list_name)
                         for raw in split_mbox(gzip.decompress(response.body)))
        return Batch(messages=messages, cursor=None, events=tuple(events))
