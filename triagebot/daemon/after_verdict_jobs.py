"""The daemon's work after the verdict — fix tests (fix_testing.py) and bisections
(bisect_flow.py) — on threads of its own, one per lab host with work, so that the loop goes on
polling and posting meanwhile and a lab of many hosts bisects and tests fixes on all of them at
once (each job runs on its report's confirmed rerun's host).

On PostgreSQL the same work is a job of the job queue per host, run by `triage worker`
(daemon/dispatch/after_verdict_queue.py, which calls `run_after_verdict_jobs` there); what follows is
the daemon's own runner, on SQLite.

`AfterVerdictWorker.poke()` (each pass) starts a thread for every host that has a job waiting
and no thread; the thread opens its own store connection, runs that host's queued jobs one at a
time, and ends when nothing is left. Each job takes its host's lock, which the schedule sees
(lab_queue.busy_hosts), so no rerun is given that host meanwhile. Its notifications go to the
outbox and wake the loop, which alone delivers them (`lab.deliver` is the dispatcher's wake). A
stop asked for ends each job after its sample in progress; it is queued again and starts over at
the next start, as a rerun does.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

from triagebot.actions import carry_out as asked
from triagebot.bisect import flow as bisect_flow
from triagebot.fix_test import flow as fix_testing
from triagebot.lab.context import DaemonContext
from triagebot.logs import event
from triagebot.rules.settings import Settings
from triagebot.store.protocol import Store

log = logging.getLogger("triagebot.daemon")


def work_by_host(store: Store, settings: Settings) -> dict[str, str]:
    """Host (by name; "" for work with no lab host) -> the first report whose work waits there, in
    the order run_after_verdict_jobs takes it up: a fix test or a daemon's bisection waiting or
    cut short, then a test of a fix or a bisection asked from Slack and not carried out yet. A
    runner is started (or a job deferred) only for those hosts, not at every pass."""
    # the later dict wins a host: fix tests before the daemon's bisections before what was asked
    return asked.waiting_hosts(store, settings) | bisect_flow.waiting_hosts(store) | fix_testing.waiting_hosts(store)


def hosts_with_work(store: Store, settings: Settings) -> set[str]:
    return set(work_by_host(store, settings))


def run_after_verdict_jobs(store: Store, lab: DaemonContext, only_host: str | None = None) -> int:
    """Everything queued after the verdict (with `only_host`, on that host), until nothing is left
    or a stop is asked for; the jobs that ended."""
    ended = 0
    while not lab.stop_requested():
        done = len(fix_testing.run_queued_fix_tests(store, lab, only_host)) + len(
            bisect_flow.run_queued_bisects(store, lab, only_host)) + len(
            asked.carry_out(store, lab.settings, lab.database, lab.budget, names=asked.LAB_ASKS, only_host=only_host))
        if not done:
            break
        ended += done
    return ended


class AfterVerdictWorker:
    """A thread a host running `run_after_verdict_jobs` for that host, each with a store of its own."""

    def __init__(self, open_store: Callable[[], AbstractContextManager[Store]], lab: DaemonContext,
                 run: Callable[[Store, DaemonContext, str | None], int] = run_after_verdict_jobs) -> None:
        self._open_store = open_store
        self._lab = lab
        self._run = run
        self._lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}

    def poke(self, store: Store) -> None:
        """Start a thread for each host with work and none running (a running one sees new work
        on its host itself before it ends)."""
        hosts = hosts_with_work(store, self._lab.settings)
        if not hosts:
            return
        with self._lock:
            for host in sorted(hosts):
                thread = self._threads.get(host)
                if thread is not None and thread.is_alive():
                    continue
                thread = threading.Thread(target=self._work, args=(host,), daemon=True,
                                          name=f"triage-after-verdict-{host or 'no-host'}")
                self._threads[host] = thread
                thread.start()

    def _work(self, host: str) -> None:
        try:
            with self._open_store() as store:
                self._run(store, self._lab, host)
        except Exception as error:  # noqa: BLE001 - the store failed: the rows stay, taken up next pass
            event(log, logging.ERROR, "after-verdict jobs failed: taken up again", event="after.crashed",
                  host=host, error=f"{type(error).__name__}: {error}", exc_info=True)
        finally:
            self._lab.deliver()

    def busy(self) -> bool:
        with self._lock:
            return any(thread.is_alive() for thread in self._threads.values())

    def join(self) -> None:
        with self._lock:
            threads = list(self._threads.values())
        for thread in threads:
            thread.join()
