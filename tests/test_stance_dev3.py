"""Stance, round three (issue 24): the forms read from the third development set, in own words.

Each case mirrors a form of fixtures/labels/dev3/replies.jsonl or dev2's (the line is named); the
sentences are written here, not copied. The last test measures the set itself when its mirrors
are present.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from triagebot.parse.language import rough_sentences
from triagebot.parse.stance import STANCE_GATE, read_stance

PROJECT = Path(__file__).resolve().parents[1]
DEV3 = PROJECT / "fixtures" / "labels" / "dev3"
MIRRORS = PROJECT.parent / ".mirror"

SENTENCES = [
    # the writer's own bisect
    ("I bisected it again over the weekend and landed on the same merge.", "reproduced"),  # dev3:65
    ("Ben and I have completed a git bisect and found the culprit in the readdir rework.",
     "reproduced"),  # dev3:233
    ("After redoing the bisect with a clean config, the first bad commit is 1a2b3c4d5e6f.",
     "reproduced"),  # dev2:121
    ("9f8e7d6c5b4a is the first bad commit", "reproduced"),  # dev3:227
    # the same problem on the writer's side
    ("After the resume this morning I again had the same hang.", "reproduced"),  # dev3:146's form
    ("I see it too, but not on v6.1.", "reproduced"),  # dev3:40
    # the problem outlives a run or a fix
    ("Still the same oops with the new build.", "reproduced"),  # dev3:39
    ("I tried twice with your patch only, and the board is still stuck at boot.", "reproduced"),  # dev3:13
    ("I built your patch on top of rc4, but the hang still persists.", "reproduced"),  # dev3 (6.8-rc3 build)
    ("Not only is it still there in rc3, I got a lockup right away.", "reproduced"),  # dev3:129
    ("On my board plain copies were fine, but the parallel one still had errors after an hour.",
     "reproduced"),  # dev3:225
    # failures
    ("Rerunning the test on the same server later, I did not see the oops.", "not-reproduced"),  # dev3:168
    ("With the same firmware setting the laptop still boots just fine for me on rc1.",
     "not-reproduced"),  # dev3:106
    ("I can not seem to duplicate the failure on my controllers.", "not-reproduced"),  # dev3:196
    # no stance: a request, a plan, a fix that works, code noticed, thanks for another's bisect
    ("Can you bisect it between 6.1 and 6.2?", "none"),
    ("I will bisect this tomorrow if time allows.", "none"),  # a plan (dev3 line of Hans's plan)
    ("Thanks for the bisect, that helps a lot.", "none"),
    ("I noticed that too; the driver should never do that.", "none"),  # dev3:30
    ("The patch works fine for me.", "none"),  # a fix confirmed
    ("Is this still there with the fix applied?", "none"),  # a question
]


@pytest.mark.parametrize("sentence,expected", SENTENCES)
def test_sentence_stance_round_three(sentence: str, expected: str) -> None:
    assert read_stance(sentence).stance == expected


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_a_pasted_bisect_log_is_read_line_by_line(line_end: str) -> None:
    """A `git bisect log` has no full stop: its lines, not a 600-character run, reach the reader."""
    log = ["Checked twice, here is the log:", "git bisect start",
           "# good: [0123456789abcdef0123456789abcdef01234567] Linux 6.7.11",
           "git bisect good 0123456789abcdef0123456789abcdef01234567"]
    log += [f"# good: [{index:040x}] net: rework the queue number {index}" for index in range(1, 12)]
    log += ["# bad: [fedcba9876543210fedcba9876543210fedcba98] Linux 6.8-rc1",
            "# first bad commit: [a1b2c3d4e5f60718293a4b5c6d7e8f9012345678] tty: rework the wakeup path"]
    text = line_end.join(log) + line_end
    assert any("first bad commit" in sentence for sentence in rough_sentences(text, STANCE_GATE))
    assert read_stance(text).stance == "reproduced"


def test_third_development_set_agreement() -> None:
    """The dev3 labels against the parser, through bench/blind.py's reader (mirrors under ../.mirror)."""
    sys.path.insert(0, str(PROJECT / "bench"))
    import blind  # bench/blind.py: the same loader and measure as the blind set

    replies, reports = blind.load_labels(DEV3)
    assert len(replies) >= 150 and not reports
    raw, notes = blind.read_raw(replies, MIRRORS)
    if len(raw) < len(replies):
        pytest.skip(f"the dev3 mirrors are absent under {MIRRORS} ({len(raw)} of {len(replies)} messages found; "
                    "fetch linux-mailinglist-archives/linux-acpi.vger.kernel.org.0, linux-usb.vger.kernel.org.0 "
                    "and linux-cifs.vger.kernel.org.0)")
    result = blind.measure(replies, [], raw)
    stance = result["stance"]
    assert stance["total"] == len(replies)
    assert stance["percent"] >= 88.0, result["disagreements"]
    assert stance["recall"]["reproduced"] >= 65.0
