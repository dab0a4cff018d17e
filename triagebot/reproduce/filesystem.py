"""Reproduce stage: the filesystem a report's benchmark ran on, made again on a scratch device.

An LKP report says where its benchmark ran: `fs: btrfs` (the filesystem LKP made on the test
disk), `fs2: nfsv4` (that filesystem exported and mounted again over loopback NFS),
`mount_option: dax`, `disk: 1HDD` / `1SSD` / `2pmem` / `1BRD_48G` (how many disks of which kind;
BRD is a ram disk) and `md: RAID0`. lkp-tests' own `programs/fs/setup` makes the filesystem
with `mkfs -t FS` plus a few fixed options per type and mounts it with a fixed default option
set plus `mount_option`.

`place` turns those parameters and what a host has (its scratch block devices, the mkfs
programs found on it, the filesystems its kernel mounts) into a `Placement`: host steps (argv
lists) that make the filesystem on the host's first scratch device and mount it on the run's
scratch directory before each sample, the step that unmounts it after each sample, a line
saying what the benchmark runs on, and one line for each way the host's storage differs from
the report's. Pure: no process is started here (the runner runs the steps).

Nothing from a mail reaches mkfs or mount but allowlisted values: the filesystem type is one of
FILESYSTEMS, each mount option one of MOUNT_OPTIONS (rebuilt from the allowlist, never copied),
the device one the operator listed in hosts.toml, the mount point the runner's scratch dir.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

SCRATCH = "{scratch}"


@dataclass(frozen=True)
class Filesystem:
    name: str
    mkfs_program: str
    mkfs_options: tuple[str, ...]  # lkp-tests' programs/fs/setup `ensure_mkfs`, plus "force"
    mount_options: tuple[str, ...] = ()  # lkp-tests' `def_mount` for the type


# The filesystems a plan may make, with the options lkp-tests uses for each (programs/fs/setup):
# xfs `-f -mreflink=0` and `-o inode64`; ext2/ext4 `-q -F` (ext4 also initialises its inode
# tables and journal at once, so no lazy init runs during the benchmark); btrfs and f2fs get
# `-f` here because a scratch device may hold an earlier sample's filesystem (LKP wipes first).
FILESYSTEMS = {
    "btrfs": Filesystem("btrfs", "mkfs.btrfs", ("-f",)),
    "ext2": Filesystem("ext2", "mkfs.ext2", ("-q", "-F")),
    "ext3": Filesystem("ext3", "mkfs.ext3", ("-q", "-F")),
    "ext4": Filesystem("ext4", "mkfs.ext4", ("-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", "-F")),
    "xfs": Filesystem("xfs", "mkfs.xfs", ("-f", "-m", "reflink=0"), ("inode64",)),
    "f2fs": Filesystem("f2fs", "mkfs.f2fs", ("-f",)),
}
# Filesystems LKP runs on that a plan does not make: said, never attempted.
NOT_MADE = {"tmpfs": "a tmpfs", "nfs": "NFS", "ocfs2": "an OCFS2 cluster filesystem", "udf": "UDF"}
# `fs2`: the filesystem exported and mounted again over the network (loopback), as LKP does.
NETWORK_LAYERS = {"nfsv3": "NFSv3", "nfsv4": "NFSv4", "nfs": "NFS", "cifs": "CIFS", "smbv2": "SMB 2.0",
                  "smbv2p1": "SMB 2.1", "smbv3": "SMB 3.0", "smbv3p02": "SMB 3.02", "smbv3p11": "SMB 3.11"}
# Mount options a plan applies. `dax` only on a persistent-memory device (/dev/pmem*): elsewhere
# the kernel refuses or ignores it, so it is left out and said.
MOUNT_OPTIONS = ("dax", "noatime", "relatime", "nodiratime", "lazytime", "sync", "dirsync", "discard")
NEEDS_PMEM = ("dax",)
_DISK = re.compile(r"^(\d{1,3})(HDD|SSD|NVMe|pmem|BRD_(\d{1,6})G)$", re.IGNORECASE)
STORAGE_KEYS = ("fs", "fs2", "mount_option", "disk", "md")


@dataclass(frozen=True)
class StorageWant:
    """The storage an LKP report's benchmark ran on, as its parameters say (raw text kept for
    messages only; `fs` and each mount option are used only after an allowlist lookup)."""

    fs: str | None = None
    fs2: str | None = None
    mount_options: tuple[str, ...] = ()
    disk: str | None = None  # "1HDD", "2pmem", "1BRD_48G"
    md: str | None = None

    def describe(self) -> str:
        """`btrfs on 1HDD over nfsv4, mount option dax`."""
        text = self.fs or "its filesystem"
        if self.disk:
            text += f" on {self.disk}"
        if self.md:
            text += f" ({self.md})"
        if self.fs2:
            text += f" over {self.fs2}"
        if self.mount_options:
            text += f", mount option {','.join(self.mount_options)}"
        return text


def storage_wanted(parameters: Iterable[tuple[str, str]]) -> StorageWant | None:
    """The report's storage, from LKP parameters; None when it names no filesystem.

    A report without `fs` ran its benchmark on the test box's own filesystem (or on no
    filesystem at all): there is nothing to make, whatever its `disk`.
    """
    values = {name: str(value).strip() for name, value in parameters if name in STORAGE_KEYS}
    fs = values.get("fs") or None
    if fs is None:
        return None
    options = tuple(item.strip() for item in values.get("mount_option", "").split(",") if item.strip())
    return StorageWant(fs=fs, fs2=values.get("fs2") or None, mount_options=options,
                       disk=values.get("disk") or None, md=values.get("md") or None)


@dataclass(frozen=True)
class Placement:
    """Where a plan's benchmark runs, and how that differs from the report's storage."""

    prepare: tuple[tuple[str, ...], ...] = ()  # before each sample: mkfs, mount (host steps)
    release: tuple[tuple[str, ...], ...] = ()  # after each sample, always: umount
    runs_on: str = "the filesystem of the host's scratch directory"
    differs: tuple[str, ...] = ()  # one line for each way the storage differs from the report's
    score: float = 1.0  # 0..1: how much of the report's storage the host matches

    @property
    def made(self) -> bool:
        return bool(self.prepare)


def _disk_kind(disk: str | None) -> tuple[int, str] | None:
    """(count, kind) of an LKP `disk:` value: kind hdd / ssd / nvme / pmem / brd."""
    match = _DISK.match(disk or "")
    if not match:
        return None
    kind = match.group(2).lower()
    return int(match.group(1)), "brd" if kind.startswith("brd") else kind


def device_kind(device: str) -> str:
    """What a scratch device is, as far as its name says: pmem, brd (ram disk), loop, nvme, disk."""
    name = device.rsplit("/", 1)[-1]
    for prefix, kind in (("pmem", "pmem"), ("ram", "brd"), ("loop", "loop"), ("nvme", "nvme")):
        if name.startswith(prefix):
            return kind
    return "disk"


def place(want: StorageWant | None, devices: Iterable[str], programs: Iterable[str],
          kernel_filesystems: Iterable[str] | None = None) -> Placement:
    """Where the benchmark of a report that ran on `want` runs on a host.

    `devices`: the host's scratch block devices (hosts.toml); `programs`: the names of the
    programs the host has (mkfs.btrfs, …); `kernel_filesystems`: those its running kernel mounts
    (/proc/filesystems), None when not known (an SSH host before it is reached).
    """
    if want is None or not want.fs:
        return Placement()
    devices = tuple(devices)
    have = set(programs)
    differs: list[str] = []
    fs = FILESYSTEMS.get(want.fs.lower())
    score = 1.0
    fallback = "the plan runs on the filesystem of the host's scratch directory"
    if fs is None:
        what = NOT_MADE.get(want.fs.lower(), f"{want.fs!r}, a filesystem this planner does not make")
        return Placement(differs=(f"filesystem: the report ran on {what}; {fallback}",), score=0.0)
    if not devices:
        differs.append(f"filesystem: the report ran on {want.describe()}; the host lists no scratch "
                       f"device (scratch_devices in hosts.toml) to make {fs.name} on: {fallback}")
        return Placement(differs=tuple(differs), score=0.0)
    if fs.mkfs_program not in have:
        differs.append(f"filesystem: the report ran on {fs.name}; the host has no {fs.mkfs_program} "
                       f"to make it: {fallback}")
        return Placement(differs=tuple(differs), score=0.0)
    if kernel_filesystems is not None and fs.name not in set(kernel_filesystems):
        differs.append(f"filesystem: the report ran on {fs.name}; the host's kernel does not mount "
                       f"{fs.name} (not in /proc/filesystems): {fallback}")
        return Placement(differs=tuple(differs), score=0.0)
    device = devices[0]
    kind = device_kind(device)
    options = list(fs.mount_options)
    for option in want.mount_options:
        name = option.split("=", 1)[0].lower()
        if name not in MOUNT_OPTIONS or "=" in option:
            differs.append(f"mount option {option!r} is not one a plan applies "
                           f"({', '.join(MOUNT_OPTIONS)}): mounted without it")
            score -= 0.25
        elif name in NEEDS_PMEM and kind != "pmem":
            differs.append(f"mount option {name}: the report's filesystem was on persistent memory; "
                           f"the host's scratch device {device} is not: mounted without {name}")
            score -= 0.25
        elif name not in options:
            options.append(name)
    disk = _disk_kind(want.disk)
    if disk is not None:
        count, wanted_kind = disk
        if count > 1 and not want.md:
            differs.append(f"disks: the report used {count} {wanted_kind} disks, a filesystem on each; "
                           f"the plan makes one on {device}")
            score -= 0.1
        if wanted_kind in ("pmem", "brd") and kind != wanted_kind:
            shown = "persistent memory" if wanted_kind == "pmem" else "a ram disk (brd)"
            differs.append(f"disk: the report's filesystem was on {shown} ({want.disk}); "
                           f"the plan's is on {device}")
            score -= 0.25
    if want.md:
        differs.append(f"md: the report's filesystem was on an md array ({want.md}); the plan's is on "
                       f"one device, {device}")
        score -= 0.25
    if want.fs2:
        layer = NETWORK_LAYERS.get(want.fs2.lower(), repr(want.fs2))
        differs.append(f"fs2: the report's benchmark ran over {layer} (its {fs.name} exported and mounted "
                       f"again over loopback); the plan runs on the {fs.name} directly")
        score -= 0.5
    prepare: list[tuple[str, ...]] = [(fs.mkfs_program, *fs.mkfs_options, device)]
    mount = ["mount", "-t", fs.name]
    if options:
        mount += ["-o", ",".join(options)]
    prepare.append((*mount, device, SCRATCH))
    shown_options = f" -o {','.join(options)}" if options else ""
    runs_on = f"{fs.name} made on scratch device {device} ({fs.mkfs_program}; mount{shown_options})"
    return Placement(prepare=tuple(prepare), release=(("umount", SCRATCH),), runs_on=runs_on,
                     differs=tuple(differs), score=max(0.0, round(score, 4)))
