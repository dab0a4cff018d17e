"""A page or HTML part opening with `<?xml` is read as HTML without BeautifulSoup's warning on stderr."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import PROJECT

XHTML = ('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
         '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n<pre>Message-ID: &lt;x@y&gt;\nDate: Mon, 2 Dec 2024 '
         '10:00:00 +0000\nFrom: A &lt;a@b&gt;\nSubject: fio regression\n\nthe text</pre><a href="/x">next&gt;</a>\n')
MAIL = ("From: A <a@b>\nSubject: s\nMessage-ID: <m@b>\nContent-Type: text/html\n\n"
        '<?xml version="1.0"?>\n<html><body><p>only html</p></body></html>\n')


def _run(code: str) -> subprocess.CompletedProcess:
    # A fresh interpreter: a warning shown once per place would hide behind an earlier test's.
    return subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120)


def test_an_xhtml_page_and_an_xhtml_mail_part_print_no_warning() -> None:
    child = _run(
        "import sys\n"
        "from triagebot.parse.report import parse_message\n"
        "from triagebot.records.report import Source\n"
        f"page = parse_message({XHTML.encode()!r}, Source('text'))\n"
        f"mail = parse_message({MAIL.encode()!r}, Source('eml'))\n"
        "print(page.message_id, page.subject, '|', mail.subject, mail.defects)\n")
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "x@y fio regression | s ('no text/plain part; text taken from HTML',)"
    assert child.stderr == ""


def test_the_warning_is_silenced_only_around_our_parse() -> None:
    child = _run(
        "import warnings\n"
        "from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning\n"
        "from triagebot.parse.html import html_to_text\n"
        "html_to_text('<?xml version=\"1.0\"?><p>x</p>')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    BeautifulSoup('<?xml version=\"1.0\"?><p>x</p>', 'lxml')\n"
        "print(sum(issubclass(w.category, XMLParsedAsHTMLWarning) for w in caught))\n")
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "1"
