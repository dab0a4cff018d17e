"""The blind set's labels (fixtures/labels/blind) and the reading side of bench/blind.py.

The labels are checked for shape only: they are golden data written before the parser read the
messages, so no test here compares them with the parser. The bench's mirror reader runs against a
throw-away git mirror holding messages written for this test.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.support.bench import load_bench

PROJECT = Path(__file__).resolve().parents[1]
BLIND = PROJECT / "fixtures" / "labels" / "blind"
STANCES = {"reproduced", "not-reproduced", "none"}
KINDS = {"human-report", "human-bug", "complaint", "other", "lkp-regression", "lkp-improvement",
         "lkp-functional", "syzbot", "bot"}


def _bench():
    return load_bench("blind")


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (BLIND / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_labels_have_the_documented_shape() -> None:
    replies, reports = _lines("replies.jsonl"), _lines("reports.jsonl")
    assert len(replies) >= 150 and len(reports) >= 60
    sources = [label["source"] for label in replies + reports]
    assert len(set(sources)) == len(sources), "a message is labelled twice"
    for label in replies + reports:
        assert label["note"] and label["message_id"] and isinstance(label["year"], int)
        assert label["list"] in {"linux-scsi", "dm-devel", "linux-f2fs-devel", "linux-xfs"}
        assert not (label["list"] == "linux-xfs" and label["year"] not in (2020, 2021))
    assert {label["stance"] for label in replies} <= STANCES
    stances = Counter(label["stance"] for label in replies)
    assert stances["reproduced"] >= 25 and stances["not-reproduced"] >= 25
    for label in reports:
        assert label["kind"] in KINDS
        assert label["taken_on"] == (label["kind"] in ("human-report", "lkp-regression"))
        if label["kind"] == "human-report":
            assert {"culprit", "headline", "machine"} <= set(label)
            for item in label.get("reproducers", []):
                assert item["kind"] and item["command"]


def _git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd,
                   check=True, capture_output=True)


_REPORT = b"""From: Ann Tester <ann@example.org>
Subject: dd to a thin volume slower after upgrading
Message-ID: <blind-test-report@example.org>
Date: Mon, 1 Jan 2024 10:00:00 +0000

Writing with dd to a thin volume gives 40 MB/s on the new kernel and 80 MB/s on the old one.
"""

_REPLY = b"""From: Bob Dev <bob@example.org>
Subject: Re: dd to a thin volume slower after upgrading
Message-ID: <blind-test-reply@example.org>
In-Reply-To: <blind-test-report@example.org>
Date: Mon, 1 Jan 2024 12:00:00 +0000

> Writing with dd to a thin volume gives 40 MB/s on the new kernel.

Thanks, I will look at the thin target code.
"""


@pytest.fixture
def mirror(tmp_path: Path) -> tuple[Path, list[str]]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the bench reads mirrors with git cat-file")
    work = tmp_path / "work"
    work.mkdir()
    _git("init", "-q", str(work))
    commits = []
    for raw in (_REPORT, _REPLY):
        (work / "m").write_bytes(raw)
        _git("add", "m", cwd=work)
        _git("commit", "-q", "-m", "message", cwd=work)
        commits.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, check=True, capture_output=True,
                                      text=True).stdout.strip())
    mirrors = tmp_path / "mirrors"
    _git("clone", "-q", "--bare", str(work), str(mirrors / "owner+list.0" / "repo"))
    return mirrors, commits


def _labels(directory: Path, commits: list[str], reply_id: str = "blind-test-reply@example.org") -> None:
    directory.mkdir()
    (directory / "reports.jsonl").write_text(json.dumps({
        "source": f"owner/list.0@{commits[0]}", "list": "x", "year": 2024,
        "message_id": "blind-test-report@example.org", "kind": "human-report", "taken_on": True,
        "culprit": None, "headline": {"metric": "MB/s", "change_percent": -50.0, "direction": "regression"},
        "machine": None, "note": "n"}) + "\n")
    (directory / "replies.jsonl").write_text(json.dumps({
        "source": f"owner/list.0@{commits[1]}", "list": "x", "year": 2024, "message_id": reply_id,
        "kind": "reply", "stance": "none", "note": "n"}) + "\n"
        + json.dumps({"source": f"other/absent.0@{'0' * 40}", "list": "x", "year": 2024,
                      "message_id": "gone@example.org", "kind": "reply", "stance": "none", "note": "n"}) + "\n")


def test_messages_are_read_from_their_mirror_and_absent_mirrors_are_skipped(mirror, tmp_path: Path) -> None:
    mirrors, commits = mirror
    bench = _bench()
    _labels(tmp_path / "labels", commits)
    replies, reports = bench.load_labels(tmp_path / "labels")
    raw, notes = bench.read_raw(replies + reports, mirrors)
    assert raw[reports[0]["_id"]] == _REPORT and raw[replies[0]["_id"]] == _REPLY
    assert notes == [f"skipped: mirror other/absent.0 not found under {mirrors} (1 labels)"]
    result = bench.measure(replies, reports, raw)
    assert result["replies_measured"] == 1 and result["reports_measured"] == 1
    assert result["stance"]["total"] == 1 and not result["id_mismatch"]
    assert set(result["fields"]) == {"culprit", "headline", "machine", "reproducers"}
    assert result["fields"]["culprit"]["total"] == 1 and result["fields"]["reproducers"]["total"] == 0


def test_a_label_naming_another_message_is_not_measured(mirror, tmp_path: Path) -> None:
    mirrors, commits = mirror
    bench = _bench()
    _labels(tmp_path / "labels", commits, reply_id="someone-else@example.org")
    replies, reports = bench.load_labels(tmp_path / "labels")
    raw, _ = bench.read_raw(replies + reports, mirrors)
    result = bench.measure(replies, reports, raw)
    assert result["replies_measured"] == 0
    assert result["id_mismatch"] == [f"{replies[0]['_id']}: the mirror's message is "
                                     "'blind-test-reply@example.org', the label says 'someone-else@example.org'"]


def test_a_bad_label_file_is_refused_with_its_line(tmp_path: Path) -> None:
    bench = _bench()
    (tmp_path / "replies.jsonl").write_text('{"source": "not a source"}\n')
    (tmp_path / "reports.jsonl").write_text("")
    with pytest.raises(bench.LabelError, match=r"replies.jsonl:1: source must be"):
        bench.load_labels(tmp_path)
    assert bench.main(["--labels", str(tmp_path / "nowhere")]) == 2


def test_field_comparisons() -> None:
    bench = _bench()
    assert bench._same_sha("ab23a77687", "ab23a77687f0") and not bench._same_sha("ab23a77687", None)
    assert bench._same_sha(None, None) and not bench._same_sha("ab23a77687", "ab23")
    stated = {"metric": "IOPS", "change_percent": -3.5, "direction": "regression"}
    assert bench._same_headline(stated, {"metric": "iops", "change_percent": -3.45, "direction": "regression"})
    assert not bench._same_headline(stated, {"metric": "IOPS", "change_percent": 3.5, "direction": "improvement"})
    assert bench._same_machine({"cpu_model": "Xeon Gold 6130", "threads": 64},
                               {"cpu_model": "Intel Xeon  Gold 6130 @ 2.10GHz", "threads": 64, "sockets": None,
                                "memory_gb": None})
    assert not bench._same_machine(None, {"cpu_model": None, "threads": 8, "sockets": None, "memory_gb": None})


RESERVED_LISTS = {"linux-btrfs", "linux-nfs", "linux-pm", "linux-raid", "io-uring", "cgroups", "linux-block",
                  "linux-scsi", "dm-devel", "linux-f2fs-devel", "linux-xfs"}


def test_the_development_set_is_reports_only_from_lists_not_kept_for_measurement() -> None:
    """fixtures/labels/dev: candidate reports the rules are written against (the blind set is not)."""
    dev = PROJECT / "fixtures" / "labels" / "dev"
    bench = _bench()
    replies, reports = bench.load_labels(dev)  # no replies.jsonl: a set of candidate reports only
    assert replies == [] and len(reports) >= 60
    blind_sources = {label["source"] for label in _lines("reports.jsonl") + _lines("replies.jsonl")}
    for label in reports:
        assert label["list"] not in RESERVED_LISTS and label["source"] not in blind_sources
        assert label["kind"] in KINDS | {"human-perf-complaint", "reply"}
        assert label["taken_on"] == (label["kind"] in ("human-report", "lkp-regression"))
    kinds = Counter(label["kind"] for label in reports)
    assert kinds["human-report"] >= 5 and kinds["human-perf-complaint"] >= 5 and kinds["bot"] >= 5
