"""Reproduce stage: the one atomic LKP job a report ran, for `lkp run` on a host with lkp-tests.

Where the job comes from, in order:
- the report's materials `job.yaml` when it was fetched (`source="job.yaml"`);
- else lkp-tests' own job files for the testcase (`jobs/<testcase>.yaml`, `jobs/<testcase>/*.yaml`,
  `jobs/<testcase>-*.yaml`, read from the host's lkp-tests; `source="lkp-tests"`): each file's
  first document alone and merged with each later one is a job, as lkp's split-job reads them;
  the one that agrees best with the report's parameters is taken and narrowed to the atomic job
  the report ran, every axis set to the report's value (a list lkp-tests would split on and the
  report gives no value for, is taken from the headline metric's name, else refused).

The split is done here, in Python, from parsed YAML rather than by running lkp's `split-job` on
the host: the planner then sees (and validates, and shows in the plan) the exact job before
anything runs, refuses with a reason when the report's values do not fit, and a host needs no
`lkp split-job` step (which wants a `hosts/<hostname>` file that `lkp install` writes).

What never comes from the mail: host-specific keys (`*_partitions`, `rootfs`, `kconfig`,
`compiler`, `commit`, `testbox`, `memory`, `arch`, `ucode`, …) are dropped wherever they were
read and set from the host: `memory` from its description; the report's `disk` becomes the
host's scratch devices (`hdd_partitions`/`ssd_partitions`) when it lists enough of them, else
the job runs on the run's scratch directory (`mount_points`) and the plan says what differs.
LKP's default monitors (perf-profile, turbostat, …) are never added: a job runs its setup and
benchmark programs only. Every key and value taken from the mail is checked against a plain
charset (`_KEY`, `_VALUE`): a value is data for lkp's shell scripts, never shell. The job file
is written by `job_text` from the parsed values (PyYAML's safe dumper), never copied as text.
Reading lkp-tests' files is the only I/O here (cached per directory).
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from triagebot.records.report import Report
from triagebot.reproduce.yaml_text import YamlRefused, load_documents
from triagebot.rules.templates import SCRATCH, ValueOutOfRange, parse_duration, parse_size

LKP_TOOL = "lkp-tests"  # hosts.toml `tools` name of an lkp-tests checkout
JOB_PATH = SCRATCH + "/job.yaml"  # where the runner writes the job file
# `lkp run` makes the result root under /lkp/result/… and links `./result` (in its working
# directory, the run's scratch dir) to it; stats.json there holds the metrics by LKP's names.
STATS_PATH = SCRATCH + "/result/stats.json"
MAX_JOB_FILES = 64  # job files of one testcase read (lkp-tests has at most ~20)
MAX_MERGE_DEPTH = 4  # `<<: {file: …}` includes followed
_KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:%+,=@-]{0,127}$")
_TESTCASE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_EXPRESSION = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_DISK = re.compile(r"^(\d{1,2})(HDD|SSD|BRD|pmem)(?:_(\d{1,4})G)?$")
# Keys that describe LKP's machine and infrastructure, not the benchmark: never read from a job
# or a report; the host's own values (or lkp's, found on the host) take their place.
HOST_KEYS = frozenset({
    "arch", "testbox", "tbox_group", "rootfs", "kconfig", "compiler", "commit", "memory", "nr_cpu",
    "ucode", "bp_memmap", "partitions", "mount_points", "hdd_partitions", "ssd_partitions",
    "pmem_partitions", "rootfs_partition", "swap_partitions", "kernel", "initrd", "modules_initrd",
    "bm_initrd", "linux_headers_initrd", "job_file", "job_origin", "result_root", "queue", "user",
    "branch", "head_commit", "base_commit", "id", "need_kconfig", "need_memory", "need_cpu",
    "kernel_cmdline", "bootloader_append", "lkp_initrd", "site", "lkp_server", "nr_node",
    "ssh_pub_key", "lab", "host", "enqueue_time", "dequeue_time", "repeat_to", "nr_vm", "model",
    "boot_params",
})
# The report's storage: used with the host's scratch devices, dropped without them.
STORAGE_KEYS = ("disk", "fs", "fs1", "fs2", "mount_option", "format", "mkfs", "mount", "raw_disk")
SCRATCH_SIZES = ("test_size", "size")  # totals written to the storage: fitted to the host's scratch
SCRATCH_FRACTION = 0.5
DURATIONS = ("runtime", "testtime", "period", "duration")
KEEP = ("suite", "testcase", "category")
DEFAULT_ARCH = "x86_64"  # `lkp run` takes a job with `arch` as atomic; LKP's reports are x86_64


class LkpJobRefused(ValueError):
    """No atomic job can be built for the report; the message says why, on one line."""

    def __init__(self, reason: str, missing: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = missing


@dataclass(frozen=True)
class LkpJob:
    job: dict[str, Any]             # the atomic job, "{scratch}" left for the runner
    text: str                       # job_text(job)
    lkp: str                        # the host's `lkp` program
    source: str                     # job.yaml / lkp-tests
    origin: str                     # the job file it came from
    metric: str                     # the report's headline metric (stats.json name)
    better: str                     # higher / lower
    change_percent: float | None
    timeout_seconds: int
    notes: tuple[str, ...]
    scaled: tuple[str, ...]
    storage_differs: tuple[str, ...]
    runs_on: str | None


def lkp_tests_dir(tools: tuple[tuple[str, str], ...]) -> Path | None:
    """The host's lkp-tests checkout: declared in `tools`, else the one `lkp` on its PATH is in."""
    named = dict(tools)
    if named.get(LKP_TOOL):
        return Path(named[LKP_TOOL])
    program = named.get("lkp")
    if program:
        root = Path(os.path.realpath(program)).parent.parent
        if (root / "jobs").is_dir():
            return root
    return None


def has_job_files(directory: Path, testcase: str) -> bool:
    return bool(_TESTCASE.match(testcase)) and bool(_job_files(str(directory), testcase))


def build_job(report: Report, directory: Path, document: dict[str, Any] | None, *, memory_gb: int,
              scratch_gb: int, scratch_devices: tuple[str, ...], timeout_seconds: int) -> LkpJob:
    """The atomic job for `report` on a host with lkp-tests at `directory`; LkpJobRefused."""
    headline = report.headline
    if headline is None or not headline.metric:
        raise LkpJobRefused("the LKP report names no headline metric to compare",
                            ("the report's headline metric",))
    if not _KEY_METRIC.match(headline.metric):
        raise LkpJobRefused(f"headline metric {headline.metric!r} is not a plain LKP metric name")
    notes: list[str] = []
    # the mail's host keys are never used (nor checked): the host's own take their place
    parameters = _checked({key: value for key, value in report.parameters if not _host_key(key)}, "LKP parameter")
    if document is not None:
        document = _one_host(document, directory, notes)
        source, origin = "job.yaml", "the report's job.yaml"
        skeleton = _checked_job(_relevant(document, _programs(str(directory))))
        testcase = str(skeleton.get("testcase") or report.testcase or "")
        parameters = {}  # the job file holds every value the report ran with
    else:
        testcase = report.testcase or ""
        if not _TESTCASE.match(testcase):
            raise LkpJobRefused(f"testcase {testcase!r} is not a plain LKP testcase name")
        variants = _job_files(str(directory), testcase)
        if not variants:
            raise LkpJobRefused(f"lkp-tests at {directory} has no job file for testcase {testcase}",
                                (f"jobs/{testcase}.yaml in lkp-tests",))
        origin, skeleton = _best(variants, parameters)
        skeleton = _one_host(skeleton, directory, notes)
        source = "lkp-tests"
        notes.append(f"job built from lkp-tests' {origin} and the report's parameters")
    if not _TESTCASE.match(testcase):
        raise LkpJobRefused(f"testcase {testcase!r} is not a plain LKP testcase name")
    programs = _programs(str(directory))
    kept = {key: value for key, value in skeleton.items()
            if not _host_key(key) and programs.get(key, ("workload", frozenset()))[0] != "monitor"}
    job = _narrow(kept, parameters, headline.metric, notes)
    if not any(programs.get(key, ("", frozenset()))[0] == "workload" and key in _benchmarks(str(directory))
               for key in job):
        raise LkpJobRefused(f"the {testcase} job runs no benchmark program of this lkp-tests",
                            (f"a {testcase} job lkp-tests runs",))
    dropped = sorted(set(document if document is not None else skeleton) - set(kept) - set(HOST_KEYS)
                     - {"<<"} - set(STORAGE_KEYS))
    if dropped:
        shown = ", ".join(dropped[:8]) + (f" and {len(dropped) - 8} more" if len(dropped) > 8 else "")
        notes.append(f"left out of the job, LKP's monitors and infrastructure: {shown}")
    machine = [f"{key}={value}" for key, value in report.parameters if _host_key(key)]
    if machine:
        notes.append(f"machine settings from the host, not the report: {' '.join(machine)}")
    scaled: list[str] = []
    differs, runs_on = _storage(job, scratch_devices, memory_gb)
    if runs_on == "the run's scratch directory":
        _fit_sizes(job, scratch_gb, scaled)
    job["arch"] = DEFAULT_ARCH
    job["memory"] = f"{memory_gb}G"
    for key in KEEP:
        job.setdefault(key, testcase if key in ("suite", "testcase") else None)
    job["testcase"] = testcase
    # the table's change is signed where a headline ("15.2% regression") may not be
    change = next((row.change for row in report.metrics
                   if row.test is None and row.name == headline.metric and row.change_unit == "percent"),
                  headline.change_percent)
    better = _better(change, headline.direction)
    seconds = [_duration(key, str(_lookup(job, key))) for key in DURATIONS if _lookup(job, key) is not None]
    timeout = timeout_seconds
    if seconds and all(value is not None for value in seconds):
        timeout = min(timeout_seconds, int(sum(value or 0 for value in seconds) * 2) + 600)
    lkp = str(directory / "bin" / "lkp")
    return LkpJob(job=job, text=job_text(job), lkp=lkp, source=source, origin=origin, metric=headline.metric,
                  better=better, change_percent=change, timeout_seconds=timeout, notes=tuple(notes),
                  scaled=tuple(scaled), storage_differs=tuple(differs), runs_on=runs_on)


def job_text(job: dict[str, Any]) -> str:
    """The job file: YAML dumped from the parsed values. Whole numbers are written as numbers, as
    lkp-tests' own job files write them; every other value as a string."""
    def typed(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: typed(item) for key, item in value.items()}
        if isinstance(value, str) and re.fullmatch(r"[1-9]\d{0,11}|0", value):
            return int(value)
        return value
    return yaml.safe_dump(typed(job), sort_keys=False, default_flow_style=False, allow_unicode=False)


def flat_values(job: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The job's scalar values as (key, text), nested ones as `program.key`, for the plan."""
    found: list[tuple[str, str]] = []
    for key, value in job.items():
        if isinstance(value, dict):
            found.extend((f"{key}.{inner}", str(item)) for inner, item in value.items() if item is not None)
        elif value is not None:
            found.append((key, str(value)))
    return tuple(sorted(found))


# --- reading lkp-tests ------------------------------------------------------------------------------

_KEY_METRIC = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._%/:+-]{0,199}$")


@functools.lru_cache(maxsize=256)
def _job_files(directory: str, testcase: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    """(file, job) for each job lkp-tests' files define for `testcase`: a file's first document,
    then it merged with each later document (lkp's split-job reads them so)."""
    root = Path(directory) / "jobs"
    if not root.is_dir():
        return ()
    paths = [root / f"{testcase}.yaml", *sorted((root / testcase).glob("*.yaml")),
             *sorted(root.glob(f"{testcase}-*.yaml"))]
    jobs: list[tuple[str, dict[str, Any]]] = []
    for path in [path for path in paths if path.is_file()][:MAX_JOB_FILES]:
        try:
            documents = _read_job_file(path, root, 0)
        except (OSError, YamlRefused, LkpJobRefused):
            continue  # a job file this reader cannot read: the others may do
        if not documents or documents[0].get("testcase") != testcase:
            continue
        name = str(path.relative_to(Path(directory)))
        base = documents[0]
        jobs.append((name, dict(base)))
        jobs.extend((name, {**base, **later}) for later in documents[1:])
    return tuple(jobs)


def _read_job_file(path: Path, root: Path, depth: int) -> list[dict[str, Any]]:
    """A job file's documents (mappings), with `<<: {file: NAME, key: value}` includes merged."""
    if depth > MAX_MERGE_DEPTH:
        raise LkpJobRefused(f"{path.name}: includes nested too deep")
    text = path.read_text(encoding="utf-8", errors="replace")
    # lkp evaluates `{{ … }}` expressions itself; here they are values the report must give
    text = _EXPRESSION.sub(lambda match: "'{{expression}}'", text)
    documents = [document for document in load_documents(text) if isinstance(document, dict)]
    merged = []
    for document in documents:
        include = document.pop("<<", None)
        if isinstance(include, dict) and isinstance(include.get("file"), str):
            name = include.pop("file")
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,200}", name) or ".." in name:
                raise LkpJobRefused(f"{path.name}: include {name!r} is not a job file of lkp-tests")
            target = (path.parent / name) if (path.parent / name).is_file() else root / name
            included = _read_job_file(target, root, depth + 1)
            base = {**(included[0] if included else {}), **include, **document}
            merged.append(base)
            merged.extend({**base, **later} for later in included[1:])
        else:
            merged.append(document)
    return merged


_DECLARED = re.compile(r"^# - ([a-z][a-z0-9_]*)\s*$", re.MULTILINE)


@functools.lru_cache(maxsize=16)
def _programs(directory: str) -> dict[str, tuple[str, frozenset[str]]]:
    """lkp-tests' programs by name: ("monitor" for one with only monitor scripts, else
    "workload"; the parameters its run/setup/daemon scripts declare in `# - name` lines)."""
    found: dict[str, tuple[str, frozenset[str]]] = {}
    root = Path(directory) / "programs"
    if not root.is_dir():
        return found
    for program in root.iterdir():
        if not program.is_dir():
            continue
        names = {item.name for item in program.iterdir()}
        workload = sorted(names & {"run", "setup", "daemon"})
        declared: set[str] = set()
        for name in workload:
            try:
                head = (program / name).read_text(encoding="utf-8", errors="replace")[:8192]
            except OSError:
                continue
            declared.update(_DECLARED.findall(head))
        kind = "workload" if workload or not any("monitor" in name for name in names) else "monitor"
        found[program.name] = (kind, frozenset(declared))
    return found


@functools.lru_cache(maxsize=16)
def _benchmarks(directory: str) -> frozenset[str]:
    """lkp-tests' programs that run a benchmark (a `run` script)."""
    root = Path(directory) / "programs"
    return frozenset(item.parent.name for item in root.glob("*/run")) if root.is_dir() else frozenset()


def _one_host(job: dict[str, Any], directory: Path, notes: list[str]) -> dict[str, Any]:
    """A job's `if role R:` blocks merged in when its LKP cluster is this one host in every role
    (cs-localhost: server and client on one machine, as LKP's scheduler would place them);
    LkpJobRefused for a cluster of several hosts."""
    roles = {key[len("if role "):].strip(): value for key, value in job.items()
             if isinstance(key, str) and key.startswith("if role ")}
    if not roles:
        return job
    cluster = job.get("cluster")
    if not isinstance(cluster, str) or not _TESTCASE.match(cluster):
        raise LkpJobRefused("the job has LKP roles but names no cluster this planner reads")
    try:
        nodes = load_documents((directory / "cluster" / cluster).read_text(encoding="utf-8"))[0]
    except (OSError, YamlRefused, IndexError):
        raise LkpJobRefused(f"lkp-tests has no cluster {cluster} to place the job's roles") from None
    if not isinstance(nodes, dict) or len(nodes) != 1:
        raise LkpJobRefused(f"the job runs on the LKP cluster {cluster} of several hosts",
                            ("a one-host run of the job",))
    merged = {key: value for key, value in job.items() if key not in {f"if role {role}" for role in roles}}
    for block in roles.values():
        if isinstance(block, dict):
            merged.update(block)
    notes.append(f"the {cluster} cluster's roles ({', '.join(roles)}) all run on the host, as LKP runs them")
    return merged


def _relevant(document: dict[str, Any], programs: dict[str, tuple[str, frozenset[str]]]) -> dict[str, Any]:
    """What of a fetched job.yaml `lkp run` needs: the testcase's names, its workload programs
    (setup and benchmark, not monitors) and the parameters they declare; LKP's infrastructure
    keys (queue, kernel, boot parameters, result paths) are left out."""
    workloads = {key for key in document if programs.get(key, ("", frozenset()))[0] == "workload"}
    declared = set().union(*(programs[key][1] for key in workloads)) if workloads else set()
    return {key: value for key, value in document.items()
            if key in KEEP or key in workloads or key in declared or key in STORAGE_KEYS}


# --- narrowing ------------------------------------------------------------------------------------

def _host_key(key: str) -> bool:
    return key in HOST_KEYS or key.endswith(("_partitions", "_partition"))


def _checked(parameters: dict[str, Any], label: str) -> dict[str, str]:
    """The report's parameters, each key and value checked against the plain charsets."""
    checked: dict[str, str] = {}
    for key, value in parameters.items():
        if value is None or value == "":
            continue
        if not _KEY.match(key):
            raise LkpJobRefused(f"{label} name {key!r} is not a plain LKP parameter name")
        if not isinstance(value, str) or not _VALUE.match(value):
            raise LkpJobRefused(f"{label} {key}={value!r} holds characters an LKP value never has")
        checked[key] = value
    return checked


def _checked_job(document: dict[str, Any]) -> dict[str, Any]:
    """A fetched job.yaml's mapping, its keys and scalar values checked; lists are refused (an
    attached job is atomic)."""
    job: dict[str, Any] = {}
    for key, value in document.items():
        if not isinstance(key, str) or not re.match(r"^[a-z][a-z0-9_.-]{0,63}$", key):
            continue  # comment symbols (`:#! …`) and other non-parameters
        if _host_key(key):
            continue
        if isinstance(value, dict):
            job[key] = {inner: _job_value(f"{key}.{inner}", item) for inner, item in value.items()
                        if isinstance(inner, str) and _KEY.match(inner)}
        else:
            job[key] = _job_value(key, value)
    return job


def _job_value(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _VALUE.match(value):
        raise LkpJobRefused(f"job.yaml: {key} is not an atomic plain value ({str(value)[:60]!r})")
    return value


def _admits(value: Any, wanted: str) -> bool | None:
    """Whether a job's value admits the report's (None: the job has no such key)."""
    if isinstance(value, list):
        return wanted in [str(item) for item in value]
    if isinstance(value, str) and value.startswith("{{"):
        return True
    return None if value is None else str(value) == wanted


def _lookup(job: dict[str, Any], key: str) -> Any:
    if key in job and not isinstance(job[key], dict):
        return job[key]
    for value in job.values():
        if isinstance(value, dict) and key in value:
            return value[key]
    return None


def _score(job: dict[str, Any], parameters: dict[str, str]) -> int:
    score = 0
    for key, wanted in parameters.items():
        admitted = _admits(_lookup(job, key), wanted)
        score += {True: 2, False: -1, None: 0}[admitted]
    return score


def _best(variants: tuple[tuple[str, dict[str, Any]], ...], parameters: dict[str, str]) -> tuple[str, dict[str, Any]]:
    return max(variants, key=lambda item: _score(item[1], parameters))  # the first of the best


def _narrow(skeleton: dict[str, Any], parameters: dict[str, str], metric: str, notes: list[str]) -> dict[str, Any]:
    """The skeleton with every axis set to the report's value: the one atomic job."""
    job: dict[str, Any] = {key: (dict(value) if isinstance(value, dict) else value)
                           for key, value in skeleton.items() if key != "<<"}
    for key, wanted in parameters.items():
        if key in HOST_KEYS:
            continue
        if key in job and not isinstance(job[key], dict):
            job[key] = wanted
            continue
        holder = next((value for value in job.values() if isinstance(value, dict) and key in value), None)
        if holder is not None:
            holder[key] = wanted
        elif isinstance(job.get(key), dict):
            job[key][key] = wanted  # `fs: {fs: ext4, format: n}`
        else:
            job[key] = wanted  # a parameter the job file does not list: lkp exports it to every program
    if parameters:
        # LKP's report lists every parameter of the job it ran: a value lkp-tests' job file sets
        # today that the report does not list was not part of that job
        unlisted = [(holder, key, value) for holder, key, value in _values(job)
                    if isinstance(value, str) and key not in parameters and key not in KEEP
                    and not value.startswith("{{")]
        for holder, key, _value in unlisted:
            del holder[key]
        if unlisted:
            notes.append("the report lists no " + ", ".join(f"{key} (lkp-tests' job sets {value})"
                                                            for _, key, value in unlisted)
                         + ": left out, as the job the report ran had none")
    segments = set(re.split(r"[.]", metric))
    for holder, key, value in _values(job):
        if isinstance(value, list):
            chosen = next((str(item) for item in value if str(item) in segments), None)
            if chosen is None:
                # An LKP report lists every axis of the job it ran (its parameters, its compare
                # line): one it does not list was no axis of that job, which ran without it.
                del holder[key]
                if not any(item in (None, "") for item in value):
                    notes.append(f"the report lists no {key} (lkp-tests now runs it with "
                                 f"{', '.join(map(str, value[:4]))}{', …' if len(value) > 4 else ''}): "
                                 "the job runs without it, as the report's did")
                continue
            holder[key] = chosen
            notes.append(f"{key}={chosen} read from the headline metric {metric}")
        elif isinstance(value, str) and value.startswith("{{"):
            raise LkpJobRefused(f"lkp-tests computes LKP parameter {key} from an expression and the "
                                "report gives no value for it", (f"the report's {key}",))
        elif isinstance(value, dict):
            raise LkpJobRefused(f"LKP parameter {key} nests deeper than a job file this planner writes")
    return job


def _values(job: dict[str, Any]) -> list[tuple[dict[str, Any], str, Any]]:
    found: list[tuple[dict[str, Any], str, Any]] = []
    for key, value in job.items():
        if isinstance(value, dict):
            found.extend((value, inner, item) for inner, item in value.items())
        else:
            found.append((job, key, value))
    return found


# --- the host's parts -----------------------------------------------------------------------------

def _storage(job: dict[str, Any], devices: tuple[str, ...], memory_gb: int) -> tuple[list[str], str | None]:
    """Set the job's storage from the host: its scratch devices as LKP partitions, or the run's
    scratch directory as LKP's mount point. (what differs from the report, what the job runs on)"""
    disk = job.get("disk")
    if disk is None:
        return [], None
    match = _DISK.match(str(disk))
    count, kind, size = (int(match.group(1)), match.group(2), match.group(3)) if match else (0, "", None)
    if kind in ("HDD", "SSD") and 0 < count <= len(devices):
        chosen = devices[:count]
        job[f"{kind.lower()}_partitions"] = " ".join(chosen)
        return [], f"lkp's {disk} on the host's scratch device(s) {', '.join(chosen)}"
    if kind == "BRD" and size is not None and count * int(size) * 2 <= memory_gb:
        return [], f"lkp's {disk} (a RAM disk lkp makes)"
    storage = {key: job.pop(key) for key in STORAGE_KEYS if key in job}
    job["mount_points"] = SCRATCH
    shown = " ".join(f"{key}={value}" for key, value in storage.items() if isinstance(value, str))
    why = ("the host lists no scratch device for it" if kind in ("HDD", "SSD", "")
           else f"the host cannot give {disk}")
    differs = f"the report ran on {shown}; {why}, so the job runs on the run's scratch directory"
    return [differs], "the run's scratch directory"


def _duration(key: str, value: str) -> float | None:
    try:
        return parse_duration(value)
    except ValueOutOfRange as error:
        raise LkpJobRefused(f"LKP parameter {key}={error}") from None


def _fit_sizes(job: dict[str, Any], scratch_gb: int, scaled: list[str]) -> None:
    budget = int(scratch_gb * (1 << 30) * SCRATCH_FRACTION)
    for holder, key, value in _values(job):
        if key not in SCRATCH_SIZES or not isinstance(value, str):
            continue
        try:
            size = parse_size(value)
        except ValueOutOfRange as error:
            raise LkpJobRefused(f"LKP parameter {key}={error}") from None
        if size is not None and size > budget:
            new = f"{max(1, budget >> 20)}M"
            holder[key] = new
            scaled.append(f"{key} {value} → {new} (half of the host's {scratch_gb} GB scratch space)")


def _better(change: float | None, direction: str | None) -> str:
    """Which way is better for the headline metric: a regression moves it the worse way."""
    if change is None or direction not in ("regression", "improvement"):
        return "higher"
    worse_when_lower = (change < 0) == (direction == "regression")
    return "higher" if worse_when_lower else "lower"
