"""Kernel builds: booting a built kernel to run one command, under QEMU (vm) or as UML (uml).

The guest's root is this machine's / read-only (virtio-9p with multidevs=remap, or hostfs), so
the host's own benchmark programs run unchanged inside the booted kernel; the host's scratch root
is mounted writable at the same path, for the plan's scratch directories and the exchange
directory through which the command goes in and its output comes out (guest_init.sh).

`qemu_argv`, `uml_argv`, `command_words` and `read_console` are pure; `boot` runs one guest
to its end (bounded: the command's timeout plus the boot allowance, then the process group is
killed). QEMU's x86 guest cannot power off without ACPI: it reboots and -no-reboot ends QEMU;
panic=-1 does the same for a kernel that panics. What each switcher needs from the machine is
triagebot.rules.boot_probe's.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from triagebot.errors import TriageError

GUEST_INIT = "guest_init.sh"
MAX_CONSOLE = 64 * 1024  # the console's last bytes kept (diagnosis of a boot that went wrong)
SHELL = "/bin/sh"
# What a kernel needs for each switcher's boot, merged after any config (config.py): a report's
# config is a distribution's, with 9p and the virtio drivers as modules or off.
VM_NEEDS = ("CONFIG_64BIT=y", "CONFIG_BINFMT_ELF=y", "CONFIG_BINFMT_SCRIPT=y", "CONFIG_PROC_FS=y",
            "CONFIG_SYSFS=y", "CONFIG_TMPFS=y", "CONFIG_DEVTMPFS=y", "CONFIG_TTY=y", "CONFIG_SERIAL_8250=y",
            "CONFIG_SERIAL_8250_CONSOLE=y", "CONFIG_PCI=y", "CONFIG_VIRTIO_MENU=y", "CONFIG_VIRTIO_PCI=y",
            "CONFIG_NET=y", "CONFIG_NET_9P=y", "CONFIG_NET_9P_VIRTIO=y", "CONFIG_NETWORK_FILESYSTEMS=y",
            "CONFIG_9P_FS=y")
UML_NEEDS = ("CONFIG_64BIT=y", "CONFIG_BINFMT_ELF=y", "CONFIG_BINFMT_SCRIPT=y", "CONFIG_HOSTFS=y",
             "CONFIG_PROC_FS=y", "CONFIG_SYSFS=y", "CONFIG_TMPFS=y", "CONFIG_DEVTMPFS=y", "CONFIG_TTY=y",
             "CONFIG_STDERR_CONSOLE=y", "CONFIG_NULL_CHAN=y", "CONFIG_FD_CHAN=y")
NEEDS = {"vm": VM_NEEDS, "uml": UML_NEEDS}
# A path handed to the guest on its command line or to QEMU's -fsdev: no separators of either.
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9._/+-]*")
_MARK = re.compile(r"@@TRIAGE-([A-Z-]+) ?(.*)$", re.MULTILINE)  # a line may begin with a terminal reset


class BootError(TriageError):
    """A guest did not boot, or ended without running its command: the console's last lines say why."""


@dataclass(frozen=True)
class Guest:
    """How to boot one built kernel."""

    kind: str  # vm / uml
    image: Path
    scratch_root: str  # mounted writable in the guest at the same path
    memory_mib: int = 512
    accel: str = "tcg"  # vm: tcg / kvm
    cpu: str = "qemu64"  # vm
    qemu: str = "qemu-system-x86_64"


@dataclass(frozen=True)
class Booted:
    """What a guest's console said."""

    kernel: str | None  # `uname -r` inside
    uptime_at_init: float | None  # seconds from the kernel's start to init
    status: int | None  # the command's exit status (None: the guest ended before it)
    console: str  # its last MAX_CONSOLE bytes
    seconds: float  # the whole boot, host wall time
    timed_out: bool


def guest_init() -> Path:
    """The init script's path inside the installed package (the guest sees the host's /)."""
    return Path(str(resources.files("triagebot.kernels").joinpath(GUEST_INIT)))


def plain_path(path: str, what: str) -> str:
    """`path` when it can go on a kernel command line and into QEMU's options as it is."""
    if not _PLAIN_PATH.fullmatch(path) or "/../" in path + "/":
        raise BootError(f"{what} {path!r}: only letters, digits and . _ / + - can be handed to a guest")
    return path


def _init_words(exchange: str, guest: Guest) -> list[str]:
    return [f"init={SHELL}", "--", plain_path(str(guest_init()), "the guest init"),
            plain_path(exchange, "the exchange directory"), plain_path(guest.scratch_root, "the scratch root"),
            guest.kind]


def qemu_argv(guest: Guest, exchange: str) -> list[str]:
    """QEMU booting `guest.image` with the host's / read-only and the scratch root writable (pure)."""
    root = "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
    scratch = (f"local,id=scratch,path={plain_path(guest.scratch_root, 'the scratch root')},"
               "security_model=none,multidevs=remap")
    append = ["console=ttyS0", "quiet", "root=/dev/root", "rootfstype=9p",
              "rootflags=trans=virtio,version=9p2000.L,cache=loose", "ro", "panic=-1", *_init_words(exchange, guest)]
    return [guest.qemu, "-accel", guest.accel, "-cpu", guest.cpu, "-m", str(guest.memory_mib), "-smp", "1",
            "-nodefaults", "-no-user-config", "-nographic", "-no-reboot", "-serial", "stdio", "-monitor", "none",
            "-kernel", plain_path(str(guest.image), "the kernel image"),
            "-fsdev", root, "-device", "virtio-9p-pci,fsdev=root,mount_tag=/dev/root",
            "-fsdev", scratch, "-device", "virtio-9p-pci,fsdev=scratch,mount_tag=triage-scratch",
            "-append", " ".join(append)]


def uml_argv(guest: Guest, exchange: str) -> list[str]:
    """The UML kernel booting with hostfs root read-only, its console on stdout (pure)."""
    return [plain_path(str(guest.image), "the kernel image"), f"mem={guest.memory_mib}M", "rootfstype=hostfs",
            "rootflags=/", "ro", "quiet", "con0=fd:0,fd:1", "con=null", *_init_words(exchange, guest)]


def command_words(argv: Sequence[str], *, timeout: float, env: Mapping[str, str],
                  rlimits: Sequence[tuple[str, int]]) -> list[str]:
    """The guest's whole command: `timeout` ends it, `env -i` gives it exactly `env`, util-linux
    prlimit sets its limits, then `argv` (pure)."""
    if not argv or argv[0].startswith("-") or "=" in argv[0]:
        raise ValueError(f"a command name may not start with '-' or contain '=': {argv[:1]!r}")
    limits = [f"--{name}={value}:{value}" for name, value in rlimits]
    return ["timeout", "-k", "2", f"{timeout:.3f}s", "env", "-i", *(f"{name}={value}" for name, value in env.items()),
            *(["prlimit", *limits, "--"] if limits else []), *argv]


def write_exchange(exchange: Path, words: Sequence[str], cwd: str) -> None:
    """One file a word, and the working directory, for guest_init.sh."""
    for index, word in enumerate(words):
        (exchange / f"arg.{index}").write_text(word, encoding="utf-8")
    (exchange / "cwd").write_text(cwd, encoding="utf-8")


def read_console(console: str, *, seconds: float, timed_out: bool) -> Booted:
    """The markers of a guest's console (pure)."""
    marks: dict[str, str] = {}
    for name, value in _MARK.findall(console.replace("\r", "")):
        marks.setdefault(name, value.strip())
    uptime = marks.get("UPTIME-AT-INIT")
    status = marks.get("STATUS")
    return Booted(kernel=marks.get("KERNEL") or None,
                  uptime_at_init=float(uptime) if uptime and re.fullmatch(r"\d+(\.\d+)?", uptime) else None,
                  status=int(status) if status and status.isdigit() else None,
                  console=console[-MAX_CONSOLE:], seconds=seconds, timed_out=timed_out)


def boot(argv: Sequence[str], *, timeout: float, environ: Mapping[str, str]) -> Booted:
    """Run one guest (QEMU or UML) to its end, at most `timeout` seconds; its console read."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, env=dict(environ), start_new_session=True)
    except OSError as error:
        raise BootError(f"cannot start {argv[0]}: {error.strerror}") from None
    timed_out = False
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(process)
        output, _ = process.communicate()
    finally:
        _kill(process)  # UML leaves helper processes in its group
    return read_console(output[-MAX_CONSOLE:].decode("utf-8", "replace"), seconds=time.monotonic() - started,
                        timed_out=timed_out)


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
