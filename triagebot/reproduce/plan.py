"""Reproduce stage: a stored report becomes a validated plan from a template, or a refusal.

Pure: a Report, the loaded templates and the shape of the host in, a Plan or a Refusal out.
Where a plan comes from, in order of preference:
- an LKP report's attached job.yaml (`source="job.yaml"`), else its testcase and parameters
  (`source="lkp-testcase"`), mapped onto the template that lists the testcase under [lkp];
- a human command line among the report's reproducers (`source="human-command"`), read option
  by option against the template's allowlist (triagebot.reproduce.commandline).
Sizes, thread counts and durations are fitted to the host and every change is said in `scaled`;
paths are moved into the host's scratch dir. The argv keeps `{scratch}` for the runner to fill
unless a scratch dir is given.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace
from typing import Any

from triagebot.records.report import PARAMETER_DEFECT, Report
from triagebot.reproduce.commandline import CommandRefused, parse_command
from triagebot.reproduce.filesystem import place, storage_wanted
from triagebot.reproduce.lkp_job import (
    STATS_PATH,
    LkpJobRefused,
    build_job,
    flat_values,
    has_job_files,
    lkp_tests_dir,
)
from triagebot.reproduce.yaml_text import YamlRefused, load_documents
from triagebot.rules.hosts import default_process_budget
from triagebot.rules.templates import (
    SCRATCH,
    MetricSpec,
    ParamSpec,
    Template,
    Templates,
    ValueOutOfRange,
    format_duration,
    format_size,
    parse_duration,
    parse_size,
    placeholders,
    shortened,
)
from triagebot.untrusted.argv import OptionLike, substituted

PLAN_SCHEMA = 1
# Reproducer kinds whose command a template may run.
COMMAND_KINDS = ("fio", "sysbench", "fs_mark", "stress-ng", "hackbench", "perf-bench")
# LKP parameters that tune the test machine rather than the benchmark: never mapped, said in notes.
MACHINE_SETTINGS = ("cpufreq_governor", "ucode", "kconfig", "compiler", "rootfs", "bp_memmap")
_GIB = 1 << 30
_INT = re.compile(r"^\d{1,12}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_LEADING_VARIABLE = re.compile(r"^\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)(/|$)")
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%$")
_THREAD_COUNT = re.compile(r"^\d{1,6}t$")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class HostShape:
    """What the planner needs to know of the host: the defaults are a small lab VM."""

    threads: int = 2
    memory_gb: int = 24
    scratch_gb: int = 20
    processes: int | None = None  # processes + threads a plan may start; None: 64 a thread, at least 256
    tools: tuple[tuple[str, str], ...] = ()  # lab-installed tools by name and path (hosts.toml `tools`)
    scratch_devices: tuple[str, ...] = ()  # block devices a plan may make a filesystem on
    kernel_filesystems: tuple[str, ...] | None = None  # what the host's kernel mounts; None: unknown
    stressors: tuple[str, ...] | None = None  # what the host's stress-ng offers; None: unknown

    def host_choices(self, name: str) -> tuple[str, ...] | None:
        """A list of names the host offers, for an enum that takes its choices from the host."""
        return {"stressors": self.stressors}.get(name)

    def tool(self, name: str) -> str | None:
        return dict(self.tools).get(name)

    @property
    def process_budget(self) -> int:
        return self.processes or default_process_budget(self.threads)


@dataclass(frozen=True)
class Plan:
    template: str
    argv: tuple[str, ...]           # the measured command; "{scratch}" left for the runner
    metric: str                     # a metric the template's parser yields
    better: str                     # higher / lower
    parser: str
    timeout_seconds: int
    source: str                     # human-command / lkp-testcase / job.yaml
    message_id: str | None
    report_metric: str | None = None            # the report's name for the metric (fio.write_iops)
    reported_change_percent: float | None = None  # signed, as the report states it
    scaled: tuple[str, ...] = ()    # what was fitted to the host, and why
    notes: tuple[str, ...] = ()     # other differences from the report: dropped options, paths
    setup_argv: tuple[str, ...] = ()    # run once before the samples (sysbench fileio prepare)
    cleanup_argv: tuple[str, ...] = ()  # run once after them
    parameters: tuple[tuple[str, str], ...] = ()  # the template parameters as planned
    output_metric: str = ""         # the metric's name in parse_output's result (fio.write_iops)
    collect: tuple[str, ...] = ()   # files the runner keeps for the parser ("{scratch}/…")
    # The report's filesystem made again (triagebot.reproduce.filesystem): host steps before each
    # sample (mkfs, mount on "{scratch}") and after it, always (umount); what the benchmark runs
    # on; each way the storage differs from the report's.
    prepare_steps: tuple[tuple[str, ...], ...] = ()
    release_steps: tuple[tuple[str, ...], ...] = ()
    runs_on: str | None = None
    storage_differs: tuple[str, ...] = ()
    # Files the runner writes into each sample's scratch dir before it runs: (path, text), where
    # "{scratch}" in either is the sample's scratch dir (postmark's command file, the lkp
    # template's job file), written from parsed values, never copied from a mail.
    files: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"schema": PLAN_SCHEMA, "kind": "plan"}
        for item in fields(self):
            value = getattr(self, item.name)
            data[item.name] = dict(value) if item.name == "parameters" else (
                list(value) if isinstance(value, tuple) else value)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        if data.get("schema") != PLAN_SCHEMA or data.get("kind") != "plan":
            raise ValueError(f"not a schema-{PLAN_SCHEMA} plan: {data.get('schema')!r} {data.get('kind')!r}")
        values: dict[str, Any] = {}
        for item in fields(cls):
            if item.name not in data:
                continue
            value = data[item.name]
            if item.name == "parameters":
                value = tuple(value.items())
            elif item.name in ("prepare_steps", "release_steps", "files"):
                value = tuple(tuple(step) for step in value)
            elif isinstance(value, list):
                value = tuple(value)
            values[item.name] = value
        return cls(**values)


@dataclass(frozen=True)
class Refusal:
    reason: str                     # one sentence: what is refused or missing
    missing: tuple[str, ...] = ()   # what would make a plan possible
    source: str | None = None
    message_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"schema": PLAN_SCHEMA, "kind": "refusal", "reason": self.reason,
                "missing": list(self.missing), "source": self.source, "message_id": self.message_id}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Refusal:
        if data.get("schema") != PLAN_SCHEMA or data.get("kind") != "refusal":
            raise ValueError("not a refusal")
        return cls(data["reason"], tuple(data.get("missing", [])), data.get("source"), data.get("message_id"))


PlanResult = Plan | Refusal


def plan_from_json(data: dict[str, Any]) -> PlanResult:
    return Plan.from_json(data) if data.get("kind") == "plan" else Refusal.from_json(data)


# --- entry points -------------------------------------------------------------------------------

def plan_report(report: Report, templates: Templates, scratch_dir: str = SCRATCH,
                host: HostShape | None = None) -> PlanResult:
    """The plan for one report, or the refusal saying what is missing."""
    host = host or HostShape()
    templates = templates.for_host(host.host_choices)
    message_id = report.message_id
    unread = [defect.removeprefix(PARAMETER_DEFECT) for defect in report.defects if defect.startswith(PARAMETER_DEFECT)]
    if unread:
        # a block read in part plans another benchmark than the one measured (fio without its
        # `rw: write` reads): refused whole, the first line that does not read named
        more = f" (and {len(unread) - 1} more line(s))" if len(unread) > 1 else ""
        return Refusal(f"the LKP parameter block does not read whole: {unread[0]}{more}",
                       ("a parameter block of plain `key: value` lines, each key once",), "lkp-testcase", message_id)
    lkp_refusal: Refusal | None = None
    if report.kind.startswith("lkp-") or (report.testcase and report.parameters):
        result = _plan_lkp(report, templates, scratch_dir, host)
        if isinstance(result, Plan) or not _commands(report):
            return result
        lkp_refusal = result
    commands = _commands(report)
    if not commands:
        if report.testcase:
            return Refusal(f"the report names {report.testcase} but carries no command line a template runs",
                           (f"a {report.testcase} command line",), "human-command", message_id)
        return Refusal("the report names no testcase and carries no command line",
                       ("a testcase or a benchmark command line",), None, message_id)
    first: Refusal | None = None
    for command in commands:
        result = plan_command(command, templates, scratch_dir, host, report=report)
        if isinstance(result, Plan):
            return _from_script(result, report, command, lkp_refusal)
        first = first or result
    assert first is not None
    if len(commands) > 1:
        return Refusal(f"{first.reason} (and {len(commands) - 1} more command line(s) refused)",
                       first.missing, "human-command", message_id)
    return first


def plan_command(command: str, templates: Templates, scratch_dir: str = SCRATCH,
                 host: HostShape | None = None, report: Report | None = None) -> PlanResult:
    """The plan for one pasted command line (`triage plan --command`), or its refusal."""
    host = host or HostShape()
    templates = templates.for_host(host.host_choices)
    message_id = report.message_id if report else None
    try:
        parsed = parse_command(command, templates)
        template = parsed.template
        if template.tool and host.tool(template.tool) is None:
            return _no_tool(template, "human-command", message_id)
        notes = list(parsed.notes)
        scaled: list[str] = []
        raw: dict[str, tuple[str | None, str]] = {}
        for option in parsed.options:
            for name, value in option.sets:
                raw[name] = (value, f"{template.program} option {option.option}")
            raw[option.param] = (option.value, f"{template.program} option {option.option}")
        values = {name: _convert(template.param(name), value, label, scratch_dir, notes)
                  for name, (value, label) in raw.items()}
        order = [option.param for option in parsed.options]
        return _finish(template, values, order, {name: label for name, (_, label) in raw.items()},
                       "human-command", report, message_id, scratch_dir, host, scaled, notes)
    except CommandRefused as refused:
        return Refusal(refused.reason, refused.missing, "human-command", message_id)


def _from_script(plan: Plan, report: Report, command: str, lkp_refusal: Refusal | None) -> Plan:
    """A plan from an LKP `reproduce` script's benchmark line says so, and why the report's
    parameters gave none."""
    script = next((item.url for item in report.reproducers if item.command == command and item.url
                   and item.url.endswith("/reproduce")), None)
    if script is None:
        return plan
    why = f" (its LKP parameters gave none: {lkp_refusal.reason})" if lkp_refusal else ""
    return replace(plan, source="reproduce-script",
                   notes=(f"planned from the benchmark line of {script}{why}", *plan.notes))


def _no_tool(template: Template, source: str, message_id: str | None) -> Refusal:
    """A template of a benchmark the lab installs itself, on a host that does not list it."""
    return Refusal(f"the {template.name} template needs {template.tool}, which this host does not list "
                   f"under tools in hosts.toml", (f"a host with {template.tool} installed "
                   f'(tools = {{ "{template.tool}" = "/path" }})',), source, message_id)


def _commands(report: Report) -> list[str]:
    """The report's runnable command lines: the writer's own first, then quoted ones."""
    found = [item for item in report.reproducers if item.kind in COMMAND_KINDS and item.command]
    found.sort(key=lambda item: item.quoted)
    return [item.command for item in found if item.command]


# --- LKP ----------------------------------------------------------------------------------------

def _plan_lkp(report: Report, templates: Templates, scratch_dir: str, host: HostShape) -> PlanResult:
    message_id = report.message_id
    job = next((item for item in report.reproducers if item.kind == "lkp-job" and item.content), None)
    source, testcase, parameters = "lkp-testcase", report.testcase, dict(report.parameters)
    document: dict[str, Any] = {}
    if job is not None and job.content:
        try:
            document = read_job(job.content)
        except JobError as error:
            return Refusal(str(error), ("a job.yaml this planner reads",), "job.yaml", message_id)
        if document.get("testcase"):
            source = "job.yaml"
            testcase = str(document["testcase"])
            parameters = flatten_job(document)
    if not testcase:
        return Refusal("the LKP report names no testcase", ("the testcase",), source, message_id)
    by_lkp = plan_lkp_job(report, templates, scratch_dir, host, document if source == "job.yaml" else None)
    if by_lkp is not None:
        return by_lkp
    template = templates.for_testcase(testcase)
    if template is None:
        return Refusal(f"testcase {testcase} has no template", (f"a template for testcase {testcase}",),
                       source, message_id)
    if template.tool and host.tool(template.tool) is None:
        return _no_tool(template, source, message_id)
    notes: list[str] = []
    scaled: list[str] = []
    for item in template.lkp_from_headline:
        found = item.value_in(report.headline.metric) if report.headline and not parameters.get(item.key) else None
        if found is not None:
            parameters = {**parameters, item.key: found}
            notes.append(f"the report's parameters name no {item.key}; its headline metric {report.headline.metric} "
                         f"names {item.key}={found}: {item.note}")
    mapped = {item.key for item in template.lkp_params}
    environment = [f"{key}={parameters[key]}" for key in template.lkp_environment if key in parameters]
    for key in ("mount_option", "md"):
        if key in parameters and key not in template.lkp_environment:
            environment.append(f"{key}={parameters[key]}")
    # lkp-tests makes the job's filesystem itself (its setup/fs, on the host's partitions)
    storage = storage_wanted(parameters.items()) if template.program != "lkp" else None
    placement = place(storage, host.scratch_devices, [name for name, _ in host.tools], host.kernel_filesystems)
    if environment and storage is None:
        notes.append(f"the report ran on {' '.join(environment)}; the plan runs on the host's scratch filesystem")
    notes.extend(f"LKP parameter {key}={parameters[key]}: {note}" for key, note in template.lkp_notes
                 if parameters.get(key))
    settings = [f"{key}={parameters[key]}" for key in MACHINE_SETTINGS if key in parameters]
    if settings:
        notes.append(f"machine settings not applied by the plan: {' '.join(settings)}")
    if source == "lkp-testcase":
        skipped = set(template.lkp_environment) | set(MACHINE_SETTINGS) | {"mount_option", "md"}
        for key, value in parameters.items():
            if key not in mapped and key not in skipped:
                notes.append(f"LKP parameter {key}={value} has no counterpart in the {template.name} "
                             f"template: left out")
    try:
        values: dict[str, Any] = {}
        labels: dict[str, str] = {}
        divided = []
        shares: dict[str, float] = {}  # parameters given as a share of the machine's threads
        for name, raw_value in template.lkp_always:
            labels[name] = f"the {template.name} template's [lkp.always] {name}"
            values[name] = _convert(template.param(name), raw_value, labels[name], scratch_dir, notes)
        for item in template.lkp_params:
            if item.key not in parameters or parameters[item.key] in (None, ""):
                continue
            raw = str(parameters[item.key])
            label = f"LKP parameter {item.key}"
            labels[item.param] = label
            if item.divide_by:
                divided.append((item, raw, label))
                continue
            raw = dict(item.mapping).get(raw, raw)
            if item.strip_suffix and raw.endswith(item.strip_suffix):
                raw = raw[: -len(item.strip_suffix)]
            spec = template.param(item.param)
            percent = _PERCENT.match(raw)
            if item.kind == "threads" and _THREAD_COUNT.match(raw):
                raw = raw[:-1]          # LKP writes a count of threads as `1t`, `32t`, `8t`
            if item.kind == "threads" and percent:
                share = float(percent.group(1))
                shares[spec.name] = share
                count = max(1, math.floor(share / 100 * host.threads + 0.5))
                scaled.append(f"{spec.name} {count} from {item.key} {raw} ({raw} of the host's {host.threads} threads)")
                values[spec.name] = count
                continue
            values[spec.name] = _convert(spec, raw, label, scratch_dir, notes)
        _from_headline(template, values, labels, report, scratch_dir, notes)
        # Totals divided by other parameters: those are fitted to the host first.
        _defaults(template, values)
        # what the report's machine ran: a share of its threads, within the template's maximum
        # (LKP's fsmark caps nr_threads at fs_mark's 64 too)
        reported = dict(values)
        machine_threads = report.test_machine.threads if report.test_machine else None
        for name, share in shares.items():
            if machine_threads:
                count = max(1, math.floor(share / 100 * machine_threads + 0.5))
                top = template.param(name).maximum
                reported[name] = min(count, int(top)) if top is not None else count
        _scale(template, values, host, scaled, only=("threads", "cap"))
        for item, raw, label in divided:
            spec = template.param(item.param)
            total = _size(raw, label)
            if total is None:
                raise CommandRefused(f"{label}={raw} is not a size")
            floors = dict(item.divide_floor)
            by = reported if item.as_reported else values
            divisor = math.prod(max(floors.get(name, 1), _magnitude(template.param(name), by.get(name)))
                                for name in item.divide_by)
            share = total // max(1, divisor)
            if spec.type == "size" and share >= 1 << 20:
                share -= share % (1 << 20)
            if share < 1:
                raise CommandRefused(f"{label}={raw} leaves nothing for each of {', '.join(item.divide_by)}")
            at_least = "".join(f" ({name} counted as {_render(template.param(name), low)}, as LKP does)"
                               for name, low in item.divide_floor
                               if _magnitude(template.param(name), by.get(name)) < low)
            factors = [_render(template.param(name), by[name]) for name in item.divide_by if by.get(name) is not None]
            shown = f" (the report's {' × '.join(factors)})" if item.as_reported else ""
            notes.append(f"{spec.name} {_render(spec, share)} is {item.key} {raw} divided by "
                         f"{' × '.join(item.divide_by)}{shown}{at_least}")
            if item.most is not None and share > item.most:
                notes.append(f"{spec.name} {_render(spec, share)} → {item.most}, the most LKP's {testcase} "
                             f"runs with (its own cap)")
                share = item.most
            values[spec.name] = share
        for derive in template.lkp_derive:
            if derive.param not in values and values.get(derive.by) and values.get(derive.divide):
                values[derive.param] = max(1, int(values[derive.divide]) // int(values[derive.by]))
                notes.append(f"{derive.param} {values[derive.param]} is {derive.divide} divided by {derive.by}, "
                             f"as LKP's {testcase} computes it when the report gives only {derive.by}")
        plan = _finish(template, values, None, labels, source, report, message_id, scratch_dir, host,
                       scaled, notes)
        if storage is None:
            return plan
        def steps(items: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
            return tuple(tuple(word.replace(SCRATCH, scratch_dir) for word in step) for step in items)
        return replace(plan, prepare_steps=steps(placement.prepare), release_steps=steps(placement.release),
                       runs_on=placement.runs_on, storage_differs=placement.differs)
    except CommandRefused as refused:
        return Refusal(refused.reason, refused.missing, source, message_id)


def plan_lkp_job(report: Report, templates: Templates, scratch_dir: str, host: HostShape,
                 document: dict[str, Any] | None) -> PlanResult | None:
    """The lkp template's plan (triagebot.reproduce.lkp_job) on a host with lkp-tests, its refusal,
    or None when this is no case for it (no lkp-tests, no lkp template, no job for the testcase)."""
    directory = lkp_tests_dir(host.tools)
    template = next((item for item in templates.templates if item.lkp_metrics), None)
    if directory is None or template is None or not (report.kind.startswith("lkp-") or document is not None):
        return None  # a person's report names its metric by unit, not as LKP's stats.json does
    if document is None and not has_job_files(directory, report.testcase or ""):
        return None  # not a testcase of this lkp-tests: a native template may run it
    source = "job.yaml" if document is not None else "lkp-tests"
    try:
        job = build_job(report, directory, document, memory_gb=host.memory_gb, scratch_gb=host.scratch_gb,
                        scratch_devices=host.scratch_devices, timeout_seconds=template.timeout_seconds)
    except LkpJobRefused as refused:
        return Refusal(refused.reason, refused.missing, source, report.message_id)
    job_path = str(template.param("job").default or SCRATCH + "/job.yaml")

    def words(template_argv: tuple[str, ...]) -> tuple[str, ...]:
        # lkp's own parser is not ours to know: the job file may not be read as its option
        filled = substituted(template_argv, {"{job}": job_path}, "the LKP job file")
        return tuple((job.lkp if word == "lkp" else word).replace(SCRATCH, scratch_dir) for word in filled)
    try:
        argv, cleanup_argv = words(template.argv), words(template.cleanup_argv)
    except OptionLike as refused:
        return Refusal(str(refused), (), source, report.message_id)
    return Plan(
        template=template.name, argv=argv, cleanup_argv=cleanup_argv,
        metric=job.metric, better=job.better, parser=template.parser, timeout_seconds=job.timeout_seconds,
        source=job.source, message_id=report.message_id, report_metric=job.metric,
        reported_change_percent=job.change_percent, scaled=job.scaled, notes=job.notes,
        parameters=flat_values(job.job), output_metric=job.metric,
        collect=tuple(item.replace(SCRATCH, scratch_dir) for item in (template.collect or (STATS_PATH,))),
        runs_on=job.runs_on, storage_differs=job.storage_differs,
        files=((job_path.replace(SCRATCH, scratch_dir), job.text.replace(SCRATCH, scratch_dir)),),
    )


def _from_headline(template: Template, values: dict[str, Any], labels: dict[str, str], report: Report,
                   scratch_dir: str, notes: list[str]) -> None:
    """Parameters the report names only in its headline metric's name: fxmark's core count in
    `fxmark.hdd_btrfs_MWCL_9_bufferedio.works/sec`, read where a metric's LKP name holds
    `{ncore}`. Each value is checked against its parameter like any other."""
    if report.headline is None:
        return
    name = report.headline.metric
    for spec in template.metrics:
        for pattern in spec.lkp:
            wanted = [other for other in placeholders(pattern) if other not in values]
            if not wanted:
                continue
            regex = ""
            for literal, other in re.findall(r"([^{]*)(?:\{([A-Za-z_][A-Za-z0-9_]*)\})?", pattern):
                regex += ".*".join(re.escape(part) for part in literal.split("*"))
                if other:
                    regex += re.escape(str(values[other])) if other in values else f"(?P<{other}>[A-Za-z0-9-]+)"
            found = re.fullmatch(regex, name)
            if found is None:
                continue
            for other in wanted:
                label = f"the headline metric {name}"
                values[other] = _convert(template.param(other), found.group(other), label, scratch_dir, notes)
                labels[other] = label
                notes.append(f"{other} {found.group(other)} is read from {label}")
            return


# --- shared: values, scaling, argv, metric ------------------------------------------------------

def _convert(spec: ParamSpec, raw: str | None, label: str, scratch_dir: str, notes: list[str]) -> Any:
    """One raw value in the parameter's type; raises CommandRefused naming the option."""
    shown = label if raw is None else f"{label}={shortened(raw)}"
    if spec.type == "bool":
        if raw is None or raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise CommandRefused(f"{shown}: a flag takes no value but 0 or 1")
    if raw is None:
        raise CommandRefused(f"{label} needs a value", (f"a value for {label}",))
    if "$" in raw and spec.type != "path":
        raise CommandRefused(f"{shown} holds a shell variable the report gives no value for: refused",
                             (f"the value of {raw}",))
    if spec.type == "int":
        if not _INT.match(raw):
            raise CommandRefused(f"{shown} is not a whole number")
        return int(raw)
    if spec.type == "enum":
        if raw not in spec.choices and spec.from_host:
            raise CommandRefused(f"{shown}: the host's {spec.host_choices} ({len(spec.choices)} of them, as its "
                                 f"own tool lists them) have no {raw}",
                                 (f"a host whose {spec.host_choices} include {raw}",))
        if raw not in spec.choices:
            raise CommandRefused(f"{shown} is not one of the choices ({', '.join(spec.choices[:12])}"
                                 f"{', …' if len(spec.choices) > 12 else ''})")
        return raw
    if spec.type == "size":
        size = _size(raw, label)
        if size is None:
            raise CommandRefused(f"{shown} is not a size")
        return size
    if spec.type == "duration":
        try:
            seconds = parse_duration(raw)
        except ValueOutOfRange as error:
            raise CommandRefused(f"{label}={error}") from None
        if seconds is None:
            raise CommandRefused(f"{shown} is not a duration")
        return seconds
    if spec.type == "name":
        if not _NAME.match(raw):
            raise CommandRefused(f"{shown} is not a plain name (letters, digits, . _ : + -)")
        if raw in spec.reserved:
            raise CommandRefused(f"{shown} is reserved: it defines no job of its own, so the command "
                                 f"runs nothing as written", (f"a job name other than {raw}",))
        return raw
    return _scratch_path(spec, raw, label, scratch_dir, notes)


def _size(raw: str, label: str) -> int | None:
    """parse_size, its ValueOutOfRange a refusal naming the option."""
    try:
        return parse_size(raw)
    except ValueOutOfRange as error:
        raise CommandRefused(f"{label}={error}") from None


def _scratch_path(spec: ParamSpec, raw: str, label: str, scratch_dir: str, notes: list[str]) -> str:
    """A path from a pasted command moved into the host's scratch dir, or refused."""
    if raw.startswith("/dev/") or raw == "/dev":
        raise CommandRefused(f"{label}={raw} is a raw device, not the host's scratch space: refused",
                             ("a file or directory on the host's scratch space",))
    rest = raw
    variable = _LEADING_VARIABLE.match(rest)
    if variable:
        # `${MNT}/file`: the writer's own mount point, which on the host is the scratch dir.
        rest = rest[variable.end():]
    if "$" in rest or "{" in rest or "}" in rest:
        raise CommandRefused(f"{label}={raw} holds a shell variable the report gives no value for: refused",
                             (f"the value of {raw}",))
    if spec.kind == "dir":
        target = scratch_dir
    else:
        name = rest.rstrip("/").rsplit("/", 1)[-1]
        if not _FILE_NAME.match(name):
            raise CommandRefused(f"{label}={raw} does not end in a plain file name")
        target = f"{scratch_dir}/{name}"
    notes.append(f"{label}: {raw} → {target} (the host's scratch dir)")
    return target


def _relative(path: str, scratch_dir: str) -> str:
    """A path inside the scratch dir written relative to it (the command runs there): `fs`, `.`."""
    for root in (SCRATCH, scratch_dir):
        if path == root:
            return "."
        if path.startswith(root + "/"):
            return path[len(root) + 1:]
    return path


def _defaults(template: Template, values: dict[str, Any]) -> None:
    for spec in template.params:
        if spec.name not in values and spec.default is not None:
            values[spec.name] = spec.default


def _magnitude(spec: ParamSpec, value: Any) -> int:
    """A value as a multiplier of a footprint: a count, or bytes; unset, the program's own default."""
    if value is None:
        value = spec.assume
    if value is None or isinstance(value, bool):
        return 1
    return max(1, int(value))


def _fit_tasks(template: Template, values: dict[str, Any], host: HostShape, scaled: list[str]) -> None:
    """Counts that start processes or threads (`tasks` in the template) fitted to the host's
    process budget, each with the counts it multiplies with (`tasks_times`)."""
    budget = host.process_budget
    for spec in template.params:
        if not spec.tasks:
            continue
        value = values.get(spec.name, spec.assume)
        if value is None or isinstance(value, bool):
            continue
        each = spec.tasks * math.prod(_magnitude(template.param(name), values.get(name))
                                      for name in spec.tasks_times)
        if value * each <= budget:
            continue
        new = budget // each
        lowest = max(1, int(spec.minimum or 1))
        shown = " × ".join([spec.name, *spec.tasks_times] + ([str(spec.tasks)] if spec.tasks > 1 else []))
        if new < lowest:
            raise CommandRefused(f"{spec.name}: {shown} would start {value * each} processes and even "
                                 f"{lowest} would start {lowest * each}; the host's budget is {budget}",
                                 ("a host with a larger process budget (max_processes)",))
        scaled.append(f"{spec.name} {_render(spec, value)} → {_render(spec, new)} ({shown} would start "
                      f"{value * each} processes or threads; the host's budget is {budget})")
        values[spec.name] = new


def _scale(template: Template, values: dict[str, Any], host: HostShape, scaled: list[str],
           only: tuple[str, ...] = ("threads", "cap", "scratch", "memory")) -> None:
    """Fit values to the host (in place), saying what changed and why."""
    for spec in template.params:
        value = values.get(spec.name)
        if value is None or spec.scale not in only or isinstance(value, bool):
            continue
        new = value
        why = ""
        if spec.scale == "threads":
            ceiling = host.threads * spec.per_thread
            if value > ceiling:
                new = ceiling
                each = f", {spec.per_thread} per thread" if spec.per_thread > 1 else ""
                why = f"the host has {host.threads} threads{each}"
        elif spec.scale == "cap":
            if spec.cap is not None and value > spec.cap:
                new = spec.cap
                why = "the lab's limit for one sample; the runner repeats samples"
        else:
            room = host.scratch_gb if spec.scale == "scratch" else host.memory_gb
            fraction = template.scratch_fraction if spec.scale == "scratch" else template.memory_fraction
            budget = int(room * _GIB * fraction)
            multiplier = math.prod(_magnitude(template.param(name), values.get(name)) for name in spec.times)
            if value * multiplier > budget:
                new = budget // multiplier
                if spec.type == "size" and new >= 1 << 20:
                    new -= new % (1 << 20)
                if new < 1:
                    raise CommandRefused(f"{spec.name} cannot fit the host's {spec.scale} "
                                         f"({format_size(budget)} for {multiplier} of them)")
                place = "scratch space" if spec.scale == "scratch" else "memory"
                per = f" × {' × '.join(spec.times)}" if spec.times else ""
                why = (f"{spec.name}{per} would need {format_size(value * multiplier)}; the plan may use "
                       f"{format_size(budget)} of the host's {room} GB {place}")
        if spec.maximum is not None and new > spec.maximum and (why or spec.scale in ("threads", "cap")):
            # fitted to the host and still too large: the template's maximum (a value that
            # fits the host but is beyond the maximum is refused by _check, as if unscaled)
            new = spec.maximum
            why = why or f"the template's maximum for {spec.name}"
        if new != value:
            scaled.append(f"{spec.name} {_render(spec, value)} → {_render(spec, new)} ({why})")
            values[spec.name] = int(new) if spec.type in ("int", "size") else new


def _check(template: Template, values: dict[str, Any], labels: dict[str, str]) -> None:
    for spec in template.params:
        value = values.get(spec.name)
        if value is None or isinstance(value, bool):
            continue
        label = labels.get(spec.name, spec.name)
        if spec.minimum is not None and value < spec.minimum:
            raise CommandRefused(f"{label}: {_render(spec, value)} is below the template's minimum "
                                 f"{_render(spec, spec.minimum)}")
        if spec.maximum is not None and value > spec.maximum:
            raise CommandRefused(f"{label}: {_render(spec, value)} is above the template's maximum "
                                 f"{_render(spec, spec.maximum)}")


def _render(spec: ParamSpec, value: Any) -> str:
    if spec.type == "size":
        return format_size(int(value), spec.format or "suffix")
    if spec.type == "duration":
        return format_duration(float(value), spec.format or "seconds")
    if spec.type == "bool":
        return "1" if value else "0"
    return str(int(value)) if spec.type == "int" else str(value)


def _option_words(template: Template, values: dict[str, Any], order: list[str],
                  per_unit: dict[str, str] | None = None) -> list[str]:
    words: list[str] = []
    for name in order:
        spec = template.param(name)
        value = values.get(name)
        if spec.flag is None or value is None or value is False:
            continue
        if per_unit and name in per_unit:
            # one path a unit, as LKP gives them: `-d fs-1 -d fs-2` (fs_mark makes no parents)
            for unit in range(1, max(1, int(values.get(per_unit[name]) or 1)) + 1):
                words.extend([spec.flag, f"{value}-{unit}"] if template.value_style == "separate"
                             else [f"{spec.flag}={value}-{unit}"])
            continue
        flag = spec.flag
        for other in placeholders(flag):
            flag = flag.replace("{" + other + "}", str(values.get(other, "")))
        if spec.type == "bool":
            words.append(flag)
        elif template.value_style == "equals":
            words.append(f"{flag}={_render(spec, value)}")
        else:
            words.extend([flag, _render(spec, value)])
    return words


def _expand(argv: tuple[str, ...], options: list[str], rendered: dict[str, str], scratch_dir: str) -> tuple[str, ...]:
    out: list[str] = []
    for word in argv:
        if word == "{options}":
            out.extend(options)
            continue
        names = placeholders(word)
        if any(name not in ("scratch", "options") and name not in rendered for name in names):
            continue                # an element for a parameter the plan leaves unset
        for name in names:
            word = word.replace("{" + name + "}", scratch_dir if name == "scratch" else rendered[name])
        out.append(word)
    return tuple(out)


def _finish(template: Template, values: dict[str, Any], order: list[str] | None, labels: dict[str, str],
            source: str, report: Report | None, message_id: str | None, scratch_dir: str, host: HostShape,
            scaled: list[str], notes: list[str]) -> Plan:
    _defaults(template, values)
    for spec in template.params:
        for other in placeholders(spec.flag or ""):
            if other not in values:
                example = (spec.flag or "").replace("{" + other + "}", template.param(other).choices[0])
                raise CommandRefused(f"the {template.name} command names no {other} (such as {example} N)",
                                     (f"a {other} for {template.name}",))
    # Counts and durations first: a footprint is reckoned with the thread counts the host gets.
    _scale(template, values, host, scaled, only=("threads", "cap"))
    _fit_tasks(template, values, host, scaled)
    _scale(template, values, host, scaled, only=("scratch", "memory"))
    _check(template, values, labels)
    for spec in template.params:
        if spec.type == "path" and isinstance(values.get(spec.name), str):
            values[spec.name] = _relative(values[spec.name], scratch_dir) if spec.relative else \
                values[spec.name].replace(SCRATCH, scratch_dir)
    given = list(order) if order is not None else []
    ordered = given + [spec.name for spec in template.params if spec.name not in given]
    per_unit = dict(template.lkp_per_unit) if source != "human-command" else None
    options = _option_words(template, values, ordered, per_unit)
    rendered = {name: _render(template.param(name), value) for name, value in values.items()}
    # "{tool}": where the host keeps the lab-installed benchmark (checked by the callers)
    where = {**rendered, "tool": host.tool(template.tool) or ""} if template.tool else rendered
    argv = _expand(template.argv, options, where, scratch_dir)
    notes.extend(template.caveats)
    metric, report_metric, change, better = _metric(template, rendered, report, notes)
    durations = [values[spec.name] for spec in template.params
                 if spec.type == "duration" and values.get(spec.name) is not None]
    timeout = template.timeout_seconds
    if durations:
        timeout = min(timeout, int(sum(durations) * 2) + 300)
    return Plan(
        template=template.name, argv=argv, metric=metric.name, better=better, parser=template.parser,
        timeout_seconds=timeout, source=source, message_id=message_id, report_metric=report_metric,
        reported_change_percent=change, scaled=tuple(scaled), notes=tuple(notes),
        setup_argv=_expand(template.setup_argv, options, where, scratch_dir) if template.setup_argv else (),
        cleanup_argv=_expand(template.cleanup_argv, options, where, scratch_dir) if template.cleanup_argv else (),
        parameters=tuple(sorted(rendered.items())),
        output_metric=_fill(metric.output, {**rendered, "report_metric": report_metric or ""}),
        collect=tuple(item.replace(SCRATCH, scratch_dir) for item in template.collect),
        files=_input_file(template, rendered, scratch_dir),
    )


def _input_file(template: Template, rendered: dict[str, str], scratch_dir: str) -> tuple[tuple[str, str], ...]:
    """The template's input file with the planned values; a line naming an unset value is left out."""
    if template.input_path is None:
        return ()
    lines = [_fill(line, rendered) for line in template.input_lines
             if all(name in rendered for name in placeholders(line))]
    return ((template.input_path.replace(SCRATCH, scratch_dir), "\n".join(lines) + "\n"),)


def _fill(text: str, values: dict[str, str]) -> str:
    for name in placeholders(text):
        text = text.replace("{" + name + "}", values.get(name, ""))
    return text


def _metric(template: Template, rendered: dict[str, str], report: Report | None,
            notes: list[str]) -> tuple[MetricSpec, str | None, float | None, str]:
    """The metric to compare, the report's name for it, its reported change and better direction."""
    headline = report.headline if report else None
    # the report's own table: rows of an "also impacted" test's table (`test` set) measure another run
    rows = [row for row in report.metrics if row.test is None] if report else []

    def change_of(name: str) -> float | None:
        row = next((row for row in rows if row.name == name and row.change_unit == "percent"), None)
        if row is not None:
            return row.change           # signed, where a headline may not be
        if headline is not None and headline.metric == name:
            return headline.change_percent
        return None

    if headline is not None:
        spec = template.lkp_metric_for(headline.metric, rendered)
        if spec is not None:
            return spec, headline.metric, change_of(headline.metric), spec.better
    spec = template.metric(template.primary_metric)
    for rule in template.primary_when:
        if rendered.get(rule.param) in rule.values:
            spec = template.metric(rule.metric)
    # A person's report names its headline by the unit it measured in ("events/s").
    by_unit = template.unit_metric_for(headline.metric, spec) if headline is not None else None
    if by_unit is not None:
        return by_unit, headline.metric, headline.change_percent, by_unit.better
    if headline is not None:
        notes.append(f"the headline metric {headline.metric} is not one {template.name} yields: "
                     f"comparing {spec.name} instead")
    for row in rows:
        if row.change_unit == "percent" and template.lkp_metric_for(row.name, rendered) is spec:
            return spec, row.name, row.change, spec.better
    return spec, None, None, spec.better


# --- job.yaml -----------------------------------------------------------------------------------
# LKP job files are YAML (read by yaml_text: scalars stay text, aliases and oversized files are
# refused). Some mail archives turn `#!` comment lines into `:#!` ones: those are dropped.

class JobError(ValueError):
    """A job.yaml this planner will not read; the message says why, on one line."""


def read_job(text: str) -> dict[str, Any]:
    """The first document of an LKP job file that names a testcase (else the first one)."""
    lines = ["" if line.lstrip().startswith(":#!") else line for line in text.splitlines()]
    try:
        loaded = load_documents("\n".join(lines))
    except YamlRefused as error:
        raise JobError(f"job.yaml: {error}") from None
    documents = [document for document in loaded if isinstance(document, dict)]
    return next((document for document in documents if document.get("testcase")),
                documents[0] if documents else {})


def flatten_job(document: dict[str, Any]) -> dict[str, str]:
    """Scalar parameters of a job: top-level ones, then those nested under a key (`fs: {fs: ext4}`,
    `fio-setup-basic: {rw: write}`), the nested ones winning."""
    flat: dict[str, str] = {}
    nested: dict[str, str] = {}
    for key, value in document.items():
        if isinstance(value, dict):
            for inner, item in value.items():
                if isinstance(item, str):
                    nested[inner] = item
        elif isinstance(value, str):
            flat[key] = value
    flat.update(nested)
    return flat
