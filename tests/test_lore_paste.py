"""Text pasted from a lore thread page: one record per message, threaded, with stance; the
fallback key of dateless messages never merges two texts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS, FIXTURES, PROJECT, require_corpus
from triagebot.ingest.inputs import iter_inputs
from triagebot.parse.identity import fallback_key
from triagebot.parse.lore_paste import as_mail, split_thread_paste
from triagebot.parse.report import parse_message
from triagebot.parse.thread import build_threads, message_key
from triagebot.records.report import Source, report_from_json
from triagebot.store.sqlite import SqliteStore

PASTES = FIXTURES / "paste"
THREAD = PASTES / "lore-thread-ext4-fsmark.txt"
REPLY = PASTES / "lore-reply-quoting-lkp-xfs.txt"
SUBJECT = "[linus:master] [ext4] 3e8b2ad5c1: fsmark.files_per_sec -11.2% regression"


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          cwd=PROJECT, env={**os.environ, "PYTHONPATH": str(PROJECT)}, stdin=subprocess.DEVNULL)


def parsed_json(path: Path) -> list[dict]:
    result = triage("parse", "--json", "--jobs", "1", str(path))
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_a_thread_page_paste_is_cut_into_its_messages() -> None:
    messages = split_thread_paste(THREAD.read_text())
    assert messages is not None
    assert [(item.name, item.address) for item in messages] == [
        ("kernel test robot", "oliver.sang@intel.com"), ("Tomas Hrubec", "thrubec@example.cz"),
        ("Oliver Sang", "oliver.sang@intel.com"), ("Ines Walcher", None)]
    assert [item.subject for item in messages] == [SUBJECT] + [f"Re: {SUBJECT}"] * 3
    ids = [item.message_id for item in messages]
    # Oliver answers Tomas (quotes him); Ines quotes the report itself, not the reply before her
    assert [item.in_reply_to for item in messages] == [None, ids[0], ids[1], ids[0]]
    assert messages[2].references == (ids[0], ids[1])
    assert messages[0].body.lstrip().startswith("Hello,") and "fsmark.files_per_sec" in messages[0].body
    assert messages[3].body.endswith("both kernels gave about 41000 files/sec.")
    assert "[Oliver Sang" not in messages[1].body  # each body stops where the next message starts


def test_ids_are_stable_and_belong_to_the_message_text() -> None:
    text = THREAD.read_text()
    first, again = split_thread_paste(text), split_thread_paste(text.replace("\n", "\r\n"))
    assert first is not None and again is not None
    assert [item.message_id for item in first] == [item.message_id for item in again]
    # the same reply pasted alone keeps its id: the id is its own text's, not the page's
    alone_text = text[text.index("Re: [linus"):text.index("Re: [linus", text.index("[Tomas"))]
    alone = split_thread_paste(alone_text)
    assert alone is not None and len(alone) == 1
    assert alone[0].message_id == first[1].message_id and alone[0].in_reply_to is None
    assert len({item.message_id for item in first}) == 4


def test_parse_gives_one_record_per_message_with_author_order_and_stance() -> None:
    records = parsed_json(THREAD)
    assert [(record["kind"], record["from"]) for record in records] == [
        ("lkp-regression", "kernel test robot <oliver.sang@intel.com>"),
        ("reply", "Tomas Hrubec <thrubec@example.cz>"),
        ("reply", "Oliver Sang <oliver.sang@intel.com>"),
        ("reply", "Ines Walcher")]
    assert [record["stance"] for record in records] == ["none", "reproduced", "none", "not-reproduced"]
    assert "I reproduced it on my test box" in records[1]["stance_evidence"]
    report = records[0]
    assert report["commits"][0]["sha"] == "3e8b2ad5c1f04b7d9a2c6e1f8d0b5a4c3e2f1a09"
    assert report["headline"]["change_percent"] == -11.2 and len(report["metrics"]) == 3
    assert report["links"]["closes"] == "https://lore.kernel.org/oe-lkp/202406121015.5b3c9e71-oliver.sang@intel.com"
    assert all(not any("no header block" in defect for defect in record["defects"]) for record in records)
    # thread order: depth first, in page order where nothing else decides
    threads = build_threads([report_from_json(record) for record in records])
    assert len(threads) == 1
    assert [(key, depth) for key, depth in threads[0].order] == [
        (records[0]["message_id"], 0), (records[1]["message_id"], 1), (records[2]["message_id"], 2),
        (records[3]["message_id"], 1)]
    assert threads[0].reproduced and threads[0].not_reproduced


def test_a_pasted_reply_quoting_an_lkp_report_is_a_reply_with_quoted_commits_and_rows() -> None:
    records = parsed_json(REPLY)
    assert len(records) == 1
    record = records[0]
    assert record["kind"] == "reply" and record["from"] == "Marek Lindqvist <marek.lindqvist@example.se>"
    assert record["subject"] == "Re: [linux-next:master] [xfs] 7c51d0f2e8: aim7.jobs-per-min -6.8% regression"
    assert record["quoted"] is True
    assert [(commit["sha"], commit["role"]) for commit in record["commits"]] == [
        ("7c51d0f2e8a4b3c6d9e1f0a2b5c8d7e6f4a3b2c1", "culprit"), ("61d2c4b8a0", "base")]
    assert [(row["name"], row["change"], row["quoted"]) for row in record["metrics"]] == [
        ("aim7.jobs-per-min", -6.8, True), ("aim7.time.elapsed_time", 7.2, True),
        ("vmstat.system.cs", 21.3, True)]
    assert record["headline"]["metric"] == "aim7.jobs-per-min" and record["testcase"] == "aim7"


def test_ingest_stores_every_message_once_and_keeps_two_dateless_texts_apart(tmp_path: Path) -> None:
    database = tmp_path / "t.db"
    first = triage("ingest", "--db", str(database), "--quiet", "--jobs", "1", str(THREAD))
    assert first.returncode == 0, first.stderr
    assert f"{THREAD}: 4 new of 4 messages" in first.stdout
    ids = [item.message_id for item in split_thread_paste(THREAD.read_text()) or []]
    with SqliteStore(database) as store:
        assert store.thread_root(ids[2]) == ids[0] and set(store.thread_of(ids[3])) == set(ids)
        assert store.get_record(ids[3]).stance == "not-reproduced"
    # two old-style pastes (a header block without Date or Subject) by the same sender
    for name, words in (("a.txt", "The run took 41 minutes."), ("b.txt", "The run took 58 minutes.")):
        (tmp_path / name).write_text(f"From: Ines Walcher\n\n{words}\n")
    for name in ("a.txt", "b.txt"):
        result = triage("ingest", "--db", str(database), "--quiet", "--jobs", "1", str(tmp_path / name))
        assert f"{tmp_path / name}: 1 new of 1 messages" in result.stdout, result.stdout + result.stderr
    again = triage("ingest", "--db", str(database), "--quiet", "--jobs", "1", str(THREAD))
    assert "0 new of" in again.stdout  # the cursor, or the ids: nothing twice


def test_dateless_fallback_keys_differ_by_text_dated_ones_do_not() -> None:
    assert fallback_key(None, "", "Ines Walcher", "one text") != fallback_key(None, "", "Ines Walcher", "another")
    assert fallback_key(None, "", "Ines Walcher", "same\r\ntext \n") == fallback_key(None, "", "Ines Walcher",
                                                                                     "same\ntext")
    # a page and its lore copy share date, subject and name; their texts differ (obfuscated
    # addresses), so a dated key leaves the text out
    dated = "2024-12-02T09:14:27+08:00"
    assert fallback_key(dated, "x", "A B <a@...mple.org>", "page text") == \
        fallback_key(dated, "x", "A B <a@example.org>", "lore text")


@pytest.mark.parametrize("text", [
    # an LKP status line after a blank line is no author line
    "commit: 2ba9f676d0a2\nhttps://git.kernel.org/x.git master\n\n[still regression on linus/master      "
    "2ba9f676d0a2e1c3]\n\ntestcase: fsmark\n",
    # a subject and a blank line, but no bracketed author
    "Re: [PATCH] ext4: fix\n\nOn Mon, Jan 1, 2024 someone wrote:\n> text\n",
    # a bracketed tag line is no author either
    "Subject line\n\n[PATCH v2 3/7]\n\nbody\n",
])
def test_other_text_is_no_thread_paste(text: str) -> None:
    assert split_thread_paste(text) is None


def test_the_corpus_pastes_from_other_archives_stay_one_message_each() -> None:
    require_corpus()
    for path in sorted(CORPUS.glob("paste_*.txt")):
        entries = list(iter_inputs(str(path)))
        assert len(entries) == 1 and entries[0].raw == path.read_bytes(), path.name


def test_a_written_message_reads_back_with_its_ids_and_a_utf8_name() -> None:
    text = "Re: [PATCH] ext4: fix\n\n[Zoë Ångström]\n\nI can reproduce this on my laptop.\n"
    messages = split_thread_paste(text)
    assert messages is not None
    report = parse_message(as_mail(messages[0], 1), Source("text"))
    assert report.from_ == "Zoë Ångström" and report.subject == "Re: [PATCH] ext4: fix"
    assert report.message_id == messages[0].message_id and message_key(report) == messages[0].message_id
