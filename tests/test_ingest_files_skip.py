"""`triage ingest DIR`: files of a folder that are not mail, pages or pastes are skipped, each
named in one line, and nothing of them is stored."""
from __future__ import annotations

import gzip

from tests.support.public_inbox import make_message
from triagebot.ingest.files import FileSource
from triagebot.ingest.runner import ingest_once
from triagebot.store.sqlite import SqliteStore

MBOX_LINE = b"From someone@example.org Mon Jun  2 09:00:00 2025\n"


def folder(tmp_path):
    d = tmp_path / "reports"
    d.mkdir()
    (d / "one.eml").write_bytes(make_message("[REPORT] xfs regression", "slower\n", msgid="one@example.org"))
    (d / "archive.mbox.gz").write_bytes(gzip.compress(
        MBOX_LINE + make_message("in an mbox.gz", "x\n", msgid="two@example.org")))
    (d / "paste.txt").write_text("fio randwrite went from 512 MiB/s on 6.1 to 410 MiB/s on 6.6\n")
    (d / "page.html").write_text("<!DOCTYPE html><html><body><p>a bug page</p></body></html>\n")
    # not mail, pages or pastes:
    (d / "INDEX.tsv").write_text("file\tsubject\tdate\none.eml\t[REPORT] xfs regression\t2025-06-02\n")
    (d / "results.csv").write_text("kernel,throughput\n6.1,512\n6.6,410\n")
    (d / "meta.json").write_text('{"reports": 2}\n')
    (d / "notes.gz").write_bytes(gzip.compress(b"\x00\x01binary dump\n"))
    (d / "perf.data").write_bytes(b"PERFILE2\x00\x00\x00\x10" + bytes(range(256)))
    # named like data but holding mail: read
    (d / "mail.json").write_bytes(make_message("mis-named", "x\n", msgid="three@example.org"))
    return d


def test_a_folder_skips_what_is_not_mail_and_says_so(tmp_path):
    d = folder(tmp_path)
    with SqliteStore(tmp_path / "t.db") as store:
        result = ingest_once(FileSource(d), store, jobs=1)
        assert result.seen == 5  # one.eml, the mbox.gz, paste.txt, page.html, mail.json
        skipped = sorted(e for e in result.events if "skipped, not mail" in e)
        assert [e.split(":", 1)[0].rsplit("/", 1)[1] for e in skipped] == [
            "INDEX.tsv", "meta.json", "notes.gz", "perf.data", "results.csv"]
        assert any("binary data" in e for e in skipped)
        assert any("gzip file that holds no mbox" in e for e in skipped)
        # a second run reads nothing again and says nothing again
        again = ingest_once(FileSource(d), store, jobs=1)
        assert again.new_ids == [] and again.events == []


def test_a_file_named_on_its_own_is_read_as_given(tmp_path):
    d = folder(tmp_path)
    batch = FileSource(d / "INDEX.tsv").poll(None)
    assert len(batch.messages) == 1 and batch.events == ()
