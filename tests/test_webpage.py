"""lists.openwall.net pages and text pasted from archive pages."""
from __future__ import annotations

from tests.conftest import CORPUS, FIXTURES, require_corpus
from triagebot.parse.report import parse_message
from triagebot.records.report import Source

PAGES = FIXTURES / "openwall"


def test_page_with_message_id() -> None:
    report = parse_message((PAGES / "lkp-report-page.html").read_bytes(), Source("text"))
    assert report.source.kind == "openwall"
    assert report.message_id == "202412011200.abcdef01-oliver.sang@intel.com"
    assert report.kind == "lkp-regression"
    assert report.from_ == "kernel test robot <oliver.sang@...el.com>"  # obfuscated as on the page
    assert report.date == "2024-12-01T12:00:00+08:00"
    assert len(report.metrics) == 2 and report.metrics[1].base_stddev_percent == 9.0
    assert dict(report.thread_links) == {"prev": "4", "next": "6", "thread-prev": "3",
                                         "thread-next": "9", "day": ".", "month": "..",
                                         "year": "../..", "list": "../../.."}
    assert [(a.name, a.content_type, a.size) for a in report.attachments] == [
        ("job.yaml", "text/plain", 4123), ("reproduce", "text/plain", 912)]


def test_page_without_message_id_says_so() -> None:
    report = parse_message((PAGES / "lkp-report-page-no-message-id.html").read_bytes(), Source("text"))
    assert report.message_id is None
    assert report.subject.endswith("fileio.requests_per_sec -12.4% regression")
    assert any("no Message-ID" in defect for defect in report.defects)


def test_paste_from_lkml_iu_edu() -> None:
    require_corpus()
    raw = (CORPUS / "paste_lkml-iu-edu-sbitmap-bisect-guenter.txt").read_bytes()
    report = parse_message(raw, Source("text"))
    assert report.subject == "Re: [PATCH 2/3] sbitmap: ammortize cost of clearing bits"
    assert report.from_ == "Guenter Roeck"
    assert report.date == "2018-12-09T00:53:45-05:00"
    assert report.kind == "reply"
