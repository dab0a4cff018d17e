"""`triage parse` end to end: JSON Lines, summaries, and clear one-line errors on bad input."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS, PROJECT, require_corpus


def run_triage(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], input=stdin,
                          capture_output=True, cwd=PROJECT, timeout=120)


def test_json_lines_for_an_lkp_report() -> None:
    require_corpus()
    result = run_triage("parse", "--json", str(CORPUS / "lkp-perf_xfs-fsmark-5.7pct.eml"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["schema"] == 1
    assert record["message_id"] == "202305090905.aff4e0e6-oliver.sang@intel.com"
    assert record["kind"] == "lkp-regression"
    assert record["headline"] == {"metric": "fsmark.files_per_sec", "change_percent": -5.7,
                                  "direction": "regression"}
    culprit = [c for c in record["commits"] if c["role"] == "culprit"]
    assert culprit[0]["sha"] == "2edf06a50f5bbe664283f3c55c480fc013221d70"
    assert record["test_machine"]["tbox_group"] == "lkp-csl-2sp3"
    assert record["metrics"][0] == {"name": "fsmark.files_per_sec", "base": 14349.0,
                                    "base_stddev_percent": None, "change": -5.7,
                                    "change_unit": "percent", "head": 13527.0,
                                    "head_stddev_percent": None, "quoted": False, "test": None}


def test_mbox_gz_gives_one_record_per_message(tmp_path: Path) -> None:
    require_corpus()
    names = ["lkp-perf_xfs-fsmark-5.7pct.eml", "reply_xfs-fsmark-5.7pct-reply.eml"]
    mbox = b"".join(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + (CORPUS / name).read_bytes()
                    + b"\n" for name in names)
    path = tmp_path / "thread.mbox.gz"
    path.write_bytes(gzip.compress(mbox))
    result = run_triage("parse", "--json", str(path))
    assert result.returncode == 0, result.stderr
    kinds = [json.loads(line)["kind"] for line in result.stdout.decode().splitlines()]
    assert kinds == ["lkp-regression", "reply"]


def test_stdin_and_summary() -> None:
    require_corpus()
    raw = (CORPUS / "lkp-perf_xfs-fsmark-5.7pct.eml").read_bytes()
    result = run_triage("parse", "-", stdin=raw)
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert "headline: fsmark.files_per_sec -5.7% regression" in text
    assert "lkp-csl-2sp3" in text


# Each bad input: the error names the input and the problem, on one line, exit non-zero.
BAD_INPUTS = [
    ("empty", b"", "empty input"),
    ("noise", bytes(range(256)) * 64, "binary data"),
]


@pytest.mark.parametrize("name,content,problem", BAD_INPUTS)
def test_bad_input_gives_one_line_error(tmp_path: Path, name: str, content: bytes, problem: str) -> None:
    path = tmp_path / f"{name}.eml"
    path.write_bytes(content)
    result = run_triage("parse", str(path))
    assert result.returncode == 1
    error = result.stderr.decode().strip()
    assert len(error.splitlines()) == 1
    assert str(path) in error and problem in error
    assert "Traceback" not in error


@pytest.mark.parametrize("name,content,problem", BAD_INPUTS)
def test_bad_input_on_stdin_names_stdin(name: str, content: bytes, problem: str) -> None:
    result = run_triage("parse", "-", stdin=content)
    assert result.returncode == 1
    error = result.stderr.decode().strip()
    assert len(error.splitlines()) == 1 and "Traceback" not in error
    assert error.startswith("triage parse: <stdin>") and problem in error
    assert result.stdout == b""


def test_missing_path_and_directory(tmp_path: Path) -> None:
    missing = run_triage("parse", str(tmp_path / "nope.eml"))
    assert missing.returncode == 1
    assert "nope.eml: no such file" in missing.stderr.decode()
    directory = run_triage("parse", str(tmp_path))
    assert directory.returncode == 1
    assert "is a directory" in directory.stderr.decode()


def test_oversized_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.eml"
    with open(path, "wb") as handle:
        handle.truncate(200 * 1024 * 1024)  # sparse: 200 MB without writing them
    result = run_triage("parse", str(path))
    assert result.returncode == 1
    assert "huge.eml: file is 200 MiB" in result.stderr.decode()


def test_truncated_multipart_is_a_record_with_a_defect(tmp_path: Path) -> None:
    require_corpus()
    raw = (CORPUS / "lkp-perf_xfs-fsmark-5.7pct.eml").read_bytes()
    path = tmp_path / "truncated.eml"
    path.write_bytes(raw[: len(raw) // 3])
    result = run_triage("parse", "--json", str(path))
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert any("truncated multipart" in defect for defect in record["defects"])
    assert record["kind"] == "lkp-regression"


def test_undecodable_charset_is_read_with_a_defect(tmp_path: Path) -> None:
    path = tmp_path / "charset.eml"
    path.write_bytes(b"From: a@b.c\nSubject: test\nMessage-ID: <x@y>\n"
                     b"Content-Type: text/plain; charset=x-no-such-charset\n\ncaf\xe9 \xb1 3%\n")
    result = run_triage("parse", "--json", str(path))
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["defects"], record
    assert record["message_id"] == "x@y"
