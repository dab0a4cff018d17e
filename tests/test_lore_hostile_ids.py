"""Message-IDs as attackers write them, served by a real public-inbox-httpd, all stored (issue 21,
finding 8), and shown escaped on a terminal.

Before: `< padded@example.org >` was fetched stripped (a 404, then "gone" for good), `.` and `..`
were skipped as path steps, a non-ASCII id was fetched by the feed's double-encoded link (a
404), and a second message reusing a Message-ID (public-inbox files it under an id of its own)
was dropped as the first one's copy. Control and bidi characters were printed raw by `triage list`.
"""
from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest

from tests.conftest import PROJECT
from tests.support.public_inbox import require_public_inbox, start_public_inbox
from tests.test_ingest_lore import DAY, make_source
from triagebot.ingest.runner import ingest_once
from triagebot.store.sqlite import SqliteStore

RLO, ZWSP = "\u202e", "\u200b"


def mail(message_id_field: str, subject: str, body: str, minute: int) -> bytes:
    date = (DAY + timedelta(minutes=minute)).strftime("%a, %d %b %Y %H:%M:%S +0000")
    return (f"From: Tess Tester <tess@example.org>\nTo: linux-ext4@vger.kernel.org\nSubject: {subject}\n"
            f"Date: {date}\nMessage-ID: {message_id_field}\nMIME-Version: 1.0\n"
            "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n"
            f"{body}\n").encode()


# (Message-ID field, subject): one message each
HOSTILE = [
    ("< padded@example.org >", "spaces inside the brackets"),
    ("<..>", "an id of two dots"),
    ("<.>", "an id of one dot"),
    ("<café@example.org>", "a non-ASCII id"),
    (f"<bi{RLO}di{ZWSP}@example.org>", f"[xfs] 2edf{ZWSP}06a50f: a bidi id"),
    ("<../../etc/passwd@example.org>", "slashes and dots"),
    ("<x' OR '1'='1@example.org>", "quotes"),
    ("<reuse@example.org>", "the first message with this id"),
    ("<reuse@example.org>", "a second message reusing it"),
    ("<plain@example.org>", "a plain id"),
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    require_public_inbox()
    root = tmp_path_factory.mktemp("hostile-ids")
    messages = [mail(field, subject, f"message {index}: fio randwrite is 20% slower here.", index)
                for index, (field, subject) in enumerate(HOSTILE)]
    with start_public_inbox(root / "lore", "linux-ext4", messages) as server, \
            SqliteStore(root / "t.db") as store:
        result = ingest_once(make_source(server.list_url), store, jobs=1)
        records = {listed.report.subject: listed.report for listed in store.list_records()}
    yield result, records, root / "t.db"


def test_every_hostile_message_id_is_stored(stored):
    result, records, _ = stored
    assert sorted(records) == sorted(subject for _, subject in HOSTILE), result.events
    ids = {subject: report.message_id for subject, report in records.items()}
    assert ids["spaces inside the brackets"] == "padded@example.org"
    assert ids["an id of two dots"] == ".." and ids["an id of one dot"] == "."
    assert ids["a non-ASCII id"] == "café@example.org"
    assert ids["the first message with this id"] == "reuse@example.org"
    # public-inbox files the second under an id of its own, added as a second Message-ID field
    assert ids["a second message reusing it"] not in ("reuse@example.org", None)
    assert not [event for event in result.events if "skipped" in event or "gone" in event]


def test_hidden_characters_are_shown_escaped_by_triage_list(stored):
    _, _, database = stored
    listing = subprocess.run([sys.executable, "-m", "triagebot.cli", "list", "--db", str(database)],
                             cwd=PROJECT, capture_output=True, text=True, check=True,
                             env={"PYTHONPATH": str(PROJECT), "PATH": "/usr/bin:/bin"}).stdout
    line = next(line for line in listing.splitlines() if "a bidi id" in line)
    assert "[xfs] 2edf\\u200b06a50f: a bidi id" in line and "<bi\\u202edi\\u200b@example.org>" in line
    assert RLO not in listing and ZWSP not in listing
    assert "café@example.org" in listing  # letters are letters, only hidden characters are escaped


def test_a_zero_width_space_does_not_split_a_sha():
    from triagebot.parse.report import parse_message
    from triagebot.records.report import Source

    raw = mail("<split@example.org>", "[xfs] fsmark.files_per_sec -5.7% regression",
               f"I bisected it to 2edf06a50f{ZWSP}5bbe664283f3c55c480fc013221d70 (\"xfs: x\")\n"
               f"and the one after, {RLO}0123456789abcdef0123456789abcdef01234567, is fine.", 0)
    report = parse_message(raw, Source("eml"))
    assert [(commit.sha, commit.role) for commit in report.commits] == [
        ("2edf06a50f5bbe664283f3c55c480fc013221d70", "culprit"),
        ("0123456789abcdef0123456789abcdef01234567", "mentioned")]
    hidden = "2 hidden format characters (zero-width, bidi controls) in the text, ignored in reading commits"
    assert hidden in report.defects
