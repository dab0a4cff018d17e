"""Settings: the whole rules directory, read once into one frozen value and passed down.

Where things are looked up, in order:
- rules directory: `--rules`, then `TRIAGE_RULES`, then the `rules/` folder beside the package
  (a source checkout or the Docker image).
- database: `--db`, then `TRIAGE_DB`, then `$XDG_DATA_HOME/triagebot/triage.db`, then
  `~/.local/share/triagebot/triage.db`; a `postgresql://` URL opens PostgreSQL (see
  `triagebot.store.location.resolve_location`).

Each rules file is validated when the settings are built: a bad one is a RulesError naming the
file, the line and the entry, before any work starts. A file that is absent gets its default:
sources.toml none (no sources, the default HTTP manners); routing.toml, metric_floors.toml and
fix_tests.toml the packaged ones, else the built-in default channel, floor and recovery floor;
hosts.toml and reproducers/ nothing, which is an error only for a step that needs them
(`need_hosts`, `need_templates`).
trees.toml absent: no git tree is watched. trust.toml: the packaged one (nobody), else no one is
trusted either.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from triagebot.errors import RulesError
from triagebot.http_client.bounds import PollBounds
from triagebot.http_client.protocol import HttpPolicy
from triagebot.rules.fix_tests import FIX_TESTS_FILE, FixTestRules, fix_tests_from
from triagebot.rules.floors import FLOORS_FILE, MetricFloors, floors_from
from triagebot.rules.hosts import DEFAULT_MAX_WAIT_MINUTES, HOSTS_FILE, Host, hosts_from, max_wait_from, missing_hosts
from triagebot.rules.loader import PACKAGED_RULES, read_file, rules_dir
from triagebot.rules.routing import ROUTING_FILE, Routing, routing_from
from triagebot.rules.sources import SOURCES_FILE, SourceSettings, parse_bounds, parse_sources
from triagebot.rules.templates import TEMPLATES_DIR, Templates, load_templates, missing_templates
from triagebot.rules.trees import KernelBuilds, KernelTree, TreeRules, WatchedTree, load_kernel_trees, load_tree_rules
from triagebot.rules.trust import TRUST_FILE, TrustList, load_trust

__all__ = ["PACKAGED_RULES", "Settings", "SourceSettings", "load_settings", "rules_dir", "settings_for"]


@dataclass(frozen=True)
class Settings:
    rules_dir: Path
    http: HttpPolicy = field(default_factory=HttpPolicy)
    sources: tuple[SourceSettings, ...] = ()
    bounds: PollBounds = field(default_factory=PollBounds)  # sources.toml [bounds]: one poll, one day
    hosts: tuple[Host, ...] | None = None  # None: no hosts.toml
    templates: Templates | None = None  # None: no reproducers/ directory
    routing: Routing = field(default_factory=Routing)
    floors: MetricFloors = field(default_factory=MetricFloors)
    max_wait_minutes: float = DEFAULT_MAX_WAIT_MINUTES  # hosts.toml: a report's wait for its host, at most
    trees: tuple[WatchedTree, ...] = ()  # trees.toml: git trees the daemon fetches for fixes (none when absent)
    trust: TrustList = field(default_factory=TrustList)  # trust.toml: whose patches the daemon builds by itself
    tree_rules: TreeRules = field(default_factory=TreeRules)  # trees.toml whole: its trees and where regressions live
    fix_tests: FixTestRules = field(default_factory=FixTestRules)  # fix_tests.toml: the recovery a Tested-by needs
    kernel_trees: tuple[KernelTree, ...] = ()  # trees.toml: the trees a host's switcher builds kernels from
    kernel_builds: KernelBuilds = field(default_factory=KernelBuilds)  # trees.toml [kernel_builds]

    def need_hosts(self) -> tuple[Host, ...]:
        """The lab hosts; RulesError when the rules directory has no hosts.toml."""
        if self.hosts is None:
            raise missing_hosts(self.rules_dir)
        return self.hosts

    def need_templates(self) -> Templates:
        """The reproducer templates; RulesError when the rules directory has no reproducers/."""
        if self.templates is None:
            raise missing_templates(self.rules_dir)
        return self.templates


def _own_or_packaged(rules: Path, name: str) -> Path | None:
    """`rules/name`, else the packaged rules' file of that name, else None."""
    for path in (rules / name, PACKAGED_RULES / name):
        if path.exists():
            return path
    return None


def load_settings(rules: Path) -> Settings:
    """Every rules file in `rules`, validated; RulesError for the first bad one."""
    sources_path = rules / SOURCES_FILE
    sources_file = read_file(sources_path) if sources_path.exists() else None
    http, sources = parse_sources(sources_file) if sources_file else (HttpPolicy(), ())
    bounds = parse_bounds(sources_file) if sources_file else PollBounds()
    hosts_path = rules / HOSTS_FILE
    hosts_file = read_file(hosts_path) if hosts_path.exists() else None
    routing_path = _own_or_packaged(rules, ROUTING_FILE)
    floors_path = _own_or_packaged(rules, FLOORS_FILE)
    tree_rules = load_tree_rules(rules)
    fix_tests_path = _own_or_packaged(rules, FIX_TESTS_FILE)
    kernel_trees, kernel_builds = load_kernel_trees(rules)
    return Settings(
        rules_dir=rules, http=http, sources=sources, bounds=bounds,
        hosts=hosts_from(hosts_file, kernel_trees=kernel_trees, kernel_builds=kernel_builds)
        if hosts_file is not None else None,
        max_wait_minutes=max_wait_from(hosts_file) if hosts_file is not None else DEFAULT_MAX_WAIT_MINUTES,
        templates=load_templates(rules) if (rules / TEMPLATES_DIR).is_dir() else None,
        routing=routing_from(read_file(routing_path)) if routing_path else Routing(),
        floors=floors_from(read_file(floors_path)) if floors_path else MetricFloors(),
        trees=tree_rules.trees, tree_rules=tree_rules,
        trust=load_trust(_own_or_packaged(rules, TRUST_FILE)),
        fix_tests=fix_tests_from(read_file(fix_tests_path)) if fix_tests_path else FixTestRules(),
        kernel_trees=kernel_trees,
        kernel_builds=kernel_builds,
    )


def settings_for(cli_value: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of the rules directory `--rules` or the environment names; RulesError when
    the directory named is not there (a typo would otherwise read as "no hosts", "no sources")."""
    environ = os.environ if environ is None else environ
    named = cli_value or environ.get("TRIAGE_RULES")
    if named and not Path(named).is_dir():
        how = "--rules" if cli_value else "TRIAGE_RULES"
        what = "not a directory" if Path(named).exists() else "no such directory"
        raise RulesError(f"{how} {named}: {what}")
    return load_settings(rules_dir(cli_value, environ))
