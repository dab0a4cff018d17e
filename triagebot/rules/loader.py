"""One reader for every rules file: TOML read as UTF-8, one error format, typed fields.

Every problem is a RulesError worded

    FILE:LINE: WHERE: KEY problem     a key of a table or entry (`[http]`, `[[host]] entry 2 (skl-4t)`)
    FILE:LINE: KEY problem            a top-level key
    FILE:LINE: not valid TOML: …      tomllib's own words; `not UTF-8` likewise names the line
    FILE: problem                     the file as a whole (cannot be read, a required part missing)

`:LINE` is the line of the table's header (or of the top-level key) when the text shows it:
tomllib gives no positions, so headers are found by scanning the text, and a table written
inline (`route = [{…}]`) or by dotted keys has no line to name.
"""
from __future__ import annotations

import os
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from triagebot.errors import RulesError

# The rules/ folder beside the package: a source checkout, an editable install, the Docker image.
CHECKOUT_RULES = Path(__file__).resolve().parents[2] / "rules"
# Where a plain `pip install .` puts them (pyproject's data-files): <prefix>/share/triagebot/rules.
INSTALLED_RULES = Path("share") / "triagebot" / "rules"


def packaged_rules(checkout: Path = CHECKOUT_RULES, prefixes: Sequence[str] | None = None) -> Path:
    """The default rules: the checkout's rules/ when there is one, else the installed copy under
    the environment's prefix (sys.prefix, then sys.base_prefix); the checkout's path when neither
    exists (the error then names it)."""
    if (checkout / "sources.toml").is_file():
        return checkout
    for prefix in prefixes if prefixes is not None else (sys.prefix, sys.base_prefix):
        installed = Path(prefix) / INSTALLED_RULES
        if (installed / "sources.toml").is_file():
            return installed
    return checkout


PACKAGED_RULES = packaged_rules()
_T = TypeVar("_T")
_TOML_POSITION = re.compile(r"\(at line (\d+), column \d+\)")
_ANY_HEADER = re.compile(r"^[ \t]*\[")


def rules_dir(cli_value: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The rules directory: `--rules`, then `TRIAGE_RULES`, then the packaged rules/."""
    environ = os.environ if environ is None else environ
    return Path(cli_value or environ.get("TRIAGE_RULES") or PACKAGED_RULES)


class _Missing:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Missing()  # the default of a field that must be given


def _header_pattern(name: str, array: bool) -> re.Pattern[str]:
    """`[[name]]` or `[name]` at the start of a line; a dotted name may space its dots."""
    dotted = r"[ \t]*\.[ \t]*".join(re.escape(part) for part in name.split("."))
    return re.compile((r"^[ \t]*\[\[[ \t]*" + dotted + r"[ \t]*\]\]") if array else
                      (r"^[ \t]*\[[ \t]*" + dotted + r"[ \t]*\](?!\])"), re.MULTILINE)


@dataclass(frozen=True)
class RulesFile:
    """One rules file: its name in messages, its text and its parsed TOML."""

    name: str
    text: str
    data: dict[str, Any]

    def array_lines(self, name: str) -> list[int]:
        """1-based lines of each `[[name]]` header, in order."""
        return [self.text.count("\n", 0, match.start()) + 1
                for match in _header_pattern(name, array=True).finditer(self.text)]

    def table_line(self, name: str) -> int | None:
        match = _header_pattern(name, array=False).search(self.text)
        return self.text.count("\n", 0, match.start()) + 1 if match else None

    def key_line(self, key: str) -> int | None:
        """The line of a top-level `key = …` (before the first table header)."""
        pattern = re.compile(r"^[ \t]*(?:" + re.escape(key) + r'|"' + re.escape(key) + r'")[ \t]*=')
        for number, line in enumerate(self.text.splitlines(), start=1):
            if _ANY_HEADER.match(line):
                return None
            if pattern.match(line):
                return number
        return None

    def line_of(self, key: str) -> int | None:
        """Where a top-level key is given: `key = …`, `[key]` or the first `[[key]]`."""
        arrays = self.array_lines(key)
        return self.key_line(key) or self.table_line(key) or (arrays[0] if arrays else None)

    def error(self, problem: str, line: int | None = None) -> RulesError:
        return RulesError(f"{self.name}:{line}: {problem}" if line else f"{self.name}: {problem}")

    def top(self) -> Section:
        """The top level: its errors name the key and its line."""
        return Section(self, "", self.data, None)

    def table(self, dotted: str) -> Section:
        """The `[dotted]` table, say `[http]` or `[lkp.params]` (empty when absent); a value that
        is not a table is an error."""
        value: Any = self.data
        for part in dotted.split("."):
            value = value.get(part, {}) if isinstance(value, dict) else None
        if not isinstance(value, dict):
            raise self.error(f"[{dotted}] must be a table, not {value!r}",
                             self.table_line(dotted) or self.key_line(dotted))
        return Section(self, f"[{dotted}]", value, self.table_line(dotted))

    def tables(self, dotted: str) -> list[tuple[str, Section]]:
        """Each `[dotted.NAME]` table, as (NAME, its section)."""
        parent = self.table(dotted)
        found = []
        for name, value in parent.values.items():
            where, line = f"[{dotted}.{name}]", self.table_line(f"{dotted}.{name}")
            if not isinstance(value, dict):
                raise self.error(f"{where}: must be a table, not {value!r}", line or parent.line)
            found.append((name, Section(self, where, value, line or parent.line)))
        return found

    def entries(self, key: str, label: str | None = None) -> list[Section]:
        """The `[[key]]` entries, each named `[[key]] entry N` (and `(value of label)` if given)."""
        values = self.data.get(key, [])
        if not isinstance(values, list):
            raise self.error(f"{key} must be an array of tables ([[{key}]]), not {values!r}",
                             self.key_line(key))
        lines = self.array_lines(key)
        sections = []
        for number, value in enumerate(values, start=1):
            line = lines[number - 1] if number <= len(lines) else None
            where = f"[[{key}]] entry {number}"
            if not isinstance(value, dict):
                raise self.error(f"{where}: must be a table, not {value!r}", line)
            named = value.get(label) if label else None
            if isinstance(named, str) and named.strip():
                where += f" ({named})" if label == "name" else f" ({label} {named!r})"
            sections.append(Section(self, where, value, line))
        return sections


def parse_text(text: str, name: str) -> RulesFile:
    """A rules file from its text; `name` (a path) names it in every error."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        position = _TOML_POSITION.search(str(error))
        line = int(position.group(1)) if position else None
        raise RulesError(f"{name}:{line}: not valid TOML: {error}" if line else
                         f"{name}: not valid TOML: {error}") from error
    return RulesFile(name, text, data)


def read_file(path: Path) -> RulesFile:
    """Read a rules file as UTF-8 (whatever the locale) and parse it as TOML."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise RulesError(f"{path}: cannot be read: {error.strerror or error}") from error
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise RulesError(f"{path}:{line}: not UTF-8 (byte {raw[error.start]:#04x} at offset "
                         f"{error.start}): TOML files are UTF-8") from error
    return parse_text(text, str(path))


class Section:
    """One table of a rules file (the top level, a `[table]` or an entry) and its typed fields."""

    def __init__(self, file: RulesFile, where: str, values: Mapping[str, Any], line: int | None) -> None:
        self.file = file
        self.where = where
        self.values = values
        self.line = line

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def error(self, problem: str, key: str | None = None) -> RulesError:
        """`FILE:LINE: WHERE: problem`; at the top level, `FILE:LINE: problem` with the line of `key`."""
        if self.where:
            return self.file.error(f"{self.where}: {problem}", self.line)
        return self.file.error(problem, self.file.line_of(key) if key else None)

    def fail(self, problem: str, key: str | None = None) -> NoReturn:
        raise self.error(problem, key)

    def nested(self, key: str, where: str) -> Section:
        """The sub-table `key` (say `[host.ssh]`), its errors named `WHERE: where`."""
        value = self.values.get(key)
        if not isinstance(value, dict):
            self.fail(f"{key} must be a table, not {value!r}", key)
        label = f"{self.where}: {where}" if self.where else where
        return Section(self.file, label, value, self.line)

    def check_keys(self, allowed: Iterable[str]) -> None:
        """Refuse keys the format does not have (a misspelt key would silently do nothing)."""
        allowed = set(allowed)
        unknown = sorted(set(self.values) - allowed)
        if unknown:
            self.fail(f"unknown key(s) {', '.join(unknown)} (expected {', '.join(sorted(allowed))})", unknown[0])

    def _value(self, key: str, default: Any) -> Any:
        if key not in self.values and default is REQUIRED:
            self.fail(f"{key} is missing", key)
        return self.values.get(key, default)

    def string(self, key: str, default: Any = REQUIRED) -> str:
        """A non-empty string."""
        value = self._value(key, default)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{key} must be a non-empty string, not {value!r}", key)
        return value

    def optional_string(self, key: str) -> str | None:
        return self.string(key) if key in self.values else None

    def text(self, key: str, default: str = "") -> str:
        """Any string, empty allowed (a comment such as `why`)."""
        value = self.values.get(key, default)
        if not isinstance(value, str):
            self.fail(f"{key} must be a string, not {value!r}", key)
        return value

    def number(self, key: str, default: Any, low: float, high: float, *, above: bool = False) -> float:
        """A finite int or float from `low` to `high` (above `low` when `above`); never a bool."""
        value = self._value(key, default)
        wanted = (f"a number above {low:g} and at most {high:g}" if above else
                  f"a number from {low:g} to {high:g}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                (low < value if above else low <= value) and value <= high):
            self.fail(f"{key} must be {wanted}, not {value!r}", key)
        return float(value)

    def whole(self, key: str, default: Any, low: int, high: int) -> int:
        """An integer from `low` to `high`; never a float or a bool."""
        value = self._value(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.fail(f"{key} must be a whole number from {low} to {high}, not {value!r}", key)
        return value

    def boolean(self, key: str, default: Any = REQUIRED) -> bool:
        value = self._value(key, default)
        if not isinstance(value, bool):
            self.fail(f"{key} must be true or false, not {value!r}", key)
        return value

    def choice(self, key: str, choices: Sequence[_T], default: Any = REQUIRED) -> _T:
        value = self._value(key, default)
        if value not in choices:
            self.fail(f"{key} must be one of {', '.join(map(str, choices))}, not {value!r}", key)
        return value

    def strings(self, key: str, default: Sequence[str] = (), *, non_empty: bool = False,
                pattern: re.Pattern[str] | None = None, what: str = "non-empty strings") -> tuple[str, ...]:
        """A list of non-empty strings (each matching `pattern` if given)."""
        value = self.values.get(key, list(default))
        if not isinstance(value, list) or (non_empty and not value) or not all(
                isinstance(item, str) and item and (pattern is None or pattern.match(item))
                for item in value):
            self.fail(f"{key} must be a {'non-empty ' if non_empty else ''}list of {what}, not {value!r}", key)
        return tuple(value)
