"""A misbehaving HTTP server on 127.0.0.1 for tests of the transport's bounds (no mocks).

Each path is answered by a function of the request handler, so a test says exactly how the
server misbehaves: a gzip bomb, a body that never ends, one byte every few tenths of a second,
a redirect elsewhere. Every request is recorded (path, in order) and every handler's bytes
a `streamed` answer counts what it wrote, so a test can say "the canary was never hit" or
"the server got to send only so much before the client hung up".

    with HostileServer() as server:
        server.route("/list/new.atom", answer(feed_bytes, "application/atom+xml"))
        server.route("/big", endless(b"x"))            # no Content-Length, never ends
        server.route(None, answer(b"...", status=404))  # every other path
        server.url("/list/")                           # http://127.0.0.1:PORT/list/
        server.hits                                    # ["/list/new.atom", ...]

Answers are HTTP/1.0 (one request per connection, the body ends with the connection unless a
Content-Length says otherwise). A client that hangs up makes the handler stop quietly.
"""
from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

Handler = Callable[[BaseHTTPRequestHandler], None]
MIB = 1 << 20


class HostileServer:
    """`tls`: (certificate file, key file) to answer HTTPS instead (see `self_signed`)."""

    def __init__(self, tls: tuple[Path, Path] | None = None) -> None:
        self.hits: list[str] = []
        self._routes: dict[str | None, Handler] = {}
        self._lock = threading.Lock()
        server = self

        class Request(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                with server._lock:
                    server.hits.append(path)
                    handler = server._routes.get(path, server._routes.get(None))
                if handler is None:
                    handler = answer(b"not here\n", "text/plain", status=404)
                try:
                    handler(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client hung up: what the bounds are for

            def log_message(self, *args: object) -> None:
                pass

        class Quiet(ThreadingHTTPServer):
            def handle_error(self, request, client_address) -> None:
                pass  # a client hanging up mid-answer (over TLS: an SSL EOF) is the point

        self._httpd = Quiet(("127.0.0.1", 0), Request)
        self._httpd.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    def url(self, path: str = "/") -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def route(self, path: str | None, handler: Handler) -> None:
        """Answer `path` (None: any path without a route of its own) with `handler`."""
        with self._lock:
            self._routes[path] = handler

def _head(request: BaseHTTPRequestHandler, status: int, headers: dict[str, str]) -> None:
    request.send_response(status)
    for name, value in headers.items():
        request.send_header(name, value)
    request.end_headers()
    request.wfile.flush()


def _write(request: BaseHTTPRequestHandler, chunks: Iterable[bytes], counter: list[int]) -> None:
    for chunk in chunks:
        request.wfile.write(chunk)
        counter[0] += len(chunk)


def answer(body: bytes, content_type: str = "text/plain", *, status: int = 200,
           headers: dict[str, str] | None = None) -> Handler:
    """A plain answer with an honest Content-Length."""
    def handle(request: BaseHTTPRequestHandler) -> None:
        _head(request, status, {"Content-Type": content_type, "Content-Length": str(len(body)),
                                **(headers or {})})
        request.wfile.write(body)
    return handle


def streamed(chunks: Callable[[], Iterator[bytes]], content_type: str = "text/plain", *,
             headers: dict[str, str] | None = None, sent: list[int] | None = None) -> Handler:
    """A 200 whose body is `chunks()` as written, headers as given (no Content-Length unless
    given: the body ends with the connection). `sent[0]` counts the body bytes written."""
    counter = sent if sent is not None else [0]

    def handle(request: BaseHTTPRequestHandler) -> None:
        _head(request, 200, {"Content-Type": content_type, **(headers or {})})
        _write(request, chunks(), counter)
    return handle


def zeros(total: int, chunk: int = MIB) -> Callable[[], Iterator[bytes]]:
    """`total` bytes of b"0" (the digit: text), `chunk` at a time."""
    def chunks() -> Iterator[bytes]:
        block = b"0" * chunk
        left = total
        while left > 0:
            yield block[:left]
            left -= len(block)
    return chunks


def gzip_bomb(decoded: int, *, block: int = MIB) -> Callable[[], Iterator[bytes]]:
    """A gzip stream that unpacks to `decoded` bytes of b"0", made without unpacking anything:
    one block compressed after a full flush is independent of what came before, so it is
    repeated. About 1 KiB of gzip per MiB unpacked (6 GB unpacked: about 6 MB sent). The
    trailer's CRC is not computed: no bounded client gets that far."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    header = compressor.compress(b"") + compressor.flush(zlib.Z_NO_FLUSH)
    first = compressor.compress(b"0" * block) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeat = compressor.compress(b"0" * block) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush(zlib.Z_FINISH)

    def chunks() -> Iterator[bytes]:
        yield header + first
        for _ in range(decoded // block - 1):
            yield repeat
        yield end
    return chunks


def gzip_bomb_size(decoded: int, *, block: int = MIB) -> int:
    return sum(len(chunk) for chunk in gzip_bomb(decoded, block=block)())


def dribble(body: bytes, *, every: float, content_type: str = "text/plain",
            headers_too: bool = False) -> Handler:
    """One byte every `every` seconds: of the body (headers sent at once, with an honest
    Content-Length), or from the status line on (`headers_too`)."""
    def handle(request: BaseHTTPRequestHandler) -> None:
        head = (f"HTTP/1.0 200 OK\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        if not headers_too:
            request.wfile.write(head)
            request.wfile.flush()
            head = b""
        for byte in head + body:
            request.wfile.write(bytes([byte]))
            request.wfile.flush()
            time.sleep(every)
    return handle


def redirect(location: str, status: int = 302) -> Handler:
    def handle(request: BaseHTTPRequestHandler) -> None:
        _head(request, status, {"Location": location, "Content-Length": "0"})
    return handle


def self_signed(directory: Path) -> tuple[Path, Path] | None:
    """A certificate for 127.0.0.1 and its key, made by the openssl command; None without it."""
    if shutil.which("openssl") is None:
        return None
    certificate, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(certificate)],
                   check=True, capture_output=True, timeout=60)
    return certificate, key


def within_guard(seconds: float, function: Callable, *args: object, **kwargs: object) -> object:
    """`function(*args, **kwargs)` in a thread: its result or exception, or an AssertionError
    when it is still running after `seconds` (a hang guard, never a timing assertion)."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - handed back to the caller below
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: hung"
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]
