"""Stance, round two (issue 24): the forms read from the second development set, in own words.

Each case mirrors a form of fixtures/labels/dev2/replies.jsonl (the line is named); the sentences
are written here, not copied. The last test measures the set itself when its mirrors are present.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from triagebot.parse.report import parse_message
from triagebot.parse.stance import read_stance, reads_stance
from triagebot.records.report import Source

PROJECT = Path(__file__).resolve().parents[1]
DEV2 = PROJECT / "fixtures" / "labels" / "dev2"
MIRRORS = PROJECT.parent / ".mirror"

SENTENCES = [
    # sightings the first rules missed
    ("Tried it on my arm64 box and could easily replicate it there.", "reproduced"),  # dev2:64
    ("I still see the header corruption after every rebuild.", "reproduced"),  # dev2:63
    ("Yes, I get a huge difference as well on the SATA disk.", "reproduced"),  # dev2:48
    ("I see a much bigger drop in throughput with bfq.", "reproduced"),  # dev2:47
    ("I am seeing this all over the place with today's mainline.", "reproduced"),  # dev2:77
    ("Twice now I have crashed on that assertion while running the loop test.", "reproduced"),  # dev2:88
    ("It behaves the same on other machines.", "reproduced"),  # dev2:5
    ("There is a clear improvement after reverting the two commits.", "reproduced"),  # dev2:9
    ("I measured a difference of 4% with and without the commit.", "reproduced"),  # dev2:33
    ("I re-ran it with the mount option and it is still slower than with the revert.", "reproduced"),  # dev2:11
    ("It cannot be reproduced on x86 but 100% reproduces on arm64.", "reproduced"),  # dev2:104
    ("I've been able to reproduce it on the big box with CPUs 0 and 9.", "reproduced"),  # dev2:282
    ("We've noticed this appearing for us as well on 5.15.", "reproduced"),  # dev2:280
    # the problem outlives a fix
    ("I can still reproduce it with the patch applied.", "reproduced"),  # dev2:143
    # failures the first rules missed
    ("I tested with loop devices and the regression is not there.", "not-reproduced"),  # dev2:224
    ("I tested booting the image on 6.1 and it works just fine.", "not-reproduced"),  # dev2:120
    ("The kernel booted without any problems after I built it from the same tree.", "not-reproduced"),  # dev2:120
    ("I wasn't able to see a failure when testing on an rc2 kernel.", "not-reproduced"),  # dev2:283
    # no stance: another symptom, a guess left open, an open question, what would have been,
    # surprise, code, a fix that works, a mail read
    ("I only reproduced a hang at mkfs time.", "none"),  # dev2:102
    ("While I suspect the drive is to blame, I couldn't confirm it.", "none"),  # dev2:196
    ("Once we have the trace we can confirm if the writeback comes from close().", "none"),  # dev2:175
    ("We would learn whether it perhaps does not trigger some odd behaviour.", "none"),  # dev2:133
    ("Nor would I have noticed a difference in these numbers.", "none"),  # dev2:267
    ("I'm surprised we didn't hit this warning during testing.", "none"),  # dev2:149
    ("I've had cases where the problem doesn't reproduce in KVM but only reproduces on the bot.", "none"),  # dev2:153
    ("I see that errors are handled differently in this path.", "none"),  # dev2:154
    ("I see that we crash because of this line.", "none"),  # dev2:311
    ("As far as I see these errors did not confuse it.", "none"),  # dev2:66
    ("Then when ext4_writepages() gets called, we trigger the BUG.", "none"),  # dev2:114
    ("I've hit zero issues with it in my images.", "none"),  # dev2:86
    ("After applying Martin's patch, I wasn't able to reproduce the oops.", "none"),  # dev2:237
    ("We see more reports on this issue coming in from users.", "none"),  # dev2:140
    ("It behaves the same as ext4 after the revert.", "none"),  # a comparison with something else
]


@pytest.mark.parametrize("sentence,expected", SENTENCES)
def test_sentence_stance_round_two(sentence: str, expected: str) -> None:
    assert read_stance(sentence).stance == expected


MESSAGES = [
    # a later failure that names another platform, setting or method narrows where it shows
    ("I could easily reproduce it on a Power box.\n\nI tried on x86 as well, but could not reproduce it on x86.\n",
     "reproduced"),  # dev2:64
    ("I reproduced it with the C program on 5.17.\n\nI haven't been able to reproduce it with CPUs 0 and 1.\n",
     "reproduced"),  # dev2:282
    ("I can reproduce it easily with xfstests.\n\nI tried via the unit test below, but it could not reproduce.\n",
     "reproduced"),  # dev2:64
    # a first try that failed, then a success
    ("It was not reproduced in my VM at first.\n\nBut I reproduced the same problem after forcing a tiny "
     "bio size.\n", "reproduced"),  # dev2:101
    # "it didn't reproduce there" after the writer's own try
    ("I tried your reproducer on my x86 box with a 1k block size.\n\nIt didn't reproduce there.\n",
     "not-reproduced"),  # dev2:308
    # but a code remark after a reproduction is not a failure
    ("I can reproduce this issue on my VM.\n\nThis is also why small mappings do not trigger this issue.\n",
     "reproduced"),
    # both ways with no narrowing: conflicting, abstain
    ("I can reproduce it on my laptop.\n\nI could not reproduce it.\n", "none"),
]


@pytest.mark.parametrize("text,expected", MESSAGES)
def test_message_stance_round_two(text: str, expected: str) -> None:
    assert read_stance(text).stance == expected


@pytest.mark.parametrize("subject,expected", [
    ("Re: ext3/ext4 filesystem corruption under post 5.1.0 kernels", True),
    ("Re: vmlinux ELF header sometimes corrupt", True),
    ("Re: LTP hugemmap05 test case failure on arm64 with linux-next", True),
    ("Re: ext4 and project quotas bugs", True),
    ("Re: [PATCH v2] ext4: fix an error path in mount", False),
    ("Re: [RFC PATCH 1/3] mm: handle the oops case", False),
    ("Re: design of the new mount API", True),  # round four: any thread but a patch posting
    ("Re: nsdeps not working on modules in 5.4-rc1", True),
])
def test_stance_threads(subject: str, expected: bool) -> None:
    assert reads_stance(subject) is expected


def _reply(subject: str, body: str) -> bytes:
    return (f"From: Ana Ruiz <ana@example.org>\nTo: linux-ext4@vger.kernel.org\nSubject: {subject}\n"
            "Date: Tue, 05 Mar 2024 10:00:00 +0000\nMessage-ID: <reply-2@example.org>\n"
            "In-Reply-To: <report-2@example.org>\n\n" + body).encode()


def test_stance_is_read_in_a_functional_problem_thread_but_not_a_patch_review() -> None:
    body = "On Mon, Bo wrote:\n> the header is zeroed\n\nOK, I still see the header corruption on my laptop.\n"
    record = parse_message(_reply("Re: vmlinux ELF header sometimes corrupt", body), Source("eml"))
    assert (record.kind, record.stance) == ("reply", "reproduced")
    review = parse_message(_reply("Re: [PATCH] ext4: fix a corrupt header check", body), Source("eml"))
    assert review.stance == "none"


def test_stance_is_read_in_a_thread_whose_subject_names_no_problem() -> None:
    """Round four: the subject gate is gone but for patch postings (dev3:236, dev4:22, dev4:84)."""
    body = "On Mon, Bo wrote:\n> nsdeps stops with an error\n\nI can reproduce it here with the same command.\n"
    record = parse_message(_reply("Re: nsdeps on out-of-tree modules", body), Source("eml"))
    assert (record.kind, record.stance) == ("reply", "reproduced")


def test_second_development_set_agreement() -> None:
    """The dev2 labels against the parser, through bench/blind.py's reader (mirrors under ../.mirror)."""
    sys.path.insert(0, str(PROJECT / "bench"))
    import blind  # bench/blind.py: the same loader and measure as the blind set

    replies, reports = blind.load_labels(DEV2)
    assert len(replies) >= 150 and not reports
    raw, notes = blind.read_raw(replies, MIRRORS)
    if len(raw) < len(replies):
        pytest.skip(f"the dev2 mirrors are absent under {MIRRORS} ({len(raw)} of {len(replies)} messages found; "
                    "fetch linux-mailinglist-archives/linux-ext4.vger.kernel.org.0 and "
                    "linux-arm-kernel.lists.infradead.org.0)")
    result = blind.measure(replies, [], raw)
    stance = result["stance"]
    assert stance["total"] == len(replies)
    assert stance["percent"] >= 90.0, result["disagreements"]
    assert stance["recall"]["not-reproduced"] >= 85.0
