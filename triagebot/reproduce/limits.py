"""Reproduce stage: how big a plan may be on a host, and the limits its commands run under.

Both come from the host's description in hosts.toml, so a plan that was scaled to fit the host
also runs under limits that stop it if the scaling missed something:

- processes: the host's process budget (`max_processes`, default 64 a thread, at least 256)
  bounds what the planner lets a plan start (hackbench groups × fds × 2, …); the command runs
  with RLIMIT_NPROC and, where the executor can make one, a pids cgroup of the budget plus
  PROCESS_MARGIN (the benchmark's own parent and helpers);
- memory: RLIMIT_AS of the host's memory, per process: no single process reserves more
  address space than the host has RAM;
- files: RLIMIT_FSIZE of the scratch space's size (no file outgrows scratch), RLIMIT_NOFILE of
  OPEN_FILES descriptors a process, RLIMIT_CORE 0 (no core dumps in scratch or elsewhere).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from triagebot.reproduce.executors.protocol import Limits
from triagebot.reproduce.plan import HostShape
from triagebot.rules.hosts import Host, default_process_budget

GIB = 1 << 30
PROCESS_MARGIN = 64  # pids above the plan's budget: the benchmark's parent, its helpers, prlimit
OPEN_FILES = 8192  # per process: sysbench fileio's 4096 files, hackbench's 1000 fds, with room
SSH_SCRATCH_GB = 20  # an SSH host's scratch size when hosts.toml does not say (unknown before connecting)


def scratch_gb(host: Host) -> int:
    """The scratch space a plan may count on: hosts.toml's scratch_gb, else measured (local)."""
    if host.scratch_gb is not None:
        return host.scratch_gb
    if host.reach != "local":
        return SSH_SCRATCH_GB
    path = Path(host.scratch_dir)
    while not path.exists() and path != path.parent:
        path = path.parent  # the scratch dir may not exist yet: measure the disk it will be on
    return max(1, shutil.disk_usage(path).free // GIB)


def host_shape(host: Host) -> HostShape:
    """The host as the planner sees it: for a vm or uml switcher, the guest the plan runs in
    (one CPU, its memory), not the machine around it."""
    if host.switcher is not None and host.switcher.guest:
        return HostShape(threads=1, memory_gb=max(1, host.switcher.memory_mib // 1024), scratch_gb=scratch_gb(host),
                         processes=default_process_budget(1), tools=host.tools + host.programs,
                         scratch_devices=(), kernel_filesystems=None, stressors=host.stressors)
    return HostShape(threads=host.threads, memory_gb=host.memory_gb, scratch_gb=scratch_gb(host),
                     processes=host.process_budget, tools=host.tools + host.programs,
                     scratch_devices=host.scratch_devices, kernel_filesystems=host.kernel_filesystems,
                     stressors=host.stressors)


def host_limits(host: Host) -> Limits:
    """The limits every plan command on `host` runs under."""
    return Limits(address_space_bytes=host.memory_gb * GIB, processes=host.process_budget + PROCESS_MARGIN,
                  file_size_bytes=scratch_gb(host) * GIB, open_files=OPEN_FILES, core_file_bytes=0)


def describe_limits(limits: Limits) -> str:
    """One line: `processes 320, address space 24 GiB a process, …`."""
    def size(value: int) -> str:
        return f"{value / GIB:g} GiB" if value >= GIB else f"{value} bytes"
    parts = []
    if limits.processes is not None:
        parts.append(f"processes {limits.processes}")
    if limits.address_space_bytes is not None:
        parts.append(f"address space {size(limits.address_space_bytes)} a process")
    if limits.file_size_bytes is not None:
        parts.append(f"file size {size(limits.file_size_bytes)}")
    if limits.open_files is not None:
        parts.append(f"open files {limits.open_files} a process")
    if limits.core_file_bytes == 0:
        parts.append("no core dumps")
    if limits.cpu_seconds is not None:
        parts.append(f"CPU {limits.cpu_seconds} s")
    return ", ".join(parts) or "none"
