"""One report's ask is that report's, never the queue's (../shared/hostile/round3/send-upstream-poison.md):
a From name that decodes to CR LF, a fault of ours while carrying an ask out, and a machine short
of open files each leave every later "Send reply upstream" going out. Two confirmed reports, two
asks (the poisoned one first), the daemon's asked step (actions/carry_out.py), a real SMTP server.
"""
from __future__ import annotations

import errno
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.support.smtp_server import SmtpServer
from triagebot.actions import carry_out as asked
from triagebot.errors import RulesError
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.reproduce.rounds import commits_of
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore
from triagebot.verdict.decide import decide

LAB_REPORT = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()
POISON = "20990416.poison@atk"
CLEAN = "20990417.clean@atk"
CHANNEL = "C0PERF"


def report(message_id: str, sender: str) -> bytes:
    """The lab's report under its own Message-ID, from `sender` (the From line as written)."""
    return (LAB_REPORT.replace(b"<20240415071244.lab1@tberg-ws>", f"<{message_id}>".encode())
            .replace(b"From: Tomas Berg <tomas.berg@example.org>", f"From: {sender}".encode()))


def confirmed(store: SqliteStore, message_id: str, raw: bytes) -> None:
    """A report the daemon took on and confirmed, its rerun stored (figures made up)."""
    record = parse_message(raw, Source("eml"))
    store.put_message(message_id, raw, "test", None, "2099-04-17T00:00:00+00:00")
    store.put_record(message_id, record, "test")
    store.start_triage(message_id, CHANNEL)
    for state in ("planned", "running", "confirmed"):
        store.set_triage(message_id, state)
    base_values, suspect_values = [1000.0, 1003.0, 998.5, 1001.0, 999.0], [760.0, 758.5, 761.0, 759.5, 762.0]
    base, suspect = commits_of(record)
    plan = {"schema": 1, "kind": "plan", "template": "sysbench-cpu", "argv": ["sysbench", "cpu", "run"],
            "metric": "sysbench.events_per_second", "better": "higher"}
    samples = [{"role": role, "commit": commit, "index": index, "value": value, "seconds": 1.0,
                "running_kernel": commit, "attempts": 1, "stdout": "", "metrics": {}}
               for index, (role, commit, value) in enumerate(
                   [("base", base, value) for value in base_values]
                   + [("suspect", suspect, value) for value in suspect_values])]
    store.save_run(message_id, plan, {"host": "lab-local", "base_commit": base, "suspect_commit": suspect,
                                      "plan": plan, "samples": samples, "status": "done", "error": None,
                                      "verdict": decide(base_values, suspect_values, "higher", -24.6, 2.0).to_json(),
                                      "events": []})


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


@pytest.fixture
def world(tmp_path: Path, smtp: SmtpServer):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mail.toml").write_text(f'[smtp]\nserver = "127.0.0.1"\nport = {smtp.port}\nsecurity = "none"\n'
                                     'from = "Perf Triage <perf-triage@example.org>"\n'
                                     '[lists]\nallowed = ["linux-kernel@vger.kernel.org"]\n'
                                     '[web]\nbase_url = "https://triage.example.org"\n')
    with SqliteStore(tmp_path / "s.db") as store:
        confirmed(store, POISON, report(POISON, "=?utf-8?q?Evil=0D=0ABcc=3A_bcc-victim@attacker.example?= "
                                                "<evil@attacker.example>"))
        confirmed(store, CLEAN, report(CLEAN, "Tomas Berg <tomas.berg@example.org>"))
        # the poisoned report's send asked first, the clean one's two seconds later
        for number, message_id in enumerate((POISON, CLEAN)):
            store.record_action(f"click-{number}", message_id, "send-upstream", "U0SENDER", "asked")
        yield store, load_settings(rules), tmp_path / "locks.db"


def results(store: SqliteStore) -> dict[str, tuple[str, str]]:
    return {message_id: (row.action, row.detail) for message_id in (POISON, CLEAN)
            for row in store.actions_of(message_id) if ":" in row.action}


def test_a_from_name_that_decodes_to_a_line_break_blocks_no_later_send(world, smtp: SmtpServer) -> None:
    store, settings, locks = world
    assert len(asked.carry_out(store, settings, locks, 5, names=asked.MAIL_ASKS)) == 2
    assert set(results(store)) == {POISON, CLEAN} and all(item[0] == "send-upstream:done"
                                                         for item in results(store).values())
    poisoned, clean = smtp.received
    # the name cannot be written: the bare address is, and no header was injected
    assert poisoned.rcpt_tos == ["evil@attacker.example", "linux-kernel@vger.kernel.org"]
    headers = poisoned.content.split(b"\r\n\r\n", 1)[0].decode()
    assert "\r\nTo: evil@attacker.example\r\n" in headers and "Bcc" not in headers and "bcc-victim" not in headers
    assert clean.rcpt_tos == ["tomas.berg@example.org", "linux-kernel@vger.kernel.org"]


def test_a_fault_while_carrying_out_one_ask_is_its_result_said_once(world, smtp: SmtpServer,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    store, settings, locks = world
    reply_for = asked.reply_for

    def faulty(store_, message_id, rules, **options):  # a fault of ours that only this report meets
        if message_id == POISON:
            raise RuntimeError("header\r\nvalue unexpected")
        return reply_for(store_, message_id, rules, **options)
    monkeypatch.setattr(asked, "reply_for", faulty)
    caplog.set_level(logging.ERROR)
    assert len(asked.carry_out(store, settings, locks, 5, names=asked.MAIL_ASKS)) == 2
    assert results(store)[POISON] == ("send-upstream:failed", "RuntimeError: header value unexpected")
    assert results(store)[CLEAN][0] == "send-upstream:done"
    [clean] = smtp.received
    assert clean.rcpt_tos[0] == "tomas.berg@example.org"
    said = [row for row in store.outbox(message_id=POISON) if row.kind.startswith("action-")]
    assert [row.payload["text"] for row in said] == ["<@U0SENDER> send-upstream: RuntimeError: header value unexpected"]
    assert any(record.exc_info for record in caplog.records)  # its traceback, in the log once
    # said once: the next pass carries nothing out again
    assert asked.carry_out(store, settings, locks, 5, names=asked.MAIL_ASKS) == []
    assert len(smtp.received) == 1


def test_a_machine_short_of_open_files_fails_no_ask_for_good(world, smtp: SmtpServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    store, settings, locks = world
    load = asked.load_mail_rules
    short = {"passes": 1}

    def out_of_files(folder: Path):
        if short["passes"]:  # as rules/loader.py's read_file says it when open() fails with EMFILE
            cause = OSError(errno.EMFILE, "Too many open files")
            raise RulesError(f"{folder / 'mail.toml'}: cannot be read: {cause.strerror}") from cause
        return load(folder)
    monkeypatch.setattr(asked, "load_mail_rules", out_of_files)
    assert asked.carry_out(store, settings, locks, 5, names=asked.MAIL_ASKS) == []
    assert results(store) == {} and smtp.received == []  # nothing stored as failed: both wait
    assert len(store.waiting_actions("send-upstream")) == 2
    short["passes"] = 0  # the next pass, with files to spare: both go out
    assert len(asked.carry_out(store, settings, locks, 5, names=asked.MAIL_ASKS)) == 2
    assert [item[0] for item in results(store).values()] == ["send-upstream:done"] * 2 and len(smtp.received) == 2
