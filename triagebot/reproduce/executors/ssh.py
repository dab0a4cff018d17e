"""Reproduce stage: the SSH executor, running argv lists on a lab host through OpenSSH.

The `ssh` client runs as a subprocess with every option given on its command line (`-F none`:
no ssh_config is read, so what hosts.toml says is all there is): key auth only (BatchMode,
IdentitiesOnly, no agent), the host key checked against the host's own known_hosts file
(StrictHostKeyChecking=yes), keep-alives so a dead link is noticed within ~15 s.

The remote side gets ONE string that its login shell parses. It is built only from
`shlex.quote`d words, so the shell sees exactly the argv asked for; the remote command is:

    cd -- <cwd> && exec env LC_ALL=C LANG=C [NAME=value…] timeout -k 2 <T>s [prlimit --as=N:N … --] argv…

`timeout` (GNU coreutils) ends the command's whole process group at the timeout; `prlimit`
(util-linux) sets the resource limits (RLIMIT_AS, NPROC, FSIZE, CPU, NOFILE, CORE). Both must be
on the remote PATH. A limit above the remote hard limit fails the command unless the SSH user
is root. No pids cgroup is made over SSH (that takes a program beyond prlimit on the host):
for a root SSH user the process count of a command is not bounded (`limit_notes` says so).

A run that cannot reach the host, or whose connection drops (the host rebooted), raises
ConnectionLost; `reconnect()` then waits with bounded exponential backoff until a trivial
command works again. A changed host key or refused key is an ExecutorError that reconnecting
does not fix. Exit status 255 is ssh's own "failed" as well as a command's: without ssh's
error text, one more `true` tells them apart, and a remote command that exits 255 while the
host still answers is returned as a Completed like any other.

With `control_master = true` one master connection (ControlPersist) carries every command; it
is started detached, checked before each run, and dropped on reconnect and close.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence

from triagebot.backoff import Backoff, Sleeper
from triagebot.reproduce.executors.protocol import (
    Completed,
    ConnectionLost,
    ExecutorError,
    Limits,
    check_argv,
    check_env,
    scratch_child,
)
from triagebot.rules.hosts import SshAccess
from triagebot.untrusted.argv import after_options

KILL_AFTER_SECONDS = 2  # remote: after the timeout's SIGTERM, SIGKILL this much later
# ssh's own words when the link, not the command, failed (stderr, with exit status 255)
_CONNECTION_FAILURES = (
    "ssh: connect to host", "connection closed by", "connection to ", "connection reset",
    "connection refused", "connection timed out", "kex_exchange_identification",
    "ssh_exchange_identification", "timeout, server", "client_loop:", "broken pipe",
    "could not resolve hostname", "no route to host", "network is unreachable",
    "banner exchange", "control socket connect", "mux_client",
)
_REFUSALS = ("host key verification failed", "remote host identification has changed",
             "permission denied", "no such identity", "load key")

RECONNECT_FIRST_WAIT = 0.25  # seconds before reconnect()'s second try; doubled, at most max_backoff


def _prlimit_args(limits: Limits | None) -> list[str]:
    """`prlimit --as=N:N … --`: util-linux sets the rlimits and execs the argv (no shell)."""
    if limits is None:
        return []
    chosen = [f"--{name}={value}:{value}" for name, value in limits.rlimits()]
    return ["prlimit", *chosen, "--"] if chosen else []


def remote_command(argv: Sequence[str], *, timeout: float, cwd: str | None,
                   env: Mapping[str, str] | None, limits: Limits | None) -> str:
    """The one string the remote shell parses back into exactly `argv` (pure)."""
    argv = check_argv(argv)
    if argv[0].startswith("-") or "=" in argv[0]:
        raise ValueError(f"a command name may not start with '-' or contain '=': {argv[0]!r}")
    assignments = [f"{name}={value}" for name, value in check_env(env).items()]
    words = ["env", *assignments, "timeout", "-k", str(KILL_AFTER_SECONDS), f"{timeout:.3f}s",
             *_prlimit_args(limits), *argv]
    command = "exec " + shlex.join(words)
    if cwd is not None:
        command = f"cd -- {shlex.quote(cwd)} && {command}"
    return command


def ssh_argv(ssh_binary: str, options: Sequence[str], destination: str, command: str) -> list[str]:
    """ssh's argv: its options, then `--`, the destination and the remote command. ssh reads
    options after the destination too unless `--` ended them: a command word that starts with `-`
    (`-oProxyCommand=…`) is never one of ssh's options."""
    return after_options([ssh_binary, *options], [destination, command])


class SshExecutor:
    """Runs commands on one host over OpenSSH, in scratch directories under `scratch_root`."""

    def __init__(self, access: SshAccess, scratch_root: str, *, name: str | None = None,
                 reboot_timeout: float = 900.0, ssh_binary: str = "ssh",
                 max_backoff: float = 10.0, sleep: Sleeper = time.sleep) -> None:
        if not scratch_root.startswith("/"):
            raise ExecutorError(f"{name or access.host}: scratch root {scratch_root!r} is not absolute")
        self.access = access
        self.name = name or access.host
        self.scratch_root = scratch_root.rstrip("/") or "/"
        self.reboot_timeout = reboot_timeout
        self.max_backoff = max_backoff
        self.sleep = sleep  # how reconnect() waits between tries (injected in tests)
        self.ssh_binary = shutil.which(ssh_binary) or ssh_binary
        self._scratch: set[str] = set()
        self._control_dir = tempfile.mkdtemp(prefix="triage-ssh-") if access.control_master else None

    def __enter__(self) -> SshExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- the ssh command line ----------------------------------------------------------------

    def _options(self, *, master: str | None = None) -> list[str]:
        access = self.access
        options = [
            "-F", "none", "-T",
            "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={access.known_hosts_file}",
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "UpdateHostKeys=no",
            "-o", "IdentitiesOnly=yes",
            "-o", "IdentityAgent=none",
            "-o", "PasswordAuthentication=no",
            "-o", "KbdInteractiveAuthentication=no",
            "-o", f"ConnectTimeout={max(1, round(access.connect_timeout_s))}",
            "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=3",
            "-o", "LogLevel=ERROR",
            "-i", access.identity_file,
            "-p", str(access.port),
        ]
        if self._control_dir is not None:
            options += ["-o", f"ControlPath={self._control_dir}/%C",
                        "-o", f"ControlMaster={master or 'no'}"]
            if master:
                options += ["-o", "ControlPersist=yes"]
        return options

    def _destination(self) -> str:
        return f"{self.access.user}@{self.access.host}"

    def _control(self, operation: str) -> int:
        """`ssh -O check|exit` against the master; its exit status."""
        argv = [self.ssh_binary, *self._options(), "-O", operation, self._destination()]
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=10, check=False).returncode

    def _ensure_master(self) -> None:
        if self._control_dir is None or self._control("check") == 0:
            return
        # Started detached with its output on /dev/null: a master that inherited our pipes
        # would hold them open for as long as it persists.
        argv = [self.ssh_binary, *self._options(master="yes"), "-f", "-N", self._destination()]
        completed = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE,
                                   timeout=self.access.connect_timeout_s + 10, check=False)
        if completed.returncode != 0:
            self._raise_for(completed.returncode, completed.stderr)

    def _raise_for(self, returncode: int, stderr: bytes) -> None:
        """Raise if an ssh exit status and stderr say the link failed (not the command)."""
        if returncode != 255:
            return
        text = stderr.decode("utf-8", "replace").lower()
        first = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no answer"]
        if any(marker in text for marker in _REFUSALS):
            raise ExecutorError(f"{self.name}: ssh refused: {first[0]}")
        if any(marker in text for marker in _CONNECTION_FAILURES):
            raise ConnectionLost(f"{self.name}: connection lost: {first[0]}")
        # No word from ssh (a multiplexed session whose master died says nothing): the
        # command's own status 255, unless the host no longer answers.
        if not self._answers():
            raise ConnectionLost(f"{self.name}: connection lost (exit status 255, host not answering)")

    def _answers(self) -> bool:
        if self._control_dir is not None and self._control("check") != 0:
            return False
        argv = ssh_argv(self.ssh_binary, self._options(), self._destination(), "true")
        try:
            return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, check=False,
                                  timeout=self.access.connect_timeout_s + 5).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def _ssh(self, command: str, *, timeout: float, data: bytes | None = None) -> tuple[int, bytes, bytes, float]:
        """Run one remote command string; (status, stdout, stderr, seconds). Raises on link failure."""
        self._ensure_master()
        argv = ssh_argv(self.ssh_binary, self._options(), self._destination(), command)
        started = time.monotonic()
        process = subprocess.Popen(argv, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True, close_fds=True)
        try:
            stdout, stderr = process.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired as error:
            # the remote `timeout` ends the command; the client outliving it means a dead link
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.communicate()
            raise ConnectionLost(f"{self.name}: no answer within {timeout:.0f}s") from error
        except BaseException:  # Ctrl-C, SIGTERM: the client ends with us, its command with its link
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        self._raise_for(process.returncode, stderr)
        return process.returncode, stdout, stderr, time.monotonic() - started

    # --- the Executor protocol ---------------------------------------------------------------

    @property
    def limit_notes(self) -> tuple[str, ...]:
        if self.access.user != "root":
            return ()
        return (f"{self.name}: the SSH user is root, for whom RLIMIT_NPROC does not apply and no pids cgroup "
                "is made over SSH: the process count is bounded only by the plan's scaling",)

    def run(self, argv: Sequence[str], *, timeout: float, cwd: str | None = None,
            env: Mapping[str, str] | None = None, limits: Limits | None = None) -> Completed:
        argv = check_argv(argv)
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        command = remote_command(argv, timeout=timeout, cwd=cwd, env=env, limits=limits)
        # the client's own backstop: connecting, the remote timeout, its kill grace, a margin
        backstop = timeout + self.access.connect_timeout_s + KILL_AFTER_SECONDS + 10
        status, stdout, stderr, seconds = self._ssh(command, timeout=backstop)
        # GNU timeout exits 124 after its SIGTERM ended the command, 137 after its SIGKILL
        timed_out = status in (124, 137) and seconds >= timeout
        return Completed(argv, status, stdout, stderr, seconds, timed_out)

    def _checked(self, argv: Sequence[str], what: str, *, timeout: float = 60.0,
                 data: bytes | None = None) -> bytes:
        status, stdout, stderr, _ = self._ssh(shlex.join(argv), timeout=timeout, data=data)
        if status != 0:
            problem = stderr.decode("utf-8", "replace").strip() or f"exit status {status}"
            raise ExecutorError(f"{self.name}: {what}: {problem}")
        return stdout

    def put_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        if not path.startswith("/"):
            raise ExecutorError(f"{self.name}: {path!r} is not an absolute path")
        script = 'cat > "$1" && chmod "$2" "$1"'
        self._checked(["sh", "-c", script, "sh", path, f"{mode:o}"], f"cannot write {path}",
                      data=data, timeout=60 + len(data) / 1e6)

    def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        if not path.startswith("/"):
            raise ExecutorError(f"{self.name}: {path!r} is not an absolute path")
        return self._checked(["head", "-c", str(max_bytes), "--", path], f"cannot read {path}",
                             timeout=60 + max_bytes / 1e6)

    def make_scratch(self) -> str:
        script = 'mkdir -p -- "$1" && mktemp -d -- "$1/run-XXXXXXXX"'
        output = self._checked(["sh", "-c", script, "sh", self.scratch_root],
                               f"cannot make a scratch directory under {self.scratch_root}")
        path = output.decode("utf-8", "replace").strip()
        if not scratch_child(self.scratch_root, path):
            raise ExecutorError(f"{self.name}: mktemp answered {path!r}, not a directory under "
                                f"{self.scratch_root}")
        self._scratch.add(path)
        return path

    def remove_scratch(self, path: str) -> None:
        if not scratch_child(self.scratch_root, path):
            raise ExecutorError(f"{self.name}: {path!r} is not a scratch directory under {self.scratch_root}")
        script = 'chmod -R u+rwx -- "$1" 2>/dev/null; rm -rf -- "$1"'
        self._checked(["sh", "-c", script, "sh", path], f"cannot remove {path}", timeout=300)
        self._scratch.discard(path)

    def reconnect(self, timeout: float | None = None) -> float:
        """Wait until `true` runs on the host again; the seconds it took. ConnectionLost past `timeout`."""
        limit = self.reboot_timeout if timeout is None else timeout
        started = time.monotonic()
        backoff = Backoff(RECONNECT_FIRST_WAIT, self.max_backoff)
        tries = 0
        if self._control_dir is not None:
            self._drop_master()
        while True:
            try:
                status, _, _, _ = self._ssh("true", timeout=self.access.connect_timeout_s + 10)
                if status == 0:
                    return time.monotonic() - started
            except ConnectionLost:
                pass  # still down: wait and try again
            if self._control_dir is not None:
                self._drop_master()
            waited = time.monotonic() - started
            delay = backoff.delay(tries)
            if waited + delay > limit:
                raise ConnectionLost(f"{self.name}: no SSH answer within {limit:g}s")
            self.sleep(delay)
            tries += 1

    def _drop_master(self) -> None:
        assert self._control_dir is not None
        try:
            self._control("exit")
        except subprocess.TimeoutExpired:
            pass
        for entry in os.listdir(self._control_dir):
            try:
                os.unlink(os.path.join(self._control_dir, entry))  # a stale socket
            except OSError:
                pass

    def close(self) -> None:
        try:
            for path in sorted(self._scratch):
                try:
                    self.remove_scratch(path)
                except ConnectionLost:
                    break  # the host is gone; its scratch stays (a later run's clean-up)
        finally:
            if self._control_dir is not None:
                self._drop_master()
                shutil.rmtree(self._control_dir, ignore_errors=True)
                self._control_dir = None
