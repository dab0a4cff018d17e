"""Configuration: one frozen Settings built once from rules/ and the environment, passed down.

Where things are looked up, in order:
- rules directory: `--rules`, then `TRIAGE_RULES`, then the `rules/` folder beside the package
  (a source checkout or the Docker image).
- database: `--db`, then `TRIAGE_DB`, then `$XDG_DATA_HOME/triagebot/triage.db`, then
  `~/.local/share/triagebot/triage.db` (see `triagebot.store.sqlite.resolve_db_path`).
- sources and HTTP manners: `rules/sources.toml`, validated here; a bad entry is a RulesError
  naming the file and the entry.
"""
from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from triagebot.errors import RulesError
from triagebot.ingest.protocol import HttpPolicy

PACKAGED_RULES = Path(__file__).resolve().parent.parent / "rules"


@dataclass(frozen=True)
class SourceSettings:
    kind: str  # lore / openwall
    url: str
    poll_minutes: float = 15.0  # how often the daemon polls this source


@dataclass(frozen=True)
class Settings:
    rules_dir: Path
    http: HttpPolicy = field(default_factory=HttpPolicy)
    sources: tuple[SourceSettings, ...] = ()


def rules_dir(cli_value: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    return Path(cli_value or environ.get("TRIAGE_RULES") or PACKAGED_RULES)


def _number(path: Path, where: str, table: Mapping, name: str, default: float, low: float, high: float) -> float:
    value = table.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise RulesError(f"{path}: {where}: {name} must be a number from {low:g} to {high:g}, not {value!r}")
    return float(value)


def load_settings(rules: Path) -> Settings:
    """Settings from `rules/sources.toml`; without that file, the defaults and no sources."""
    path = rules / "sources.toml"
    if not path.exists():
        return Settings(rules_dir=rules)
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise RulesError(f"{path}: not valid TOML: {error}") from error
    unknown = set(data) - {"http", "lore", "openwall"}
    if unknown:
        raise RulesError(f"{path}: unknown table(s) {', '.join(sorted(unknown))} (expected http, lore, openwall)")
    http = data.get("http", {})
    user_agent = http.get("user_agent", HttpPolicy.user_agent)
    if not isinstance(user_agent, str) or not user_agent.strip():
        raise RulesError(f"{path}: [http]: user_agent must be a non-empty string naming the operator")
    policy = HttpPolicy(
        user_agent=user_agent,
        timeout_seconds=_number(path, "[http]", http, "timeout_seconds", HttpPolicy.timeout_seconds, 1, 600),
        attempts=int(_number(path, "[http]", http, "attempts", HttpPolicy.attempts, 1, 20)),
        backoff_seconds=_number(path, "[http]", http, "backoff_seconds", HttpPolicy.backoff_seconds, 0, 600),
        backoff_max_seconds=_number(path, "[http]", http, "backoff_max_seconds", HttpPolicy.backoff_max_seconds,
                                    0, 86400),
        deadline_seconds=_number(path, "[http]", http, "deadline_seconds", HttpPolicy.deadline_seconds, 1, 3600),
        max_redirects=int(_number(path, "[http]", http, "max_redirects", HttpPolicy.max_redirects, 0, 20)),
    )
    sources = []
    for kind in ("lore", "openwall"):
        entries = data.get(kind, [])
        if not isinstance(entries, list):
            raise RulesError(f"{path}: {kind} must be an array of tables ([[{kind}]])")
        for number, entry in enumerate(entries, start=1):
            where = f"[[{kind}]] entry {number}"
            url = entry.get("url") if isinstance(entry, dict) else None
            if not isinstance(url, str) or not url.startswith(("http://", "https://")) or not url.endswith("/"):
                raise RulesError(f"{path}: {where}: url must be an http(s) list URL ending in '/', not {url!r}")
            extra = set(entry) - {"url", "poll_minutes"}
            if extra:
                raise RulesError(f"{path}: {where}: unknown key(s) {', '.join(sorted(extra))}")
            sources.append(SourceSettings(kind, url, _number(path, where, entry, "poll_minutes", 15.0, 0.1, 10080)))
    return Settings(rules_dir=rules, http=policy, sources=tuple(sources))
