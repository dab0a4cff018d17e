"""What this machine offers for booting a kernel it built, read when the rules are loaded: the
facts a `switcher = "vm"`, `"uml"` or `"auto"` host needs, and `triage hosts` shows.

- vm: `qemu-system-x86_64`; KVM only with real VMX/SVM (the CPU flags say `vmx` or `svm` and
  /dev/kvm opens read-write). A /dev/kvm without them is a paravirtual stand-in (PVM on a
  nested cloud machine) that cannot run an ordinary kernel: QEMU's TCG emulation is used there.
- uml: ptrace of a child allowed, and the host's XSAVE area no larger than the 2,696 bytes UML
  kernels up to 6.13 hard-code (`ptrace set fp regs failed, errno = 14` otherwise: hosts with
  Intel AMX). Measured, not guessed: a child is traced and PTRACE_GETREGSET(NT_X86_XSTATE)
  answers with the size the kernel uses (`python -m triagebot.rules.boot_probe xstate`).
- both: the kernel build's toolchain (make, gcc, flex, bison, bc, perl).

`boot_facts_from` is pure (the tests give it any machine's answers); `probe_boot` asks this one.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

QEMU = "qemu-system-x86_64"
TOOLCHAIN = ("make", "gcc", "flex", "bison", "bc", "perl", "busybox")  # busybox: the guest's power-off
UML_FP_SIZE = 2696  # HOST_FP_SIZE of arch/x86/um/user-offsets.c, 6.1 to 6.13
XSTATE_TIMEOUT_SECONDS = 20.0
_PTRACE_ATTACH, _PTRACE_DETACH, _PTRACE_GETREGSET = 16, 17, 0x4204
_NT_X86_XSTATE = 0x202


@dataclass(frozen=True)
class BootFacts:
    """This machine's answers about booting kernels."""

    qemu: str | None = None  # the path of qemu-system-x86_64, None when absent
    kvm: str | None = "not probed"  # None: real KVM is usable; else why not (TCG is used)
    toolchain_missing: tuple[str, ...] = ()
    uml: str | None = "not probed"  # None: UML can run here; else why not
    xstate_bytes: int | None = None  # the host's XSAVE area as ptrace reports it

    def vm_problem(self) -> str | None:
        """Why a `vm` switcher cannot run here, or None."""
        if self.qemu is None:
            return f"{QEMU} is not installed (apt-get install qemu-system-x86)"
        return self._toolchain_problem()

    def uml_problem(self) -> str | None:
        """Why a `uml` switcher cannot run here, or None."""
        return self._toolchain_problem() or self.uml

    def _toolchain_problem(self) -> str | None:
        if self.toolchain_missing:
            return f"the kernel build and boot need {', '.join(self.toolchain_missing)} (apt-get install " \
                   "build-essential flex bison bc libelf-dev libssl-dev busybox-static)"
        return None

    @property
    def accel(self) -> str:
        """The QEMU accelerator `accel = "auto"` takes here."""
        return "kvm" if self.kvm is None else "tcg"


def kvm_problem(cpu_flags: set[str], dev_kvm_opens: bool) -> str | None:
    """Why QEMU may not use KVM here (None: it may), from the CPU flags and /dev/kvm (pure)."""
    if not dev_kvm_opens:
        return "/dev/kvm does not open read-write"
    if not cpu_flags & {"vmx", "svm"}:
        return "/dev/kvm opens but the CPU shows no vmx or svm flag (a paravirtual KVM such as PVM: it runs " \
               "no ordinary kernel)"
    return None


def uml_problem_from(xstate_bytes: int | None, why: str | None) -> str | None:
    """Why UML cannot run here (None: it can), from the measured XSAVE size (pure)."""
    if xstate_bytes is None:
        return f"UML needs ptrace of its children: {why or 'the probe failed'}"
    if xstate_bytes > UML_FP_SIZE:
        return (f"the host's XSAVE area is {xstate_bytes} bytes, more than the {UML_FP_SIZE} UML kernels up to "
                "6.13 hard-code: they panic with 'ptrace set fp regs failed, errno = 14'")
    return None


def boot_facts_from(*, qemu: str | None, cpu_flags: set[str], dev_kvm_opens: bool,
                    missing_tools: tuple[str, ...], xstate: tuple[int | None, str | None]) -> BootFacts:
    """The facts from the machine's answers (pure)."""
    return BootFacts(qemu=qemu, kvm=kvm_problem(cpu_flags, dev_kvm_opens), toolchain_missing=missing_tools,
                     uml=uml_problem_from(*xstate), xstate_bytes=xstate[0])


def cpu_flags(cpuinfo: str) -> set[str]:
    """The first processor's flags in a /proc/cpuinfo text."""
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return set(value.split())
    return set()


def _opens(path: str) -> bool:
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(descriptor)
    return True


def measure_xstate() -> tuple[int | None, str | None]:
    """(the XSAVE size ptrace reports, None) or (None, why not), measured in a child Python."""
    try:
        completed = subprocess.run([sys.executable, "-m", "triagebot.rules.boot_probe", "xstate"],
                                   capture_output=True, text=True, timeout=XSTATE_TIMEOUT_SECONDS,
                                   stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"the ptrace probe did not finish: {error}"
    answer = completed.stdout.strip()
    if completed.returncode == 0 and answer.isdigit():
        return int(answer), None
    return None, (completed.stderr.strip().splitlines() or [f"exit {completed.returncode}"])[-1]


def probe_boot(which: Callable[[str], str | None] = shutil.which) -> BootFacts:
    """This machine's facts; the ptrace probe runs only where a UML could be built at all."""
    missing = tuple(tool for tool in TOOLCHAIN if which(tool) is None)
    try:
        flags = cpu_flags(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        flags = set()
    xstate = measure_xstate() if os.uname().machine == "x86_64" else (None, "UML is built for x86_64 hosts here")
    return boot_facts_from(qemu=which(QEMU), cpu_flags=flags, dev_kvm_opens=_opens("/dev/kvm"),
                           missing_tools=missing, xstate=xstate)


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


def _xstate_of_a_child() -> int:
    """Trace a stopped child and ask the kernel for its XSAVE area; its size in bytes."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p)
    child = os.fork()
    if child == 0:  # the traced child only waits to be killed
        signal.pause()
        os._exit(0)
    try:
        if libc.ptrace(_PTRACE_ATTACH, child, None, None) != 0:
            raise OSError(ctypes.get_errno(), f"PTRACE_ATTACH: {os.strerror(ctypes.get_errno())}")
        os.waitpid(child, 0)
        buffer = ctypes.create_string_buffer(64 * 1024)  # the kernel shortens it to the real size
        vector = _IoVec(ctypes.cast(buffer, ctypes.c_void_p), len(buffer))
        if libc.ptrace(_PTRACE_GETREGSET, child, _NT_X86_XSTATE, ctypes.byref(vector)) != 0:
            raise OSError(ctypes.get_errno(), f"PTRACE_GETREGSET: {os.strerror(ctypes.get_errno())}")
        libc.ptrace(_PTRACE_DETACH, child, None, None)
        return int(vector.length)
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


if __name__ == "__main__":
    if sys.argv[1:] != ["xstate"]:
        sys.exit("usage: python -m triagebot.rules.boot_probe xstate")
    try:
        print(_xstate_of_a_child())
    except OSError as error:
        sys.exit(f"ptrace refused: {error.strerror}")
