"""Actions stage: a person decides a reading the daemon was unsure of — take it on, or dismiss it
(issue 38: the day's digest is a place to decide; nothing that may be a report is dropped silently).

The same decision from every place it is asked: a digest line's button on Slack (web/slack_app.py),
`/triage take-on|dismiss <id>`, `triage take-on|dismiss ID` on the command line. It is refused, with
its reason and nothing written, when the message is not stored, is a reply (a reply is read in its
report's thread, never taken on by itself), is taken on already (to take on) or was decided the same
way already, or the request was acted on before (a replay). Otherwise in ONE transaction: the
decision row (who, how, when, what the parser read and why it was unsure: the label `triage labels
export` writes) and, to take it on, the triage row in state `new` with its Slack parent and a thread
reply saying who took it on: the daemon plans and reruns it as any report it took on itself.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from triagebot.actions.act import Outcome
from triagebot.logs import event
from triagebot.notify import render
from triagebot.records.certainty import uncertain_reasons
from triagebot.records.threads import normalize_message_id
from triagebot.rules.routing import Routing
from triagebot.store.protocol import DECISIONS, Store, UnreadableRecord

log = logging.getLogger("triagebot.actions")

PERMISSION = {"take-on": "run", "dismiss": "mark"}  # rules/routing.toml [slack], as the other actions
DECISION_KIND = "decision-"  # + the decision's id: the thread reply of a take-on


@dataclass(frozen=True)
class Decision:
    request_key: str  # a Slack request's digest, or a command's own key: a replay has the same
    message_id: str
    decision: str  # take-on / dismiss
    decided_by: str  # a Slack user id (U…), or the command line's user
    via: str  # slack / cli
    note: str = ""


def _who(decision: Decision) -> str:
    return f"<@{decision.decided_by}>" if decision.via == "slack" else render.escape(decision.decided_by)


def refusal(store: Store, decision: Decision) -> str | None:
    """Why the decision does not apply (None: it does)."""
    if decision.decision not in DECISIONS:
        return f"unknown decision {decision.decision!r} (one of {', '.join(DECISIONS)})"
    try:
        report = store.get_record(decision.message_id)
    except UnreadableRecord as error:
        return str(error)
    if report is None:
        return f"no message <{normalize_message_id(decision.message_id)}> is stored"
    if report.kind == "reply" and decision.decision == "take-on":
        return "a reply is read in its report's thread, not taken on by itself"
    row = store.get_triage(decision.message_id)
    if row is not None:  # a report the daemon runs is closed by marking it invalid, not by a dismissal
        return f"the report is taken on already ({row.state})"
    last = store.decision_of(decision.message_id)
    if last is not None and last.decision == decision.decision:
        return f"it was decided already: {last.decision} by {last.decided_by} at {last.decided_at}"
    return None


def decide(store: Store, routing: Routing, decision: Decision) -> Outcome:
    """Check and record one decision (see the module text); to take on, start its triage too."""
    def refuse(reason: str) -> Outcome:
        event(log, logging.WARNING, "decision refused", event="decision.refused", decision=decision.decision,
              message_id=decision.message_id, user=decision.decided_by, reason=reason)
        return Outcome(False, f"Not done: {reason}.")

    with store.transaction():  # the checks and the writes under the one write lock
        reason = refusal(store, decision)
        if reason is not None:
            return refuse(reason)
        report = store.get_record(decision.message_id)
        assert report is not None  # refusal() checked
        reasons = "; ".join(uncertain_reasons(report))
        decision_id = store.record_decision(decision.request_key, decision.message_id, decision.decision,
                                            decision.decided_by, decision.via, report.kind, reasons, decision.note)
        if decision_id is None:
            return refuse("this request was acted on already (a replayed request)")
        if decision.decision == "take-on":
            stored = store.get_message(decision.message_id)
            channel = routing.channel_for(report, stored.list_name if stored else None)
            store.start_triage(decision.message_id, channel)
            store.enqueue(decision.message_id, "parent", channel, render.parent_message(report, "new"))
            text = f"{_who(decision)} took this on from the unsure readings" + (
                f": {render.escape(decision.note)}" if decision.note else "")
            store.enqueue(decision.message_id, f"{DECISION_KIND}{decision_id}", channel, render.action_reply(text))
    done = "taken on: the daemon plans and reruns it" if decision.decision == "take-on" else \
        "dismissed: kept as a label, not listed again"
    event(log, logging.INFO, "decision kept", event=f"decision.{decision.decision}", message_id=decision.message_id,
          user=decision.decided_by, via=decision.via, kind=report.kind)
    return Outcome(True, f"Done: <{normalize_message_id(decision.message_id)}> {done}.")
