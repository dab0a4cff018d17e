"""After the verdict: test a fix from a confirmed report's thread, store the result, post it once.

One flow for every caller: `triage test-fix` (on request), the daemon (by itself, when a fix
series appears in the thread of a report it confirmed) and Slack's buttons. `run_fix_test` reads the
report's confirmed rerun (its host, plan and measured regression) and thread, decides whether the
series' code may run there (rules/trust.py `may_run_mail_code`: a person asked, the host is marked
untrusted_code, or every mail of the series is from a trusted sender), has b4 make the fix
am-ready (fix_test/series.py), and under the host's lock has the host apply and build it and
measures suspect against suspect+fix (fix_test/lab.py). The result is one row of `fix_tests`,
written in ONE transaction with its Slack reply (outbox row `test-fix-<id>`) and the report's
lifecycle move `fix-tested` (with the Slack parent's edit): a crash leaves either the test still
to do or all three, never a result without its message or a message twice. Who asked (`asked_by`:
`cli:<login>`, `slack:<user>`; empty for the daemon) is kept in the result and shown.

A series the daemon may not build by itself is not applied: its row waits (`waiting`, with the
reason) and the report's Slack thread is told once (`test-fix-waiting-<id>`) how a person runs
it; a person's test of that series then takes the row over.

The daemon's two steps: `queue_fix_tests` (a pure choice per confirmed report,
fix_test/choice.py: the newest complete version of a series not yet tested) and
`run_queued_fix_tests` (each queued test in turn; one a crash or a stop cut short is queued again and
starts over, as a rerun does).
"""
from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from triagebot.errors import TriageError
from triagebot.fix_test.choice import FixAction, fix_to_test
from triagebot.fix_test.lab import fix_draft, measure_fix
from triagebot.fix_test.series import FixRefused, PreparedFix, check_thread, prepare_fix
from triagebot.ingest.lore_thread import DEFAULT_ARCHIVE
from triagebot.lab.context import DaemonContext, StopRequested, patiently
from triagebot.lab.runner import confirmed_host_and_plan, rerun_host
from triagebot.lifecycle.follow import parent_payload
from triagebot.lifecycle.states import LifecycleState, current
from triagebot.logs import event
from triagebot.notify import render
from triagebot.parse.patches import PatchMail, applied_version, patch_subject, series_key, series_senders
from triagebot.parse.reply_to import culprit_author, read_original, recipients, report_text
from triagebot.records.report import Report
from triagebot.records.states import TriageState
from triagebot.reproduce.executors.choose import executor_for
from triagebot.reproduce.host_lock import host_busy, host_lock
from triagebot.reproduce.plan import Plan
from triagebot.reproduce.rounds import rounds_within
from triagebot.reproduce.runner import Sample
from triagebot.rules.hosts import Host
from triagebot.rules.mail import MailRules, load_mail_rules
from triagebot.rules.settings import Settings
from triagebot.rules.trust import may_run_mail_code
from triagebot.store.protocol import FixTestRow, Store, UnreadableRecord

log = logging.getLogger("triagebot.daemon")

Json = dict[str, Any]
DEFAULT_TESTER = "triagebot lab <triagebot@localhost>"
REPLY_KIND = "test-fix-"  # + the fix test's id: one Slack reply per result
WAITING_KIND = "test-fix-waiting-"  # + the fix test's id: the one note that a series waits for a person


class HostBusy(TriageError):
    """The host of the confirmed rerun runs something else now: the test waits."""


@dataclass(frozen=True)
class FixTestOutcome:
    status: str  # done, refused, error, or waiting (for a person: the daemon may not build it)
    fix_test_id: int | None  # None: a refusal on request, stored nowhere (no series to name it by)
    result: Json  # the measured result (done), else {"reason": ...}
    draft: str = ""  # the drafted reply (done)
    fix: PreparedFix | None = None


@dataclass(frozen=True)
class _Confirmed:
    """What a fix is tested against: the report's confirmed rerun."""

    host: Host
    plan: Plan
    suspect: str
    regression_percent: float


def archive_of(source_url: str | None) -> str:
    """The archive a fix may be linked on: the report's own archive host, else lore's."""
    parts = urlsplit(source_url or "")
    return f"{parts.scheme}://{parts.hostname}/" if parts.scheme in ("http", "https") and parts.hostname \
        else DEFAULT_ARCHIVE


def _confirmed(store: Store, settings: Settings, message_id: str) -> _Confirmed:
    latest = store.latest_run(message_id)
    verdict = (latest or {}).get("verdict") or {}
    if latest is None or verdict.get("outcome") != "confirmed" or verdict.get("measured_change_percent") is None:
        raise TriageError(f"{message_id}: no confirmed rerun to test a fix against (triage rerun first)")
    host, plan = confirmed_host_and_plan(latest, settings.need_hosts(), "test fixes")
    return _Confirmed(host, plan, latest["suspect_commit"], float(verdict["measured_change_percent"]))


def run_fix_test(store: Store, settings: Settings, database: Path, message_id: str,
             patch_message_id: str | None = None, *, archive: str | None = None, budget: int = 20,
             tester: str = DEFAULT_TESTER, fix_test_id: int | None = None, asked_by: str | None = None,
             announce: Callable[[str], None] = lambda line: None,
             on_sample: Callable[[Sample], None] | None = None) -> FixTestOutcome:
    """Test the fix in `message_id`'s thread (the newest series, or PATCH-MESSAGE-ID's) and store
    the result with its Slack reply and lifecycle move. `asked_by`: the person who asked
    (`cli:<login>`, `slack:<user>`), None for the daemon by itself, which builds a series only
    where rules/trust.py allows (else the row waits for a person). `fix_test_id`: the daemon's
    queued row; without one the series' waiting row is taken over, or a row is made (`@2`, `@3`
    when it was tested before). TriageError when the report has no confirmed rerun or its host
    cannot test fixes; HostBusy when the host is taken. A refusal, a failed run and a wait are
    outcomes, stored (and posted) on a row."""
    report = store.get_record(message_id)
    if report is None:
        raise TriageError(f"{message_id}: no such message in {database}")
    confirmed = _confirmed(store, settings, message_id)
    thread = [raw for raw in (store.get_raw(key) for key in store.thread_of(message_id)) if raw is not None]
    archive = archive or archive_of(report.source.url)
    asked = {"asked_by": asked_by or ""}
    with tempfile.TemporaryDirectory(prefix="triage-fix-") as work:
        try:
            patches = check_thread(thread, archive)
            version = applied_version(patches, patch_message_id)
            senders = series_senders(thread, patches, version)
            decision = may_run_mail_code(confirmed.host, list(senders.values()), asked_by, settings.trust)
            if not decision.allowed:
                fix_test_id = _waiting_row(store, message_id, fix_test_id, patches, version)
                _store_waiting(store, message_id, fix_test_id, decision.reason, version, sorted(set(senders.values())))
                announce(f"test-fix of {message_id}: v{version} not built: {decision.reason}")
                return FixTestOutcome("waiting", fix_test_id, {"reason": decision.reason})
            fix = prepare_fix(thread, Path(work), archive, patch_message_id, series_ids=frozenset(senders))
        except FixRefused as refused:
            reason = f"refused: {refused}"
            if fix_test_id is not None:
                _store_failure(store, message_id, fix_test_id, "refused", reason, asked=asked)
            return FixTestOutcome("refused", fix_test_id, {"reason": reason})
        mbox = fix.mbox.read_bytes()
    to, cc = series_addressees(thread, fix.message_id, store.get_raw(message_id) or b"", report,
                               load_mail_rules(settings.rules_dir))
    announce(f"test-fix of {message_id} on {confirmed.host.name}: v{fix.version}, {patches_text(len(fix.subjects))} "
             f"on {confirmed.suspect} ({decision.reason})")
    for subject in fix.subjects:
        announce(f"  {subject}")
    floor = settings.floors.floor_for(confirmed.plan.report_metric or confirmed.plan.metric)
    trusted = asked | {"allowed": decision.reason, "senders": sorted(set(senders.values()))}
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(host_lock(database, confirmed.host.name))
        except TriageError as error:
            raise HostBusy(str(error)) from None
        if fix_test_id is None:
            fix_test_id = _new_row(store, message_id, fix)
        store.set_fix_test(fix_test_id, "running", trusted)
        try:
            with executor_for(confirmed.host) as executor:
                result = measure_fix(confirmed.host, executor, confirmed.plan, floor, confirmed.suspect,
                                     confirmed.regression_percent, fix, mbox, rounds=rounds_within(budget),
                                     on_sample=on_sample,
                                     recovery_floor_percent=settings.fix_tests.recovery_floor_percent)
        except TriageError as error:
            reason = f"the fix's run failed: {' '.join(str(error).split())[:500]}"
            _store_failure(store, message_id, fix_test_id, "error", reason, fix, asked=trusted)
            return FixTestOutcome("error", fix_test_id, {"reason": reason}, fix=fix)
    result |= trusted
    draft = fix_draft(result, tester, to, cc)
    store_fix_result(store, message_id, fix_test_id, result | {"draft": draft})
    return FixTestOutcome("done", fix_test_id, result, draft, fix)


def series_addressees(thread: list[bytes], series_id: str, report_raw: bytes, report: Report,
                      rules: MailRules) -> tuple[str, str]:
    """(To, Cc) of the drafted reply to the series, by the rule the reply upstream follows
    (parse/reply_to.py): the series' sender, the culprit's author as the report names them, the
    allowed lists the series was sent to. ("", "") when the series' mail is not in the thread."""
    series_raw = next((raw for raw in thread if read_original(raw).message_id.strip("<>") == series_id), None)
    if series_raw is None:
        return "", ""
    reported = read_original(report_raw)
    author = culprit_author(reported, report_text(report_raw), report, rules.is_list)
    to, cc = recipients(read_original(series_raw), author, rules.from_address, rules)
    return ", ".join(str(item) for item in to), ", ".join(str(item) for item in cc)


def _waiting_row(store: Store, message_id: str, fix_test_id: int | None, patches: list[PatchMail],
                 version: int) -> int:
    """The row a series that waits for a person is kept on: the daemon's queued one, else the
    series' own (made now when it has none)."""
    if fix_test_id is not None:
        return fix_test_id
    key = series_key(patches, version)
    first = min((item for item in patches if item.version == version), key=lambda item: (item.part, item.message_id))
    made = store.queue_fix_test(message_id, key, first.message_id)
    if made is not None:
        return made
    return next(row.fix_test_id for row in store.fix_tests(message_id) if row.series_key == key)
def patches_text(count: int) -> str:
    """`1 patch`, `2 patches`."""
    return f"{count} patch" if count == 1 else f"{count} patches"


def _new_row(store: Store, message_id: str, fix: PreparedFix) -> int:
    """A fix test row for a series asked for by hand: the series' row when it waits for a person
    (the person's test takes it over), else its key, or `key@N` when tested before."""
    waiting = next((row.fix_test_id for row in store.fix_tests(message_id, status="waiting")
                    if row.series_key == fix.series_key), None)
    if waiting is not None:
        return waiting
    for attempt in range(1, 1000):
        key = fix.series_key if attempt == 1 else f"{fix.series_key}@{attempt}"
        fix_test_id = store.queue_fix_test(message_id, key, fix.message_id)
        if fix_test_id is not None:
            return fix_test_id
    raise TriageError(f"{message_id}: {fix.series_key} was tested 999 times already")


def who_ran(result: Json) -> str:
    """Who had the series built: `asked by <who>`, or why the daemon could by itself."""
    if result.get("asked_by"):
        return f"asked by {result['asked_by']}"
    return f"by the daemon: {result['allowed']}" if result.get("allowed") else "by the daemon"


def fix_reply(result: Json) -> Json:
    """The Slack reply: the call, the numbers, who had it built, and the drafted reply (never sent)."""
    text = f"Fix test (v{result['version']}): {result['recovery']['sentence']}"
    verdict = result["verdict"]
    detail = (f"On `{render.escape(result['host'])}`: {render.escape(result['suspect'][:12])} against it with "
              f"v{result['version']} applied ({render.escape(result['patched'][:12])}), "
              f"{verdict.get('runs_base')}+{verdict.get('runs_suspect')} runs; "
              + ", ".join(render.escape(subject) for subject in result["subjects"])
              + f"\nBuilt {render.escape(who_ran(result))}.")
    payload = render.with_section({"text": render.escape(text), "blocks": []}, f"*{render.escape(text)}*")
    payload = render.with_section(payload, detail)
    if result.get("draft"):
        payload = render.with_section(payload, "Drafted reply (not sent):\n```"
                                      + render.escape(result["draft"]) + "```")
    return payload


def _fix_tested(store: Store, message_id: str, cause_id: str, note: str) -> None:
    """The lifecycle move `fix-tested` (when allowed from where the report is), and the edit of
    its Slack parent; inside the caller's transaction."""
    if not current([move.state for move in store.moves_of(message_id)]).can_move_to(LifecycleState.FIX_TESTED):
        return
    stored = store.add_move(message_id, LifecycleState.FIX_TESTED, cause_id, note)
    row = store.get_triage(message_id)
    if stored is not None and row is not None and store.outbox(message_id=message_id):
        store.enqueue(message_id, f"update-{LifecycleState.FIX_TESTED}-{stored.move_id}", row.channel,
                      parent_payload(store, row))


def store_fix_result(store: Store, message_id: str, fix_test_id: int, result: Json) -> None:
    """The result, its one Slack reply (when the daemon has taken the report on) and the
    lifecycle move, in one transaction."""
    row = store.get_triage(message_id)
    with store.transaction():
        store.set_fix_test(fix_test_id, "done", result)
        if row is not None:
            store.enqueue(message_id, f"{REPLY_KIND}{fix_test_id}", row.channel, fix_reply(result))
        _fix_tested(store, message_id, result["series"],
                    f"v{result['version']} on {result['host']}, {who_ran(result)}: {result['recovery']['sentence']}")
    event(log, logging.INFO, "fix tested", event="fix.tested", message_id=message_id, fix_test_id=fix_test_id,
          version=result["version"], call=result["recovery"]["call"])


def _store_failure(store: Store, message_id: str, fix_test_id: int, status: str, reason: str,
                   fix: PreparedFix | None = None, *, asked: Json | None = None) -> None:
    """A refused or failed fix test, with its one Slack reply; no lifecycle move (nothing was tested)."""
    row = store.get_triage(message_id)
    version = f" (v{fix.version})" if fix is not None else ""
    text = f"Fix test{version} {'refused' if status == 'refused' else 'failed'}: {reason}"
    if asked and asked.get("asked_by"):
        text += f" (asked by {asked['asked_by']})"
    with store.transaction():
        store.set_fix_test(fix_test_id, status, (asked or {}) | {"reason": reason})
        if row is not None:
            store.enqueue(message_id, f"{REPLY_KIND}{fix_test_id}", row.channel,
                          render.with_section({"text": render.escape(text), "blocks": []}, render.escape(text)))
    event(log, logging.WARNING, "fix test not done", event=f"fix.{status}", message_id=message_id,
          fix_test_id=fix_test_id, reason=reason)


def _store_waiting(store: Store, message_id: str, fix_test_id: int, reason: str, version: int,
                   senders: list[str]) -> None:
    """A series the daemon may not build by itself: its row waits for a person, and the report's
    Slack thread says so once, with how a person runs it."""
    row = store.get_triage(message_id)
    text = (f"Fix series v{version} not built: {reason}. A person may test it: the Test fix button, or "
            f"`triage test-fix {message_id}`.")
    with store.transaction():
        store.set_fix_test(fix_test_id, "waiting", {"reason": reason, "version": version, "senders": senders})
        if row is not None:
            store.enqueue(message_id, f"{WAITING_KIND}{fix_test_id}", row.channel,
                          render.with_section({"text": render.escape(text), "blocks": []}, render.escape(text)))
    event(log, logging.WARNING, "fix series waits for a person", event="fix.waiting_for_person",
          message_id=message_id, fix_test_id=fix_test_id, reason=reason)


# --- the daemon's steps ---------------------------------------------------------------------------

def thread_patches(store: Store, message_id: str) -> list[PatchMail]:
    """The `[PATCH …]` mails in a report's thread, read from their stored records' subjects."""
    patches = []
    for key in store.thread_of(message_id):
        try:
            record = store.get_record(key)
        except UnreadableRecord:
            continue
        found = patch_subject(key, record.subject) if record is not None and key != message_id else None
        if found is not None:
            patches.append(found)
    return patches


def queue_fix_test_of(store: Store, message_id: str) -> int | None:
    """Queue a test of the newest complete fix series in the report's thread, unless that series
    has one (fix_test/choice.py); its id, or None. For the daemon's step and for a button
    that asks the daemon to test the fix (the daemon's after-verdict thread then runs it)."""
    choice = fix_to_test(thread_patches(store, message_id), {item.series_key for item in store.fix_tests(message_id)})
    if choice.action is not FixAction.TEST:
        return None
    fix_test_id = store.queue_fix_test(message_id, choice.series_key, choice.cause_id)
    if fix_test_id is not None:
        event(log, logging.INFO, "fix test queued", event="fix.queued", message_id=message_id,
              series=choice.series_key, cause=choice.cause_id)
    return fix_test_id


def queue_fix_tests(store: Store, looked: dict[str, tuple] | None = None) -> list[int]:
    """Queue a test of the newest complete fix series in each confirmed report's thread, once per
    series; a report that upstream fixed, reverted or called invalid is left alone. Returns the
    rows queued. `looked` (the daemon keeps it across passes): per report, the thread and tested
    series last found with nothing to queue; a thread that gained no mail and no test since is
    not read again."""
    queued = []
    confirmed = store.triage_in(TriageState.CONFIRMED)
    if looked is not None:  # a report no longer confirmed is not looked at again: forget it
        for gone in looked.keys() - {row.message_id for row in confirmed}:
            del looked[gone]
    for row in confirmed:
        if current([move.state for move in store.moves_of(row.message_id)]).final:
            continue
        seen = (tuple(store.thread_of(row.message_id)),
                frozenset(item.series_key for item in store.fix_tests(row.message_id)))
        if looked is not None and looked.get(row.message_id) == seen:
            continue
        fix_test_id = queue_fix_test_of(store, row.message_id)
        if fix_test_id is not None:
            queued.append(fix_test_id)
        elif looked is not None:
            looked[row.message_id] = seen
    return queued


def waiting_hosts(store: Store) -> dict[str, str]:
    """Host -> the first report with a fix test cut short or queued there ("" for a report with
    no rerun host), in the order run_queued_fix_tests takes them up."""
    found: dict[str, str] = {}
    for status in ("running", "queued"):
        for row in store.fix_tests(status=status):
            found.setdefault(rerun_host(store, row.message_id), row.message_id)
    return found


def run_queued_fix_tests(store: Store, lab: DaemonContext, only_host: str | None = None) -> list[int]:
    """Run the queued fix tests, one at a time, each on the host of its report's confirmed rerun
    (one whose host is busy waits for the next pass); with `only_host`, only that host's ("" for
    those with no host). A test left `running` by a process that is gone starts over. A stop asked
    for ends the test in progress after its sample: it is queued again. Returns the tests that
    ended (done, refused or error)."""
    for cut in store.fix_tests(status="running"):
        host = rerun_host(store, cut.message_id)
        if only_host is not None and host != only_host:
            continue
        if not host or not host_busy(lab.database, host):
            store.set_fix_test(cut.fix_test_id, "queued")
            event(log, logging.INFO, "fix test cut short: starts over", event="fix.resumed",
                  message_id=cut.message_id, fix_test_id=cut.fix_test_id)
    ended = []
    for queued in store.fix_tests(status="queued"):
        if lab.stop_requested():
            break
        host = rerun_host(store, queued.message_id)
        if only_host is not None and host != only_host:
            continue
        if host and host_busy(lab.database, host):
            continue
        if _run_queued(store, lab, queued):
            ended.append(queued.fix_test_id)
            lab.deliver()
    return ended


def _run_queued(store: Store, lab: DaemonContext, queued: FixTestRow) -> bool:
    """One queued test; whether it ended (False: it waits, queued again)."""
    def on_sample(_sample: Sample) -> None:
        lab.heartbeat()
        if lab.stop_requested():
            raise StopRequested()

    try:
        outcome = run_fix_test(store, lab.settings, lab.database, queued.message_id, queued.cause_id,
                           budget=lab.budget, fix_test_id=queued.fix_test_id, on_sample=on_sample)
    except (StopRequested, HostBusy) as waiting:
        patiently(lab, lambda: store.set_fix_test(queued.fix_test_id, "queued"))
        event(log, logging.INFO, "fix test waits", event="fix.waiting", message_id=queued.message_id,
              fix_test_id=queued.fix_test_id, reason=str(waiting) or "a stop was asked for")
        return False
    except Exception as error:  # noqa: BLE001 - one test's failure is that test's error, said in its thread
        reason = f"{type(error).__name__}: {' '.join(str(error).split())[:500]}" \
            if not isinstance(error, TriageError) else " ".join(str(error).split())[:500]
        patiently(lab, lambda: _store_failure(store, queued.message_id, queued.fix_test_id, "error", reason))
        return True
    event(log, logging.INFO, "fix test ended", event="fix.ended", message_id=queued.message_id,
          fix_test_id=queued.fix_test_id, status=outcome.status)
    return True
