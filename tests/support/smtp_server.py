"""A real SMTP server on 127.0.0.1 for tests (aiosmtpd): it keeps every message it accepts.

`SmtpServer().start()` listens on a free port; `server.received` is the list of accepted
envelopes (`mail_from`, `rcpt_tos`, `content` bytes as received); `refuse_recipients` makes
RCPT TO answer 550 for those addresses, as a server that does not relay to them. With
`tls_context` it offers STARTTLS and refuses mail before it; with `credentials` (user, password)
it refuses mail before a login over TLS.
"""
from __future__ import annotations

import ssl
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

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
    def __init__(self, tls_context: ssl.SSLContext | None = None,
                 credentials: tuple[str, str] | None = None) -> None:
        self.received: list[Any] = []
        self.refuse_recipients: set[str] = set()
        self.logins: list[str] = []
        self.port = free_port()
        self._credentials = credentials
        options: dict[str, Any] = {}
        if tls_context is not None:
            options |= {"tls_context": tls_context, "require_starttls": True}
        if credentials is not None:
            options |= {"authenticator": self._authenticate, "auth_required": True, "auth_require_tls": True}
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port, **options)

    def _authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        if isinstance(data, LoginPassword) and self._credentials is not None and (
                data.login.decode(), data.password.decode()) == self._credentials:
            self.logins.append(data.login.decode())
            return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    def start(self) -> SmtpServer:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    def __enter__(self) -> SmtpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
