"""The five seeds (../shared/corpus/seeds/, their README says what each must give), read as a
user runs them: `triage parse --json FILE`, one record per message, in page order."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT, SHARED

SEEDS = SHARED / "corpus" / "seeds"


def seed(prefix: str) -> Path:
    if not SEEDS.is_dir():
        pytest.skip(f"the shared seeds are absent: {SEEDS} not found (tests read them from ../shared)")
    found = sorted(SEEDS.glob(f"{prefix}_*.txt"))
    if not found:
        pytest.skip(f"no seed {prefix}_*.txt in {SEEDS}")
    return found[0]


def parsed(path: Path) -> list[dict]:
    result = subprocess.run([sys.executable, "-m", "triagebot.cli", "parse", "--json", "--jobs", "1", str(path)],
                            capture_output=True, text=True, cwd=PROJECT, stdin=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(PROJECT)})
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_seed_000_openwall_human_report_with_every_field() -> None:
    record, = parsed(seed("000"))
    assert record["kind"] == "human-report"
    assert record["message_id"] == "YaUH5GFFoLiS4/3/@localhost.localdomain"
    assert [(commit["sha"], commit["role"]) for commit in record["commits"]] == [("7fd7a9e0caba", "culprit")]
    fio = [item["command"] for item in record["reproducers"] if item["kind"] == "fio"]
    # the wrapped fio lines joined into one command, through its last option
    assert len(fio) == 1 and fio[0].startswith("fio --name emptyfiles500k --create_on_open=1")
    assert "\\" not in fio[0] and fio[0].endswith("--directory <mount point>")
    assert any(item["kind"] == "fsperf" for item in record["reproducers"])
    assert record["kernel_config"]["CONFIG_NO_HZ_FULL"] == "y" and record["kernel_config"]["CONFIG_HZ_1000"] == "y"
    machine = record["test_machine"]
    assert machine["threads"] == 12 and machine["memory_gb"] == 128 and machine["sockets"] == 2
    # "a 5-10% increase in the latency time": the middle of the range, worse for a time
    assert record["headline"] == {"metric": "latency", "change_percent": 7.5, "direction": "regression"}


def test_seed_001_whole_thread_page_gives_five_records_in_page_order() -> None:
    records = parsed(seed("001"))
    assert [(item["kind"], item["from"]) for item in records] == [
        ("lkp-regression", "kernel test robot"), ("reply", "Zhang Yi"), ("reply", "Oliver Sang"),
        ("reply", "Jan Kara"), ("reply", "Zhang Yi")]
    report = records[0]
    assert report["commits"][0]["sha"] == "6a3afb6ac6dfab158ebdd4b87941178f58c8939f"
    assert report["commits"][0]["role"] == "culprit"
    assert report["testcase"] == "fileio" and len(report["metrics"]) == 13
    assert report["headline"] == {"metric": "fileio.latency_95th_ms", "change_percent": 92.5,
                                  "direction": "regression"}
    assert report["test_machine"]["threads"] == 128
    zhang, oliver, jan, last = records[1:]
    assert zhang["stance"] == "not-reproduced"
    sysbench = [item for item in zhang["reproducers"] if item["kind"] == "sysbench"]
    assert sysbench and not any(item["quoted"] for item in sysbench)  # his own command lines
    # "we double confirmed the ... data is stable"; "we cannot guarantee ... another test machine"
    # is a hedge, not a failure to reproduce
    assert oliver["stance"] == "reproduced"
    assert "double confirmed" in oliver["stance_evidence"]
    assert jan["stance"] == "none" and last["stance"] == "none"
    # each reply answers a message of the page
    ids = [item["message_id"] for item in records]
    assert all(item["in_reply_to"] in ids for item in records[1:])


def test_seed_002_stance_from_the_replys_own_mean_and_sigma() -> None:
    record, = parsed(seed("002"))
    assert record["kind"] == "reply"
    assert record["stance"] == "not-reproduced"
    evidence = record["stance_evidence"]
    # decided from its own 954 against 932 (mean of 5, σ), not the quoted 990/992 pair
    assert "954" in evidence and "932" in evidence and "990" not in evidence


def test_seed_003_reply_without_message_id() -> None:
    record, = parsed(seed("003"))
    assert record["kind"] == "reply"
    assert record["message_id"] is None or record["message_id"].endswith(".invalid")
    assert record["stance"] == "none"


def test_seed_004_single_lore_reply_keeps_the_quoted_lkp_facts() -> None:
    record, = parsed(seed("004"))
    assert record["kind"] == "reply" and record["quoted"] is True
    roles = {commit["role"] for commit in record["commits"]}
    assert {"culprit", "base"} <= roles
    assert len(record["metrics"]) == 40 and all(row["quoted"] for row in record["metrics"])
    assert record["stance"] == "none"
