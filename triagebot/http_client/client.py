"""HTTP client: the real HTTP transport (requests) and polite fetching with backoff.

`fetch` retries connection failures, timeouts, 429, 5xx and answers that are not what was
asked for (an HTML challenge page instead of a feed), waiting `backoff_seconds * 2**n` with
+-50% jitter and honouring `Retry-After`, and logs each retry once as an event line. An answer
refused for what it is (`ResponseRefused`: a body over its cap, a redirect elsewhere) is not
retried.

`RequestsClient` bounds every request, whoever the server is:
- the body is streamed and kept only up to the caller's byte cap, counted after decoding: the
  client asks for gzip only and decodes it here, `CHUNK_BYTES` of the wire at a time, asking
  zlib for no more than the room left, so a small gzip of gigabytes stops at the cap with
  memory bounded by the cap; an honest Content-Length over the cap is refused before reading;
- a total deadline (`HttpPolicy.deadline_seconds`) over headers, redirects and body: when it
  passes, a watchdog thread shuts down the connection's socket, which ends any read blocked on
  it (a server sending one byte every few seconds never trips the per-read timeout);
- redirects are followed by hand, at most `HttpPolicy.max_redirects`, and only to the same
  scheme, host and port: never to another server or port, never to file://.
"""
from __future__ import annotations

import logging
import random
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from urllib.parse import urljoin, urlsplit

from triagebot.backoff import Backoff, Sleeper
from triagebot.http_client.protocol import (
    AnswerFailed,
    BodyTooLarge,
    HttpClient,
    HttpPolicy,
    HttpResponse,
    ResponseRefused,
    SourceError,
)
from triagebot.logs import event
from triagebot.untrusted.whole_numbers import BadNumber, whole_number

log = logging.getLogger("triagebot.ingest.http")

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CHUNK_BYTES = 64 * 1024  # one read of the wire; decoded output is capped separately
ACCEPT_ENCODING = "gzip"  # the one Content-Encoding asked for (decoded here, under the cap)
GZIP_MAX_MEMBERS = 64  # concatenated gzip members in one body (servers send one)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_CURRENT = threading.local()  # the _Watch of the request running in this thread

HTTP_JITTER = 0.5  # each retry waits the backoff times a draw in [0.5, 1.5], so clients spread out


class _Watch:
    """The deadline of one request: when it passes, shut down the sockets it used."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        # Sockets, not connections: http.client drops a connection's socket once a response
        # that ends with the connection is under way, and the response reads on from it.
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Watch:
        _CURRENT.watch = self
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._timer.cancel()
        _CURRENT.watch = None

    def watch(self, connection: object) -> None:
        """Called by a connection when it connects or sends a request in this thread."""
        sock = getattr(connection, "sock", None)
        if sock is None:
            return  # not connected yet: connect() calls again
        with self._lock:
            if all(known is not sock for known in self._sockets):
                self._sockets.append(sock)
            expired = self.expired
        if expired:
            _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        # socket.socket's own shutdown, not SSLSocket's (which drops its SSL object under a
        # read running in another thread): the blocked read then sees the connection end.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


def _watched_connection(base: type) -> type:
    class Watched(base):
        def connect(self) -> None:
            super().connect()
            watch = getattr(_CURRENT, "watch", None)
            if watch is not None:
                watch.watch(self)

        def request(self, *args, **kwargs):
            watch = getattr(_CURRENT, "watch", None)
            if watch is not None:
                watch.watch(self)
            return super().request(*args, **kwargs)

    Watched.__name__ = Watched.__qualname__ = f"Watched{base.__name__}"
    return Watched


_WATCHED_POOLS: dict[type, type] = {}


def _watch_pools(manager) -> None:
    """Make a urllib3 PoolManager (or ProxyManager) open watched connections."""
    if getattr(manager, "_triagebot_watched", False):
        return
    classes = {}
    for scheme, pool in manager.pool_classes_by_scheme.items():
        if pool not in _WATCHED_POOLS:
            _WATCHED_POOLS[pool] = type(f"Watched{pool.__name__}", (pool,),
                                        {"ConnectionCls": _watched_connection(pool.ConnectionCls)})
        classes[scheme] = _WATCHED_POOLS[pool]
    manager.pool_classes_by_scheme = classes
    manager._triagebot_watched = True


class _Decoder:
    """Content-Encoding undone under a cap: each call yields at most `room + 1` bytes."""

    def __init__(self, url: str, encoding: str) -> None:
        self.identity = encoding in ("", "identity")
        if not self.identity and encoding not in ("gzip", "x-gzip", "deflate"):
            raise ResponseRefused(f"{url}: Content-Encoding {encoding!r} was not asked for: refused")
        self._wbits = zlib.MAX_WBITS if encoding == "deflate" else 16 + zlib.MAX_WBITS
        self._object = zlib.decompressobj(self._wbits)  # not read when the body is identity
        self._started = False
        self._done = False  # past the end of the last gzip member: the rest is ignored
        self._members = 1
        self.url = url

    def decode(self, data: bytes, room: int) -> bytes:
        if self.identity:
            return data
        out: list[bytes] = []
        while data and not self._done and room >= 0:
            try:
                chunk = self._object.decompress(data, room + 1)
            except zlib.error as error:
                if self._wbits == zlib.MAX_WBITS and not self._started:
                    # "deflate" sent as a raw deflate stream, as some servers do
                    self._wbits = -zlib.MAX_WBITS
                    self._object = zlib.decompressobj(self._wbits)
                    continue
                raise AnswerFailed(f"{self.url}: damaged {self.encoding_name} body ({error})") from error
            self._started = True
            out.append(chunk)
            room -= len(chunk)
            if room < 0:
                break  # over the cap: the caller refuses the body
            data = self._object.unconsumed_tail
            if self._object.eof:
                rest = self._object.unused_data.lstrip(b"\0")
                if rest.startswith(b"\x1f\x8b") and self._wbits == 16 + zlib.MAX_WBITS:
                    self._members += 1
                    if self._members > GZIP_MAX_MEMBERS:
                        raise ResponseRefused(f"{self.url}: more than {GZIP_MAX_MEMBERS} gzip members: refused")
                    self._object = zlib.decompressobj(self._wbits)  # the next gzip member
                    data = rest
                else:
                    self._done = True
        return b"".join(out)

    @property
    def encoding_name(self) -> str:
        return "gzip" if self._wbits == 16 + zlib.MAX_WBITS else "deflate"

    def check_end(self) -> None:
        if not self.identity and self._started and not self._done and not self._object.eof:
            raise AnswerFailed(f"{self.url}: truncated {self.encoding_name} body (the stream does not end)")


def _same_origin(url: str, target: str) -> bool:
    here, there = urlsplit(url), urlsplit(target)
    if there.scheme not in _DEFAULT_PORTS or there.scheme != here.scheme:
        return False
    try:
        ports = (here.port or _DEFAULT_PORTS[here.scheme], there.port or _DEFAULT_PORTS[there.scheme])
    except ValueError:  # a port that is not a number
        return False
    return (here.hostname or "") == (there.hostname or "") and ports[0] == ports[1]


def _declared_size(declared: str) -> int | None:
    """A server's Content-Length, when it is a whole number (else None: the stream is counted)."""
    try:
        return whole_number(declared, "Content-Length")
    except BadNumber:
        return None


class RequestsClient:
    """HttpClient over one requests.Session (connection reuse, the operator's User-Agent), with
    the bounds of the module docstring: byte caps, a total deadline, same-origin redirects."""

    def __init__(self, policy: HttpPolicy, *, trust_environment: bool = True,
                 ca_bundle: str | None = None) -> None:
        import requests  # imported here: parsing and the store never need it
        import urllib3

        self._requests = requests
        self._urllib3_error = urllib3.exceptions.HTTPError
        self._max_redirects = policy.max_redirects
        self._session = requests.Session()
        # Proxies from the environment apply to real servers; tests on 127.0.0.1 turn them off.
        self._session.trust_env = trust_environment
        if ca_bundle is not None:
            self._session.verify = ca_bundle  # trust these certificates only (a test's own, say)
        self._session.headers.update({"User-Agent": policy.user_agent, "Accept-Encoding": ACCEPT_ENCODING,
                                      **policy.extra_headers})

        class Adapter(requests.adapters.HTTPAdapter):
            def init_poolmanager(self, *args, **kwargs) -> None:
                super().init_poolmanager(*args, **kwargs)
                _watch_pools(self.poolmanager)

            def proxy_manager_for(self, proxy, **kwargs):
                manager = super().proxy_manager_for(proxy, **kwargs)
                _watch_pools(manager)
                return manager

        for prefix in ("http://", "https://"):
            self._session.mount(prefix, Adapter())

    def get(self, url: str, *, timeout: float, deadline: float, limit: int,
            headers: Mapping[str, str] | None = None) -> HttpResponse:
        current = url
        with _Watch(deadline) as watch:
            try:
                for _ in range(self._max_redirects + 1):
                    response = self._session.get(current, timeout=timeout, headers=dict(headers or {}),
                                                 stream=True, allow_redirects=False)
                    try:
                        location = response.headers.get("Location")
                        if response.status_code in REDIRECT_STATUSES and location:
                            target = urljoin(current, location.strip())
                            if not _same_origin(current, target):
                                raise ResponseRefused(
                                    f"{current}: HTTP {response.status_code} redirect to {target} refused "
                                    "(only the same scheme, host and port are followed)")
                            current = target
                            continue
                        body = self._body(response, current, limit, watch)
                        return HttpResponse(response.status_code,
                                            {name.lower(): value for name, value in response.headers.items()},
                                            body, current)
                    finally:
                        response.close()
            except (self._requests.RequestException, self._urllib3_error, OSError) as error:
                if name_unresolved(error):
                    raise NameUnresolved(f"{urlsplit(current).hostname or current}: name does not resolve "
                                         f"(offline?)") from error
                if watch.expired:
                    raise AnswerFailed(f"{current}: no whole answer within the {deadline:g} s deadline "
                                      f"({type(error).__name__})") from error
                raise SourceError(f"{current}: {type(error).__name__}: {error}") from error
        raise ResponseRefused(f"{url}: more than {self._max_redirects} redirects: refused")

    @staticmethod
    def _body(response, url: str, limit: int, watch: _Watch) -> bytes:
        """The decoded body, streamed; BodyTooLarge as soon as it passes `limit` bytes."""
        decoder = _Decoder(url, response.headers.get("Content-Encoding", "").strip().lower())
        declared = response.headers.get("Content-Length", "").strip()
        size = _declared_size(declared) if decoder.identity else None
        if size is not None and size > limit:
            raise BodyTooLarge(url, limit, size)  # an honest Content-Length: nothing read
        parts: list[bytes] = []
        total = 0
        for chunk in response.raw.stream(CHUNK_BYTES, decode_content=False):
            if watch.expired:
                raise AnswerFailed(f"{url}: no whole answer within the {watch.seconds:g} s deadline")
            data = decoder.decode(chunk, limit - total)
            total += len(data)
            if total > limit:
                raise BodyTooLarge(url, limit)
            parts.append(data)
        if watch.expired:  # the socket shut under a body that ends with the connection
            raise AnswerFailed(f"{url}: no whole answer within the {watch.seconds:g} s deadline")
        decoder.check_end()
        return b"".join(parts)

    def close(self) -> None:
        self._session.close()


def _retry_after(response: HttpResponse) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class NameUnresolved(ResponseRefused):
    """The host's name does not resolve (offline, or no DNS): said in one short line, not retried
    within the poll (the next poll asks again) rather than as urllib3's text at every attempt."""


def error_causes(error: BaseException) -> Iterator[BaseException]:
    """`error` and what caused it, through requests' and urllib3's wrappers (causes, contexts,
    `reason` and exception arguments), each once, depth first."""
    seen: set[int] = set()
    pending: list[object] = [error]
    while pending:
        item = pending.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        pending += [item.__cause__, item.__context__, getattr(item, "reason", None), *item.args]


def is_name_lookup_failure(error: BaseException) -> bool:
    """This one exception (not its causes) is a failed name lookup (socket.gaierror, urllib3's
    NameResolutionError)."""
    return isinstance(error, socket.gaierror) or type(error).__name__ == "NameResolutionError"


def name_unresolved(error: BaseException) -> bool:
    """Whether `error`, or what caused it through requests' and urllib3's wrappers, is a failed
    name lookup (socket.gaierror, urllib3's NameResolutionError)."""
    return any(is_name_lookup_failure(item) for item in error_causes(error))


def fetch(client: HttpClient, url: str, policy: HttpPolicy, *, limit: int, sleep: Sleeper = time.sleep,
          accept: Callable[[HttpResponse], str | None] | None = None, events: list[str] | None = None,
          rng: random.Random | None = None) -> HttpResponse:
    """GET `url` until it answers 200 with an acceptable body, or raise SourceError.

    `limit` is the byte cap of this kind of answer (its body, decoded); past it the request
    raises BodyTooLarge at once, without retrying. `accept` returns None for a good answer or a
    reason it is not ("an HTML page, not a feed"); a 404 is returned at once (the caller
    decides what a missing page means).
    """
    rng = rng or random.Random()
    last_problem = "no attempt made"
    answered = False  # the last try got an answer (AnswerFailed), not a connection failure
    for attempt in range(policy.attempts):
        try:
            response = client.get(url, timeout=policy.timeout_seconds,
                                  deadline=policy.deadline_seconds, limit=limit)
        except ResponseRefused:
            raise  # the same answer again: not worth a retry
        except SourceError as error:
            last_problem = str(error)
            answered = isinstance(error, AnswerFailed)
            response = None
        if response is not None:
            answered = True
            if response.status == 404:
                return response
            if response.status == 200:
                reason = accept(response) if accept else None
                if reason is None:
                    return response
                last_problem = f"{url}: {reason}"
            elif response.status in RETRY_STATUSES:
                last_problem = f"{url}: HTTP {response.status}"
            else:
                raise AnswerFailed(f"{url}: HTTP {response.status}")
        if attempt + 1 == policy.attempts:
            break
        wait = Backoff(policy.backoff_seconds, policy.backoff_max_seconds, HTTP_JITTER).delay(attempt, rng)
        if response is not None and (retry_after := _retry_after(response)) is not None:
            wait = min(policy.backoff_max_seconds, max(wait, retry_after))
        retry = f"{last_problem}; retrying in {wait:.1f} s (attempt {attempt + 2} of {policy.attempts})"
        if events is not None:
            events.append(retry)
        # logged now, while the wait runs (the daemon shows each retry as it happens, even when the
        # poll then fails and its events are lost); INFO: a command without logging set stays quiet
        event(log, logging.INFO, "retrying", event="fetch.retry", detail=retry, url=url)
        sleep(wait)
    failed = AnswerFailed if answered else SourceError
    raise failed(f"{last_problem} (gave up after {policy.attempts} attempts)")
