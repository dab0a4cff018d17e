"""One input's memory and work are bounded whatever its shape (issue 21, finding 5).

Each case builds a message of up to 64 MB in a fresh interpreter whose address space is capped
at 1 GiB (RLIMIT_AS: a bound on memory that does not depend on the machine's load), under a
generous hang guard (60 s); each case checks its own result and prints "ok". Before: 63 MB of
folded header lines took 46 s and 2.9 GB, a folded header inside a MIME part 19 s and 2.2 GB,
a page of 1M `<a>` 31 s and 1.3 GB, 200k `<pre>` 31 s and 0.96 GB. Times are measured by
bench/hostile.py, never asserted here.
"""
from __future__ import annotations

import gzip
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import PROJECT
from triagebot.ingest.files import FileSource

HANG_GUARD = 60  # seconds; a hang guard, not a speed target
ADDRESS_SPACE = 1 << 30  # bytes the child may map; the interpreter with the parser needs ~300 MB

PRELUDE = f"""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, {ADDRESS_SPACE}))
    from triagebot.errors import MessageError
    from triagebot.parse.report import parse_message
    from triagebot.records.report import Source
    HEAD = (b"From: M <m@example.com>\\nSubject: fio randwrite -20% regression\\n"
            b"Date: Mon, 1 Jan 2024 00:00:00 +0000\\nMessage-ID: <big@example.com>\\n")
    def refused(raw):
        try:
            parse_message(raw, Source("eml"))
        except MessageError as error:
            return str(error)
        return None
"""

# name -> code run in the child after PRELUDE; each must print "ok"
CASES = {
    "63 MB of folded lines in one header field": """
        raw = HEAD + b"X-Fold: x" + b"\\n y" * 21_000_000 + b"\\n\\nI can reproduce it.\\n"
        report = parse_message(raw, Source("eml"))
        assert report.message_id == "big@example.com"
        assert any(defect.startswith("header block over") for defect in report.defects), report.defects
        print("ok")
    """,
    "a header folded over 21M lines inside a MIME part": """
        raw = (HEAD + b"MIME-Version: 1.0\\nContent-Type: multipart/mixed; boundary=B\\n\\n"
               b"--B\\nContent-Type: text/plain\\nX-Fold: x" + b"\\n y" * 21_000_000 + b"\\n\\nbody\\n--B--\\n")
        report = parse_message(raw, Source("eml"))
        assert "MIME message over 1,000,000 lines; the rest not read" in report.defects, report.defects
        print("ok")
    """,
    "the same, a file not named .eml (read first as a pasted thread page)": """
        import os, tempfile
        from triagebot.ingest.inputs import read_messages
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "message")
            with open(path, "wb") as handle:
                handle.write(HEAD + b"X-Fold: x" + b"\\n y" * 21_000_000 + b"\\n\\nI can reproduce it.\\n")
            [(name, kind, raw)] = list(read_messages(path))
        assert kind == "text" and len(raw) == 63_000_161, (kind, len(raw))
        print("ok")
    """,
    "an archive page of 1M <a> tags": """
        page = (b"<html><head><title>x</title></head><body><pre>Subject: fio\\n</pre>"
                + b"<a href=x>y</a>" * 1_000_000 + b"</body></html>\\n")
        assert refused(page) == "archive page refused: HTML of 2,000,010 tags, over 10,000", refused(page)
        print("ok")
    """,
    "an archive page of 200k <pre> blocks": """
        page = b"<html><head><title>x</title></head><body>" + b"<pre>fio -20%</pre>\\n" * 200_000 + b"</body></html>\\n"
        assert refused(page) == "archive page refused: HTML of 400,008 tags, over 10,000", refused(page)
        print("ok")
    """,
    "an HTML-only mail of 1M tags": """
        raw = (HEAD + b"MIME-Version: 1.0\\nContent-Type: text/html; charset=utf-8\\n\\n<html><body><p>"
               b"fio randwrite dropped 20% after the commit</p>" + b"<b>x</b>" * 500_000 + b"</body></html>\\n")
        report = parse_message(raw, Source("eml"))
        assert "HTML of 1,000,006 tags, over 10,000: tags stripped without parsing" in report.defects, report.defects
        print("ok")
    """,
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_large_input_is_read_within_bounds_or_refused_with_a_reason(name):
    code = textwrap.dedent(PRELUDE) + textwrap.dedent(CASES[name])
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True,
                          timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def _mbox(count: int) -> bytes:
    return b"".join(b"From a@b Mon Jan  1 00:00:00 2024\nFrom: A <a@example.org>\nSubject: note %d\n"
                    b"Message-ID: <n%d@example.org>\n\nbody %d\n\n" % (index, index, index)
                    for index in range(count))


def test_a_file_is_read_as_its_chunks_are_asked_for(tmp_path):
    # a gzip whose end is damaged: a reader that holds the whole file fails before the first chunk
    packed = gzip.compress(_mbox(100_000))  # 9 MB: read a mebibyte at a time
    path = tmp_path / "damaged-tail.mbox.gz"
    path.write_bytes(packed[: len(packed) - 40])
    source = FileSource(path, chunk_messages=100)
    first = source.poll(None)
    assert [m.raw.split(b"Message-ID: ")[1].split(b"\n")[0] for m in first.messages[:2]] == [b"<n0@example.org>",
                                                                                            b"<n1@example.org>"]
    assert len(first.messages) == 100 and first.more and first.total is None


def test_a_chunk_is_bounded_by_bytes_as_well_as_messages(tmp_path):
    path = tmp_path / "three.mbox"
    big = b"x" * 1_000_000
    path.write_bytes(b"".join(b"From a@b Mon Jan  1 00:00:00 2024\nMessage-ID: <b%d@example.org>\n\n%s\n\n"
                              % (index, big) for index in range(5)))
    source = FileSource(path, chunk_messages=1000, chunk_bytes=2_000_000)
    sizes = []
    cursor = None
    while True:
        batch = source.poll(cursor)
        sizes.append(len(batch.messages))
        cursor = batch.cursor
        if not batch.more:
            break
    assert sizes == [2, 2, 1] and batch.total == 5
    assert source.poll(cursor).messages == ()  # read whole: nothing the next time
