"""Verdict stage: per-metric floors (the smallest change that may confirm), validated rules data."""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from triagebot.errors import RulesError

DEFAULT_FLOOR_PERCENT = 1.5  # when no rules file is present and for metrics no pattern matches
MAXIMUM_FLOOR_PERCENT = 50.0  # a floor above this would hide any regression worth reporting
RULES_PATH = Path(__file__).resolve().parents[2] / "rules" / "metric_floors.toml"

_TOP_KEYS = {"default_floor_percent", "floor"}
_ENTRY_KEYS = {"pattern", "floor_percent", "why"}
_ENTRY_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*floor[ \t]*\]\]", re.MULTILINE)


@dataclass(frozen=True)
class FloorRule:
    """One entry: metrics whose name matches ``pattern`` (a glob) get ``floor_percent``."""

    pattern: str
    floor_percent: float
    why: str = ""


@dataclass(frozen=True)
class MetricFloors:
    """The floors in file order; the first matching pattern wins, else the default."""

    default_floor_percent: float = DEFAULT_FLOOR_PERCENT
    rules: tuple[FloorRule, ...] = ()
    source: str = "built-in default"

    def floor_for(self, metric: str | None) -> float:
        """The floor for a metric name; the default for None or an unmatched name."""
        if metric:
            for rule in self.rules:
                if fnmatchcase(metric, rule.pattern):
                    return rule.floor_percent
        return self.default_floor_percent


def load_floors(path: Path | None = None) -> MetricFloors:
    """Read and validate a floors file; without a path, rules/metric_floors.toml or the default.

    Raises RulesError naming the file, the entry and its line on any bad value.
    """
    if path is None:
        from triagebot.config import rules_dir  # TRIAGE_RULES, then the rules/ beside the package

        path = rules_dir() / "metric_floors.toml"
        if not path.exists():
            # Installed without the rules/ tree: the documented default still applies.
            return MetricFloors()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as error:
        raise RulesError(f"{path}: cannot read: {error}") from error
    return parse_floors(text, str(path))


def parse_floors(text: str, source: str) -> MetricFloors:
    """Validate the TOML text of a floors file; ``source`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RulesError(f"{source}: not valid TOML: {error}") from error
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise RulesError(f"{source}: unknown key {unknown[0]!r} (expected default_floor_percent "
                         f"and [[floor]] entries)")
    default = _percent(data.get("default_floor_percent", DEFAULT_FLOOR_PERCENT), source,
                       "default_floor_percent")
    entries = data.get("floor", [])
    if not isinstance(entries, list):
        raise RulesError(f"{source}: 'floor' must be an array of tables written [[floor]]")
    lines = [text.count("\n", 0, match.start()) + 1 for match in _ENTRY_HEADER.finditer(text)]
    rules: list[FloorRule] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        line = f", line {lines[index]}" if index < len(lines) else ""
        where = f"{source}: floor entry {index + 1}{line}"
        rule = _rule(entry, where)
        if rule.pattern in seen:
            raise RulesError(f"{where}: pattern {rule.pattern!r} repeats entry "
                             f"{seen[rule.pattern]}")
        seen[rule.pattern] = index + 1
        rules.append(rule)
    return MetricFloors(default_floor_percent=default, rules=tuple(rules), source=source)


def _rule(entry: object, where: str) -> FloorRule:
    if not isinstance(entry, dict):
        raise RulesError(f"{where}: must be a table")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise RulesError(f"{where}: unknown key {unknown[0]!r} "
                         "(expected pattern, floor_percent, why)")
    pattern = entry.get("pattern")
    if not isinstance(pattern, str) or not pattern.strip():
        raise RulesError(f"{where}: pattern must be a non-empty string, got {pattern!r}")
    where = f"{where} (pattern {pattern!r})"
    if "floor_percent" not in entry:
        raise RulesError(f"{where}: floor_percent is missing")
    why = entry.get("why", "")
    if not isinstance(why, str):
        raise RulesError(f"{where}: why must be a string, got {why!r}")
    return FloorRule(pattern=pattern, floor_percent=_percent(entry["floor_percent"], where,
                                                             "floor_percent"), why=why)


def _percent(value: object, where: str, key: str) -> float:
    # bool is an int subclass in Python; "true" is no percentage.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RulesError(f"{where}: {key} must be a number, got {value!r}")
    number = float(value)
    if not (math.isfinite(number) and 0 < number <= MAXIMUM_FLOOR_PERCENT):
        raise RulesError(f"{where}: {key} must be above 0 and at most {MAXIMUM_FLOOR_PERCENT:g}, "
                         f"got {value!r}")
    return number
