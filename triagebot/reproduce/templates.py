"""Reproduce stage: benchmark templates from rules/reproducers/*.toml, validated at load time.

A template is data: the program, the argv it becomes (a list, never a shell string), typed and
range-checked parameters, the options a pasted command may use, the metrics its output parser
yields and how LKP testcases map onto it. The file format is described at the top of
rules/reproducers/fio.toml. Every problem is a RulesError naming the file and the entry.
"""
from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triagebot.errors import RulesError
from triagebot.parse.reported import UNITS as REPORTED_UNITS

# Output parsers implemented in triagebot/reproduce/outputs.py.
PARSERS = ("fio-json", "sysbench-text", "stress-ng-yaml", "fs_mark-text", "hackbench-text",
           "perf-bench-text", "lkp-json")
PARAM_TYPES = ("int", "enum", "size", "duration", "path", "bool", "name")
SCALES = ("threads", "scratch", "memory", "cap")
BETTER = ("higher", "lower")
SCRATCH = "{scratch}"

_TOP_KEYS = {"program", "subcommand", "description", "parser", "timeout_seconds", "value_style",
             "long_only", "argv", "setup_argv", "cleanup_argv", "trailing", "primary_metric",
             "primary_when", "params", "aliases", "drop", "refuse", "metrics", "lkp",
             "lkp_metrics", "scratch_fraction", "memory_fraction", "collect"}
_PARAM_KEYS = {"type", "flag", "min", "max", "choices", "default", "kind", "scale", "per_thread",
               "times", "cap", "format", "reserved", "tasks", "tasks_times", "assume"}
_LKP_KEYS = {"testcases", "environment", "params"}
_LKP_PARAM_KEYS = {"param", "kind", "map", "strip_suffix", "divide_by"}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_NAME_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}$")

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kKmMgGtTpP]?)(?:i?[bB]|i)?$")
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(us|ms|s|sec|m|min|h|d)?$")
_DURATION_UNITS = {None: 1.0, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0,
                   "h": 3600.0, "d": 86400.0}


# --- values -------------------------------------------------------------------------------------

def parse_size(text: str) -> int | None:
    """Bytes in a size string (`4k`, `2G`, `1024Ki`, `32GiB`, `28800000`); powers of 1024."""
    match = _SIZE.match(text.strip())
    if not match:
        return None
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()])


def format_size(size: int, style: str = "suffix") -> str:
    if style == "bytes":
        return str(size)
    for suffix, unit in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def parse_duration(text: str) -> float | None:
    """Seconds in a duration (`300s`, `30`, `5m`, `1h`); a bare number is seconds."""
    match = _DURATION.match(text.strip())
    if not match:
        return None
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]


def format_duration(seconds: float, style: str = "seconds") -> str:
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
    lkp_metrics: bool = False       # compare the report's own LKP metric (the lkp job runner)
    collect: tuple[str, ...] = ()   # files ("{scratch}/…") the runner keeps for the parser
    scratch_fraction: float = 0.5   # the share of the host's scratch space a plan may fill
    memory_fraction: float = 0.25   # the share of the host's memory a plan may allocate

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

    def for_testcase(self, testcase: str) -> Template | None:
        return next((item for item in self.templates if testcase in item.lkp_testcases), None)

    def __iter__(self):
        return iter(self.templates)


# --- loading ------------------------------------------------------------------------------------

def load_templates(rules: Path) -> Templates:
    """Every template in `rules/reproducers/*.toml`, sorted by name."""
    folder = Path(rules) / "reproducers"
    if not folder.is_dir():
        raise RulesError(f"{folder}: no reproducer templates (directory not found)")
    templates = tuple(load_template_file(path) for path in sorted(folder.glob("*.toml")))
    seen: dict[str, str] = {}
    for template in templates:
        for testcase in template.lkp_testcases:
            if testcase in seen:
                raise RulesError(f"{template.path}: [lkp]: testcase {testcase!r} is already mapped by "
                                 f"{seen[testcase]}")
            seen[testcase] = template.path
    return Templates(templates)


def load_template_file(path: Path) -> Template:
    try:
        data = tomllib.loads(Path(path).read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise RulesError(f"{path}: not valid TOML: {error}") from error
    return build_template(Path(path).stem, str(path), data)


def build_template(name: str, path: str, data: Mapping[str, Any]) -> Template:
    """One template from its parsed TOML; `path` names the file in every error."""
    def fail(entry: str, problem: str) -> RulesError:
        return RulesError(f"{path}: {entry}: {problem}")

    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise fail("top level", f"unknown key(s) {', '.join(sorted(unknown))}")
    program = data.get("program")
    if not isinstance(program, str) or not _WORD.match(program):
        raise fail("program", f"must be a program name (no path, no spaces), not {program!r}")
    subcommand = _words(fail, "subcommand", data.get("subcommand", []))
    parser = data.get("parser")
    if parser not in PARSERS:
        raise fail("parser", f"unknown output parser {parser!r} (known: {', '.join(PARSERS)})")
    timeout = data.get("timeout_seconds", 900)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= 86400:
        raise fail("timeout_seconds", f"must be an integer from 1 to 86400, not {timeout!r}")
    value_style = data.get("value_style", "equals")
    if value_style not in ("equals", "separate"):
        raise fail("value_style", f"must be 'equals' or 'separate', not {value_style!r}")
    long_only = data.get("long_only", False)
    if not isinstance(long_only, bool):
        raise fail("long_only", "must be true or false")

    params_table = data.get("params", {})
    if not isinstance(params_table, dict):
        raise fail("params", "must be a table of [params.NAME] tables")
    params = tuple(_param(fail, key, value) for key, value in params_table.items())
    names = {spec.name for spec in params}
    for spec in params:
        for other in spec.times + spec.tasks_times:
            if other not in names:
                raise fail(f"[params.{spec.name}]", f"times names unknown parameter {other!r}")
        for other in placeholders(spec.flag or ""):
            if other not in names or params_table[other].get("type") != "enum":
                raise fail(f"[params.{spec.name}]", f"flag {spec.flag!r} must name an enum parameter")

    argv = _argv(fail, "argv", data.get("argv"), program, subcommand, names, required=True)
    setup_argv = _argv(fail, "setup_argv", data.get("setup_argv"), program, subcommand, names)
    cleanup_argv = _argv(fail, "cleanup_argv", data.get("cleanup_argv"), program, subcommand, names)
    trailing = _words(fail, "trailing", data.get("trailing", []))

    aliases = _option_table(fail, "aliases", data.get("aliases", {}))
    for alias, param in aliases:
        if param not in names:
            raise fail("[aliases]", f"{alias!r} names unknown parameter {param!r}")
    drop = _option_table(fail, "drop", data.get("drop", {}))
    for option, takes in drop:
        if takes not in ("flag", "value"):
            raise fail("[drop]", f"{option!r} must be 'flag' or 'value', not {takes!r}")
    refuse = _option_table(fail, "refuse", data.get("refuse", {}))

    metrics_list = data.get("metrics", [])
    if not isinstance(metrics_list, list) or not metrics_list:
        raise fail("metrics", "must be a non-empty array of [[metrics]] tables")
    metrics = tuple(_metric(fail, number, entry) for number, entry in enumerate(metrics_list, start=1))
    metric_names = {spec.name for spec in metrics}
    if len(metric_names) != len(metrics):
        raise fail("metrics", "metric names must be unique")
    primary = data.get("primary_metric")
    if primary not in metric_names:
        raise fail("primary_metric", f"{primary!r} is not one of the [[metrics]] names")
    primary_when = []
    for number, entry in enumerate(data.get("primary_when", []), start=1):
        where = f"[[primary_when]] entry {number}"
        if not isinstance(entry, dict) or set(entry) != {"param", "values", "metric"}:
            raise fail(where, "needs exactly param, values, metric")
        if entry["param"] not in names or entry["metric"] not in metric_names:
            raise fail(where, "param and metric must name a parameter and a metric of this template")
        primary_when.append(PrimaryRule(entry["param"], _words(fail, where, entry["values"]), entry["metric"]))

    for spec in metrics:
        for other in placeholders(spec.output):
            if other not in names and other != "report_metric":
                raise fail(f"[[metrics]] ({spec.name})", f"output {spec.output!r} names unknown parameter {other!r}")
    collect = data.get("collect", [])
    if not isinstance(collect, list) or not all(
            isinstance(item, str) and item.startswith(SCRATCH + "/") and ".." not in item for item in collect):
        raise fail("collect", f"must list files inside '{SCRATCH}/', not {collect!r}")
    lkp = data.get("lkp", {})
    if not isinstance(lkp, dict) or set(lkp) - _LKP_KEYS:
        raise fail("[lkp]", f"unknown key(s) {', '.join(sorted(set(lkp) - _LKP_KEYS))}")
    lkp_params = []
    for key, entry in lkp.get("params", {}).items():
        lkp_params.append(_lkp_param(fail, key, entry, names))
    template = Template(
        name=name, path=path, program=program, parser=parser, argv=argv, params=params,
        metrics=metrics, primary_metric=primary, subcommand=subcommand,
        description=str(data.get("description", "")), timeout_seconds=timeout,
        value_style=value_style, long_only=long_only, setup_argv=setup_argv,
        cleanup_argv=cleanup_argv, trailing=trailing, aliases=aliases, drop=drop, refuse=refuse,
        primary_when=tuple(primary_when),
        lkp_testcases=_words(fail, "[lkp] testcases", lkp.get("testcases", [])),
        lkp_environment=_words(fail, "[lkp] environment", lkp.get("environment", [])),
        lkp_params=tuple(lkp_params), collect=tuple(collect), lkp_metrics=bool(data.get("lkp_metrics", False)),
        scratch_fraction=_fraction(fail, "scratch_fraction", data.get("scratch_fraction", 0.5)),
        memory_fraction=_fraction(fail, "memory_fraction", data.get("memory_fraction", 0.25)),
    )
    # Template literal options may not collide with what a pasted command could set.
    for option in template.allowed_options():
        if option in dict(refuse):
            raise fail("[refuse]", f"{option!r} is also an allowed option")
    return template


def _fraction(fail, entry: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise fail(entry, f"must be a number above 0 and at most 1, not {value!r}")
    return float(value)


def _words(fail, entry: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and _WORD.match(item) for item in value):
        raise fail(entry, f"must be a list of plain words, not {value!r}")
    return tuple(value)


def _argv(fail, entry: str, value: Any, program: str, subcommand: tuple[str, ...], names: set[str],
          required: bool = False) -> tuple[str, ...]:
    if value is None and not required:
        return ()
    if isinstance(value, str):
        raise fail(entry, "must be a list of strings, not a shell string")
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise fail(entry, f"must be a non-empty list of strings, not {value!r}")
    if tuple(value[:1 + len(subcommand)]) != (program, *subcommand):
        raise fail(entry, f"must start with the program and subcommand {[program, *subcommand]!r}")
    for item in value:
        for name in placeholders(item):
            if name not in names and name not in ("scratch", "options"):
                raise fail(entry, f"{item!r} names unknown parameter {name!r}")
        if "{options}" in item and item != "{options}":
            raise fail(entry, "{options} must be a list element of its own")
        if any(character in item for character in ";&|`<>$\n"):
            raise fail(entry, f"{item!r} holds a shell metacharacter (argv is never run by a shell)")
    if value.count("{options}") > 1:
        raise fail(entry, "{options} may appear once")
    return tuple(value)


def _option_table(fail, entry: str, value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise fail(f"[{entry}]", "must be a table of option = string")
    for option, item in value.items():
        if not option.startswith("-") or not isinstance(item, str):
            raise fail(f"[{entry}]", f"{option!r} must be an option (starting with -) mapped to a string")
    return tuple(value.items())


def _metric(fail, number: int, entry: Any) -> MetricSpec:
    where = f"[[metrics]] entry {number}"
    if not isinstance(entry, dict) or set(entry) - {"name", "better", "lkp", "output", "units"}:
        raise fail(where, "keys are name, better, lkp, output, units")
    name = entry.get("name")
    if not isinstance(name, str) or not _WORD.match(name):
        raise fail(where, f"name must be a plain word, not {name!r}")
    if entry.get("better") not in BETTER:
        raise fail(f"{where} ({name})", f"better must be 'higher' or 'lower', not {entry.get('better')!r}")
    lkp = entry.get("lkp", [])
    if not isinstance(lkp, list) or not all(isinstance(item, str) for item in lkp):
        raise fail(f"{where} ({name})", "lkp must be a list of LKP metric names")
    output = entry.get("output", name)
    if not isinstance(output, str) or not output:
        raise fail(f"{where} ({name})", "output must be the metric's name in the parser's output")
    units = entry.get("units", [])
    if not isinstance(units, list) or not all(isinstance(item, str) and item in REPORT_UNITS for item in units):
        raise fail(f"{where} ({name})", f"units must be a list of units a report is read in: {', '.join(REPORT_UNITS)}")
    against = [unit for unit in units if REPORT_UNITS[unit] != entry["better"]]
    if against:
        raise fail(f"{where} ({name})", f"better is {entry['better']!r} but {', '.join(against)} is better "
                                        f"{REPORT_UNITS[against[0]]}")
    return MetricSpec(name, entry["better"], tuple(lkp), output, tuple(units))


def _param(fail, name: str, entry: Any) -> ParamSpec:
    where = f"[params.{name}]"
    if not isinstance(entry, dict):
        raise fail(where, "must be a table")
    unknown = set(entry) - _PARAM_KEYS
    if unknown:
        raise fail(where, f"unknown key(s) {', '.join(sorted(unknown))}")
    kind = entry.get("type")
    if kind not in PARAM_TYPES:
        raise fail(where, f"type must be one of {', '.join(PARAM_TYPES)}, not {kind!r}")
    flag = entry.get("flag")
    if flag is not None and (not isinstance(flag, str) or not flag.startswith("-")):
        raise fail(where, f"flag must be an option starting with -, not {flag!r}")
    scale = entry.get("scale")
    if scale is not None and scale not in SCALES:
        raise fail(where, f"scale must be one of {', '.join(SCALES)}, not {scale!r}")
    fields: dict[str, Any] = {"name": name, "type": kind, "flag": flag, "scale": scale}
    per_thread = entry.get("per_thread", 1)
    if isinstance(per_thread, bool) or not isinstance(per_thread, int) or not 1 <= per_thread <= 64:
        raise fail(where, f"per_thread must be an integer from 1 to 64, not {per_thread!r}")
    fields["per_thread"] = per_thread
    for key in ("times", "tasks_times"):
        listed = entry.get(key, [])
        if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed):
            raise fail(where, f"{key} must be a list of parameter names")
        fields[key] = tuple(listed)
    tasks = entry.get("tasks", 0)
    if isinstance(tasks, bool) or not isinstance(tasks, int) or not 0 <= tasks <= 10000:
        raise fail(where, f"tasks must be an integer from 0 to 10000, not {tasks!r}")
    if (tasks or fields["tasks_times"]) and kind != "int":
        raise fail(where, "tasks and tasks_times are for int parameters (counts)")
    if fields["tasks_times"] and not tasks:
        raise fail(where, "tasks_times needs tasks (how many processes or threads each unit starts)")
    fields["tasks"] = tasks

    def typed(key: str, required: bool = False) -> Any:
        """A limit or default in this parameter's own type."""
        if key not in entry:
            if required:
                raise fail(where, f"a {kind} parameter needs {key}")
            return None
        return _typed_value(fail, where, key, kind, entry[key], entry)

    if kind == "int":
        low, high = typed("min", True), typed("max", True)
        if low > high:
            raise fail(where, f"min {low} is above max {high}")
        fields.update(minimum=low, maximum=high)
    elif kind == "enum":
        choices = entry.get("choices")
        if not isinstance(choices, list) or not choices or not all(
                isinstance(item, str) and _NAME_VALUE.match(item) for item in choices):
            raise fail(where, "choices must be a non-empty list of plain words")
        fields["choices"] = tuple(choices)
    elif kind in ("size", "duration"):
        fields["maximum"] = typed("max", True)
        fields["minimum"] = typed("min")
        style = entry.get("format", "suffix" if kind == "size" else "seconds")
        allowed = ("suffix", "bytes") if kind == "size" else ("seconds", "suffix")
        if style not in allowed:
            raise fail(where, f"format must be one of {', '.join(allowed)}, not {style!r}")
        fields["format"] = style
    elif kind == "path":
        path_kind = entry.get("kind")
        if path_kind not in ("dir", "file"):
            raise fail(where, f"kind must be 'dir' or 'file', not {path_kind!r}")
        fields["kind"] = path_kind
    reserved = entry.get("reserved", [])
    if not isinstance(reserved, list) or not all(isinstance(item, str) for item in reserved) or (
            reserved and kind != "name"):
        raise fail(where, "reserved must be a list of names, on a name parameter")
    fields["reserved"] = tuple(reserved)
    if scale == "cap":
        fields["cap"] = typed("cap", True)
        if kind not in ("int", "duration"):
            raise fail(where, "scale 'cap' is for int and duration parameters")
    elif "cap" in entry:
        raise fail(where, "cap is only for scale = 'cap'")
    if scale == "threads" and kind != "int":
        raise fail(where, "scale 'threads' is for int parameters")
    if scale in ("scratch", "memory") and kind not in ("int", "size"):
        raise fail(where, f"scale {scale!r} is for int and size parameters")
    default = typed("default")
    if default is not None:
        _check_range(fail, where, "default", fields, default)
    fields["default"] = default
    assume = typed("assume")
    if assume is not None:
        _check_range(fail, where, "assume", fields, assume)
        if default is not None:
            raise fail(where, "assume is for a parameter without a default (the program's own default)")
    fields["assume"] = assume
    if fields.get("cap") is not None:
        _check_range(fail, where, "cap", fields, fields["cap"])
    return ParamSpec(**fields)


def _typed_value(fail, where: str, key: str, kind: str, raw: Any, entry: Mapping[str, Any]) -> Any:
    if kind == "int":
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise fail(where, f"{key} must be an integer, not {raw!r}")
        return raw
    if kind == "bool":
        if not isinstance(raw, bool):
            raise fail(where, f"{key} must be true or false, not {raw!r}")
        return raw
    if kind == "size":
        value = parse_size(raw) if isinstance(raw, str) else None
        if value is None:
            raise fail(where, f"{key} must be a size string such as '4k' or '2G', not {raw!r}")
        return value
    if kind == "duration":
        value = parse_duration(raw) if isinstance(raw, str) else None
        if value is None:
            raise fail(where, f"{key} must be a duration string such as '60s' or '5m', not {raw!r}")
        return value
    if kind == "enum":
        if raw not in entry.get("choices", []):
            raise fail(where, f"{key} {raw!r} is not one of the choices")
        return raw
    if kind == "path":
        if not isinstance(raw, str) or not (raw == SCRATCH or raw.startswith(SCRATCH + "/")) or ".." in raw:
            raise fail(where, f"{key} must be inside the scratch dir ('{SCRATCH}' or '{SCRATCH}/…'), not {raw!r}")
        return raw
    if not isinstance(raw, str) or not _NAME_VALUE.match(raw):
        raise fail(where, f"{key} must be a short name, not {raw!r}")
    return raw


def _check_range(fail, where: str, key: str, fields: Mapping[str, Any], value: Any) -> None:
    low, high = fields.get("minimum"), fields.get("maximum")
    if low is not None and value < low:
        raise fail(where, f"{key} {value!r} is below min {low!r}")
    if high is not None and value > high:
        raise fail(where, f"{key} {value!r} is above max {high!r}")


def _lkp_param(fail, key: str, entry: Any, names: set[str]) -> LkpParam:
    where = f"[lkp.params.{key}]"
    if not isinstance(entry, dict) or set(entry) - _LKP_PARAM_KEYS:
        raise fail(where, f"keys are {', '.join(sorted(_LKP_PARAM_KEYS))}")
    if entry.get("param") not in names:
        raise fail(where, f"param {entry.get('param')!r} is not a parameter of this template")
    kind = entry.get("kind", "value")
    if kind not in ("value", "threads"):
        raise fail(where, f"kind must be 'value' or 'threads', not {kind!r}")
    mapping = entry.get("map", {})
    if not isinstance(mapping, dict) or not all(isinstance(item, str) for item in mapping.values()):
        raise fail(where, "map must be a table of LKP value = template value")
    divide_by = entry.get("divide_by", [])
    if not isinstance(divide_by, list) or not all(item in names for item in divide_by):
        raise fail(where, "divide_by must list parameters of this template")
    strip = entry.get("strip_suffix")
    if strip is not None and not isinstance(strip, str):
        raise fail(where, "strip_suffix must be a string")
    return LkpParam(key, entry["param"], kind, tuple(mapping.items()), strip, tuple(divide_by))
