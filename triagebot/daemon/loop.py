"""The scheduled loop: poll each source on its interval, then triage what arrived, and tell the team.

Each pass: deliver what the outbox holds (after a crash: the posts in doubt are looked up on
Slack first), poll the sources that are due (rules/sources.toml), follow the reports taken on
(the new mail, stale ones, the git trees of rules/trees.toml: lifecycle/), take on new reports, plan
them, hand the planned ones the schedule picks to free lab hosts, deliver again; then start the
fix tests and bisections queued after confirmed verdicts (after_verdict_jobs.py: threads of its
own, one a host; on PostgreSQL jobs for the workers, daemon/dispatch/after_verdict_queue.py). Every stage is
a step over stored state (flow.py), so a restart resumes where the last process stopped.

Runs go through a dispatcher (daemon/dispatch/protocol.py). On the embedded default it is a
ThreadDispatcher: one thread per busy host, each with its own store connection, so every lab
host runs at once. Workers write their notifications to the outbox and wake the loop, which
alone delivers them (one sender keeps the outbox's order and its exactly-once look-ups); when a
run ends the loop gives the freed host its next report at once, not at the next tick. On
PostgreSQL the runs are jobs of the database's job queue (daemon/dispatch/jobqueue.py), run by
`triage worker` processes anywhere; they wake the loop the same way (NOTIFY).

Notifications go to Slack when SLACK_BOT_TOKEN is set (SLACK_API_URL overrides the API's
address), else to the terminal. SIGTERM and SIGINT stop the loop after the current step or
sample, or between the messages of a poll (the batch in hand is left for the next poll); a run
cut short starts over at the next start. Logs are JSON lines on stderr; /healthz and /metrics
are served on 127.0.0.1 (`--health-address`, `--health-port`), with the team's read-only pages
(triagebot/web/) beside them.

Nothing one source or one message does stops the loop: a source whose poll fails, with any
exception, is logged with the reason (and shown by `triage status`) and the other sources are
polled; a message the parser cannot read is quarantined (`triage list --failed`). A step of a
pass that raises anything unexpected is logged with its traceback and the loop goes on at the
next tick, so a bad input cannot make the process exit and restart for ever.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from triagebot.actions import carry_out as asked
from triagebot.bisect import flow as bisect_flow
from triagebot.daemon import after_verdict_jobs, flow
from triagebot.daemon.after_verdict_jobs import AfterVerdictWorker
from triagebot.daemon.dispatch.inprocess import ThreadDispatcher
from triagebot.daemon.dispatch.protocol import AfterVerdictRunner, Dispatcher, QueuesAfterVerdict
from triagebot.daemon.health import DaemonMetrics, HealthServer
from triagebot.daemon.outage import Reconnects, is_outage, wait_for_database
from triagebot.errors import TriageError
from triagebot.fix_test import flow as fix_testing
from triagebot.http_client.protocol import SourceError
from triagebot.ingest.runner import DAY_BOUND_MARK, LAST_POLL_KEY, IngestResult, PollFailed, describe_error, ingest_once
from triagebot.ingest.sources import build_source
from triagebot.lab.standing import next_poll_record
from triagebot.lifecycle import follow, watch
from triagebot.logs import event
from triagebot.notify import outbox
from triagebot.notify.slack import NotifyError, SlackNotifier
from triagebot.notify.terminal import TerminalNotifier
from triagebot.records.states import TriageState
from triagebot.rules.settings import Settings
from triagebot.store.protocol import OUTBOX_STATUSES, OutboxRow, Store, StoreUnavailable
from triagebot.web.bounds import fd_soft_limit, raise_fd_soft_limit
from triagebot.web.server import cannot_listen
from triagebot.web.views import Site

log = logging.getLogger("triagebot.daemon")

DEFAULT_HEALTH_PORT = 9464


@dataclass
class DaemonState:
    """When each source was last polled (monotonic seconds) and whether a stop was asked for."""

    last_poll: dict[str, float] = field(default_factory=dict)
    stop: bool = False
    behind: set[str] = field(default_factory=set)  # sources whose last poll ended at a bound: due again
    fix_threads_looked: dict[str, tuple] = field(default_factory=dict)  # fix_testing.queue_fix_tests' memory
    # what holds a connection to the database (the store, the job queue's dispatcher): a step
    # that fails while one of them lost it ends the pass, and the loop waits for the database
    connections: tuple[Reconnects, ...] = ()


# what an http retry's event line says: the retry was logged when it happened (http_client/client.py)
RETRY_MARK = "; retrying in "


def next_step(poll_minutes: float, now: float) -> str:
    """What a failed poll's log line says comes next: the next poll, and what to do offline."""
    at = time.strftime("%H:%M:%S", time.localtime(now + poll_minutes * 60))
    return (f"next poll at {at} (every {poll_minutes:g} min); offline? `triage ingest FILE` stores saved mail "
            "(mbox, .eml, a maildir) meanwhile")


def _stoppable_sleep(state: DaemonState) -> Callable[[float], None]:
    """A retry wait that ends the poll when a stop is asked for, instead of sleeping it out."""
    def sleep(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            if state.stop:
                raise SourceError("stop asked for during a retry wait: this poll is abandoned (nothing is lost)")
            time.sleep(min(0.2, remaining))
    return sleep


def poll_due_sources(settings: Settings, store, state: DaemonState, metrics: DaemonMetrics, *,
                     now: Callable[[], float] = time.monotonic, jobs: int | None = None) -> list[str]:
    """Poll the sources that are due; returns the new message ids.

    A source that fails, whatever it raises, is logged with the reason and recorded for
    `triage status`; the sources after it are polled all the same. Each source's share of a pass
    is one poll under `settings.bounds` (messages, bytes, seconds): a source whose poll ended at
    a bound goes on at the next pass, after the other due sources had their turn."""
    new_ids: list[str] = []
    for source_settings in settings.sources:
        if state.stop:
            break
        due = state.last_poll.get(source_settings.url, -1e18) + source_settings.poll_minutes * 60
        if now() < due and source_settings.url not in state.behind:
            continue
        if now() >= due:  # a scheduled poll (not one going on with what a bound left): the interval starts here
            state.last_poll[source_settings.url] = now()
        state.behind.discard(source_settings.url)
        try:
            result = _poll_one(source_settings, settings, store, state, metrics, jobs, now)
            if result is not None:
                new_ids.extend(result.new_ids)
                if result.bounded and not result.bounded.endswith(DAY_BOUND_MARK):
                    state.behind.add(source_settings.url)
        except StoreUnavailable:
            raise  # the database went away, not the source: the loop waits for it (outage.py)
        except Exception as error:  # noqa: BLE001 - even recording the outcome failed: log it, go on
            metrics.poll_failed(source_settings.url)
            event(log, logging.ERROR, "poll failed", event="poll.failed", source=source_settings.url,
                  error=describe_error(error), exc_info=True)
    return new_ids


def _poll_one(source_settings, settings: Settings, store, state: DaemonState, metrics: DaemonMetrics,
              jobs: int | None, now: Callable[[], float] = time.monotonic) -> IngestResult | None:
    url = source_settings.url
    metrics.last_poll.labels(url).set(time.time())
    outcome: dict = {"at": store.now_text()}
    try:
        source = build_source(url, settings.http, sleep=_stoppable_sleep(state), bounds=settings.bounds)
        result = ingest_once(source, store, jobs=jobs, should_stop=lambda: state.stop, bounds=settings.bounds,
                             monotonic=now, progress=lambda *_: metrics.beat())  # storing parts: alive
    except Exception as error:  # noqa: BLE001 - one source's failure, of any kind, is that poll's alone
        if is_outage(error, store):  # the database went away, not the source: nothing to record it in
            raise StoreUnavailable(f"{store.path}: lost during the poll of {url}: {describe_error(error)}") from error
        metrics.polls.labels(url, "error").inc()
        metrics.poll_failed(url)
        unexpected = isinstance(error, PollFailed) or not isinstance(error, TriageError)  # a bug: log its traceback
        event(log, logging.ERROR if unexpected else logging.WARNING, "poll failed", event="poll.failed",
              source=url, error=describe_error(error), exc_info=unexpected,
              next=next_step(source_settings.poll_minutes, time.time()))
        store.set_cursor(LAST_POLL_KEY + url, json.dumps(next_poll_record(
            store.get_cursor(LAST_POLL_KEY + url), outcome | {"outcome": "error", "error": describe_error(error)})))
        metrics.poll_troubled(url, describe_error(error))
        return None
    for line in result.events:
        if RETRY_MARK in line:
            continue  # logged as it happened (fetch.retry)
        event(log, logging.WARNING, "poll event", event="poll.event", source=url, detail=line)
    metrics.messages.labels(url).inc(len(result.new_ids))
    if result.quarantined:
        metrics.quarantined.labels(url).inc(len(result.quarantined))
        event(log, logging.WARNING, "messages quarantined: see triage list --failed", event="poll.quarantined",
              source=url, keys=result.quarantined)
    if result.stopped:
        event(log, logging.INFO, "poll stopped: the rest is read at the next poll", event="poll.stopped",
              source=url, new=len(result.new_ids))
        return result
    metrics.polls.labels(url, "ok").inc()
    metrics.poll_ok(url, result.events)
    if result.skipped:
        metrics.poll_troubled(url, f"{len(result.skipped)} entr{'y' if len(result.skipped) == 1 else 'ies'} "
                                   "the server would not give (quarantined: triage list --failed)")
    if result.bounded:
        event(log, logging.WARNING, "poll ended at a bound: the rest is read at the next pass", event="poll.bounded",
              source=url, bound=result.bounded)
    metrics.saw_dates(url, [report.date if (report := store.get_record(message_id)) else None
                            for message_id in result.new_ids])
    event(log, logging.INFO, "polled", event="poll.done", source=url, new=len(result.new_ids),
          quarantined=len(result.quarantined))
    store.set_cursor(LAST_POLL_KEY + url, json.dumps(next_poll_record(None, outcome | {
        "outcome": "ok", "new": len(result.new_ids), "events": len(result.events),
        "quarantined": len(result.quarantined), "skipped": len(result.skipped), "bounded": result.bounded})))
    return result


def slack_settings(settings: Settings, open_store: Callable[[], AbstractContextManager[Store]], budget: int,
                   environ=os.environ) -> Any:
    """Slack acting on reports (the buttons and `/triage`) when SLACK_BOT_TOKEN is set with
    SLACK_SIGNING_SECRET (the HTTP endpoint /slack/events) or SLACK_APP_TOKEN (Socket Mode), else
    None: no request is taken that cannot be verified."""
    secret, token, app_token = (environ.get("SLACK_SIGNING_SECRET"), environ.get("SLACK_BOT_TOKEN"),
                                environ.get("SLACK_APP_TOKEN"))
    if not (token and (secret or app_token)):
        if secret or token or app_token:
            event(log, logging.INFO, "slack actions off: they need SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET "
                  "(HTTP) or SLACK_APP_TOKEN (Socket Mode)", event="slack.actions", enabled=False)
        return None
    from triagebot.actions import upstream
    from triagebot.web.slack_app import SlackSettings  # slack-bolt only when Slack acts

    event(log, logging.INFO, "slack actions on", event="slack.actions", enabled=True,
          http="/slack/events" if secret else None, socket_mode=bool(app_token))
    hosts = tuple(host.name for host in settings.hosts if host.can_switch_kernel) if settings.hosts else ()
    return SlackSettings(signing_secret=secret or "", token=token, open_store=open_store,
                         permissions=settings.routing.permissions, routing=settings.routing, budget=budget,
                         api_url=environ.get("SLACK_API_URL") or None, app_token=app_token or None, hosts=hosts,
                         plan_for_host=lambda store, message_id, host: flow.plan_for_host(store, settings,
                                                                                          message_id, host),
                         preview_reply=lambda store, message_id, **shown: upstream.preview_reply(
                             store, settings, message_id, **shown))


def make_notifier(database: Path, environ=os.environ):
    """Slack when SLACK_BOT_TOKEN is set (its token checked with auth.test), else the terminal."""
    if environ.get("SLACK_BOT_TOKEN"):
        notifier = SlackNotifier(environ["SLACK_BOT_TOKEN"], base_url=environ.get("SLACK_API_URL") or None)
        try:
            who = notifier.auth_test()
        except NotifyError as error:
            if not error.retryable:
                raise TriageError(f"SLACK_BOT_TOKEN does not work: {error}") from None
            event(log, logging.WARNING, "slack unreachable at start: posts wait in the outbox",
                  event="notify.start", code=error.code)
        else:
            event(log, logging.INFO, "posting to slack", event="notify.start", team=who.get("team"),
                  bot=who.get("user"))
        return notifier
    event(log, logging.INFO, "no SLACK_BOT_TOKEN: notifications to the terminal", event="notify.start")
    return TerminalNotifier(sys.stdout, plot_dir=database.parent / "plots")


@dataclass(frozen=True)
class DaemonOptions:
    """How the loop runs: the `triage daemon` options (cli/daemon.py) once read."""

    once: bool = False  # one pass over every source, then return
    tick: float = 30.0  # seconds between checks for due sources
    admit_days: float = 14.0  # take on reports dated at most this many days ago
    budget: int = 20  # at most this many runs a side
    health_port: int | None = None  # /healthz and /metrics (0: any free port; None: not served)
    health_address: str = "127.0.0.1"
    notify_retry_seconds: float = outbox.DEFAULT_RETRY_SECONDS
    stale_days: float = follow.DEFAULT_STALE_DAYS  # a decided report without mail this long is stale
    store: str = ""  # what the start line names as the store: --db as given (a URL's password is redacted
    # by the log formatter, logs.py), else the file


def serve(settings: Settings, database: Path, open_store: Callable[[], AbstractContextManager[Store]],
          options: DaemonOptions, make_dispatcher: Callable[[], Dispatcher] | None = None) -> int:
    """Run the loop until SIGTERM or SIGINT (or one pass with `once`); the store is opened once.

    Runs go to `make_dispatcher()` (PostgreSQL: the job queue, run by `triage worker`), by
    default to a ThreadDispatcher in this process."""
    state = DaemonState()

    def stop(signum, _frame) -> None:
        state.stop = True
        event(log, logging.INFO, "stopping after the current step", event="daemon.stopping",
              signal=signal.Signals(signum).name)

    with _stopping_on_signals(stop):
        return _serve(settings, database, open_store, options, make_dispatcher, state)


@contextmanager
def _stopping_on_signals(stop: Callable[[int, Any], None]) -> Iterator[None]:
    """SIGTERM and SIGINT call `stop` while the loop runs; the handlers found are put back after,
    so a process that ran the loop in-process (a test, an embedding program) does not keep them:
    a child it forks later (a multiprocessing pool's worker) would inherit `stop` and outlive the
    pool's SIGTERM, and the pool's terminate would then wait for it forever."""
    found = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    for signum in found:
        signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum, handler in found.items():
            signal.signal(signum, handler)


def _serve(settings: Settings, database: Path, open_store: Callable[[], AbstractContextManager[Store]],
           options: DaemonOptions, make_dispatcher: Callable[[], Dispatcher] | None, state: DaemonState) -> int:
    metrics = DaemonMetrics(sources=[source.url for source in settings.sources])
    health = None
    port = options.health_port
    slack = slack_settings(settings, open_store, options.budget)
    socket = None
    if port is not None:
        raise_fd_soft_limit()  # before the connection cap is sized under it (web/bounds.py)
        try:
            # the team's pages (reports, one report, the lab) beside /healthz and /metrics
            site = Site(open_store=open_store, settings=settings, database=database)
            health = HealthServer(metrics, host=options.health_address, port=port, site=site,
                                  slack=slack if slack is not None and slack.signing_secret else None).start()
        except OSError as error:
            raise TriageError(cannot_listen(error, options.health_address, port, address_option="--health-address",
                                            port_option="--health-port")) from None
        limits = health.server.limits
        event(log, logging.INFO, "health and metrics served", event="health.listening",
              url=f"http://{options.health_address}:{health.port}/healthz", port=health.port,
              max_connections=limits.max_connections, fd_soft_limit=fd_soft_limit())
    notifier = make_notifier(database)
    try:
        if slack is not None and slack.app_token:
            from triagebot.web.slack_app import socket_mode

            socket = socket_mode(slack)  # Slack's envelopes over a WebSocket: no public endpoint needed
        with open_store() as store:
            released = store.release_held()
            if released:
                event(log, logging.INFO, "held notifications tried again", event="notify.released", rows=released)

            def deliver() -> None:
                sent: list[str] = []

                def on_sent(row: OutboxRow) -> None:
                    metrics.notifications.inc()
                    sent.append(row.kind)
                result = outbox.deliver(store, notifier, retry_seconds=options.notify_retry_seconds, on_sent=on_sent)
                if sent:
                    event(log, logging.INFO, "notifications posted", event="notify.sent", rows=len(sent), kinds=sent)
                if result.error is not None:
                    metrics.notify_failures.labels(result.error.code).inc()

            lab = flow.DaemonContext(settings=settings, database=database, deliver=deliver,
                           budget=options.budget, stop_requested=lambda: state.stop, heartbeat=metrics.beat)
            if make_dispatcher is not None:
                dispatcher = make_dispatcher()
                # the fix tests' and bisections' messages wait in the outbox for the loop's next pass
                worker_lab = dataclasses.replace(lab, deliver=lambda: None)
            else:
                threads = ThreadDispatcher(open_store, lambda own, job: flow.run_job(own, worker_lab, job))
                # a worker's notifications are delivered by this loop, woken for them
                worker_lab = dataclasses.replace(lab, deliver=threads.wake)
                dispatcher = threads
            # fix tests, bisections: on threads of this process, or (PostgreSQL) jobs for the workers
            after_worker: AfterVerdictRunner = (
                dispatcher.after_verdict_runner(worker_lab) if isinstance(dispatcher, QueuesAfterVerdict)
                else AfterVerdictWorker(open_store, worker_lab))
            event(log, logging.INFO, "daemon started", event="daemon.started", db=options.store or str(database),
                  rules=str(settings.rules_dir), sources=[source.url for source in settings.sources])
            # the trees' fetches beside the loop (with --once, in the pass: its one pass reads them)
            tree_fetches = watch.TreeFetches() if settings.trees and not options.once else None
            state.connections = (store, dispatcher)
            owed = 0
            try:
                while not state.stop:
                    metrics.beat()
                    try:
                        if _tick(settings, store, state, lab, metrics, options, dispatcher, tree_fetches, after_worker):
                            break  # --once: its one pass is done
                    except StoreUnavailable as error:  # the database went away: wait for it, lose nothing
                        wait_for_database(metrics, error, state.connections, lambda: state.stop)
            finally:
                try:
                    if tree_fetches is not None:
                        tree_fetches.close()  # a fetch in flight is killed; the next start fetches again
                    dispatcher.join()  # a stop reaches each run after its sample in progress
                    after_worker.join()
                    collect(lab, dispatcher, metrics, state)  # what the last runs wrote: no new run is started
                    if options.once and not state.stop:
                        owed = settle_outbox(store, lab, state, ONCE_POST_WAIT_SECONDS)
                except StoreUnavailable as error:  # stopping while the database is away: the next start resumes
                    event(log, logging.WARNING, "stopping while the database is unreachable", event="daemon.stopping",
                          error=describe_error(error))
                finally:
                    dispatcher.close()  # the job queue's own connection (PostgreSQL) ends with the daemon
    finally:
        if health is not None:
            health.stop()
        if socket is not None:
            socket.close()
    if owed:
        event(log, logging.ERROR, "notifications left in the outbox: Slack kept failing", event="notify.owed",
              rows=owed, waited_seconds=ONCE_POST_WAIT_SECONDS,
              next="the next pass sends them; `triage status` lists them")
    event(log, logging.INFO, "daemon stopped", event="daemon.stopped", owed=owed)
    return 1 if owed else 0


def _tick(settings: Settings, store, state: DaemonState, lab: flow.DaemonContext, metrics: DaemonMetrics,
          options: DaemonOptions, dispatcher: Dispatcher, tree_fetches: watch.TreeFetches | None,
          after_worker: AfterVerdictRunner) -> bool:
    """One pass, then the wait for the next (woken by the workers meanwhile); True when `--once`
    is done. StoreUnavailable when the database went away on the way."""
    run_pass(settings, store, state, lab, metrics, admit_days=options.admit_days, dispatcher=dispatcher,
             stale_days=options.stale_days, tree_fetches=tree_fetches, after_worker=after_worker)
    if options.once:
        drain(store, lab, dispatcher, metrics, state, after_worker)
        return True
    deadline = time.monotonic() + options.tick
    while not state.stop and time.monotonic() < deadline:
        if dispatcher.wait(min(1.0, options.tick)):
            after_runs(store, lab, dispatcher, metrics, state)
        metrics.beat()
    return False


def _step(metrics: DaemonMetrics, name: str, action: Callable[[], object],
          connections: tuple[Reconnects, ...] = ()) -> None:
    """Run one step; one that raises is logged and counted, and the loop goes on. One that met
    the database gone (a connection of `connections` lost) raises StoreUnavailable: the pass ends
    there and the loop waits for the database (outage.py), every later step would fail alike."""
    try:
        action()
    except Exception as error:  # noqa: BLE001 - the loop outlives any one step's failure
        if is_outage(error, *connections):
            if isinstance(error, StoreUnavailable):
                raise
            raise StoreUnavailable(f"step {name}: the database connection was lost: {describe_error(error)}") from error
        metrics.step_failures.labels(name).inc()
        event(log, logging.ERROR, "step failed: the daemon goes on at the next tick", event="pass.failed",
              step=name, error=describe_error(error), exc_info=True)


def dispatch(store, lab: flow.DaemonContext, dispatcher: Dispatcher, metrics: DaemonMetrics) -> None:
    """Give free hosts their next reports, then show the lab in /metrics."""
    flow.assign(store, lab, dispatcher)
    view = flow.lab_now(store, lab, dispatcher)
    metrics.set_lab(lab_snapshot(view))


def lab_snapshot(view) -> dict:
    """The lab view as /metrics shows it (health.py reads plain data, never the store)."""
    return {"hosts": {host.name: view.busy.get(host.name) for host in view.hosts if host.can_switch_kernel},
            "awaiting_worker": sorted(view.awaiting_worker),
            "queues": {name: [(item.message_id, view.waiting_since[item.message_id].timestamp())
                              for item in queue] for name, queue in view.schedule.queues.items()}}


def after_runs(store, lab: flow.DaemonContext, dispatcher: Dispatcher, metrics: DaemonMetrics,
               state: DaemonState) -> None:
    """A worker woke the loop: deliver its notifications, count the runs that ended, and give
    the freed hosts their next reports."""
    _step(metrics, "deliver", lab.deliver, state.connections)
    for done in dispatcher.finished():
        if done.outcome is not None:
            metrics.runs.labels(done.outcome).inc()
    if not state.stop:
        _step(metrics, "run", lambda: dispatch(store, lab, dispatcher, metrics), state.connections)
        _step(metrics, "deliver", lab.deliver, state.connections)


def collect(lab: flow.DaemonContext, dispatcher: Dispatcher, metrics: DaemonMetrics, state: DaemonState) -> None:
    """The daemon is stopping: deliver what the last runs wrote and count them; start nothing."""
    _step(metrics, "deliver", lab.deliver, state.connections)
    for done in dispatcher.finished():
        if done.outcome is not None:
            metrics.runs.labels(done.outcome).inc()


def drain(store, lab: flow.DaemonContext, dispatcher: Dispatcher, metrics: DaemonMetrics,
          state: DaemonState, after_worker: AfterVerdictRunner | None = None) -> None:
    """`--once`: wait for every run the pass started, and the runs freed hosts take after them
    (and the fix tests and bisections under way). Done only when the lab was seen with nothing
    under way BEFORE a dispatch, and that dispatch gave no host a run: a host that a run, fix test
    or bisection frees between a dispatch and a look is given its next report, and that run is
    waited for too, never left to a daemon that has stopped."""
    def under_way() -> bool:
        return bool(dispatcher.running()) or (after_worker is not None and after_worker.busy())

    while not state.stop:
        idle = not under_way()
        after_runs(store, lab, dispatcher, metrics, state)
        if not under_way():
            if idle:
                return
            continue  # it ended since the look: dispatch again before deciding
        dispatcher.wait(1.0)
        metrics.beat()


ONCE_POST_WAIT_SECONDS = 300.0  # --once waits this long at most for Slack to take the posts it owes


def owed_posts(store: Store) -> list[OutboxRow]:
    """Notifications not delivered yet that a later try can deliver: pending, or in doubt after a
    failure, and not behind a row Slack refused (held for an operator: `triage status`)."""
    held = {row.message_id for row in store.outbox("held")}
    return [row for row in store.outbox("pending", "sending") if row.message_id not in held]


def settle_outbox(store: Store, lab: flow.DaemonContext, state: DaemonState, wait_seconds: float) -> int:
    """`--once`, every run over: deliver until no post is owed, waiting out Slack's failures (the
    outbox's retry waits) for at most `wait_seconds`; how many are still owed after that."""
    deadline = time.monotonic() + wait_seconds
    while True:
        lab.deliver()
        owed = owed_posts(store)
        if not owed or state.stop or time.monotonic() >= deadline:
            return len(owed)
        while not state.stop and time.monotonic() < deadline and not any(store.due(row) for row in owed):
            time.sleep(0.2)  # a retry wait is minutes at most; a stop ends it


def run_pass(settings: Settings, store, state: DaemonState, lab: flow.DaemonContext, metrics: DaemonMetrics, *,
             admit_days: float, dispatcher: Dispatcher | None = None,
             stale_days: float = follow.DEFAULT_STALE_DAYS,
             clock: Callable[[], datetime] = lambda: datetime.now(UTC),
             tree_fetches: watch.TreeFetches | None = None, after_worker: AfterVerdictRunner | None = None) -> None:
    """One pass: deliver, poll, follow, trees, queue fix tests and bisections, admit, digest, plan,
    run, deliver, start the after-verdict jobs. A step that raises is logged and skipped.

    Runs are handed to `dispatcher` (they go on after the pass); without one they are run here,
    one at a time (flow.run_planned). `clock` is the wall clock the lifecycle reads (stale
    reports, when a watched tree is due). With `tree_fetches` the watched trees are fetched in
    the background, their commits read at the pass after; without, fetched in the pass. Fix tests
    and bisections go to `after_worker` (its threads, after_verdict_jobs.py, or on PostgreSQL the
    workers' jobs, daemon/dispatch/after_verdict_queue.py); without one they are run here too."""
    def step(name: str, action: Callable[[], object]) -> None:
        _step(metrics, name, action, state.connections)

    def run_planned() -> None:
        if dispatcher is not None:
            dispatch(store, lab, dispatcher, metrics)
            return
        for message_id in flow.run_planned(store, lab):
            metrics.runs.labels(store.get_triage(message_id).state).inc()

    def admit() -> None:
        if flow.admit(store, lab, admit_days):
            lab.deliver()

    step("deliver", lab.deliver)
    new_ids: list[str] = []
    step("poll", lambda: new_ids.extend(poll_due_sources(settings, store, state, metrics)))
    # after the verdict: what the new mail says of the reports taken on (fixed, reverted, ...)
    step("follow", lambda: (follow.observe(store, new_ids), follow.join_reports(store, new_ids),
                            follow.mark_stale(store, now=clock(), days=stale_days)))
    # the git trees rules/trees.toml names: a fix or a revert landing (each tree bounded, its failure its own)
    if not state.stop and settings.trees:
        step("trees", lambda: watch.watch_trees(store, settings.trees, lab.database.parent, clock(),
                                                fetches=tree_fetches, rules=settings.tree_rules))
    # after a confirmed verdict: a fix series in the thread to test, a merge or range to bisect
    step("queue after verdict", lambda: (fix_testing.queue_fix_tests(store, state.fix_threads_looked),
                                         bisect_flow.queue_bisects(store)))
    if not state.stop:
        step("admit", admit)
        step("digest", lambda: flow.post_digests(store, lab) and lab.deliver())
        step("plan", lambda: flow.plan_new(store, lab))
        step("run", run_planned)
        # what a team member asked from Slack: test a fix, bisect, send the reply upstream
        # (the lab's asks, a fix test or a bisection, go to the host's after-verdict runner below)
        step("asked", lambda: asked.carry_out(store, settings, lab.database, lab.budget, names=asked.MAIL_ASKS)
             and lab.deliver())
        step("deliver", lab.deliver)
        step("after verdict", lambda: after_worker.poke(store) if after_worker is not None
             else after_verdict_jobs.run_after_verdict_jobs(store, lab))
    step("count", lambda: metrics.set_counts(store.triage_counts(), store.outbox_counts(), tuple(TriageState),
                                             OUTBOX_STATUSES))
