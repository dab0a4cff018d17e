"""The daemon's database going away (PostgreSQL restarted, failed over, the network cut): waited for.

A step that meets a lost connection does not log a traceback and go on to the next step (each
would fail the same way): `is_outage` tells the loop, which ends the pass there and calls
`wait_for_database`. That reconnects the store and the dispatcher's own connection with the one
backoff (triagebot/backoff.py: 1 s doubling to 30 s, ±20 %), beating the heartbeat while it
waits (the loop is alive, not stuck), and meanwhile /healthz says `degraded` with why
(`DaemonMetrics.database_down`). One line is logged when the database goes away, one when it is
back (with how long it was away); the attempts between are counted on the first. Nothing is
given up: every step is a step over stored state, so the pass that runs once the database is
back takes up what the outage cut short (a poll's batch not committed is read again, a post in
doubt is looked up on Slack before it is sent, outbox.py).
"""
from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Protocol

from triagebot.backoff import Backoff
from triagebot.daemon.health import DaemonMetrics
from triagebot.logs import event
from triagebot.store.protocol import StoreError, StoreUnavailable

log = logging.getLogger("triagebot.daemon")

RECONNECT = Backoff(first=1.0, cap=30.0, jitter=0.2)


class Reconnects(Protocol):
    """A store or a dispatcher: something holding a connection to the database."""

    def connection_lost(self) -> bool: ...

    def reconnect(self) -> None: ...


def is_outage(error: BaseException, *holders: Reconnects) -> bool:
    """Whether `error` came from the database going away (its own words, or a lost connection
    behind whatever error a library wrapped it in)."""
    return isinstance(error, StoreUnavailable) or any(holder.connection_lost() for holder in holders)


def wait_for_database(metrics: DaemonMetrics, error: BaseException, holders: tuple[Reconnects, ...],
                      stopping: Callable[[], bool], backoff: Backoff = RECONNECT,
                      sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None) -> bool:
    """Reconnect each of `holders` (each connection anew: one not used since the server went away
    is as dead as the one that found out), waiting between attempts; True once they are all back,
    False when a stop was asked for first."""
    reason = " ".join(str(error).split()) or type(error).__name__
    started = time.monotonic()
    metrics.database_down(reason)
    event(log, logging.ERROR, "database unreachable: waiting for it, nothing is given up", event="database.lost",
          error=reason, next="the daemon reconnects with backoff; /healthz says degraded meanwhile")
    attempt = 0
    while not stopping():
        try:
            for holder in holders:  # each anew: a connection not used since the outage is as dead
                holder.reconnect()
        except StoreError as failed:
            reason = " ".join(str(failed).split())
            metrics.database_down(reason, attempts=attempt + 1)
            _pause(backoff.delay(attempt, rng), metrics, stopping, sleep)
            attempt += 1
            continue
        metrics.database_up()
        event(log, logging.WARNING, "database back: the daemon goes on", event="database.back",
              away_seconds=round(time.monotonic() - started, 1), attempts=attempt + 1)
        return True
    return False


def _pause(seconds: float, metrics: DaemonMetrics, stopping: Callable[[], bool],
           sleep: Callable[[float], None]) -> None:
    """Wait `seconds`, beating the heartbeat, ending early when a stop is asked for."""
    deadline = time.monotonic() + seconds
    while not stopping() and (remaining := deadline - time.monotonic()) > 0:
        metrics.beat()
        sleep(min(0.5, remaining))
