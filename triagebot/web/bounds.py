"""Web stage: the HTTP side's bounds, so nobody who reaches the port can exhaust the daemon behind it.

The daemon serves /healthz, /metrics, the pages and Slack's endpoint from its own process, so
what a stranger can make the server hold (memory, file descriptors, threads, the GIL) is taken
from the polls, runs and posts. Each bound, and where it is enforced:

- the request head (request line and headers) is at most `max_head_bytes` (h11's incomplete
  event size: past it, 400) and must be complete within `head_seconds` of the connection
  opening or of the previous response (`bounded_protocol`: a connection that never sends a
  whole head is closed, however slowly it trickles bytes); an idle keep-alive connection is
  closed after `keep_alive_seconds` (uvicorn's own timer);
- an answer the client does not read is dropped: when the connection's send buffer stays full
  (the transport paused writing) for `write_seconds`, the connection is aborted and what was
  buffered is never sent, whether the answer was still being written or the connection was
  closing after it (asyncio's close waits for the buffer to empty, which a client that reads
  nothing never lets happen); a client that reads, however slowly, resumes writing and restarts
  the deadline;
- at most `max_connections` connections are held, sized under the process's file descriptor
  soft limit (first raised towards the hard limit, `raise_fd_soft_limit`) with `RESERVED_FDS`
  kept for the daemon's own work and room for one burst of accepts (`ACCEPT_BATCH`, the listen
  backlog: the event loop accepts that many before it sees any; `connection_cap`). A new
  connection past the cap closes the connection that has waited longest for a request head (an
  idle or trickling one: a working client is never kept out by idle ones), or, when every
  connection is in a request, is answered 503 and closed at once; uvicorn's own
  `limit_concurrency` answers 503 past the cap too;
- a body is read only by a route that takes one (`read_body`): a Content-Length over `max_body`
  is answered 413 before any of the body is read; a chunked body is cut at `max_body` (413,
  nothing more read); a body that has not arrived within `body_seconds` is answered 408. A
  response sent while the request's body is still unread closes the connection (`Bounded`),
  so the rest is never read; a Content-Length that is not a number is answered 400;
- pages and Slack's listeners run on at most `threads` worker threads (each holds a store
  connection and the GIL while it renders), so the daemon's loop keeps its share of the CPU.
"""
from __future__ import annotations

import asyncio
import resource
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from triagebot.untrusted.whole_numbers import BadNumber, whole_number

MAX_BODY = 64 * 1024  # Slack's payloads are a few kilobytes; no page takes a body
BODY_SECONDS = 10.0  # a whole body of MAX_BODY arrives in far less on any link Slack uses
HEAD_SECONDS = 10.0  # a browser or a probe sends its whole head in one packet
KEEP_ALIVE_SECONDS = 5  # an idle keep-alive connection is closed after this
# an answer's send buffer may stay full this long: a browser on a slow link still reads a page of
# a few hundred kilobytes within it, a client that reads nothing holds its connection no longer
WRITE_SECONDS = 30.0
MAX_HEAD_BYTES = 16 * 1024  # the request line and headers together (h11's own default, made explicit)
RESERVED_FDS = 128  # kept for the daemon: its store, host locks, polls, git/ssh pipes, page stores
# connections the event loop accepts in one go, before any of them is seen (asyncio accepts up to
# the listen backlog at once): the cap leaves room for one such burst, and the backlog is this
ACCEPT_BATCH = 32
MAX_CONNECTIONS = 512  # a team's pages and Slack never need more, whatever the fd limit
MIN_CONNECTIONS = 8  # even under a tiny fd limit /healthz must get through
# the soft fd limit the daemon asks for (within its hard limit): room for the connection cap, the
# reserve and the accept burst many times over, not so much that select-based code would break
FD_SOFT_TARGET = 4096
PAGE_THREADS = 4  # pages rendered (and Slack requests handled) at once

LIMITS_KEY = "triagebot.http_limits"  # where a request's scope carries the server's HttpLimits
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def fd_soft_limit() -> int | None:
    """This process's soft limit on open file descriptors (None: unlimited)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def raise_fd_soft_limit(target: int = FD_SOFT_TARGET) -> int | None:
    """Raise this process's soft fd limit towards `target`, within the hard limit (a soft limit
    already higher, or unlimited, is left as it is); the soft limit after (None: unlimited).
    A limit the system will not raise is left as it was: the connection cap is sized under it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < target:
        wanted = target if hard == resource.RLIM_INFINITY else min(target, hard)
        if wanted > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            except (ValueError, OSError):
                pass  # a container may forbid it: the cap follows the limit there is
    return fd_soft_limit()


def connection_cap(soft_limit: int | None, reserved: int = RESERVED_FDS) -> int:
    """Connections the server may hold under a file descriptor soft limit, `reserved` kept for
    the rest of the process and one accept burst (`ACCEPT_BATCH`) on top (each connection is one
    descriptor)."""
    if soft_limit is None:
        return MAX_CONNECTIONS
    return max(MIN_CONNECTIONS, min(MAX_CONNECTIONS, soft_limit - reserved - ACCEPT_BATCH))


@dataclass(frozen=True)
class HttpLimits:
    """The HTTP side's bounds (see the module's docstring)."""

    max_connections: int = MAX_CONNECTIONS
    head_seconds: float = HEAD_SECONDS
    keep_alive_seconds: int = KEEP_ALIVE_SECONDS
    write_seconds: float = WRITE_SECONDS
    max_head_bytes: int = MAX_HEAD_BYTES
    max_body: int = MAX_BODY
    body_seconds: float = BODY_SECONDS
    threads: int = PAGE_THREADS

    @classmethod
    def for_this_process(cls, **overrides: Any) -> HttpLimits:
        """The defaults, the connection cap sized under this process's fd soft limit."""
        return cls(**({"max_connections": connection_cap(fd_soft_limit())} | overrides))


# --- the connection: head deadline and the cap -----------------------------------------------------

_REFUSED_TEXT = b"too many connections at once: try again soon\n"
_REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(_REFUSED_TEXT), _REFUSED_TEXT))


def bounded_protocol(limits: HttpLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the head and write deadlines and the connection cap of `limits`."""

    class BoundedH11Protocol(H11Protocol):
        waiting_since: float | None = None  # loop time since which a request head is awaited
        _head_timer: asyncio.TimerHandle | None = None
        _write_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if self._crowded():
                return
            self._await_head()

        def _crowded(self) -> bool:
            """Past the cap: close the longest-waiting idle connection, or refuse this one."""
            if len(self.connections) <= limits.max_connections:
                return False
            idle = {other: other.waiting_since for other in self.connections
                    if isinstance(other, BoundedH11Protocol) and other is not self and other.waiting_since is not None}
            if idle:
                min(idle, key=idle.__getitem__).close_idle()
                return False
            self.transport.write(_REFUSED)
            self.transport.close()
            return True

        def _await_head(self) -> None:
            self._stop_head_timer()
            self.waiting_since = self.loop.time()
            self._head_timer = self.loop.call_later(limits.head_seconds, self.close_idle)

        def _stop_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            self.waiting_since = None

        def close_idle(self) -> None:
            """Close a connection that has not sent a whole request head (idle or trickling)."""
            self._stop_head_timer()
            if not self.transport.is_closing():
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.waiting_since is not None and self.conn.their_state is not h11.IDLE:
                self._stop_head_timer()  # a whole head arrived: the request is under way

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._await_head()  # the next request's head, on a keep-alive connection

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._write_timer is None:
                self._write_timer = self.loop.call_later(limits.write_seconds, self.drop_unread)

        def resume_writing(self) -> None:
            self._stop_write_timer()
            super().resume_writing()

        def _stop_write_timer(self) -> None:
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None

        def drop_unread(self) -> None:
            """Abort a connection whose client has read none of its answer for `write_seconds`:
            close() would wait for the buffer to empty, and this client never empties it."""
            self._write_timer = None
            self._stop_head_timer()
            self.transport.abort()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_head_timer()
            self._stop_write_timer()
            super().connection_lost(exc)

    return BoundedH11Protocol


# --- the request: bodies -----------------------------------------------------------------------

class RequestRefused(ValueError):
    """A request refused for its framing (length, body, time): `status` and the reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def declared_length(headers: Sequence[tuple[bytes, bytes]]) -> int | None:
    """The request's Content-Length (None: none given); RequestRefused 400 when it is not a number."""
    values = [value for name, value in headers if name.lower() == b"content-length"]
    if not values:
        return None
    if len(set(values)) > 1:
        raise RequestRefused(400, "Content-Length given more than once with different values")
    try:
        return whole_number(values[0].decode("latin-1"), "Content-Length")
    except BadNumber as error:
        raise RequestRefused(400, str(error)) from None


def _has_body(headers: Sequence[tuple[bytes, bytes]]) -> bool:
    return any(name.lower() == b"transfer-encoding" for name, _ in headers) or bool(declared_length(headers))


async def read_body(scope: Scope, receive: Receive) -> bytes:
    """The request's body, at most `max_body` bytes arrived within `body_seconds` (the server's
    HttpLimits, else the defaults); RequestRefused (413, 408, 400) otherwise, nothing past the
    limit read."""
    limits = scope.get(LIMITS_KEY) or HttpLimits()
    headers, max_body, seconds = scope["headers"], limits.max_body, limits.body_seconds
    declared = declared_length(headers)
    if declared is not None and declared > max_body:
        raise RequestRefused(413, f"a body of {declared} bytes (Content-Length; at most {max_body}): not read")
    parts: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(seconds):
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise RequestRefused(400, "the connection closed before the body ended")
                part = message.get("body", b"")
                size += len(part)
                if size > max_body:
                    raise RequestRefused(413, f"a body over {max_body} bytes: cut there, the rest not read")
                parts.append(part)
                more = bool(message.get("more_body", False))
    except TimeoutError:
        raise RequestRefused(408, f"the body did not arrive within {seconds:g} s") from None
    return b"".join(parts)


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), (b"connection", b"close"),
                            (b"x-content-type-options", b"nosniff")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class Bounded:
    """ASGI middleware over the whole app: a Content-Length that is not a number is 400; a
    response sent before the request's body was read to its end closes the connection (the rest
    of the body is never read); the worker threads are at most `limits.threads`."""

    def __init__(self, app: App, limits: HttpLimits) -> None:
        self.app = app
        self.limits = limits
        self._threads_set = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._threads_set:  # the thread limiter lives in the server's event loop: set it there
            import anyio.to_thread

            anyio.to_thread.current_default_thread_limiter().total_tokens = self.limits.threads
            self._threads_set = True
        try:
            unread = _has_body(scope["headers"])
        except RequestRefused as error:
            await _plain(send, error.status, f"bad request: {error.reason}")
            return
        scope[LIMITS_KEY] = self.limits  # a route that reads a body reads it within these (read_body)
        state = {"unread": unread}

        async def receiving() -> Message:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                state["unread"] = False
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and state["unread"]:
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receiving, sending)
