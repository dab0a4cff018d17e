"""The daemon's /healthz and Prometheus /metrics (prometheus-client): what they say, computed here.

/healthz answers 200 with a JSON body while the loop is alive (it beat within
`stale_seconds`: each tick and each sample beats), 503 `stuck` when it is not, and 503
`degraded`, with the reasons, when every polled source's last poll failed, when one source's
last `FAILING_POLLS` polls in a row failed or skipped entries the server would not give
(`degraded_sources` names each, with its last reason, while the other sources work), the
outbox holds rows for an operator, or the database cannot be reached (`database`: since when,
the attempts, the last error; the loop waits for it, daemon/outage.py). The polls, the queue
and the held rows are read from the store through lab/standing.py, as `triage status` and the
pages read them, so they agree; the heartbeat, the skipped entries and the database's absence
are the loop's own. What it says is computed by `health_answer`, whatever serves it. /metrics is the registry
in Prometheus' text format, with each source's poll lag (seconds since its last successful
poll) computed when read, and the lab as the daemon last saw it (`set_lab`): each host busy or
idle with the report it runs, each host's queue and how long each waiting report has waited,
computed when read.
/metrics reads only these objects, never the database. They are served by the web app
(triagebot/web/app.py, uvicorn on a thread of its own), beside the read-only pages when the
daemon hands it a store.
"""
from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from triagebot.lab.standing import FAILING_POLLS, Standing, standing
from triagebot.web.app import Health, build_app
from triagebot.web.server import WebServer
from triagebot.web.views import Site

# what a lore poll's events say when the feed did not reach back and the list's search is read
GAP_HEAL_EVENT = "the feed does not reach back"


class _PollLag:
    """triage_poll_lag_seconds{source}: now minus the source's last successful poll (or, never
    successful, minus the daemon's start), computed at each scrape."""

    def __init__(self, metrics: DaemonMetrics) -> None:
        self.metrics = metrics

    def collect(self):
        family = GaugeMetricFamily("triage_poll_lag_seconds",
                                   "Seconds since each source's last successful poll (since start if none)",
                                   labels=["source"])
        now = time.time()
        for source in sorted(self.metrics.failures):
            family.add_metric([source], round(now - self.metrics.last_ok.get(source, self.metrics.started_at), 3))
        yield family
        newest = GaugeMetricFamily("triage_newest_message_age_seconds",
                                   "Seconds since the Date of the newest message a source has given this daemon "
                                   "(a list that should be busy and grows old here is not being read)",
                                   labels=["source"])
        for source, timestamp in sorted(self.metrics.newest.items()):
            newest.add_metric([source], round(now - timestamp, 3))
        yield newest


class _Lab:
    """The lab's gauges from the last snapshot the daemon set (`DaemonMetrics.set_lab`)."""

    def __init__(self, metrics: DaemonMetrics) -> None:
        self.metrics = metrics

    def collect(self):
        lab = self.metrics.lab
        now = time.time()
        busy = GaugeMetricFamily("triage_host_busy", "1 while a lab host runs a report, else 0", labels=["host"])
        running = GaugeMetricFamily("triage_host_running", "The report each busy lab host runs (value 1)",
                                    labels=["host", "message_id"])
        length = GaugeMetricFamily("triage_host_queue_length", "Reports waiting for each lab host", labels=["host"])
        longest = GaugeMetricFamily("triage_host_queue_longest_wait_seconds",
                                    "Seconds the longest-waiting report in each host's queue has waited "
                                    "since it was taken on (0: none waits)", labels=["host"])
        awaiting = GaugeMetricFamily("triage_host_awaiting_worker",
                                     "1 while a lab host's job waits for a `triage worker` to take it (PostgreSQL; "
                                     "a host busy this way for long means no worker serves it), else 0",
                                     labels=["host"])
        waiting = GaugeMetricFamily("triage_report_waiting_seconds",
                                    "Seconds each waiting report has waited since it was taken on, by the host "
                                    "it is queued for and its place (1: next)",
                                    labels=["host", "message_id", "place"])
        for host, report in sorted(lab.get("hosts", {}).items()):
            busy.add_metric([host], 0 if report is None else 1)
            if report:
                running.add_metric([host, report], 1)
            awaiting.add_metric([host], 1 if host in lab.get("awaiting_worker", ()) else 0)
        for host, queue in sorted(lab.get("queues", {}).items()):
            length.add_metric([host], len(queue))
            waits = [round(now - since, 3) for _message_id, since in queue]
            longest.add_metric([host], max(waits, default=0))
            for place, ((message_id, _since), wait) in enumerate(zip(queue, waits, strict=True), start=1):
                waiting.add_metric([host, message_id, str(place)], wait)
        yield from (busy, running, awaiting, length, longest, waiting)


class DaemonMetrics:
    """The counters and gauges the daemon keeps, in a registry of their own."""

    def __init__(self, sources: tuple[str, ...] | list[str] = ()) -> None:
        """`sources`: the URLs the daemon polls, each exported (poll lag, counts at 0) from the start."""
        self.registry = CollectorRegistry()
        self.polls = Counter("triage_polls", "Source polls, by source and outcome", ["source", "outcome"],
                             registry=self.registry)
        self.messages = Counter("triage_messages_stored", "New messages stored, by source", ["source"],
                                registry=self.registry)
        self.last_poll = Gauge("triage_last_poll_timestamp_seconds", "When each source was last polled",
                               ["source"], registry=self.registry)
        self.reports = Gauge("triage_reports", "Reports taken on, by triage state", ["state"],
                             registry=self.registry)
        self.outbox = Gauge("triage_outbox", "Outbox rows, by status", ["status"], registry=self.registry)
        self.notify_failures = Counter("triage_notify_failures", "Slack calls that failed, by code", ["code"],
                                       registry=self.registry)
        self.notifications = Counter("triage_notifications_sent", "Notifications delivered",
                                     registry=self.registry)
        self.quarantined = Counter("triage_messages_quarantined", "Messages the parser could not read, by source",
                                   ["source"], registry=self.registry)
        self.step_failures = Counter("triage_step_failures", "Steps of a pass that raised, by step", ["step"],
                                     registry=self.registry)
        self.runs = Counter("triage_runs", "Reruns finished, by outcome", ["outcome"], registry=self.registry)
        self.gap_heals = Counter("triage_gap_heals", "Polls that read the list's search because the feed did not "
                                 "reach back to what was seen, by source", ["source"], registry=self.registry)
        self.heartbeat_at = time.monotonic()
        self.started_at = time.time()
        self.held = 0
        self.failures: dict[str, int] = {}  # source -> failed polls in a row (0: the last one was ok)
        self.troubles: dict[str, int] = {}  # source -> polls in a row that failed or skipped entries
        self.trouble_reason: dict[str, str] = {}  # source -> what the last such poll said
        self.last_ok: dict[str, float] = {}  # source -> time.time() of its last successful poll
        self.newest: dict[str, float] = {}  # source -> Unix time of the newest message Date it gave
        # {"hosts": {host: report it runs, "" when another process holds it, None when idle},
        #  "queues": {host: [(message_id, Unix time taken on), …] in the order they will run]}
        self.lab: dict = {}
        # the database out of reach: {"since": time.time(), "reason": …, "attempts": n}; None when reachable
        self.database: dict | None = None
        self.database_outages = Counter("triage_database_outages", "Times the database could not be reached "
                                        "and the daemon waited for it", registry=self.registry)
        self.database_reachable = Gauge("triage_database_reachable", "1 while the daemon reaches its database, "
                                        "0 while it waits for it", registry=self.registry)
        self.database_reachable.set(1)
        self.registry.register(_PollLag(self))
        self.registry.register(_Lab(self))
        self._export_zeros(tuple(sources))

    def _export_zeros(self, sources: tuple[str, ...]) -> None:
        """Every series a dashboard or an alert reads exists from the first scrape, at 0, rather
        than appearing only once something happens: reports by each state, outbox rows by each
        status, and per source its poll lag (from the start), polls, messages and failures."""
        from triagebot.records.states import TriageState
        from triagebot.store.protocol import OUTBOX_STATUSES

        self.set_counts({}, {}, tuple(TriageState), OUTBOX_STATUSES)
        for source in sources:
            self.failures.setdefault(source, 0)
            for outcome in ("ok", "error"):
                self.polls.labels(source, outcome)
            self.messages.labels(source)
            self.quarantined.labels(source)
            self.gap_heals.labels(source)

    def poll_ok(self, source: str, events: tuple[str, ...] | list[str] = ()) -> None:
        self.failures[source] = 0
        self.troubles[source] = 0
        self.last_ok[source] = time.time()
        if any(GAP_HEAL_EVENT in line for line in events):
            self.gap_heals.labels(source).inc()

    def saw_dates(self, source: str, dates: list[str | None]) -> None:
        """Keep the newest of the ISO 8601 Dates of a poll's new messages (unreadable ones skipped)."""
        stamps = [] if source not in self.newest else [self.newest[source]]
        for text in dates:
            if not text:
                continue
            try:
                stamps.append(datetime.fromisoformat(text).timestamp())
            except ValueError:
                continue
        if stamps:
            self.newest[source] = max(stamps)

    def set_lab(self, lab: dict) -> None:
        """The lab as the daemon sees it now (see `lab` above)."""
        self.lab = lab

    def poll_failed(self, source: str) -> None:
        self.failures[source] = self.failures.get(source, 0) + 1

    def poll_troubled(self, source: str, reason: str) -> None:
        """A poll that failed, or stored what it could but skipped entries: `reason` says which."""
        self.troubles[source] = self.troubles.get(source, 0) + 1
        self.trouble_reason[source] = reason

    def degraded_sources(self, failing_polls: int = FAILING_POLLS) -> dict[str, str]:
        """Sources whose last `failing_polls` polls in a row failed or skipped entries, with why."""
        return {source: f"its last {count} polls failed or skipped entries; the last: "
                        f"{self.trouble_reason.get(source, '?')}"
                for source, count in sorted(self.troubles.items()) if count >= failing_polls}

    def database_problems(self) -> list[str]:
        """The database's absence, in words, while the loop waits for it; empty when it is there."""
        if self.database is None:
            return []
        return [f"the database cannot be reached (for {time.time() - self.database['since']:.0f} s, "
                f"{self.database['attempts']} reconnection attempts so far): {self.database['reason']}; "
                "the daemon waits for it and reconnects"]

    def problems(self, failing_polls: int = FAILING_POLLS) -> list[str]:
        """Why the daemon is degraded, in words; empty when it is not."""
        reasons = []
        reasons.extend(self.database_problems())
        polled = [source for source in self.failures if source in self.last_ok or self.failures[source]]
        if polled and all(self.failures[source] for source in polled):
            reasons.append(f"polls failing: every polled source's last poll failed ({len(polled)}; see the "
                           "daemon's log or triage status)")
        for source, why in self.degraded_sources(failing_polls).items():
            reasons.append(f"source {source} degraded: {why}")
        if self.held:
            reasons.append(f"{self.held} outbox row(s) held: Slack refused them (triage status; fix the token or "
                           "channel, then restart)")
        return reasons

    def beat(self) -> None:
        self.heartbeat_at = time.monotonic()

    def database_down(self, reason: str, attempts: int = 0) -> None:
        """The database cannot be reached: said by /healthz until `database_up`."""
        if self.database is None:
            self.database_outages.inc()
            self.database = {"since": time.time()}
        self.database_reachable.set(0)
        self.database |= {"reason": reason, "attempts": attempts}

    def database_up(self) -> None:
        self.database = None
        self.database_reachable.set(1)

    def set_counts(self, triage_counts: dict[str, int], outbox_counts: dict[str, int],
                   states: tuple[str, ...], statuses: tuple[str, ...]) -> None:
        for state in states:
            self.reports.labels(state).set(triage_counts.get(state, 0))
        for status in statuses:
            self.outbox.labels(status).set(outbox_counts.get(status, 0))
        self.held = outbox_counts.get("held", 0)


def health_answer(metrics: DaemonMetrics, stale_seconds: float = 900.0, failing_polls: int = FAILING_POLLS,
                  now: float | None = None, standing: Standing | None = None) -> tuple[int, dict]:
    """/healthz's HTTP status and JSON body (`now`: time.monotonic()). With `standing` (the
    store's polls, queue and held rows, read as `triage status` and the pages read them) the
    polls and the outbox are judged from it; without (no store at hand), from the metrics. The
    heartbeat and the skipped entries are the loop's own, in the metrics."""
    age = (time.monotonic() if now is None else now) - metrics.heartbeat_at
    alive = age <= stale_seconds
    if standing is None:
        problems = metrics.problems(failing_polls)
        failed = dict(sorted(metrics.failures.items()))
        held = int(metrics.held)
    else:
        problems = metrics.database_problems() + standing.problems(failing_polls) + [
            f"source {source} degraded: {why}" for source, why in metrics.degraded_sources(failing_polls).items()
            if not any(source in reason for reason in standing.poll_problems(failing_polls))]
        failed = {poll.url: poll.failed_in_a_row for poll in standing.polls}
        held = standing.held
    status = "stuck" if not alive else "degraded" if problems else "ok"
    body: dict = {"status": status, "seconds_since_heartbeat": round(age, 1),
                  "stale_after_seconds": stale_seconds, "outbox_held": held,
                  "failed_polls_in_a_row": failed,
                  "degraded_sources": metrics.degraded_sources(failing_polls),
                  "database": "unreachable" if metrics.database is not None else "ok",
                  "uptime_seconds": round(time.time() - metrics.started_at, 1)}
    if standing is not None:
        body["polls"] = standing.polls_line()
        body["queue"] = standing.queue_counts()
    if not alive:
        problems = [f"the loop has not beaten for {age:.0f} s (over {stale_seconds:g} s)", *problems]
    if problems:
        body["reasons"] = problems
    return (200 if status == "ok" else 503), body


class HealthServer:
    """/healthz and /metrics on `host:port` (port 0: any free port; see `.port`), and the pages
    of `site` beside them when given (the daemon's store)."""

    def __init__(self, metrics: DaemonMetrics, host: str = "127.0.0.1", port: int = 0,
                 stale_seconds: float = 900.0, failing_polls: int = FAILING_POLLS, site: Site | None = None,
                 slack: Any = None) -> None:
        self.metrics = metrics
        self.stale_seconds = stale_seconds
        self.failing_polls = failing_polls
        self.site = site
        self.server = WebServer(build_app(site, Health(healthz=self.health, metrics=self.scrape), slack), host, port)
        self.port = self.server.port

    def scrape(self) -> tuple[int, bytes, str]:
        return 200, generate_latest(self.metrics.registry), CONTENT_TYPE_LATEST

    def health(self) -> tuple[int, bytes, str]:
        status, body = health_answer(self.metrics, self.stale_seconds, self.failing_polls,
                                     standing=self._standing())
        return status, (json.dumps(body) + "\n").encode(), "application/json"

    def _standing(self) -> Standing | None:
        """The store's polls and queue, as the pages and `triage status` read them; None without a
        store, or when it cannot be read now (then the metrics answer, and say nothing of the queue)."""
        site = self.site
        if site is None or site.settings is None:
            return None
        try:
            with site.open_store() as store:
                return standing(store, site.database, site.settings,
                                timedelta(minutes=site.settings.max_wait_minutes), datetime.now(UTC))
        except Exception:  # noqa: BLE001 - a store that cannot be read now: the loop's own figures answer
            return None

    def start(self) -> HealthServer:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()
