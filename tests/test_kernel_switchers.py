"""Ready kernel switchers: hosts.toml's `switcher` validated at load, `auto` chosen from what the
machine offers, the configs a build is made from, and the guest's boot and command lines.

These need no kernel: the real builds and boots are tests/test_kernels_real.py's.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PROJECT
from triagebot.errors import RulesError
from triagebot.kernels.boot import (
    VM_NEEDS,
    BootError,
    Guest,
    command_words,
    guest_init,
    qemu_argv,
    read_console,
    uml_argv,
)
from triagebot.kernels.build import BoundedLog
from triagebot.kernels.config import (
    ConfigError,
    Fragment,
    KernelConfig,
    chosen_config,
    config_key,
    missing_options,
    options_of,
)
from triagebot.rules.boot_probe import BootFacts, boot_facts_from, cpu_flags, kvm_problem, uml_problem_from
from triagebot.rules.hosts import load_hosts, parse_hosts
from triagebot.rules.loader import parse_text
from triagebot.rules.trees import KernelTree, kernel_builds_from, kernel_trees_from

TREE = KernelTree("linux", "file:///srv/git/linux.git", "master")
CAN_BOTH = BootFacts(qemu="/usr/bin/qemu-system-x86_64", kvm="no vmx", toolchain_missing=(), uml=None)
NO_QEMU = BootFacts(qemu=None, kvm="no vmx", toolchain_missing=(), uml=None)
NOTHING = BootFacts(qemu=None, kvm="no vmx", toolchain_missing=("flex",), uml="XSAVE too big")

LOCAL = """
[[host]]
name = "this-machine"
reach = "local"
cpu_model = "AMD EPYC"
threads = 2
sockets = 1
memory_gb = 24
disk = "ssd"
scratch_dir = "/var/tmp/triage"
"""
KEXEC = """
[[host]]
name = "metal"
reach = "ssh"
cpu_model = "Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz"
threads = 64
sockets = 2
memory_gb = 256
disk = "nvme"
scratch_dir = "/srv/scratch"
switcher = "kexec"
[host.kexec]
privilege = ["sudo", "-n"]
[host.ssh]
host = "metal.lab.example"
user = "triage"
identity_file = "/etc/triage/id"
known_hosts_file = "/etc/triage/known_hosts"
"""


def hosts(text: str, trees=(TREE,), facts: BootFacts = CAN_BOTH):
    return parse_hosts(text, PROJECT / "rules" / "hosts.toml", kernel_trees=trees, boot_probe=lambda: facts)


def test_a_vm_host_can_switch_kernels_and_builds_from_the_tree() -> None:
    (host,) = hosts(LOCAL + 'switcher = "vm"\n[host.vm]\nmemory_mib = 768\n')
    assert host.can_switch_kernel and host.switcher is not None
    assert host.switcher.kind == "vm" and host.switcher.arch == "x86_64" and host.switcher.guest
    assert host.switcher.kernel_tree == TREE and host.switcher.memory_mib == 768
    # no report config: the packaged minimal fragment on allnoconfig
    assert host.switcher.config.endswith("rules/kernels/x86-min.config")
    assert host.switcher.floor_percent == 10.0


def test_auto_takes_vm_then_uml_and_says_why_it_takes_none() -> None:
    (vm,) = hosts(LOCAL + 'switcher = "auto"\n')
    assert vm.switcher is not None and vm.switcher.kind == "vm" and vm.switcher.asked == "auto"
    (uml,) = hosts(LOCAL + 'switcher = "auto"\n', facts=NO_QEMU)
    assert uml.switcher is not None and uml.switcher.kind == "uml" and uml.switcher.arch == "um"
    (none,) = hosts(LOCAL + 'switcher = "auto"\n', facts=NOTHING)
    assert none.switcher is None and not none.can_switch_kernel
    assert "qemu-system-x86_64 is not installed" in (none.switcher_note or "")
    assert "XSAVE too big" in (none.switcher_note or "") or "flex" in (none.switcher_note or "")
    (no_tree,) = hosts(LOCAL + 'switcher = "auto"\n', trees=())
    assert no_tree.switcher is None and "no [[kernel_tree]]" in (no_tree.switcher_note or "")


def test_the_packaged_default_says_auto_and_stays_a_a_without_a_kernel_tree() -> None:
    (host,) = load_hosts(PROJECT / "rules", boot_probe=lambda: CAN_BOTH)
    assert host.name == "this-machine" and not host.can_switch_kernel
    assert "no [[kernel_tree]] in trees.toml" in (host.switcher_note or "")


def test_a_kexec_host_is_an_ssh_host_with_its_privilege_prefix() -> None:
    (host,) = hosts(KEXEC)
    assert host.switcher is not None and host.switcher.kind == "kexec" and not host.switcher.guest
    assert host.switcher.privilege == ("sudo", "-n") and host.switcher.config == "host"
    assert host.switcher.boot_dir == "/boot" and host.switcher.execute == ()


@pytest.mark.parametrize(("text", "problem"), [
    (LOCAL + 'switcher = "kexec"\n', "must be an SSH host"),
    (LOCAL + 'switcher = "vms"\n', "switcher must be one of vm, uml, kexec, auto"),
    (LOCAL + 'switcher = "vm"\nswitch_kernel = ["boot", "{commit}"]\n', "takes no switch_kernel hook"),
    (LOCAL + 'switcher = "vm"\nscratch_devices = ["/dev/sdb"]\n', "not seen inside a guest"),
    (LOCAL + 'switcher = "vm"\nkernel_tree = "next"\n', "kernel_tree 'next' is no [[kernel_tree]]"),
    (LOCAL + 'switcher = "uml"\n[host.uml]\nconfig = "host"\n', "a UML kernel needs a UML fragment"),
    (LOCAL + 'switcher = "vm"\n[host.vm]\nconfig = "kernels/none.config"\n', "no such fragment file"),
    (LOCAL + 'switcher = "vm"\n[host.vm]\naccel = "hvf"\n', "accel must be one of auto, tcg, kvm"),
    (LOCAL + 'switcher = "vm"\n[host.vm]\ncpu = "host;reboot"\n', "cpu must be a QEMU CPU model"),
    (LOCAL + 'switcher = "vm"\n[host.kexec]\nboot_dir = "/boot"\n', "[host.kexec] belongs to switcher"),
    (LOCAL + '[host.vm]\nmemory_mib = 512\n', "vm is for a host with a switcher"),
    (KEXEC.replace('privilege = ["sudo", "-n"]', 'execute = "kexec -e"'), "must be a list"),
])
def test_a_bad_switcher_is_an_error_naming_file_and_line(text: str, problem: str) -> None:
    with pytest.raises(RulesError) as raised:
        hosts(text)
    assert problem in str(raised.value)
    assert "hosts.toml:2: [[host]] entry 1" in str(raised.value)


def test_a_switcher_without_a_kernel_tree_is_an_error() -> None:
    with pytest.raises(RulesError, match="builds kernels from a \\[\\[kernel_tree\\]\\] of trees.toml"):
        hosts(LOCAL + 'switcher = "vm"\n', trees=())
    with pytest.raises(RulesError, match="name one with kernel_tree"):
        hosts(LOCAL + 'switcher = "vm"\n', trees=(TREE, KernelTree("next", "https://example.org/next.git", "main")))


def test_kernel_trees_and_builds_are_read_from_trees_toml() -> None:
    text = """
[bounds]
fetch_seconds = 900
[[kernel_tree]]
name = "linux"
url = "file:///srv/git/linux.git"
branch = "master"
first_days = 400
[kernel_builds]
cache_dir = "/var/cache/triage-kernels"
max_cache_gib = 5
jobs = 4
"""
    file = parse_text(text, "rules/trees.toml")
    (tree,) = kernel_trees_from(file)
    assert tree.bounds.fetch_seconds == 900 and tree.bounds.first_days == 400
    builds = kernel_builds_from(file)
    assert builds.cache_dir == "/var/cache/triage-kernels" and builds.max_cache_gib == 5 and builds.jobs == 4
    with pytest.raises(RulesError, match="trees.toml:2: \\[\\[kernel_tree\\]\\] entry 1 \\(linux\\): url must be"):
        kernel_trees_from(parse_text('\n[[kernel_tree]]\nname = "linux"\nurl = "ssh://x/y"\nbranch = "m"\n',
                                     "rules/trees.toml"))
    with pytest.raises(RulesError, match="cache_dir must be an absolute directory"):
        kernel_builds_from(parse_text('[kernel_builds]\ncache_dir = "relative/dir"\n', "rules/trees.toml"))


def test_the_machine_probe_reads_kvm_and_uml_from_the_answers() -> None:
    assert kvm_problem({"fpu", "vmx"}, True) is None
    assert "PVM" in (kvm_problem({"fpu"}, True) or "")
    assert "does not open" in (kvm_problem({"svm"}, False) or "")
    assert uml_problem_from(2432, None) is None
    assert "errno = 14" in (uml_problem_from(11008, None) or "")
    assert "ptrace" in (uml_problem_from(None, "Operation not permitted") or "")
    facts = boot_facts_from(qemu=None, cpu_flags=cpu_flags("flags\t: fpu svm sse\n"), dev_kvm_opens=True,
                            missing_tools=(), xstate=(2432, None))
    assert facts.accel == "kvm" and facts.uml_problem() is None and "qemu-system-x86" in (facts.vm_problem() or "")


# --- configs -------------------------------------------------------------------------------

def test_a_config_merges_later_lines_over_earlier_and_keys_by_what_it_sets() -> None:
    base = KernelConfig("file", "the report's config-6.12", "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\n")
    merged = base.with_fragment(Fragment("needs", "CONFIG_B=y\nCONFIG_C=y\n"))
    assert merged.options() == {"CONFIG_A": "y", "CONFIG_B": "y", "CONFIG_C": "y"}
    assert merged.dot_config().endswith("# from needs\nCONFIG_B=y\nCONFIG_C=y\n")
    spelled_twice = KernelConfig("file", "elsewhere", "CONFIG_C=y\nCONFIG_B=y\nCONFIG_A=y\n")
    assert config_key(merged, "x86_64", "gcc 12") == config_key(spelled_twice, "x86_64", "gcc 12")
    assert config_key(merged, "x86_64", "gcc 12") != config_key(merged, "um", "gcc 12")
    assert config_key(merged, "x86_64", "gcc 12") != config_key(base, "x86_64", "gcc 12")
    assert missing_options(("CONFIG_B=y", "CONFIG_D=y"), merged.dot_config()) == ["CONFIG_D=y"]


def test_a_page_that_is_no_config_is_refused_by_line() -> None:
    with pytest.raises(ConfigError, match="line 2 is no CONFIG_ setting"):
        options_of("CONFIG_A=y\n<html><body>Not Found</body></html>\n")


def test_the_chosen_config_is_the_reports_else_the_switchers_and_always_what_the_boot_needs() -> None:
    (host,) = hosts(LOCAL + 'switcher = "vm"\n')
    assert host.switcher is not None
    report = KernelConfig("file", "the report's config-6.12 (LKP materials)", "CONFIG_SMP=y\nCONFIG_9P_FS=m\n")
    asked: list[str] = []

    def host_config() -> tuple[str, str]:
        asked.append("host")
        return "CONFIG_X=y\n", "/boot/config-6.1"

    chosen = chosen_config(host.switcher, report, (("CONFIG_PREEMPT_RT", "y"),), host_config, VM_NEEDS)
    assert chosen.base == "file" and chosen.options()["CONFIG_9P_FS"] == "y"  # the boot's need wins
    assert chosen.options()["CONFIG_PREEMPT_RT"] == "y" and not asked
    assert chosen.describe().startswith("the report's config-6.12 (LKP materials) + the CONFIG_ lines")
    own = chosen_config(host.switcher, None, (), host_config, VM_NEEDS)
    assert own.base == "allnoconfig" and own.fragments[0].origin == "rules/kernels/x86-min.config"
    # the packaged fragment already holds every need: one key with or without them appended
    bare = KernelConfig("allnoconfig", "allnoconfig", fragments=own.fragments[:1])
    assert config_key(own, "x86_64", "gcc") == config_key(bare, "x86_64", "gcc")


# --- the guest's boot ------------------------------------------------------------------------

def test_qemu_boots_the_image_with_the_hosts_root_read_only_and_scratch_writable() -> None:
    guest = Guest("vm", Path("/cache/artifacts/abc-def/image"), "/var/tmp/triage", 512, "tcg", "qemu64")
    argv = qemu_argv(guest, "/var/tmp/triage/guest-x1")
    assert argv[:5] == ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "qemu64"]
    assert "-no-reboot" in argv and argv[argv.index("-kernel") + 1] == "/cache/artifacts/abc-def/image"
    fsdevs = [argv[index + 1] for index, word in enumerate(argv) if word == "-fsdev"]
    assert fsdevs[0] == "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
    assert fsdevs[1].startswith("local,id=scratch,path=/var/tmp/triage,") and "readonly" not in fsdevs[1]
    append = argv[argv.index("-append") + 1]
    assert append.endswith(f"init=/bin/sh -- {guest_init()} /var/tmp/triage/guest-x1 /var/tmp/triage vm")
    assert "panic=-1" in append and " ro " in append


def test_uml_boots_with_hostfs_and_its_console_on_stdout() -> None:
    guest = Guest("uml", Path("/cache/image"), "/var/tmp/triage", 256)
    argv = uml_argv(guest, "/var/tmp/triage/guest-x1")
    assert argv[:5] == ["/cache/image", "mem=256M", "rootfstype=hostfs", "rootflags=/", "ro"]
    assert argv[-2:] == ["/var/tmp/triage", "uml"] and "con0=fd:0,fd:1" in argv


@pytest.mark.parametrize("path", ["/var/tmp/a b", "/var/tmp/a,readonly=off", "/tmp/../etc", "relative"])
def test_a_path_no_guest_command_line_can_carry_is_refused(path: str) -> None:
    with pytest.raises(BootError, match="can be handed to a guest"):
        qemu_argv(Guest("vm", Path("/cache/image"), path), "/var/tmp/x")


def test_the_guest_command_is_timeout_env_prlimit_then_the_argv_word_for_word() -> None:
    words = command_words(["stress-ng", "--personality", "1", "a b; reboot"], timeout=5,
                          env={"PATH": "/usr/bin", "LC_ALL": "C"}, rlimits=[("nofile", 1024)])
    assert words == ["timeout", "-k", "2", "5.000s", "env", "-i", "PATH=/usr/bin", "LC_ALL=C",
                     "prlimit", "--nofile=1024:1024", "--", "stress-ng", "--personality", "1", "a b; reboot"]
    with pytest.raises(ValueError, match="may not start with '-'"):
        command_words(["-rf"], timeout=1, env={}, rlimits=())


def test_the_console_markers_say_the_kernel_the_boot_time_and_the_status() -> None:
    console = ("[    0.000000] Linux version 6.12.118-tb2d00eceef795+\r\n@@TRIAGE-KERNEL 6.12.118-tb2d00eceef795+\n"
               "@@TRIAGE-UPTIME-AT-INIT 1.52\nnoise\n@@TRIAGE-STATUS 0\nreboot: Restarting system\n")
    booted = read_console(console, seconds=9.5, timed_out=False)
    assert booted.kernel == "6.12.118-tb2d00eceef795+" and booted.uptime_at_init == 1.52 and booted.status == 0
    silent = read_console("Kernel panic - not syncing: VFS: Unable to mount root fs\n", seconds=3, timed_out=False)
    assert silent.kernel is None and silent.status is None


def test_the_build_log_keeps_only_its_end_and_counts_compiles() -> None:
    log = BoundedLog(100)
    for number in range(50):
        log.add(f"  CC      kernel/file{number}.o\n")
    assert log.compiled == 50 and len(log.text()) <= 100 and log.text().endswith("file49.o\n")
    assert log.last(1) == "  CC      kernel/file49.o\n"


def test_triage_hosts_says_what_each_switcher_needs_and_whether_the_machine_has_it() -> None:
    from triagebot.cli.hosts import _render_host
    from triagebot.reproduce.hosts import host_to_json

    (vm,) = hosts(LOCAL + 'switcher = "auto"\n')
    lines = "\n".join(_render_host(vm))
    assert 'switch kernel: vm (chosen by switcher = "auto"): each commit built from kernel tree linux and run in ' \
           "a QEMU guest (TCG, emulated; 512 MiB, 1 vCPU) on this machine" in lines
    assert "needs qemu-system-x86_64: has it" in lines
    assert "needs KVM with real VMX/SVM (else TCG emulation is used): MISSING (no vmx)" in lines
    (bare,) = hosts(LOCAL + 'switcher = "auto"\n', facts=NOTHING)
    assert "none: runs only on the running kernel (A/A runs, no verdict on a commit); this machine can boot no " \
           "kernel it builds" in "\n".join(_render_host(bare))
    (metal,) = hosts(KEXEC)
    data = host_to_json(metal)
    assert data["switcher"]["kind"] == "kexec" and data["can_switch_kernel"]
    assert data["switcher"]["needs"][0] == {"need": "kexec (kexec-tools) on the host, run as root through sudo -n",
                                            "has": None}


def test_a_guest_host_plans_for_the_guest_not_the_machine_around_it() -> None:
    from triagebot.reproduce.limits import host_shape

    (vm,) = hosts(LOCAL + 'switcher = "vm"\n[host.vm]\nmemory_mib = 2048\n')
    shape = host_shape(vm)
    assert shape.threads == 1 and shape.memory_gb == 2 and shape.scratch_devices == ()
    (plain,) = hosts(LOCAL)
    assert host_shape(plain).threads == 2
