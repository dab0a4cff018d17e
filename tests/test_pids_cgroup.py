"""Pids cgroups at scale: unique names across hosts, processes and machines; removal once empty.

Every test reads what the kernel shows: the cgroup a command ran in (its /proc/self/cgroup),
which cgroups exist after, which processes live. The cgroup tree is shared with whatever else
runs on this machine, so no test compares the whole tree before and after: each looks at the
cgroups its own commands used.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cgroups import cgroup_path, run_at_once
from triagebot.reproduce.executors.pids_cgroup import (
    PREFIX,
    PidsCgroups,
    machine_token,
    remove_cgroup,
    start_time,
)

FREEZER = Path("/sys/fs/cgroup/freezer")  # cgroup v1: a frozen process cannot die until thawed
UNIFIED = Path("/sys/fs/cgroup/unified")  # a cgroup v2 tree beside v1 (hybrid): cgroup.kill, cgroup.events


@pytest.fixture
def cgroups() -> PidsCgroups:
    made = PidsCgroups()
    if not made.available():
        pytest.skip(f"no writable pids cgroup here: {made.problem}")
    return made


def test_hosts_of_one_process_running_at_once_each_get_a_cgroup(cgroups: PidsCgroups, tmp_path: Path) -> None:
    """Four hosts' executors in one process (the daemon's threads): the base named every
    executor's first cgroup `triagebot-PID-1`, so three of four failed with `File exists`."""
    folder = tmp_path / "marks"
    folder.mkdir()
    results = run_at_once(str(tmp_path / "scratch"), str(folder), 4, [0, 1, 2, 3])
    assert all("error" not in result for result in results), results
    shown = [result["cgroup"] for result in results]
    assert len(set(shown)) == 4, shown
    for result in results:  # each ran in a cgroup of its own, named for its host, gone after
        name = Path(result["cgroup"]).name
        assert name.startswith(f"{PREFIX}{machine_token()}-{os.getpid()}-") and name.endswith(
            f"-lab-host-{result['index']}"), name
        assert not cgroup_path(cgroups.parent, result["cgroup"]).exists()


def _in_a_process(arguments: tuple[str, str, int, list[int]]) -> list[dict]:
    return run_at_once(*arguments)


def test_two_processes_with_hosts_on_threads_making_cgroups_at_once(cgroups: PidsCgroups, tmp_path: Path) -> None:
    """Two worker processes of three hosts each, all six commands holding their cgroup at once."""
    folder = tmp_path / "marks"
    folder.mkdir()
    context = multiprocessing.get_context("spawn")  # no fork of this threaded test process
    with context.Pool(2) as pool:
        answers = pool.map(_in_a_process, [(str(tmp_path / "a"), str(folder), 6, [0, 1, 2]),
                                           (str(tmp_path / "b"), str(folder), 6, [3, 4, 5])])
    results = [result for answer in answers for result in answer]
    assert all("error" not in result for result in results), results
    names = [Path(result["cgroup"]).name for result in results]
    assert len(set(names)) == 6, names
    owners = {name.split("-")[2] for name in names}
    assert len(owners) == 2 and str(os.getpid()) not in owners  # made by the two workers
    assert not any(cgroup_path(cgroups.parent, result["cgroup"]).exists() for result in results)


def _sleeper_in(cgroup: Path) -> subprocess.Popen:
    """A process that sleeps in `cgroup` (joined before it execs)."""
    def join() -> None:
        (cgroup / "cgroup.procs").write_text(str(os.getpid()))
    return subprocess.Popen(["sleep", "600"], preexec_fn=join, start_new_session=True)


def _dead_pid() -> int:
    return next(pid for pid in range(4_000_000, 4_100_000) if not Path(f"/proc/{pid}").exists())


def test_leftovers_of_this_machine_whose_process_is_gone_are_removed_and_others_kept(cgroups: PidsCgroups) -> None:
    assert cgroups.parent is not None
    own = os.getpid()
    machine = machine_token()
    dead = cgroups.parent / f"{PREFIX}{machine}-{_dead_pid()}-12345-aaaaaaaaaaaa-lab-host"
    reused = cgroups.parent / f"{PREFIX}{machine}-{own}-1-bbbbbbbbbbbb-lab-host"  # our pid, another start
    alive = cgroups.parent / f"{PREFIX}{machine}-{own}-{start_time(own)}-cccccccccccc-lab-host"
    elsewhere = cgroups.parent / f"{PREFIX}m0123456789-{_dead_pid()}-12345-dddddddddddd-lab-host"
    made = [dead, reused, alive, elsewhere]
    for path in made:
        path.mkdir()
    left_running = _sleeper_in(dead)  # what a killed triagebot left running in its cgroup
    try:
        PidsCgroups()
        assert not dead.exists() and not reused.exists()
        assert left_running.wait(timeout=60) == -signal.SIGKILL  # ended with its cgroup
        assert alive.exists()  # a live process's cgroup: a command of ours runs there
        assert elsewhere.exists()  # another machine's (a container sharing the tree): its pids are not ours
    finally:
        left_running.kill()
        left_running.wait()
        for path in made:
            remove_cgroup(path)


def _freezer() -> Path:
    if not (FREEZER / "cgroup.procs").exists():
        pytest.skip("no cgroup v1 freezer here to hold a process between its kill and its exit")
    frozen = FREEZER / f"triagebot-test-{os.getpid()}-{time.monotonic_ns()}"
    frozen.mkdir()
    return frozen


def _kill_pending(pid: int) -> bool:
    """Whether SIGKILL waits to be taken (sent to the process, or to its thread as cgroup.kill does)."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    pending = [int(line.split()[1], 16) for line in lines if line.startswith(("ShdPnd:", "SigPnd:"))]
    return any(mask & (1 << (signal.SIGKILL - 1)) for mask in pending)


def _tree(kind: str, cgroups: PidsCgroups) -> Path:
    if kind == "v1":
        assert cgroups.parent is not None
        return cgroups.parent
    if not (UNIFIED / "cgroup.procs").exists():
        pytest.skip("no cgroup v2 tree here")
    return UNIFIED


@pytest.fixture
def frozen_group() -> Iterator[Path]:
    frozen = _freezer()
    try:
        yield frozen
    finally:
        (frozen / "freezer.state").write_text("THAWED")
        remove_cgroup(frozen)


@pytest.mark.parametrize("kind", ["v1", "v2"])
def test_removal_waits_until_the_killed_processes_are_gone(kind: str, cgroups: PidsCgroups,
                                                            frozen_group: Path) -> None:
    """A process killed but not yet exited (frozen here, as a loaded machine delays an exit):
    the base tried rmdir for a second and left the cgroup behind (the root test's failure)."""
    tree = _tree(kind, cgroups)
    cgroup = tree / f"{PREFIX}{machine_token()}-{os.getpid()}-{start_time(os.getpid())}-eeeeeeeeeeee-test"
    cgroup.mkdir()
    slow = _sleeper_in(cgroup)
    try:
        (frozen_group / "cgroup.procs").write_text(str(slow.pid))
        (frozen_group / "freezer.state").write_text("FROZEN")
        answers: list[bool] = []
        removing = threading.Thread(target=lambda: answers.append(remove_cgroup(cgroup)))
        removing.start()
        deadline = time.monotonic() + 60
        while not _kill_pending(slow.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _kill_pending(slow.pid)  # killed, and cannot exit while frozen
        removing.join(timeout=3)  # the base gave up here (50 tries 20 ms apart)
        (frozen_group / "freezer.state").write_text("THAWED")  # now it exits
        removing.join()
        assert answers == [True] and not cgroup.exists()
        assert slow.wait(timeout=60) == -signal.SIGKILL
    finally:
        (frozen_group / "freezer.state").write_text("THAWED")  # a frozen process cannot be waited for
        slow.kill()
        slow.wait()
        remove_cgroup(cgroup)
