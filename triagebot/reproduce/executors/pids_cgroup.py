"""Reproduce stage: a pids cgroup bounding how many processes and threads one local command has.

RLIMIT_NPROC counts every process of the user and does not apply to root, so it cannot bound
one benchmark's tree. A pids cgroup can: each command gets a fresh cgroup with `pids.max`
set, the child joins it between fork and exec (so everything it starts is counted, threads
included), and a fork past the limit fails with EAGAIN. The cgroup is removed after the command.

Where the pids controller lives: cgroup v2 (`/sys/fs/cgroup/cgroup.controllers` lists `pids`;
then under the cgroup triagebot runs in, which must have `pids` in `cgroup.subtree_control` or
allow enabling it), else a cgroup v1 `pids` hierarchy (`/sys/fs/cgroup/pids`). Without a
writable one (no root, no delegation), `PidsCgroups.available()` says why and commands run
with rlimits only.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
REMOVE_ATTEMPTS = 50  # rmdir retries while the killed processes are reaped
REMOVE_PAUSE_SECONDS = 0.02


def _own_v2_cgroup(root: Path) -> Path:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hierarchy, _, path = line.split(":", 2)
        if hierarchy == "0":
            return root / path.lstrip("/")
    return root


class PidsCgroups:
    """Makes one pids cgroup per command under a parent this process may write."""

    def __init__(self, root: Path = CGROUP_ROOT) -> None:
        self.parent: Path | None = None
        self.problem: str | None = None
        try:
            self.parent = self._find(root)
        except OSError as error:
            self.problem = f"{error.filename or root}: {error.strerror}"
        except ValueError as error:
            self.problem = str(error)
        self._count = 0
        if self.parent is not None:
            self._remove_stale()

    def _remove_stale(self) -> None:
        """Cgroups left by a triagebot that was killed mid-command: end what runs there."""
        assert self.parent is not None
        for path in self.parent.glob("triagebot-*-*"):
            owner = path.name.split("-")[1]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                self.remove(path)

    @staticmethod
    def _find(root: Path) -> Path:
        controllers = root / "cgroup.controllers"
        if controllers.exists():
            if "pids" not in controllers.read_text().split():
                raise ValueError(f"{controllers} lists no pids controller")
            # v2: a process may not sit in a cgroup whose children use controllers, so the
            # commands' cgroups go beside ours, under its parent.
            own = _own_v2_cgroup(root)
            parent = own.parent if own != root else root
            control = parent / "cgroup.subtree_control"
            if "pids" not in control.read_text().split():
                control.write_text("+pids")
            probe = parent / f"triagebot-probe-{os.getpid()}"
        else:
            parent = root / "pids"
            if not (parent / "cgroup.procs").exists():
                raise ValueError(f"{root}: no cgroup v2 with pids and no cgroup v1 pids hierarchy")
            probe = parent / f"triagebot-probe-{os.getpid()}"
        probe.mkdir()
        probe.rmdir()
        return parent

    def available(self) -> bool:
        return self.parent is not None

    def make(self, limit: int) -> Path:
        """A fresh cgroup whose processes and threads number at most `limit`."""
        assert self.parent is not None
        self._count += 1
        path = self.parent / f"triagebot-{os.getpid()}-{self._count}"
        path.mkdir()
        (path / "pids.max").write_text(str(limit))
        return path

    @staticmethod
    def remove(path: Path) -> None:
        """Kill what is left in the cgroup and remove it (processes that left their group too)."""
        for _ in range(REMOVE_ATTEMPTS):
            try:
                pids = [int(item) for item in (path / "cgroup.procs").read_text().split()]
            except FileNotFoundError:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                path.rmdir()
                return
            except OSError:
                time.sleep(REMOVE_PAUSE_SECONDS)  # still being reaped


def join(path: Path) -> None:
    """Move the calling process into cgroup `path` (between fork and exec)."""
    with open(path / "cgroup.procs", "w") as handle:
        handle.write(str(os.getpid()))
