"""The lab's context for a run after ingest: the rules, where host locks live, how to notify,
and how a run's writes wait out a busy store. Shared by the daemon's steps, bisections and fix tests."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from triagebot.lab.mail_code import MayBuild, team_rule
from triagebot.logs import event
from triagebot.rules.settings import Settings
from triagebot.store.protocol import StoreBusyError

log = logging.getLogger("triagebot.daemon")
T = TypeVar("T")


class StopRequested(Exception):
    """Raised between samples when the daemon was asked to stop: the run starts over next time."""

    def __init__(self, what: str = "the daemon was asked to stop") -> None:
        super().__init__(what)


@dataclass
class DaemonContext:
    """What the stages need besides the store: the rules (loaded once, at start), where host
    locks live, how to notify."""

    settings: Settings
    database: Path
    deliver: Callable[[], object]  # send what the outbox holds (called after each state change)
    budget: int = 20  # runs a side at most
    stop_requested: Callable[[], bool] = lambda: False
    heartbeat: Callable[[], None] = lambda: None
    # A run's writes wait out another writer (the loop storing a poll's batch) this long, a
    # second at a time, rather than lose the run to the store's busy timeout.
    busy_patience_s: float = 600.0
    sleep: Callable[[float], None] = time.sleep
    # whether code from mail (a series under review) may be built on a host (lab/mail_code.py);
    # None: the team's rule, from the rules' trust list
    may_build_rule: MayBuild | None = None

    def may_build(self) -> MayBuild:
        """The question a series under review is asked before it is built on a host."""
        return self.may_build_rule or team_rule(self.settings.trust)


def patiently(lab: DaemonContext, write: Callable[[], T]) -> T:
    """`write()`, tried again while the store stays busy (StoreBusyError), for up to
    `lab.busy_patience_s`: runs on several hosts write the store beside the loop."""
    waited = 0.0
    while True:
        try:
            return write()
        except StoreBusyError:
            if waited >= lab.busy_patience_s:
                raise
            event(log, logging.INFO, "store busy: the run's write waits", event="run.store_busy",
                  waited_seconds=waited)
            lab.sleep(1.0)
            waited += 1.0
