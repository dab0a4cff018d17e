"""Web stage: the ASGI app served by uvicorn, on a thread beside the daemon or in the foreground.

The listening socket is bound here, before uvicorn starts, so a port that is taken fails at
once with the OSError (the daemon turns it into a one-line error) and port 0 gets a free port
whose number is known (`.port`) before the first request. uvicorn runs with the bounds of
bounds.py (`HttpLimits`: head and keep-alive deadlines, the connection cap under the fd limit,
bodies bounded, few worker threads), on its h11 protocol (the one those bounds are written for)
and without WebSocket upgrades (nothing here speaks WebSocket).
"""
from __future__ import annotations

import errno
import socket
import threading
from typing import Any

import uvicorn

from triagebot.web.bounds import ACCEPT_BATCH, Bounded, HttpLimits, bounded_protocol


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (IPv4 or IPv6, as the address is written)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # accepted connections inherit it: a response's head and body go out at once, instead of
        # the body waiting for the client's delayed ACK (40 ms a request on keep-alive connections)
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        listener.bind((host, port))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    listener.set_inheritable(True)
    return listener


def cannot_listen(error: OSError, address: str, port: int | str, *, address_option: str = "--address",
                  port_option: str = "--port") -> str:
    """Why a server cannot listen, naming the option at fault: an address that is no address
    (`0.0.0.0.0`: the resolver knows no such name) is the address's fault, not the port's; a port
    taken or not ours to bind is the port's."""
    if isinstance(error, socket.gaierror) or (error.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)):
        return (f"{address_option} {address}: not an address this machine can listen on "
                f"({error.strerror or error})")
    return f"{port_option} {port}: cannot listen on {address}:{port}: {error.strerror or error}"


class WebServer:
    """uvicorn serving `app` on host:port (0: any free port; see `.port`) within `limits`
    (default: bounds.py's, the connection cap sized under this process's fd limit)."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, limits: HttpLimits | None = None) -> None:
        self.host = host
        self.limits = limits if limits is not None else HttpLimits.for_this_process()
        self.socket = bind(host, port)
        self.port = self.socket.getsockname()[1]
        # no access log (the daemon's own log says enough), uvicorn's warnings through the logging
        # the process set up (log_config None: the daemon's JSON lines), no lifespan (no app state).
        # limit_concurrency one past the cap: the protocol keeps the connections at the cap (closing
        # idle ones first), so uvicorn's 503 comes only when every connection is in a request
        config = uvicorn.Config(Bounded(app, self.limits), log_level="warning", log_config=None, access_log=False,
                                lifespan="off", server_header=False, proxy_headers=False,
                                http=bounded_protocol(self.limits), ws="none",
                                limit_concurrency=self.limits.max_connections + 1, backlog=ACCEPT_BATCH,
                                timeout_keep_alive=self.limits.keep_alive_seconds,
                                h11_max_incomplete_event_size=self.limits.max_head_bytes)
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> WebServer:
        """Serve on a daemon thread of its own. The socket listens already, so a request made
        before uvicorn's loop is up waits in the backlog rather than being refused."""
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]},
                                        name="triage-web", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until SIGINT or SIGTERM (uvicorn's own handlers)."""
        self.server.run(sockets=[self.socket])

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.socket.close()
