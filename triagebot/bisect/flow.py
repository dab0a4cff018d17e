"""After the verdict, in the daemon: bisect a confirmed regression whose suspect is not one commit.

`queue_bisects` queues one bisection (a `bisects` row, status `queued`) for each confirmed report
whose culprit is a merge or whose report names a range (bisect_reason, pure; a range the host
lists as one commit, the culprit, is skipped: stored, not posted); `run_queued_bisects`
runs them on the host of the report's confirmed rerun with its plan (after_verdict.bisect_on_lab,
the same code `triage bisect` runs), stored after every attempt and posted once when it ends
(outbox row `bisect-N`, written with the result); one whose estimate is over the default budget
is refused before any run, and that is posted once. A bisection a crash or a stop cut short starts
over on its own row, so its one message is still one.

What a bisection builds is asked of the same decision as a fix test (rules/trust.py
`may_run_mail_code`): its range comes from the report, but only as two names checked as refs
(never an option: untrusted/argv.py), and the commits are those the host's own tree lists between
them; no tree named by mail is fetched. So it runs no code from mail, and the daemon bisects by
itself on any host; the decision's reason is kept with the bisection (`code`).
"""
from __future__ import annotations

import contextlib
import logging

from triagebot.bisect.lab import BisectRefused, bisect_on_lab, bisect_reply, list_commits
from triagebot.bisect.search import ERROR, BisectBudget
from triagebot.errors import TriageError
from triagebot.lab.context import DaemonContext, StopRequested, patiently
from triagebot.lab.runner import confirmed_host_and_plan, rerun_host
from triagebot.logs import event
from triagebot.records.report import Report
from triagebot.records.states import TriageState
from triagebot.reproduce.executors.choose import executor_for
from triagebot.reproduce.host_lock import host_busy, host_lock
from triagebot.reproduce.rounds import commits_of
from triagebot.reproduce.runner import Sample
from triagebot.rules.trust import may_run_mail_code
from triagebot.store.protocol import Store, UnreadableRecord

log = logging.getLogger("triagebot.daemon")

QUEUED = "queued"
SKIPPED = "skipped"  # a range of one commit: nothing to bisect (stored, not posted)
REFUSED = "refused"  # likely over its budget (bisect/estimate.py): not started, posted once
MERGE_MARK = "the culprit "
BY_DAEMON = {"queued_by": "daemon"}  # kept in the bisection's JSON: the daemon takes up only its own


def bisect_reason(report: Report) -> str | None:
    """Why a confirmed report is bisected on the lab, or None when its culprit is one commit."""
    culprit = next((commit for commit in report.commits if commit.role == "culprit"), None)
    if culprit is None:
        return None  # nothing was confirmed against a commit
    if (culprit.subject or "").lstrip().lower().startswith("merge "):  # a merge: which of its commits?
        return f"{MERGE_MARK}{culprit.sha[:12]} is a merge ({(culprit.subject or '').strip()})"
    base = next((commit for commit in report.commits if commit.role == "base"), None)
    if base is not None:  # good..bad as the report gave it: the host lists what lies between (one
        # commit, the culprit, when the base is its parent, as in most LKP reports: then it is skipped)
        return f"the report names a range, {base.sha[:12]}..{culprit.sha[:12]}"
    return None


def queue_bisects(store: Store) -> list[int]:
    """A bisection queued for each confirmed report that needs one and has none; their ids."""
    queued = []
    for row in store.triage_in(TriageState.CONFIRMED):
        if store.bisects(row.message_id):
            continue  # one automatic bisection a report; `triage bisect` starts more by hand
        try:
            report = store.get_record(row.message_id)
        except UnreadableRecord:
            continue
        reason = bisect_reason(report) if report is not None else None
        if report is None or reason is None:
            continue
        good, bad = commits_of(report)
        bisect_id = store.save_bisect(row.message_id, {"kind": "bisect", "status": QUEUED, "good": good, "bad": bad,
                                                       "steps": [], "reason": reason} | BY_DAEMON)
        queued.append(bisect_id)
        event(log, logging.INFO, "bisection queued", event="bisect.queued", message_id=row.message_id,
              bisect_id=bisect_id, reason=reason)
    return queued


def _waiting(bisection: dict) -> bool:
    """A bisection the daemon queued that has not ended (queued, or cut short while running)."""
    return bisection.get("status") in (QUEUED, "running") and bisection.get("queued_by") == BY_DAEMON["queued_by"]


def waiting_hosts(store: Store) -> dict[str, str]:
    """Host -> the first report with a bisection of the daemon's queued or cut short there: each
    runs on its report's confirmed rerun's host ("" where the report has none)."""
    found: dict[str, str] = {}
    for row in store.triage_in(TriageState.CONFIRMED):
        if any(_waiting(bisection) for bisection in store.bisects(row.message_id)):
            found.setdefault(rerun_host(store, row.message_id), row.message_id)
    return found


def run_queued_bisects(store: Store, lab: DaemonContext, only_host: str | None = None) -> list[int]:
    """Run the queued bisections (and those a crash or stop cut short), one at a time; with
    `only_host`, only those on that host ("" for those with no host); those ended."""
    ended = []
    for row in store.triage_in(TriageState.CONFIRMED):
        for bisection in store.bisects(row.message_id):
            if lab.stop_requested() or not _waiting(bisection):
                continue
            latest = store.latest_run(row.message_id) or {}
            host_name = str(latest.get("host") or "")
            if only_host is not None and host_name != only_host:
                continue
            if host_name and host_busy(lab.database, host_name):
                continue  # its host runs something else: the next pass tries again
            if _run_one(store, lab, row.message_id, bisection, latest):
                ended.append(int(bisection["bisect_id"]))
                lab.deliver()
    return ended


def _run_one(store: Store, lab: DaemonContext, message_id: str, bisection: dict, latest: dict) -> bool:
    bisect_id = int(bisection["bisect_id"])
    queued = {key: value for key, value in bisection.items() if key != "bisect_id"}

    def on_sample(_sample: Sample) -> None:
        lab.heartbeat()
        if lab.stop_requested():
            raise StopRequested()

    try:
        host, plan = confirmed_host_and_plan(latest, lab.settings.need_hosts(), "bisect")
        # the commits are the host's own tree's: no sender's code (see the module text)
        decision = may_run_mail_code(host, (), None, lab.settings.trust)
        if not decision.allowed:
            raise TriageError(decision.reason)
        queued["code"] = decision.reason
        floor = lab.settings.floors.floor_for(plan.report_metric or plan.metric)
        if not queued["reason"].startswith(MERGE_MARK):
            with host_lock(lab.database, host.name), executor_for(host) as executor:
                commits = list_commits(host, executor, queued["good"], queued["bad"])
            if len(commits) < 2:  # the base is the culprit's parent: the suspect is one commit already
                store.save_bisect(message_id, queued | {"status": SKIPPED, "reason": (
                    f"not needed: {queued['bad'][:12]} is the only commit after {queued['good'][:12]}")}, bisect_id)
                return True
        event(log, logging.INFO, "bisection started", event="bisect.started", message_id=message_id,
              bisect_id=bisect_id, host=host.name, good=queued["good"], bad=queued["bad"])
        result, _, _ = bisect_on_lab(store, lab.database, message_id, host, plan, floor, queued["good"],
                                     queued["bad"], BisectBudget(), bisect_id=bisect_id, on_sample=on_sample,
                                     extra=BY_DAEMON | {"code": decision.reason})
    except StopRequested:
        patiently(lab, lambda: store.save_bisect(message_id, queued | {"status": QUEUED}, bisect_id))
        return False
    except Exception as error:  # noqa: BLE001 - one bisection's failure is its error, said in the thread
        reason = " ".join(str(error).split())[:500] if isinstance(error, TriageError) \
            else f"{type(error).__name__}: {error}"
        # likely over its budget: refused before any run (the estimate says why), posted once
        failed = queued | {"status": REFUSED if isinstance(error, BisectRefused) else ERROR, "reason": reason}
        row = store.get_triage(message_id)

        def store_failure() -> None:
            with store.transaction():
                store.save_bisect(message_id, failed, bisect_id)
                if row is not None:
                    store.enqueue(message_id, f"bisect-{bisect_id}", row.channel, bisect_reply(failed))
        with contextlib.suppress(StopRequested):
            patiently(lab, store_failure)
        return True
    event(log, logging.INFO, "bisection ended", event="bisect.ended", message_id=message_id, bisect_id=bisect_id,
          status=result["status"], first_bad=result.get("first_bad"))
    return True
