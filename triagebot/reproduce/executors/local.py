"""Reproduce stage: the local executor, running argv lists on this machine.

`subprocess` with an argv list and shell=False, always. Each command starts in a new session
(so in its own process group) with stdin from /dev/null; on timeout the whole group is killed
with SIGKILL, grandchildren included. When the command itself exits, what is left of its group
is killed too: a benchmark leaves nothing running. A process that must outlive its command (a
hook that starts a competing load) has to leave the group itself (a new session) and must not
keep the command's stdout or stderr open: output still arriving after the command exited is read
for DRAIN_SECONDS, then no longer.

Resource limits are set in the child before exec (setrlimit in preexec_fn: no wrapper program
appears in the argv); `Limits.processes` also becomes a pids cgroup the child joins there, when
this process may make one (root, or a delegated cgroup), named uniquely and removed once empty:
see pids_cgroup.py. Without one the
process count is bounded only by RLIMIT_NPROC, which root ignores; `limit_notes` says so.
A command that runs in a scratch directory sees that directory mounted over /tmp, in a mount
namespace of its own, where this process may do that (root): see private_tmp.py.
A limit above the current hard limit is lowered to it unless this process is root.
Output is kept up to `max_output_bytes` per stream; the rest is read and dropped so the command
never blocks.
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

from triagebot.reproduce.executors import private_tmp
from triagebot.reproduce.executors.pids_cgroup import PidsCgroups, join
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


_RLIMITS = {"as": resource.RLIMIT_AS, "nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE,
            "cpu": resource.RLIMIT_CPU, "nofile": resource.RLIMIT_NOFILE, "core": resource.RLIMIT_CORE}


def _rlimit_values(limits: Limits) -> list[tuple[int, int]]:
    """(resource, value) for each limit, capped at the current hard limit unless we are root."""
    chosen = []
    for name, value in limits.rlimits():
        kind = _RLIMITS[name]
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY and value > hard and os.geteuid() != 0:
            value = hard
        chosen.append((kind, value))
    return chosen


def _limit_setter(limits: Limits | None, cgroup: Path | None, tmp: str | None,
                  keep: tuple[str, ...] = ()) -> Callable[[], None] | None:
    if limits is None and cgroup is None and tmp is None:
        return None
    chosen = _rlimit_values(limits) if limits is not None else []

    def apply() -> None:  # runs in the child between fork and exec
        if tmp is not None:
            private_tmp.mount_scratch_on_tmp(tmp, keep)
        if cgroup is not None:
            join(cgroup)
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
                 max_output_bytes: int = 64 << 20, cgroups: PidsCgroups | None = None) -> None:
        if not os.path.isabs(scratch_root):
            raise ExecutorError(f"{name}: scratch root {scratch_root!r} is not an absolute path")
        self.name = name
        self.scratch_root = scratch_root.rstrip("/") or "/"
        self.max_output_bytes = max_output_bytes
        self._scratch: set[str] = set()
        self._cgroups = cgroups  # made on the first run with a process limit
        self._no_private_tmp: str | None = None  # why scratch cannot be a command's /tmp here
        self._private_tmp_checked = False

    @property
    def limit_notes(self) -> tuple[str, ...]:
        notes = []
        cgroups = self._pids_cgroups()
        if not cgroups.available():
            notes.append(f"{self.name}: no pids cgroup ({cgroups.problem}): the process count is bounded only "
                         "by RLIMIT_NPROC, which counts all of the user's processes and does not apply to root")
        if self._private_tmp_problem() is not None:
            notes.append(f"{self.name}: benchmarks see the host's /tmp, not their scratch directory "
                         f"({self._private_tmp_problem()})")
        return tuple(notes)

    def _private_tmp_problem(self) -> str | None:
        if not self._private_tmp_checked:
            Path(self.scratch_root).mkdir(parents=True, exist_ok=True)
            self._no_private_tmp = private_tmp.works(self.scratch_root)
            self._private_tmp_checked = True
        return self._no_private_tmp

    def _pids_cgroups(self) -> PidsCgroups:
        if self._cgroups is None:
            self._cgroups = PidsCgroups()
        return self._cgroups

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
        cgroup = None
        if limits is not None and limits.processes is not None and self._pids_cgroups().available():
            try:
                cgroup = self._pids_cgroups().make(limits.processes, self.name)
            except OSError as error:
                raise ExecutorError(f"{self.name}: cannot make a pids cgroup: {error.strerror}") from error
        # a command in a scratch directory (a plan's, not a hook) sees it as its /tmp
        tmp = cwd if (scratch_child(self.scratch_root, cwd) and not private_tmp.under_tmp(cwd)
                      and self._private_tmp_problem() is None) else None
        # what of the host's /tmp the program itself needs (a virtualenv made there) stays seen
        keep = private_tmp.programs_under_tmp(argv[0], self._environment(cwd, env)["PATH"]) if tmp else ()
        try:
            return self._run(argv, timeout, cwd, env, _limit_setter(limits, cgroup, tmp, keep))
        finally:
            if cgroup is not None:  # after what the command left there is gone
                self._pids_cgroups().release(cgroup)

    def _run(self, argv: tuple[str, ...], timeout: float, cwd: str, env: Mapping[str, str] | None,
             preexec: Callable[[], None] | None) -> Completed:
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                list(argv), shell=False, cwd=cwd, env=self._environment(cwd, env),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, close_fds=True, preexec_fn=preexec,
            )
        except FileNotFoundError:
            return Completed(argv, 127, b"", f"{argv[0]}: command not found\n".encode(),
                             time.monotonic() - started, False)
        except PermissionError as error:
            return Completed(argv, 126, b"", f"{argv[0]}: {error.strerror}\n".encode(),
                             time.monotonic() - started, False)
        except subprocess.SubprocessError as error:  # the limits could not be set in the child
            return Completed(argv, 126, b"", f"{argv[0]}: cannot start under its limits: {error}\n".encode(),
                             time.monotonic() - started, False)
        deadline = started + timeout
        try:
            stdout, stderr, timed_out = self._collect(process, deadline)
            if not timed_out:
                # both pipes closed, but a command may close them and go on running
                try:
                    process.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        except BaseException:  # Ctrl-C, SIGTERM: the command ends with us (its own session hears neither)
            _kill_group(process.pid)
            process.wait()
            raise
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
        if self._cgroups is not None:
            self._cgroups.retry_leftover()
