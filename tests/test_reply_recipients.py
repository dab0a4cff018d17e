"""Who the reply upstream is written to (and the drafted Tested-by reply to a fix series) is the
team's rule, not the report's sender's (../shared/hostile/round3/reply-recipients.md): the
reporter, the culprit's author and the allowed lists the report was sent to, at most `[reply]
max_recipients`; a display name is one quoted name (or dropped), never an address. Each case is
drafted, sent through a real SMTP server on 127.0.0.1 (aiosmtpd) and checked at RCPT TO and in
the headers a strict reader parses."""
from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from email import message_from_bytes, policy
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.support.smtp_server import SmtpServer
from triagebot.fix_test.flow import series_addressees
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.reply.draft import NoReply, draft_reply
from triagebot.reply.send import SmtpTransport, send_reply
from triagebot.rules.mail import MailRules, parse_mail_rules
from triagebot.store.sqlite import SqliteStore

BASE = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()
REPORTER = "tomas.berg@example.org"
LKML = "linux-kernel@vger.kernel.org"
RUN = {"host": "lab-local", "base_commit": "c0ffee1234ab^", "suspect_commit": "c0ffee1234ab",
       "plan": {"template": "sysbench-cpu", "argv": ["sysbench", "cpu", "run"], "metric": "m", "better": "higher"},
       "samples": [], "verdict": {"outcome": "confirmed", "reason": "r", "measured_change_percent": -30.0,
                                   "confidence": 0.95, "ci_low": -31.0, "ci_high": -29.0, "p_value": 0.001}}


def variant(headers: dict[str, str], body_extra: str = "") -> bytes:
    """The lab's report with `headers` replaced or added (and text added to its body)."""
    head, body = BASE.split(b"\n\n", 1)
    lines = [line for line in head.split(b"\n")
             if not any(line.lower().startswith(name.lower().encode() + b":") for name in headers)]
    lines += [f"{name}: {value}".encode() for name, value in headers.items()]
    return b"\n".join(lines) + b"\n\n" + body + body_extra.encode()


def rules_for(port: int, allowed: list[str], extra: str = "") -> MailRules:
    quoted = ", ".join(f'"{item}"' for item in allowed)
    return parse_mail_rules(f'[smtp]\nserver = "127.0.0.1"\nport = {port}\nsecurity = "none"\n'
                            f'from = "Perf Triage <perf-triage@example.org>"\n[lists]\nallowed = [{quoted}]\n'
                            f'[web]\nbase_url = "https://triage.example.org"\n{extra}', "mail.toml")


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


def send(tmp_path: Path, smtp: SmtpServer, raw: bytes, rules: MailRules) -> tuple[list[str], object]:
    """Draft the reply to `raw` and send it; (RCPT TO as the server got them, the parsed message)."""
    report = parse_message(raw, Source("eml"))
    message = draft_reply(raw, report, "confirmed", RUN, from_=rules.from_, base_url="https://triage.example.org",
                          reply_message_id="<reply1@triage.example.org>", date=datetime(2099, 1, 1, tzinfo=UTC),
                          rules=rules)
    with SqliteStore(tmp_path / "s.db") as store:
        send_reply(store, "case@probe", message, rules, SmtpTransport(rules, {}), requested_by="test")
    [envelope] = smtp.received
    return list(envelope.rcpt_tos), message_from_bytes(envelope.content, policy=policy.default)


def test_300_addresses_in_cc_reach_no_one_but_the_reporter_and_the_allowed_list(tmp_path: Path,
                                                                                  smtp: SmtpServer) -> None:
    copies = ", ".join(f"v{number}@victims{number % 7}.example" for number in range(300))
    rcpt, received = send(tmp_path, smtp, variant({"Cc": f"{copies}, {LKML}"}), rules_for(smtp.port, [LKML]))
    assert rcpt == [REPORTER, LKML]
    assert received["To"] == f"Tomas Berg <{REPORTER}>" and received["Cc"] == LKML


def test_at_most_the_cap_of_recipients(tmp_path: Path, smtp: SmtpServer) -> None:
    lists = [f"list{number}@vger.kernel.org" for number in range(12)]
    copies = ", ".join([*lists, *(f"v{number}@victims.example" for number in range(288))])
    rules = rules_for(smtp.port, lists, "[reply]\nmax_recipients = 8\n")
    rcpt, _ = send(tmp_path, smtp, variant({"Cc": copies}), rules)
    assert rcpt == [REPORTER, *lists[:7]]  # the reporter first, then the lists in the report's order


@pytest.mark.parametrize(("sender", "name"), [
    # a quoted name holding an address and a comma: one name, never a second recipient
    ('"injected2@attacker.example, Tomas" <tomas.berg@example.org>', "injected2@attacker.example, Tomas"),
    # the same in RFC 2047 (getaddresses read its encoded form as an address)
    ("=?utf-8?q?x=2C_injected@attacker.example=2C?= <tomas.berg@example.org>", "x, injected@attacker.example,"),
    # angle brackets in the name: written quoted, so a real server gets one plain RCPT
    ('"Tomas <img src=x>" <tomas.berg@example.org>', "Tomas <img src=x>"),
    # a name that decodes to a line break cannot be written: the bare address is
    ("=?utf-8?q?Evil=0D=0ABcc=3A_bcc-victim@attacker.example?= <tomas.berg@example.org>", ""),
])
def test_a_display_name_is_one_quoted_name_and_never_an_address(tmp_path: Path, smtp: SmtpServer, sender: str,
                                                                name: str) -> None:
    rcpt, received = send(tmp_path, smtp, variant({"From": sender}), rules_for(smtp.port, [LKML]))
    assert rcpt == [REPORTER, LKML]
    [address] = received["To"].addresses  # a strict reader sees one mailbox
    assert (address.display_name, address.addr_spec) == (name, REPORTER)
    assert "Bcc" not in received and "bcc-victim" not in str(received)


@pytest.mark.parametrize("copy", ["linux-fsdevel@vger.kernel.org", "linux-fsdevel@vger.kernel.org.",
                                  '"linux-fsdevel"@vger.kernel.org', "linux-fsdevel@(c)vger.kernel.org"])
def test_a_list_the_rules_do_not_allow_is_not_written_to(tmp_path: Path, smtp: SmtpServer, copy: str) -> None:
    rcpt, _ = send(tmp_path, smtp, variant({"Cc": f"{copy}, LINUX-KERNEL@VGER.KERNEL.ORG"}),
                   rules_for(smtp.port, [LKML]))
    assert rcpt == [REPORTER, LKML]  # the allowed list as the rules spell it, whatever case the report used


def test_reply_to_and_bcc_of_the_report_are_not_read(tmp_path: Path, smtp: SmtpServer) -> None:
    rcpt, _ = send(tmp_path, smtp, variant({"Reply-To": "replyto@attacker.example",
                                            "Bcc": "bcc-orig@attacker.example"}), rules_for(smtp.port, [LKML]))
    assert rcpt == [REPORTER, LKML]


def test_the_culprits_author_from_the_reports_author_line(tmp_path: Path, smtp: SmtpServer) -> None:
    pasted = ("\ncommit c0ffee1234ab5678\nAuthor: \"Author, Ann\" <ann.author@example.org>\n"
              "Date:   Mon Apr 1 00:00:00 2024 +0000\n")
    rcpt, received = send(tmp_path, smtp, variant({}, pasted), rules_for(smtp.port, [LKML]))
    assert rcpt == [REPORTER, "ann.author@example.org", LKML]
    assert [item.display_name for item in received["Cc"].addresses] == ["Author, Ann", ""]


def test_an_lkp_reports_to_is_the_culprits_author(tmp_path: Path, smtp: SmtpServer) -> None:
    raw = (FIXTURES / "lifecycle" / "lkp-first-linux-next.eml").read_bytes()
    rcpt, received = send(tmp_path, smtp, raw, rules_for(smtp.port, [LKML, "oe-lkp@lists.linux.dev"]))
    # the robot, the author it wrote To, the two allowed lists of its Cc; lkp@intel.com and
    # peterz (copied by the robot) are not written to
    assert rcpt == ["oliver.sang@intel.com", "mara.quist@example.org", "oe-lkp@lists.linux.dev", LKML]
    assert received["To"] == "kernel test robot <oliver.sang@intel.com>"


def test_the_drafted_tested_by_reply_to_a_series_is_addressed_by_the_same_rule(smtp: SmtpServer) -> None:
    # issue 36 (4): drafts have To/Cc; the fix series' sender, the culprit's author, the allowed lists
    series_raw = (b'From: "Carl, the <Author>" <carl@example.org>\nTo: linux-kernel@vger.kernel.org\n'
                  b"Cc: " + ", ".join(f"v{number}@victims.example" for number in range(50)).encode()
                  + b", linux-fsdevel@vger.kernel.org\nSubject: [PATCH v2 0/2] sched: fix\n"
                  b"Message-ID: <cover.1@example.org>\n\nthe fix\n")
    report_raw = variant({}, "\ncommit c0ffee1234ab\nAuthor: Ann Author <ann.author@example.org>\n")
    report = parse_message(report_raw, Source("eml"))
    rules = rules_for(smtp.port, [LKML])
    to, cc = series_addressees([report_raw, series_raw], "cover.1@example.org", report_raw, report, rules)
    assert to == '"Carl, the <Author>" <carl@example.org>'
    assert cc == f"Ann Author <ann.author@example.org>, {LKML}"
    assert series_addressees([report_raw], "cover.1@example.org", report_raw, report, rules) == ("", "")


def test_a_sender_that_is_no_address_is_replied_to_through_the_allowed_lists_alone(tmp_path: Path,
                                                                                  smtp: SmtpServer) -> None:
    rcpt, received = send(tmp_path, smtp, variant({"From": "undisclosed:;"}), rules_for(smtp.port, [LKML]))
    assert rcpt == [LKML] and received["To"] == LKML and received["Cc"] is None


@pytest.mark.parametrize(("headers", "reason"), [
    ({"From": "undisclosed:;", "To": "nobody:;"}, "names no address a reply can be written to"),
    ({"Message-ID": '<x y"z@example.org>'}, "the report has no Message-ID to reply to"),
])
def test_no_reply_is_drafted_when_nobody_or_nothing_can_be_replied_to(smtp: SmtpServer, headers: dict[str, str],
                                                                      reason: str) -> None:
    raw = variant(headers)
    with pytest.raises(NoReply, match=reason):
        draft_reply(raw, parse_message(raw, Source("eml")), "confirmed", RUN, from_=None,
                    base_url="https://triage.example.org", reply_message_id="<r@t.example.org>",
                    date=datetime(2099, 1, 1, tzinfo=UTC), rules=rules_for(smtp.port, [LKML]))
