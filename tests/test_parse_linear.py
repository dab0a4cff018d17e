"""Work per message is linear in its size (issue 13, finding 2): no pattern backtracks badly.

Each case feeds one reader a long run (spaces, `±`-free digits, blank lines, table rows, hashes,
encoded words) that made it quadratic before, in a fresh interpreter. The only time limit is
a generous hang guard (60 s; each case takes well under a second now and minutes before): no
case asserts on speed.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import PROJECT

HANG_GUARD = 60  # seconds; a hang guard, not a speed target

# name -> code run in a child; each must print "ok" (its own check of the result).
CASES = {
    "stance gate: a 2 MB line of bisect keywords with no full stop or line end": """
        from triagebot.parse.language import rough_sentences
        from triagebot.parse.stance import STANCE_GATE
        line = "I bisected # bad: [a] " * 100_000
        assert rough_sentences(line, STANCE_GATE) == ()
        lines = "\\n".join(["# bad: [abc] I bisected it"] * 50_000)
        found = rough_sentences(lines, STANCE_GATE)  # the first lines as one sentence, then line by line
        assert len(found) > 49_900 and set(found[1:]) == {"# bad: [abc] I bisected it"}
    """,
    "report trailer: Link: x + 100k spaces + y": """
        from triagebot.parse import report
        match = report._TRAILER.search("Link: x" + " " * 100_000 + "y\\n")
        assert match.group(2) == "x" + " " * 100_000 + "y"
    """,
    "whole parse: a reply with the Link line": """
        from triagebot.parse.report import parse_message
        from triagebot.records.report import Source
        raw = (b"From: a@b\\nSubject: Re: fio regression\\nMessage-ID: <m@b>\\n\\nI can reproduce it.\\n"
               + b"Link: x" + b" " * 100_000 + b"y\\n")
        assert parse_message(raw, Source("eml")).message_id == "m@b"
    """,
    "objections trailer and regzbot line": """
        from triagebot.parse import objections
        assert objections._TRAILER.search("Fixes: x" + " " * 100_000 + "y").group(2).endswith("y")
        assert objections._REGZBOT.search("#regzbot introduced: x" + " " * 100_000 + "y").group(2).endswith("y")
        assert objections._REGZBOT.search("#regzbot introduced:" + " " * 100_000 + "\\n").group(2) == ""
    """,
    "lkp key, machine, parameter and commit lines": """
        from triagebot.parse import lkp
        spaces = " " * 100_000
        assert lkp._KEY_LINE.match("testcase: x" + spaces + "y").group(2) == "x" + spaces + "y"
        assert lkp._MACHINE_LINE.match("test machine: x" + spaces + "y")
        assert lkp._PARAMETER.match("  nr: x" + spaces + "y").group(2).endswith("y")
        assert lkp._COMMIT_LINE.match("commit: 1234567" + spaces + "y") is None
        assert lkp.parse_machine("8 threads" + spaces + "x").threads is None
        assert lkp.parse_machine("8 threads Xeon with 64G memory").memory_gb == 64
    """,
    "lkp commit list of 100k entries": """
        from triagebot.parse import lkp
        entries = "".join(f"  {index:012x}a (\\"subject\\")\\n" for index in range(100_000))
        text = "commit: 1234567abcdef (\\"x\\")\\n\\ncommit:\\n" + entries
        assert len(lkp.parse_lkp(text).commits) <= 201
    """,
    "failure table row": """
        from triagebot.parse import metrics
        assert metrics._FAILURE_ROW.match("1:4  -25%  :4  x" + " " * 100_000 + "y")
    """,
    "fio, mmtests and rate patterns on blank lines and spaces": """
        from triagebot.parse import measurements
        assert measurements._FIO_RESULT.search("\\n" * 100_000 + "x") is None
        assert measurements._FIO_LATENCY.search(" \\n" * 100_000 + "x") is None
        assert measurements._MMTESTS_ROW.search("\\n" * 100_000 + "x") is None
        assert measurements._MMTESTS_ROW.search("Amean 1 1.0 (0%) 1.0" + " " * 100_000 + "x") is None
        assert measurements._RATE.search("1" + " " * 100_000 + "x") is None
    """,
    "labelled values, side headers and spreads on long runs": """
        from triagebot.parse import measurements
        assert measurements._LABELLED_VALUE.search("before" + " " * 100_000 + ": 1 ms").group("label") == "before"
        assert measurements._LABELLED_VALUE.search("before: " + "1," * 50_000 + "x").group("unit") == "x"
        assert measurements._LABELLED_VALUE.search("-" * 100_000 + ": 1 ms") is None
        assert measurements._SIDE_HEADER.search("before" + " " * 100_000 + "x") is None
        assert measurements._SPREAD.search("±" + " " * 100_000 + "x") is None
        assert measurements._RUNS.search("1" + " " * 100_000 + "x") is None
        assert len(measurements.read_measurements("before:\\n" * 50_000)) == 0
    """,
    "Fixes trailer after many blank lines": """
        from triagebot.parse import commits
        assert commits._FIXES.search("\\n" * 100_000 + "x") is None
    """,
    "reply prefixes of a subject": """
        from triagebot.parse import classify, identity
        subject = "re" + " " * 100_000 + "x"
        assert not classify._REPLY_SUBJECT.match(subject)
        assert not classify.REPLY_PREFIXES.match(subject)
        assert not identity._REPLY_PREFIXES.match(subject)
    """,
    "an lkp sender of many lkp words": """
        from triagebot.parse import classify
        assert not classify.lkp_sender("lkp " * 50_000)
        assert classify.lkp_sender("lkp robot <someone@intel.com>")
    """,
    "value and unit": """
        from triagebot.parse import reported
        assert reported._VALUE_UNIT.search("1" + " " * 100_000 + "x") is None
    """,
    "shell prompt and job-file arguments": """
        from triagebot.parse import reproducers
        assert reproducers._PROMPT.match("a@" + "b" * 100_000 + "!").end() == 0
        assert reproducers._program_kind("fio " + "job" * 30_000 + "!") is None
        assert reproducers._LOOP.match("while " + "a" * 100_000 + "!") is None
        assert reproducers._WRAPPED_TOKEN.match("a" * 100_000 + "!") is None
        assert reproducers._LABEL.match("a" * 100_000 + ": x") is None
        assert reproducers.find_commands("for i in 1; do\\n" * 20_000) == []
        assert reproducers._program_kind("fio my-job.fio") == "fio"
    """,
    "log lines of a stance reading": """
        from triagebot.parse import language
        assert language._LOG_LINE.match("a:" + "1" * 100_000 + "!") is None
    """,
    "a flood of distinct commit hashes": """
        from triagebot.parse import commits
        text = " ".join(f"a{index:07x}bcdef1" for index in range(100_000))
        assert len(commits.find_commits(text)) == 200
    """,
    "a paste of many header lines and continuations": """
        from triagebot.parse import webpage
        headers, _, _ = webpage.split_header_block("To: x\\n" * 2_000_000 + "body")
        assert headers == {}
        headers, _, _ = webpage.split_header_block("Subject: x\\n" + " y\\n" * 400_000 + "From: a\\n\\nbody")
        assert headers["subject"].startswith("x y y") and headers["from"] == "a"
    """,
    "a page of nested <pre> blocks and anchors": """
        from triagebot.errors import MessageError
        from triagebot.parse import webpage
        # under the 10,000 tags given to the HTML parser (issue 21) ...
        for tag, count in (("<pre>", 9_000), ("<b><a href=x>", 4_500)):
            page = webpage.parse_page("<!DOCTYPE html><html><body>" + tag * count + "Subject: x")
            assert page.subject == "x" or "no header block found in the page" in page.defects
        # ... and over it, refused with the reason before any parsing
        try:
            webpage.parse_page("<!DOCTYPE html><html><body>" + "<pre>" * 30_000 + "Subject: x")
        except MessageError as error:
            assert str(error) == "archive page refused: HTML of 30,003 tags, over 10,000", error
        else:
            raise AssertionError("a page of 30,000 <pre> was parsed")
    """,
    "a mail nested under 900 boundaries with 200k lines": """
        from triagebot.parse.report import parse_message
        from triagebot.records.report import Source
        inner = b"Content-Type: text/plain\\n\\n" + b"line\\n" * 200_000
        for level in range(900):
            inner = (b"Content-Type: multipart/mixed; boundary=b%d\\n\\n--b%d\\n" % (level, level) + inner
                     + b"\\n--b%d--\\n" % level)
        raw = b"From: a@b\\nSubject: s\\nMessage-ID: <m@b>\\nMIME-Version: 1.0\\n" + inner
        assert any("nested deeper" in defect for defect in parse_message(raw, Source("eml")).defects)
    """,
    "a Subject of 200k encoded words": """
        from triagebot.parse.report import parse_message
        from triagebot.records.report import Source
        subject = b" ".join([b"=?utf-8?q?a?="] * 200_000)
        raw = b"From: a@b\\nSubject: " + subject + b"\\nMessage-ID: <m@b>\\n\\nbody\\n"
        assert parse_message(raw, Source("eml")).subject.startswith("aaaa")
    """,
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_long_run_does_not_hang_the_reader(case: str) -> None:
    code = textwrap.dedent(CASES[case]) + "print('ok')\n"
    try:
        child = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True,
                               timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: still running after {HANG_GUARD} s")
    assert child.returncode == 0 and child.stdout.strip() == "ok", child.stderr[-3000:]
