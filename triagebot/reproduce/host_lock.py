"""Reproduce stage: one rerun per host at a time, across processes.

The lock is a file beside the database, named in one place (`lock_path`): reruns (the daemon's
and `triage rerun`'s) take it exclusively, `triage status` tries it to tell busy from idle.
"""
from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from triagebot.errors import TriageError
from triagebot.store.sqlite import open_private


def lock_path(database: Path, host_name: str) -> Path:
    """The host's lock file, beside the database."""
    return database.with_name(f"{database.name}.host-{host_name}.lock")


@contextlib.contextmanager
def host_lock(database: Path, host_name: str) -> Iterator[None]:
    """One rerun per host at a time, across processes: an exclusive lock beside the database."""
    path = lock_path(database, host_name)
    with open_private(path) as handle:  # 0600 like the database it sits beside
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TriageError(f"host {host_name} is busy with another rerun (lock {path})"
                              ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def host_busy(database: Path, host_name: str) -> bool:
    """Whether a rerun holds the host's lock now (tried without waiting, never created)."""
    path = lock_path(database, host_name)
    if not path.exists():
        return False
    with open(path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False
