"""Stance, issue 38's fourth round: a change tried that left the problem, a kernel that showed it (own words).

Each case mirrors a form of fixtures/labels/dev6 or dev11 (the line is named); the sentences are
written here, not copied. dev4 (linux-nvme) and the blind sets stay held out: nothing here is
read from them.
"""
from __future__ import annotations

import pytest

from triagebot.parse.stance import read_stance

SENTENCES = [
    # the writer left out before the try, the result after "but"
    ("Retested with the smaller buffer, but it didn't change anything; the copy still crawls.",
     "reproduced"),  # dev11:166
    ("Also tried the debug option, but it did not change anything.", "reproduced"),  # dev11:166
    # the writer's try, then a result that is not good enough
    ("We tried the quirk you sent, but it does not work very well: the link still drops.",
     "reproduced"),  # dev6:112
    # the change made is the subject of the negated verb
    ("Disabling runtime PM doesn't solve the stalls.", "reproduced"),  # dev11:189
    ("The firmware offers a second port mode; toggling it did not help either.",
     "reproduced"),  # dev6:84
    ("What puzzles me is that downgrading to a 5.15.2 kernel did not seem to change anything.",
     "reproduced"),  # dev11:147
    # not a try of the writer's: code read, a condition, a question, a rerun with no difference
    ("Looking at the code, this does not fix the race either.", "none"),
    ("If disabling the option does not help, please send the log.", "none"),
    ("Does enabling the watchdog change anything for you?", "none"),
    ("I ran the test with and without the commit and it did not make any difference.", "none"),
    ("The function does not change anything when the flag is clear.", "none"),
]

KERNEL_SHOWED_IT = [
    # a kernel the writer names, or "both" of two the writer ran, as the subject
    ("Built both: rc5 boots fine, 6.2 shows the same stall.", "reproduced"),  # dev11:102
    ("I went back to 6.3.9 and then to 6.1.40. Both showed the slowdown.", "reproduced"),  # dev11:143
    # "it" only after the writer's run in the sentence
    ("I tested the unpatched 6.4 kernel first, and it showed the full hang again.", "reproduced"),  # dev11:216
    # not a run of the writer's: a negation, a log read, a question, "it" with no run
    ("Commit 1a2b3c4d5e6f did not show the bad behaviour.", "none"),  # dev6:49
    ("The trace above shows a similar problem in the writeback path.", "none"),  # dev2:176
    ("Does 6.2 show the problem for you?", "none"),
    ("After a year of use it began to show the fault.", "none"),  # dev6:79
]


@pytest.mark.parametrize("sentence,expected", SENTENCES)
def test_sentence_stance_a_change_tried_left_the_problem(sentence: str, expected: str) -> None:
    assert read_stance(sentence).stance == expected


@pytest.mark.parametrize("sentence,expected", KERNEL_SHOWED_IT)
def test_sentence_stance_a_kernel_showed_the_problem(sentence: str, expected: str) -> None:
    assert read_stance(sentence).stance == expected


def test_a_report_saying_a_change_did_not_help_is_the_report_itself() -> None:
    """Read in a report (not a reply) a tried change that did not help is the report, no reproduction."""
    text = "Switching the governor to performance did not seem to change anything."
    assert read_stance(text, in_reply=False).stance == "none"
    assert read_stance(text).stance == "reproduced"
