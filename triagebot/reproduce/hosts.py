"""Reproduce stage: the host inventory (rules/hosts.toml), validated at load, and host choice.

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

Hooks are argv lists, never shell strings: nothing here is handed to a shell.

Host choice is pure: `score_host` compares a host with a report's TestMachine (CPU vendor,
microarchitecture and its core family, threads, sockets, memory, disk type) and returns the
score with every difference spelled out; `choose_host` takes the best idle host.
"""
from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triagebot.errors import RulesError
from triagebot.records import TestMachine

HOSTS_FILE = "hosts.toml"
DISK_TYPES = ("nvme", "ssd", "hdd")
REACH_KINDS = ("local", "ssh")
COMMIT_PLACEHOLDER = "{commit}"
# A commit or ref as it may be substituted into a hook: a sha or a tag/branch name. Never a
# leading '-', so it cannot be read as an option by the hook.
# A sha or ref name, optionally with git's parent suffix ("abc123^", "v6.8~2"): the base of a
# human report is often only "the culprit's parent". Passed as one argv word, never to a shell.
_COMMIT = re.compile(r"[0-9A-Za-z][0-9A-Za-z._/+-]{0,127}(?:\^|~\d{1,4})?")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# A host's default process budget (max_processes): the processes and threads one plan may start.
# 64 a thread lets hackbench's default 40-task groups run one a thread with room to spare;
# small hosts get at least MIN_PROCESS_BUDGET (a benchmark's own helpers, fio's job processes).
PROCESSES_PER_THREAD = 64
MIN_PROCESS_BUDGET = 256


def default_process_budget(threads: int) -> int:
    """The processes and threads a plan may start on a host with `threads` hardware threads."""
    return max(MIN_PROCESS_BUDGET, threads * PROCESSES_PER_THREAD)
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


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
    reboot_timeout_s: float = 900.0  # how long a kernel switch may keep the host unreachable
    max_processes: int | None = None  # processes + threads one plan may start; None: default_process_budget
    scratch_gb: int | None = None  # size of the scratch space; None: measured (local) or 20 GB (SSH)

    @property
    def process_budget(self) -> int:
        return self.max_processes or default_process_budget(self.threads)

    @property
    def can_switch_kernel(self) -> bool:
        return bool(self.switch_kernel)

    def switch_kernel_argv(self, commit: str) -> tuple[str, ...]:
        """The switch hook with `{commit}` substituted; ValueError for a commit that is no ref."""
        if not self.switch_kernel:
            raise ValueError(f"host {self.name} cannot switch kernels (switch_kernel is empty)")
        if not _COMMIT.fullmatch(commit) or ".." in commit:
            raise ValueError(f"{commit!r} is not a commit id or ref name")
        return tuple(part.replace(COMMIT_PLACEHOLDER, commit) for part in self.switch_kernel)


# --- loading -----------------------------------------------------------------------------------

_HOST_KEYS = {"name", "reach", "ssh", "cpu_model", "microarch", "threads", "sockets", "memory_gb",
              "disk", "scratch_dir", "scratch_devices", "labels", "switch_kernel",
              "running_kernel", "reboot_timeout_s", "max_processes", "scratch_gb"}
_SSH_KEYS = {"host", "port", "user", "identity_file", "known_hosts_file", "connect_timeout_s",
             "control_master"}


class _Entry:
    """Error messages for one [[host]] entry: file, line of its header, number and name."""

    def __init__(self, path: Path, line: int | None, number: int, table: Mapping[str, Any]) -> None:
        name = table.get("name")
        label = f" ({name})" if isinstance(name, str) and name else ""
        self.where = f"{path}:{line}" if line else str(path)
        self.entry = f"[[host]] entry {number}{label}"
        self.path = path

    def error(self, problem: str) -> RulesError:
        return RulesError(f"{self.where}: {self.entry}: {problem}")


def _header_lines(text: str) -> list[int]:
    """1-based line numbers of each `[[host]]` header, in order (tomllib gives no positions)."""
    return [number for number, line in enumerate(text.splitlines(), start=1)
            if re.match(r"\s*\[\[\s*host\s*\]\]", line)]


def _string(entry: _Entry, table: Mapping[str, Any], key: str, *, required: bool = True,
            default: str | None = None) -> str | None:
    value = table.get(key, default)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise entry.error(f"{key} must be a non-empty string, not {value!r}")
    return value


def _integer(entry: _Entry, table: Mapping[str, Any], key: str, low: int, high: int) -> int:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise entry.error(f"{key} must be a whole number from {low} to {high}, not {value!r}")
    return value


def _seconds(entry: _Entry, table: Mapping[str, Any], key: str, default: float, low: float,
             high: float) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise entry.error(f"{key} must be a number of seconds from {low:g} to {high:g}, not {value!r}")
    return float(value)


def _strings(entry: _Entry, table: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise entry.error(f"{key} must be a list of non-empty strings, not {value!r}")
    return tuple(value)


def _argv(entry: _Entry, table: Mapping[str, Any], key: str, default: list[str],
          allow_commit: bool) -> tuple[str, ...]:
    value = table.get(key, default)
    if isinstance(value, str):
        raise entry.error(f"{key} must be an argv list such as [\"uname\", \"-r\"], not a shell "
                          f"string ({value!r}): hooks are never run through a shell")
    argv = _strings(entry, {key: value}, key)
    for part in argv:
        for placeholder in _PLACEHOLDER.findall(part):
            if placeholder != COMMIT_PLACEHOLDER or not allow_commit:
                raise entry.error(f"{key}: unknown placeholder {placeholder} in {part!r}"
                                  + (" (only {commit} is substituted)" if allow_commit else
                                     " (nothing is substituted in this hook)"))
    if allow_commit and argv and not any(COMMIT_PLACEHOLDER in part for part in argv):
        raise entry.error(f"{key} must mention {COMMIT_PLACEHOLDER} so the hook knows which kernel "
                          "to boot (or be [] for a host that cannot switch kernels)")
    return argv


def _absolute(entry: _Entry, key: str, value: str) -> str:
    if not value.startswith("/") or "/../" in value + "/" or value.rstrip("/") == "":
        raise entry.error(f"{key} must be an absolute path below / without '..', not {value!r}")
    return value.rstrip("/")


def _ssh(entry: _Entry, value: Any) -> SshAccess:
    if not isinstance(value, dict):
        raise entry.error("reach = \"ssh\" needs an [host.ssh] table with host, user, "
                          "identity_file and known_hosts_file")
    extra = set(value) - _SSH_KEYS
    if extra:
        raise entry.error(f"[host.ssh]: unknown key(s) {', '.join(sorted(extra))}")
    address = _string(entry, value, "host")
    assert address is not None
    if address.startswith("-") or any(char.isspace() or char in "@'\"\\;`$" for char in address):
        raise entry.error(f"[host.ssh]: host must be a host name or address, not {address!r}")
    user = _string(entry, value, "user")
    assert user is not None
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", user):
        raise entry.error(f"[host.ssh]: user must be a login name, not {user!r}")
    identity = _string(entry, value, "identity_file")
    known_hosts = _string(entry, value, "known_hosts_file")
    assert identity is not None and known_hosts is not None
    control = value.get("control_master", False)
    if not isinstance(control, bool):
        raise entry.error(f"[host.ssh]: control_master must be true or false, not {control!r}")
    return SshAccess(
        host=address, user=user,
        identity_file=_absolute(entry, "[host.ssh] identity_file", str(Path(identity).expanduser())),
        known_hosts_file=_absolute(entry, "[host.ssh] known_hosts_file",
                                   str(Path(known_hosts).expanduser())),
        port=_integer(entry, {"port": value.get("port", 22)}, "port", 1, 65535),
        connect_timeout_s=_seconds(entry, value, "connect_timeout_s", 10.0, 1, 300),
        control_master=control,
    )


def _host(entry: _Entry, table: Any) -> Host:
    if not isinstance(table, dict):
        raise entry.error("must be a table")
    extra = set(table) - _HOST_KEYS
    if extra:
        raise entry.error(f"unknown key(s) {', '.join(sorted(extra))}")
    name = _string(entry, table, "name")
    assert name is not None
    if not _NAME.fullmatch(name):
        raise entry.error(f"name must be letters, digits, '.', '_' or '-', not {name!r}")
    reach = table.get("reach")
    if reach not in REACH_KINDS:
        raise entry.error(f"reach must be one of {', '.join(REACH_KINDS)}, not {reach!r}")
    if reach == "local" and "ssh" in table:
        raise entry.error("a local host takes no [host.ssh] table")
    disk = table.get("disk")
    if disk not in DISK_TYPES:
        raise entry.error(f"disk must be one of {', '.join(DISK_TYPES)}, not {disk!r}")
    scratch = _string(entry, table, "scratch_dir")
    assert scratch is not None
    devices = _strings(entry, table, "scratch_devices")
    for device in devices:
        if not device.startswith("/dev/") or ".." in device:
            raise entry.error(f"scratch_devices: {device!r} is not a /dev/ path")
    cpu_model = _string(entry, table, "cpu_model")
    assert cpu_model is not None
    return Host(
        name=name,
        reach=reach,
        ssh=_ssh(entry, table.get("ssh")) if reach == "ssh" else None,
        cpu_model=cpu_model,
        microarch=_string(entry, table, "microarch", required=False),
        threads=_integer(entry, table, "threads", 1, 65536),
        sockets=_integer(entry, table, "sockets", 1, 64),
        memory_gb=_integer(entry, table, "memory_gb", 1, 1 << 20),
        disk=disk,
        scratch_dir=_absolute(entry, "scratch_dir", scratch),
        scratch_devices=devices,
        labels=_strings(entry, table, "labels"),
        switch_kernel=_argv(entry, table, "switch_kernel", [], allow_commit=True),
        running_kernel=_argv(entry, table, "running_kernel", ["uname", "-r"], allow_commit=False)
        or ("uname", "-r"),
        reboot_timeout_s=_seconds(entry, table, "reboot_timeout_s", 900.0, 1, 86400),
        max_processes=_integer(entry, table, "max_processes", 16, 1 << 22) if "max_processes" in table else None,
        scratch_gb=_integer(entry, table, "scratch_gb", 1, 1 << 30) if "scratch_gb" in table else None,
    )


def parse_hosts(text: str, path: Path) -> tuple[Host, ...]:
    """The hosts of one hosts.toml text; RulesError naming `path`, line and entry on any fault."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RulesError(f"{path}: not valid TOML: {error}") from error
    unknown = set(data) - {"host"}
    if unknown:
        raise RulesError(f"{path}: unknown table(s) {', '.join(sorted(unknown))} (expected [[host]])")
    entries = data.get("host", [])
    if not isinstance(entries, list):
        raise RulesError(f"{path}: host must be an array of tables ([[host]])")
    lines = _header_lines(text)
    hosts: list[Host] = []
    seen: set[str] = set()
    for number, table in enumerate(entries, start=1):
        entry = _Entry(path, lines[number - 1] if number <= len(lines) else None, number,
                       table if isinstance(table, dict) else {})
        host = _host(entry, table)
        if host.name in seen:
            raise entry.error(f"name {host.name!r} is used by an earlier entry")
        seen.add(host.name)
        hosts.append(host)
    return tuple(hosts)


def load_hosts(rules: Path) -> tuple[Host, ...]:
    """The inventory in `rules/hosts.toml`; a missing or invalid file is a RulesError."""
    path = rules / HOSTS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise RulesError(f"{path}: no host inventory (describe at least this machine)") from error
    except (OSError, UnicodeDecodeError) as error:
        raise RulesError(f"{path}: cannot be read: {error}") from error
    return parse_hosts(text, path)


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
