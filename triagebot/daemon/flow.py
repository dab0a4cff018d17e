"""The daemon's stages after ingest, each one step over stored state: admit, plan, run.

A report moves new -> planned | refused -> running -> confirmed | not-reproduced |
inconclusive | error (states.py). Each move is one transaction that also writes the outbox
rows announcing it, so a crash anywhere leaves a state and its notifications together, and a
restart simply takes every report up again where its state says:

- admit: a stored LKP or human report dated within the admission window and not yet taken on
  gets a triage row (state new, channel from rules/routing.toml) and its parent message;
- plan: a new report is planned for the closest lab host (or refused, with why): the plan
  reply, the parent updated;
- run: a planned report (or one whose run a crash or a stop cut short: it starts over) is
  rerun when its host can switch kernels and is free; progress replies at the first sample
  and halfway to the first look; then the verdict reply, the samples plot and the final parent.
  A run stopped by the daemon's stop keeps its samples (a run stored as cut short) and the
  report waits again: its next run starts over.

Whatever goes wrong with ONE report while it is planned, run or decided (a plan that cannot be
read, a benchmark or hook that fails, a bug) ends that report in state `error` with the reason,
told to the team like any failed run, and the pass goes on with the other reports: one report
never stops the daemon. Only a failing store stops the pass (it is no report's fault).
"""
from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import logging
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from triagebot.daemon.dispatch.inprocess import InlineDispatcher
from triagebot.daemon.dispatch.protocol import Dispatcher, RunJob
from triagebot.errors import TriageError
from triagebot.fix_test.flow import archive_of
from triagebot.fix_test.series import FixRefused
from triagebot.fix_test.under_review import SeriesToTest, measure_series, series_mbox, series_to_test
from triagebot.kernels.config import KernelConfig
from triagebot.lab.context import DaemonContext, StopRequested, patiently
from triagebot.lab.mail_code import MayBuild, team_rule
from triagebot.lab.queue import RERUNS, LabView, lab_view, preferred_host
from triagebot.logs import event
from triagebot.notify import render
from triagebot.notify.plot import run_plot
from triagebot.records.certainty import uncertain_reasons
from triagebot.records.report import Report, Source
from triagebot.records.states import TriageState
from triagebot.reproduce.executors.choose import executor_for
from triagebot.reproduce.host_lock import host_busy, host_lock
from triagebot.reproduce.hosts import switcher_words
from triagebot.reproduce.limits import host_shape
from triagebot.reproduce.materials import with_materials_over_http
from triagebot.reproduce.plan import Plan, Refusal, plan_from_json, plan_report
from triagebot.reproduce.report_config import report_kernel_config_over_http
from triagebot.reproduce.rounds import commits_of, rounds_within
from triagebot.reproduce.runner import RunRecord, Sample, rerun
from triagebot.reproduce.schedule import Assignment
from triagebot.rules.hosts import HOSTS_FILE, Host
from triagebot.rules.settings import Settings
from triagebot.store.protocol import Store, StoreError, TriageRow, UnreadableRecord, utc_text

log = logging.getLogger("triagebot.daemon")

# what the daemon takes on: claimed slowdowns, of merged commits or of a series under review (issue 38)
REPORT_KINDS = ("lkp-regression", "human-report", "patch-regression")
MAX_REASON = 500  # characters of an unexpected error kept as a report's reason
T = TypeVar("T")


def admit(store: Store, lab: DaemonContext, admit_days: float, now: datetime | None = None) -> list[str]:
    """Take on the reports dated within `admit_days`: a triage row and a parent message each. A
    report the daemon is unsure of (certainty.py) is not taken on: the day's digest lists it."""
    since = utc_text((now or datetime.now(UTC)) - timedelta(days=admit_days))
    admitted = []
    for message_id in store.reports_to_admit(REPORT_KINDS, since):
        joined = store.joined_to(message_id)
        if joined is not None and joined.relation == "also-seen":  # a re-report: on its first report's parent
            continue
        try:
            report = _stored_report(store, message_id)
        except UnreadableRecord:  # taken on all the same: planning it ends it in `error`, saying why
            report = _bare_report(message_id)
        else:
            if uncertain_reasons(report):
                continue  # no thread for what the daemon is unsure of: the day's digest lists it
        stored = store.get_message(message_id)
        channel = lab.settings.routing.channel_for(report, stored.list_name if stored else None)
        with store.transaction():
            if store.start_triage(message_id, channel):
                store.enqueue(message_id, "parent", channel, render.parent_message(report, "new"))
                admitted.append(message_id)
        event(log, logging.INFO, "report taken on", event="triage.admitted", message_id=message_id,
              channel=channel, subject=report.subject)
    return admitted


DIGEST_KIND = "digest"  # outbox kind prefix: a top-level post of its own, not a reply in a thread
DIGEST_DAYS_BACK = 7  # past days a (re)started daemon still posts a missed digest for
DIGEST_KINDS = ("human-report", "human-perf-complaint", "patch-regression", "reply")


def post_digests(store: Store, lab: DaemonContext, now: datetime | None = None) -> list[str]:
    """Enqueue the digest of each finished UTC day (the last DIGEST_DAYS_BACK) not yet digested:
    one top-level message per channel listing what the daemon was unsure of that day (certainty.py)
    — reports it did not take on for want of evidence, and replies in its threads whose stance is
    unsure — instead of a thread per mail. A day with nothing unsure gets no message."""
    today = (now or datetime.now(UTC)).astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    enqueued = []
    for back in range(DIGEST_DAYS_BACK, 0, -1):
        day = today - timedelta(days=back)
        by_channel: dict[str, list[tuple[Report, tuple[str, ...]]]] = {}
        for message_id in store.received_between(DIGEST_KINDS, utc_text(day), utc_text(day + timedelta(days=1))):
            item = _unsure_item(store, lab, message_id)
            if item is not None and item[1].message_id:
                by_channel.setdefault(item[0], []).append(item[1:])
        for channel, items in by_channel.items():
            # the outbox row hangs off the day's first item (rows name a stored message); the
            # cursor says the day's digest for this channel was written, whatever came after
            kind = f"{DIGEST_KIND}-{day.date().isoformat()}-{hashlib.sha256(channel.encode()).hexdigest()[:12]}"
            cursor = f"digest:{kind}"
            with store.transaction():
                if store.get_cursor(cursor) is not None:
                    continue
                store.enqueue(items[0][0].message_id or "", kind, channel,
                              render.digest_message(day.date().isoformat(), items))
                store.set_cursor(cursor, utc_text(now or datetime.now(UTC)))
            enqueued.append(kind)
            event(log, logging.INFO, "digest of unsure readings", event="triage.digest", channel=channel,
                  day=day.date().isoformat(), items=len(items))
    return enqueued


def _unsure_item(store: Store, lab: DaemonContext,
                 message_id: str) -> tuple[str, Report, tuple[str, ...]] | None:
    """(channel, record, why unsure) for a day's record the daemon is unsure of, else None."""
    try:
        report = store.get_record(message_id)
    except UnreadableRecord:
        return None  # an unreadable record is taken on and ends in error, saying why
    if report is None:
        return None
    reasons = uncertain_reasons(report)
    if not reasons:
        return None
    if store.decision_of(message_id) is not None:
        return None  # a person decided it already (the web page's list, a command): nothing to ask
    if report.kind == "reply":
        root = store.thread_root(message_id)
        row = store.get_triage(root) if root else None
        return (row.channel, report, reasons) if row is not None else None  # only the threads it runs
    if store.get_triage(message_id) is not None:
        return None
    stored = store.get_message(message_id)
    return lab.settings.routing.channel_for(report, stored.list_name if stored else None), report, reasons


def _stored_report(store: Store, message_id: str) -> Report:
    """The stored record of a report the triage tables name (that report's error if it is gone)."""
    report = store.get_record(message_id)
    if report is None:
        raise TriageError(f"no stored record for {message_id}, which the triage tables name")
    return report


def _bare_report(message_id: str) -> Report:
    """What a parent message can show of a report whose record cannot be read: its id."""
    return Report(message_id=message_id, in_reply_to=None, subject="", from_="", date=None,
                  source=Source("unknown"), kind="other")


def _host_named(hosts: tuple[Host, ...], name: str | None) -> Host | None:
    return next((host for host in hosts if host.name == name), None)


def plan_new(store: Store, lab: DaemonContext) -> list[str]:
    """Plan each new report for its closest host; a refusal says why. Returns the ids planned."""
    hosts = lab.settings.need_hosts()
    templates = lab.settings.need_templates()
    done = []
    for row in store.triage_in("new"):
        if lab.stop_requested():
            break
        try:
            _plan_one(store, lab, row, hosts, templates)
        except StoreError:
            raise
        except Exception as error:  # noqa: BLE001 - one report's failure is that report's error
            fail_report(store, lab, row, "planning", error)
        done.append(row.message_id)
    return done


def _plan_one(store: Store, lab: DaemonContext, row: TriageRow, hosts: tuple[Host, ...], templates) -> None:
    """Plan one new report (or refuse it), with its replies."""
    report = _stored_report(store, row.message_id)
    stored = report  # the parent shows the report as stored, not with the materials merged in
    match, alternatives = preferred_host(hosts, report)
    notes: list[str] = []
    if match is None:
        plan_json = Refusal(f"no host in {lab.settings.rules_dir / HOSTS_FILE}", ("a lab host",),
                            message_id=row.message_id).to_json()
        host_name = None
    else:
        report, notes = with_materials_over_http(report, store, lab.settings.http)
        plan = plan_report(report, templates, host=host_shape(match.host))
        plan_json = plan.to_json()
        host_name = match.host.name
        if isinstance(plan, Plan) and report.kind == "patch-regression":
            plan_json = with_series(store, lab.may_build(), report, plan, match.host)
        elif isinstance(plan, Plan) and not commits_of(report)[1]:
            plan_json = Refusal("the report names no culprit commit to rerun", ("a culprit commit",),
                                plan.source, row.message_id).to_json()
    state = "planned" if plan_json["kind"] == "plan" else "refused"
    reply = render.plan_reply(plan_json)
    if state == "planned" and match is not None:
        reply = _with_host_line(reply, match, notes, alternatives)
    with store.transaction():
        store.set_triage(row.message_id, state, plan=plan_json, host=host_name or "")
        store.enqueue(row.message_id, "plan", row.channel, reply)
        store.enqueue(row.message_id, "update-planned", row.channel,
                      render.parent_message(stored, state, plan=plan_json))
    event(log, logging.INFO, "report planned" if state == "planned" else "report refused",
          event=f"triage.{state}", message_id=row.message_id, host=host_name,
          reason=plan_json.get("reason"))
    lab.deliver()


def thread_raw(store: Store, message_id: str) -> list[bytes]:
    """The raw messages of a report's stored thread, oldest first."""
    return [raw for raw in (store.get_raw(key) for key in store.thread_of(message_id)) if raw is not None]


def asked_by(store: Store, message_id: str) -> str | None:
    """Who took the report on by hand (a digest's button: `slack:<user>`; `triage take-on`:
    `cli:<who>`), None when the daemon took it on by itself."""
    decision = store.decision_of(message_id)
    return f"{decision.via}:{decision.decided_by}" if decision is not None and decision.decision == "take-on" \
        else None


def with_series(store: Store, may_build: MayBuild, report: Report, plan: Plan, host: Host) -> dict:
    """A patch-regression's plan: the template's plan with the series it is rerun with (base against
    base+series, fix_test/under_review.py), or the refusal saying why there is none: the series or
    its base not found, or the host may not build code from mail (lab/mail_code.py)."""
    message_id = report.message_id or ""
    try:
        series = series_to_test(report, thread_raw(store, message_id))
    except FixRefused as refused:
        return Refusal(f"{refused}", ("the series' patch mails and its base",), plan.source, message_id).to_json()
    reason = may_build(host, series.describe(), series.senders, asked_by(store, message_id))
    if reason is not None:
        return Refusal(reason, ("a host allowed to build code from mail",), plan.source, message_id).to_json()
    return {**plan.to_json(), "series": series.to_json()}


def fail_report(store: Store, lab: DaemonContext, row: TriageRow, stage: str, error: BaseException) -> None:
    """End one report in state `error` with the reason, told to its thread and parent."""
    reason = f"{stage} failed: {_reason(error)}"
    run_json = {"host": row.host or "?", "status": "error", "error": reason, "samples": []}
    reply = render.verdict_reply(None, run_json)
    try:
        report = store.get_record(row.message_id) or _bare_report(row.message_id)
        parent = render.parent_message(report, "error", plan=row.plan, run=run_json)
    except StoreError:
        raise
    except Exception:  # noqa: BLE001 - a record the parent cannot show: the state still moves
        parent = render.parent_message(_bare_report(row.message_id), "error")
    _budget, again = rerun_asked(store, row.message_id, lab.budget)
    with store.transaction():
        store.set_triage(row.message_id, "error", note=reason)
        store.enqueue(row.message_id, f"verdict{again}", row.channel, render.with_buttons(reply, row.message_id))
        store.enqueue(row.message_id, f"update-final{again}", row.channel, render.with_buttons(parent, row.message_id))
    event(log, logging.ERROR, "report failed", event="triage.error", message_id=row.message_id,
          stage=stage, reason=reason)
    lab.deliver()


def _reason(error: BaseException) -> str:
    """The error in one line: a TriageError's own words, anything else with its type."""
    text = str(error) if isinstance(error, TriageError) else f"{type(error).__name__}: {error}"
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 1] + "…"


def _with_host_line(reply: dict, match, notes: list[str], alternatives: tuple[str, ...] = ()) -> dict:
    """The plan reply with the host it runs on (and whether that host can run it at all)."""
    line = f"Host: `{render.escape(match.host.name)}` (match {match.score:.2f} to the report's machine)"
    if alternatives:
        line += " or the first free of the equally similar " + ", ".join(
            f"`{render.escape(name)}`" for name in alternatives)
    if match.differences:
        line += "; differs: " + "; ".join(render.escape(item) for item in match.differences)
    if not match.host.can_switch_kernel:
        line += ("\n:warning: this host cannot switch kernels, so the report is not rerun here: "
                 "describe a lab host in hosts.toml"
                 + (f" ({render.escape(match.host.switcher_note)})" if match.host.switcher_note else ""))
    elif match.host.switcher is not None:
        line += (f"\nKernels: each commit built from `{render.escape(match.host.switcher.kernel_tree.name)}` and "
                 f"run {render.escape(switcher_words(match.host))}")
    for note in notes:
        line += f"\n_{render.escape(note)}_"
    return render.with_section(reply, line)


def run_planned(store: Store, lab: DaemonContext) -> list[str]:
    """Rerun planned reports one at a time, in the schedule's order, until no free host has one
    to run (`triage daemon` runs them in parallel through a ThreadDispatcher instead); returns
    the reports decided, in the order they were."""
    dispatcher = InlineDispatcher(lambda: contextlib.nullcontext(store), lambda own, job: run_job(own, lab, job))
    decided: list[str] = []
    while not lab.stop_requested():
        if not assign(store, lab, dispatcher):
            break
        done = dispatcher.finished()
        decided.extend(item.job.message_id for item in done if item.outcome is not None)
        if all(item.outcome is None for item in done):
            break  # nothing moved on (a host taken by another process): the next pass tries again
    return decided


def take_up_cut_runs(store: Store, lab: DaemonContext, dispatcher: Dispatcher) -> list[str]:
    """Reports left `running` by a process that is gone (nobody runs them, their host's lock is
    free) wait again: their run starts over, on the host the schedule gives them."""
    running = dispatcher.jobs_now().reports
    again = []
    for row in store.triage_in(TriageState.RUNNING):
        if row.message_id in running or (row.host and host_busy(lab.database, row.host)):
            continue
        store.set_triage(row.message_id, TriageState.PLANNED, note="its run was cut short: it starts over")
        event(log, logging.INFO, "run cut short: starts over", event="run.resumed", message_id=row.message_id,
              host=row.host)
        again.append(row.message_id)
    return again


def lab_now(store: Store, lab: DaemonContext, dispatcher: Dispatcher | None = None,
            now: datetime | None = None) -> LabView:
    """The hosts and the schedule as the daemon sees them now."""
    jobs = dispatcher.jobs_now() if dispatcher is not None else None
    return lab_view(store, lab.database, lab.settings.need_hosts(),
                    timedelta(minutes=lab.settings.max_wait_minutes), now or datetime.now(UTC),
                    jobs.running if jobs is not None else None,
                    jobs.awaiting_worker if jobs is not None else frozenset())


def assign(store: Store, lab: DaemonContext, dispatcher: Dispatcher, now: datetime | None = None) -> list[RunJob]:
    """Give the free hosts the reports the schedule picks, each move to `running` committed with
    its job (daemon/dispatch/protocol.py); then tell each waiting report's parent where it is queued.
    Returns the jobs handed over."""
    take_up_cut_runs(store, lab, dispatcher)
    view = lab_now(store, lab, dispatcher, now)
    hosts = {host.name: host for host in view.hosts}
    jobs = []
    for assignment in view.schedule.assignments:
        if lab.stop_requested():
            break
        row = store.get_triage(assignment.message_id)
        if row is None or row.state != TriageState.PLANNED:
            continue
        try:
            plan_json, moved = _plan_on(store, lab, row, hosts[assignment.host], assignment)
        except StoreError:
            raise
        except Exception as error:  # noqa: BLE001 - one report's failure is that report's error
            fail_report(store, lab, row, "planning for its host", error)
            continue
        job = RunJob(row.message_id, assignment.host)
        try:
            with store.transaction():
                store.set_triage(row.message_id, TriageState.RUNNING, plan=plan_json, host=assignment.host)
                if moved is not None:
                    store.enqueue(row.message_id, "moved", row.channel, render.moved_reply(moved))
                dispatcher.enqueue(store, job)
        except BaseException:
            dispatcher.abandon()
            raise
        event(log, logging.INFO, "run dispatched", event="run.dispatched", message_id=row.message_id,
              host=assignment.host, waited_seconds=round(assignment.waited.total_seconds()),
              past_cap=assignment.past_cap)
        dispatcher.launch()
        jobs.append(job)
    if jobs:
        view = lab_now(store, lab, dispatcher, now)
    announce_queue(store, lab, view)
    return jobs


def _plan_on(store: Store, lab: DaemonContext, row: TriageRow, host: Host,
             assignment: Assignment) -> tuple[dict | None, str | None]:
    """The plan to run on the assigned host: the stored one when made for it, else made again
    for it, with what differs stated when the report gave up its most similar host."""
    if row.host == host.name:
        return None, None  # the stored plan stands
    report, notes = with_materials_over_http(_stored_report(store, row.message_id), store, lab.settings.http)
    plan = plan_report(report, lab.settings.need_templates(), host=host_shape(host))
    if not isinstance(plan, Plan):
        raise TriageError(f"no plan on {host.name}, the host it was given: {plan.reason}")
    moved = assignment.moved_note(timedelta(minutes=lab.settings.max_wait_minutes))
    if moved is not None:
        plan = dataclasses.replace(plan, notes=(*plan.notes, moved))
    if report.kind == "patch-regression":
        planned = with_series(store, lab.may_build(), report, plan, host)
        if planned.get("kind") != "plan":
            raise TriageError(f"no plan on {host.name}, the host it was given: {planned.get('reason')}")
        return planned, moved
    return plan.to_json(), moved


QUEUED_KIND = "update-queued-"  # + a sequence number: one parent update per change of place


def announce_queue(store: Store, lab: DaemonContext, view: LabView) -> int:
    """Update the parent of each waiting report whose place changed: "queued behind N on HOST"."""
    updated = 0
    for queue in view.schedule.queues.values():
        for item in queue:
            row = store.get_triage(item.message_id)
            if row is None or row.state != TriageState.PLANNED:
                continue
            said = [other.kind for other in store.outbox(message_id=item.message_id)
                    if other.kind.startswith(QUEUED_KIND)]
            place = f"{item.ahead}@{item.host}"
            if said and said[-1].split(":", 1)[1] == place:
                continue
            try:
                report = _stored_report(store, item.message_id)
            except (TriageError, UnreadableRecord):
                continue  # its run will end it in error, saying why
            store.enqueue(item.message_id, f"{QUEUED_KIND}{len(said) + 1}:{place}", row.channel,
                          render.parent_message(report, "planned", plan=row.plan, queued=(item.ahead, item.host)))
            updated += 1
    if updated:
        lab.deliver()
    return updated


def run_job(store: Store, lab: DaemonContext, job: RunJob) -> str | None:
    """Carry out one dispatched job (any worker, with a store of its own): the report's run on
    its host under the host's lock, ending in its verdict or error. None when nothing was
    decided: the job is stale, the run stopped, or another process holds the host."""
    row = store.get_triage(job.message_id)
    if row is None or row.state != TriageState.RUNNING or row.host != job.host:
        return None  # moved on meanwhile: not this job's to run
    host = _host_named(lab.settings.need_hosts(), job.host)
    if host is None:
        fail_report(store, lab, row, "the run", TriageError(f"host {job.host} is no longer in hosts.toml"))
        return TriageState.ERROR
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(host_lock(lab.database, host.name))
        except TriageError as error:  # another process's rerun holds the host: wait again
            store.set_triage(row.message_id, TriageState.PLANNED, note=str(error))
            event(log, logging.INFO, "host busy", event="run.queued", message_id=row.message_id,
                  host=host.name, reason=str(error))
            return None
        try:
            return _run_one(store, lab, row, host)
        except StoreError:
            raise
        except Exception as error:  # noqa: BLE001 - one report's failure is that report's error
            fail_report(store, lab, row, "the run", error)
            return TriageState.ERROR


def plan_for_host(store: Store, settings: Settings, message_id: str, host_name: str) -> dict:
    """A stored report's plan made for one host of hosts.toml (a rerun asked on that host from
    Slack, triagebot/actions/act.py); TriageError saying why there is none."""
    host = _host_named(settings.need_hosts(), host_name)
    if host is None:
        raise TriageError(f"no host {host_name!r} in hosts.toml")
    report, _notes = with_materials_over_http(_stored_report(store, message_id), store, settings.http)
    plan = plan_report(report, settings.need_templates(), host=host_shape(host))
    if not isinstance(plan, Plan):
        raise TriageError(plan.reason)
    if report.kind == "patch-regression":
        planned = with_series(store, team_rule(settings.trust), report, plan, host)
        if planned.get("kind") != "plan":
            raise TriageError(str(planned.get("reason")))
        return planned
    return plan.to_json()


def rerun_asked(store: Store, message_id: str, default_budget: int) -> tuple[int, str]:
    """The budget of a report's run, and the suffix of its outbox kinds: a rerun a team member
    asked for (triagebot/actions/act.py) runs with the budget they asked, and its replies are kinds
    of their own (`verdict@2`), posted beside the first run's."""
    reruns = [action for action in store.actions_of(message_id) if action.action in RERUNS]
    if not reruns:
        return default_budget, ""
    return reruns[-1].budget or default_budget, f"@{len(reruns) + 1}"


def _run_one(store: Store, lab: DaemonContext, row: TriageRow, host: Host) -> str | None:
    report = _stored_report(store, row.message_id)
    plan = plan_from_json(row.plan) if row.plan is not None else None
    if not isinstance(plan, Plan):
        raise TriageError(f"{row.message_id} is {row.state} without a stored plan to run")
    series = SeriesToTest.from_json(row.plan["series"]) if report.kind == "patch-regression" and row.plan \
        and row.plan.get("series") else None
    if report.kind == "patch-regression" and series is None:
        raise TriageError(f"{row.message_id} is a regression of a series under review planned without its series")
    base, suspect = (series.base, f"{series.base}+v{series.version}") if series is not None else commits_of(report)
    if base is None or suspect is None:
        raise TriageError(f"{row.message_id} names no culprit commit to rerun")
    mbox = b""
    if series is not None:  # base against base+series: b4 makes it am-ready, as a fix test does
        refused = lab.may_build()(host, series.describe(), series.senders, asked_by(store, row.message_id))
        if refused is not None:
            raise TriageError(f"not rerun: {refused}")
        try:
            mbox = series_mbox(series, thread_raw(store, row.message_id), archive_of(report.source.url))
        except FixRefused as error:
            raise TriageError(f"the series cannot be applied: {error}") from None
    budget, again = rerun_asked(store, row.message_id, lab.budget)
    rounds = rounds_within(budget)
    first_look = 2 * rounds.rounds[0]
    patiently(lab, lambda: store.set_triage(row.message_id, "running"))
    event(log, logging.INFO, "run started", event="run.started", message_id=row.message_id, host=host.name,
          base=base, suspect=suspect)
    samples: list[Sample] = []

    def on_sample(sample: Sample) -> None:
        samples.append(sample)
        lab.heartbeat()
        moment = render.progress_moment(len(samples), first_look)
        if moment is not None:
            partial = {"host": host.name, "base_commit": base, "suspect_commit": suspect,
                       "samples": [{"role": item.role, "value": item.value} for item in samples]}
            def tell() -> None:
                with store.transaction():
                    store.enqueue(row.message_id, f"progress-{moment}{again}", row.channel,
                                  render.run_progress_reply(partial, moment, first_look))
                    if moment == "started":
                        store.enqueue(row.message_id, f"update-running{again}", row.channel,
                                      render.parent_message(report, "running", plan=row.plan, run=partial))
            patiently(lab, tell)
            lab.deliver()
        if lab.stop_requested():
            raise StopRequested()

    cut_short: list[RunRecord] = []
    kernel_config: KernelConfig | None = None
    report_options: tuple[tuple[str, str], ...] = ()
    if host.switcher is not None:  # the commits are built here: with the report's config where it gave one
        kernel_config, report_options = report_kernel_config_over_http(report, store, lab.settings.http)
    try:
        floor = lab.settings.floors.floor_for(plan.report_metric or plan.metric)
        with executor_for(host) as executor:
            if series is not None:
                result = measure_series(host, executor, plan, series, mbox, rounds=rounds, floor_percent=floor,
                                        on_sample=on_sample)
            else:
                result = rerun(plan, host, executor, base, suspect, on_sample=on_sample, rounds=rounds,
                               floor_percent=floor, on_cut_short=cut_short.append,
                               kernel_config=kernel_config, report_options=report_options)
    except StopRequested:
        taken = len(samples)

        def stopped() -> None:
            with store.transaction():
                if cut_short and taken:  # the samples taken are kept, shown by `triage show`
                    store.save_run(row.message_id, plan.to_json(), cut_short[0].to_json())
                store.set_triage(row.message_id, "planned", note=f"stopped during a run after {taken} samples "
                                 "(kept as cut short): it starts over")
        patiently(lab, stopped)
        event(log, logging.INFO, "run stopped: its samples kept, it starts over next time", event="run.stopped",
              message_id=row.message_id, samples=taken)
        return None
    run_json = result.to_json()
    saved_plan = plan.to_json()
    if series is not None:  # what was applied on the base: the verdict's reply names it and its author
        run_json["series"] = series.to_json()
        saved_plan["series"] = series.to_json()
    state = (run_json.get("verdict") or {}).get("outcome") or "error"
    plot = None
    if any(sample["role"] == "base" for sample in run_json["samples"]) and \
            any(sample["role"] == "suspect" for sample in run_json["samples"]):
        plot = {"title": render.plot_title(report, run_json),
                "png_base64": base64.b64encode(run_plot(run_json)).decode()}

    def decide() -> bool:
        with store.transaction():
            now = store.get_triage(row.message_id)
            if now is None or now.state != TriageState.RUNNING or now.host != host.name:
                return False  # moved on meanwhile (a job retried beside this slow run decided): not twice
            store.save_run(row.message_id, saved_plan, run_json)
            store.set_triage(row.message_id, state)
            store.enqueue(row.message_id, f"verdict{again}", row.channel,
                          render.with_buttons(render.verdict_reply(None, run_json), row.message_id))
            if plot is not None:
                store.enqueue(row.message_id, f"plot{again}", row.channel, plot)
            store.enqueue(row.message_id, f"update-final{again}", row.channel, render.with_buttons(
                render.parent_message(report, state, plan=row.plan, run=run_json), row.message_id))
        return True
    if not patiently(lab, decide):
        event(log, logging.WARNING, "run not decided: its report moved on meanwhile", event="run.superseded",
              message_id=row.message_id, host=host.name)
        return None
    event(log, logging.INFO, "run decided", event="run.decided", message_id=row.message_id, outcome=state,
          reason=(run_json.get("verdict") or {}).get("reason") or run_json.get("error"))
    lab.deliver()
    return state
