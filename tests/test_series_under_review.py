"""Which series a patch-regression is rerun with, read from its stored thread (pure), and whether a
host may build it (lab/mail_code.py's protocol; its default is fix testing's rule)."""
from __future__ import annotations

import re

import pytest

from triagebot.fix_test.series import FixRefused
from triagebot.fix_test.under_review import SeriesToTest, series_to_test
from triagebot.lab.mail_code import team_rule
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.rules.hosts import Host
from triagebot.rules.trust import TrustList

COVER = "20250310.4242-0-ivo@example.org"


def patch(part: int, total: int, version: int = 2, base: str | None = None, subject: str = "block: batch the flush",
          sender: str = "Ivo Baran <ivo@example.org>") -> bytes:
    tag = f"PATCH v{version} {part}/{total}"
    foot = f"\n-- \nbase-commit: {base}\n" if base else ""
    reply = "" if part == 0 else f"In-Reply-To: <{COVER}>\nReferences: <{COVER}>\n"
    return (f"From: {sender}\nSubject: [{tag}] {subject}\nDate: Mon, 10 Mar 2025 09:00:00 +0000\n"
            f"Message-ID: <20250310.4242-{part}-ivo@example.org>\n{reply}\nThe change.\n{foot}").encode()


def reply(subject: str = "Re: [PATCH v2 2/2] block: batch the flush", to: str = "20250310.4242-2-ivo@example.org",
          body: str = "With this patch fio write drops 26%: 3.0M IOPS w/o series, 2.2M IOPS w/ series.") -> bytes:
    return (f"From: Lena Quist <lena@example.org>\nSubject: {subject}\nDate: Tue, 11 Mar 2025 09:00:00 +0000\n"
            f"Message-ID: <measured@example.org>\nIn-Reply-To: <{to}>\nReferences: <{COVER}> <{to}>\n\n"
            f"{body}\n").encode()


def report_of(raw: bytes):
    report = parse_message(raw, Source("eml"))
    assert report.kind == "patch-regression"
    return report


def test_the_series_the_reply_answers_with_its_base_commit_and_author() -> None:
    thread = [patch(0, 2, base="0123456789abcdef0123456789abcdef01234567"), patch(1, 2), patch(2, 2)]
    series = series_to_test(report_of(reply()), thread + [reply()])
    assert series == SeriesToTest(message_id="20250310.4242-2-ivo@example.org",
                                  subject="[PATCH v2 2/2] block: batch the flush", version=2, parts=2,
                                  base="0123456789abcdef0123456789abcdef01234567", base_from="base-commit",
                                  author="Ivo Baran <ivo@example.org>", senders=("ivo@example.org",))
    assert SeriesToTest.from_json(series.to_json()) == series


def test_without_a_base_commit_the_tree_the_subject_names_is_the_base() -> None:
    thread = [patch(1, 1, subject="block: batch the flush").replace(b"[PATCH v2 1/1]", b"[PATCH net-next v2 1/1]")]
    raw = reply(subject="Re: [PATCH net-next v2 1/1] block: batch the flush", to="20250310.4242-1-ivo@example.org")
    series = series_to_test(report_of(raw), thread)
    assert (series.base, series.base_from) == ("net-next", "tree")


@pytest.mark.parametrize(("thread", "says"), [
    ([], "no [PATCH] mail of the series"),  # the series not stored: `triage ingest` fetches it
    ([patch(1, 1, subject="block: batch the flush")], "names no base"),  # no base-commit, no tree
])
def test_what_is_missing_is_said(thread: list[bytes], says: str) -> None:
    with pytest.raises(FixRefused, match=re.escape(says)):
        series_to_test(report_of(reply(to="20250310.4242-1-ivo@example.org")), thread)


def test_a_series_is_built_only_on_a_hooked_host_and_as_the_team_trusts() -> None:
    facts = {"reach": "local", "cpu_model": "test lab", "threads": 2, "sockets": 1, "memory_gb": 24, "disk": "ssd",
             "scratch_dir": "/tmp/x"}
    may_build = team_rule(TrustList(frozenset({"ivo@example.org"}), frozenset()))
    host = Host(name="lab-1", **facts)
    assert "builds no code from mail" in (may_build(host, "v2 of the series", ("ivo@example.org",), None) or "")
    hooked = Host(name="lab-2", **facts, build_patched=("/bin/build", "{commit}", "{mbox}"))
    assert may_build(hooked, "v2 of the series", ("ivo@example.org",), None) is None  # a trusted sender
    stranger = may_build(hooked, "v2 of the series", ("mallory@evil.example",), None) or ""
    assert "v2 of the series is not built on host lab-2: waiting for a person: mallory@evil.example" in stranger
    assert may_build(hooked, "v2 of the series", ("mallory@evil.example",), "slack:U0ASKER") is None  # a person asked
    marked = Host(name="lab-3", **facts, build_patched=("/bin/build", "{commit}", "{mbox}"), untrusted_code=True)
    assert may_build(marked, "v2 of the series", ("mallory@evil.example",), None) is None
