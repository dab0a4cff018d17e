"""Reproduce stage: the one place that picks an executor implementation for a host.

protocol.py defines what an executor is and names no implementation; this module names both.
"""
from __future__ import annotations

from triagebot.reproduce.executors.guest import GuestExecutor
from triagebot.reproduce.executors.kexec import KexecExecutor
from triagebot.reproduce.executors.local import LocalExecutor
from triagebot.reproduce.executors.protocol import Executor
from triagebot.reproduce.executors.ssh import SshExecutor
from triagebot.rules.hosts import Host


def executor_for(host: Host) -> Executor:
    """The executor that reaches `host`: this machine, OpenSSH, or one of them behind a ready
    switcher (guests of the built kernel on this machine; kexec over OpenSSH)."""
    if host.switcher is not None and host.switcher.guest:
        return GuestExecutor(host, host.switcher.builds)
    if host.switcher is not None and host.switcher.kind == "kexec":
        assert host.ssh is not None
        return KexecExecutor(host, SshExecutor(host.ssh, host.scratch_dir, name=host.name,
                                               reboot_timeout=host.reboot_timeout_s))
    if host.reach == "local":
        return LocalExecutor(host.scratch_dir, name=host.name)
    assert host.ssh is not None
    return SshExecutor(host.ssh, host.scratch_dir, name=host.name,
                       reboot_timeout=host.reboot_timeout_s)
