"""The daemon's /healthz and Prometheus /metrics on a local port (prometheus-client).

/healthz answers 200 with a JSON body while the loop is alive (it beat within
`stale_seconds`: each tick and each sample beats), 503 `stuck` when it is not, and 503
`degraded`, with the reasons, when every source has failed its last `FAILING_POLLS` polls in a
row or the outbox holds rows for an operator. /metrics is the registry in Prometheus' text
format, with each source's poll lag (seconds since its last successful poll) computed when read.
The server runs on a thread of its own and reads only these objects, never the database.
"""
from __future__ import annotations

import json
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

# consecutive failed polls of every source after which /healthz says `degraded`: one failure is
# a blip (a retry already happened inside the poll), three in a row is an outage
FAILING_POLLS = 3
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
        self.last_ok: dict[str, float] = {}  # source -> time.time() of its last successful poll
        self.newest: dict[str, float] = {}  # source -> Unix time of the newest message Date it gave
        self.registry.register(_PollLag(self))
        self._export_zeros(tuple(sources))

    def _export_zeros(self, sources: tuple[str, ...]) -> None:
        """Every series a dashboard or an alert reads exists from the first scrape, at 0, rather
        than appearing only once something happens: reports by each state, outbox rows by each
        status, and per source its poll lag (from the start), polls, messages and failures."""
        from triagebot.states import TriageState
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

    def poll_failed(self, source: str) -> None:
        self.failures[source] = self.failures.get(source, 0) + 1

    def problems(self, failing_polls: int = FAILING_POLLS) -> list[str]:
        """Why the daemon is degraded, in words; empty when it is not."""
        reasons = []
        if self.failures and all(count >= failing_polls for count in self.failures.values()):
            reasons.append(f"every source ({len(self.failures)}) failed its last {failing_polls} polls in a row "
                           "(see the daemon's log or triage status)")
        if self.held:
            reasons.append(f"{self.held} outbox row(s) held: Slack refused them (triage status; fix the token or "
                           "channel, then restart)")
        return reasons

    def beat(self) -> None:
        self.heartbeat_at = time.monotonic()

    def set_counts(self, triage_counts: dict[str, int], outbox_counts: dict[str, int],
                   states: tuple[str, ...], statuses: tuple[str, ...]) -> None:
        for state in states:
            self.reports.labels(state).set(triage_counts.get(state, 0))
        for status in statuses:
            self.outbox.labels(status).set(outbox_counts.get(status, 0))
        self.held = outbox_counts.get("held", 0)


class HealthServer:
    """/healthz and /metrics on `host:port` (port 0: any free port; see `.port`)."""

    def __init__(self, metrics: DaemonMetrics, host: str = "127.0.0.1", port: int = 0,
                 stale_seconds: float = 900.0, failing_polls: int = FAILING_POLLS) -> None:
        self.metrics = metrics
        self.stale_seconds = stale_seconds
        self.failing_polls = failing_polls
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args) -> None:  # the daemon's own log says enough
                pass

            def do_GET(self) -> None:
                if self.path.split("?")[0] == "/healthz":
                    status, body, kind = outer.health()
                elif self.path.split("?")[0] == "/metrics":
                    status, body, kind = 200, generate_latest(outer.metrics.registry), CONTENT_TYPE_LATEST
                else:
                    status, body, kind = 404, b"not found: try /healthz or /metrics\n", "text/plain"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="triage-health", daemon=True)

    def health(self) -> tuple[int, bytes, str]:
        age = time.monotonic() - self.metrics.heartbeat_at
        held = self.metrics.held
        alive = age <= self.stale_seconds
        problems = self.metrics.problems(self.failing_polls)
        status = "stuck" if not alive else "degraded" if problems else "ok"
        body = {"status": status, "seconds_since_heartbeat": round(age, 1),
                "stale_after_seconds": self.stale_seconds, "outbox_held": int(held),
                "failed_polls_in_a_row": dict(sorted(self.metrics.failures.items())),
                "uptime_seconds": round(time.time() - self.metrics.started_at, 1)}
        if not alive:
            problems = [f"the loop has not beaten for {age:.0f} s (over {self.stale_seconds:g} s)", *problems]
        if problems:
            body["reasons"] = problems
        return (200 if status == "ok" else 503), (json.dumps(body) + "\n").encode(), "application/json"

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
