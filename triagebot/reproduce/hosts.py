"""Reproduce stage: host choice, and what a host's facts mean.

The hosts themselves are rules data (triagebot.rules.hosts, rules/hosts.toml). Host choice is
pure: `score_host` compares a host with a report's TestMachine (CPU vendor, microarchitecture and
its core family, threads, sockets, memory, disk type) and returns the score with every
difference spelled out; `choose_host` takes the best idle host.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from triagebot.records import TestMachine
from triagebot.rules.hosts import Host


def host_to_json(host: Host) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": host.name, "reach": host.reach, "cpu_model": host.cpu_model,
        "microarch": host.microarch, "threads": host.threads, "sockets": host.sockets,
        "memory_gb": host.memory_gb, "disk": host.disk, "scratch_dir": host.scratch_dir,
        "scratch_devices": list(host.scratch_devices), "labels": list(host.labels),
        "switch_kernel": list(host.switch_kernel), "running_kernel": list(host.running_kernel),
        "can_switch_kernel": host.can_switch_kernel, "reboot_timeout_s": host.reboot_timeout_s,
    }
    if host.ssh is not None:
        data["ssh"] = {"host": host.ssh.host, "port": host.ssh.port, "user": host.ssh.user,
                       "identity_file": host.ssh.identity_file,
                       "known_hosts_file": host.ssh.known_hosts_file,
                       "control_master": host.ssh.control_master}
    return data


# --- CPU knowledge -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Microarch:
    name: str
    vendor: str  # intel / amd / arm
    core: str  # the core design family: microarchitectures sharing it behave alike
    generation: int  # ordered within a vendor, for "how far apart"


def _table(*rows: tuple[str, str, str, int, tuple[str, ...]]) -> dict[str, Microarch]:
    table: dict[str, Microarch] = {}
    for name, vendor, core, generation, aliases in rows:
        arch = Microarch(name, vendor, core, generation)
        for key in (name, *aliases):
            table[key.lower()] = arch
    return table


_MICROARCHES = _table(
    ("Sandy Bridge", "intel", "sandy bridge", 1, ("sandybridge", "snb")),
    ("Ivy Bridge", "intel", "sandy bridge", 2, ("ivybridge", "ivb")),
    ("Haswell", "intel", "haswell", 3, ("hsw",)),
    ("Broadwell", "intel", "haswell", 4, ("bdw",)),
    ("Skylake", "intel", "skylake", 5, ("skl", "skx", "skylake-sp")),
    ("Kaby Lake", "intel", "skylake", 5, ("kabylake",)),
    ("Coffee Lake", "intel", "skylake", 5, ("coffeelake",)),
    ("Comet Lake", "intel", "skylake", 5, ("cometlake",)),
    ("Cascade Lake", "intel", "skylake", 6, ("cascadelake", "clx")),
    ("Cooper Lake", "intel", "skylake", 6, ("cooperlake", "cpx")),
    ("Ice Lake", "intel", "sunny cove", 7, ("icelake", "icx", "icl", "ice lake-sp")),
    ("Tiger Lake", "intel", "sunny cove", 7, ("tigerlake",)),
    ("Rocket Lake", "intel", "sunny cove", 7, ("rocketlake",)),
    ("Sapphire Rapids", "intel", "golden cove", 8, ("sapphirerapids", "spr")),
    ("Alder Lake", "intel", "golden cove", 8, ("alderlake", "adl")),
    ("Raptor Lake", "intel", "golden cove", 8, ("raptorlake", "rpl")),
    ("Emerald Rapids", "intel", "golden cove", 9, ("emeraldrapids", "emr")),
    ("Granite Rapids", "intel", "redwood cove", 10, ("graniterapids", "gnr")),
    ("Meteor Lake", "intel", "redwood cove", 10, ("meteorlake", "mtl")),
    ("Sierra Forest", "intel", "crestmont", 10, ("sierraforest", "srf")),
    ("Zen", "amd", "zen", 1, ("naples", "zen1")),
    ("Zen 2", "amd", "zen", 2, ("rome", "zen2")),
    ("Zen 3", "amd", "zen 3", 3, ("milan", "zen3")),
    ("Zen 4", "amd", "zen 4", 4, ("genoa", "bergamo", "zen4")),
    ("Zen 5", "amd", "zen 5", 5, ("turin", "zen5")),
    ("Neoverse N1", "arm", "neoverse n1", 1, ("ampere altra", "graviton2")),
    ("Neoverse V1", "arm", "neoverse v1", 2, ("graviton3",)),
)
# Xeon Scalable: the second digit of the model number is the generation.
_XEON_SCALABLE = re.compile(r"\b(?:Platinum|Gold|Silver|Bronze)\s+\d(\d)\d\d")
_XEON_GENERATIONS = {"1": "skylake", "2": "cascade lake", "3": "ice lake", "4": "sapphire rapids",
                     "5": "emerald rapids"}
_CORE_I = re.compile(r"\bi[3579]-(\d{4,5})")
_CORE_GENERATIONS = {"2": "sandy bridge", "3": "ivy bridge", "4": "haswell", "5": "broadwell",
                     "6": "skylake", "7": "kaby lake", "8": "coffee lake", "9": "coffee lake",
                     "10": "comet lake", "11": "tiger lake", "12": "alder lake",
                     "13": "raptor lake", "14": "raptor lake"}
_XEON_E = re.compile(r"\bE[357]-\d{4}[A-Z]?\s*v(\d)")
_XEON_E_VERSIONS = {"2": "ivy bridge", "3": "haswell", "4": "broadwell", "5": "skylake",
                    "6": "kaby lake"}
_EPYC = re.compile(r"\bEPYC\s+(\d)\d\d(\d)")
_EPYC_GENERATIONS = {("7", "1"): "zen", ("7", "2"): "zen 2", ("7", "3"): "zen 3",
                     ("9", "4"): "zen 4", ("9", "5"): "zen 5"}
_QEMU_CPU = re.compile(r"-cpu\s+([A-Za-z-]+)")


def cpu_vendor(cpu_model: str | None) -> str | None:
    """intel / amd / arm from a model string, None when it does not say."""
    if not cpu_model:
        return None
    text = cpu_model.lower()
    if "intel" in text or "xeon" in text or re.search(r"\bcore\(tm\)", text):
        return "intel"
    if "amd" in text or "epyc" in text or "ryzen" in text:
        return "amd"
    if any(word in text for word in ("arm", "ampere", "neoverse", "graviton", "aarch64")):
        return "arm"
    return None


def microarch_of(microarch: str | None, cpu_model: str | None) -> Microarch | None:
    """The microarchitecture named, or the one a well-known model number implies."""
    if microarch:
        known = _MICROARCHES.get(microarch.strip().lower())
        if known:
            return known
    if not cpu_model:
        return None
    key: str | None = None
    if match := _XEON_SCALABLE.search(cpu_model):
        key = _XEON_GENERATIONS.get(match.group(1))
    elif match := _CORE_I.search(cpu_model):
        number = match.group(1)
        key = _CORE_GENERATIONS.get(number[:2] if len(number) == 5 else number[:1])
    elif match := _XEON_E.search(cpu_model):
        key = _XEON_E_VERSIONS.get(match.group(1))
    elif match := _EPYC.search(cpu_model):
        key = _EPYC_GENERATIONS.get((match.group(1), match.group(2)))
    elif match := _QEMU_CPU.search(cpu_model):
        key = match.group(1).lower()
    return _MICROARCHES.get(key) if key else None


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
            "disk": 0.15}


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


def score_host(host: Host, machine: TestMachine | None, disk: str | None = None) -> HostMatch:
    """How like the report's test machine `host` is, and each way it differs (pure).

    `disk` is the disk type the report's test used (see `disk_from_parameters`), if known.
    """
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
    if not scores:
        return HostMatch(host, 0.0, (f"the test machine states no comparable facts: "
                                     f"{machine.description!r}",))
    total = sum(_WEIGHTS[name] for name in scores)
    score = sum(_WEIGHTS[name] * value for name, value in scores.items()) / total
    return HostMatch(host, round(score, 4), tuple(differences))


def choose_host(hosts: Sequence[Host], machine: TestMachine | None, busy: set[str] | frozenset[str] = frozenset(),
                disk: str | None = None) -> HostMatch | None:
    """The idle host most like the test machine; ties go to the earlier host in hosts.toml."""
    best: HostMatch | None = None
    for host in hosts:
        if host.name in busy:
            continue  # one run per host at a time
        match = score_host(host, machine, disk)
        if best is None or match.score > best.score:
            best = match
    return best
