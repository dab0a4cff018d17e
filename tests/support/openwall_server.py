"""A small lists.openwall.net look-alike on 127.0.0.1 for integration tests (http.server, no mocks).

It serves a directory tree shaped like the site (``fixtures/openwall-site/site``): the URL path
``/linux-ext4/2024/12/01/`` is the file ``linux-ext4/2024/12/01/index.html`` and
``/linux-ext4/2024/12/01/3`` is ``linux-ext4/2024/12/01/3.html``, as ``text/html; charset=utf-8``;
anything else is a 404 (as the site answers for a day without mail).

Usage::

    with OpenwallServer(FIXTURES / "openwall-site" / "site") as server:
        server.list_url("linux-ext4")                  # http://127.0.0.1:PORT/linux-ext4/
        server.add_tree(FIXTURES / "openwall-site" / "later")   # pages that appear later
        server.add_page("/linux-ext4/2024/12/04/", b"<html>…")  # or one page
        server.fail("/linux-ext4/2024/12/01/", status=500, times=2)
        server.answer("/linux-ext4/2024/12/02/", body=challenge_html, times=1)  # 200, HTML
        server.slow("/linux-ext4/2024/12/01/2", seconds=2.0)    # past the client's timeout
        server.stop(); server.start()                  # down and back up on the same port
        server.requests                                # (path, headers) of every request

A misbehaviour applies to the next ``times`` requests of its path (``None``: any path), in the
order they were set up; the requests are recorded all the same. A slow answer sleeps in its
handler thread and then answers normally (the client has usually given up by then).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

HTML = "text/html; charset=utf-8"
NOT_FOUND_PAGE = (b"<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01 Transitional//EN\">\n"
                  b"<html><head><title>404 Not Found</title></head>\n<body><h1>Not Found</h1>"
                  b"<p>The requested URL was not found on this server.</p></body></html>\n")


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # as sent, names as spelled by the client


@dataclass
class _Misbehaviour:
    path: str | None
    times: int
    status: int | None  # None: the normal answer after `delay`
    body: bytes
    content_type: str
    delay: float


class OpenwallServer:
    """ThreadingHTTPServer in a daemon thread, serving `root` plus pages added at run time."""

    def __init__(self, root: Path, *, host: str = "127.0.0.1") -> None:
        self.root = Path(root).resolve()
        self.host = host
        self.port: int | None = None  # chosen by the OS on the first start, kept across restarts
        self.requests: list[RecordedRequest] = []
        self._pages: dict[str, tuple[bytes, str]] = {}
        self._misbehaviours: list[_Misbehaviour] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> OpenwallServer:
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer((self.host, self.port or 0), _handler_for(self))
        httpd.daemon_threads = True  # slow answers still sleeping must not hold up stop()
        self.port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"openwall-server:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering; connections to the port are refused until start()."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        assert self._thread is not None
        self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> OpenwallServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what is served -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the server has not been started")
        return f"http://{self.host}:{self.port}"

    def list_url(self, name: str) -> str:
        return f"{self.base_url}/{name}/"

    def add_page(self, path: str, body: bytes | str, content_type: str = HTML) -> None:
        """Serve `body` at `path` from now on (over a file of the tree, if any)."""
        data = body.encode("utf-8") if isinstance(body, str) else body
        with self._lock:
            self._pages[path] = (data, content_type)

    def add_tree(self, directory: Path) -> list[str]:
        """Serve every file of a tree laid out like `root` (pages appearing later); their paths."""
        directory = Path(directory)
        paths = []
        for file in sorted(directory.rglob("*.html")):
            relative = file.relative_to(directory).as_posix()
            if file.name == "index.html":
                path = "/" + relative[: -len("index.html")]
            else:
                path = "/" + relative[: -len(".html")]
            self.add_page(path, file.read_bytes())
            paths.append(path)
        return paths

    def page(self, path: str) -> tuple[int, bytes, str]:
        """(status, body, content type) the server answers for `path` when behaving."""
        with self._lock:
            if path in self._pages:
                body, content_type = self._pages[path]
                return 200, body, content_type
        file = self._file_for(path)
        if file is not None:
            return 200, file.read_bytes(), HTML
        return 404, NOT_FOUND_PAGE, HTML

    def _file_for(self, path: str) -> Path | None:
        relative = path.lstrip("/")
        name = relative + "index.html" if path.endswith("/") else relative + ".html"
        candidate = self.root / name
        try:
            resolved = candidate.resolve()
        except OSError:
            return None
        if self.root not in resolved.parents or not resolved.is_file():
            return None  # outside the tree (../) or absent
        return resolved

    # -- misbehaviour -----------------------------------------------------------------------------
    def answer(self, path: str | None, *, times: int = 1, status: int = 200,
               body: bytes | str = b"", content_type: str = HTML, delay: float = 0.0) -> None:
        """Answer the next `times` requests of `path` (None: any) with this instead of the page."""
        data = body.encode("utf-8") if isinstance(body, str) else body
        with self._lock:
            self._misbehaviours.append(
                _Misbehaviour(path, times, status, data, content_type, delay))

    def fail(self, path: str | None, *, status: int = 500, times: int = 1) -> None:
        body = f"<html><body><h1>{status}</h1><p>Something went wrong.</p></body></html>\n"
        self.answer(path, times=times, status=status, body=body)

    def slow(self, path: str | None, *, seconds: float, times: int = 1) -> None:
        """Answer normally, but only after `seconds` (set it past the client's timeout)."""
        with self._lock:
            self._misbehaviours.append(_Misbehaviour(path, times, None, b"", HTML, seconds))

    def _take_misbehaviour(self, path: str) -> _Misbehaviour | None:
        with self._lock:
            for item in self._misbehaviours:
                if item.times > 0 and item.path in (None, path):
                    item.times -= 1
                    return item
        return None

    def pending_misbehaviours(self) -> int:
        with self._lock:
            return sum(item.times for item in self._misbehaviours)

    # -- what was asked ---------------------------------------------------------------------------
    def paths(self) -> list[str]:
        with self._lock:
            return [request.path for request in self.requests]

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def _record(self, path: str, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(RecordedRequest(path, headers))


def _handler_for(server: OpenwallServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: stop() leaves nothing open
        server_version = "blists-lookalike/1"

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            path = unquote(urlsplit(self.path).path)
            server._record(path, dict(self.headers.items()))
            misbehaviour = server._take_misbehaviour(path)
            if misbehaviour is not None and misbehaviour.delay:
                time.sleep(misbehaviour.delay)
            if misbehaviour is not None and misbehaviour.status is not None:
                status, body = misbehaviour.status, misbehaviour.body
                content_type = misbehaviour.content_type
            else:
                status, body, content_type = server.page(path)
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a slow answer past its timeout)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # requests are recorded in server.requests instead of logged

    return Handler
