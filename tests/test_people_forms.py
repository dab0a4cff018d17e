"""Issue 24's forms of people's mail, in our own sentences: a whole thread page's title, a bot
team's re-confirmation, a feature switched off against the stock kernel, changes with no unit."""
from __future__ import annotations

import pytest

from triagebot.parse.lore_paste import split_thread_paste
from triagebot.parse.measurements import read_measurements, side_of
from triagebot.parse.numbers import judge_numbers
from triagebot.parse.reported import reported_headline
from triagebot.parse.stance import read_stance

SUBJECT = "[linus:master] [xfs] 1f2e3d4c5b: fio.write_bw_MBps -11.0% regression"
PAGE = f"""{SUBJECT}

{SUBJECT}

[kernel test robot]

Hello,

kernel test robot noticed a -11.0% regression of fio.write_bw_MBps on:

Re: {SUBJECT}

[Aino Lehto]

> kernel test robot noticed a -11.0% regression of fio.write_bw_MBps on:

I ran it on my box and the numbers look the same as before.
"""


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_whole_page_copy_starts_with_the_page_title(newline: str) -> None:
    messages = split_thread_paste(PAGE.replace("\n", newline))
    assert messages is not None
    assert [(item.subject, item.name) for item in messages] == [(SUBJECT, "kernel test robot"),
                                                                (f"Re: {SUBJECT}", "Aino Lehto")]
    assert messages[1].in_reply_to == messages[0].message_id
    # the page title is no message: the copy without it gives the same messages, same ids
    alone = split_thread_paste(PAGE.split("\n", 2)[2])
    assert alone is not None and [item.message_id for item in alone] == [item.message_id for item in messages]


def test_a_title_line_that_is_not_the_first_subject_is_no_page_title() -> None:
    assert split_thread_paste("Some notes\n\n" + PAGE.split("\n", 2)[2]) is None


STANCES = [
    # a bot team re-confirming its own report: steady data is no machine staying fine
    ("we double confirmed the write_bw data is stable in multi runs on our test machine (Sapphire Rapids).",
     "reproduced"),
    ("We confirmed it again: the results are stable on our test box.", "reproduced"),
    # the machine stayed fine after the writer's own run: still a negative
    ("I've booted 6.9 on my test box and ran the job for a day, it's stable.", "not-reproduced"),
]


# What a claim is about (issue 24): a fix, the reporter's machine, another problem, code; hedges;
# a rerun's plain summary; conflicting sentences abstain. Our own sentences in the shapes.
STANCES += [
    ("I applied your patch and can also confirm that it's working here!", "none"),
    ("Yes, the patch restores the original behaviour in our test setup.", "none"),
    ("Because it can be reproduced easily in your environment, could you bisect it?", "none"),
    ("I could not reproduce the other warning, the slowdown I cannot judge yet.", "none"),
    ("This is why files under 4k do not trigger this issue.", "none"),
    ("We cannot guarantee it reproduces on another machine.", "none"),
    ("I reran fio on both kernels five times and there is no difference.", "not-reproduced"),
    ("We didn't find any obvious regression in our retest.", "not-reproduced"),
    ("I booted 6.9 on my laptop and ran the workload, the desktop stayed responsive.", "not-reproduced"),
    ("Can't reproduce here.", "not-reproduced"),
    ("I can reproduce it on my NUC.\n\nOn the Xeon I could not reproduce it at all.", "none"),
]


@pytest.mark.parametrize("text,stance", STANCES, ids=[text[:40] for text, _ in STANCES])
def test_stance_is_the_writers_own_attempt(text: str, stance: str) -> None:
    assert read_stance(text).stance == stance


def test_a_feature_switched_off_is_the_reference_against_the_stock_kernel() -> None:
    assert side_of("NO_PLACE_LAG") == "reference" and side_of("with NO_RUN_TO_PARITY") == "reference"
    assert side_of("NO_ISSUES_HERE the value") is None
    own = ("Retested with 6 runs each:\n\n"
           "stock: 412.0 MB/s (mean of 6 runs, σ: 6.1)\n"
           "NO_PLACE_LAG: 409.5 MB/s (mean of 6 runs, σ: 5.8)\n")
    quoted = "PLACE_LAG costs us a 12% performance drop on the write test.\n"
    numbers = judge_numbers(read_measurements(own), None, quoted)
    assert numbers is not None
    assert (numbers.base_label, numbers.suspect_label) == ("NO_PLACE_LAG", "stock")
    assert numbers.reported_change_percent == -12.0 and numbers.outcome == "not-reproduced"


HEADLINES = [
    ("You'll see a 5-10% increase in the latency time.", ("latency", 7.5, "regression")),
    ("On the 6.10 kernel we measured a ~35% performance regression on this workload.",
     ("performance", -35.0, "regression")),
    ("It causes a 10-20% performance hit on our database tests.", ("performance", -15.0, "regression")),
    ("Since the upgrade there is a 12% reduction in completion time.", ("latency", -12.0, "improvement")),
]


@pytest.mark.parametrize("text,expected", HEADLINES, ids=[text[:40] for text, _ in HEADLINES])
def test_a_change_with_no_unit_is_a_headline_of_latency_or_performance(text: str, expected: tuple) -> None:
    headline = reported_headline(text)
    assert headline is not None
    assert (headline.metric, headline.change_percent, headline.direction) == expected


@pytest.mark.parametrize("text", [
    "It is 20% slower and uses 10% more memory.",  # two changes
    "About 30% of the runs hit the slow path.",  # a share, not a change
    "Up to 2-3% noise is normal here.",
])
def test_no_unitless_headline_without_one_stated_change(text: str) -> None:
    assert reported_headline(text) is None


def test_conflicting_sentences_keep_both_as_evidence() -> None:
    result = read_stance("I can reproduce it on my NUC.\n\nOn the Xeon I could not reproduce it at all.")
    assert result.stance == "none"
    assert result.evidence is not None and "NUC" in result.evidence and "Xeon" in result.evidence
