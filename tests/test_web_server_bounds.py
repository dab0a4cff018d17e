"""The HTTP side is bounded (issue 34, finding 3), against a real uvicorn on 127.0.0.1 spoken to
over raw sockets, as an attacker would.

The Slack endpoint read the whole body before its 64 KiB check (a 1 GiB POST took the daemon to
2.26 GB, chunked uploads too), and a connection that never sent a request was never closed: 300
idle ones exhausted the daemon's file descriptors, /healthz timed out and every poll failed.
Here: an oversized Content-Length is answered 413 before any of the body is sent; a chunked body
is cut at the limit and nothing more is read; a connection that never completes its request head
(idle, or trickling header lines) is closed, and so is an idle keep-alive one; connections past
the cap close the idle ones first, so /healthz answers with any number of idle connections
open, and are answered 503 when every connection is in a request. Last, the daemon itself, its
fd limit at 256, keeps polling and answering /healthz with 300 idle connections held against it.
A client that reads none of a large answer is dropped at the write deadline (however the answer
ends), and the daemon raises its soft fd limit towards the hard one before sizing the cap.
No assertion is on a duration: each waits for a condition, with a generous guard against hangs.
"""
from __future__ import annotations

import json
import resource
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.daemon_run import daemon_env, free_port, lab_rules, log_events, stop_daemon, wait_for
from tests.support.fake_slack import FakeSlack
from tests.support.public_inbox import make_message, require_public_inbox, start_public_inbox
from tests.support.slack_world import CHANNEL, ROUTING, SECRET, TOKEN
from triagebot.rules.routing import parse_routing
from triagebot.store.sqlite import SqliteStore
from triagebot.web.app import Health, build_app
from triagebot.web.bounds import MAX_BODY, HttpLimits, connection_cap
from triagebot.web.server import WebServer
from triagebot.web.slack_app import SLACK_PATH, SlackSettings

GUARD = 120.0  # seconds: far past every deadline here, only a hang trips it
GIB = 1 << 30


def status_of(answer: bytes) -> int | None:
    line = answer.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) > 1 and line[0].startswith(b"HTTP/") else None


def read_answer(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or GUARD passes)."""
    connection.settimeout(GUARD)
    answer = b""
    try:
        while chunk := connection.recv(65536):
            answer += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return answer


def closed_by_server(connection: socket.socket) -> bool:
    """Wait (up to GUARD) until the server closes `connection`: True when it did."""
    connection.settimeout(GUARD)
    try:
        return connection.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def get(port: int, path: str = "/healthz") -> tuple[int | None, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=GUARD) as connection:
        connection.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        answer = read_answer(connection)
    return status_of(answer), answer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[WebServer]:
    """The one app (health answers and Slack's endpoint) on uvicorn with short deadlines and a cap
    of 20 connections."""
    database = tmp_path / "web.db"
    SqliteStore(database).close()
    routing = parse_routing(ROUTING, "routing.toml")
    health = Health(healthz=lambda: (200, b'{"status": "ok"}\n', "application/json"),
                    metrics=lambda: (200, b"triage_up 1\n", "text/plain"))
    limits = HttpLimits(max_connections=20, head_seconds=2.0, keep_alive_seconds=1, body_seconds=60.0)
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}) as slack:
        settings = SlackSettings(signing_secret=SECRET, token=TOKEN, open_store=lambda: SqliteStore(database),
                                 permissions=routing.permissions, api_url=slack.base_url)
        running = WebServer(build_app(health=health, slack=settings), limits=limits).start()
        try:
            yield running
        finally:
            running.stop()


def slack_head(length: bytes) -> bytes:
    return (b"POST " + SLACK_PATH.encode() + b" HTTP/1.1\r\nHost: x\r\nX-Slack-Request-Timestamp: "
            + str(int(time.time())).encode() + b"\r\nX-Slack-Signature: v0=00\r\n" + length + b"\r\n")


def test_an_oversized_content_length_is_413_before_the_body_is_sent(server: WebServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=GUARD) as connection:
        connection.sendall(slack_head(b"Content-Length: %d\r\n" % GIB))  # the head only: no byte of the body
        answer = read_answer(connection)
    assert status_of(answer) == 413, answer[:300]
    assert f"a body of {GIB} bytes (Content-Length; at most {MAX_BODY}): not read".encode() in answer
    assert b"connection: close" in answer.lower()
    assert get(server.port)[0] == 200


def test_a_chunked_body_is_cut_at_the_limit_and_no_more_is_read(server: WebServer) -> None:
    chunk = b"a" * 8192
    sent = 0
    with socket.create_connection(("127.0.0.1", server.port), timeout=GUARD) as connection:
        connection.sendall(slack_head(b"Transfer-Encoding: chunked\r\n"))
        try:
            while sent < GIB:  # as an uploader that never stops would
                connection.sendall(b"2000\r\n" + chunk + b"\r\n")
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed the connection: it reads no more
        answer = read_answer(connection)
    assert sent < GIB, "the whole gigabyte was taken: the body was never cut"
    assert status_of(answer) in (413, None), answer[:300]  # the 413 may be lost to the reset on a busy host
    if answer:
        assert f"a body over {MAX_BODY} bytes: cut there".encode() in answer
    assert get(server.port)[0] == 200


def test_a_chunked_body_past_the_limit_answers_413(server: WebServer) -> None:
    body = b"".join(b"2000\r\n" + b"a" * 8192 + b"\r\n" for _ in range(MAX_BODY // 8192 + 1)) + b"0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=GUARD) as connection:
        connection.sendall(slack_head(b"Transfer-Encoding: chunked\r\n") + body)  # fits the socket buffers
        answer = read_answer(connection)
    assert status_of(answer) == 413 and f"a body over {MAX_BODY} bytes".encode() in answer


def test_a_connection_that_sends_nothing_is_closed(server: WebServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=GUARD) as idle:
        assert closed_by_server(idle)


def test_a_request_head_trickled_a_line_at_a_time_is_cut_off(server: WebServer) -> None:
    lines = 0
    with socket.create_connection(("127.0.0.1", server.port), timeout=GUARD) as slow:
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        deadline = time.monotonic() + GUARD
        try:
            while time.monotonic() < deadline:
                slow.sendall(b"X-Slow-%d: y\r\n" % lines)  # never the blank line that ends the head
                lines += 1
                slow.settimeout(0.2)
                try:
                    if slow.recv(1) == b"":
                        break
                except TimeoutError:
                    continue
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert time.monotonic() < deadline, "a trickled head held the connection open"


def test_an_idle_keep_alive_connection_is_closed_after_its_answer(server: WebServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=GUARD) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # keep-alive: HTTP/1.1's default
        answer = read_answer(connection)  # returns once the server closes the idle connection
    assert status_of(answer) == 200 and answer.count(b"HTTP/1.1 ") == 1


def test_idle_connections_past_the_cap_make_room_and_healthz_answers(server: WebServer) -> None:
    cap = server.limits.max_connections
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=GUARD) for _ in range(cap * 3)]
    try:
        for _ in range(5):
            assert get(server.port)[0] == 200  # each time an idle connection makes room
        still_open = 0
        for connection in idle:
            connection.setblocking(False)
            try:
                still_open += connection.recv(1) != b""
            except BlockingIOError:
                still_open += 1  # nothing to read and not closed
            except ConnectionResetError:
                pass
        assert still_open <= cap, f"{still_open} idle connections held, over the cap of {cap}"
    finally:
        for connection in idle:
            connection.close()


def test_past_the_cap_with_every_connection_in_a_request_a_new_one_is_answered_503(server: WebServer) -> None:
    cap = server.limits.max_connections
    busy = []
    try:
        for _ in range(cap):  # each in a request: its head read, its body awaited (60 s allowed)
            connection = socket.create_connection(("127.0.0.1", server.port), timeout=GUARD)
            connection.sendall(slack_head(b"Content-Length: 100\r\nExpect: 100-continue\r\n"))
            assert connection.recv(100).startswith(b"HTTP/1.1 100 ")  # the app asked for the body: in a request
            busy.append(connection)
        wait_for(lambda: get(server.port)[0] == 503, GUARD, "a connection past the cap to be refused")
        status, answer = get(server.port)
        assert status == 503 and b"too many connections at once" in answer
    finally:
        for connection in busy:
            connection.close()
    wait_for(lambda: get(server.port)[0] == 200, GUARD, "/healthz once the busy connections closed")


def test_the_connection_cap_keeps_file_descriptors_for_the_daemon() -> None:
    assert connection_cap(1024) == 512  # systemd's default soft limit: the cap's ceiling
    assert connection_cap(256) == 96  # the finding's limit: 128 kept for the store, locks and polls, 32 for a burst
    assert connection_cap(100) == 8  # a tiny limit still lets /healthz through
    assert connection_cap(None) == 512
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert HttpLimits.for_this_process().max_connections == connection_cap(
        None if soft == resource.RLIM_INFINITY else soft)


def test_the_daemon_polls_and_answers_with_300_idle_connections_under_a_256_fd_limit(tmp_path: Path) -> None:
    require_public_inbox()
    first = make_message("Re: [PATCH] ext4: tidy a helper", "Looks good.\n", msgid="first@example.org")
    later = make_message("Re: [PATCH] ext4: tidy a helper", "Still good.\n", msgid="later@example.org")
    with start_public_inbox(tmp_path / "lore", "linux-kernel", [first]) as inbox:
        rules = lab_rules(tmp_path, inbox.list_url, poll_minutes=0.1)  # a poll every 6 s
        port = free_port()
        log = tmp_path / "daemon.log"

        def limited() -> None:  # the finding's limit, in the daemon's process only
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

        with open(log, "ab") as output:
            daemon = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "daemon", "--db", str(tmp_path / "d.db"),
                                       "--rules", str(rules), "--tick", "0.3", "--health-port", str(port)],
                                      cwd=PROJECT, env=daemon_env(tmp_path, None), stdin=subprocess.DEVNULL,
                                      stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                                      preexec_fn=limited)
        held: list[socket.socket] = []
        try:
            wait_for(lambda: any(item.get("event") == "poll.done" for item in log_events(log)), GUARD,
                     "the first poll", daemon, log)
            for _ in range(300):
                try:
                    held.append(socket.create_connection(("127.0.0.1", port), timeout=GUARD))
                except OSError:
                    break
            inbox.add_message(later)

            def stored() -> bool:
                with sqlite3.connect(tmp_path / "d.db", timeout=30) as connection:
                    return bool(connection.execute("SELECT 1 FROM messages WHERE message_id = ?",
                                                   ("later@example.org",)).fetchall())

            wait_for(stored, GUARD * 2, "the message posted meanwhile to be polled and stored", daemon, log)
            status, answer = get(port)
            assert status in (200, 503) and json.loads(answer.split(b"\r\n\r\n", 1)[1])["status"] in ("ok",
                                                                                                       "degraded")
        finally:
            for connection in held:
                connection.close()
            assert stop_daemon(daemon) == 0
    text = log.read_text(errors="replace")
    assert "Too many open files" not in text
    assert any(item.get("event") == "health.listening" and item.get("max_connections") == 96
               for item in log_events(log))


# --- an answer nobody reads ------------------------------------------------------------------------

ANSWER_CHUNK = b"x" * 65536
ANSWER_CHUNKS = 1024  # 64 MiB: far past every buffer between the app and a client that reads nothing


def _big_answer_server(write_seconds: float) -> tuple[WebServer, threading.Event]:
    """A started server whose one route streams 64 MiB, with the write deadline given, and an
    event set when the app has sent its last chunk."""
    finished = threading.Event()

    async def app(scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(ANSWER_CHUNK) * ANSWER_CHUNKS).encode())]})
        for number in range(ANSWER_CHUNKS):
            await send({"type": "http.response.body", "body": ANSWER_CHUNK, "more_body": number < ANSWER_CHUNKS - 1})
        finished.set()

    return WebServer(app, limits=HttpLimits(max_connections=20, write_seconds=write_seconds)).start(), finished


def _asking_and_not_reading(port: int, request: bytes) -> socket.socket:
    connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    connection.settimeout(GUARD)
    connection.connect(("127.0.0.1", port))
    connection.sendall(request)
    return connection


@pytest.mark.parametrize("request_bytes", [b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n",
                                           b"GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"],
                         ids=["keep-alive", "connection-close"])
def test_a_client_that_reads_none_of_its_answer_is_dropped(request_bytes: bytes) -> None:
    server, finished = _big_answer_server(write_seconds=0.5)
    try:
        with _asking_and_not_reading(server.port, request_bytes) as connection:
            # without the deadline the app waits on a full buffer for ever; with it the connection
            # is aborted, uvicorn marks the request disconnected and the rest goes nowhere
            assert finished.wait(GUARD), "a client reading nothing held its answer (and connection) open"
            received = len(read_answer(connection))
    finally:
        server.stop()
    assert received < len(ANSWER_CHUNK) * ANSWER_CHUNKS


def test_a_client_that_reads_gets_the_whole_large_answer() -> None:
    # the deadline is on a buffer that stays full, not on the whole answer: a reader is never cut
    server, finished = _big_answer_server(write_seconds=GUARD)
    try:
        answer = get(server.port, "/big")[1]
    finally:
        server.stop()
    assert finished.is_set() and answer.endswith(ANSWER_CHUNK)
    assert len(answer.split(b"\r\n\r\n", 1)[1]) == len(ANSWER_CHUNK) * ANSWER_CHUNKS


def test_the_daemon_raises_its_soft_fd_limit_within_the_hard_one() -> None:
    # in a child process, so this one's limit is untouched: soft 256 under a hard limit of 2048
    # rises to 2048 (the target is 4096); under a hard limit of 256 it stays 256
    script = ("import resource, sys\n"
              "from triagebot.web.bounds import raise_fd_soft_limit\n"
              "resource.setrlimit(resource.RLIMIT_NOFILE, (256, int(sys.argv[1])))\n"
              "print(raise_fd_soft_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n")
    for hard, expected in ((2048, "2048 2048"), (256, "256 256"), (1 << 20, "4096 4096")):
        done = subprocess.run([sys.executable, "-c", script, str(hard)], cwd=PROJECT, capture_output=True,
                              text=True, check=False)
        if hard > resource.getrlimit(resource.RLIMIT_NOFILE)[1] != resource.RLIM_INFINITY:
            continue  # this machine's own hard limit is lower: a child cannot raise its hard limit
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == expected.split()
