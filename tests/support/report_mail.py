"""Test helpers: store the lifecycle fixture mails as ingest does, and take a report to a verdict."""
from __future__ import annotations

from tests.conftest import FIXTURES
from triagebot.notify import render
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_to_json
from triagebot.store.protocol import IncomingMessage
from triagebot.store.sqlite import SqliteStore

MAIL = FIXTURES / "lifecycle"
REPORT = "202501061203.4d2a9c1e-lkp@intel.com"  # lkp-first-linux-next.eml
CHANNEL = "C0PERF0001"


def store_mail(store: SqliteStore, *names: str, received_at: str = "2025-02-01T00:00:00+00:00") -> list[str]:
    """Parse and store fixture messages (fixtures/lifecycle/NAME.eml); the ids that were new."""
    incoming = []
    for name in names:
        raw = (MAIL / f"{name}.eml").read_bytes()
        record = report_to_json(parse_message(raw, Source("eml")))
        incoming.append(IncomingMessage(record["message_id"], raw, "eml", received_at, "linux-kernel",
                                        in_reply_to=record.get("in_reply_to"),
                                        references=tuple(record.get("references") or ()), record=record,
                                        parser_version="test"))
    return store.ingest_batch(incoming)


def take_on(store: SqliteStore, message_id: str = REPORT, states: tuple[str, ...] = ("planned", "running",
                                                                                      "confirmed")) -> None:
    """Take a report on as the daemon does (triage row, parent queued) and move it through `states`."""
    report = store.get_record(message_id)
    assert report is not None
    with store.transaction():
        store.start_triage(message_id, CHANNEL)
        store.enqueue(message_id, "parent", CHANNEL, render.parent_message(report, "new"))
    for state in states:
        store.set_triage(message_id, state)
