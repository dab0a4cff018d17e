"""Replies upstream: drafted after a verdict, printed by `triage reply`, sent by `--send` through a
real SMTP server on 127.0.0.1 (aiosmtpd), once, threaded, and never to a list rules/mail.toml does
not allow."""
from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
from email import message_from_bytes, policy
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.report_mail import REPORT, store_mail, take_on
from tests.support.smtp_server import SmtpServer
from triagebot.errors import RulesError, TriageError
from triagebot.reply.draft import read_original
from triagebot.reply.send import ReplyInDoubt, SmtpTransport, read_mail, send_reply
from triagebot.rules.mail import load_mail_rules, parse_mail_rules
from triagebot.store.protocol import IncomingMessage
from triagebot.store.sqlite import SqliteStore
from triagebot.verdict.decide import decide

CULPRIT = "5c3f9e2a71d04b8e6a9f0c13d2b7e4a58f61c902"
BASE = "8a21d0f3b6e4c7a9d1f20c3b4a5d6e7f80912345"
ALLOWED = ["linux-kernel@vger.kernel.org", "oe-lkp@lists.linux.dev"]
BASE_SAMPLES = [612.4, 609.8, 615.1, 611.0, 613.7, 610.2, 614.4, 612.9]
SUSPECT_SAMPLES = [545.3, 541.8, 548.0, 543.6, 546.9, 542.2, 544.7, 547.5]


def mail_toml(port: int, allowed: list[str] = ALLOWED) -> str:
    return (f'[smtp]\nserver = "127.0.0.1"\nport = {port}\nsecurity = "none"\n'
            f'from = "Perf Triage <perf-triage@example.org>"\n\n'
            f'[lists]\nallowed = [{", ".join(repr(item).replace(chr(39), chr(34)) for item in allowed)}]\n\n'
            f'[web]\nbase_url = "https://triage.example.org"\n')


def rerun(store: SqliteStore, message_id: str = REPORT) -> None:
    """A finished rerun of the report with its verdict, stored as `triage rerun` stores one."""
    verdict = decide(BASE_SAMPLES, SUSPECT_SAMPLES, "higher", -11.2, 2.0).to_json()
    plan = {"schema": 1, "kind": "plan", "template": "hackbench",
            "argv": ["hackbench", "--pipe", "--process", "--groups=28", "--loops=4000"],
            "metric": "hackbench.throughput", "better": "higher"}
    samples = [{"role": role, "commit": commit, "index": index, "value": value, "seconds": 30.0,
                "running_kernel": "6.13.0", "attempts": 1, "stdout": "", "metrics": {}}
               for index, (role, commit, value) in enumerate(
                   [("base", BASE, value) for value in BASE_SAMPLES]
                   + [("suspect", CULPRIT, value) for value in SUSPECT_SAMPLES])]
    run = {"host": "lab-spr-2s", "base_commit": BASE, "suspect_commit": CULPRIT, "plan": plan,
           "started_at": "2025-01-07T02:00:00+00:00", "finished_at": "2025-01-07T04:10:00+00:00",
           "samples": samples, "status": "done", "error": None, "verdict": verdict, "events": []}
    store.save_run(message_id, plan, run)


@pytest.fixture
def rules(tmp_path: Path, smtp: SmtpServer) -> Path:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "mail.toml").write_text(mail_toml(smtp.port))
    return folder


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "t.db"
    with SqliteStore(path) as store:
        store_mail(store, "lkp-first-linux-next")
        take_on(store)
        rerun(store)
    return path


def triage(*args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": str(PROJECT)}
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          cwd=PROJECT, env=env)


def test_the_draft_is_printed_and_nothing_is_sent(database: Path, rules: Path, smtp: SmtpServer) -> None:
    done = triage("reply", REPORT, "--db", str(database), "--rules", str(rules))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    # who it would go to, before anything is sent
    assert done.stderr.strip() == ("triage reply: not sent; --send sends it to 4 recipients: oliver.sang@intel.com, "
                                   "mara.quist@example.org, oe-lkp@lists.linux.dev, linux-kernel@vger.kernel.org")
    assert "To: kernel test robot <oliver.sang@intel.com>\n" in text
    assert "Subject: Re: [linux-next:master] [sched/fair] 5c3f9e2a71: hackbench.throughput -11.2% regression" \
        in text
    assert "In-Reply-To: <202501061203.4d2a9c1e-lkp@intel.com>" in text
    assert "We reran this report in our lab and see the regression too." in text
    assert f"  base:      {BASE}\n  suspect:   {CULPRIT}\n" in text
    assert "  plan:      hackbench: hackbench --pipe --process --groups=28 --loops=4000\n" in text
    assert "  runs:      8 base, 8 suspect\n" in text
    assert "  median:    base 612.65, suspect 545\n" in text
    assert "https://triage.example.org/r/202501061203.4d2a9c1e-lkp@intel.com/plot.svg" in text
    assert f"\n#regzbot introduced: {CULPRIT} ^\n" in text
    # printing is not sending: the server got nothing, the store keeps no reply
    assert smtp.received == []
    with SqliteStore(database) as store:
        assert store.mail_of(REPORT) is None


def test_send_delivers_one_threaded_message_checked_header_by_header(database: Path, rules: Path,
                                                                      smtp: SmtpServer) -> None:
    done = triage("reply", REPORT, "--db", str(database), "--rules", str(rules), "--send")
    assert done.returncode == 0, done.stderr
    [envelope] = smtp.received
    assert envelope.mail_from == "perf-triage@example.org"
    # To: the report's sender; Cc: the culprit's author (an LKP robot writes To them) and the
    # allowed lists of its Cc, each once; lkp@intel.com and peterz, copied by the robot, are not
    assert envelope.rcpt_tos == ["oliver.sang@intel.com", "mara.quist@example.org", "oe-lkp@lists.linux.dev",
                                 "linux-kernel@vger.kernel.org"]
    received = message_from_bytes(envelope.content, policy=policy.default)
    assert received["From"] == "Perf Triage <perf-triage@example.org>"
    assert received["To"] == "kernel test robot <oliver.sang@intel.com>"
    assert received["Cc"] == "Mara Quist <mara.quist@example.org>, oe-lkp@lists.linux.dev, linux-kernel@vger.kernel.org"
    assert received["Subject"] == "Re: [linux-next:master] [sched/fair] 5c3f9e2a71: hackbench.throughput -11.2% " \
                                  "regression"
    assert received["In-Reply-To"] == "<202501061203.4d2a9c1e-lkp@intel.com>"
    assert received["References"] == "<202501061203.4d2a9c1e-lkp@intel.com>"
    assert received["Message-ID"].endswith("@example.org>") and received["Date"] is not None
    # UTF-8 as it is (the verdict's reason writes U+2212 minus signs), never quoted-printable
    assert received["MIME-Version"] == "1.0" and received["Content-Type"] == 'text/plain; charset="utf-8"'
    assert received["Content-Transfer-Encoding"] == "8bit"
    body = received.get_content()
    assert "p<0.001 over 8+8 runs; report said \u221211.2%" in body
    assert f"#regzbot introduced: {CULPRIT} ^" in body and "Verdict: confirmed." in body
    with SqliteStore(database) as store:
        row = store.mail_of(REPORT)
        assert row is not None and row.status == "sent" and row.attempts == 1
        assert row.reply_message_id == received["Message-ID"].strip("<>")
        # the sent reply is a message of the report's thread now
        assert row.reply_message_id in store.thread_of(REPORT)
        assert store.get_raw(row.reply_message_id) == row.raw
    # asked again: already sent, nothing goes out a second time
    again = triage("reply", REPORT, "--db", str(database), "--rules", str(rules), "--send")
    assert again.returncode == 0 and "already sent" in again.stdout and len(smtp.received) == 1
    shown = triage("show", REPORT, "--db", str(database)).stdout
    assert f"  reply:    <{row.reply_message_id}> sent at {row.sent_at}" in shown
    assert "Perf Triage" in shown  # in the thread


class Crash(BaseException):
    """The process dying: not an Exception, so nothing on the way catches it."""


class CrashAfterSending:
    """The real SMTP transport, then a crash before the store hears that the server accepted it."""

    def __init__(self, inner: SmtpTransport) -> None:
        self.inner = inner

    def send(self, raw: bytes, sender: str, recipients: list[str]) -> None:
        self.inner.send(raw, sender, recipients)
        raise Crash


def test_a_crash_between_sent_and_stored_sends_nothing_twice(database: Path, rules: Path, smtp: SmtpServer) -> None:
    mail_rules = load_mail_rules(rules)
    with SqliteStore(database) as store:
        draft = triage("reply", REPORT, "--db", str(database), "--rules", str(rules))
        message = read_mail(draft.stdout.encode())
        with pytest.raises(Crash):
            send_reply(store, REPORT, message, mail_rules, CrashAfterSending(SmtpTransport(mail_rules, {})),
                       requested_by="alice")
        row = store.mail_of(REPORT)
        assert row is not None and row.status == "sending"
    assert len(smtp.received) == 1
    # the next --send does not send: the reply may be out
    again = triage("reply", REPORT, "--db", str(database), "--rules", str(rules), "--send")
    assert again.returncode == 1 and "may have gone out" in again.stderr and "nothing was sent" in again.stderr
    assert len(smtp.received) == 1
    with SqliteStore(database) as store, pytest.raises(ReplyInDoubt):  # in-process, the same answer
        send_reply(store, REPORT, message, mail_rules, SmtpTransport(mail_rules, {}), requested_by="bob")
    assert len(smtp.received) == 1
    # the list's copy comes back through ingest: it went out, and is taken as sent without sending
    copy = b"List-Id: <linux-kernel.vger.kernel.org>\r\n" + smtp.received[0].content
    with SqliteStore(database) as store:
        store.ingest_batch([IncomingMessage(row.reply_message_id, copy, "lore", "2025-02-02T00:00:00+00:00")])
    settled = triage("reply", REPORT, "--db", str(database), "--rules", str(rules), "--send")
    assert settled.returncode == 0 and "the list's copy came back" in settled.stdout
    assert len(smtp.received) == 1


def test_resend_in_doubt_is_a_persons_explicit_choice(database: Path, rules: Path, smtp: SmtpServer) -> None:
    mail_rules = load_mail_rules(rules)
    with SqliteStore(database) as store:
        message = read_mail(triage("reply", REPORT, "--db", str(database), "--rules", str(rules)).stdout.encode())
        with pytest.raises(Crash):
            send_reply(store, REPORT, message, mail_rules, CrashAfterSending(SmtpTransport(mail_rules, {})),
                       requested_by="alice")
    done = triage("reply", REPORT, "--db", str(database), "--rules", str(rules), "--send", "--resend-in-doubt")
    assert done.returncode == 0, done.stderr
    # the same bytes, the same Message-ID: a reader's client shows one message
    assert len(smtp.received) == 2 and smtp.received[0].content == smtp.received[1].content


def test_a_list_not_allowed_is_not_written_to(database: Path, tmp_path: Path, smtp: SmtpServer) -> None:
    folder = tmp_path / "strict"
    folder.mkdir()
    (folder / "mail.toml").write_text(mail_toml(smtp.port, ["oe-lkp@lists.linux.dev"]))
    done = triage("reply", REPORT, "--db", str(database), "--rules", str(folder), "--send")
    assert done.returncode == 0, done.stderr
    [envelope] = smtp.received
    assert envelope.rcpt_tos == ["oliver.sang@intel.com", "mara.quist@example.org", "oe-lkp@lists.linux.dev"]


def test_a_stored_draft_to_a_list_not_allowed_is_refused_and_nothing_is_sent(database: Path, rules: Path,
                                                                             smtp: SmtpServer) -> None:
    # a draft kept before the rules changed still names linux-kernel: the send refuses it whole
    draft = read_mail(triage("reply", REPORT, "--db", str(database), "--rules", str(rules)).stdout.encode())
    strict = parse_mail_rules(mail_toml(smtp.port, ["oe-lkp@lists.linux.dev"]), "mail.toml")
    with SqliteStore(database) as store, pytest.raises(TriageError) as refused:
        send_reply(store, REPORT, draft, strict, SmtpTransport(strict, {}), requested_by="alice")
    assert str(refused.value) == ("not sent: linux-kernel@vger.kernel.org is a list rules/mail.toml does not allow "
                                  "([lists] allowed); nothing was sent")
    assert smtp.received == []


def test_a_refused_recipient_leaves_it_unsent_and_a_later_send_goes(database: Path, rules: Path,
                                                                    smtp: SmtpServer) -> None:
    smtp.refuse_recipients = {"mara.quist@example.org"}  # one of four: none is sent to
    refused = triage("reply", REPORT, "--db", str(database), "--rules", str(rules), "--send")
    assert refused.returncode == 1 and smtp.received == []
    assert refused.stderr.strip() == (f"triage reply: 127.0.0.1:{smtp.port}: refused recipients: "
                                      "mara.quist@example.org (550 5.7.1 relaying denied); nothing was sent")
    with SqliteStore(database) as store:
        row = store.mail_of(REPORT)
        assert row is not None and row.status == "failed"
    smtp.refuse_recipients = set()
    assert triage("reply", REPORT, "--db", str(database), "--rules", str(rules), "--send").returncode == 0
    assert len(smtp.received) == 1


def test_no_reply_before_a_verdict(tmp_path: Path, rules: Path) -> None:
    path = tmp_path / "running.db"
    with SqliteStore(path) as store:
        store_mail(store, "lkp-first-linux-next")
        take_on(store, states=("planned", "running"))
    done = triage("reply", REPORT, "--db", str(path), "--rules", str(rules))
    assert done.returncode == 1
    assert done.stderr.strip() == ("triage reply: the report is running: a reply follows a confirmed or "
                                   "not-reproduced verdict")


def test_the_daemon_never_sends(database: Path) -> None:
    # nothing but a person's action calls send_reply: `triage reply --send`, or the Slack button
    # "Send reply upstream" a permitted person clicked (actions/carry_out.py carries out that click's action row
    # and nothing else: tests/test_slack_modals.py) — no other stage, not the daemon's own steps
    callers = sorted(path.relative_to(PROJECT).as_posix() for path in (PROJECT / "triagebot").rglob("*.py")
                     if "send_reply(" in path.read_text() and path.name != "send.py")
    assert callers == ["triagebot/actions/carry_out.py", "triagebot/cli/reply.py"]
    asked = (PROJECT / "triagebot" / "actions" / "carry_out.py").read_text()
    assert asked.count("send_reply(") == 1 and "def send_upstream(" in asked


@pytest.mark.parametrize(("text", "error"), [
    # a clear-text server elsewhere
    ('[smtp]\nserver = "smtp.example.org"\nsecurity = "none"\nfrom = "a@example.org"\n',
     'mail.toml:1: [smtp]: security = "none" sends in clear: only for a server on this machine'),
    # a login whose password would be in the file
    ('[smtp]\nserver = "smtp.example.org"\nuser = "triage"\npassword = "x"\nfrom = "a@example.org"\n',
     "mail.toml:1: [smtp]: unknown key(s) password"),
    ('[smtp]\nserver = "smtp.example.org"\nuser = "triage"\nfrom = "a@example.org"\n',
     "mail.toml:1: [smtp]: user is given without password_env"),
    ('[smtp]\nserver = "smtp.example.org"\npassword_env = "lower"\nfrom = "a@example.org"\n',
     "mail.toml:1: [smtp]: password_env must name an environment variable"),
    ('[smtp]\nserver = "smtp.example.org"\nfrom = "nobody"\n', "mail.toml:1: [smtp]: from must be an address"),
    ('[smtp]\nserver = "smtp.example.org"\nsecurity = "ssl"\nfrom = "a@example.org"\n',
     "mail.toml:1: [smtp]: security must be one of"),
    ('\n[lists]\nallowed = ["lkml"]\n', "mail.toml:2: [lists]: allowed must be a list of list addresses"),
    ('[web]\nbase_url = "triage.example.org"\n', "mail.toml:1: [web]: base_url must be an http(s) URL"),
    ('[smtp]\nserver = "s.example.org"\nfrom = "a@example.org"\nca_file = "/nonexistent/ca.pem"\n',
     "mail.toml:1: [smtp]: ca_file '/nonexistent/ca.pem' is not a readable file"),
])
def test_mail_rules_are_validated(text: str, error: str) -> None:
    with pytest.raises(RulesError) as raised:
        parse_mail_rules(text, "mail.toml")
    assert str(raised.value).startswith(error)


def test_the_password_comes_from_its_variable(tmp_path: Path) -> None:
    rules = parse_mail_rules('[smtp]\nserver = "smtp.example.org"\nuser = "triage"\n'
                             'password_env = "TRIAGE_SMTP_PASSWORD"\nfrom = "a@example.org"\n', "mail.toml")
    assert rules.port == 587 and rules.security == "starttls"
    with pytest.raises(TriageError, match="the SMTP password variable TRIAGE_SMTP_PASSWORD is not set"):
        SmtpTransport(rules, {}).send(b"x", "a@example.org", ["b@example.org"])


def test_the_original_headers_are_read_for_threading() -> None:
    original = read_original(b"Message-ID: <b@x>\r\nReferences: <r1@x>\r\n <a@x>\r\nSubject: Re: hi\r\n"
                             b"From: A <a@x.org>\r\nTo: b@x.org\r\n\r\nbody\r\n")
    assert original.references == ("<r1@x>", "<a@x>") and original.subject == "Re: hi"


def test_a_not_reproduced_reply_carries_no_regzbot_line(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from triagebot.reply.draft import NoReply, draft_reply

    with SqliteStore(tmp_path / "t.db") as store:
        store_mail(store, "lkp-first-linux-next")
        take_on(store)
        rerun(store)
        report, raw, run = store.get_record(REPORT), store.get_raw(REPORT), store.latest_run(REPORT)
    assert report is not None and raw is not None
    message = draft_reply(raw, report, "not-reproduced", run, from_=None, base_url="https://t.example.org/",
                          reply_message_id="<r@t.example.org>", date=datetime(2025, 1, 8, tzinfo=UTC))
    body = message.get_content()
    assert "do not see the reported change" in body and "#regzbot" not in body
    assert message["From"] is None and message["Date"] == "Wed, 08 Jan 2025 00:00:00 +0000"
    assert "Every sample, the plan and the plot: https://t.example.org/r/202501061203.4d2a9c1e-lkp@intel.com\n" in body
    with pytest.raises(NoReply, match="the report is inconclusive"):
        draft_reply(raw, report, "inconclusive", run, from_=None, base_url="https://t.example.org",
                    reply_message_id="<r@t.example.org>", date=datetime(2025, 1, 8, tzinfo=UTC))
    with pytest.raises(NoReply, match="no rerun with a verdict"):
        draft_reply(raw, report, "confirmed", None, from_=None, base_url="https://t.example.org",
                    reply_message_id="<r@t.example.org>", date=datetime(2025, 1, 8, tzinfo=UTC))


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl), standing for a private CA."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate for the STARTTLS server")
    key, certificate = folder / "key.pem", folder / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out",
                    str(certificate)], check=True, capture_output=True)
    return key, certificate


def test_starttls_and_a_login_with_the_password_from_its_variable(database: Path, tmp_path: Path) -> None:
    key, certificate = _certificate(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate, key)
    with SmtpServer(tls_context=context, credentials=("perf-triage", "s3cret word")) as server:
        folder = tmp_path / "tls-rules"
        folder.mkdir()
        (folder / "mail.toml").write_text(
            f'[smtp]\nserver = "127.0.0.1"\nport = {server.port}\nsecurity = "starttls"\nuser = "perf-triage"\n'
            f'password_env = "TRIAGE_TEST_SMTP_PASSWORD"\nfrom = "Perf Triage <perf-triage@example.org>"\n'
            f'ca_file = "{certificate}"\n\n[lists]\nallowed = ["linux-kernel@vger.kernel.org", '
            f'"oe-lkp@lists.linux.dev"]\n\n[web]\nbase_url = "https://triage.example.org"\n')
        # without the variable: nothing is sent, the row stays for a later try
        unset = triage("reply", REPORT, "--db", str(database), "--rules", str(folder), "--send")
        assert unset.returncode == 1 and "TRIAGE_TEST_SMTP_PASSWORD is not set" in unset.stderr
        env = os.environ | {"PYTHONPATH": str(PROJECT), "TRIAGE_TEST_SMTP_PASSWORD": "s3cret word"}
        done = subprocess.run([sys.executable, "-m", "triagebot.cli", "reply", REPORT, "--db", str(database),
                               "--rules", str(folder), "--send"], capture_output=True, text=True, cwd=PROJECT,
                              env=env)
        assert done.returncode == 0, done.stderr
        assert server.logins == ["perf-triage"] and len(server.received) == 1


# --- issue 36, finding 5: the reply carries the fix test and the bisection on record -------------

FIRST_BAD = "5b4940749aa5c0ffee0123456789abcdef012345"
PATCHED = "2ad7d75cbeb9d3a1f0e5c2b4a6d8f0e1c3b5a7d9"


def on_record(store: SqliteStore) -> None:
    """A bisection that found the first bad commit, one left inconclusive, a fix test that recovers
    and one refused (nothing measured: not told), as the lab stores them."""
    store.save_bisect(REPORT, {"kind": "bisect", "status": "found", "good": BASE, "bad": CULPRIT, "commits": 40,
                               "first_bad": FIRST_BAD, "range": [FIRST_BAD, FIRST_BAD], "left": 1,
                               "steps": [{"step": number} for number in range(1, 8)], "runs_used": 132,
                               "regression_percent": -11.0, "host": "lab-spr-2s", "reason": "found"})
    store.save_bisect(REPORT, {"kind": "bisect", "status": "queued", "good": BASE, "bad": CULPRIT, "steps": []})
    tested = store.queue_fix_test(REPORT, "v2:cover@example.org", "cover@example.org")
    refused = store.queue_fix_test(REPORT, "v3:cover3@example.org", "cover3@example.org")
    assert tested is not None and refused is not None
    store.set_fix_test(tested, "done", {
        "kind": "test-fix", "host": "lab-spr-2s", "suspect": CULPRIT, "patched": PATCHED, "version": 2,
        "series": "cover@example.org", "verdict": {"outcome": "confirmed", "measured_change_percent": 11.9,
                                                   "ci_low": 10.8, "ci_high": 12.7, "confidence": 0.991667,
                                                   "runs_base": 10, "runs_suspect": 10},
        "recovery": {"call": "recovers", "sentence": "the fix recovers 96% of the regression (99.2% CI 88–103%)"}})
    store.set_fix_test(refused, "refused", {"reason": "refused: part 2 of 2 is not in the thread"})


def test_the_reply_tells_the_bisection_and_the_fix_test_on_record(database: Path, rules: Path) -> None:
    before = triage("reply", REPORT, "--db", str(database), "--rules", str(rules))
    assert before.returncode == 0 and "bisected" not in before.stdout and "of the fix" not in before.stdout
    with SqliteStore(database) as store:
        on_record(store)
    done = triage("reply", REPORT, "--db", str(database), "--rules", str(rules))
    assert done.returncode == 0, done.stderr
    body = done.stdout.split("\n\n", 1)[1]
    assert ("\nWe bisected it on our lab:\n\n"
            "  host:      lab-spr-2s\n"
            f"  range:     {BASE}..{CULPRIT} (40 commits)\n"
            f"  first bad: {FIRST_BAD}\n"
            "  steps:     7 steps, 132 runs; good to bad -11.0%\n") in body
    assert ("\nWe tested v2 of the fix on our lab:\n\n"
            "  series:    v2 <cover@example.org>\n"
            "  host:      lab-spr-2s\n"
            f"  kernels:   {CULPRIT} against it patched (2ad7d75cbeb9)\n"
            "  runs:      10 unpatched, 10 patched\n"
            "  change:    +11.9% (99.2% interval +10.8% .. +12.7%)\n"
            "  recovery:  the fix recovers 96% of the regression (99.2% CI 88–103%)\n") in body
    assert "v3" not in body and body.count("We bisected") == 1  # nothing measured, nothing told
    # in the plain style of the rest, after the verdict, before the links and the regzbot line
    assert body.index("Verdict: confirmed.") < body.index("We bisected") < body.index("Every sample")
    assert body.rstrip().endswith(f"#regzbot introduced: {CULPRIT} ^")
