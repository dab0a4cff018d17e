"""A public-inbox look-alike on 127.0.0.1 that misbehaves on purpose (issue 21's shapes).

`HostileLore(behaviour)` serves `/list/new.atom`, `/list/?q=...` (search) and
`/list/<msgid>/t.mbox.gz` and `/raw`; what each answers is decided by the `Behaviour` given,
whose methods a test overrides. Every request path is recorded in `requests`.
"""
from __future__ import annotations

import gzip
import threading
import urllib.parse
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def message(message_id: str, subject: str = "[PATCH] mm: tidy a helper", body: str = "Looks fine.\n",
            date: datetime | None = None) -> bytes:
    when = format_datetime(date or datetime(2026, 1, 1, tzinfo=UTC))
    return (f"From: Some One <someone@example.org>\nTo: list@example.org\nSubject: {subject}\n"
            f"Date: {when}\nMessage-ID: <{message_id}>\nReceived: from x by y; {when}\n\n{body}").encode()


def mboxrd(messages: list[bytes]) -> bytes:
    return b"".join(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + raw.rstrip(b"\n") + b"\n\n" for raw in messages)


class Behaviour:
    """What the server answers; override the parts a test needs. `base` is the list URL."""

    base = ""

    def feed_entries(self, request: int) -> list[tuple[str, str | None]]:
        """(Message-ID, link or None for the usual one) of the feed's entries, newest first."""
        return []

    def feed_answer(self, request: int) -> tuple[int, bytes] | None:
        """(status, body) instead of the feed of `feed_entries`; None: that feed."""
        return None

    def search(self, query: str, offset: int, request: int) -> list[str] | None:
        """Message-IDs of one page of search results; None: no results (404)."""
        return None

    def thread(self, message_id: str, kind: str) -> tuple[int, bytes] | None:
        """(status, body) for t.mbox.gz or raw; None: the message itself (gzipped for t.mbox.gz)."""
        return None

    def trickle(self, message_id: str, kind: str) -> bool:
        """True: answer 200 and then send a byte every half second, never ending."""
        return False


def entry(base: str, message_id: str, link: str | None) -> str:
    href = link if link is not None else base + urllib.parse.quote(message_id, safe="!$&'()*+,;=:@") + "/"
    return (f"<entry><author><name>x</name></author><title>{message_id}</title>"
            f"<updated>2026-01-01T00:00:00Z</updated><link href=\"{href}\"/>"
            f"<id>urn:uuid:{urllib.parse.quote(message_id)}</id></entry>")


def feed(base: str, entries: list[tuple[str, str | None]]) -> bytes:
    return ('<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
            "<title>list</title>" + "".join(entry(base, mid, link) for mid, link in entries)
            + "</feed>").encode()


class HostileLore:
    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.requests: list[str] = []
        self.counts = {"feed": 0, "search": 0}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def send(self, status: int, body: bytes, kind: str = "application/octet-stream") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                try:
                    outer.answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.list_url = f"http://127.0.0.1:{self.server.server_address[1]}/list/"
        behaviour.base = self.list_url
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def count(self, what: str) -> int:
        with self.lock:
            self.counts[what] += 1
            return self.counts[what]

    def answer(self, handler) -> None:
        with self.lock:
            self.requests.append(handler.path)
        parts = urllib.parse.urlsplit(handler.path)
        query = urllib.parse.parse_qs(parts.query)
        if parts.path == "/list/new.atom":
            request = self.count("feed")
            instead = self.behaviour.feed_answer(request)
            if instead is not None:
                return handler.send(*instead)
            body = feed(self.list_url, self.behaviour.feed_entries(request))
            return handler.send(200, body, "application/atom+xml")
        if parts.path == "/list/" and "q" in query:
            offset = -int(query.get("o", ["-1"])[0]) - 1
            ids = self.behaviour.search(query["q"][0], offset, self.count("search"))
            if ids is None:
                return handler.send(404, b"<html>[No results found]</html>", "text/html")
            return handler.send(200, feed(self.list_url, [(mid, None) for mid in ids]), "application/atom+xml")
        path = urllib.parse.unquote(parts.path)
        for kind in ("t.mbox.gz", "raw"):
            suffix = "/" + kind
            if path.startswith("/list/") and path.endswith(suffix):
                message_id = path[len("/list/"):-len(suffix)]
                if self.behaviour.trickle(message_id, kind):
                    handler.send_response(200)
                    handler.send_header("Content-Type", "application/gzip")
                    handler.end_headers()
                    handler.wfile.write(b"\x1f\x8b")
                    while not self.stopping.wait(0.5):
                        handler.wfile.write(b"\0")
                        handler.wfile.flush()
                    return None
                answer = self.behaviour.thread(message_id, kind)
                if answer is None:
                    raw = message(message_id)
                    answer = (200, gzip.compress(mboxrd([raw])) if kind == "t.mbox.gz" else raw)
                return handler.send(*answer)
        return handler.send(404, b"not found", "text/html")

    def paths(self, part: str) -> list[str]:
        with self.lock:
            return [path for path in self.requests if part in path]

    def __enter__(self) -> HostileLore:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
