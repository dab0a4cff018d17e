"""Slack's side of Socket Mode for tests: a WebSocket endpoint on 127.0.0.1 (the `websockets`
library's server) that the test Slack server (fake_slack.py) hands out from
`apps.connections.open`, as Slack hands out `wss://wss-primary.slack.com/link/?ticket=…`.

On a connection with a ticket it issued, it says `hello` as Slack does; `send(type, payload)`
then sends one envelope (`envelope_id`, `type`, `payload`, `accepts_response_payload`,
`retry_attempt`, `retry_reason`) and waits for the app's ack: a JSON message carrying the same
`envelope_id` (and for a slash command, the response `payload`). Every ack is kept in `acks`;
an ack naming no envelope sent, or a second ack of one, is kept in `bad_acks`. A connection
with an unknown or used ticket is closed with 1008 (policy violation), as Slack refuses it.
"""
from __future__ import annotations

import json
import queue
import threading
import uuid
from typing import Any
from urllib.parse import parse_qs, urlparse

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

WAIT_SECONDS = 60  # a bound on waiting for the app, never a measured time: only a hung app reaches it


class SocketModeServer:
    def __init__(self, app_id: str) -> None:
        self.app_id = app_id
        self.acks: list[dict[str, Any]] = []
        self.bad_acks: list[Any] = []
        self.refused_tickets: list[str] = []
        self.handshakes: list[str] = []  # the path of every WebSocket opening handshake, before it is answered
        self._tickets: set[str] = set()
        self._waiting: dict[str, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._connection: ServerConnection | None = None
        self._connected = threading.Event()
        self._server = serve(self._handle, "127.0.0.1", 0, compression=None,
                             process_request=lambda _connection, request: self.handshakes.append(request.path))
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-slack-socket", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.socket.getsockname()[1])

    def connection_url(self) -> str:
        """What `apps.connections.open` answers: a one-time URL on this server."""
        ticket = uuid.uuid4().hex
        with self._lock:
            self._tickets.add(ticket)
        return f"ws://127.0.0.1:{self.port}/link/?ticket={ticket}&app_id={self.app_id}"

    def _handle(self, connection: ServerConnection) -> None:
        request = connection.request
        ticket = (parse_qs(urlparse(request.path if request else "").query).get("ticket") or [""])[0]
        with self._lock:
            known = ticket in self._tickets
            self._tickets.discard(ticket)
        if not known:
            self.refused_tickets.append(ticket)
            connection.close(1008, "invalid ticket")
            return
        connection.send(json.dumps({"type": "hello", "num_connections": 1,
                                    "debug_info": {"host": "applink-test", "build_number": 1,
                                                   "approximate_connection_time": 18060},
                                    "connection_info": {"app_id": self.app_id}}))
        with self._lock:
            self._connection = connection
        self._connected.set()
        try:
            for message in connection:
                self._ack(message)
        except ConnectionClosed:
            pass
        finally:
            with self._lock:
                if self._connection is connection:
                    self._connection = None
                    self._connected.clear()

    def _ack(self, message: str | bytes) -> None:
        try:
            ack = json.loads(message)
            envelope_id = ack["envelope_id"]
        except (ValueError, KeyError, TypeError):
            self.bad_acks.append(message)
            return
        with self._lock:
            waiting = self._waiting.pop(envelope_id, None)
        if waiting is None:
            self.bad_acks.append(ack)
            return
        self.acks.append(ack)
        waiting.put(ack)

    def send(self, kind: str, payload: dict[str, Any], *, envelope_id: str | None = None,
             retry_attempt: int = 0) -> dict[str, Any]:
        """Send one envelope (`interactive`, `slash_commands`) to the connected app; its ack."""
        if not self._connected.wait(WAIT_SECONDS):
            raise AssertionError("no app connected over Socket Mode")
        envelope_id = envelope_id or str(uuid.uuid4())
        waiting: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._waiting[envelope_id] = waiting
            connection = self._connection
        assert connection is not None
        envelope: dict[str, Any] = {"envelope_id": envelope_id, "type": kind, "payload": payload,
                                    "accepts_response_payload": kind != "events_api"}
        if retry_attempt:
            envelope |= {"retry_attempt": retry_attempt, "retry_reason": "timeout"}
        connection.send(json.dumps(envelope))
        try:
            return waiting.get(timeout=WAIT_SECONDS)
        except queue.Empty:
            raise AssertionError(f"the app did not ack envelope {envelope_id}") from None

    def connected(self) -> bool:
        return self._connected.wait(WAIT_SECONDS)

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(WAIT_SECONDS)
