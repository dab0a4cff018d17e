"""A local host's facts read from the machine itself, for a hosts.toml entry that says
`describe = "auto"` (the packaged `this-machine` does): CPU model, microarchitecture, threads,
sockets, memory, the disk its scratch directory is on, its block devices, the benchmark and mkfs
programs on PATH and the filesystems its kernel mounts.

`facts_from` is pure (texts in, MachineFacts out: tests give it the /proc and /sys texts of any
machine); `probe_this_machine` reads them here. The microarchitecture comes from the CPU's
family and model, else its flags (triagebot.reproduce.cpus): a hypervisor often calls the CPU
only "Intel(R) Xeon(R) Processor" or "AMD EPYC" but passes the family, model and flags through.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from triagebot.reference.cpus import microarch_from_cpuinfo, microarch_of

GIB_KB = 1 << 20  # /proc/meminfo counts kB
SECTOR = 512
# Programs a plan may start, looked for on PATH: the benchmarks templates run, lkp-tests' `lkp`,
# and the mkfs programs faithful plans make filesystems with (triagebot.reproduce.filesystem).
PROGRAMS = ("fio", "sysbench", "stress-ng", "fs_mark", "hackbench", "perf", "dbench", "postmark",
            "redis-benchmark", "lkp", "mkfs.btrfs", "mkfs.ext2", "mkfs.ext3", "mkfs.ext4", "mkfs.xfs",
            "mkfs.f2fs", "mount", "umount")

STRESSORS_TIMEOUT_SECONDS = 20.0  # `stress-ng --stressors` prints a line and exits at once
_STRESSOR = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


@dataclass(frozen=True)
class BlockDevice:
    name: str  # vda, nvme0n1, sdb
    size_bytes: int
    rotational: bool | None
    model: str | None = None

    def describe(self) -> str:
        size = f"{self.size_bytes / (1 << 30):.0f}G"
        kind = {True: "rotational", False: "non-rotational", None: "rotation unknown"}[self.rotational]
        virtio = ", virtio: the hypervisor sets the rotational flag" if self.name.startswith("vd") else ""
        model = f" {self.model}" if self.model else ""
        return f"{self.name} {size}{model} ({kind}{virtio})"


@dataclass(frozen=True)
class MachineFacts:
    cpu_model: str | None = None
    microarch: str | None = None
    threads: int | None = None
    sockets: int | None = None
    memory_gb: int | None = None
    disk: str | None = None  # nvme / ssd / hdd: the disk the scratch directory is on
    disks: tuple[str, ...] = ()  # every block device, described
    programs: tuple[tuple[str, str], ...] = ()  # name, path
    kernel_filesystems: tuple[str, ...] | None = None  # what the running kernel mounts
    stressors: tuple[str, ...] | None = None  # what its stress-ng offers (`stress-ng --stressors`)

    def missing(self) -> list[str]:
        names = ("cpu_model", "threads", "sockets", "memory_gb", "disk")
        return [name for name in names if getattr(self, name) is None]


def _cpuinfo(text: str) -> tuple[dict[str, str], int, set[str]]:
    """The first processor's fields, the number of processors and the distinct physical ids."""
    first: dict[str, str] = {}
    processors = 0
    sockets: set[str] = set()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if name == "processor":
            processors += 1
        elif name == "physical id":
            sockets.add(value)
        if processors <= 1 and name and name not in first:
            first[name] = value
    return first, processors, sockets


def _number(text: str | None) -> int | None:
    try:
        return int(text, 0) if text and text.startswith("0x") else int(text) if text else None
    except ValueError:
        return None


def _memory_gb(meminfo: str) -> int | None:
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            words = line.split()
            if len(words) >= 2 and words[1].isdigit():
                return max(1, round(int(words[1]) / GIB_KB))
    return None


def stressors_from(text: str | None) -> tuple[str, ...] | None:
    """The stressor names `stress-ng --stressors` printed (one line, space-separated), sorted;
    None when there is no such output or it holds anything but stressor names."""
    names = (text or "").split()
    if not names or not all(_STRESSOR.match(name) for name in names):
        return None
    return tuple(sorted(set(names)))


def disk_kind(device: BlockDevice | None) -> str | None:
    """nvme / ssd / hdd for the device the scratch directory is on."""
    if device is None:
        return None
    if device.name.startswith("nvme"):
        return "nvme"
    if device.rotational is None:
        return None
    return "hdd" if device.rotational else "ssd"


def facts_from(*, cpuinfo: str, meminfo: str, filesystems: str | None, devices: tuple[BlockDevice, ...],
               scratch_device: str | None, cpu_count: int | None,
               which: Callable[[str], str | None], fs_modules: tuple[str, ...] = (),
               stressors: str | None = None) -> MachineFacts:
    """A machine's facts from its /proc/cpuinfo, /proc/meminfo and /proc/filesystems texts, its
    block devices, the device its scratch directory is on, a PATH lookup, the filesystem
    modules its kernel could load on a mount and what its `stress-ng --stressors` printed (pure)."""
    first, processors, sockets = _cpuinfo(cpuinfo)
    model = first.get("model name") or first.get("Model") or None
    arch = microarch_of(None, model) or microarch_from_cpuinfo(
        first.get("vendor_id"), _number(first.get("cpu family")), _number(first.get("model")),
        _number(first.get("stepping")), first.get("flags", "").split())
    scratch = next((device for device in devices if device.name == scratch_device), None)
    kernel = None
    if filesystems is not None:
        kernel = tuple(sorted({line.split()[-1] for line in filesystems.splitlines() if line.split()}
                              | set(fs_modules)))
    programs = tuple((name, path) for name in PROGRAMS if (path := which(name)))
    return MachineFacts(
        cpu_model=model, microarch=arch.name if arch else None,
        threads=cpu_count or processors or None, sockets=len(sockets) or (1 if processors else None),
        memory_gb=_memory_gb(meminfo), disk=disk_kind(scratch),
        disks=tuple(device.describe() for device in devices), programs=programs,
        kernel_filesystems=kernel, stressors=stressors_from(stressors) if dict(programs).get("stress-ng") else None)


# --- reading this machine ----------------------------------------------------------------------

def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def block_devices(sys_block: Path = Path("/sys/block")) -> tuple[BlockDevice, ...]:
    """Whole disks under /sys/block (loop, ram and zram devices left out: no disk of their own)."""
    found = []
    for entry in sorted(sys_block.iterdir()) if sys_block.is_dir() else ():
        if entry.name.startswith(("loop", "ram", "zram", "dm-", "md", "sr")):
            continue
        size = _number((_read(entry / "size") or "").strip())
        rotational = (_read(entry / "queue" / "rotational") or "").strip()
        model = (_read(entry / "device" / "model") or "").strip() or None
        found.append(BlockDevice(entry.name, (size or 0) * SECTOR,
                                 {"1": True, "0": False}.get(rotational), model))
    return tuple(found)


def device_of(path: str, sys_block: Path = Path("/sys/block")) -> str | None:
    """The whole disk (vda, nvme0n1) holding the filesystem `path` (or its nearest existing
    parent) is on, through /sys/dev/block/MAJOR:MINOR; None for a filesystem on no disk."""
    place = Path(path)
    while not place.exists() and place != place.parent:
        place = place.parent
    try:
        number = os.stat(place).st_dev
    except OSError:
        return None
    link = Path(f"/sys/dev/block/{os.major(number)}:{os.minor(number)}")
    try:
        resolved = link.resolve(strict=True)
    except OSError:
        return None
    # …/block/vda/vda1 for a partition, …/block/vda for a whole disk
    for part in (resolved, resolved.parent):
        if (sys_block / part.name).exists():
            return part.name
    return None


def filesystem_modules(release: str, root: Path = Path("/lib/modules")) -> tuple[str, ...]:
    """Filesystem modules the running kernel could load (a mount loads one on demand)."""
    directory = root / release / "kernel" / "fs"
    if not directory.is_dir():
        return ()
    return tuple(sorted({path.name.split(".ko", 1)[0] for path in directory.rglob("*.ko*")}))


def stressors_output(stress_ng: str | None) -> str | None:
    """What `stress-ng --stressors` prints here (its argv, no shell); None when it cannot run."""
    if stress_ng is None:
        return None
    try:
        completed = subprocess.run([stress_ng, "--stressors"], capture_output=True, timeout=STRESSORS_TIMEOUT_SECONDS,
                                   stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return completed.stdout.decode("utf-8", "replace") if completed.returncode == 0 else None


def probe_this_machine(scratch_dir: str, *, environ: Mapping[str, str] | None = None) -> MachineFacts:
    """This machine's facts, read from /proc and /sys (what `describe = "auto"` fills in), and
    the stressors its stress-ng offers."""
    path = (environ if environ is not None else os.environ).get("PATH")
    return facts_from(
        cpuinfo=_read(Path("/proc/cpuinfo")) or "", meminfo=_read(Path("/proc/meminfo")) or "",
        filesystems=_read(Path("/proc/filesystems")), devices=block_devices(),
        scratch_device=device_of(scratch_dir), cpu_count=os.cpu_count(),
        fs_modules=filesystem_modules(os.uname().release),
        which=lambda name: shutil.which(name, path=_with_sbin(path)),
        stressors=stressors_output(shutil.which("stress-ng", path=_with_sbin(path))))


def _with_sbin(path: str | None) -> str:
    """PATH plus the sbin directories mkfs lives in (a non-login shell may not have them)."""
    parts = [part for part in (path or "").split(os.pathsep) if part]
    for extra in ("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin"):
        if extra not in parts:
            parts.append(extra)
    return os.pathsep.join(parts)
