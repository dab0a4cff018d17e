"""Stance, round six (issue 24): the words of storage lists (fixtures/labels/dev6), in own words.

Each case mirrors a form of fixtures/labels/dev6 (the line is named); the sentences are written
here, not copied. The blind set and dev4 stay held out: nothing here is read from them.
"""
from __future__ import annotations

import pytest

from triagebot.parse.stance import read_stance

SENTENCES = [
    # the problem still met on the writer's own run
    ("I still get hangs with your series on top of rc4.", "reproduced"),  # dev6:61
    ("Now on 6.9 and I still see the errors from my first mail.", "reproduced"),  # dev6:133
    ("We still hit random hangs on the second node after the update.", "reproduced"),
    ("Do you still get the crash with the debug option off?", "none"),  # a question
    ("Users still get the warning when the cache is detached.", "none"),  # nobody's run
    ("I will check whether I still see the errors on the new board.", "none"),  # a plan
    # a reporter's re-run on a later kernel
    ("The bug persists in v6.3 with the same trace.", "reproduced"),  # dev6:179, 204
    ("Does the problem persist with 6.4?", "none"),
    # the writer's bisect told with "managed" / "tried to" or as its result
    ("The test started failing last week, and I managed to bisect it to this commit:", "reproduced"),  # dev6:18
    ("I tried to git bisect the hang between 5.10 and 5.11 and ended on the merge of the ata tree.",
     "reproduced"),  # dev6:109
    ("As the result of the bisection, the stall comes from the writeback change.", "reproduced"),  # dev6:342
    ("I can bisect it if you want.", "none"),  # an offer
    # a failed attempt in a storage list's words
    ("So far no luck here on reproducing the hang.", "not-reproduced"),  # dev6:135
    ("He has had no luck as yet reproducing it on his VM.", "none"),  # a relay (dev2:96's form)
    ("I haven't yet succeeded to reproduce the leak with your script.", "not-reproduced"),  # dev6:234
    ("I tried to reproduce this deadlock on two boxes, but could not.", "not-reproduced"),  # dev6:32
    # reproduced first, then a fix checked on that run
    ("I reproduced the corruption on my laptop and verified that your patch cures it.", "reproduced"),  # dev6:40
    ("I was able to reproduce the hang locally and found that the fix resolves it.", "reproduced"),  # dev6:57
    ("I can confirm the patch fixes it.", "none"),  # a fix confirmed, no reproduction told
    # a fix that suppresses the bug is a fix confirmed
    ("I confirmed that the patch suppresses the warning with the C reproducer.", "none"),  # dev6:168, 257, 311
    # a memory or an old occasion, not a run, negated or not
    ("As I remember it could not be reproduced on mainline, but let me check again.", "none"),  # dev6:69
    ("We did not hit this the last time the firmware changed.", "none"),  # dev6:87
    ("I could not reproduce it on my two SATA boxes.", "not-reproduced"),  # no memory: a run
    # wondering is asking; the reporter's device is not the writer's run
    ("I wonder why the old kernel never triggered this warning.", "none"),  # dev6:104
    ("You would probably not be able to reproduce it on your arm board.", "none"),  # dev6:108
]


@pytest.mark.parametrize("sentence,expected", SENTENCES)
def test_sentence_stance_round_six(sentence: str, expected: str) -> None:
    assert read_stance(sentence).stance == expected


def test_a_report_saying_the_bug_persists_is_the_report_itself() -> None:
    """In a report (not a reply) "persists in" and "still get" state the report, not a reproduction."""
    for text in ("The bug persists in v6.3 with the same trace.", "I still get hangs on top of rc4."):
        assert read_stance(text, in_reply=False).stance == "none"
        assert read_stance(text).stance == "reproduced"
