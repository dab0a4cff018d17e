"""YAML through PyYAML (job.yaml, stress-ng --yaml): text values as the planner expects them,
aliases, oversized and overly nested documents refused with a one-line reason."""
from __future__ import annotations

from pathlib import Path

import pytest

from triagebot.records.report import Report, Reproducer, Source
from triagebot.reproduce.outputs import OutputError, parse_output
from triagebot.reproduce.plan import JobError, Refusal, flatten_job, plan_report, read_job
from triagebot.reproduce.yaml_text import (
    MAX_YAML_CHARS,
    MAX_YAML_DEPTH,
    YamlRefused,
    load_documents,
)
from triagebot.rules.templates import load_templates

TEMPLATES = load_templates(Path(__file__).resolve().parent.parent / "rules")

# A "billion laughs": nine levels of nine aliases, 9**9 strings if expanded.
BOMB = "testcase: fio-basic\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + level)}: &{chr(98 + level)} [" + ", ".join([f"*{chr(97 + level)}"] * 9) + "]\n"
    for level in range(8))


# --- LKP job.yaml quirks: YAML 1.1 would turn these into bool, int, float or None ----------------

@pytest.mark.parametrize(("line", "key", "value"), [
    ("size: 1t", "size", "1t"),
    ("memory: 8G", "memory", "8G"),
    ("cpufreq_governor: performance", "cpufreq_governor", "performance"),
    ("sc_pid_max.vm: 4194304", "sc_pid_max.vm", "4194304"),        # a key with a dot
    ("kconfig: x86_64-rhel-8.3", "kconfig", "x86_64-rhel-8.3"),
    ("url: http://example.org:8080/x", "url", "http://example.org:8080/x"),  # `:` in a value
    ("transparent_hugepage: yes", "transparent_hugepage", "yes"),  # bool in YAML 1.1
    ("thp_enabled: on", "thp_enabled", "on"),
    ("boot_once: true", "boot_once", "true"),
    ("no_setup: no", "no_setup", "no"),
    ("nr_cpu: 08", "nr_cpu", "08"),                               # octal in YAML 1.1
    ("ucode: 0xec", "ucode", "0xec"),                             # hex
    ("runtime: 1e3", "runtime", "1e3"),                           # float
    ("period: 1:30", "period", "1:30"),                           # sexagesimal in YAML 1.1
    ("blank: ~", "blank", "~"),
    ("nothing: null", "nothing", "null"),
    ("ratio: 0.5", "ratio", "0.5"),
])
def test_job_values_stay_text(line: str, key: str, value: str) -> None:
    document = read_job(f"suite: fio-basic\ntestcase: fio-basic\n{line}\n")
    assert document[key] == value and isinstance(document[key], str)
    assert flatten_job(document)[key] == value


def test_an_empty_value_is_none_and_a_quoted_empty_one_is_text() -> None:
    document = read_job("testcase: fio-basic\nfio:\nlabel: ''\n")
    assert document["fio"] is None and document["label"] == ""


# --- refused ------------------------------------------------------------------------------------

def test_an_alias_bomb_is_refused_at_its_first_alias() -> None:
    refused = r"^job.yaml: line 3: a YAML alias \(\*a\) \(aliases are refused\)$"
    with pytest.raises(JobError, match=refused):
        read_job(BOMB)


def test_a_report_whose_job_yaml_is_an_alias_bomb_is_refused_with_the_reason() -> None:
    report = Report(message_id="bomb@example", in_reply_to=None, subject="s", from_="f", date=None,
                    source=Source("text"), kind="lkp-regression", testcase="fio-basic",
                    reproducers=(Reproducer(kind="lkp-job", content=BOMB),))
    refusal = plan_report(report, TEMPLATES)
    assert isinstance(refusal, Refusal) and refusal.source == "job.yaml"
    assert refusal.reason.startswith("job.yaml: line 3: a YAML alias")


def test_yaml_over_the_cap_is_refused_before_it_is_parsed() -> None:
    with pytest.raises(YamlRefused, match=f"over the {MAX_YAML_CHARS} this reader reads"):
        load_documents("a: b\n" + "#" * MAX_YAML_CHARS)


def test_deep_nesting_is_refused() -> None:
    with pytest.raises(YamlRefused, match=f"nested more than {MAX_YAML_DEPTH} deep"):
        load_documents("[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1))


def test_a_job_that_is_not_yaml_says_where() -> None:
    with pytest.raises(JobError, match=r"^job.yaml: line 3: not YAML \("):
        read_job("testcase: fio-basic\nfs: ext4\n  bs: 4k\n")


def test_a_job_yaml_with_a_control_character_refuses_the_plan() -> None:
    # issue 21 (found by bench/fuzz.py): PyYAML checks characters when its reader is built, and
    # that ReaderError escaped the planner as a traceback
    report = Report(message_id="control@example", in_reply_to=None, subject="s", from_="f", date=None,
                    source=Source("text"), kind="lkp-regression", testcase="fio-basic",
                    reproducers=(Reproducer(kind="lkp-job", content="testcase: fio-basic\nrw: write\x1a\n"),))
    refusal = plan_report(report, TEMPLATES)
    assert isinstance(refusal, Refusal) and refusal.source == "job.yaml"
    assert refusal.reason.startswith("job.yaml: not YAML (unacceptable character #x001a")


# --- stress-ng --yaml ---------------------------------------------------------------------------

def test_stress_ng_yaml_with_an_alias_is_an_output_error() -> None:
    document = b"metrics:\n    - stressor: &s cpu\n      bogo-ops: *s\n"
    with pytest.raises(OutputError, match="m.yaml: line 3: a YAML alias"):
        parse_output("stress-ng-yaml", b"", {"m.yaml": document})


def test_stress_ng_values_stay_text_until_read_as_numbers() -> None:
    document = (b"metrics:\n    - stressor: 'on'\n      bogo-ops: 010\n"
                b"      bogo-ops-per-second-real-time: 1e3\n")
    assert parse_output("stress-ng-yaml", b"", {"m.yaml": document}) == {
        "stress-ng.on.ops": 10.0, "stress-ng.on.ops_per_sec": 1000.0}
