"""rules/hosts.toml: the lab hosts, validated at load.

A host is one machine the lab runs reproducers on: how to reach it (this machine, or SSH with
key auth and a known_hosts file), the facts compared with a report's test machine, where it may
write (its scratch directory and any scratch devices), labels, and the operator's two hooks:

- `switch_kernel`: an argv list, `{commit}` substituted, that makes the host boot that commit
  (install + kexec, or install + reboot). The runner then reconnects and checks
  `running_kernel`. An empty list means the host cannot switch kernels: every sample runs on
  the kernel it is running, so base and suspect runs measure the same kernel. Such a run tests
  the plan and measures noise (an A/A pair); it cannot confirm or clear a commit, and the
  verdict stage must not treat it as evidence about the commit.
- `running_kernel`: an argv list whose stdout names the running kernel or commit (`uname -r`).
- `list_commits` (for `triage bisect`): an argv list, `{good}` and `{bad}` substituted, whose
  stdout is the commits after good up to bad, oldest first, one sha a line (`git rev-list
  --reverse --first-parent {good}..{bad}` in the host's tree). Empty: the host cannot bisect.
- `build_patched` (for `triage test-fix`): an argv list, `{commit}` and `{mbox}` substituted, that
  applies the am-ready mbox (a file the runner put on the host) on that commit and builds it;
  the last line of its stdout names the patched kernel for `switch_kernel` (a commit or ref).
- `untrusted_code` (default false): the host is disposable or isolated, so the daemon may build
  and boot a patch series from any sender there by itself (rules/trust.py decides; elsewhere only
  a trusted sender's series, or one a person asked for).

Hooks are argv lists, never shell strings: nothing here is handed to a shell. Choosing a host
for a report is the reproduce stage's (triagebot.reproduce.hosts).

Instead of the hooks, a host may name a ready switcher that triagebot ships (triagebot/kernels
builds the commit from a `[[kernel_tree]]` of trees.toml; docs/kernels.md):

- `switcher = "vm"`: each command boots the built kernel under QEMU on this machine (KVM where
  the CPU has VMX/SVM, else TCG emulation) with the host's / as its read-only root; local only.
- `switcher = "uml"`: each command boots the kernel built as User-mode Linux; local only.
- `switcher = "kexec"`: an SSH host; the built kernel is installed there and kexec'd into.
- `switcher = "auto"`: vm, else uml, whichever this machine can run (triagebot.rules.boot_probe),
  when a kernel tree is configured; else none, with the reason (`switcher_note`): A/A runs.

Their options are `[host.vm]`, `[host.uml]` and `[host.kexec]` tables; a switcher host takes no
switch_kernel, list_commits or build_patched hook.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from triagebot.errors import RulesError
from triagebot.rules.boot_probe import BootFacts, probe_boot
from triagebot.rules.loader import PACKAGED_RULES, RulesFile, Section, parse_text, read_file
from triagebot.rules.trees import KernelBuilds, KernelTree
from triagebot.untrusted.argv import substituted

if TYPE_CHECKING:
    from triagebot.rules.self_describe import MachineFacts

HOSTS_FILE = "hosts.toml"
DISK_TYPES = ("nvme", "ssd", "hdd")
REACH_KINDS = ("local", "ssh")
DESCRIBE_KINDS = ("auto",)
# Facts `describe = "auto"` fills from the machine (an entry's own value wins).
DESCRIBED_FACTS = ("cpu_model", "microarch", "threads", "sockets", "memory_gb", "disk")
COMMIT_PLACEHOLDER = "{commit}"
# A commit or ref as it may be substituted into a hook: a sha or a tag/branch name, optionally
# with git's parent suffix ("abc123^", "v6.8~2": the base of a human report is often only "the
# culprit's parent"). Never a leading '-', so it cannot be read as an option by the hook; passed
# as one argv word, never to a shell.
_COMMIT = re.compile(r"[0-9A-Za-z][0-9A-Za-z._/+-]{0,127}(?:\^|~\d{1,4})?")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_LOGIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
# A host's default process budget (max_processes): the processes and threads one plan may start.
# 64 a thread lets hackbench's default 40-task groups run one a thread with room to spare;
# small hosts get at least MIN_PROCESS_BUDGET (a benchmark's own helpers, fio's job processes).
PROCESSES_PER_THREAD = 64
MIN_PROCESS_BUDGET = 256


def default_process_budget(threads: int) -> int:
    """The processes and threads a plan may start on a host with `threads` hardware threads."""
    return max(MIN_PROCESS_BUDGET, threads * PROCESSES_PER_THREAD)


@dataclass(frozen=True)
class SshAccess:
    """How to reach a host over OpenSSH: key auth only, host key checked against known_hosts."""

    host: str
    user: str
    identity_file: str
    known_hosts_file: str
    port: int = 22
    connect_timeout_s: float = 10.0  # one connection attempt; reconnect() retries within reboot_timeout_s
    control_master: bool = False  # share one connection between commands (ControlMaster=auto)


SWITCHERS = ("vm", "uml", "kexec", "auto")
ACCELS = ("auto", "tcg", "kvm")
HOST_CONFIG = "host"  # `config = "host"`: the running kernel's /boot/config-$(uname -r)
# The fragment a switcher builds from when the report gives no config (rules/kernels/).
DEFAULT_FRAGMENTS = {"vm": "kernels/x86-min.config", "uml": "kernels/uml-min.config"}
# A guest's verdict needs at least this change: emulation and UML distort magnitudes and add noise.
GUEST_FLOOR_PERCENT = 10.0
DEFAULT_BUILDS = KernelBuilds()
_CPU = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.,=+-]{0,127}")


@dataclass(frozen=True)
class Switcher:
    """A ready kernel switcher: how the host boots a commit triagebot built (docs/kernels.md)."""

    kind: str  # vm / uml / kexec
    kernel_tree: KernelTree
    builds: KernelBuilds = DEFAULT_BUILDS  # trees.toml's [kernel_builds]: where and how it builds
    # The config when the report has none: a fragment file (absolute path; `allnoconfig` plus
    # it) or HOST_CONFIG. A report's config is used first where `report_config` (not for uml:
    # a report's config is an x86 one).
    config: str = HOST_CONFIG
    report_config: bool = True
    asked: str = ""  # what hosts.toml said: the kind, or "auto"
    # vm and uml
    memory_mib: int = 512
    boot_seconds: float = 120.0  # a boot's allowance on top of the command's own timeout
    floor_percent: float = GUEST_FLOOR_PERCENT  # the least change a verdict in the guest confirms
    accel: str = "auto"  # vm: auto / tcg / kvm
    cpu: str | None = None  # vm: QEMU's -cpu; None: qemu64 under TCG, host under KVM
    # kexec
    boot_dir: str = "/boot"
    modules_dir: str = "/lib/modules"
    privilege: tuple[str, ...] = ()  # prefix of the commands that need root, e.g. ["sudo", "-n"]
    kexec: str = "kexec"  # the kexec program on the host
    execute: tuple[str, ...] = ()  # the last step; (): `systemctl kexec` where systemd runs, else `kexec -e`

    @property
    def arch(self) -> str:
        """The kernel's ARCH: um for UML, x86_64 for the others."""
        return "um" if self.kind == "uml" else "x86_64"

    @property
    def guest(self) -> bool:
        """Whether the plan runs inside a guest kernel (vm, uml) rather than on the host itself."""
        return self.kind in ("vm", "uml")


@dataclass(frozen=True)
class Host:
    name: str
    reach: str  # local / ssh
    cpu_model: str
    threads: int
    sockets: int
    memory_gb: int
    disk: str  # nvme / ssd / hdd: the kind of disk the scratch directory lives on
    scratch_dir: str  # absolute; runs get a fresh directory under it, removed afterwards
    ssh: SshAccess | None = None
    microarch: str | None = None
    scratch_devices: tuple[str, ...] = ()  # raw devices a plan may use (wiped by benchmarks!)
    labels: tuple[str, ...] = ()
    switch_kernel: tuple[str, ...] = ()  # empty: cannot switch, runs on the running kernel only
    running_kernel: tuple[str, ...] = ("uname", "-r")
    list_commits: tuple[str, ...] = ()  # bisection: {good}..{bad}, oldest first; empty: cannot bisect
    build_patched: tuple[str, ...] = ()  # test-fix: apply {mbox} on {commit}, build; prints the kernel's ref
    reboot_timeout_s: float = 900.0  # how long a kernel switch may keep the host unreachable
    max_processes: int | None = None  # processes + threads one plan may start; None: default_process_budget
    scratch_gb: int | None = None  # size of the scratch space; None: measured (local) or 20 GB (SSH)
    # Benchmarks and suites the lab installed itself, by name: where each lives on the host
    # (("lkp-tests", "/opt/lkp-tests"), ("will-it-scale", "/opt/will-it-scale"), …). A template
    # that needs one plans only on a host that lists it.
    tools: tuple[tuple[str, str], ...] = ()
    # What a local host was found to have when the rules were loaded (triagebot.rules.self_describe):
    # programs on PATH (benchmarks, mkfs.*) and the filesystems its kernel mounts (None: not
    # known, as on an SSH host: there `tools` names the mkfs programs the host has).
    programs: tuple[tuple[str, str], ...] = ()
    kernel_filesystems: tuple[str, ...] | None = None
    stressors: tuple[str, ...] | None = None  # what its stress-ng offers (None: not known)
    describe: str | None = None  # "auto": the facts below were read from the machine
    described: tuple[str, ...] = ()  # the facts the machine gave (not written in hosts.toml)
    disks: tuple[str, ...] = ()  # the machine's block devices, described (describe = "auto")
    untrusted_code: bool = False  # disposable/isolated: the daemon may build any sender's patches here
    switcher: Switcher | None = None  # a ready switcher (None: the hooks, or no switching)
    switcher_note: str | None = None  # why `switcher = "auto"` chose none
    boot: BootFacts | None = None  # what this machine offers for booting kernels (vm, uml, auto)

    def tool(self, name: str) -> str | None:
        """Where the host keeps the tool `name`, or None when it does not have it."""
        return dict(self.tools).get(name)

    def program(self, name: str) -> str | None:
        """Where the program `name` is on the host: a lab tool of that name, else found on PATH."""
        return self.tool(name) or dict(self.programs).get(name)

    @property
    def program_names(self) -> tuple[str, ...]:
        """Every program and tool the host has, by name."""
        return tuple(sorted({name for name, _ in self.tools + self.programs}))

    @property
    def process_budget(self) -> int:
        return self.max_processes or default_process_budget(self.threads)

    @property
    def can_switch_kernel(self) -> bool:
        return bool(self.switch_kernel) or self.switcher is not None

    def switch_kernel_argv(self, commit: str) -> tuple[str, ...]:
        """The switch hook with `{commit}` substituted; ValueError for a commit that is no ref."""
        if not self.switch_kernel:
            raise ValueError(f"host {self.name} cannot switch kernels (switch_kernel is empty)")
        _check_commit(commit)
        return substituted(self.switch_kernel, {COMMIT_PLACEHOLDER: commit}, "the commit")

    def list_commits_argv(self, good: str, bad: str) -> tuple[str, ...]:
        """The list_commits hook with `{good}` and `{bad}` substituted; ValueError as above."""
        if not self.list_commits:
            raise ValueError(f"host {self.name} cannot bisect (it has no list_commits hook)")
        for commit in (good, bad):
            _check_commit(commit)
        return substituted(self.list_commits, {"{good}": good, "{bad}": bad}, "the commit")

    def build_patched_argv(self, commit: str, mbox: str) -> tuple[str, ...]:
        """The build_patched hook with `{commit}` and `{mbox}` (a path the runner chose) substituted."""
        if not self.build_patched:
            raise ValueError(f"host {self.name} cannot test fixes (it has no build_patched hook)")
        _check_commit(commit)
        return substituted(self.build_patched, {COMMIT_PLACEHOLDER: commit, "{mbox}": mbox}, "the value")


def _check_commit(commit: str) -> None:
    """ValueError for a commit that is no ref name (mail names commits: a hook gets only refs)."""
    if not _COMMIT.fullmatch(commit) or ".." in commit:
        raise ValueError(f"{commit!r} is not a commit id or ref name")


# --- loading -----------------------------------------------------------------------------------

_HOST_KEYS = ("name", "reach", "ssh", "describe", "cpu_model", "microarch", "threads", "sockets", "memory_gb",
              "disk", "scratch_dir", "scratch_devices", "labels", "switch_kernel",
              "running_kernel", "list_commits", "build_patched", "reboot_timeout_s", "max_processes", "scratch_gb",
              "tools", "untrusted_code", "switcher", "kernel_tree", "vm", "uml", "kexec")
_SWITCHER_KEYS = {"vm": ("config", "report_config", "memory_mib", "boot_seconds", "floor_percent", "accel", "cpu"),
                  "uml": ("config", "memory_mib", "boot_seconds", "floor_percent"),
                  "kexec": ("config", "report_config", "boot_dir", "modules_dir", "privilege", "kexec", "execute")}
_SSH_KEYS = ("host", "port", "user", "identity_file", "known_hosts_file", "connect_timeout_s",
             "control_master")


def _argv(entry: Section, key: str, default: list[str], allow_commit: bool) -> tuple[str, ...]:
    value = entry.get(key, default)
    if isinstance(value, str):
        entry.fail(f"{key} must be an argv list such as [\"uname\", \"-r\"], not a shell "
                   f"string ({value!r}): hooks are never run through a shell")
    argv = entry.strings(key, default)
    for part in argv:
        for placeholder in _PLACEHOLDER.findall(part):
            if placeholder != COMMIT_PLACEHOLDER or not allow_commit:
                entry.fail(f"{key}: unknown placeholder {placeholder} in {part!r}"
                           + (" (only {commit} is substituted)" if allow_commit else
                              " (nothing is substituted in this hook)"))
    if allow_commit and argv and not any(COMMIT_PLACEHOLDER in part for part in argv):
        entry.fail(f"{key} must mention {COMMIT_PLACEHOLDER} so the hook knows which kernel "
                   "to boot (or be [] for a host that cannot switch kernels)")
    return argv


def _hook(entry: Section, key: str, placeholders: tuple[str, ...]) -> tuple[str, ...]:
    """An optional hook naming each of `placeholders` (and no other), or () when absent."""
    if isinstance(entry.get(key, []), str):
        entry.fail(f"{key} must be an argv list, not a shell string: hooks are never run through a shell")
    argv = entry.strings(key, [])
    for part in argv:
        for placeholder in _PLACEHOLDER.findall(part):
            if placeholder not in placeholders:
                entry.fail(f"{key}: unknown placeholder {placeholder} in {part!r} "
                           f"(only {' and '.join(placeholders)} are substituted)")
    for placeholder in placeholders:
        if argv and not any(placeholder in part for part in argv):
            entry.fail(f"{key} must mention {placeholder}")
    return argv


def _absolute(entry: Section, key: str, value: str) -> str:
    if not value.startswith("/") or "/../" in value + "/" or value.rstrip("/") == "":
        entry.fail(f"{key} must be an absolute path below / without '..', not {value!r}")
    return value.rstrip("/")


def _tools(entry: Section) -> tuple[tuple[str, str], ...]:
    """`tools = { "lkp-tests" = "/opt/lkp-tests", … }`: names and absolute paths."""
    value = entry.get("tools", {})
    if not isinstance(value, dict):
        entry.fail(f"tools must be a table of tool name = absolute path, not {value!r}", "tools")
    tools = []
    for name, path in sorted(value.items()):
        if not _NAME.fullmatch(name):
            entry.fail(f"tools: {name!r} is not a tool name (letters, digits, '.', '_' or '-')", "tools")
        if not isinstance(path, str):
            entry.fail(f"tools: {name} must be a path string, not {path!r}", "tools")
        tools.append((name, _absolute(entry, f"tools.{name}", path)))
    return tuple(tools)


def _ssh(entry: Section) -> SshAccess:
    if not isinstance(entry.get("ssh"), dict):
        entry.fail("reach = \"ssh\" needs an [host.ssh] table with host, user, "
                   "identity_file and known_hosts_file")
    ssh = entry.nested("ssh", "[host.ssh]")
    ssh.check_keys(_SSH_KEYS)
    address = ssh.string("host", None)
    if address.startswith("-") or any(char.isspace() or char in "@'\"\\;`$" for char in address):
        ssh.fail(f"host must be a host name or address, not {address!r}")
    user = ssh.string("user", None)
    if not _LOGIN.fullmatch(user):
        ssh.fail(f"user must be a login name, not {user!r}")
    identity = ssh.string("identity_file", None)
    known_hosts = ssh.string("known_hosts_file", None)
    return SshAccess(
        host=address, user=user,
        identity_file=_absolute(ssh, "identity_file", str(Path(identity).expanduser())),
        known_hosts_file=_absolute(ssh, "known_hosts_file", str(Path(known_hosts).expanduser())),
        port=ssh.whole("port", 22, 1, 65535),
        connect_timeout_s=ssh.number("connect_timeout_s", 10.0, 1, 300),
        control_master=ssh.boolean("control_master", False),
    )


Probe = Callable[[str], "MachineFacts"]  # scratch_dir -> the local machine's facts
BootProbe = Callable[[], BootFacts]  # what this machine offers for booting kernels


def is_commit_ref(text: str) -> bool:
    """Whether `text` may name a commit to a hook or to git: a sha or ref, `^`/`~N` allowed."""
    return bool(_COMMIT.fullmatch(text)) and ".." not in text


def _kernel_tree(entry: Section, trees: tuple[KernelTree, ...], kind: str) -> KernelTree:
    name = entry.optional_string("kernel_tree")
    if name is None:
        if len(trees) != 1:
            entry.fail(f"switcher = \"{kind}\" builds from a kernel tree: name one with kernel_tree "
                       f"({', '.join(tree.name for tree in trees)} in trees.toml)")
        return trees[0]
    for tree in trees:
        if tree.name == name:
            return tree
    entry.fail(f"kernel_tree {name!r} is no [[kernel_tree]] of trees.toml "
               f"({', '.join(tree.name for tree in trees) or 'it has none'})", "kernel_tree")


def _config(options: Section, kind: str, rules: Path) -> str:
    """The switcher's own config: HOST_CONFIG or an existing fragment file (absolute path)."""
    default = DEFAULT_FRAGMENTS.get(kind, HOST_CONFIG)
    value = options.string("config", default)
    if value == HOST_CONFIG:
        if kind == "uml":
            options.fail("config = \"host\" is an x86 config: a UML kernel needs a UML fragment "
                         "(default kernels/uml-min.config)", "config")
        return value
    path = Path(value) if value.startswith("/") else rules / value
    if not path.is_file() and value == default and (PACKAGED_RULES / value).is_file():
        path = PACKAGED_RULES / value  # the packaged fragment, for a rules directory without its own
    if not path.is_file():
        options.fail(f"config {value!r}: no such fragment file ({path}); give a file of CONFIG_ lines or "
                     "\"host\"", "config")
    return str(path.resolve())


def _options(entry: Section, kind: str) -> Section:
    """The [host.KIND] table (empty when absent), its keys checked; a table for another switcher refused."""
    for other in ("vm", "uml", "kexec"):
        if other in entry and other != kind and not (entry.get("switcher") == "auto" and other in ("vm", "uml")):
            entry.fail(f"[host.{other}] belongs to switcher = \"{other}\", not to this host's switcher", other)
    if kind not in entry:
        return Section(entry.file, f"{entry.where}: [host.{kind}]", {}, entry.line)
    options = entry.nested(kind, f"[host.{kind}]")
    options.check_keys(_SWITCHER_KEYS[kind])
    return options


def _switcher(entry: Section, kind: str, asked: str, tree: KernelTree, rules: Path, builds: KernelBuilds) -> Switcher:
    options = _options(entry, kind)
    values: dict = {"kind": kind, "kernel_tree": tree, "builds": builds, "asked": asked,
                    "config": _config(options, kind, rules)}
    if kind in ("vm", "kexec"):
        values["report_config"] = options.boolean("report_config", True)
    else:
        values["report_config"] = False
    if kind in ("vm", "uml"):
        values.update(memory_mib=options.whole("memory_mib", 512, 64, 1 << 20),
                      boot_seconds=options.number("boot_seconds", 120.0, 0, 3600, above=True),
                      floor_percent=options.number("floor_percent", GUEST_FLOOR_PERCENT, 0, 90, above=True))
    if kind == "vm":
        values["accel"] = options.choice("accel", ACCELS, "auto")
        cpu = options.optional_string("cpu")
        if cpu is not None and not _CPU.fullmatch(cpu):
            options.fail(f"cpu must be a QEMU CPU model such as qemu64 or host, not {cpu!r}", "cpu")
        values["cpu"] = cpu
    if kind == "kexec":
        values.update(boot_dir=_absolute(options, "boot_dir", options.string("boot_dir", "/boot")),
                      modules_dir=_absolute(options, "modules_dir", options.string("modules_dir", "/lib/modules")),
                      privilege=options.strings("privilege"),
                      kexec=options.string("kexec", "kexec"),
                      execute=options.strings("execute"))
        if isinstance(options.get("execute"), str) or isinstance(options.get("privilege"), str):
            options.fail("execute and privilege must be argv lists, not shell strings")
    return Switcher(**values)


def _switcher_of(entry: Section, reach: str, trees: tuple[KernelTree, ...], rules: Path,
                 boot: Callable[[], BootFacts], builds: KernelBuilds) -> tuple[Switcher | None, str | None]:
    """The host's ready switcher (None without one) and, for "auto" that chose none, why."""
    if "switcher" not in entry:
        for kind in ("vm", "uml", "kexec", "kernel_tree"):
            if kind in entry:
                entry.fail(f"{kind} is for a host with a switcher (switcher = \"vm\", \"uml\", \"kexec\" or "
                           "\"auto\")", kind)
        return None, None
    asked = entry.choice("switcher", SWITCHERS)
    for hook in ("switch_kernel", "list_commits", "build_patched"):
        if entry.get(hook):
            entry.fail(f"a host with switcher = \"{asked}\" takes no {hook} hook: the switcher builds, lists and "
                       "boots the commits itself (fix tests still need the hooks)", hook)
    if asked == "kexec" and reach != "ssh":
        entry.fail("switcher = \"kexec\" reboots the host into the kernel: it must be an SSH host, never this "
                   "machine", "switcher")
    if asked in ("vm", "uml", "auto") and reach != "local":
        entry.fail(f"switcher = \"{asked}\" boots the kernel on this machine: reach must be \"local\" (run a "
                   "worker on the lab machine for a guest there)", "switcher")
    if asked in ("vm", "uml", "auto") and entry.get("scratch_devices"):
        entry.fail("scratch_devices are not seen inside a guest: a vm or uml host takes none", "scratch_devices")
    if asked == "auto":
        if not trees:
            return None, "no [[kernel_tree]] in trees.toml to build kernels from"
        facts = boot()
        usable = [kind for kind, problem in (("vm", facts.vm_problem()), ("uml", facts.uml_problem())) if not problem]
        if not usable:
            return None, f"this machine can boot no kernel it builds: vm: {facts.vm_problem()}; " \
                         f"uml: {facts.uml_problem()}"
        return _switcher(entry, usable[0], asked, _kernel_tree(entry, trees, usable[0]), rules, builds), None
    if not trees:
        entry.fail(f"switcher = \"{asked}\" builds kernels from a [[kernel_tree]] of trees.toml, and it has none",
                   "switcher")
    return _switcher(entry, asked, asked, _kernel_tree(entry, trees, asked), rules, builds), None


def probe_local(scratch_dir: str) -> MachineFacts:
    """This machine's facts (read from /proc and /sys when the rules are loaded)."""
    from triagebot.rules.self_describe import probe_this_machine

    return probe_this_machine(scratch_dir)


def _described(entry: Section, facts: MachineFacts | None) -> dict:
    """The facts a host entry gives, each filled from the machine where it says describe = "auto"."""
    auto = facts is not None and entry.get("describe") == "auto"
    values: dict = {}
    for key in DESCRIBED_FACTS:
        if key in entry or not auto:
            continue
        value = getattr(facts, key)
        if value is None and key != "microarch":
            entry.fail(f"describe = \"auto\": the machine does not say its {key}; give {key} in the entry")
        values[key] = value
    return values


def _host(entry: Section, probe: Probe, trees: tuple[KernelTree, ...] = (),
          boot: Callable[[], BootFacts] = probe_boot, builds: KernelBuilds = DEFAULT_BUILDS) -> Host:
    entry.check_keys(_HOST_KEYS)
    name = entry.string("name", None)
    if not _NAME.fullmatch(name):
        entry.fail(f"name must be letters, digits, '.', '_' or '-', not {name!r}")
    reach = entry.choice("reach", REACH_KINDS, None)
    if reach == "local" and "ssh" in entry:
        entry.fail("a local host takes no [host.ssh] table")
    describe = entry.choice("describe", DESCRIBE_KINDS, None) if "describe" in entry else None
    if describe is not None and reach != "local":
        entry.fail("describe = \"auto\" reads this machine: only a local host may say it; describe "
                   "an SSH host's CPU, threads, sockets, memory and disk in its entry")
    scratch = _absolute(entry, "scratch_dir", entry.string("scratch_dir", None))
    facts = probe(scratch) if reach == "local" else None
    filled = _described(entry, facts)
    disk = filled["disk"] if "disk" in filled else entry.choice("disk", DISK_TYPES, None)
    devices = entry.strings("scratch_devices")
    for device in devices:
        if not device.startswith("/dev/") or ".." in device:
            entry.fail(f"scratch_devices: {device!r} is not a /dev/ path")
    switcher, note = _switcher_of(entry, reach, trees, Path(entry.file.name).parent, boot, builds)
    return Host(
        name=name,
        reach=reach,
        ssh=_ssh(entry) if reach == "ssh" else None,
        cpu_model=filled["cpu_model"] if "cpu_model" in filled else entry.string("cpu_model", None),
        microarch=filled["microarch"] if "microarch" in filled else entry.optional_string("microarch"),
        threads=filled["threads"] if "threads" in filled else entry.whole("threads", None, 1, 65536),
        sockets=filled["sockets"] if "sockets" in filled else entry.whole("sockets", None, 1, 64),
        memory_gb=filled["memory_gb"] if "memory_gb" in filled else entry.whole("memory_gb", None, 1, 1 << 20),
        disk=disk,
        scratch_dir=scratch,
        scratch_devices=devices,
        labels=entry.strings("labels"),
        switch_kernel=_argv(entry, "switch_kernel", [], allow_commit=True),
        running_kernel=_argv(entry, "running_kernel", ["uname", "-r"], allow_commit=False) or ("uname", "-r"),
        list_commits=_hook(entry, "list_commits", ("{good}", "{bad}")),
        build_patched=_hook(entry, "build_patched", (COMMIT_PLACEHOLDER, "{mbox}")),
        reboot_timeout_s=entry.number("reboot_timeout_s", 900.0, 1, 86400),
        max_processes=entry.whole("max_processes", None, 16, 1 << 22) if "max_processes" in entry else None,
        scratch_gb=entry.whole("scratch_gb", None, 1, 1 << 30) if "scratch_gb" in entry else None,
        tools=_tools(entry),
        programs=facts.programs if facts is not None else (),
        kernel_filesystems=facts.kernel_filesystems if facts is not None else None,
        stressors=facts.stressors if facts is not None else None,
        describe=describe,
        described=tuple(filled),
        disks=facts.disks if facts is not None and describe else (),
        untrusted_code=entry.boolean("untrusted_code", False),
        switcher=switcher,
        switcher_note=note,
        boot=boot() if switcher is not None and switcher.guest else None,
    )


def hosts_from(file: RulesFile, probe: Probe | None = None, kernel_trees: tuple[KernelTree, ...] = (),
               boot_probe: BootProbe | None = None, kernel_builds: KernelBuilds = DEFAULT_BUILDS) -> tuple[Host, ...]:
    """The hosts of one parsed hosts.toml; RulesError naming file, line and entry on any fault.

    A local host's programs and kernel filesystems, and the facts of one that says
    describe = "auto", come from `probe` (default: this machine, read once); what this machine
    offers for booting kernels (switcher vm, uml, auto) from `boot_probe`, asked at most once and
    only for such a host. `kernel_trees` and `kernel_builds` are trees.toml's: what a switcher
    builds from, and where."""
    file.top().check_keys(("host", "max_wait_minutes"))
    probe = _once(probe or probe_local)
    boot = _boot_once(boot_probe or probe_boot)
    hosts: list[Host] = []
    seen: set[str] = set()
    for entry in file.entries("host", label="name"):
        host = _host(entry, probe, kernel_trees, boot, kernel_builds)
        if host.name in seen:
            entry.fail(f"name {host.name!r} is used by an earlier entry")
        seen.add(host.name)
        hosts.append(host)
    return tuple(hosts)


# How long a report waits for its most similar host before it takes the most similar free one
# (the top-level `max_wait_minutes` of hosts.toml; triagebot.reproduce.schedule).
DEFAULT_MAX_WAIT_MINUTES = 120.0


def max_wait_from(file: RulesFile) -> float:
    """hosts.toml's `max_wait_minutes` (default DEFAULT_MAX_WAIT_MINUTES), at least 0."""
    return file.top().number("max_wait_minutes", DEFAULT_MAX_WAIT_MINUTES, 0, 60 * 24 * 365)


def _once(probe: Probe) -> Probe:
    """`probe` asked at most once per scratch directory."""
    seen: dict[str, MachineFacts] = {}

    def cached(scratch_dir: str) -> MachineFacts:
        if scratch_dir not in seen:
            seen[scratch_dir] = probe(scratch_dir)
        return seen[scratch_dir]
    return cached


def _boot_once(probe: BootProbe) -> Callable[[], BootFacts]:
    seen: list[BootFacts] = []

    def cached() -> BootFacts:
        if not seen:
            seen.append(probe())
        return seen[0]
    return cached


def parse_hosts(text: str, path: Path, probe: Probe | None = None, kernel_trees: tuple[KernelTree, ...] = (),
                boot_probe: BootProbe | None = None, kernel_builds: KernelBuilds = DEFAULT_BUILDS) -> tuple[Host, ...]:
    """The hosts of one hosts.toml text; `path` names it in errors."""
    return hosts_from(parse_text(text, str(path)), probe, kernel_trees, boot_probe, kernel_builds)


def load_hosts(rules: Path, probe: Probe | None = None, boot_probe: BootProbe | None = None) -> tuple[Host, ...]:
    """The inventory in `rules/hosts.toml` (with trees.toml's kernel trees); a missing or invalid
    file is a RulesError."""
    from triagebot.rules.trees import load_kernel_trees

    path = rules / HOSTS_FILE
    if not path.exists():
        raise missing_hosts(rules)
    trees, builds = load_kernel_trees(rules)
    return hosts_from(read_file(path), probe, trees, boot_probe, builds)


def missing_hosts(rules: Path) -> RulesError:
    return RulesError(f"{rules / HOSTS_FILE}: no host inventory (describe at least this machine)")
