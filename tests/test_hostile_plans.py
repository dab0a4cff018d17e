"""A parameter block or a number that does not read is refused, never planned in part (issue 21,
findings 6 and 7).

Each fixture under fixtures/lkp-hostile/ is one fio-basic report whose parameter block was
changed in one line; `parameters-whole.eml` is the same report as sent, which plans `--rw=write`.
Before: a line that did not read ended the block there (fio planned without `--rw`, so reading
while the report measured write_iops), a key given twice took the last value, and a 400-digit
size or duration raised OverflowError; a 5,000-digit number in prose became `Infinity` in
`parse --json`.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, PROJECT
from triagebot.parse.report import parse_message
from triagebot.records.report import Report, Source, report_to_json
from triagebot.reproduce.plan import Plan, Refusal, plan_command, plan_report
from triagebot.rules.templates import format_duration, load_templates, parse_duration, parse_size

HOSTILE = FIXTURES / "lkp-hostile"
NINES = "9" * 400


@pytest.fixture(scope="module")
def templates():
    return load_templates(PROJECT / "rules")


def report(name: str) -> Report:
    return parse_message((HOSTILE / f"{name}.eml").read_bytes(), Source("eml"))


def test_the_block_as_sent_plans_the_write_it_measured(templates):
    plan = plan_report(report("parameters-whole"), templates)
    assert isinstance(plan, Plan) and "--rw=write" in plan.argv


# name -> (body line, the line as shown, what is wrong)
UNREAD = {
    # `rw` + U+200B: the key does not read, and the lines after it were lost with it
    "parameters-zero-width-key": (20, "rw\\u200b: write", "does not read as `key: value`"),
    # a YAML merge key is no LKP parameter
    "parameters-merge-key": (21, "<<: {ioengine: exec}", "does not read as `key: value`"),
    # the second rw is neither taken (last wins) nor dropped in silence
    "parameters-duplicate-key": (21, "rw: randwrite", "gives rw a second time (first `write`)"),
    # a right-to-left override at the end of a value
    "parameters-bidi-value": (22, "ioengine: sync\\u202e", "does not read as `key: value`"),
}


@pytest.mark.parametrize("name", sorted(UNREAD))
def test_a_block_that_does_not_read_whole_refuses_the_plan_naming_the_line(templates, name):
    line, shown, problem = UNREAD[name]
    parsed = report(name)
    assert f"LKP parameters: body line {line} `{shown}`, {problem}" in parsed.defects
    refusal = plan_report(parsed, templates)
    assert isinstance(refusal, Refusal)
    assert refusal.reason == f"the LKP parameter block does not read whole: body line {line} `{shown}`, {problem}"


def test_the_lines_after_an_unread_one_are_still_read():
    # the block goes on past the line that does not read: what the report ran with is all shown
    assert dict(report("parameters-zero-width-key").parameters)["test_size"] == "1G"
    assert dict(report("parameters-duplicate-key").parameters)["rw"] == "write"


@pytest.mark.parametrize(("name", "reason"), [
    ("parameters-huge-size", "LKP parameter test_size=999999999999999999999999… (401 characters) is past the "
                             "largest size read (1 EiB)"),
    ("parameters-huge-runtime", "LKP parameter runtime=999999999999999999999999… (401 characters) is past the "
                                "longest duration read (ten years)"),
], ids=["test_size", "runtime"])
def test_a_400_digit_lkp_size_or_duration_is_refused_with_its_reason(templates, name, reason):
    refusal = plan_report(report(name), templates)
    assert isinstance(refusal, Refusal) and refusal.reason == reason


@pytest.mark.parametrize(("command", "reason"), [
    (f"fio --name=w --rw=write --bs=4k --size={NINES}G --runtime=60s",
     "fio option --size=999999999999999999999999… (401 characters) is past the largest size read (1 EiB)"),
    (f"fio --name=w --rw=write --bs=4k --size=1G --runtime={NINES}s",
     "fio option --runtime=999999999999999999999999… (401 characters) is past the longest duration read (ten years)"),
    (f"stress-ng --cpu 4 --timeout {NINES}",
     "stress-ng option --timeout=999999999999999999999999… (400 characters) is past the longest duration read "
     "(ten years)"),
], ids=["fio --size", "fio --runtime", "stress-ng --timeout"])
def test_a_400_digit_size_or_duration_in_a_pasted_command_is_refused(templates, command, reason):
    refusal = plan_command(command, templates)
    assert isinstance(refusal, Refusal) and refusal.reason == reason


def test_values_past_the_bounds_raise_their_own_error():
    from triagebot.rules.templates import MAX_DURATION_SECONDS, MAX_SIZE_BYTES, ValueOutOfRange
    # one table per reader: at the bound is read, past it (or infinite) is refused
    assert parse_size("1024P") == MAX_SIZE_BYTES
    assert parse_duration(f"{MAX_DURATION_SECONDS}s") == MAX_DURATION_SECONDS
    for text in ("1025P", f"{NINES}", f"{NINES}.5k", "9" * 5000):
        with pytest.raises(ValueOutOfRange, match="largest size"):
            parse_size(text)
    for text in (f"{MAX_DURATION_SECONDS + 1}", f"{NINES}h", "9" * 5000):
        with pytest.raises(ValueOutOfRange, match="longest duration"):
            parse_duration(text)
    for seconds in (float("inf"), float("nan"), 1e300):
        with pytest.raises(ValueOutOfRange):
            format_duration(seconds)


BIG_NUMBER_MAIL = ("From: A Tester <tester@example.org>\nSubject: Re: ext4: slower buffered writes\n"
                   "Message-ID: <bignum@example.org>\nIn-Reply-To: <report@example.org>\n\n"
                   "I can reproduce it here: dd went from 400 MB/s to " + "9" * 5000 + " MB/s after the commit,\n"
                   "and fio from 31200 IOPS to 25460 IOPS.\n").encode()


def test_a_5000_digit_number_in_prose_is_left_out_and_the_json_stays_json(tmp_path):
    parsed = parse_message(BIG_NUMBER_MAIL, Source("eml"))
    assert "1 number(s) too large to read left out" in parsed.defects
    assert [number.text for number in parsed.prose_numbers] == ["400 MB/s", "31200 IOPS", "25460 IOPS"]
    json.dumps(report_to_json(parsed), allow_nan=False)  # raises on inf / nan
    path = tmp_path / "bignum.eml"
    path.write_bytes(BIG_NUMBER_MAIL)
    done = subprocess.run([sys.executable, "-m", "triagebot.cli", "parse", "--json", str(path)], cwd=PROJECT,
                          capture_output=True, text=True, env={"PYTHONPATH": str(PROJECT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    record = json.loads(done.stdout, parse_constant=refuse)
    assert record["message_id"] == "bignum@example.org"
