"""Stance, round five (issue 24): structures that recur across the development lists, in own words.

Each case mirrors a form of fixtures/labels/dev2 or dev3 (the line is named); the sentences are
written here, not copied. dev4 (linux-nvme) stays held out: nothing here is read from it.
"""
from __future__ import annotations

import pytest

from triagebot.parse.stance import read_stance

SENTENCES = [
    # "able to" with any verb that makes the problem happen
    ("I unloaded the driver entirely and was still able to trigger the oops.", "reproduced"),  # dev3:210
    ("The debug printk stayed silent, but I have been able to repro it twice since.", "reproduced"),  # dev2:274
    ("Most failures I've been able to provoke this week were on the big arm box.", "reproduced"),  # dev2:281
    ("With that method I could generate these hangs on 6.13 as well.", "reproduced"),  # dev3:187
    ("We weren't able to trigger the warning on any of our runners.", "not-reproduced"),
    ("If you are able to trigger it again, please send the log.", "none"),  # a condition
    # a fix tried on the writer's run that left the problem
    ("I retested with your change applied, but it had no effect on the throughput.", "reproduced"),  # dev3:47
    ("I tested the whole series on my board. The second port still never sends the break. "
     "So my problem isn't fixed.", "reproduced"),  # dev3:73
    ("I applied the patch on top of rc2. It doesn't help, the copy still takes minutes.", "reproduced"),
    # not a run: code, a plan, a report's own words, a fix that works
    ("This change does not fix the underlying race, it only narrows the window.", "none"),
    ("The patch fixes it for me, thanks.", "none"),
    # a kernel version named bad, failing or showing the problem
    ("I meant to bisect, but v6.2 was also bad, and so was v6.1.", "reproduced"),  # dev3:1
    ("The hang shows up in 6.8-rc2 as well, exactly like on 6.7.", "reproduced"),  # dev3:77
    ("The board is now failing in the v6.1 stable tree too.", "reproduced"),  # dev2:247
    ("I tested 6.9.3 with nothing on top: it was bad.", "reproduced"),  # dev3:140
    ("6.1 is not affected, only 6.2 onwards.", "none"),  # a negation, then a relay
    ("Is 6.1 also bad?", "none"),  # a question
    ("It was bad design to take the lock there.", "none"),  # no run of the writer's
    # a belief before the writer's own sighting of the same problem
    ("I think we are also seeing the same error when running the quick group.", "reproduced"),  # dev3:220
    ("From the loop device it seems I get the same error again.", "reproduced"),  # dev2:125
    ("Ah, I think I see the problem now.", "none"),  # dev2:46: understood, not seen
    ("I think this might be the same bug.", "none"),  # a guess
    # the attempt as subject, its failure after "but"
    ("I tried to reproduce it by failing the descriptor read on purpose. That produced the same "
     "log lines, but didn't trigger the crash.", "not-reproduced"),  # dev3:211
    ("That would explain the stall, but it does not trigger the crash by itself.", "none"),  # no attempt before
]


@pytest.mark.parametrize("sentence,expected", SENTENCES)
def test_sentence_stance_round_five(sentence: str, expected: str) -> None:
    assert read_stance(sentence).stance == expected


def test_a_report_saying_a_workaround_did_not_help_is_not_a_reproduction() -> None:
    """In a report (not a reply) "it does not help" is the report itself, as dev3:15 shows."""
    text = "I tried booting with acpi=off, but it does not help."
    assert read_stance(text, in_reply=False).stance == "none"
    assert read_stance(text).stance == "reproduced"
