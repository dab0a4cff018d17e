"""Issue 17, part 2: the daemon's log a person reads (one line an event, level, what, the next
step) on a terminal or with --log-format text, JSON lines otherwise; each retry of a fetch is a
line of its own, logged as it happens, even when the poll then fails."""
from __future__ import annotations

import io
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from triagebot import logs
from triagebot.daemon import loop as daemon
from triagebot.daemon.health import DaemonMetrics
from triagebot.http_client.bounds import PollBounds
from triagebot.http_client.protocol import HttpPolicy
from triagebot.store.sqlite import SqliteStore


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture()
def restore_logging():
    root = logging.getLogger("triagebot")
    saved = (root.handlers[:], root.level, root.propagate)
    yield
    root.handlers[:], root.level, root.propagate = saved[0], saved[1], saved[2]


@pytest.fixture()
def unavailable():
    """A 127.0.0.1 server answering every GET with 503."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format, *args):
            pass

        def do_GET(self):
            hits.append(self.path)
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/lkml/", hits
    server.shutdown()
    server.server_close()


def test_auto_format_is_text_on_a_terminal_and_json_elsewhere():
    assert logs.choose_format("auto", _Tty()) == "text"
    assert logs.choose_format("auto", io.StringIO()) == "json"
    assert logs.choose_format("json", _Tty()) == "json"
    assert logs.choose_format("text", io.StringIO()) == "text"


def _failed_poll_log(tmp_path, url: str, log_format: str, stream) -> list[str]:
    logs.configure(stream=stream, log_format=log_format)
    policy = HttpPolicy(attempts=3, backoff_seconds=0.01, backoff_max_seconds=0.02, timeout_seconds=5,
                        deadline_seconds=10)
    settings = SimpleNamespace(http=policy, bounds=PollBounds(), sources=[SimpleNamespace(url=url, poll_minutes=15)])
    with SqliteStore(tmp_path / "d.db") as store:
        daemon.poll_due_sources(settings, store, daemon.DaemonState(), DaemonMetrics(), jobs=1)
    return stream.getvalue().splitlines()


def test_each_retry_is_a_json_line_and_the_failed_poll_names_the_next_step(tmp_path, unavailable,
                                                                           restore_logging):
    url, hits = unavailable
    lines = [json.loads(line) for line in _failed_poll_log(tmp_path, url, "auto", io.StringIO())]
    retries = [line for line in lines if line.get("event") == "fetch.retry"]
    assert len(hits) == 3 and len(retries) == 2  # three attempts: two waits, each its own line
    assert "HTTP 503; retrying in" in retries[0]["detail"] and "(attempt 2 of 3)" in retries[0]["detail"]
    [failed] = [line for line in lines if line.get("event") == "poll.failed"]
    assert "gave up after 3 attempts" in failed["error"]
    assert failed["next"].startswith("next poll at ") and "triage ingest FILE" in failed["next"]
    assert lines.index(retries[-1]) < lines.index(failed)


def test_text_lines_say_level_what_and_next_step(tmp_path, unavailable, restore_logging):
    url, _ = unavailable
    lines = _failed_poll_log(tmp_path, url, "auto", _Tty())
    assert len(lines) == 3 and not any(line.startswith("{") for line in lines)
    assert [line.split()[1] for line in lines] == ["INFO", "INFO", "WARNING"]
    assert " retrying: " in lines[0] and "(attempt 2 of 3)" in lines[0]
    assert " poll failed: " + url in lines[2] and "gave up after 3 attempts" in lines[2]
    assert "-> next poll at " in lines[2] and "(every 15 min)" in lines[2] and "triage ingest FILE" in lines[2]
