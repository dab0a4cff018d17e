"""Reproduce stage: the kexec executor, a bare-metal SSH host that boots each commit triagebot built.

A host with `switcher = "kexec"` (rules/hosts.py) is reached over OpenSSH (the SshExecutor runs
its commands); `switch_kernel(commit, …)` builds the commit on this machine (triagebot.kernels:
the report's config, else the host's own /boot/config-$(uname -r) read over SSH, else a
fragment), then on the host:

1. installs it: the image as BOOT_DIR/vmlinuz-RELEASE, its config beside it, its modules under
   MODULES_DIR/RELEASE (depmod, and an initramfs by update-initramfs or dracut where the host
   has one, for a /lib/modules install);
2. loads it: `kexec -l IMAGE --reuse-cmdline [--initrd=…]`;
3. executes it: `systemctl kexec` where systemd runs, else `kexec -e` (or the host's `execute`);
4. waits (reconnecting, up to reboot_timeout_s) until the host's running-kernel hook names the
   release built, which names the commit (-tb<sha12>).

Every command is an argv list; those that need root get the host's `privilege` prefix (e.g.
["sudo", "-n"]). A host already running the release asked for is not rebooted.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from triagebot.backoff import Backoff
from triagebot.errors import TriageError
from triagebot.kernels.build import Artefact, KernelBuilder
from triagebot.kernels.config import KernelConfig, chosen_config, host_config_path
from triagebot.reproduce.executors.guest import KernelSwitchError, describe_switcher
from triagebot.reproduce.executors.protocol import Completed, ConnectionLost, Executor, ExecutorError, Limits
from triagebot.rules.hosts import Host, Switcher

STEP_TIMEOUT_SECONDS = 600.0  # one install or load step
EXECUTE_TIMEOUT_SECONDS = 60.0  # `systemctl kexec` returns at once; `kexec -e` never returns
FIRST_WAIT, MAX_WAIT = 1.0, 15.0  # between looks at a host that still runs the old kernel


class KexecExecutor:
    """An SSH host that kexecs into each kernel switched to; its commands run over SSH."""

    def __init__(self, host: Host, ssh: Executor, *, builder: KernelBuilder | None = None,
                 environ: Mapping[str, str] | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        import os

        if host.switcher is None or host.switcher.kind != "kexec":
            raise ExecutorError(f"{host.name}: no kexec switcher")
        self.host = host
        self.switcher: Switcher = host.switcher
        self.ssh = ssh
        self.name = ssh.name
        self.scratch_root = ssh.scratch_root
        self.builder = builder or KernelBuilder(self.switcher.kernel_tree, self.switcher.builds,
                                                environ=dict(os.environ if environ is None else environ))
        self.sleep = sleep
        self.builds: list[dict] = []
        self.steps: list[list[str]] = []  # each command of the switches, in order (the run's events)

    @property
    def kernel_switch(self) -> dict:
        return {"switcher": "kexec", "asked": self.switcher.asked, "accel": None, "guest": False,
                "describe": describe_switcher(self.switcher), "floor_percent": None}

    # --- switching -------------------------------------------------------------------------

    def _step(self, argv: Sequence[str], what: str, *, privileged: bool = True,
              timeout: float = STEP_TIMEOUT_SECONDS) -> Completed:
        full = [*(self.switcher.privilege if privileged else ()), *argv]
        self.steps.append(full)
        completed = self.ssh.run(full, timeout=timeout)
        if not completed.ok:
            detail = completed.stderr.decode("utf-8", "replace").strip()[-300:]
            raise KernelSwitchError(f"host {self.name}: {what} {full} failed (exit {completed.returncode}): {detail}")
        return completed

    def _has(self, program: str) -> bool:
        return self.ssh.run(["sh", "-c", 'command -v "$1" >/dev/null', "sh", program], timeout=60).ok

    def running(self) -> str:
        """What the host's running-kernel hook prints."""
        completed = self.ssh.run(self.host.running_kernel, timeout=60)
        if not completed.ok:
            raise KernelSwitchError(f"host {self.name}: running_kernel {list(self.host.running_kernel)} failed "
                                    f"(exit {completed.returncode})")
        return completed.stdout.decode("utf-8", "replace").strip()

    def _host_config(self) -> tuple[str, str]:
        release = self.ssh.run(["uname", "-r"], timeout=60).stdout.decode("utf-8", "replace").strip()
        path = host_config_path(release)
        try:
            return self.ssh.read_file(path).decode("utf-8", "replace"), f"{self.name}:{path}"
        except ExecutorError as error:
            raise KernelSwitchError(f"host {self.name}: config = \"host\": {error}") from None

    def switch_kernel(self, commit: str, report_config: KernelConfig | None = None,
                      report_options: tuple[tuple[str, str], ...] = (),
                      announce: Callable[[str], None] = lambda line: None) -> str:
        """Build `commit`, install it on the host, kexec into it; the release it then runs."""
        config = chosen_config(self.switcher, report_config, report_options, self._host_config, ())
        try:
            artefact = self.builder.build(commit, "x86_64", config, announce=announce)
        except TriageError as error:
            raise KernelSwitchError(f"host {self.name}: {error}") from None
        self.builds.append(artefact.to_json())
        if self.running() == artefact.release:
            announce(f"host {self.name} already runs {artefact.release}")
            return artefact.release
        image, initrd = self._install(artefact)
        self._step([self.switcher.kexec, "-l", image, "--reuse-cmdline",
                    *([f"--initrd={initrd}"] if initrd else [])], "kexec load")
        announce(f"host {self.name}: kexec into {artefact.release}")
        self._execute()
        return self._wait_for(artefact.release)

    def _install(self, artefact: Artefact) -> tuple[str, str | None]:
        """The image, config and modules on the host; (image path, initrd path or None)."""
        boot, release = self.switcher.boot_dir, artefact.release
        scratch = self.ssh.make_scratch()
        try:
            staged = {"image": f"{scratch}/vmlinuz", "config": f"{scratch}/config"}
            self.ssh.put_file(staged["image"], artefact.image.read_bytes())
            self.ssh.put_file(staged["config"], artefact.config.read_bytes())
            image = f"{boot}/vmlinuz-{release}"
            self._step(["install", "-D", "-m", "0644", "--", staged["image"], image], "install")
            self._step(["install", "-D", "-m", "0644", "--", staged["config"], f"{boot}/config-{release}"], "install")
            if artefact.modules is not None:
                self.ssh.put_file(f"{scratch}/modules.tar", artefact.modules.read_bytes())
                self._step(["mkdir", "-p", "--", self.switcher.modules_dir], "install")
                self._step(["tar", "-x", "--no-same-owner", "-f", f"{scratch}/modules.tar", "-C",
                            self.switcher.modules_dir], "install modules")
                if self.switcher.modules_dir == "/lib/modules":
                    self._step(["depmod", "-a", "--", release], "depmod")
            return image, self._initramfs(release)
        finally:
            self.ssh.remove_scratch(scratch)

    def _initramfs(self, release: str) -> str | None:
        """An initramfs for a kernel whose modules went to /lib/modules, where the host makes them."""
        if self.switcher.modules_dir != "/lib/modules" or self.switcher.boot_dir != "/boot":
            return None
        initrd = f"/boot/initrd.img-{release}"
        if self._has("update-initramfs"):
            self._step(["update-initramfs", "-c", "-k", release], "update-initramfs")
        elif self._has("dracut"):
            self._step(["dracut", "--force", "--kver", release, "--", initrd], "dracut")
        else:
            return None
        return initrd

    def _execute(self) -> None:
        if self.switcher.execute:
            argv = list(self.switcher.execute)
        elif self.ssh.run(["test", "-d", "/run/systemd/system"], timeout=60).ok:
            argv = ["systemctl", "kexec"]
        else:
            argv = [self.switcher.kexec, "-e"]
        try:
            self._step(argv, "kexec", timeout=EXECUTE_TIMEOUT_SECONDS)
        except ConnectionLost:
            pass  # the host went down into the new kernel: expected

    def _wait_for(self, release: str) -> str:
        """Until the host's running-kernel hook says `release` (reconnecting after the drop)."""
        started = time.monotonic()
        limit = self.host.reboot_timeout_s
        backoff = Backoff(FIRST_WAIT, MAX_WAIT)
        running, tries = "", 0
        while True:
            try:
                running = self.running()
                if running == release:
                    return running
            except ConnectionLost:
                left = limit - (time.monotonic() - started)
                if left <= 0:
                    break
                try:
                    self.ssh.reconnect(left)
                except ConnectionLost:
                    break
                continue
            delay = backoff.delay(tries)
            if time.monotonic() - started + delay > limit:
                break
            self.sleep(delay)
            tries += 1
        raise KernelSwitchError(f"host {self.name} did not come back running {release} within {limit:g} s "
                                f"(reboot_timeout_s); it runs {running or 'nothing that answered'}")

    # --- the Executor protocol, over SSH -----------------------------------------------------

    @property
    def limit_notes(self) -> tuple[str, ...]:
        return self.ssh.limit_notes

    def run(self, argv: Sequence[str], *, timeout: float, cwd: str | None = None,
            env: Mapping[str, str] | None = None, limits: Limits | None = None) -> Completed:
        return self.ssh.run(argv, timeout=timeout, cwd=cwd, env=env, limits=limits)

    def put_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self.ssh.put_file(path, data, mode)

    def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        return self.ssh.read_file(path, max_bytes)

    def make_scratch(self) -> str:
        return self.ssh.make_scratch()

    def remove_scratch(self, path: str) -> None:
        self.ssh.remove_scratch(path)

    def reconnect(self, timeout: float | None = None) -> float:
        return self.ssh.reconnect(timeout)

    def close(self) -> None:
        self.ssh.close()

    def __enter__(self) -> KexecExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
