"""rules/sources.toml: the lists the daemon polls and the HTTP manners every request keeps."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from triagebot.http_client.bounds import MIB, PollBounds
from triagebot.http_client.protocol import HttpPolicy
from triagebot.rules.loader import RulesFile

SOURCES_FILE = "sources.toml"
SOURCE_KINDS = ("lore", "openwall")
_HTTP_KEYS = ("user_agent", "timeout_seconds", "attempts", "backoff_seconds", "backoff_max_seconds",
              "deadline_seconds", "max_redirects")
# [bounds]: key -> (PollBounds field, unit it is written in, low, high)
_BOUND_KEYS = {
    "poll_messages": ("messages", 1, 1, 100_000),
    "poll_mib": ("bytes", MIB, 1, 65_536),
    "poll_seconds": ("seconds", 1, 1, 86_400),
    "mib_per_day": ("bytes_per_day", MIB, 1, 100_000),
    "entry_attempts": ("entry_attempts", 1, 1, 100),
    "heal_max_results": ("heal_max_results", 1, 1, 500_000),
}


@dataclass(frozen=True)
class SourceSettings:
    kind: str  # lore / openwall
    url: str
    poll_minutes: float = 15.0  # how often the daemon polls this source


def parse_bounds(file: RulesFile) -> PollBounds:
    """The `[bounds]` table of sources.toml (absent keys: PollBounds' defaults)."""
    table = file.table("bounds")
    table.check_keys(_BOUND_KEYS)
    values: dict[str, Any] = {}
    for key, (name, unit, low, high) in _BOUND_KEYS.items():
        default = getattr(PollBounds, name) / unit
        number = table.number(key, default, low, high)
        values[name] = number if name == "seconds" else int(number * unit)
    return PollBounds(**values)


def parse_sources(file: RulesFile) -> tuple[HttpPolicy, tuple[SourceSettings, ...]]:
    """The HTTP policy and the sources of one sources.toml; RulesError naming file, line, entry."""
    file.top().check_keys(("http", "bounds", *SOURCE_KINDS))
    http = file.table("http")
    http.check_keys(_HTTP_KEYS)
    user_agent = http.string("user_agent", HttpPolicy.user_agent)
    policy = HttpPolicy(
        user_agent=user_agent,
        timeout_seconds=http.number("timeout_seconds", HttpPolicy.timeout_seconds, 1, 600),
        attempts=int(http.number("attempts", HttpPolicy.attempts, 1, 20)),
        backoff_seconds=http.number("backoff_seconds", HttpPolicy.backoff_seconds, 0, 600),
        backoff_max_seconds=http.number("backoff_max_seconds", HttpPolicy.backoff_max_seconds, 0, 86400),
        deadline_seconds=http.number("deadline_seconds", HttpPolicy.deadline_seconds, 1, 3600),
        max_redirects=int(http.number("max_redirects", HttpPolicy.max_redirects, 0, 20)),
    )
    sources = []
    for kind in SOURCE_KINDS:
        for entry in file.entries(kind):
            url = entry.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")) or not url.endswith("/"):
                entry.fail(f"url must be an http(s) list URL ending in '/', not {url!r}")
            entry.check_keys(("url", "poll_minutes"))
            sources.append(SourceSettings(kind, url, entry.number("poll_minutes", 15.0, 0.1, 10080)))
    return policy, tuple(sources)
