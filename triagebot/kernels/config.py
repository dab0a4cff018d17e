"""Kernel builds: what a build's .config is made from, and the key it is cached under (pure).

A config is a base and fragments merged over it, later lines winning:

- base "allnoconfig": `make allnoconfig KCONFIG_ALLCONFIG=<the fragments>` (a minimal kernel: a
  switcher's default fragment, rules/kernels/*.config);
- base "file": a whole config (the report's, or the host's /boot/config-$(uname -r)) written as
  .config with the fragments appended, then `make olddefconfig`.

The last fragment is always what the switcher itself needs (a vm guest's 9p root and serial
console built in, …): `make olddefconfig` may still drop an option whose dependencies are off,
so the build checks the result has every needed line (`missing_options`).

The key hashes the arch and the *effective* options (every CONFIG_ symbol after merging, sorted),
so two spellings of one config (a fragment that already holds the switcher's needs, and the same
fragment with them appended) share their builds.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from triagebot.rules.hosts import HOST_CONFIG, Switcher

BASES = ("allnoconfig", "file")
_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")
MAX_CONFIG_BYTES = 16 << 20


class ConfigError(ValueError):
    """A config text that is not a kernel config."""


@dataclass(frozen=True)
class Fragment:
    origin: str  # where it came from, for the run's record: "rules/kernels/x86-min.config"
    text: str


@dataclass(frozen=True)
class KernelConfig:
    """A build's config: a base and the fragments merged over it."""

    base: str  # allnoconfig / file
    origin: str  # where the base came from: "allnoconfig", "the report's config-6.8.0-rc1 (LKP materials)"
    text: str = ""  # the base config (base "file")
    fragments: tuple[Fragment, ...] = ()

    def __post_init__(self) -> None:
        if self.base not in BASES:
            raise ValueError(f"base must be one of {BASES}, not {self.base!r}")
        if self.base == "file" and not self.text.strip():
            raise ConfigError(f"{self.origin}: an empty config")

    def with_fragment(self, fragment: Fragment) -> KernelConfig:
        return KernelConfig(self.base, self.origin, self.text, (*self.fragments, fragment))

    def options(self) -> dict[str, str]:
        """Every symbol the base and fragments set, later settings winning ("n" for `is not set`)."""
        merged = options_of(self.text) if self.base == "file" else {}
        for fragment in self.fragments:
            merged.update(options_of(fragment.text))
        return merged

    def fragment_text(self) -> str:
        """The fragments as one file (KCONFIG_ALLCONFIG, or the lines appended to a whole config)."""
        return "".join(f"# from {fragment.origin}\n{fragment.text.rstrip()}\n" for fragment in self.fragments)

    def dot_config(self) -> str:
        """The .config written before `make olddefconfig` (base "file")."""
        return self.text.rstrip("\n") + "\n" + self.fragment_text()

    def describe(self) -> str:
        return " + ".join([self.origin, *(fragment.origin for fragment in self.fragments)])


def options_of(text: str) -> dict[str, str]:
    """The CONFIG_ settings of a config or fragment text; ConfigError for a line that is neither a
    setting, a comment nor blank (an HTML page served where a config was expected)."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"a config of {len(text)} bytes (at most {MAX_CONFIG_BYTES})")
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if (match := _SET.match(line)) is not None:
            found[match.group(1)] = match.group(2)
        elif (match := _UNSET.match(line)) is not None:
            found[match.group(1)] = "n"
        elif line and not line.startswith("#"):
            raise ConfigError(f"line {number} is no CONFIG_ setting: {line[:80]!r}")
    return found


def config_key(config: KernelConfig, arch: str, toolchain: str) -> str:
    """The key a build of this config is cached under (with the commit): hex sha256."""
    digest = hashlib.sha256()
    digest.update(f"arch={arch}\nbase={config.base}\ntoolchain={toolchain}\n".encode())
    for name, value in sorted(config.options().items()):
        digest.update(f"{name}={value}\n".encode())
    return digest.hexdigest()


def missing_options(needed: Iterable[str], dot_config: str) -> list[str]:
    """The lines of `needed` (CONFIG_X=v) that the final .config does not have."""
    final = options_of(dot_config)
    missing = []
    for line in needed:
        match = _SET.match(line)
        if match is not None and final.get(match.group(1), "n") != match.group(2):
            missing.append(line)
    return missing


def release_suffix(sha: str) -> str:
    """LOCALVERSION for a build of `sha`: its kernel release names the commit (`uname -r` shows it)."""
    return f"-tb{sha[:12]}"


def host_config_path(release: str) -> str:
    """Where Debian and most distributions keep a running kernel's config."""
    return f"/boot/config-{release}"


def chosen_config(switcher: Switcher, report: KernelConfig | None, report_options: tuple[tuple[str, str], ...],
                  host_config: Callable[[], tuple[str, str]], needs: tuple[str, ...]) -> KernelConfig:
    """The config a switcher builds with: the report's when it gives one (and the switcher takes
    it), else the switcher's own (a fragment on allnoconfig, or the host's config); then the
    CONFIG_ lines the report's mail names, then what the switcher's boot needs (`needs`).
    `host_config` reads the host's config (text, where) only when it is the one used."""
    if switcher.report_config and report is not None:
        chosen = report
    elif switcher.config == HOST_CONFIG:
        text, origin = host_config()
        chosen = KernelConfig("file", f"the host's {origin}", text)
    else:
        path = Path(switcher.config)
        chosen = KernelConfig("allnoconfig", "allnoconfig", fragments=(Fragment(_shown(path), path.read_text()),))
    if switcher.report_config and report_options:
        lines = "".join(f"{name}={value}\n" for name, value in report_options if _SET.match(f"{name}={value}"))
        if lines:
            chosen = chosen.with_fragment(Fragment("the CONFIG_ lines of the report's mail", lines))
    if needs:
        chosen = chosen.with_fragment(Fragment(f"what a {switcher.kind} boot needs", "\n".join(needs) + "\n"))
    return chosen


def _shown(path: Path) -> str:
    """A fragment's name as the rules call it (rules/kernels/x86-min.config), else its path."""
    parts = path.parts
    return "/".join(parts[parts.index("rules"):]) if "rules" in parts else str(path)
