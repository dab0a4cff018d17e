"""Notify stage: the Slack channel for a report, from rules/routing.toml (first match wins).

A route matches on the report's mailing list, the subsystem prefix of its subject
(``[ext4] …``, ``xfs: …``), its testcase and its headline metric; see the comments in
rules/routing.toml. The file is validated at load: a bad entry raises RulesError naming the
file, the entry and its line.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from triagebot.errors import RulesError

RULES_PATH = Path(__file__).resolve().parents[2] / "rules" / "routing.toml"
DEFAULT_CHANNEL = "#perf-triage"  # when the file is absent (installed without rules/)
MATCH_KEYS = ("list", "subsystem", "testcase", "metric")
_ROUTE_KEYS = {"channel", "why", *MATCH_KEYS}
_TOP_KEYS = {"default_channel", "route"}
_ENTRY_HEADER = re.compile(r"^\s*\[\[\s*route\s*\]\]", re.MULTILINE)
_CHANNEL = re.compile(r"^(#[a-z0-9][a-z0-9_-]{0,79}|[CGD][A-Z0-9]{8,})$")
_REPLY = re.compile(r"^\s*((re|fwd?|aw)\s*:\s*)+", re.IGNORECASE)
_TAG = re.compile(r"^\s*\[([^\]]*)\]")
_PREFIX = re.compile(r"^\s*([a-z0-9][a-z0-9_./-]*)\s*:\s", re.IGNORECASE)
_SHA = re.compile(r"^[0-9a-f]{7,40}$")
# Tags that say what a message is rather than which subsystem it is about.
_NOT_SUBSYSTEM = re.compile(r"^(patch|rfc|regression|bug|resend|git pull|v\d+|\d+/\d+|syzbot|"
                            r"lkp|report|question|announce)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Route:
    channel: str
    lists: tuple[str, ...] = ()
    subsystems: tuple[str, ...] = ()
    testcases: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    why: str | None = None
    where: str = ""  # "rules/routing.toml: route entry 2, line 21", for messages


@dataclass(frozen=True)
class Routing:
    routes: tuple[Route, ...] = ()
    default_channel: str = DEFAULT_CHANNEL

    def route_for(self, report: dict[str, Any], list_name: str | None = None) -> Route | None:
        """The first route matching the report (JSON form), or None for the default."""
        facts = report_facts(report, list_name)
        for route in self.routes:
            if _matches(route, facts):
                return route
        return None

    def channel_for(self, report: dict[str, Any], list_name: str | None = None) -> str:
        route = self.route_for(report, list_name)
        return route.channel if route else self.default_channel


@dataclass(frozen=True)
class Facts:
    """What routing looks at in a report."""

    list_name: str | None
    subsystems: tuple[str, ...]
    testcase: str | None
    metric: str | None


def subsystems(subject: str) -> tuple[str, ...]:
    """Subsystem prefixes of a subject: "[linus:master] [xfs] ef0b4a2fa7: …" -> ("xfs",)."""
    rest = _REPLY.sub("", subject or "")
    found: list[str] = []
    while True:
        tag = _TAG.match(rest)
        if not tag:
            break
        rest = rest[tag.end():]
        value = tag.group(1).strip()
        # "[linus:master]" is LKP's tree:branch; "[PATCH v2 1/3]" and "[REGRESSION]" say what it is.
        if value and ":" not in value and not _NOT_SUBSYSTEM.match(value):
            found.append(value.lower())
    prefix = _PREFIX.match(rest)
    if prefix and not _SHA.match(prefix.group(1).lower()):
        found.append(prefix.group(1).lower())
    return tuple(found)


def list_from_report(report: dict[str, Any]) -> str | None:
    """The list a report came from, from its lore-style source URL ("…/linux-ext4/…")."""
    for url in ((report.get("source") or {}).get("url"), (report.get("links") or {}).get("closes")):
        if url and url.startswith(("http://", "https://")):
            parts = [part for part in urlparse(url).path.split("/") if part]
            if parts and parts[0] not in ("all", "r"):
                return parts[0]
    return None


def report_facts(report: dict[str, Any], list_name: str | None = None) -> Facts:
    return Facts(list_name=(list_name or list_from_report(report) or None),
                 subsystems=subsystems(report.get("subject") or ""),
                 testcase=report.get("testcase"),
                 metric=(report.get("headline") or {}).get("metric"))


def _any(patterns: tuple[str, ...], values: tuple[str, ...], fold: bool) -> bool:
    if fold:
        values = tuple(value.lower() for value in values)
    return any(fnmatchcase(value, pattern) for pattern in patterns for value in values)


def _matches(route: Route, facts: Facts) -> bool:
    checks = ((route.lists, (facts.list_name,) if facts.list_name else (), True),
              (route.subsystems, facts.subsystems, True),
              (route.testcases, (facts.testcase,) if facts.testcase else (), True),
              (route.metrics, (facts.metric,) if facts.metric else (), False))
    return all(_any(patterns, values, fold) for patterns, values, fold in checks if patterns)


# --- loading ------------------------------------------------------------------------------------

def load_routing(path: Path | None = None) -> Routing:
    """The routing rules from ``path`` (default rules/routing.toml); RulesError when invalid."""
    if path is None:
        if not RULES_PATH.exists():
            return Routing()
        path = RULES_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as error:
        raise RulesError(f"{path}: cannot read: {error}") from error
    return parse_routing(text, str(path))


def _channel(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not _CHANNEL.match(value):
        raise RulesError(f"{where}: {key} must be a Slack channel ID (C0123ABCD) or a #name "
                         f"in lower case, not {value!r}")
    return value


def _patterns(value: Any, where: str, key: str) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(
            isinstance(item, str) and item.strip() for item in values):
        raise RulesError(f"{where}: {key} must be a non-empty string or list of strings, "
                         f"not {value!r}")
    folded = key != "metric"
    return tuple(item.strip().lower() if folded else item.strip() for item in values)


def parse_routing(text: str, source: str) -> Routing:
    """Validate the TOML text of a routing file; ``source`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RulesError(f"{source}: not valid TOML: {error}") from error
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise RulesError(f"{source}: unknown key {unknown[0]!r} (expected default_channel and "
                         f"[[route]] entries)")
    if "default_channel" not in data:
        raise RulesError(f"{source}: default_channel is missing (where unmatched reports go)")
    default = _channel(data["default_channel"], source, "default_channel")
    entries = data.get("route", [])
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise RulesError(f"{source}: 'route' must be an array of tables written [[route]]")
    lines = [text.count("\n", 0, match.start()) + 1 for match in _ENTRY_HEADER.finditer(text)]
    routes = []
    for index, entry in enumerate(entries):
        line = f", line {lines[index]}" if index < len(lines) else ""
        where = f"{source}: route entry {index + 1}{line}"
        unknown = sorted(set(entry) - _ROUTE_KEYS)
        if unknown:
            raise RulesError(f"{where}: unknown key {unknown[0]!r} (expected channel, why, "
                             f"{', '.join(MATCH_KEYS)})")
        if "channel" not in entry:
            raise RulesError(f"{where}: channel is missing")
        if not any(key in entry for key in MATCH_KEYS):
            raise RulesError(f"{where}: matches everything: give at least one of "
                             f"{', '.join(MATCH_KEYS)} (unmatched reports go to default_channel)")
        why = entry.get("why")
        if why is not None and not isinstance(why, str):
            raise RulesError(f"{where}: why must be a string")
        routes.append(Route(
            channel=_channel(entry["channel"], where, "channel"),
            lists=_patterns(entry["list"], where, "list") if "list" in entry else (),
            subsystems=_patterns(entry["subsystem"], where, "subsystem") if "subsystem" in entry else (),
            testcases=_patterns(entry["testcase"], where, "testcase") if "testcase" in entry else (),
            metrics=_patterns(entry["metric"], where, "metric") if "metric" in entry else (),
            why=why, where=where))
    return Routing(tuple(routes), default)
