"""rules/metric_floors.toml: per-metric floors, the smallest change that may confirm."""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from triagebot.rules.loader import (
    PACKAGED_RULES,
    RulesFile,
    Section,
    parse_text,
    read_file,
    rules_dir,
)

FLOORS_FILE = "metric_floors.toml"
DEFAULT_FLOOR_PERCENT = 1.5  # when no rules file is present and for metrics no pattern matches
MAXIMUM_FLOOR_PERCENT = 50.0  # a floor above this would hide any regression worth reporting
RULES_PATH = PACKAGED_RULES / FLOORS_FILE


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
    """Read and validate a floors file; without a path, the rules directory's (TRIAGE_RULES,
    then the packaged rules/) or, when it has none, the default. RulesError on any bad value."""
    if path is None:
        path = rules_dir() / FLOORS_FILE
        if not path.exists():
            # Installed without the rules/ tree: the documented default still applies.
            return MetricFloors()
    return floors_from(read_file(path))


def parse_floors(text: str, source: str) -> MetricFloors:
    """Validate the TOML text of a floors file; ``source`` names it in errors."""
    return floors_from(parse_text(text, source))


def floors_from(file: RulesFile) -> MetricFloors:
    top = file.top()
    top.check_keys(("default_floor_percent", "floor"))
    default = _percent(top, "default_floor_percent", DEFAULT_FLOOR_PERCENT)
    rules: list[FloorRule] = []
    seen: dict[str, int] = {}
    for number, entry in enumerate(file.entries("floor", label="pattern"), start=1):
        entry.check_keys(("pattern", "floor_percent", "why"))
        pattern = entry.string("pattern", None)
        if pattern in seen:
            entry.fail(f"pattern {pattern!r} repeats entry {seen[pattern]}")
        seen[pattern] = number
        rules.append(FloorRule(pattern=pattern, floor_percent=_percent(entry, "floor_percent"),
                               why=entry.text("why")))
    return MetricFloors(default_floor_percent=default, rules=tuple(rules), source=file.name)


def _percent(section: Section, key: str, default: object = None) -> float:
    if default is None and key not in section:
        section.fail(f"{key} is missing", key)
    # nan and inf fail the range check; a bool is no number
    return section.number(key, default, 0, MAXIMUM_FLOOR_PERCENT, above=True)
