"""Ingest stage: the Source a reference names (a path, an openwall or public-inbox URL, a
Message-ID).

Used by `triage ingest` for its SOURCE arguments and by the daemon for rules/sources.toml.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import datetime
from urllib.parse import urlsplit

from triagebot.errors import InputError
from triagebot.http_client.bounds import PollBounds
from triagebot.http_client.protocol import HttpPolicy
from triagebot.ingest.files import FileSource
from triagebot.ingest.lore_thread import LoreThreadSource, message_base_url
from triagebot.ingest.protocol import Source


def _is_openwall(url: str) -> bool:
    parts = urlsplit(url)
    return parts.hostname == "lists.openwall.net" or (
        parts.hostname in ("www.openwall.com", "openwall.com") and parts.path.startswith("/lists/"))


def build_source(reference: str, policy: HttpPolicy, *, list_name: str | None = None,
                 sleep: Callable[[float], None] = time.sleep, since: datetime | None = None,
                 bounds: PollBounds | None = None) -> Source:
    """The Source a command-line SOURCE names; InputError when it names none.

    `sleep` is how the source waits between retries and paces a lore heal (the daemon's wait
    ends early on a stop); `since` is how far back a lore list's first poll reads; `bounds`
    gives a lore list its entry attempts and heal size (sources.toml [bounds])."""
    if os.path.exists(reference):
        return FileSource(reference, list_name=list_name)
    from triagebot.http_client.client import RequestsClient

    if reference.startswith(("http://", "https://")) and _is_openwall(reference):
        from triagebot.ingest.openwall import OpenwallPageSource, OpenwallSource, parse_openwall_url

        address = parse_openwall_url(reference)
        if address.page_url is not None:
            return OpenwallPageSource(reference, RequestsClient(policy), policy, sleep,
                                      list_name=list_name)
        return OpenwallSource(address.list_url, RequestsClient(policy), policy, sleep,
                              list_name=list_name)
    message_url = message_base_url(reference)
    if message_url:
        return LoreThreadSource(message_url, RequestsClient(policy), policy, sleep=sleep,
                                list_name=list_name)
    if reference.startswith(("http://", "https://")):
        from triagebot.ingest.lore import LoreSource
        from triagebot.ingest.lore_search import HEAL_REQUEST_INTERVAL_SECONDS

        url = reference if reference.endswith("/") else reference + "/"
        bounds = bounds or PollBounds()
        return LoreSource(url, RequestsClient(policy), policy, sleep=sleep,
                          heal_interval_seconds=HEAL_REQUEST_INTERVAL_SECONDS,
                          entry_attempts=bounds.entry_attempts, heal_max_results=bounds.heal_max_results,
                          **({"since": since} if since else {}))
    raise InputError(reference, "no such file, and not a URL or a Message-ID")
