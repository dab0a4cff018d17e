"""Reproduce stage: the Executor protocol every way of running commands on a host implements.

An executor runs an argv list on one host: never a shell string, never through a shell that
could read it (SSH quotes every element so the remote shell sees exactly the argv). Each run
has a timeout that ends the command and every process it started in its process group, and
optional resource limits. A run's working directory is a scratch directory made by
`make_scratch()` under the host's scratch root and removed by `remove_scratch()`.

The command's environment is small and fixed, so runs compare: LC_ALL=C and LANG=C (tool output
parses the same everywhere) plus the `env` given; a local run gets PATH, HOME and TMPDIR (the
run's cwd) and nothing else of triagebot's environment (no tokens leak into benchmarks); an
SSH run gets what sshd gives a login plus the same variables. The runner gives every plan
command TMPDIR = its scratch directory, on every executor.

`reconnect()` waits, with bounded backoff, until the host answers again after the drop a
kernel switch (kexec or reboot) implies. A host that cannot be reached raises ConnectionLost;
any other failure of the executor itself (not of the command) raises ExecutorError. A command
that fails is no error: it is a Completed with its return code.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from triagebot.errors import TriageError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FIXED_ENV = {"LC_ALL": "C", "LANG": "C"}


class ExecutorError(TriageError):
    """The executor could not do what was asked (not: the command failed)."""


class ConnectionLost(ExecutorError):
    """The host did not answer (refused, dropped, timed out): `reconnect()` may bring it back."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for one command, each None for "the host's default".

    Set as rlimits on the command and everything it starts (each process has its own, so they
    bound a process, not the group), plus `processes` as a pids cgroup where the executor can
    make one (it bounds the whole tree, root included: RLIMIT_NPROC counts all of a user's
    processes and root is exempt from it)."""

    address_space_bytes: int | None = None  # RLIMIT_AS: allocations past it fail
    processes: int | None = None  # RLIMIT_NPROC (per user, not enforced for root) and pids.max
    file_size_bytes: int | None = None  # RLIMIT_FSIZE: a write past it fails (SIGXFSZ)
    cpu_seconds: int | None = None  # RLIMIT_CPU: the command is killed (SIGXCPU) past it
    open_files: int | None = None  # RLIMIT_NOFILE: descriptors one process may hold
    core_file_bytes: int | None = None  # RLIMIT_CORE: 0 writes no core dumps

    def __post_init__(self) -> None:
        for name in ("address_space_bytes", "processes", "file_size_bytes", "cpu_seconds", "open_files",
                     "core_file_bytes"):
            value = getattr(self, name)
            lowest = 0 if name == "core_file_bytes" else 1
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < lowest):
                raise ValueError(f"Limits.{name} must be a whole number of at least {lowest}, not {value!r}")

    def rlimits(self) -> list[tuple[str, int]]:
        """(rlimit name, value) for each limit set: RLIMIT_AS, … as util-linux prlimit names them."""
        pairs = [("as", self.address_space_bytes), ("nproc", self.processes), ("fsize", self.file_size_bytes),
                 ("cpu", self.cpu_seconds), ("nofile", self.open_files), ("core", self.core_file_bytes)]
        return [(name, value) for name, value in pairs if value is not None]


@dataclass(frozen=True)
class Completed:
    """One finished command. `returncode` is negative (-signal) when a signal ended it locally."""

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float  # wall time from start to the end of its output
    timed_out: bool  # the timeout ended it: its output is partial

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


class Executor(Protocol):
    name: str  # the host's name, for messages
    scratch_root: str

    def run(self, argv: Sequence[str], *, timeout: float, cwd: str | None = None,
            env: Mapping[str, str] | None = None, limits: Limits | None = None) -> Completed:
        """Run `argv` (no shell) and wait at most `timeout` seconds; ConnectionLost if unreachable."""
        ...

    def put_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write `data` to the absolute `path` on the host."""
        ...

    def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        """The contents of the absolute `path` on the host (ExecutorError if it cannot be read)."""
        ...

    def make_scratch(self) -> str:
        """A fresh empty directory under the scratch root; its absolute path."""
        ...

    def remove_scratch(self, path: str) -> None:
        """Remove a directory `make_scratch` made (ExecutorError for any other path)."""
        ...

    def reconnect(self, timeout: float | None = None) -> float:
        """Wait until the host answers again (after a kernel switch); the seconds waited."""
        ...

    def close(self) -> None:
        """Remove scratch directories still left and drop any shared connection."""
        ...

    def __enter__(self) -> Executor:
        """The executor itself; leaving the block closes it."""
        ...

    def __exit__(self, *exc_info: object) -> None: ...

    @property
    def limit_notes(self) -> tuple[str, ...]:
        """What of `Limits` this executor cannot enforce on its host, one sentence each."""
        ...


def check_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """`argv` as a tuple of strings; ValueError for a string (not a list) or an empty list."""
    if isinstance(argv, (str, bytes)):
        raise ValueError(f"argv must be a list of arguments, not a string: {argv!r}")
    argv = tuple(argv)
    if not argv or not all(isinstance(item, str) for item in argv):
        raise ValueError(f"argv must be a non-empty list of strings, not {argv!r}")
    if any("\0" in item for item in argv):
        raise ValueError("argv elements may not contain NUL bytes")
    return argv


def check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The fixed variables plus `env`, its names checked (no '=', no shell syntax)."""
    merged = dict(FIXED_ENV)
    for name, value in (env or {}).items():
        if not _ENV_NAME.fullmatch(name) or not isinstance(value, str) or "\0" in value:
            raise ValueError(f"environment variable {name!r}={value!r} is not a NAME=value pair")
        merged[name] = value
    return merged


def scratch_child(root: str, path: str) -> bool:
    """Whether `path` names a directory directly below the scratch root (what make_scratch makes)."""
    root = root.rstrip("/")
    if not path.startswith(root + "/"):
        return False
    rest = path[len(root) + 1:].rstrip("/")
    return bool(rest) and "/" not in rest and rest not in (".", "..")


@runtime_checkable
class SwitchesKernels(Protocol):
    """An executor that builds and boots the commit itself (a host's ready switcher: vm, uml,
    kexec), instead of the host's switch_kernel hook."""

    builds: list[dict]  # each kernel switched to: its build (or cache hit), for the run record

    @property
    def kernel_switch(self) -> dict:
        """How the runs are made (switcher, accelerator, whether inside a guest), for the record."""
        ...

    def switch_kernel(self, commit: str, report_config: Any = None, report_options: tuple[tuple[str, str], ...] = (),
                      announce: Any = None) -> str:
        """Build `commit` and make the next runs use it; the running kernel's release.
        A TriageError when it cannot (the run ends with that reason)."""
        ...
