"""Reproduce stage: host choice, and what a host's facts mean.

The hosts themselves are rules data (triagebot.rules.hosts, rules/hosts.toml). Host choice is
pure: `score_host` compares a host with a report's TestMachine (CPU vendor, microarchitecture and
its core family, threads, sockets, memory, disk type) and, when the report's LKP parameters name
a filesystem, with its storage (can the host make that filesystem on a scratch device:
triagebot.reproduce.filesystem), and returns the score with every difference spelled out;
`choose_host` takes the best idle host. What a CPU is lives in triagebot.reproduce.cpus.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from triagebot.records.report import TestMachine
from triagebot.reference.cpus import Microarch, cpu_vendor, microarch_of
from triagebot.reproduce.filesystem import Placement, place, storage_wanted
from triagebot.rules.hosts import Host


def host_to_json(host: Host) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": host.name, "reach": host.reach, "cpu_model": host.cpu_model,
        "microarch": host.microarch, "threads": host.threads, "sockets": host.sockets,
        "memory_gb": host.memory_gb, "disk": host.disk, "scratch_dir": host.scratch_dir,
        "scratch_devices": list(host.scratch_devices), "labels": list(host.labels),
        "switch_kernel": list(host.switch_kernel), "running_kernel": list(host.running_kernel),
        "can_switch_kernel": host.can_switch_kernel, "reboot_timeout_s": host.reboot_timeout_s,
        "tools": dict(host.tools), "programs": dict(host.programs),
        "kernel_filesystems": list(host.kernel_filesystems) if host.kernel_filesystems is not None else None,
        "describe": host.describe, "described": list(host.described), "disks": list(host.disks),
        "stressors": list(host.stressors) if host.stressors is not None else None,
        "untrusted_code": host.untrusted_code,
    }
    if host.switcher is not None:
        data["switcher"] = {"kind": host.switcher.kind, "asked": host.switcher.asked,
                            "kernel_tree": host.switcher.kernel_tree.name, "config": host.switcher.config,
                            "describe": switcher_words(host), "needs": switcher_needs(host)}
    if host.switcher_note:
        data["switcher_note"] = host.switcher_note
    if host.ssh is not None:
        data["ssh"] = {"host": host.ssh.host, "port": host.ssh.port, "user": host.ssh.user,
                       "identity_file": host.ssh.identity_file,
                       "known_hosts_file": host.ssh.known_hosts_file,
                       "control_master": host.ssh.control_master}
    return data


def switcher_words(host: Host) -> str:
    """How a ready switcher runs a commit on `host`, in a few words."""
    switcher = host.switcher
    if switcher is None:
        return "by its switch_kernel hook" if host.switch_kernel else "not at all (A/A runs)"
    if switcher.kind == "vm":
        accel = host.boot.accel if switcher.accel == "auto" and host.boot is not None else switcher.accel
        how = "KVM" if accel == "kvm" else "TCG, emulated" if accel == "tcg" else "KVM or TCG"
        return f"in a QEMU guest ({how}; {switcher.memory_mib} MiB, 1 vCPU) on this machine"
    if switcher.kind == "uml":
        return f"as User-mode Linux ({switcher.memory_mib} MiB) on this machine"
    return "on the host itself, kexec'd into"


def switcher_needs(host: Host) -> list[dict[str, Any]]:
    """What the host's switcher needs from the machine, each with whether it has it (True,
    False, or None: only the first switch can tell, on an SSH host)."""
    switcher, facts = host.switcher, host.boot
    if switcher is None:
        return []
    if switcher.kind == "kexec":
        return [{"need": f"{switcher.kexec} (kexec-tools) on the host, run as root"
                         + (f" through {' '.join(switcher.privilege)}" if switcher.privilege else ""), "has": None},
                {"need": "a kernel built here that boots the host (its own config by default)", "has": None},
                {"need": f"{switcher.boot_dir} and {switcher.modules_dir} writable by that user", "has": None}]
    toolchain = {"need": "the kernel toolchain (make, gcc, flex, bison, bc, perl)",
                 "has": None if facts is None else not facts.toolchain_missing}
    needs = [toolchain]
    if switcher.kind == "vm":
        needs.append({"need": "qemu-system-x86_64", "has": None if facts is None else facts.qemu is not None})
        needs.append({"need": "KVM with real VMX/SVM (else TCG emulation is used)",
                      "has": None if facts is None else facts.kvm is None,
                      **({"why": facts.kvm} if facts is not None and facts.kvm else {})})
    else:
        needs.append({"need": "ptrace of children and an XSAVE area of at most 2696 bytes (UML up to 6.13)",
                      "has": None if facts is None else facts.uml is None,
                      **({"why": facts.uml} if facts is not None and facts.uml else {})})
    needs.append({"need": "busybox (the guest's power-off) and the benchmarks on this machine's PATH",
                  "has": None if facts is None else "busybox" not in facts.toolchain_missing})
    return needs


def disk_from_parameters(parameters: Iterable[tuple[str, str]]) -> str | None:
    """The disk type an LKP `disk:` parameter asks for (`1HDD`, `4SSD`, `1NVMe`), else None.

    Ram disks (BRD) and persistent memory (pmem) are not a disk type a host is chosen by.
    """
    for name, value in parameters:
        if name == "disk":
            text = value.lower()
            for kind in ("nvme", "ssd", "hdd"):
                if kind in text:
                    return kind
    return None


# --- scoring -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class HostMatch:
    host: Host
    score: float  # 0..1: the weighted share of the compared facts that agree
    differences: tuple[str, ...]  # every fact that differs or could not be compared


# How much each fact counts; facts the report does not state are left out of the weighting.
_WEIGHTS = {"vendor": 0.15, "microarch": 0.25, "threads": 0.2, "sockets": 0.1, "memory": 0.15,
            "disk": 0.15, "storage": 0.15}


def _ratio_score(host_value: float, wanted: float) -> float:
    """1 when equal, falling by 0.2 for each doubling apart, 0 at 32x."""
    return max(0.0, 1.0 - abs(math.log2(host_value / wanted)) / 5.0)


def _arch_score(host_arch: Microarch, wanted: Microarch) -> float:
    if host_arch.name == wanted.name:
        return 1.0  # the same microarchitecture
    if host_arch.vendor != wanted.vendor:
        return 0.0  # another vendor's cores: nothing in common worth scoring
    if host_arch.core == wanted.core:
        return 0.7  # the same core design (Skylake and Cascade Lake)
    # the same vendor, generations apart
    return max(0.1, 0.5 - 0.1 * abs(host_arch.generation - wanted.generation))


def _machine_facts(machine: TestMachine) -> tuple[int | None, int | None]:
    """Threads and memory, from the parsed fields or a qemu command line (`-smp 2 -m 16G`)."""
    threads, memory = machine.threads, machine.memory_gb
    if threads is None and (match := re.search(r"-smp\s+(?:cpus=)?(\d+)", machine.description)):
        threads = int(match.group(1))
    if memory is None and (match := re.search(r"-m\s+(\d+)G\b", machine.description)):
        memory = int(match.group(1))
    return threads, memory


def storage_placement(host: Host, parameters: Iterable[tuple[str, str]]) -> Placement:
    """Where a report's benchmark runs on `host`: its filesystem made on a scratch device, or
    the scratch directory's filesystem, with each difference (triagebot.reproduce.filesystem)."""
    return place(storage_wanted(parameters), host.scratch_devices, host.program_names, host.kernel_filesystems)


def score_host(host: Host, machine: TestMachine | None, disk: str | None = None,
               parameters: Iterable[tuple[str, str]] = ()) -> HostMatch:
    """How like the report's test machine `host` is, and each way it differs (pure).

    `disk` is the disk type the report's test used, if known, else what its LKP `parameters`
    say (`disk_from_parameters`); a filesystem they name (`fs`, `fs2`, `mount_option`) counts as
    the storage fact: whether the host can make it on a scratch device, and what differs.
    """
    parameters = tuple(parameters)
    disk = disk or disk_from_parameters(parameters)
    if machine is None:
        return HostMatch(host, 0.0, ("the report names no test machine",))
    scores: dict[str, float] = {}
    differences: list[str] = []
    host_vendor = cpu_vendor(host.cpu_model)
    wanted_arch = microarch_of(machine.microarch, machine.cpu_model or machine.description)
    host_arch = microarch_of(host.microarch, host.cpu_model)
    wanted_vendor = cpu_vendor(machine.cpu_model) or (wanted_arch.vendor if wanted_arch else None)
    if wanted_vendor:
        scores["vendor"] = 1.0 if host_vendor == wanted_vendor else 0.0
        if host_vendor != wanted_vendor:
            differences.append(f"CPU vendor: host {host_vendor or 'unknown'}, test machine {wanted_vendor}")
    if wanted_arch:
        scores["microarch"] = _arch_score(host_arch, wanted_arch) if host_arch else 0.0
        if not host_arch or host_arch.name != wanted_arch.name:
            same_core = host_arch is not None and host_arch.core == wanted_arch.core
            differences.append(
                f"microarchitecture: host {host_arch.name if host_arch else host.microarch or 'unknown'}, "
                f"test machine {wanted_arch.name}" + (" (same core family)" if same_core else ""))
    elif machine.microarch:
        differences.append(f"microarchitecture: test machine's {machine.microarch!r} is not known here")
    threads, memory = _machine_facts(machine)
    if threads:
        scores["threads"] = _ratio_score(host.threads, threads)
        if host.threads != threads:
            differences.append(f"threads: host {host.threads}, test machine {threads}")
    if machine.sockets:
        scores["sockets"] = 1.0 if host.sockets == machine.sockets else 0.5 if min(
            host.sockets, machine.sockets) > 1 else 0.0
        if host.sockets != machine.sockets:
            differences.append(f"sockets: host {host.sockets}, test machine {machine.sockets}")
    if memory:
        scores["memory"] = _ratio_score(host.memory_gb, memory)
        if host.memory_gb != memory:
            differences.append(f"memory: host {host.memory_gb}G, test machine {memory}G")
    if disk:
        flash = {"nvme", "ssd"}
        scores["disk"] = 1.0 if host.disk == disk else 0.5 if {host.disk, disk} <= flash else 0.0
        if host.disk != disk:
            differences.append(f"disk: host {host.disk}, test ran on {disk}")
    if storage_wanted(parameters) is not None:
        placement = storage_placement(host, parameters)
        scores["storage"] = placement.score
        differences.extend(placement.differs)
    if not scores:
        return HostMatch(host, 0.0, (f"the test machine states no comparable facts: "
                                     f"{machine.description!r}",))
    total = sum(_WEIGHTS[name] for name in scores)
    score = sum(_WEIGHTS[name] * value for name, value in scores.items()) / total
    return HostMatch(host, round(score, 4), tuple(differences))


def choose_host(hosts: Sequence[Host], machine: TestMachine | None, busy: set[str] | frozenset[str] = frozenset(),
                disk: str | None = None, parameters: Iterable[tuple[str, str]] = ()) -> HostMatch | None:
    """The idle host most like the test machine (and its storage, from the report's LKP
    `parameters`); ties go to the earlier host in hosts.toml."""
    parameters = tuple(parameters)
    best: HostMatch | None = None
    for host in hosts:
        if host.name in busy:
            continue  # one run per host at a time
        match = score_host(host, machine, disk, parameters)
        if best is None or match.score > best.score:
            best = match
    return best
