"""Presentation: what the store holds about one report, gathered once for `triage show` and the
web page (triagebot/web/): the record, the thread it belongs to, its last rerun, its triage row
and its notifications. Read-only: nothing here writes to the store."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from triagebot.parse.thread import Thread, build_threads, reports_by_key
from triagebot.records.report import Report
from triagebot.store.lifecycle_protocol import LifecycleMove, ReportLink
from triagebot.store.protocol import FixTestRow, OutboxRow, Store, TriageRow, UnreadableRecord


@dataclass(frozen=True)
class ReportView:
    key: str  # what it is stored under: its Message-ID, or the synthetic key of a message without one
    report: Report
    thread: Thread | None  # the thread holding it, when that has more than this message
    thread_reports: dict[str, Report]  # the thread's records by thread key
    latest_run: dict[str, Any] | None
    triage: TriageRow | None
    notifications: list[OutboxRow]
    moves: tuple[LifecycleMove, ...] = ()  # after the verdict (triagebot/lifecycle/)
    links: tuple[ReportLink, ...] = ()  # later reports of its regression (also seen) or commit (linked)
    bisects: tuple[dict[str, Any], ...] = ()  # its bisections on the lab, oldest first
    fix_tests: tuple[FixTestRow, ...] = ()  # fixes from its thread tested on the lab, oldest first
    cut_short_run: dict[str, Any] | None = None  # its newest run, when that was interrupted: samples, no verdict


def gather_report(store: Store, key: str) -> ReportView | None:
    """Everything about the report stored under `key`; None when no record is stored there."""
    report = store.get_record(key)
    if report is None:
        return None
    thread_records = [item for item in (_readable(store, other) for other in store.thread_of(key)) if item]
    thread, by_key = None, {}
    if len(thread_records) > 1:
        by_key = reports_by_key(thread_records)
        thread = next((found for found in build_threads(thread_records)
                       if key in {member for member, _ in found.order}), None)
    return ReportView(key=key, report=report, thread=thread, thread_reports=by_key,
                      latest_run=store.latest_run(key), triage=store.get_triage(key),
                      notifications=store.outbox(message_id=key), moves=tuple(store.moves_of(key)),
                      links=tuple(store.links_of(key)), bisects=tuple(store.bisects(key)),
                      fix_tests=tuple(store.fix_tests(key)), cut_short_run=store.cut_short_run(key))


def _readable(store: Store, key: str) -> Report | None:
    """Another message of the thread; one whose record cannot be read is left out of it."""
    try:
        return store.get_record(key)
    except UnreadableRecord:
        return None
