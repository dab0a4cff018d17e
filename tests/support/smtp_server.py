"""A real SMTP server on 127.0.0.1 for tests (aiosmtpd): it keeps every message it accepts.

`SmtpServer().start()` listens on a free port; `server.received` is the list of accepted
envelopes (`mail_from`, `rcpt_tos`, `content` bytes as received); `refuse_recipients` makes
RCPT TO answer 550 for those addresses, as a server that does not relay to them.
"""
from __future__ import annotations

from typing import Any

from aiosmtpd.controller import Controller

from tests.support.daemon_run import free_port


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self._server = server

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: list) -> str:
        if address.lower() in self._server.refuse_recipients:
            return "550 5.7.1 relaying denied"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self._server.received.append(envelope)
        return "250 Message accepted for delivery"


class SmtpServer:
    def __init__(self) -> None:
        self.received: list[Any] = []
        self.refuse_recipients: set[str] = set()
        self.port = free_port()
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port)

    def start(self) -> SmtpServer:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    def __enter__(self) -> SmtpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
