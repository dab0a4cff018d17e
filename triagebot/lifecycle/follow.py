"""Lifecycle stage: follow each report taken on after its verdict, from the mail the store gets.

`observe` reads newly stored messages and moves the reports they concern (detect.py says how);
`mark_stale` moves reports with no activity for a number of days. Each move is stored with the
message that caused it and, in the same transaction, an outbox row that edits the report's
Slack parent (one edited parent: no new thread, no new post).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from triagebot.lifecycle.detect import (
    Move,
    Target,
    cause_text,
    commit_of_cause,
    move_for,
    own_text,
    same_series_version,
)
from triagebot.lifecycle.same import REPORT_KINDS, culprit, first_of, relation
from triagebot.lifecycle.states import EMOJI, LifecycleState, current
from triagebot.logs import event
from triagebot.notify import render
from triagebot.parse.message import decode_message
from triagebot.parse.patches import patch_subject
from triagebot.records.report import Report
from triagebot.records.states import TriageState
from triagebot.rules.trees import TreeRules
from triagebot.store.lifecycle_protocol import LifecycleMove
from triagebot.store.protocol import Store, TriageRow, UnreadableRecord, utc_text

log = logging.getLogger("triagebot.lifecycle")

DEFAULT_STALE_DAYS = 30.0  # a report nobody wrote about for this long is stale


def culprit_of(report: Report) -> tuple[str | None, str | None]:
    """The culprit commit's sha and subject, when the report names one."""
    commit = next((commit for commit in report.commits if commit.role == "culprit"), None)
    return (commit.sha, commit.subject) if commit else (None, None)


def regression_tree(report: Report, rules: TreeRules) -> str:
    """The watched tree the report's regression lives in (the culprit's tree, else the rules')."""
    commit = next((commit for commit in report.commits if commit.role == "culprit"), None)
    return rules.regression_tree_of(commit.tree if commit else None)


def targets(store: Store, rules: TreeRules | None = None) -> list[tuple[TriageRow, Target]]:
    """The reports followed (every one taken on), each with what a message or commit is matched
    against; with the trees' `rules`, the tree each regression lives in."""
    found = []
    for row in store.triage_in(*TriageState):
        try:
            report = store.get_record(row.message_id)
        except UnreadableRecord:
            continue
        if report is None:
            continue
        sha, subject = culprit_of(report)
        tree = regression_tree(report, rules) if rules is not None else ""
        found.append((row, Target(row.message_id, sha, subject, tree)))
    return found


def parent_payload(store: Store, row: TriageRow) -> dict:
    """The report's Slack parent as the daemon renders it, with its lifecycle moves and the
    reports joined to it at the end (read from the store, so call it after writing them)."""
    report = store.get_record(row.message_id)
    assert report is not None
    payload = render.parent_message(report, row.state, plan=row.plan, run=store.latest_run(row.message_id))
    lines = [f"{EMOJI.get(LifecycleState(move.state), '')} *{move.state}* {render.escape(where_of(move))} "
             f"{move.moved_at[:10]}: {render.escape(move.note)}".replace("*  ", "* ") + _cause_link(move.cause_id)
             for move in store.moves_of(row.message_id)]
    for link in store.links_of(row.message_id):
        joined = store.get_record(link.joined_id)
        label = joined.subject if joined is not None else link.joined_id
        lines.append(f":link: *{link.relation}*: {render.link(render.lore_url(link.joined_id), label)}")
    return render.with_section(payload, "\n".join(lines)) if lines else payload


def _cause_link(cause_id: str) -> str:
    """The mail that caused a move, linked on lore; a commit of a watched tree is named (the note says which)."""
    if not cause_id or commit_of_cause(cause_id) is not None:
        return ""
    return f" ({render.link(render.lore_url(cause_id), 'mail')})"


def record_move(store: Store, row: TriageRow, move: Move, cause_id: str) -> LifecycleMove | None:
    """Store one move (if allowed from where the report is) and the edit of its Slack parent."""
    with store.transaction():
        moves = store.moves_of(row.message_id)
        if not current([item.state for item in moves]).can_move_to(move.state):
            return None
        stored = store.add_move(row.message_id, move.state, cause_id, move.note)
        if stored is None:
            return None
        if store.outbox(message_id=row.message_id):  # it has a Slack parent (sent or on its way)
            store.enqueue(row.message_id, f"update-{move.state}-{stored.move_id}", row.channel,
                          parent_payload(store, row))
    event(log, logging.INFO, "report moved", event="lifecycle.moved", message_id=row.message_id,
          state=str(move.state), cause=cause_id)
    return stored


def observe(store: Store, message_ids: Iterable[str]) -> list[LifecycleMove]:
    """Move the reports these newly stored messages concern; returns the moves made."""
    message_ids = list(message_ids)
    followed = targets(store) if message_ids else []
    if not followed:
        return []
    made = []
    for message_id in message_ids:
        try:
            message = store.get_record(message_id)
        except UnreadableRecord:
            continue
        raw = store.get_raw(message_id)
        if message is None or raw is None:
            continue
        text = own_text(decode_message(raw).body)
        thread = set(store.thread_of(message_id))
        for row, target in followed:
            if target.key == message_id:
                continue
            move = move_for(message, text, target, in_thread=target.key in thread)
            if move is not None and move.state == LifecycleState.FIX_PROPOSED and _version_moved(
                    store, row.message_id, message_id, message.subject):
                continue
            if move is not None and (stored := record_move(store, row, move, message_id)) is not None:
                made.append(stored)
    return made


def _version_moved(store: Store, report_id: str, message_id: str, subject: str) -> bool:
    """The `[PATCH …]` mail `message_id` is of a series version that already moved the report to
    fix-proposed (its cover letter or another of its patches came first)."""
    patch = patch_subject(message_id, subject)
    if patch is None:
        return False
    for move in store.moves_of(report_id):
        if move.state != LifecycleState.FIX_PROPOSED or not move.cause_id or commit_of_cause(move.cause_id):
            continue
        try:
            cause = store.get_record(move.cause_id)
        except UnreadableRecord:
            continue
        earlier = patch_subject(move.cause_id, cause.subject) if cause is not None else None
        if earlier is not None and same_series_version(patch, earlier):
            return True
    return False


def _last_activity(store: Store, row: TriageRow) -> str:
    times = [row.updated_at]
    for key in store.thread_of(row.message_id):
        stored = store.get_message(key)
        if stored is not None:
            times.append(stored.received_at)
    times += [move.moved_at for move in store.moves_of(row.message_id)]
    return max(times)


def mark_stale(store: Store, now: datetime | None = None, days: float = DEFAULT_STALE_DAYS) -> list[LifecycleMove]:
    """Reports decided but with no mail, move or run for `days`: stale (no message caused it)."""
    cutoff = utc_text((now or datetime.now(UTC)) - timedelta(days=days))
    made = []
    for row, _target in targets(store):
        if not row.state.final:
            continue
        if not current([move.state for move in store.moves_of(row.message_id)]).can_move_to(LifecycleState.STALE):
            continue
        last = _last_activity(store, row)
        if last < cutoff:
            move = Move(LifecycleState.STALE, f"no activity since {last[:10]} ({days:g} days)")
            if (stored := record_move(store, row, move, "")) is not None:
                made.append(stored)
    return made


def where_of(move: LifecycleMove) -> str:
    """Where a move happened, as every display says it: `in TREE` for a watched tree's commit,
    `posted` for a fix a mail proposed (posted, not landed), `lab` for a fix the lab tested,
    `mail` for another move a mail caused (invalid), '' for a move nothing caused (stale)."""
    commit = commit_of_cause(move.cause_id) if move.cause_id else None
    if commit is not None:
        return f"in {commit[0]}"
    if not move.cause_id:
        return ""
    return {LifecycleState.FIX_PROPOSED: "posted", LifecycleState.FIX_TESTED: "lab"}.get(
        LifecycleState(move.state), "mail")


def render_moves(moves: list[LifecycleMove]) -> str:
    """The moves as `triage show` prints them: one line each, where it happened (`in TREE` or
    `posted`), and the message or commit that caused it."""
    lines = [f"  after:    {current([move.state for move in moves])}"]
    for move in moves:
        cause = f" {cause_text(move.cause_id)}" if move.cause_id else ""
        lines.append(f"    {move.moved_at}  {move.state:13} {where_of(move):9} {move.note}{cause}".rstrip())
    return "\n".join(lines)


def join_reports(store: Store, message_ids: Iterable[str]) -> list[tuple[str, str, str]]:
    """Join each new report to the first stored report of its regression (same.py's rule): also
    seen, or linked for the other direction. The first report's Slack parent, when it has one,
    is edited to name it; an also-seen report is not taken on (no thread of its own). Returns
    (joined, first, relation) for each join made."""
    new = []
    for message_id in message_ids:
        try:
            report = store.get_record(message_id)
        except UnreadableRecord:
            continue
        if report is not None and culprit(report) is not None and store.joined_to(message_id) is None:
            new.append((message_id, report))
    if not new:
        return []
    earlier = [(item.key, item.report) for item in reversed(store.list_records(kind=REPORT_KINDS))]  # oldest first
    made = []
    for message_id, report in new:
        first = first_of(message_id, report, earlier, lambda key: store.joined_to(key) is not None)
        if first is None:
            continue
        relation_name, rule = relation(first[1], report) or ("", "")
        with store.transaction():
            if not store.link_report(message_id, first[0], relation_name, rule):
                continue
            row = store.get_triage(first[0])
            if row is not None and store.outbox(message_id=first[0]):
                store.enqueue(first[0], f"update-{relation_name}-{message_id}", row.channel,
                              parent_payload(store, row))
        event(log, logging.INFO, "report joined", event="lifecycle.joined", message_id=message_id,
              first=first[0], relation=relation_name, rule=rule)
        made.append((message_id, first[0], relation_name))
    return made

