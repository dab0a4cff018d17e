"""Rules: `rules/fix_tests.toml`, what a fix test must show before the lab vouches for the fix.

    # the recovery a fix must surely reach for the drafted reply to carry `Tested-by:`: the lower
    # bound of the recovery's interval, in percent of the regression (default 80)
    recovery_floor_percent = 80

A fix whose verdict is confirmed but whose recovery interval reaches below the floor "partly
recovers": the draft says so, with the interval, and carries no tag (fix_test/recovery.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from triagebot.rules.loader import RulesFile, parse_text, read_file

FIX_TESTS_FILE = "fix_tests.toml"
DEFAULT_RECOVERY_FLOOR_PERCENT = 80.0


@dataclass(frozen=True)
class FixTestRules:
    recovery_floor_percent: float = DEFAULT_RECOVERY_FLOOR_PERCENT
    source: str = "built-in default"


def fix_tests_from(file: RulesFile) -> FixTestRules:
    top = file.top()
    top.check_keys(("recovery_floor_percent",))
    # above 0 (a Tested-by for any improvement would vouch for nothing), at most a full recovery
    floor = top.number("recovery_floor_percent", DEFAULT_RECOVERY_FLOOR_PERCENT, 0, 100, above=True)
    return FixTestRules(recovery_floor_percent=floor, source=file.name)


def parse_fix_tests(text: str, source: str) -> FixTestRules:
    return fix_tests_from(parse_text(text, source))


def load_fix_tests(path: Path) -> FixTestRules:
    """The file at `path`, validated; RulesError naming the file and line when it is bad."""
    return fix_tests_from(read_file(path))
