"""Every corpus message parses and its kind matches INDEX.tsv's label."""
from __future__ import annotations

import csv
import json

import pytest

from tests.conftest import CORPUS, FIXTURES, require_corpus
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_from_json, report_to_json

INDEX_TO_KIND = {
    "lkp-perf": "lkp-regression",
    "lkp-improve": "lkp-improvement",
    "lkp-func": "lkp-functional",
    "human": "human-report",
    "reply": "reply",
    "syzbot": "syzbot",
}


def _labelled_kinds() -> dict[str, str]:
    """Kinds of corpus messages labelled by hand (fixtures/labels/reports.jsonl): by the record
    contract, INDEX.tsv's "human" covers performance reports, functional bug reports
    (`human-bug`), a bugzilla comment mail (a reply) and a patch cover letter (other)."""
    path = FIXTURES / "labels" / "reports.jsonl"
    labels = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {label["message_id"]: label["kind"] for label in labels if label["source"] == "corpus"}


LABELLED = _labelled_kinds()
# The robot's performance reports posted In-Reply-To the patch they tested (INDEX "lkp-perf" with an
# in_reply_to): a regression of a series under review (issue 38), read as `patch-regression`.
PRE_MERGE = {"lkp-perf": "patch-regression"}


def _index_rows() -> list[dict[str, str]]:
    index = CORPUS.parent / "INDEX.tsv"
    if not index.exists():
        return []
    with open(index, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    # INDEX lists some files more than once (several messages archived under one name);
    # the file on disk is one message, so one row per file is checked.
    return list({row["file"]: row for row in rows}.values())


@pytest.mark.parametrize("row", _index_rows(), ids=lambda row: row["file"])
def test_corpus_message_kind(row: dict[str, str]) -> None:
    require_corpus()
    raw = (CORPUS / row["file"]).read_bytes()
    report = parse_message(raw, Source("eml"))
    kind = PRE_MERGE.get(row["kind"]) if row.get("in_reply_to") else None
    expected = LABELLED.get(row["message_id"].strip("<>"), kind or INDEX_TO_KIND.get(row["kind"]))
    if expected is not None:
        assert report.kind == expected
    # the JSON form round-trips exactly
    assert report_from_json(report_to_json(report)) == report


def test_every_human_row_is_labelled() -> None:
    """Each INDEX "human" message has a hand label, so the kind asserted above is never a guess."""
    require_corpus()
    human = [row for row in _index_rows() if row["kind"] == "human"]
    assert human and all(row["message_id"].strip("<>") in LABELLED for row in human)


def test_index_is_present() -> None:
    require_corpus()
    assert len(_index_rows()) >= 90
