"""Stance, issue 38's third round of reproduced recall: forms of the dev6/dev7 replies, in own words.

Each case mirrors a form of fixtures/labels/dev2, dev6 or dev7 (the line is named); the sentences
are written here, not copied (the kernels and commits may carry over). dev4 (linux-nvme) and the
blind sets stay held out: nothing here is read from them.
"""
from __future__ import annotations

import pytest

from triagebot.parse.stance import read_stance

SENTENCES = [
    # the problem seen again, the writer as subject and the kernel named, no subject next to the verb
    ("I moved to 5.1 this morning and still see the read errors from the backing disk.", "reproduced"),  # dev6:133
    ("We still get guest panics when this sits on top of eccb852f1fe6.", "reproduced"),  # dev6:61
    ("Kernels tried so far:\n- v4.19\n- v5.5.11\n\nand still get the oops", "reproduced"),  # dev6:337
    ("If you still see the crash on 6.2, please tell me.", "none"),  # a condition, the reader's run
    ("Please check whether we still hit the warning in 6.3.", "none"),  # a request
    ("When the lookup fails we drop the lock and still hit the warning further down.", "none"),  # code: no kernel
    ("I'm on 6.1 and still see some differences in the IO pattern.", "none"),  # no problem named
    # the writer's own figures still behind the baseline
    ("Mounted with nodelalloc the random writes are still slower than before the series.", "reproduced"),  # dev2:13
    ("The new version helps a bit, but is still worse than reverting the commit.", "reproduced"),  # dev7:51
    ("Your second lock change gains a little over the first one, but still poor than original.",
     "reproduced"),  # dev7:31
    ("On ext4 the run is still slower than on xfs.", "none"),  # another thing compared
    ("Patched, it is now faster than before.", "none"),  # a fix that works
    # the problem named persisting in a kernel the writer names
    ("The oops persists in Linux v6.1.0, trace below.", "reproduced"),  # dev6:179
    ("The hang persists in the newest stable, v5.10.150.", "reproduced"),  # dev6:204
    ("Nothing is reclaimed while the slowdown persists.", "none"),  # no kernel: how it behaves
    # a rate of one's own reproduction
    ("Reproducibility is 100% on my board.", "reproduced"),  # dev6:309
    ("I debug with the reproducer from the report, which works 100% of the time here.", "reproduced"),  # dev6:300
    ("It is not 100% reproducible, sadly.", "none"),  # no rate claimed
    # a fix confirmed by what it suppresses: no stance (the opposite error)
    ("I confirmed that the proposed patch suppresses the splat by running the C program.", "none"),  # dev6:168
    ("I verified the fix suppresses the warning with the syz reproducer on 6.1.", "none"),  # dev6:257
]


@pytest.mark.parametrize("sentence,expected", SENTENCES)
def test_sentence_stance_issue38(sentence: str, expected: str) -> None:
    assert read_stance(sentence).stance == expected


def test_a_report_saying_it_still_sees_the_problem_is_the_report_itself() -> None:
    """In a report (not a reply) a problem still seen on a named kernel is the report, not a reproduction."""
    text = "I'm running 6.6.3 now and still see the errors in dmesg."
    assert read_stance(text, in_reply=False).stance == "none"
    assert read_stance(text).stance == "reproduced"
