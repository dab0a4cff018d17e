"""HTTP for every stage that fetches (ingest's sources, reproduce's materials): the client's
protocol, the policy a source talks to its server with, and the errors a fetch raises."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from triagebot.errors import TriageError


class SourceError(TriageError):
    """A source could not be read this time (server down, bad answer); the poll may be retried."""


class ResponseRefused(SourceError):
    """An answer refused for what it is, not for bad luck (a redirect elsewhere, a body over its
    cap): asking again would get the same, so `http.fetch` does not retry it."""


class AnswerFailed(SourceError):
    """The server answered, but not with what was asked for: an error status, a body that is not
    one, a body that never ended within the deadline. Charged to the URL asked for, not to the
    server: a list source skips that entry and goes on (a connection that fails is the server's)."""


class BodyTooLarge(ResponseRefused):
    """A body over the byte cap of its kind of request (counted after Content-Encoding)."""

    def __init__(self, url: str, limit: int, declared: int | None = None) -> None:
        self.url = url
        self.limit = limit
        self.declared = declared  # the Content-Length the server announced, if it did
        size = f"{declared} bytes" if declared is not None else "more than that"
        super().__init__(f"{url}: body is {size}, over the {limit} byte cap: refused")


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    url: str  # after redirects


class HttpClient(Protocol):
    """GET with bounds; raises SourceError on connection failures, timeouts and a passed deadline,
    BodyTooLarge past `limit` bytes of body, ResponseRefused for a redirect it will not follow.

    timeout   seconds one read (or the connection) may wait for the server
    deadline  seconds the whole request may take, headers, redirects and body included
    limit     bytes of body kept at most, counted as decoded (a gzip bomb stops here)
    """

    def get(self, url: str, *, timeout: float, deadline: float, limit: int,
            headers: Mapping[str, str] | None = None) -> HttpResponse:
        ...


@dataclass(frozen=True)
class HttpPolicy:
    """How politely a source talks to a server. Defaults are what lore.kernel.org asks of bots."""

    user_agent: str = "triagebot/0.1 (kernel performance triage; operator not configured)"
    timeout_seconds: float = 30.0  # per read: how long the server may stay silent
    # The whole of one request (headers, redirects, body): a server dribbling a byte every few
    # seconds never trips the read timeout, this it does. Retried like a timeout.
    deadline_seconds: float = 120.0
    max_redirects: int = 5  # same scheme, host and port only (see http.RequestsClient)
    attempts: int = 5  # tries of one request before the poll gives up with SourceError
    backoff_seconds: float = 2.0  # first wait; doubled each retry, with +-50% jitter
    backoff_max_seconds: float = 300.0
    extra_headers: Mapping[str, str] = field(default_factory=dict)
