"""Actions stage: carry out what a team member asked from Slack that takes the lab or the mail —
test the fix posted in the thread, bisect, send the drafted reply upstream.

triagebot/actions/act.py keeps the ask (an action row and its thread reply). The daemon's pass
sends the replies asked for (`MAIL_ASKS`); the lab's asks (`LAB_ASKS`: test a fix, bisect) are
carried out on the lab host's after-verdict runner (after_verdict_jobs.py: the daemon's thread
for that host, or on PostgreSQL a worker's job), so that a bisection of hours holds up no poll
and no post. `carry_out` takes each ask without a result, oldest first, and does it through the
same stage functions as the commands: `fix_testing.run_fix_test` (`triage test-fix`, stored with its
own reply and lifecycle move), `after_verdict.bisect_on_lab` (`triage bisect`) and
`reply.send.send_reply` (`triage reply --send`, its mail outbox: sent once, a send cut off is never
repeated without a person). Its
result is kept as one more action row (`test-fix:done`, `bisect:failed`, …) with its thread
reply, in one transaction: an ask is carried out once; a crash before its result is kept does it
again on the next pass (the lab's work; the mail outbox then refuses to send twice).
"""
from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from email.utils import make_msgid, parseaddr
from pathlib import Path

from triagebot.actions.act import ASKED, finish
from triagebot.bisect.lab import NO_BISECT_HOST, bisect_on_lab, plan_bisect
from triagebot.bisect.search import FOUND, BisectBudget, bisect_summary
from triagebot.errors import TriageError
from triagebot.fix_test.flow import HostBusy, run_fix_test
from triagebot.lab.runner import can_bisect, rerun_host
from triagebot.logs import event
from triagebot.reproduce.hosts import choose_host
from triagebot.reproduce.materials import with_materials_over_http
from triagebot.rules.mail import load_mail_rules
from triagebot.rules.settings import Settings
from triagebot.store.protocol import ActionRow, Store

log = logging.getLogger("triagebot.asked")

TESTER = "triagebot lab <triagebot@localhost>"  # the drafted Tested-by: of a fix tested from Slack
LAB_ASKS = ("test-fix", "bisect")  # run on a lab host: by the host's after-verdict runner
MAIL_ASKS = tuple(name for name in ASKED if name not in LAB_ASKS)  # sent by the daemon's pass


def ask_host(store: Store, settings: Settings, asked: ActionRow) -> str:
    """The lab host an ask runs on ("" when none: it then ends at once as its error): a fix test
    on the report's confirmed rerun's host, a bisection on the closest host that can bisect."""
    if asked.action == "test-fix":
        return rerun_host(store, asked.message_id)
    if asked.action != "bisect":
        return ""
    report = store.get_record(asked.message_id)
    able = [host for host in settings.need_hosts() if can_bisect(host)]
    match = choose_host(able, report.test_machine, parameters=report.parameters) if report and able else None
    return match.host.name if match is not None else ""


def waiting_hosts(store: Store, settings: Settings) -> dict[str, str]:
    """Host -> the first report whose lab ask (test a fix, bisect) waits to be carried out there."""
    found: dict[str, str] = {}
    for asked in store.waiting_actions(*LAB_ASKS):
        if store.get_triage(asked.message_id) is not None:
            found.setdefault(ask_host(store, settings, asked), asked.message_id)
    return found


def carry_out(store: Store, settings: Settings, database: Path, budget: int,
              bisect_budget: BisectBudget | None = None, *, names: tuple[str, ...] = ASKED,
              only_host: str | None = None) -> list[int]:
    """Do every asked action of `names` without a result, oldest first (with `only_host`, only
    the lab asks that run on that host); the ids of those finished. A lab ask runs to its end: a
    stop waits for it (a crash before its result is kept has it carried out again)."""
    finished = []
    for asked in store.waiting_actions(*names):
        row = store.get_triage(asked.message_id)
        if row is None:
            continue
        if only_host is not None and ask_host(store, settings, asked) != only_host:
            continue
        try:
            done, detail = _carry_out_one(store, settings, database, budget, bisect_budget or BisectBudget(), asked)
        except HostBusy as busy:  # the host runs something else: the asked action waits for the next pass
            event(log, logging.INFO, "asked action waits for its host", event="action.waiting",
                  action=asked.action, message_id=asked.message_id, detail=str(busy))
            continue
        except TriageError as error:
            done, detail = False, str(error)
        event(log, logging.INFO if done else logging.WARNING, "asked action carried out", event="action.carried",
              action=asked.action, message_id=asked.message_id, user=asked.user_id, done=done, detail=detail)
        if finish(store, asked, done, detail, row.channel):
            finished.append(asked.action_id)
    return finished


def _carry_out_one(store: Store, settings: Settings, database: Path, budget: int, bisect_budget: BisectBudget,
                   asked: ActionRow) -> tuple[bool, str]:
    if asked.action == "test-fix":
        return test_fix(store, settings, database, asked.message_id, budget)
    if asked.action == "bisect":
        return bisect_report(store, settings, database, asked.message_id, bisect_budget)
    return send_upstream(store, settings, asked.message_id, f"slack:{asked.user_id}")


def test_fix(store: Store, settings: Settings, database: Path, message_id: str, budget: int) -> tuple[bool, str]:
    """As `triage test-fix MESSAGE-ID`, through the same flow (fix_testing.run_fix_test): the newest
    fix series of the thread, on the confirmed rerun's host; the result is stored with its own reply
    in the thread and the lifecycle move `fix-tested`. HostBusy propagates: the click waits."""
    outcome = run_fix_test(store, settings, database, message_id, budget=budget, tester=TESTER)
    if outcome.status != "done":
        return False, f"no fix tested: {outcome.result.get('reason', outcome.status)}"
    result = outcome.result
    return True, f"v{result['version']} on {result['host']}: {result['recovery']['sentence']}"


def bisect_report(store: Store, settings: Settings, database: Path, message_id: str,
                  budget: BisectBudget) -> tuple[bool, str]:
    """As `triage bisect MESSAGE-ID`: the report's base..culprit on the closest host that can bisect."""
    report = store.get_record(message_id)
    if report is None:
        return False, "the report's record is not stored"
    able = [host for host in settings.need_hosts() if can_bisect(host)]
    match = choose_host(able, report.test_machine, parameters=report.parameters)
    if match is None:
        return False, NO_BISECT_HOST
    report, _notes = with_materials_over_http(report, store, settings.http)
    setup = plan_bisect(report, match.host, settings.need_templates(), settings.floors)
    if isinstance(setup, str):
        return False, setup
    stored, _bisect_id, _posted = bisect_on_lab(store, database, message_id, match.host, setup.plan,
                                                setup.floor_percent, setup.good, setup.bad, budget)
    return stored["status"] == FOUND, bisect_summary(stored)


def send_upstream(store: Store, settings: Settings, message_id: str, requested_by: str) -> tuple[bool, str]:
    """As `triage reply MESSAGE-ID --send`: the stored reply, else a new draft, sent once."""
    from triagebot.parse.report import parse_message
    from triagebot.reply.draft import NoReply, draft_reply
    from triagebot.reply.record import on_record
    from triagebot.reply.send import ReplyInDoubt, SmtpTransport, read_mail, send_reply

    rules = load_mail_rules(settings.rules_dir)
    if rules.server is None:
        return False, "rules/mail.toml has no [smtp] server: nothing can be sent"
    stored = store.mail_of(message_id)
    if stored is not None:
        message = read_mail(stored.raw)
    else:
        report, raw = store.get_record(message_id), store.get_raw(message_id)
        if report is None or raw is None:
            return False, "the report is not stored"
        if not rules.base_url:
            return False, "rules/mail.toml has no [web] base_url: the reply links to the report's page"
        triage = store.get_triage(message_id)
        domain = (parseaddr(rules.from_)[1].rpartition("@")[2] if rules.from_ else "") or "triagebot.invalid"
        try:
            message = draft_reply(raw, report, str(triage.state) if triage else "", store.latest_run(message_id),
                                  from_=rules.from_, base_url=rules.base_url,
                                  reply_message_id=make_msgid("triage", domain=domain), date=datetime.now(UTC),
                                  record=on_record(store, message_id))
        except NoReply as refused:
            return False, str(refused)
    try:
        sent = send_reply(store, message_id, message, rules, SmtpTransport(rules, os.environ),
                          requested_by=requested_by, parse=parse_message)
    except ReplyInDoubt as doubt:
        return False, f"{doubt} (a person checks the archive, then `triage reply --send --resend-in-doubt`)"
    return True, f"reply <{sent.row.reply_message_id}> {sent.how}"
