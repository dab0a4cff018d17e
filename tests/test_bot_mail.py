"""CI bots' build, boot and test results (kernelci.org, KernelCI, CKI) are bot mail (`other`), not a
person's bug or performance report; fixtures/bots/ holds our own messages in their real shapes."""
from __future__ import annotations

import re

import pytest

from tests.conftest import FIXTURES
from triagebot.parse.classify import classify
from triagebot.parse.report import parse_message
from triagebot.records.report import Source

BOTS = FIXTURES / "bots"
CASES = sorted(path.name for path in BOTS.glob("*.eml"))


def parse(raw: bytes):
    return parse_message(raw, Source("eml"))


def test_every_shape_is_present() -> None:
    # legacy kernelci test and build summaries, the newer KernelCI regression and status mails, CKI
    assert CASES == ["cki-test-report-fail.eml", "kernelci-build-regression.eml",
                     "kernelci-legacy-baseline-regressions.eml", "kernelci-legacy-build.eml",
                     "kernelci-status.eml"]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_ci_results_are_bot_mail(name: str, newline: str) -> None:
    raw = (BOTS / name).read_bytes().replace(b"\n", newline.encode())
    record = parse(raw)
    assert record.kind == "other", record.subject
    assert record.stance == "none" and record.headline is None
    assert not any(commit.role == "culprit" for commit in record.commits)


@pytest.mark.parametrize("name", CASES)
def test_subject_alone_marks_ci_results_when_the_list_rewrote_the_sender(name: str) -> None:
    raw = (BOTS / name).read_bytes()
    rewritten = re.sub(rb"(?im)^from:.*$", b"From: Results via kernelci-results <noreply@groups.example>", raw,
                       count=1)
    assert parse(rewritten).kind == "other"


def test_a_person_answering_ci_results_writes_a_reply() -> None:
    subject = "Re: stable-rc/queue/6.1 baseline: 118 runs, 3 regressions (v6.1.84-112-g3b9a0c7d41e2)"
    assert classify(subject, "Mira Talvik <mira@example.org>", "The beaglebone one is a lab issue.") == "reply"


# A person's reports keep their kinds: the CI subject forms name a tree/branch and a count.
PEOPLE = [
    ("[REGRESSION] ext4: fsync 30% slower since v6.7", "fsync is 30% slower on v6.7 than on v6.6: 812 ops/s "
     "against 1160 ops/s.", "human-report"),
    ("[REGRESSION] btrfs/scrub: crash in scrub_stripe on 6.8-rc2", "The box crashes with a NULL pointer "
     "dereference.", "human-bug"),
]


@pytest.mark.parametrize("subject,body,kind", PEOPLE, ids=[case[0][:40] for case in PEOPLE])
def test_people_are_not_bots(subject: str, body: str, kind: str) -> None:
    assert classify(subject, "Ilse Varga <ilse@example.net>", body) == kind
