"""Dispatch on the embedded default: lab runs in the daemon's own process.

`ThreadDispatcher` runs each job on a thread of its own, one per host at a time (the schedule
never gives a busy host a report, and the job takes the host's lock besides), so H hosts run
at once. Each thread opens its own store (`open_store`): a SQLite connection belongs to the
thread that made it, and the file's WAL and busy timeout let the threads and the loop write
in turn. `InlineDispatcher` runs each job at `launch`, in the caller's thread: one run at a
time, the order of before (`flow.run_planned`, and the baseline of bench/lab.py).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager

from triagebot.daemon.dispatch.protocol import Finished, JobsNow, RunJob
from triagebot.logs import event
from triagebot.store.protocol import Store

log = logging.getLogger("triagebot.daemon")

OpenStore = Callable[[], AbstractContextManager[Store]]
RunOne = Callable[[Store, RunJob], "str | None"]


class ThreadDispatcher:
    """One thread per running job; `wake()` is what a worker's `deliver` calls."""

    def __init__(self, open_store: OpenStore, run: RunOne) -> None:
        self._open_store = open_store
        self._run = run
        self._lock = threading.Lock()
        self._woken = threading.Event()
        self._pending: list[RunJob] = []
        self._running: dict[str, tuple[RunJob, threading.Thread]] = {}
        self._finished: list[Finished] = []

    def enqueue(self, store: Store, job: RunJob) -> None:
        self._pending.append(job)

    def abandon(self) -> None:
        self._pending.clear()

    def launch(self) -> None:
        jobs, self._pending = self._pending, []
        for job in jobs:
            thread = threading.Thread(target=self._work, args=(job,), name=f"triage-run-{job.host}", daemon=True)
            with self._lock:
                if job.host in self._running:
                    raise RuntimeError(f"host {job.host} already runs {self._running[job.host][0].message_id}")
                self._running[job.host] = (job, thread)
            thread.start()

    def _work(self, job: RunJob) -> None:
        outcome: str | None = None
        try:
            with self._open_store() as store:
                outcome = self._run(store, job)
        except Exception as error:  # noqa: BLE001 - the store failed: the row stays running, taken up again
            event(log, logging.ERROR, "run failed outside its report: it is taken up again", event="run.crashed",
                  message_id=job.message_id, host=job.host, error=f"{type(error).__name__}: {error}",
                  exc_info=True)
        finally:
            with self._lock:
                self._running.pop(job.host, None)
                self._finished.append(Finished(job, outcome))
            self._woken.set()

    def wake(self) -> None:
        """A worker wrote notifications: the loop delivers them."""
        self._woken.set()

    def running(self) -> Mapping[str, str]:
        with self._lock:
            return {host: job.message_id for host, (job, _thread) in self._running.items()}

    def jobs_now(self) -> JobsNow:
        running = self.running()  # its own threads run each job as it is launched
        return JobsNow(running, frozenset(), frozenset(running.values()))

    def wait(self, timeout: float) -> bool:
        woken = self._woken.wait(timeout)
        self._woken.clear()
        return woken

    def finished(self) -> list[Finished]:
        with self._lock:
            done, self._finished = self._finished, []
        return done

    def join(self) -> None:
        with self._lock:
            threads = [thread for _job, thread in self._running.values()]
        for thread in threads:
            thread.join()

    def close(self) -> None:
        pass  # each run's store is its own, closed when the run ends

    def connection_lost(self) -> bool:
        return False  # no connection of its own

    def reconnect(self) -> None:
        pass


class InlineDispatcher:
    """Each job runs at `launch`, in the caller's thread, on the store it is given: one at a time."""

    def __init__(self, open_store: OpenStore, run: RunOne) -> None:
        self._open_store = open_store
        self._run = run
        self._pending: list[RunJob] = []
        self._finished: list[Finished] = []

    def enqueue(self, store: Store, job: RunJob) -> None:
        self._pending.append(job)

    def abandon(self) -> None:
        self._pending.clear()

    def launch(self) -> None:
        jobs, self._pending = self._pending, []
        for job in jobs:
            with self._open_store() as store:
                self._finished.append(Finished(job, self._run(store, job)))

    def running(self) -> Mapping[str, str]:
        return {}

    def jobs_now(self) -> JobsNow:
        return JobsNow({}, frozenset(), frozenset())

    def wait(self, timeout: float) -> bool:
        return bool(self._finished)

    def finished(self) -> list[Finished]:
        done, self._finished = self._finished, []
        return done

    def join(self) -> None:
        pass

    def close(self) -> None:
        pass

    def connection_lost(self) -> bool:
        return False

    def reconnect(self) -> None:
        pass
