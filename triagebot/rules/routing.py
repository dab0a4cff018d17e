"""rules/routing.toml: the Slack channel for a report (first match wins).

A route matches on the report's mailing list, the subsystem prefix of its subject
(``[ext4] …``, ``xfs: …``), its testcase and its headline metric; see the comments in
rules/routing.toml. The file is validated at load: a bad entry raises RulesError naming the
file, the entry and its line.

The same file says which reports `triage web --public` may show people outside the team:
`public_default` (true unless set) for every report, a route's `public` for the reports it
matches. Host names, channels and internal notes are never public, whatever it says.

Its `[slack]` table says who may act on a report from Slack (triagebot/actions/act.py): `run` (rerun
a report, with a bigger budget or on another host; test a fix; bisect), `mark` (mark a report
invalid or a duplicate of another) and `send` (send the drafted reply upstream), each a list of
Slack user IDs (U…, W…) and user-group IDs (S…). Absent: nobody may act.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from urllib.parse import urlparse

from triagebot.records.report import Report
from triagebot.rules.loader import PACKAGED_RULES, RulesFile, Section, parse_text, read_file

ROUTING_FILE = "routing.toml"
RULES_PATH = PACKAGED_RULES / ROUTING_FILE
DEFAULT_CHANNEL = "#perf-triage"  # when the file is absent (installed without rules/)
MATCH_KEYS = ("list", "subsystem", "testcase", "metric")
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
    where: str = ""  # "rules/routing.toml:21: [[route]] entry 2", for messages
    public: bool | None = None  # may `triage web --public` show its reports (None: public_default)


_SLACK_MEMBER = re.compile(r"^[UWS][A-Z0-9]{2,}$")
PERMISSIONS = ("run", "mark", "send")  # run: rerun, test fix, bisect; mark: invalid, duplicate; send: upstream


@dataclass(frozen=True)
class Permissions:
    """Who may do what from Slack: per permission, user IDs (U…/W…) and user-group IDs (S…)."""

    run: tuple[str, ...] = ()
    mark: tuple[str, ...] = ()
    send: tuple[str, ...] = ()

    def members(self, permission: str) -> tuple[str, ...]:
        return getattr(self, permission) if permission in PERMISSIONS else ()


@dataclass(frozen=True)
class Routing:
    routes: tuple[Route, ...] = ()
    default_channel: str = DEFAULT_CHANNEL
    public_default: bool = True  # reports no route marks `public` may leave the team
    permissions: Permissions = Permissions()  # who may act from Slack (nobody unless the file says)

    def is_public(self, report: Report, list_name: str | None = None) -> bool:
        """Whether `triage web --public` may show this report: its route's `public`, else the default."""
        route = self.route_for(report, list_name)
        return route.public if route is not None and route.public is not None else self.public_default

    def route_for(self, report: Report, list_name: str | None = None) -> Route | None:
        """The first route matching the report, or None for the default."""
        facts = report_facts(report, list_name)
        for route in self.routes:
            if _matches(route, facts):
                return route
        return None

    def channel_for(self, report: Report, list_name: str | None = None) -> str:
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


def list_from_report(report: Report) -> str | None:
    """The list a report came from, from its lore-style source URL ("…/linux-ext4/…")."""
    for url in (report.source.url, report.links.closes):
        if url and url.startswith(("http://", "https://")):
            parts = [part for part in urlparse(url).path.split("/") if part]
            if parts and parts[0] not in ("all", "r"):
                return parts[0]
    return None


def report_facts(report: Report, list_name: str | None = None) -> Facts:
    return Facts(list_name=(list_name or list_from_report(report) or None),
                 subsystems=subsystems(report.subject or ""),
                 testcase=report.testcase,
                 metric=report.headline.metric if report.headline else None)


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
    """The routing rules from ``path`` (default: the packaged rules/routing.toml, else only the
    default channel); RulesError when invalid."""
    if path is None:
        if not RULES_PATH.exists():
            return Routing()
        path = RULES_PATH
    return routing_from(read_file(path))


def parse_routing(text: str, source: str) -> Routing:
    """Validate the TOML text of a routing file; ``source`` names it in errors."""
    return routing_from(parse_text(text, source))


def _channel(section: Section, key: str) -> str:
    value = section.get(key)
    if not isinstance(value, str) or not _CHANNEL.match(value):
        section.fail(f"{key} must be a Slack channel ID (C0123ABCD) or a #name in lower case, "
                     f"not {value!r}", key)
    return value


def _patterns(section: Section, key: str) -> tuple[str, ...]:
    if key not in section:
        return ()
    value = section.get(key)
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(
            isinstance(item, str) and item.strip() for item in values):
        section.fail(f"{key} must be a non-empty string or list of strings, not {value!r}", key)
    folded = key != "metric"
    return tuple(item.strip().lower() if folded else item.strip() for item in values)


def routing_from(file: RulesFile) -> Routing:
    top = file.top()
    top.check_keys(("default_channel", "public_default", "route", "slack"))
    if "default_channel" not in top:
        raise file.error("default_channel is missing (where unmatched reports go)")
    default = _channel(top, "default_channel")
    public_default = top.boolean("public_default", True)
    routes = []
    for entry in file.entries("route"):
        entry.check_keys(("channel", "why", "public", *MATCH_KEYS))
        if "channel" not in entry:
            entry.fail("channel is missing")
        if not any(key in entry for key in MATCH_KEYS):
            entry.fail(f"matches everything: give at least one of {', '.join(MATCH_KEYS)} "
                       "(unmatched reports go to default_channel)")
        why = entry.text("why") if "why" in entry else None
        where = f"{file.name}:{entry.line}: {entry.where}" if entry.line else f"{file.name}: {entry.where}"
        routes.append(Route(
            channel=_channel(entry, "channel"), lists=_patterns(entry, "list"),
            subsystems=_patterns(entry, "subsystem"), testcases=_patterns(entry, "testcase"),
            metrics=_patterns(entry, "metric"), why=why, where=where,
            public=entry.boolean("public") if "public" in entry else None))
    slack = file.table("slack")
    slack.check_keys(PERMISSIONS)
    permissions = Permissions(**{name: slack.strings(name, pattern=_SLACK_MEMBER,
                                                     what="Slack user IDs (U…, W…) or user-group IDs (S…)")
                                 for name in PERMISSIONS})
    return Routing(tuple(routes), default, public_default, permissions)
