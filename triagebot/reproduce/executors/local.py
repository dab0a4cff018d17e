"""Reproduce stage: the local executor, running argv lists on this machine.

`subprocess` with an argv list and shell=False, always. Each command starts in a new session
(so in its own process group) with stdin from /dev/null; on timeout the whole group is killed
with SIGKILL, grandchildren included. When the command itself exits, what is left of its group
is killed too: a benchmark leaves nothing running. A process that must outlive its command (a
hook that starts a competing load) has to leave the group itself (a new session) and must not
keep the command's stdout or stderr open: output still arriving after the command exited is read
for DRAIN_SECONDS, then no longer.

Resource limits are set in the child before exec (setrlimit in preexec_fn). Output is kept up
to `max_output_bytes` per stream; the rest is read and dropped so the command never blocks.
"""
from __future__ import annotations

import os
import resource
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from triagebot.reproduce.executors.protocol import (
    Completed,
    ExecutorError,
    Limits,
    check_argv,
    check_env,
    scratch_child,
)

DRAIN_SECONDS = 1.0  # how long output is still read after the command exited
_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _limit_setter(limits: Limits | None) -> Callable[[], None] | None:
    if limits is None:
        return None
    pairs = [(resource.RLIMIT_AS, limits.address_space_bytes),
             (resource.RLIMIT_NPROC, limits.processes),
             (resource.RLIMIT_FSIZE, limits.file_size_bytes),
             (resource.RLIMIT_CPU, limits.cpu_seconds)]
    chosen = [(kind, value) for kind, value in pairs if value is not None]
    if not chosen:
        return None

    def apply() -> None:  # runs in the child between fork and exec
        for kind, value in chosen:
            resource.setrlimit(kind, (value, value))
    return apply


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


class LocalExecutor:
    """Runs commands on this machine, in scratch directories under `scratch_root`."""

    def __init__(self, scratch_root: str, *, name: str = "local",
                 max_output_bytes: int = 64 << 20) -> None:
        if not os.path.isabs(scratch_root):
            raise ExecutorError(f"{name}: scratch root {scratch_root!r} is not an absolute path")
        self.name = name
        self.scratch_root = scratch_root.rstrip("/") or "/"
        self.max_output_bytes = max_output_bytes
        self._scratch: set[str] = set()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _environment(self, cwd: str, env: Mapping[str, str] | None) -> dict[str, str]:
        base = {"PATH": os.environ.get("PATH") or _DEFAULT_PATH,
                "HOME": os.environ.get("HOME") or str(Path.home()),
                "TMPDIR": cwd}
        return {**base, **check_env(env)}

    def run(self, argv: Sequence[str], *, timeout: float, cwd: str | None = None,
            env: Mapping[str, str] | None = None, limits: Limits | None = None) -> Completed:
        argv = check_argv(argv)
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        if cwd is None:
            Path(self.scratch_root).mkdir(parents=True, exist_ok=True)
            cwd = self.scratch_root
        if not os.path.isdir(cwd):
            raise ExecutorError(f"{self.name}: working directory {cwd} does not exist")
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                list(argv), shell=False, cwd=cwd, env=self._environment(cwd, env),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, close_fds=True, preexec_fn=_limit_setter(limits),
            )
        except FileNotFoundError:
            return Completed(argv, 127, b"", f"{argv[0]}: command not found\n".encode(),
                             time.monotonic() - started, False)
        except PermissionError as error:
            return Completed(argv, 126, b"", f"{argv[0]}: {error.strerror}\n".encode(),
                             time.monotonic() - started, False)
        deadline = started + timeout
        stdout, stderr, timed_out = self._collect(process, deadline)
        if not timed_out:
            # both pipes closed, but a command may close them and go on running
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
        _kill_group(process.pid)  # whatever is left of its group
        returncode = process.wait()
        return Completed(argv, returncode, stdout, stderr, time.monotonic() - started, timed_out)

    def _collect(self, process: subprocess.Popen[bytes], deadline: float) -> tuple[bytes, bytes, bool]:
        """Read both pipes until they close, the timeout passes, or the drain after exit ends."""
        assert process.stdout is not None and process.stderr is not None
        buffers = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
        timed_out = False
        stop_reading_at: float | None = None
        with selectors.DefaultSelector() as selector:
            for stream in (process.stdout, process.stderr):
                selector.register(stream, selectors.EVENT_READ)
            while selector.get_map():
                now = time.monotonic()
                if stop_reading_at is None:
                    if process.poll() is not None:
                        # the command is done: end what it left in its group, drain briefly
                        _kill_group(process.pid)
                        stop_reading_at = now + DRAIN_SECONDS
                    elif now >= deadline:
                        timed_out = True
                        _kill_group(process.pid)
                        stop_reading_at = now + DRAIN_SECONDS
                elif now >= stop_reading_at:
                    break  # a process outside the group holds the pipe: stop waiting for it
                limit = stop_reading_at if stop_reading_at is not None else deadline
                for key, _ in selector.select(max(0.0, min(0.1, limit - now))):
                    data = os.read(key.fd, 65536)
                    if not data:
                        selector.unregister(key.fileobj)
                        continue
                    buffer = buffers[key.fd]
                    room = self.max_output_bytes - len(buffer)
                    if room > 0:
                        buffer += data[:room]
        out, err = bytes(buffers[process.stdout.fileno()]), bytes(buffers[process.stderr.fileno()])
        process.stdout.close()
        process.stderr.close()
        return out, err, timed_out

    def put_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        if not os.path.isabs(path):
            raise ExecutorError(f"{self.name}: {path!r} is not an absolute path")
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
            os.chmod(path, mode)
        except OSError as error:
            raise ExecutorError(f"{self.name}: cannot write {path}: {error.strerror}") from error

    def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        if not os.path.isabs(path):
            raise ExecutorError(f"{self.name}: {path!r} is not an absolute path")
        try:
            with open(path, "rb") as handle:
                return handle.read(max_bytes)
        except OSError as error:
            raise ExecutorError(f"{self.name}: cannot read {path}: {error.strerror}") from error

    def make_scratch(self) -> str:
        try:
            Path(self.scratch_root).mkdir(parents=True, exist_ok=True)
            path = tempfile.mkdtemp(prefix="run-", dir=self.scratch_root)
        except OSError as error:
            raise ExecutorError(f"{self.name}: cannot make a scratch directory under "
                                f"{self.scratch_root}: {error.strerror}") from error
        self._scratch.add(path)
        return path

    def remove_scratch(self, path: str) -> None:
        if not scratch_child(self.scratch_root, path):
            raise ExecutorError(f"{self.name}: {path!r} is not a scratch directory under {self.scratch_root}")
        # a benchmark may leave read-only files or directories: make them removable first
        def retry(function: Callable[..., object], name: str, _info: object) -> None:
            os.chmod(os.path.dirname(name), 0o700)
            function(name)
        if os.path.lexists(path):
            shutil.rmtree(path, onerror=retry)
        self._scratch.discard(path)

    def reconnect(self, timeout: float | None = None) -> float:
        return 0.0  # this machine is always reachable; a kernel switch here ends the process

    def close(self) -> None:
        for path in sorted(self._scratch):
            self.remove_scratch(path)
