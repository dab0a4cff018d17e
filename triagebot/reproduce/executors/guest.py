"""Reproduce stage: the guest executor, running each command inside a kernel triagebot built.

A host with `switcher = "vm"` or `"uml"` (rules/hosts.py) runs the plan inside the kernel of the
commit asked for: `switch_kernel(commit, …)` builds it (triagebot.kernels.build: from the cache
when it was built before), and every `run()` boots it under QEMU (TCG, or KVM where the CPU has
VMX/SVM) or as User-mode Linux, with an init that runs that one command and powers off
(triagebot/kernels/guest_init.sh). The command's stdout, stderr and status come back through an
exchange directory in the host's scratch root, which the guest mounts writable; the host's / is
the guest's root, read-only, so the benchmark that runs is the host's own program.

Everything else of the Executor protocol (scratch directories, files a plan writes or collects)
is done on the host itself, by a LocalExecutor on the same scratch root: the guest sees the same
paths. Each boot checks the kernel is the one built (`uname -r` names the commit); a guest that
does not reach its command is an ExecutorError with the console's last lines, so the runner
retries that sample and then gives up with the reason.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from triagebot.errors import TriageError
from triagebot.kernels.boot import (
    NEEDS,
    BootError,
    Guest,
    boot,
    command_words,
    qemu_argv,
    uml_argv,
    write_exchange,
)
from triagebot.kernels.build import Artefact, KernelBuilder
from triagebot.kernels.config import KernelConfig, chosen_config, host_config_path
from triagebot.reproduce.executors.local import LocalExecutor
from triagebot.reproduce.executors.protocol import Completed, ExecutorError, Limits, check_argv, check_env
from triagebot.rules.hosts import Host, Switcher
from triagebot.rules.trees import KernelBuilds

MAX_OUTPUT = 64 << 20
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class KernelSwitchError(TriageError):
    """A kernel could not be built or booted for a run (the run ends with this reason)."""


def describe_switcher(switcher: Switcher, accel: str | None = None) -> str:
    """How a run's kernels ran, for the plan, the verdict line, Slack and the web page."""
    if switcher.kind == "vm":
        how = "KVM guest (QEMU)" if accel == "kvm" else "QEMU TCG guest (emulated x86_64)"
        return f"inside a {how} of each built kernel"
    if switcher.kind == "uml":
        return "inside User-mode Linux (each kernel built as ARCH=um)"
    return "on the host itself, kexec'd into each built kernel"


def _host_config() -> tuple[str, str]:
    import os

    path = host_config_path(os.uname().release)
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace"), path
    except OSError as error:
        raise KernelSwitchError(f"config = \"host\": cannot read {path}: {error.strerror}") from None


class GuestExecutor:
    """Runs commands inside guests of the kernel last switched to, on this machine."""

    def __init__(self, host: Host, builds: KernelBuilds | None = None, *, name: str | None = None,
                 builder: KernelBuilder | None = None, environ: Mapping[str, str] | None = None) -> None:
        import os

        if host.switcher is None or not host.switcher.guest:
            raise ExecutorError(f"{host.name}: no vm or uml switcher")
        self.switcher: Switcher = host.switcher
        self.name = name or host.name
        self.scratch_root = host.scratch_dir
        self._local = LocalExecutor(host.scratch_dir, name=self.name, max_output_bytes=MAX_OUTPUT)
        self._environ = dict(os.environ if environ is None else environ)
        self.builder = builder or KernelBuilder(self.switcher.kernel_tree, builds or self.switcher.builds,
                                                environ=self._environ)
        facts = host.boot
        self.accel = (facts.accel if facts is not None else "tcg") if self.switcher.accel == "auto" \
            else self.switcher.accel
        self._problem = None if facts is None else (facts.vm_problem() if self.switcher.kind == "vm"
                                                    else facts.uml_problem())
        self._artefact: Artefact | None = None
        self.builds: list[dict] = []  # each kernel switched to in this executor's life, for the run record
        self.boots: list[dict] = []  # each guest's boot: kernel, uptime at init, wall seconds

    # --- the kernel -------------------------------------------------------------------------

    @property
    def kernel_switch(self) -> dict:
        """How this executor's runs are made, kept with the run."""
        return {"switcher": self.switcher.kind, "asked": self.switcher.asked,
                "accel": self.accel if self.switcher.kind == "vm" else None,
                "guest": True, "describe": describe_switcher(self.switcher, self.accel),
                "floor_percent": self.switcher.floor_percent}

    def switch_kernel(self, commit: str, report_config: KernelConfig | None = None,
                      report_options: tuple[tuple[str, str], ...] = (), announce=lambda line: None) -> str:
        """Build `commit` (or take it from the cache) for the next runs; its kernel release."""
        if self._problem is not None:
            raise KernelSwitchError(f"host {self.name}: switcher {self.switcher.kind} cannot run here: {self._problem}")
        config = chosen_config(self.switcher, report_config, report_options, _host_config,
                               NEEDS[self.switcher.kind])
        try:
            artefact = self.builder.build(commit, self.switcher.arch, config, needed=NEEDS[self.switcher.kind],
                                          announce=announce)
        except TriageError as error:
            raise KernelSwitchError(f"host {self.name}: {error}") from None
        self._artefact = artefact
        self.builds.append(artefact.to_json())
        return artefact.release

    def _guest(self) -> Guest:
        assert self._artefact is not None
        cpu = self.switcher.cpu or ("host" if self.accel == "kvm" else "qemu64")
        return Guest(kind=self.switcher.kind, image=self._artefact.image, scratch_root=self.scratch_root,
                     memory_mib=self.switcher.memory_mib, accel=self.accel, cpu=cpu)

    # --- the Executor protocol ----------------------------------------------------------------

    @property
    def limit_notes(self) -> tuple[str, ...]:
        return (f"{self.name}: each command runs inside a guest kernel ({self.kernel_switch['describe']}): its "
                "limits are rlimits set by prlimit there, with no pids cgroup; /tmp is the guest's own tmpfs",)

    def _environment(self, cwd: str, env: Mapping[str, str] | None) -> dict[str, str]:
        base = {"PATH": self._environ.get("PATH") or _PATH, "HOME": self._environ.get("HOME") or "/root",
                "TMPDIR": cwd}
        return {**base, **check_env(env)}

    def run(self, argv: Sequence[str], *, timeout: float, cwd: str | None = None,
            env: Mapping[str, str] | None = None, limits: Limits | None = None) -> Completed:
        argv = check_argv(argv)
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        if self._artefact is None:
            raise ExecutorError(f"{self.name}: no kernel to boot yet (switch_kernel first)")
        Path(self.scratch_root).mkdir(parents=True, exist_ok=True)
        cwd = cwd or self.scratch_root
        exchange = Path(tempfile.mkdtemp(prefix="guest-", dir=self.scratch_root))
        try:
            words = command_words(argv, timeout=timeout, env=self._environment(cwd, env),
                                  rlimits=limits.rlimits() if limits is not None else ())
            write_exchange(exchange, words, cwd)
            guest = self._guest()
            try:
                boot_argv = qemu_argv(guest, str(exchange)) if guest.kind == "vm" else uml_argv(guest, str(exchange))
            except BootError as error:
                raise ExecutorError(f"{self.name}: {error}") from None
            booted = boot(boot_argv, timeout=timeout + self.switcher.boot_seconds, environ=self._boot_environment())
            self.boots.append({"kernel": booted.kernel, "uptime_at_init": booted.uptime_at_init,
                               "seconds": round(booted.seconds, 2)})
            self._check(booted)
            return self._completed(argv, exchange, booted)
        finally:
            shutil.rmtree(exchange, ignore_errors=True)

    def _boot_environment(self) -> dict[str, str]:
        # UML keeps its memory in a file under TMPDIR: a private directory of the scratch root
        return {"PATH": self._environ.get("PATH") or _PATH, "HOME": self._environ.get("HOME") or "/root",
                "TMPDIR": self.scratch_root, "LC_ALL": "C"}

    def _check(self, booted) -> None:
        assert self._artefact is not None
        last = "\n".join(booted.console.strip().splitlines()[-15:])
        if booted.kernel is None:
            raise ExecutorError(f"{self.name}: the guest kernel {self._artefact.release} never reached its init "
                                f"({'timed out' if booted.timed_out else 'ended'} after {booted.seconds:.0f} s); "
                                f"console:\n{last}")
        if booted.kernel != self._artefact.release:
            raise ExecutorError(f"{self.name}: asked for {self._artefact.release}, but the guest runs {booted.kernel}")

    def _completed(self, argv: tuple[str, ...], exchange: Path, booted) -> Completed:
        status_file = exchange / "status"
        if not status_file.is_file():
            last = "\n".join(booted.console.strip().splitlines()[-15:])
            raise ExecutorError(f"{self.name}: the guest ended before its command finished "
                                f"({'timed out' if booted.timed_out else 'no status'}); console:\n{last}")
        status = int(status_file.read_text().strip() or "1")
        stdout = _read(exchange / "stdout")
        stderr = _read(exchange / "stderr")
        times = (exchange / "times").read_text().split() if (exchange / "times").is_file() else []
        seconds = float(times[1]) - float(times[0]) if len(times) == 2 else booted.seconds
        # GNU timeout: 124 after its SIGTERM, 137 after its SIGKILL
        return Completed(argv, status, stdout, stderr, seconds, status in (124, 137) or booted.timed_out)

    def put_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._local.put_file(path, data, mode)

    def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        return self._local.read_file(path, max_bytes)

    def make_scratch(self) -> str:
        return self._local.make_scratch()

    def remove_scratch(self, path: str) -> None:
        self._local.remove_scratch(path)

    def reconnect(self, timeout: float | None = None) -> float:
        return 0.0  # each guest is a process of this machine: nothing to reconnect to

    def close(self) -> None:
        self._local.close()

    def __enter__(self) -> GuestExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_OUTPUT)
    except OSError:
        return b""
