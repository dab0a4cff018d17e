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

Names (`cgroup_name`): `triagebot-<machine>-<pid>-<start>-<token>-<label>`. <machine> stands
for this host name and pid namespace (hashed, an "m" first so that no older triagebot reads it
as a pid); <pid> and <start> are the process that made the cgroup and its start time (clock
ticks after boot: a pid used again by another process is told apart); <token> is 12 random hex
digits; <label> the lab host's name, for whoever reads the cgroup tree. So no two commands share
a name, whether they run for hosts of one process (each host has its own executor), processes
of one machine, or machines (containers) sharing one cgroup tree. When a PidsCgroups is made it
removes the cgroups of this machine whose process is gone (and ends what still runs there);
another machine's are left alone, whatever their pid.

Removal (`remove_cgroup`) kills what is in the cgroup (`cgroup.kill` where the kernel has it,
else SIGKILL to each process listed), waits for the cgroup to be empty — on v2 for
`cgroup.events` to say `populated 0` (poll(2) wakes on its change), on v1 for the killed
processes' pidfds — at most REMOVE_WAIT_SECONDS in all, and removes it. One still busy after that
is tried again at the next command and when the executor closes, and said in the log.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import select
import signal
import socket
import time
import uuid
from pathlib import Path

from triagebot.logs import event

log = logging.getLogger("triagebot.reproduce")

CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "triagebot-"
REMOVE_WAIT_SECONDS = 60.0  # killed processes of a loaded machine exit within this, whatever their number
_LEGACY = re.compile(r"^triagebot-(?:probe-)?(\d+)(?:-\d+)?$")  # names before the unique ones: pid and a count
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_LABEL_CHARACTERS = 40


def _own_v2_cgroup(root: Path) -> Path:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hierarchy, _, path = line.split(":", 2)
        if hierarchy == "0":
            return root / path.lstrip("/")
    return root


def machine_token() -> str:
    """This machine as cgroup names say it: its host name and pid namespace, hashed."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return "m" + hashlib.sha256(f"{socket.gethostname()}:{namespace}".encode()).hexdigest()[:10]


def start_time(pid: int) -> str | None:
    """When process `pid` started (clock ticks after boot, /proc/PID/stat field 22); None when
    there is no such process or it has ended (a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def cgroup_name(label: str = "") -> str:
    """A name no other command's cgroup has or will have, on any machine sharing the tree."""
    pid = os.getpid()
    safe = _UNSAFE.sub("_", label)[:_LABEL_CHARACTERS] or "run"
    return f"{PREFIX}{machine_token()}-{pid}-{start_time(pid) or 0}-{uuid.uuid4().hex[:12]}-{safe}"


def stale(name: str, machine: str) -> bool:
    """Whether the cgroup `name` was made by a process of this machine that is gone."""
    legacy = _LEGACY.match(name)
    if legacy is not None:  # an older triagebot's: its pid is all it says
        return not Path(f"/proc/{legacy.group(1)}").exists()
    parts = name[len(PREFIX):].split("-", 4) if name.startswith(PREFIX) else []
    if len(parts) != 5 or parts[0] != machine or not parts[1].isdigit():
        return False  # another machine's, or no name of ours
    return start_time(int(parts[1])) != parts[2]


def _listed(path: Path) -> list[int] | None:
    """The processes in the cgroup; None when it is gone."""
    try:
        return [int(item) for item in (path / "cgroup.procs").read_text().split()]
    except FileNotFoundError:
        return None


def _kill(path: Path) -> None:
    """Kill every process in the cgroup: at once where the kernel can (v2's cgroup.kill)."""
    kill = path / "cgroup.kill"
    if kill.exists():  # not on v1, nor before Linux 5.14: there one by one
        try:
            kill.write_text("1")
        except FileNotFoundError:
            pass  # removed meanwhile
        return
    for pid in _listed(path) or []:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _populated_v2(descriptor: int) -> bool:
    os.lseek(descriptor, 0, os.SEEK_SET)
    text = os.read(descriptor, 4096).decode()
    return "populated 1" in text


def _wait_empty_v2(path: Path, deadline: float) -> bool:
    """Wait until cgroup.events says `populated 0`: its change wakes poll(2) with POLLPRI."""
    try:
        descriptor = os.open(path / "cgroup.events", os.O_RDONLY)
    except FileNotFoundError:
        return True
    try:
        poller = select.poll()
        poller.register(descriptor, select.POLLPRI | select.POLLERR)
        while _populated_v2(descriptor):  # the read also marks the event seen: poll waits for the next
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            poller.poll(remaining * 1000)
        return True
    finally:
        os.close(descriptor)


def _wait_exits(pids: list[int], deadline: float) -> None:
    """Wait until these processes have exited (their pidfds readable) or the deadline passed."""
    poller = select.poll()
    descriptors = []
    try:
        for pid in pids:
            try:
                descriptor = os.pidfd_open(pid)
            except ProcessLookupError:
                continue  # gone already
            descriptors.append(descriptor)
            poller.register(descriptor, select.POLLIN)
        waiting = len(descriptors)
        while waiting:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            # at most a second at a time: a pid taken by a new process meanwhile is read again
            ready = poller.poll(min(remaining, 1.0) * 1000)
            if not ready:
                return
            for descriptor, _events in ready:
                poller.unregister(descriptor)
                waiting -= 1
    finally:
        for descriptor in descriptors:
            os.close(descriptor)


def remove_cgroup(path: Path, wait_seconds: float = REMOVE_WAIT_SECONDS) -> bool:
    """Kill what is in the cgroup, wait for it to be empty (at most `wait_seconds` in all) and
    remove it. True when it is gone (or was already)."""
    deadline = time.monotonic() + wait_seconds
    while True:
        listed = _listed(path)
        if listed is None:
            return True
        if listed:
            _kill(path)
            if (path / "cgroup.events").exists():
                _wait_empty_v2(path, deadline)
            else:
                _wait_exits(listed, deadline)
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            if not listed:
                time.sleep(0.01)  # empty but not yet released (v1 frees it a moment after the exits)


class PidsCgroups:
    """Makes one pids cgroup per command under a parent this process may write."""

    def __init__(self, root: Path = CGROUP_ROOT) -> None:
        self.parent: Path | None = None
        self.problem: str | None = None
        self.machine = machine_token()
        self.leftover: list[Path] = []  # cgroups still busy when their command ended: tried again
        try:
            self.parent = self._find(root)
        except OSError as error:
            self.problem = f"{error.filename or root}: {error.strerror}"
        except ValueError as error:
            self.problem = str(error)
        if self.parent is not None:
            self._remove_stale()

    def _remove_stale(self) -> None:
        """Cgroups left by a triagebot of this machine that was killed mid-command: end what runs there."""
        assert self.parent is not None
        for path in self.parent.glob(f"{PREFIX}*"):
            if stale(path.name, self.machine):
                remove_cgroup(path)

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
        else:
            parent = root / "pids"
            if not (parent / "cgroup.procs").exists():
                raise ValueError(f"{root}: no cgroup v2 with pids and no cgroup v1 pids hierarchy")
        probe = parent / cgroup_name("probe")  # unique too: executors made at once each probe
        probe.mkdir()
        probe.rmdir()
        return parent

    def available(self) -> bool:
        return self.parent is not None

    def make(self, limit: int, label: str = "") -> Path:
        """A fresh cgroup whose processes and threads number at most `limit`; `label` (the
        host's name) ends its name."""
        assert self.parent is not None
        self.retry_leftover(0.0)
        path = self.parent / cgroup_name(label)
        path.mkdir()
        (path / "pids.max").write_text(str(limit))
        return path

    def release(self, path: Path) -> None:
        """Remove a command's cgroup once what it left there is gone; kept for later if it stays busy."""
        if not remove_cgroup(path):
            self.leftover.append(path)
            event(log, logging.WARNING, "a command's pids cgroup is still busy: removed later", event="cgroup.busy",
                  path=str(path), waited_seconds=REMOVE_WAIT_SECONDS)

    def retry_leftover(self, wait_seconds: float = REMOVE_WAIT_SECONDS) -> None:
        """Try again to remove the cgroups that were busy when their command ended."""
        self.leftover = [path for path in self.leftover if not remove_cgroup(path, wait_seconds)]


def join(path: Path) -> None:
    """Move the calling process into cgroup `path` (between fork and exec)."""
    with open(path / "cgroup.procs", "w") as handle:
        handle.write(str(os.getpid()))
