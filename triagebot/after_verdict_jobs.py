"""The daemon's work after the verdict — fix tests (fix_testing.py) and bisections
(bisect_flow.py) — on a thread of its own, so the loop goes on polling and posting meanwhile.

`AfterVerdictWorker.poke()` (each pass) starts the thread when it is idle; the thread opens its
own store connection, runs whatever is queued, one job at a time, and ends when nothing is left.
Each job takes its host's lock, which the schedule sees (lab_queue.busy_hosts), so no rerun is
given that host meanwhile. Its notifications go to the outbox and wake the loop, which alone
delivers them (`lab.deliver` is the dispatcher's wake). A stop asked for ends the job after its
sample in progress; it is queued again and starts over at the next start, as a rerun does.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

from triagebot import bisect_flow, fix_testing
from triagebot.flow import DaemonContext
from triagebot.logs import event
from triagebot.store.protocol import Store

log = logging.getLogger("triagebot.daemon")


def has_work(store: Store) -> bool:
    """Whether a fix test or a daemon's bisection waits (or was cut short): the thread is
    started only then, not at every pass."""
    if store.fix_tests(status="queued") or store.fix_tests(status="running"):
        return True
    return bisect_flow.has_queued(store)


def run_after_verdict_jobs(store: Store, lab: DaemonContext) -> int:
    """Everything queued after the verdict, until nothing is left or a stop is asked for; the
    jobs that ended."""
    ended = 0
    while not lab.stop_requested():
        done = len(fix_testing.run_queued_fix_tests(store, lab)) + len(bisect_flow.run_queued_bisects(store, lab))
        if not done:
            break
        ended += done
    return ended


class AfterVerdictWorker:
    """One thread at a time running `run_after_verdict_jobs` with a store of its own."""

    def __init__(self, open_store: Callable[[], AbstractContextManager[Store]], lab: DaemonContext) -> None:
        self._open_store = open_store
        self._lab = lab
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def poke(self, store: Store) -> None:
        """Start the thread when work waits, unless it runs (then it sees the new work itself
        before it ends)."""
        if not has_work(store):
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._work, name="triage-after-verdict", daemon=True)
            self._thread.start()

    def _work(self) -> None:
        try:
            with self._open_store() as store:
                run_after_verdict_jobs(store, self._lab)
        except Exception as error:  # noqa: BLE001 - the store failed: the rows stay, taken up next pass
            event(log, logging.ERROR, "after-verdict jobs failed: taken up again", event="after.crashed",
                  error=f"{type(error).__name__}: {error}", exc_info=True)
        finally:
            self._lab.deliver()

    def busy(self) -> bool:
        with self._lock:
            return self._thread is not None and self._thread.is_alive()

    def join(self) -> None:
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join()
