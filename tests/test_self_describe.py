"""A local host that says describe = "auto" reads its CPU, threads, sockets, memory, disk and
programs from the machine (tests give the /proc and /sys texts of machines they describe)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from triagebot.errors import RulesError
from triagebot.reference.cpus import microarch_from_cpuinfo
from triagebot.reproduce.hosts import host_to_json
from triagebot.rules.hosts import load_hosts, parse_hosts
from triagebot.rules.self_describe import BlockDevice, MachineFacts, facts_from, probe_this_machine

SPR_FLAGS = "fpu sse2 avx2 avx512f avx512_vnni avx512_bf16 avx512ifma avx512_vbmi2 gfni vaes amx_tile avx512_fp16"


def cpuinfo(model_name: str, vendor: str, family: int, model: int, flags: str, *, processors: int = 2,
            sockets: int = 1, stepping: int = 1) -> str:
    blocks = []
    for number in range(processors):
        blocks.append("\n".join([
            f"processor\t: {number}", f"vendor_id\t: {vendor}", f"cpu family\t: {family}", f"model\t\t: {model}",
            f"model name\t: {model_name}", f"stepping\t: {stepping}",
            f"physical id\t: {number * sockets // processors}", f"flags\t\t: {flags}"]))
    return "\n\n".join(blocks) + "\n"


MEMINFO = "MemTotal:       24683664 kB\nMemFree:        1000 kB\n"
FILESYSTEMS = "nodev\tsysfs\nnodev\ttmpfs\n\text4\n\tbtrfs\n"
DISKS = (BlockDevice("vda", 256 << 30, True), BlockDevice("nvme0n1", 1 << 40, False, "Samsung SSD 980"))
PROGRAMS = {"fio": "/usr/bin/fio", "mkfs.btrfs": "/usr/sbin/mkfs.btrfs"}


def facts(text: str, scratch_device: str = "vda") -> MachineFacts:
    return facts_from(cpuinfo=text, meminfo=MEMINFO, filesystems=FILESYSTEMS, devices=DISKS,
                      scratch_device=scratch_device, cpu_count=None, which=PROGRAMS.get)


def test_a_kvm_guest_with_a_generic_model_name_is_named_by_family_and_model() -> None:
    spr = facts(cpuinfo("Intel(R) Xeon(R) Processor", "GenuineIntel", 6, 143, SPR_FLAGS))
    assert (spr.cpu_model, spr.microarch, spr.threads, spr.sockets, spr.memory_gb, spr.disk) == \
        ("Intel(R) Xeon(R) Processor", "Sapphire Rapids", 2, 1, 24, "hdd")
    genoa = facts(cpuinfo("AMD EPYC", "AuthenticAMD", 25, 17, "avx2 avx512f vaes"), scratch_device="nvme0n1")
    assert (genoa.microarch, genoa.disk) == ("Zen 4", "nvme")
    assert genoa.programs == (("fio", "/usr/bin/fio"), ("mkfs.btrfs", "/usr/sbin/mkfs.btrfs"))
    assert genoa.kernel_filesystems == ("btrfs", "ext4", "sysfs", "tmpfs")
    assert genoa.disks[0].startswith("vda 256G (rotational, virtio")


def test_flags_name_the_microarchitecture_when_family_and_model_are_unknown() -> None:
    assert microarch_from_cpuinfo("GenuineIntel", 6, 9999, 1, SPR_FLAGS.split()).name == "Sapphire Rapids"
    assert microarch_from_cpuinfo("GenuineIntel", 6, 9999, 1, "avx2 avx512f avx512_vnni".split()).name == \
        "Cascade Lake"
    assert microarch_from_cpuinfo("AuthenticAMD", 99, 1, 1, "avx2 vaes vpclmulqdq".split()).name == "Zen 3"
    assert microarch_from_cpuinfo("GenuineIntel", 6, 85, 7, ()).name == "Cascade Lake"
    assert microarch_from_cpuinfo("GenuineIntel", 6, 85, 11, ()).name == "Cooper Lake"
    assert microarch_from_cpuinfo("SomeoneElse", 1, 1, 1, ("avx512f",)) is None


def test_a_model_name_that_says_its_generation_wins_and_sockets_are_counted() -> None:
    icx = facts(cpuinfo("Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz", "GenuineIntel", 6, 106, "avx2 avx512f",
                        processors=8, sockets=2))
    assert (icx.microarch, icx.threads, icx.sockets) == ("Ice Lake", 8, 2)


AUTO = """
[[host]]
name = "this-machine"
reach = "local"
describe = "auto"
scratch_dir = "/var/tmp/s"
"""


def probe_of(machine: MachineFacts):
    asked = []

    def probe(scratch_dir: str) -> MachineFacts:
        asked.append(scratch_dir)
        return machine
    return probe, asked


def test_describe_auto_fills_the_facts_and_an_entry_value_wins() -> None:
    machine = facts(cpuinfo("AMD EPYC", "AuthenticAMD", 25, 17, "avx512f"))
    probe, asked = probe_of(machine)
    (host,) = parse_hosts(AUTO, Path("hosts.toml"), probe)
    assert (host.cpu_model, host.microarch, host.threads, host.sockets, host.memory_gb, host.disk) == \
        ("AMD EPYC", "Zen 4", 2, 1, 24, "hdd")
    assert asked == ["/var/tmp/s"] and host.described == ("cpu_model", "microarch", "threads", "sockets",
                                                          "memory_gb", "disk")
    assert host.program("mkfs.btrfs") == "/usr/sbin/mkfs.btrfs" and host.kernel_filesystems is not None
    shown = host_to_json(host)
    assert shown["describe"] == "auto" and shown["programs"]["fio"] == "/usr/bin/fio"
    (corrected,) = parse_hosts(AUTO + 'disk = "ssd"\nmicroarch = "Zen 3"\n', Path("hosts.toml"), probe)
    assert (corrected.disk, corrected.microarch, corrected.threads) == ("ssd", "Zen 3", 2)
    assert "disk" not in corrected.described


def test_the_packaged_default_host_is_this_machine_not_a_hard_coded_one() -> None:
    machine = facts(cpuinfo("Intel(R) Xeon(R) Platinum 8480+", "GenuineIntel", 6, 143, SPR_FLAGS, processors=4))
    probe, _ = probe_of(machine)
    (host,) = load_hosts(PROJECT / "rules", probe)
    assert (host.name, host.describe, host.cpu_model, host.threads) == \
        ("this-machine", "auto", "Intel(R) Xeon(R) Platinum 8480+", 4)
    entry = (PROJECT / "rules" / "hosts.toml").read_text().split("[[host]]\nname = \"this-machine\"")[1]
    assert "microarch" not in entry and "memory_gb" not in entry and "threads" not in entry


def test_describe_auto_is_refused_where_it_cannot_work() -> None:
    probe, _ = probe_of(MachineFacts())
    with pytest.raises(RulesError, match="the machine does not say its cpu_model"):
        parse_hosts(AUTO, Path("hosts.toml"), probe)
    ssh = AUTO.replace('reach = "local"', 'reach = "ssh"') + (
        '[host.ssh]\nhost = "h"\nuser = "u"\nidentity_file = "/k"\nknown_hosts_file = "/kh"\n')
    with pytest.raises(RulesError, match="only a local host may say it"):
        parse_hosts(ssh, Path("hosts.toml"), probe)
    with pytest.raises(RulesError, match="describe"):
        parse_hosts(AUTO.replace('"auto"', '"yes"'), Path("hosts.toml"), probe)


def test_this_machine_probed_for_real_agrees_with_the_kernel() -> None:
    machine = probe_this_machine("/var/tmp")
    assert machine.threads == os.cpu_count()
    total_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                    if line.startswith("MemTotal:"))
    assert machine.memory_gb == max(1, round(total_kb / (1 << 20)))
    assert machine.cpu_model and machine.sockets and machine.sockets >= 1
    assert machine.kernel_filesystems and "proc" in machine.kernel_filesystems


def test_the_stressors_are_those_stress_ng_lists_and_only_with_stress_ng() -> None:
    # what `stress-ng --stressors` printed, read only when stress-ng is on PATH
    with_it = facts_from(cpuinfo=cpuinfo("Intel(R) Xeon(R) Processor", "GenuineIntel", 6, 143, SPR_FLAGS),
                         meminfo=MEMINFO, filesystems=FILESYSTEMS, devices=DISKS, scratch_device="vda",
                         cpu_count=None, which={"stress-ng": "/usr/bin/stress-ng"}.get,
                         stressors="access af-alg getdent msg\n")
    assert with_it.stressors == ("access", "af-alg", "getdent", "msg")
    without = facts(cpuinfo("Intel(R) Xeon(R) Processor", "GenuineIntel", 6, 143, SPR_FLAGS))
    assert without.stressors is None


def test_this_machines_stressors_reach_the_default_host() -> None:
    if not shutil.which("stress-ng"):
        pytest.skip("stress-ng is not installed (Debian package stress-ng)")
    [host] = load_hosts(PROJECT / "rules")
    assert host.stressors and "getdent" in host.stressors and "getdents" not in host.stressors
    assert host_to_json(host)["stressors"] == list(host.stressors)
