"""`triage decide` end to end, and the metric floors rules file it reads."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from triagebot.errors import RulesError
from triagebot.rules.floors import DEFAULT_FLOOR_PERCENT, RULES_PATH, load_floors, parse_floors

BASE = "3.10,3.00,3.05,3.12,2.98,3.07,3.02,3.09,3.01,3.04"
SLOWER = "2.30,2.32,2.28,2.35,2.31,2.29,2.33,2.30,2.27,2.34"


def run_decide(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", "decide", *args],
                          capture_output=True, text=True, cwd=PROJECT, timeout=120)


def test_confirmed_regression_as_text() -> None:
    result = run_decide("--base", BASE, "--suspect", SLOWER, "--better", "higher", "--reported", "-28.3")
    assert result.returncode == 0, result.stderr
    first, *details = result.stdout.splitlines()
    assert first == ("confirmed: suspect is 24.3% worse (Hodges-Lehmann shift \u221224.3%, 95% CI \u221225.3% to "
                     "\u221223.2%), p<0.001 over 10+10 runs; report said \u221228.3%")
    assert any("Mann-Whitney 1.08e-05, KS 1.08e-05" in line for line in details)
    assert result.stderr == ""


def test_json_has_the_promised_keys_and_real_values() -> None:
    result = run_decide("--base", BASE, "--suspect", SLOWER, "--better", "higher",
                        "--reported", "-28.3", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert {"outcome", "measured_change_percent", "ci_low", "ci_high", "p_value", "runs_base",
            "runs_suspect", "reason"} <= set(record)
    assert record["outcome"] == "confirmed"
    assert record["measured_change_percent"] == pytest.approx(-24.3, abs=0.05)
    assert record["ci_low"] < record["measured_change_percent"] < record["ci_high"] < 0
    assert record["p_value"] == pytest.approx(4 / math.comb(20, 10))
    assert (record["runs_base"], record["runs_suspect"]) == (10, 10)
    assert record["reported_change_percent"] == -28.3


def test_json_has_no_nan_or_infinity_for_an_unbounded_interval() -> None:
    result = run_decide("--base", "3.1,3.0,3.05", "--suspect", "2.4,2.5,2.3", "--better", "higher", "--json")
    assert result.returncode == 0, result.stderr
    assert "NaN" not in result.stdout and "Infinity" not in result.stdout
    record = json.loads(result.stdout)
    assert record["outcome"] == "inconclusive"
    assert record["ci_low"] is None and record["ci_high"] is None
    assert "smallest p is 0.2" in record["reason"]


def test_a_a_numbers_with_a_large_report_are_not_reproduced() -> None:
    result = run_decide("--base", BASE, "--suspect", ",".join(reversed(BASE.split(","))),
                        "--better", "higher", "--reported", "-28.3", "--json")
    record = json.loads(result.stdout)
    assert record["outcome"] == "not-reproduced"
    assert record["measured_change_percent"] == 0.0


@pytest.mark.parametrize("args, message", [
    # A word among the numbers: the option and the bad value are named.
    (("--base", "3.1,abc", "--suspect", "2.4,2.5"), "triage decide: --base: 'abc' (value 2) is not a number"),
    # An empty item in the middle.
    (("--base", "3.1,3.0", "--suspect", "2.4,,2.5"), "triage decide: --suspect: value 2 is empty in '2.4,,2.5'"),
    # A bad reported change.
    (("--base", "3.1,3.0", "--suspect", "2.4,2.5", "--reported", "lots"),
     "triage decide: --reported: 'lots' is not a number"),
    # A negative floor.
    (("--base", "3.1,3.0", "--suspect", "2.4,2.5", "--floor", "-1"),
     "triage decide: --floor: '-1' is not a percentage >= 0"),
])
def test_bad_numbers_are_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    result = run_decide(*args, "--better", "higher")
    assert result.returncode == 2
    assert result.stderr.strip() == message
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_nan_sample_is_an_error_verdict_with_exit_1() -> None:
    result = run_decide("--base", "3.1,3.0,3.2", "--suspect", "2.4,nan,2.5", "--better", "higher", "--json")
    assert result.returncode == 1
    record = json.loads(result.stdout)
    assert record["outcome"] == "error"
    assert record["reason"] == "suspect run 2 of 3 is nan: a failed run is not a measurement"


def test_pasted_minus_sign_and_percent_are_read() -> None:
    result = run_decide("--base", BASE, "--suspect", SLOWER, "--better", "higher",
                        "--reported", "\u221228.3%", "--json")
    assert json.loads(result.stdout)["reported_change_percent"] == -28.3


def test_floor_comes_from_the_metric_rule_unless_given() -> None:
    # -0.8% with tiny noise: significant, and under a 1.5% floor.
    base = "100.02,99.98,100.01,99.99,100.03,99.97,100.0,100.02,99.98,100.01"
    suspect = ",".join(f"{float(value) * 0.992:.4f}" for value in reversed(base.split(",")))
    by_rule = json.loads(run_decide("--base", base, "--suspect", suspect, "--better", "higher",
                                    "--metric", "aim7.jobs-per-min", "--json").stdout)
    assert by_rule["floor_percent"] == 1.5
    assert by_rule["outcome"] == "not-reproduced"
    given = json.loads(run_decide("--base", base, "--suspect", suspect, "--better", "higher",
                                  "--floor", "0.5", "--json").stdout)
    assert given["floor_percent"] == 0.5
    assert given["outcome"] == "confirmed"


def test_bad_rules_file_is_one_line_naming_file_and_entry(tmp_path: Path) -> None:
    rules = tmp_path / "floors.toml"
    rules.write_text('[[floor]]\npattern = "*.iops"\nfloor_percent = 1\n\n'
                     '[[floor]]\npattern = "*.bw"\nfloor_percent = "two"\n')
    result = run_decide("--base", BASE, "--suspect", SLOWER, "--better", "higher", "--rules", str(rules))
    assert result.returncode == 1
    assert result.stderr.strip() == (f"triage decide: {rules}:5: [[floor]] entry 2 (pattern '*.bw'): "
                                     "floor_percent must be a number above 0 and at most 50, not 'two'")


# The floors file itself.

def test_shipped_floors_file_loads_and_matches_corpus_metric_names() -> None:
    floors = load_floors(RULES_PATH)
    assert floors.default_floor_percent == DEFAULT_FLOOR_PERCENT == 1.5
    assert floors.floor_for("aim7.jobs-per-min") == 1.5
    assert floors.floor_for("stress-ng.fiemap.ops_per_sec") == 1.5
    assert floors.floor_for("fio.write_clat_stddev") == 5.0  # specific latency rule before the mean rule
    assert floors.floor_for("fio.write_clat_mean_us") == 2.0
    assert floors.floor_for("no.such.metric") == 1.5
    assert floors.floor_for(None) == 1.5


@pytest.mark.parametrize("text, message", [
    # Not TOML at all: tomllib's position is kept.
    ("[[floor]\n", "rules/f.toml:1: not valid TOML: "),
    # An unknown top-level key.
    ("floors = 1\n", "rules/f.toml:1: unknown key(s) floors (expected default_floor_percent, floor)"),
    # A misspelt key inside an entry.
    ('[[floor]]\npattern = "a"\nfloor_pct = 1\n',
     "rules/f.toml:1: [[floor]] entry 1 (pattern 'a'): unknown key(s) floor_pct"),
    # A missing floor.
    ('[[floor]]\npattern = "a"\n', "rules/f.toml:1: [[floor]] entry 1 (pattern 'a'): floor_percent is missing"),
    # Zero and over-large floors.
    ('[[floor]]\npattern = "a"\nfloor_percent = 0\n', "must be a number above 0 and at most 50, not 0"),
    ('[[floor]]\npattern = "a"\nfloor_percent = 80.0\n', "must be a number above 0 and at most 50, not 80.0"),
    # A boolean is no number.
    ('[[floor]]\npattern = "a"\nfloor_percent = true\n',
     "floor_percent must be a number above 0 and at most 50, not True"),
    # An empty pattern.
    ('[[floor]]\npattern = " "\nfloor_percent = 1\n', "pattern must be a non-empty string"),
    # The same pattern twice: the second would never match.
    ('[[floor]]\npattern = "a"\nfloor_percent = 1\n[[floor]]\npattern = "a"\nfloor_percent = 2\n',
     "rules/f.toml:4: [[floor]] entry 2 (pattern 'a'): pattern 'a' repeats entry 1"),
    # A bad default.
    ('default_floor_percent = "1.5"\n', "rules/f.toml:1: default_floor_percent must be a number above 0"),
])
def test_bad_floor_entries_raise_rules_error(text: str, message: str) -> None:
    with pytest.raises(RulesError) as caught:
        parse_floors(text, "rules/f.toml")
    assert message in str(caught.value)


def test_first_matching_pattern_wins() -> None:
    floors = parse_floors('default_floor_percent = 2\n[[floor]]\npattern = "fio.read_*"\nfloor_percent = 4\n'
                          '[[floor]]\npattern = "fio.*"\nfloor_percent = 3\n', "f.toml")
    assert [floors.floor_for(name) for name in ("fio.read_iops", "fio.write_iops", "aim7.x")] == [4, 3, 2]
