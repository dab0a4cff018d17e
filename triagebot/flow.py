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

Whatever goes wrong with ONE report while it is planned, run or decided (a plan that cannot be
read, a benchmark or hook that fails, a bug) ends that report in state `error` with the reason,
told to the team like any failed run, and the pass goes on with the other reports: one report
never stops the daemon. Only a failing store stops the pass (it is no report's fault).
"""
from __future__ import annotations

import base64
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from triagebot.errors import TriageError
from triagebot.logs import event
from triagebot.notify import render
from triagebot.notify.plot import run_plot
from triagebot.records import Report, Source
from triagebot.reproduce.executors.choose import executor_for
from triagebot.reproduce.host_lock import host_lock
from triagebot.reproduce.hosts import choose_host
from triagebot.reproduce.limits import host_shape
from triagebot.reproduce.materials import with_materials_over_http
from triagebot.reproduce.plan import Plan, Refusal, plan_from_json, plan_report
from triagebot.reproduce.rounds import commits_of, rounds_within
from triagebot.reproduce.runner import Sample, rerun
from triagebot.rules.hosts import HOSTS_FILE, Host
from triagebot.rules.settings import Settings
from triagebot.states import RUN_STATES
from triagebot.store.protocol import Store, StoreError, TriageRow, UnreadableRecord, utc_text

log = logging.getLogger("triagebot.daemon")

REPORT_KINDS = ("lkp-regression", "human-report")  # what the daemon takes on: claimed slowdowns
MAX_REASON = 500  # characters of an unexpected error kept as a report's reason


class StopRequested(Exception):
    """Raised between samples when the daemon was asked to stop: the run starts over next time."""


@dataclass
class DaemonContext:
    """What the stages need besides the store: the rules (loaded once, at start), where host
    locks live, how to notify."""

    settings: Settings
    database: Path
    deliver: Callable[[], object]  # send what the outbox holds (called after each state change)
    budget: int = 20  # runs a side at most
    stop_requested: Callable[[], bool] = lambda: False
    heartbeat: Callable[[], None] = lambda: None


def admit(store: Store, lab: DaemonContext, admit_days: float, now: datetime | None = None) -> list[str]:
    """Take on the reports dated within `admit_days`: a triage row and a parent message each."""
    since = utc_text((now or datetime.now(UTC)) - timedelta(days=admit_days))
    admitted = []
    for message_id in store.reports_to_admit(REPORT_KINDS, since):
        try:
            report = _stored_report(store, message_id)
        except UnreadableRecord:  # taken on all the same: planning it ends it in `error`, saying why
            report = _bare_report(message_id)
        stored = store.get_message(message_id)
        channel = lab.settings.routing.channel_for(report, stored.list_name if stored else None)
        with store.transaction():
            if store.start_triage(message_id, channel):
                store.enqueue(message_id, "parent", channel, render.parent_message(report, "new"))
                admitted.append(message_id)
        event(log, logging.INFO, "report taken on", event="triage.admitted", message_id=message_id,
              channel=channel, subject=report.subject)
    return admitted


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
    match = choose_host(hosts, report.test_machine, parameters=report.parameters)
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
        if isinstance(plan, Plan) and not commits_of(report)[1]:
            plan_json = Refusal("the report names no culprit commit to rerun", ("a culprit commit",),
                                plan.source, row.message_id).to_json()
    state = "planned" if plan_json["kind"] == "plan" else "refused"
    reply = render.plan_reply(plan_json)
    if state == "planned" and match is not None:
        reply = _with_host_line(reply, match, notes)
    with store.transaction():
        store.set_triage(row.message_id, state, plan=plan_json, host=host_name or "")
        store.enqueue(row.message_id, "plan", row.channel, reply)
        store.enqueue(row.message_id, "update-planned", row.channel,
                      render.parent_message(stored, state, plan=plan_json))
    event(log, logging.INFO, "report planned" if state == "planned" else "report refused",
          event=f"triage.{state}", message_id=row.message_id, host=host_name,
          reason=plan_json.get("reason"))
    lab.deliver()


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


def _with_host_line(reply: dict, match, notes: list[str]) -> dict:
    """The plan reply with the host it runs on (and whether that host can run it at all)."""
    line = f"Host: `{render.escape(match.host.name)}` (match {match.score:.2f} to the report's machine)"
    if match.differences:
        line += "; differs: " + "; ".join(render.escape(item) for item in match.differences)
    if not match.host.can_switch_kernel:
        line += ("\n:warning: this host cannot switch kernels, so the report is not rerun here: "
                 "describe a lab host in hosts.toml")
    for note in notes:
        line += f"\n_{render.escape(note)}_"
    return render.with_section(reply, line)


def run_planned(store: Store, lab: DaemonContext) -> list[str]:
    """Rerun each planned report whose host can switch kernels and is free; returns those decided."""
    hosts = lab.settings.need_hosts()
    decided = []
    for row in store.triage_in(*RUN_STATES):
        if lab.stop_requested():
            break
        host = _host_named(hosts, row.host)
        if host is None or not host.can_switch_kernel or row.plan is None:
            continue  # not runnable here: stays planned (the plan reply said why)
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(host_lock(lab.database, host.name))
            except TriageError as error:  # the host is busy with another rerun: try next pass
                event(log, logging.INFO, "host busy", event="run.queued", message_id=row.message_id,
                      host=host.name, reason=str(error))
                continue
            try:
                outcome = _run_one(store, lab, row, host)
            except StoreError:
                raise
            except Exception as error:  # noqa: BLE001 - one report's failure is that report's error
                fail_report(store, lab, row, "the run", error)
                outcome = "error"
        if outcome is not None:
            decided.append(row.message_id)
    return decided


def rerun_asked(store: Store, message_id: str, default_budget: int) -> tuple[int, str]:
    """The budget of a report's run, and the suffix of its outbox kinds: a rerun a team member
    asked for (triagebot/actions.py) runs with the budget they asked, and its replies are kinds
    of their own (`verdict@2`), posted beside the first run's."""
    reruns = [action for action in store.actions_of(message_id) if action.action == "rerun"]
    if not reruns:
        return default_budget, ""
    return reruns[-1].budget or default_budget, f"@{len(reruns) + 1}"


def _run_one(store: Store, lab: DaemonContext, row: TriageRow, host: Host) -> str | None:
    report = _stored_report(store, row.message_id)
    plan = plan_from_json(row.plan) if row.plan is not None else None
    if not isinstance(plan, Plan):
        raise TriageError(f"{row.message_id} is {row.state} without a stored plan to run")
    base, suspect = commits_of(report)
    if base is None or suspect is None:
        raise TriageError(f"{row.message_id} names no culprit commit to rerun")
    budget, again = rerun_asked(store, row.message_id, lab.budget)
    rounds = rounds_within(budget)
    first_look = 2 * rounds.rounds[0]
    store.set_triage(row.message_id, "running")
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
            with store.transaction():
                store.enqueue(row.message_id, f"progress-{moment}{again}", row.channel,
                              render.run_progress_reply(partial, moment, first_look))
                if moment == "started":
                    store.enqueue(row.message_id, f"update-running{again}", row.channel,
                                  render.parent_message(report, "running", plan=row.plan, run=partial))
            lab.deliver()
        if lab.stop_requested():
            raise StopRequested()

    try:
        with executor_for(host) as executor:
            result = rerun(plan, host, executor, base, suspect, on_sample=on_sample, rounds=rounds,
                           floor_percent=lab.settings.floors.floor_for(plan.report_metric or plan.metric))
    except StopRequested:
        store.set_triage(row.message_id, "planned", note="stopped during a run: it starts over")
        event(log, logging.INFO, "run stopped: starts over next time", event="run.stopped",
              message_id=row.message_id, samples=len(samples))
        return None
    run_json = result.to_json()
    state = (run_json.get("verdict") or {}).get("outcome") or "error"
    with store.transaction():
        store.save_run(row.message_id, plan.to_json(), run_json)
        store.set_triage(row.message_id, state)
        store.enqueue(row.message_id, f"verdict{again}", row.channel,
                      render.with_buttons(render.verdict_reply(None, run_json), row.message_id))
        if any(sample["role"] == "base" for sample in run_json["samples"]) and \
                any(sample["role"] == "suspect" for sample in run_json["samples"]):
            store.enqueue(row.message_id, f"plot{again}", row.channel, {
                "title": render.plot_title(report, run_json),
                "png_base64": base64.b64encode(run_plot(run_json)).decode()})
        store.enqueue(row.message_id, f"update-final{again}", row.channel, render.with_buttons(
            render.parent_message(report, state, plan=row.plan, run=run_json), row.message_id))
    event(log, logging.INFO, "run decided", event="run.decided", message_id=row.message_id, outcome=state,
          reason=(run_json.get("verdict") or {}).get("reason") or run_json.get("error"))
    lab.deliver()
    return state
