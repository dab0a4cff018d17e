"""rules/reproducers/*.toml: the benchmark templates, validated at load time.

A template is data: the program, the argv it becomes (a list, never a shell string), typed and
range-checked parameters, the options a pasted command may use, the metrics its output parser
yields and how LKP testcases map onto it. The file format is described at the top of
rules/reproducers/fio.toml. Every problem is a RulesError naming the file and the entry.
"""
from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from triagebot.errors import RulesError
from triagebot.reference.units import UNITS as REPORTED_UNITS
from triagebot.rules.loader import RulesFile, Section, read_file

TEMPLATES_DIR = "reproducers"

# Output parsers implemented in triagebot/reproduce/outputs.py.
PARSERS = ("fio-json", "sysbench-text", "stress-ng-yaml", "fs_mark-text", "hackbench-text",
           "perf-bench-text", "lkp-json", "dbench-text", "postmark-text",
           "will-it-scale-csv", "filebench-text", "fxmark-text", "unixbench-text")
PARAM_TYPES = ("int", "enum", "size", "duration", "path", "bool", "name")
SCALES = ("threads", "scratch", "memory", "cap")
BETTER = ("higher", "lower")
SCRATCH = "{scratch}"
# Lists of names a host gives (triagebot.rules.self_describe): an enum may take its choices from one.
HOST_CHOICES = ("stressors",)
# What a lab tool's setup_argv / cleanup_argv may run besides the tool itself.
TOOL_SETUP_PROGRAMS = ("sed",)

_TOP_KEYS = ("program", "subcommand", "description", "parser", "timeout_seconds", "value_style",
             "long_only", "argv", "setup_argv", "cleanup_argv", "trailing", "primary_metric",
             "primary_when", "params", "aliases", "drop", "refuse", "metrics", "lkp",
             "lkp_metrics", "scratch_fraction", "memory_fraction", "collect", "input", "caveats", "tool")
_PARAM_KEYS = ("type", "flag", "min", "max", "choices", "default", "kind", "scale", "per_thread",
               "times", "cap", "format", "reserved", "tasks", "tasks_times", "assume", "relative",
               "host_choices")
_LKP_KEYS = ("testcases", "environment", "params", "notes", "derive", "from_headline", "always", "per_unit")
_LKP_PARAM_KEYS = ("param", "kind", "map", "strip_suffix", "divide_by", "divide_floor", "most", "as_reported")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_NAME_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}$")

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kKmMgGtTpP]?)(?:i?[bB]|i)?$")
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(us|ms|s|sec|m|min|h|d)?$")
_DURATION_UNITS = {None: 1.0, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0,
                   "h": 3600.0, "d": 86400.0}


# --- values -------------------------------------------------------------------------------------

# The largest size and duration any value is read as; past them a value is refused as out of
# range (ValueOutOfRange), never carried into float infinity or a 400-digit integer (issue 21).
MAX_SIZE_BYTES = 1 << 60  # 1 EiB
MAX_DURATION_SECONDS = 10 * 366 * 86400  # ten years
_SHOWN_DIGITS = 24  # of an out-of-range value quoted in its refusal


class ValueOutOfRange(ValueError):
    """A size or duration that reads as one but lies past MAX_SIZE_BYTES / MAX_DURATION_SECONDS."""


def shortened(text: str) -> str:
    """A value as quoted in a refusal: whole, or its start and its length."""
    text = text.strip()
    return text if len(text) <= _SHOWN_DIGITS else f"{text[:_SHOWN_DIGITS]}… ({len(text)} characters)"


def parse_size(text: str) -> int | None:
    """Bytes in a size string (`4k`, `2G`, `1024Ki`, `32GiB`, `28800000`); powers of 1024.
    None when it is not a size; ValueOutOfRange past MAX_SIZE_BYTES."""
    match = _SIZE.match(text.strip())
    if not match:
        return None
    size = float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]  # 1e400 reads as inf
    if not size <= MAX_SIZE_BYTES:
        raise ValueOutOfRange(f"{shortened(text)} is past the largest size read (1 EiB)")
    return int(size)


def format_size(size: int, style: str = "suffix") -> str:
    if style == "bytes":
        return str(size)
    for suffix, unit in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def parse_duration(text: str) -> float | None:
    """Seconds in a duration (`300s`, `30`, `5m`, `1h`); a bare number is seconds.
    None when it is not a duration; ValueOutOfRange past MAX_DURATION_SECONDS."""
    match = _DURATION.match(text.strip())
    if not match:
        return None
    seconds = float(match.group(1)) * _DURATION_UNITS[match.group(2)]
    if not seconds <= MAX_DURATION_SECONDS:
        raise ValueOutOfRange(f"{shortened(text)} is past the longest duration read (ten years)")
    return seconds


def format_duration(seconds: float, style: str = "seconds") -> str:
    if not -MAX_DURATION_SECONDS <= seconds <= MAX_DURATION_SECONDS:  # NaN and infinity too
        raise ValueOutOfRange(f"{seconds} seconds is not a duration this planner writes")
    whole = max(1, int(round(seconds)))
    return f"{whole}s" if style == "suffix" else str(whole)


def placeholders(text: str) -> list[str]:
    return _PLACEHOLDER.findall(text)


# --- records ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: str                       # one of PARAM_TYPES
    flag: str | None = None         # the option it renders as; may hold "{param}" (stress-ng --{test})
    minimum: float | None = None    # int: count
    maximum: float | None = None    # int: count; size: bytes; duration: seconds
    choices: tuple[str, ...] = ()   # enum
    default: Any = None             # a typed value (int, bytes, seconds, str, bool)
    kind: str | None = None         # path: dir / file
    scale: str | None = None        # threads / scratch / memory / cap
    per_thread: int = 1             # threads: the most per host thread
    times: tuple[str, ...] = ()     # scratch/memory: params whose values multiply the footprint
    cap: float | None = None        # cap: the ceiling values are scaled down to
    format: str = ""                # size: suffix / bytes; duration: seconds / suffix
    reserved: tuple[str, ...] = ()  # name: values refused (fio's --name=global defines no job)
    tasks: int = 0                  # processes/threads each unit starts (× tasks_times): the plan
                                    # keeps value × tasks_times × tasks within the host's process budget
    tasks_times: tuple[str, ...] = ()  # params whose values multiply this one's tasks
    assume: Any = None              # the program's own default when the option is not given: used
                                    # for footprints (times, tasks_times), never rendered
    host_choices: str | None = None  # enum: the choices are the host's own list of this name where
                                    # the host gives one (HOST_CHOICES), else `choices`
    from_host: bool = False         # the choices are the host's list (Templates.for_host)
    relative: bool = False          # path: rendered relative to the scratch dir, the command's
                                    # working directory on every executor (fs_mark takes a -d of
                                    # fewer than 40 bytes, shorter than most scratch paths)


# The units parse/reported.py names a person's headline by, and which way each is better.
REPORT_UNITS = dict(sorted(set(REPORTED_UNITS.values())))


@dataclass(frozen=True)
class MetricSpec:
    name: str
    better: str                     # higher / lower
    lkp: tuple[str, ...] = ()       # LKP metric names (globs, may hold "{param}") it stands for
    output: str = ""                # the name parse_output gives it (may hold "{param}")
    units: tuple[str, ...] = ()     # units a person's report states it in ("events/s"): a headline
                                    # read from prose is named by its unit (parse/reported.py)


@dataclass(frozen=True)
class PrimaryRule:
    param: str
    values: tuple[str, ...]
    metric: str


@dataclass(frozen=True)
class LkpParam:
    key: str                        # the LKP parameter name
    param: str                      # the template parameter it sets
    kind: str = "value"             # value / threads (`100%` of the host's threads, or a count)
    mapping: tuple[tuple[str, str], ...] = ()   # LKP value -> template value
    strip_suffix: str | None = None             # `16d` -> `16`
    divide_by: tuple[str, ...] = ()             # a total divided by these params' values
    divide_floor: tuple[tuple[str, int], ...] = ()  # each divisor at least this (LKP's fsmark counts a
                                                    # file under 4K as 4K when it divides test_size)
    most: int | None = None                     # the quotient capped here, as LKP's program caps it
    as_reported: bool = False                   # divide by the report's values, not the host's: each
                                                # thread or iteration does what the report's did


@dataclass(frozen=True)
class LkpDerive:
    """A parameter LKP's program computes when the report leaves it out: `param` = `divide` //
    `by`, set only where the plan has `by` and not `param` (lkp-tests' fsmark gives fs_mark
    -D nr_files / nr_files_per_directory when a report names only the files per directory)."""

    param: str
    divide: str
    by: str


@dataclass(frozen=True)
class LkpFromHeadline:
    """An LKP parameter older reports state only in their headline metric (`stress-ng.fallocate.
    ops_per_sec` names test=fallocate): read from it where the parameters lack it, and said."""

    key: str                        # the LKP parameter (`test`)
    pattern: str                    # the headline metric with "{key}" where the value is (`stress-ng.{test}.*`)
    note: str                       # what the plan then does differently from the report

    def value_in(self, metric: str) -> str | None:
        head, _, tail = self.pattern.partition("{" + self.key + "}")
        expression = "".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", tail))
        found = re.fullmatch(re.escape(head) + r"([A-Za-z0-9][A-Za-z0-9_-]{0,63})" + expression, metric)
        return found.group(1) if found else None


@dataclass(frozen=True)
class Template:
    name: str
    path: str
    program: str
    parser: str
    argv: tuple[str, ...]
    params: tuple[ParamSpec, ...]
    metrics: tuple[MetricSpec, ...]
    primary_metric: str
    subcommand: tuple[str, ...] = ()
    description: str = ""
    timeout_seconds: int = 900
    value_style: str = "equals"     # equals: --opt=value; separate: --opt value
    long_only: bool = False         # -opt means --opt
    setup_argv: tuple[str, ...] = ()
    cleanup_argv: tuple[str, ...] = ()
    trailing: tuple[str, ...] = ()  # words accepted (and dropped) after the options
    aliases: tuple[tuple[str, str], ...] = ()
    drop: tuple[tuple[str, str], ...] = ()
    refuse: tuple[tuple[str, str], ...] = ()
    primary_when: tuple[PrimaryRule, ...] = ()
    lkp_testcases: tuple[str, ...] = ()
    lkp_environment: tuple[str, ...] = ()
    lkp_params: tuple[LkpParam, ...] = ()
    lkp_notes: tuple[tuple[str, str], ...] = ()  # LKP parameter -> how the plan differs where it is set
    lkp_derive: tuple[LkpDerive, ...] = ()
    lkp_from_headline: tuple[LkpFromHeadline, ...] = ()
    lkp_always: tuple[tuple[str, str], ...] = ()  # template parameter -> value LKP's program always passes
    # path parameter -> int parameter: in a plan from an LKP report the path option is given once
    # per unit (`-d fs-1 … -d fs-N` for N threads), as LKP's program gives it
    lkp_per_unit: tuple[tuple[str, str], ...] = ()
    lkp_metrics: bool = False       # compare the report's own LKP metric (the lkp job runner)
    collect: tuple[str, ...] = ()   # files ("{scratch}/…") the runner keeps for the parser
    # A file the program reads its commands from (postmark's), written into the scratch dir
    # before the command: its path and lines, "{param}" filled with the planned values (a line
    # naming a parameter the plan leaves unset is left out).
    input_path: str | None = None
    input_lines: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()   # what every plan of this template says of itself (postmark's timer)
    scratch_fraction: float = 0.5   # the share of the host's scratch space a plan may fill
    memory_fraction: float = 0.25   # the share of the host's memory a plan may allocate
    # A benchmark the lab installed itself (hosts.toml `tools`): the template plans only on a host
    # that lists it, and "{tool}" in its argv is where that host keeps it.
    tool: str | None = None

    def param(self, name: str) -> ParamSpec:
        return next(spec for spec in self.params if spec.name == name)

    def metric(self, name: str) -> MetricSpec:
        return next(spec for spec in self.metrics if spec.name == name)

    def option_params(self) -> dict[str, tuple[str, dict[str, str]]]:
        """Option spelling -> (parameter, parameters the spelling itself sets)."""
        table: dict[str, tuple[str, dict[str, str]]] = {}
        for spec in self.params:
            if spec.flag is None:
                continue
            names = placeholders(spec.flag)
            if names:
                # `--{test}`: one option per choice of the enum it names.
                chooser = self.param(names[0])
                for choice in chooser.choices:
                    table[spec.flag.replace("{" + names[0] + "}", choice)] = (spec.name, {chooser.name: choice})
            else:
                table[spec.flag] = (spec.name, {})
        for alias, param in self.aliases:
            table[alias] = (param, {})
        return table

    def allowed_options(self) -> frozenset[str]:
        """Every option a plan's argv may hold: parameter flags, aliases, the template's own."""
        literal = {word.split("=", 1)[0] for word in self.argv + self.setup_argv + self.cleanup_argv
                   if word.startswith("-")}
        return frozenset(self.option_params()) | literal

    def lkp_metric_for(self, lkp_name: str, values: Mapping[str, str]) -> MetricSpec | None:
        """The template metric an LKP metric name stands for, given the plan's parameter values."""
        for spec in self.metrics:
            for pattern in spec.lkp:
                filled = _PLACEHOLDER.sub(lambda match: values.get(match.group(1), "*"), pattern)
                if fnmatch.fnmatchcase(lkp_name, filled):
                    return spec
        return None

    def unit_metric_for(self, unit: str, primary: MetricSpec) -> MetricSpec | None:
        """The metric a headline named by its unit stands for: the primary metric when it is
        stated in that unit, else the one metric that is; None when none is, or several are."""
        if unit in primary.units:
            return primary
        matching = [spec for spec in self.metrics if unit in spec.units]
        return matching[0] if len(matching) == 1 else None


@dataclass(frozen=True)
class Templates:
    templates: tuple[Template, ...]

    def named(self, name: str) -> Template | None:
        return next((item for item in self.templates if item.name == name), None)

    def for_program(self, program: str) -> tuple[Template, ...]:
        return tuple(item for item in self.templates if item.program == program)

    def for_host(self, host_choices: Callable[[str], tuple[str, ...] | None]) -> Templates:
        """The templates as planned on one host: an enum with `host_choices` takes the host's own
        list where the host gives one (stress-ng's stressors, as its `stress-ng --stressors` says)."""
        def fitted(template: Template) -> Template:
            params = tuple(replace(spec, choices=offered, from_host=True) if spec.host_choices and
                           (offered := host_choices(spec.host_choices)) else spec
                           for spec in template.params)
            return template if params == template.params else replace(template, params=params)
        return Templates(tuple(fitted(template) for template in self.templates))

    def for_testcase(self, testcase: str) -> Template | None:
        return next((item for item in self.templates if testcase in item.lkp_testcases), None)

    def __iter__(self):
        return iter(self.templates)


# --- loading ------------------------------------------------------------------------------------

def load_templates(rules: Path) -> Templates:
    """Every template in `rules/reproducers/*.toml`, sorted by name."""
    folder = Path(rules) / TEMPLATES_DIR
    if not folder.is_dir():
        raise missing_templates(rules)
    templates = tuple(load_template_file(path) for path in sorted(folder.glob("*.toml")))
    seen: dict[str, str] = {}
    for template in templates:
        for testcase in template.lkp_testcases:
            if testcase in seen:
                raise RulesError(f"{template.path}: [lkp]: testcase {testcase!r} is already mapped by "
                                 f"{seen[testcase]}")
            seen[testcase] = template.path
    return Templates(templates)


def missing_templates(rules: Path) -> RulesError:
    return RulesError(f"{Path(rules) / TEMPLATES_DIR}: no reproducer templates (directory not found)")


def load_template_file(path: Path) -> Template:
    return template_from(Path(path).stem, read_file(Path(path)))


def template_from(name: str, file: RulesFile) -> Template:
    """One template from its parsed file; every error names the file, line and table."""
    top = file.top()
    top.check_keys(_TOP_KEYS)
    program = top.get("program")
    if not isinstance(program, str) or not _WORD.match(program):
        top.fail(f"program must be a program name (no path, no spaces), not {program!r}", "program")
    subcommand = _words(top, "subcommand")
    parser = top.choice("parser", PARSERS, None)
    tool = top.get("tool")
    if tool is not None and (not isinstance(tool, str) or not _WORD.match(tool)):
        top.fail(f"tool must be the name a host lists under tools, not {tool!r}", "tool")
    timeout = top.whole("timeout_seconds", 900, 1, 86400)
    value_style = top.choice("value_style", ("equals", "separate"), "equals")
    long_only = top.boolean("long_only", False)

    params = tuple(_param(section, key) for key, section in file.tables("params"))
    params_table = file.table("params").values
    names = {spec.name for spec in params}
    for spec in params:
        where = file.table(f"params.{spec.name}")
        for other in spec.times + spec.tasks_times:
            if other not in names:
                where.fail(f"times names unknown parameter {other!r}")
        for other in placeholders(spec.flag or ""):
            if other not in names or params_table[other].get("type") != "enum":
                where.fail(f"flag {spec.flag!r} must name an enum parameter")

    argv = _argv(top, "argv", program, subcommand, names, required=True, tool=tool)
    setup_argv = _argv(top, "setup_argv", program, subcommand, names, tool=tool)
    cleanup_argv = _argv(top, "cleanup_argv", program, subcommand, names, tool=tool)
    trailing = _words(top, "trailing")

    aliases_table = file.table("aliases")
    aliases = _option_table(aliases_table)
    for alias, param in aliases:
        if param not in names:
            aliases_table.fail(f"{alias!r} names unknown parameter {param!r}")
    drop_table = file.table("drop")
    drop = _option_table(drop_table)
    for option, takes in drop:
        if takes not in ("flag", "value"):
            drop_table.fail(f"{option!r} must be 'flag' or 'value', not {takes!r}")
    refuse_table = file.table("refuse")
    refuse = _option_table(refuse_table)

    if not isinstance(top.get("metrics", []), list) or not top.get("metrics"):
        top.fail("metrics must be a non-empty array of [[metrics]] tables", "metrics")
    metrics = tuple(_metric(entry, names) for entry in file.entries("metrics", label="name"))
    metric_names = {spec.name for spec in metrics}
    if len(metric_names) != len(metrics):
        top.fail("metrics: metric names must be unique", "metrics")
    primary = top.get("primary_metric")
    if primary not in metric_names:
        top.fail(f"primary_metric {primary!r} is not one of the [[metrics]] names", "primary_metric")
    primary_when = []
    for entry in file.entries("primary_when"):
        if set(entry.values) != {"param", "values", "metric"}:
            entry.fail("needs exactly param, values, metric")
        if entry.get("param") not in names or entry.get("metric") not in metric_names:
            entry.fail("param and metric must name a parameter and a metric of this template")
        primary_when.append(PrimaryRule(entry.get("param"), _words(entry, "values"), entry.get("metric")))

    collect = top.get("collect", [])
    if not isinstance(collect, list) or not all(
            isinstance(item, str) and item.startswith(SCRATCH + "/") and ".." not in item for item in collect):
        top.fail(f"collect must list files inside '{SCRATCH}/', not {collect!r}", "collect")
    input_path, input_lines = _input(file.table("input"), names)
    lkp = file.table("lkp")
    lkp.check_keys(_LKP_KEYS)
    lkp_params = [_lkp_param(key, section, names) for key, section in file.tables("lkp.params")]
    lkp_derive = []
    for key, section in file.tables("lkp.derive"):
        section.check_keys(("divide", "by"))
        if key not in names or section.get("divide") not in names or section.get("by") not in names:
            section.fail("the derived parameter, divide and by must name parameters of this template")
        if template_type(params, key) != "int":
            section.fail(f"{key} must be an int parameter to be derived")
        lkp_derive.append(LkpDerive(key, section.get("divide"), section.get("by")))
    from_headline = []
    for key, section in file.tables("lkp.from_headline"):
        section.check_keys(("pattern", "note"))
        pattern, note = section.get("pattern"), section.get("note")
        if not isinstance(pattern, str) or pattern.count("{" + key + "}") != 1:
            section.fail(f"pattern must be a metric name holding {{{key}}} once, not {pattern!r}")
        if not isinstance(note, str) or not note.strip():
            section.fail("note must say what the plan then does differently from the report")
        from_headline.append(LkpFromHeadline(key, pattern, note))
    always = file.table("lkp.always")
    for key, value in always.values.items():
        if key not in names or not isinstance(value, str):
            always.fail(f"{key!r} must name a parameter of this template and give its value as a string")
    per_unit = file.table("lkp.per_unit")
    for key, value in per_unit.values.items():
        if template_type(params, key) != "path" or template_type(params, value) != "int":
            per_unit.fail(f"{key!r} must name a path parameter and its value an int parameter")
    lkp_notes = file.table("lkp.notes")
    for key, note in lkp_notes.values.items():
        if not isinstance(note, str) or not note.strip():
            lkp_notes.fail(f"{key!r} must be a sentence saying how the plan differs where {key} is set")
    template = Template(
        name=name, path=file.name, program=program, parser=parser, argv=argv, params=params,
        metrics=metrics, primary_metric=primary, subcommand=subcommand,
        description=str(top.get("description", "")), timeout_seconds=timeout,
        value_style=value_style, long_only=long_only, setup_argv=setup_argv,
        cleanup_argv=cleanup_argv, trailing=trailing, aliases=aliases, drop=drop, refuse=refuse,
        primary_when=tuple(primary_when),
        lkp_testcases=_words(lkp, "testcases"),
        lkp_environment=_words(lkp, "environment"),
        lkp_params=tuple(lkp_params), lkp_notes=tuple(lkp_notes.values.items()), lkp_derive=tuple(lkp_derive),
        lkp_from_headline=tuple(from_headline), lkp_always=tuple(always.values.items()),
        lkp_per_unit=tuple(per_unit.values.items()),
        collect=tuple(collect),
        input_path=input_path, input_lines=input_lines, caveats=_caveats(top),
        lkp_metrics=bool(top.get("lkp_metrics", False)),
        scratch_fraction=top.number("scratch_fraction", 0.5, 0, 1, above=True),
        memory_fraction=top.number("memory_fraction", 0.25, 0, 1, above=True), tool=tool,
    )
    # Template literal options may not collide with what a pasted command could set.
    for option in template.allowed_options():
        if option in dict(refuse):
            refuse_table.fail(f"{option!r} is also an allowed option")
    return template


def _caveats(top: Section) -> tuple[str, ...]:
    value = top.get("caveats", [])
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        top.fail("caveats must be a list of sentences", "caveats")
    return tuple(value)


_INPUT_PATH = re.compile(r"^\{scratch\}/[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _input(section: Section, names: set[str]) -> tuple[str | None, tuple[str, ...]]:
    """[input]: path = "{scratch}/NAME", lines = [...] (no line breaks; placeholders name params)."""
    if not section.values:
        return None, ()
    section.check_keys(("path", "lines"))
    path = section.get("path")
    if not isinstance(path, str) or not _INPUT_PATH.match(path):
        section.fail(f"path must be a file name in the scratch dir ('{SCRATCH}/NAME'), not {path!r}", "path")
    lines = section.get("lines")
    if not isinstance(lines, list) or not lines or not all(isinstance(line, str) for line in lines):
        section.fail("lines must be a non-empty list of strings", "lines")
    for line in lines:
        if any(character in line for character in "\r\n\0"):
            section.fail(f"lines: {line!r} holds a line break", "lines")
        for name in placeholders(line):
            if name not in names:
                section.fail(f"lines: {line!r} names unknown parameter {name!r}", "lines")
    return path, tuple(lines)


def template_type(params: tuple[ParamSpec, ...], name: str) -> str | None:
    return next((spec.type for spec in params if spec.name == name), None)


def _words(section: Section, key: str) -> tuple[str, ...]:
    return section.strings(key, pattern=_WORD, what="plain words")


def _argv(top: Section, key: str, program: str, subcommand: tuple[str, ...], names: set[str],
          required: bool = False, tool: str | None = None) -> tuple[str, ...]:
    value = top.get(key)
    if value is None and not required:
        return ()
    if isinstance(value, str):
        top.fail(f"{key} must be a list of strings, not a shell string", key)
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        top.fail(f"{key} must be a non-empty list of strings, not {value!r}", key)
    if tool is not None:
        # a lab tool's program lives where the host keeps the tool: `{tool}/runtest.py`, or run
        # by an interpreter (`python3 ./runtest.py`) in that directory (`env -C {tool}`); its
        # set-up may be a copy of the tool's own input made by sed (filebench's workload)
        if key != "argv" and value[0] in TOOL_SETUP_PROGRAMS:
            pass
        elif not any(item == program or item.endswith("/" + program) for item in value):
            top.fail(f"{key} must run the program {program!r} (as {program} or {{tool}}/{program})", key)
    elif tuple(value[:1 + len(subcommand)]) != (program, *subcommand):
        top.fail(f"{key} must start with the program and subcommand {[program, *subcommand]!r}", key)
    for item in value:
        for name in placeholders(item):
            if name == "tool" and tool is not None:
                continue
            if name not in names and name not in ("scratch", "options"):
                top.fail(f"{key}: {item!r} names unknown parameter {name!r}", key)
        if "{options}" in item and item != "{options}":
            top.fail(f"{key}: {{options}} must be a list element of its own", key)
        if any(character in item for character in ";&|`<>$\n"):
            top.fail(f"{key}: {item!r} holds a shell metacharacter (argv is never run by a shell)", key)
    if value.count("{options}") > 1:
        top.fail(f"{key}: {{options}} may appear once", key)
    return tuple(value)


def _option_table(section: Section) -> tuple[tuple[str, str], ...]:
    for option, item in section.values.items():
        if not option.startswith("-") or not isinstance(item, str):
            section.fail(f"{option!r} must be an option (starting with -) mapped to a string")
    return tuple(section.values.items())


def _metric(entry: Section, names: set[str]) -> MetricSpec:
    entry.check_keys(("name", "better", "lkp", "output", "units"))
    name = entry.get("name")
    if not isinstance(name, str) or not _WORD.match(name):
        entry.fail(f"name must be a plain word, not {name!r}")
    better = entry.choice("better", BETTER, None)
    lkp = entry.get("lkp", [])
    if not isinstance(lkp, list) or not all(isinstance(item, str) for item in lkp):
        entry.fail("lkp must be a list of LKP metric names")
    output = entry.get("output", name)
    if not isinstance(output, str) or not output:
        entry.fail("output must be the metric's name in the parser's output")
    for other in placeholders(output):
        if other not in names and other != "report_metric":
            entry.fail(f"output {output!r} names unknown parameter {other!r}")
    units = entry.get("units", [])
    if not isinstance(units, list) or not all(isinstance(item, str) and item in REPORT_UNITS for item in units):
        entry.fail(f"units must be a list of units a report is read in: {', '.join(REPORT_UNITS)}")
    against = [unit for unit in units if REPORT_UNITS[unit] != better]
    if against:
        entry.fail(f"better is {better!r} but {', '.join(against)} is better {REPORT_UNITS[against[0]]}")
    return MetricSpec(name, better, tuple(lkp), output, tuple(units))


def _param(entry: Section, name: str) -> ParamSpec:
    entry.check_keys(_PARAM_KEYS)
    kind = entry.choice("type", PARAM_TYPES, None)
    flag = entry.get("flag")
    if flag is not None and (not isinstance(flag, str) or not flag.startswith("-")):
        entry.fail(f"flag must be an option starting with -, not {flag!r}")
    scale = entry.choice("scale", SCALES) if "scale" in entry else None
    fields: dict[str, Any] = {"name": name, "type": kind, "flag": flag, "scale": scale}
    fields["per_thread"] = entry.whole("per_thread", 1, 1, 64)
    for key in ("times", "tasks_times"):
        fields[key] = entry.strings(key, what="parameter names")
    tasks = entry.whole("tasks", 0, 0, 10000)
    if (tasks or fields["tasks_times"]) and kind != "int":
        entry.fail("tasks and tasks_times are for int parameters (counts)")
    if fields["tasks_times"] and not tasks:
        entry.fail("tasks_times needs tasks (how many processes or threads each unit starts)")
    fields["tasks"] = tasks

    def typed(key: str, required: bool = False) -> Any:
        """A limit or default in this parameter's own type."""
        if key not in entry:
            if required:
                entry.fail(f"a {kind} parameter needs {key}")
            return None
        return _typed_value(entry, key, kind)

    if kind == "int":
        low, high = typed("min", True), typed("max", True)
        if low > high:
            entry.fail(f"min {low} is above max {high}")
        fields.update(minimum=low, maximum=high)
    elif kind == "enum":
        fields["choices"] = entry.strings("choices", non_empty=True, pattern=_NAME_VALUE, what="plain words")
    if "host_choices" in entry:
        if kind != "enum":
            entry.fail("host_choices is for enum parameters")
        fields["host_choices"] = entry.choice("host_choices", HOST_CHOICES)
    elif kind in ("size", "duration"):
        fields["maximum"] = typed("max", True)
        fields["minimum"] = typed("min")
        allowed = ("suffix", "bytes") if kind == "size" else ("seconds", "suffix")
        fields["format"] = entry.choice("format", allowed, allowed[0])
    elif kind == "path":
        fields["kind"] = entry.choice("kind", ("dir", "file"), None)
    if "relative" in entry:
        if kind != "path":
            entry.fail("relative is for path parameters")
        fields["relative"] = entry.boolean("relative")
    reserved = entry.get("reserved", [])
    if not isinstance(reserved, list) or not all(isinstance(item, str) for item in reserved) or (
            reserved and kind != "name"):
        entry.fail("reserved must be a list of names, on a name parameter")
    fields["reserved"] = tuple(reserved)
    if scale == "cap":
        fields["cap"] = typed("cap", True)
        if kind not in ("int", "duration"):
            entry.fail("scale 'cap' is for int and duration parameters")
    elif "cap" in entry:
        entry.fail("cap is only for scale = 'cap'")
    if scale == "threads" and kind != "int":
        entry.fail("scale 'threads' is for int parameters")
    if scale in ("scratch", "memory") and kind not in ("int", "size"):
        entry.fail(f"scale {scale!r} is for int and size parameters")
    default = typed("default")
    if default is not None:
        _check_range(entry, "default", fields, default)
    fields["default"] = default
    assume = typed("assume")
    if assume is not None:
        _check_range(entry, "assume", fields, assume)
        if default is not None:
            entry.fail("assume is for a parameter without a default (the program's own default)")
    fields["assume"] = assume
    if fields.get("cap") is not None:
        _check_range(entry, "cap", fields, fields["cap"])
    return ParamSpec(**fields)


def _typed_value(entry: Section, key: str, kind: str) -> Any:
    raw = entry.get(key)
    if kind == "int":
        if isinstance(raw, bool) or not isinstance(raw, int):
            entry.fail(f"{key} must be an integer, not {raw!r}")
        return raw
    if kind == "bool":
        return entry.boolean(key)
    if kind == "size":
        try:
            value = parse_size(raw) if isinstance(raw, str) else None
        except ValueOutOfRange as error:
            entry.fail(f"{key}: {error}")
        if value is None:
            entry.fail(f"{key} must be a size string such as '4k' or '2G', not {raw!r}")
        return value
    if kind == "duration":
        try:
            seconds = parse_duration(raw) if isinstance(raw, str) else None
        except ValueOutOfRange as error:
            entry.fail(f"{key}: {error}")
        if seconds is None:
            entry.fail(f"{key} must be a duration string such as '60s' or '5m', not {raw!r}")
        return seconds
    if kind == "enum":
        if raw not in entry.get("choices", []):
            entry.fail(f"{key} {raw!r} is not one of the choices")
        return raw
    if kind == "path":
        if not isinstance(raw, str) or not (raw == SCRATCH or raw.startswith(SCRATCH + "/")) or ".." in raw:
            entry.fail(f"{key} must be inside the scratch dir ('{SCRATCH}' or '{SCRATCH}/…'), not {raw!r}")
        return raw
    if not isinstance(raw, str) or not _NAME_VALUE.match(raw):
        entry.fail(f"{key} must be a short name, not {raw!r}")
    return raw


def _check_range(entry: Section, key: str, fields: Mapping[str, Any], value: Any) -> None:
    low, high = fields.get("minimum"), fields.get("maximum")
    if low is not None and value < low:
        entry.fail(f"{key} {value!r} is below min {low!r}")
    if high is not None and value > high:
        entry.fail(f"{key} {value!r} is above max {high!r}")


def _lkp_param(key: str, entry: Section, names: set[str]) -> LkpParam:
    entry.check_keys(_LKP_PARAM_KEYS)
    if entry.get("param") not in names:
        entry.fail(f"param {entry.get('param')!r} is not a parameter of this template")
    kind = entry.choice("kind", ("value", "threads"), "value")
    mapping = entry.get("map", {})
    if not isinstance(mapping, dict) or not all(isinstance(item, str) for item in mapping.values()):
        entry.fail("map must be a table of LKP value = template value")
    divide_by = entry.get("divide_by", [])
    if not isinstance(divide_by, list) or not all(item in names for item in divide_by):
        entry.fail("divide_by must list parameters of this template")
    strip = entry.get("strip_suffix")
    if strip is not None and not isinstance(strip, str):
        entry.fail("strip_suffix must be a string")
    floor = entry.get("divide_floor", {})
    if not isinstance(floor, dict) or not all(
            name in divide_by and isinstance(value, int) and not isinstance(value, bool) and value >= 1
            for name, value in floor.items()):
        entry.fail("divide_floor must map divide_by parameters to whole numbers of at least 1")
    most = entry.get("most")
    if most is not None and (isinstance(most, bool) or not isinstance(most, int) or most < 1 or not divide_by):
        entry.fail("most must be a whole number of at least 1, on a divide_by parameter")
    return LkpParam(key, entry.get("param"), kind, tuple(mapping.items()), strip, tuple(divide_by),
                    tuple(floor.items()), most, entry.boolean("as_reported", False))
