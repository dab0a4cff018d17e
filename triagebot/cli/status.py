"""`triage status`: what the daemon is doing — its health, the queue (each report's place in the
lab), the lab hosts (busy with which report, or idle), each host's queue with waiting times, the
last poll of each source, each watched git tree's last fetch, the messages held in quarantine
(the parser could not read them). The health, the places and the polls are worded by
lab/standing.py, as the web pages and /healthz word them.

Read-only: it opens the database beside a running daemon (WAL: neither blocks the other), tells
busy from idle as the daemon does (triagebot.lab_queue.occupancy: on PostgreSQL the job queue,
whichever machine's worker holds the job; on SQLite each host's lock, tried without waiting),
and computes the daemon's schedule from the same stored state, so the queues shown are the daemon's.
"""
from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from triagebot.cli.common import (
    add_db_argument,
    add_json_argument,
    add_rules_argument,
    database_location,
    database_path,
    open_store,
)
from triagebot.lab.standing import standing
from triagebot.lifecycle.watch import tree_state
from triagebot.logs import redact
from triagebot.notify.render import STATE_MEANING
from triagebot.records.states import OPEN_STATES, TriageState
from triagebot.reproduce.schedule import describe_wait
from triagebot.rules.settings import Settings, settings_for
from triagebot.store.protocol import Store, UnreadableRecord

# where `triage status` read which hosts are busy (lab_queue.occupancy's source), in words
BUSY_FROM = {"job queue": "busy: a job a worker holds or that waits for one, from the job queue",
             "host locks": "busy: a held host lock on this machine",
             "triage table": "busy: the reports the triage table says run"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)
    add_rules_argument(parser)
    add_json_argument(parser, "print the status as one JSON object")


def _subject(store: Store, message_id: str) -> str | None:
    """The stored report's subject; None when its record cannot be read (status still prints)."""
    try:
        report = store.get_record(message_id)
    except UnreadableRecord:
        return None
    return report.subject if report else None


def gather(store: Store, database: Path, settings: Settings, now: datetime | None = None) -> dict:
    now = now or datetime.now(UTC)
    settings.need_hosts()  # no hosts.toml: say so, as ever
    found = standing(store, database, settings, timedelta(minutes=settings.max_wait_minutes), now)
    view = found.lab

    def place(message_id: str) -> str | None:
        where = found.place(message_id)
        return where.text() if where is not None else None
    queue = [{"message_id": row.message_id, "state": row.state, "host": row.host or None, "channel": row.channel,
              "since": row.updated_at, "subject": _subject(store, row.message_id), "place": place(row.message_id)}
             for row in store.triage_in(*OPEN_STATES)]
    hosts = []
    for host in view.hosts:
        running = view.busy.get(host.name)
        queued = view.schedule.queues.get(host.name, ())
        hosts.append({"name": host.name, "reach": host.reach, "can_switch_kernel": host.can_switch_kernel,
                      "busy": running is not None, "running": running or None,
                      "awaiting_worker": host.name in view.awaiting_worker,
                      "worker_beat_seconds_ago": (round(view.beat_ago[host.name])
                                                  if host.name in view.beat_ago else None),
                      "queue": [{"message_id": item.message_id, "place": place,
                                 "waited_seconds": round(item.waited.total_seconds())}
                                for place, item in enumerate(queued, start=1)],
                      "next": [{"message_id": item.message_id, "waited_seconds": round(item.waited.total_seconds()),
                                "past_cap": item.past_cap}
                               for item in view.schedule.assignments if item.host == host.name]})
    polls = [{"source": poll.url, "every_minutes": poll.every_minutes, "last": poll.last, "text": poll.text()}
             for poll in found.polls]
    trees = []
    for tree in settings.trees:
        state = tree_state(store, tree.name)
        trees.append({"tree": tree.name, "url": tree.url, "branch": tree.branch,
                      "every_minutes": tree.bounds.every_minutes, "fetched_at": state.get("fetched_at"),
                      "outcome": state.get("outcome"), "error": state.get("error"),
                      "last_commit": state.get("last_commit")})
    held = [{"message_id": row.message_id, "kind": row.kind, "channel": row.channel, "error": row.last_error}
            for row in store.outbox("held")]
    return {"database": str(database), "health": found.health(), "problems": found.problems(),
            "polls": found.polls_line(), "queue_counts": found.queue_counts(),
            "reports": store.triage_counts(), "queue": queue, "hosts": hosts,
            "busy_from": view.busy_from, "max_wait_minutes": settings.max_wait_minutes,
            "unrunnable": list(view.schedule.unrunnable),
            "sources": polls, "trees": trees, "outbox": store.outbox_counts(), "held": held,
            "quarantined": store.count_quarantined()}


def render(status: dict) -> str:
    lines = [f"database: {status['database']}",
             f"health: {status['health']}" + "".join(f"\n  {problem}" for problem in status["problems"]),
             "", "reports:"]
    counts = status["reports"]
    if not counts:
        lines.append("  none taken on yet (the daemon takes on reports dated within --admit-days)")
    for state in TriageState:
        if counts.get(state):
            lines.append(f"  {state:15} {counts[state]:>5}  {STATE_MEANING[state]}")
    lines += ["", "queue:" if status["queue"] else "queue: empty"]
    for item in status["queue"]:
        where = f"  {item['place']}" if item["place"] else (f" on {item['host']}" if item["host"] else "")
        lines.append(f"  {item['state']:8} since {item['since']}{where}  <{item['message_id']}>  "
                     f"{item['subject'] or ''}")
    lines += ["", f"hosts ({BUSY_FROM.get(status['busy_from'], status['busy_from'])}; a report waits "
                  f"{describe_wait(timedelta(minutes=status['max_wait_minutes']))} at most for its most similar host):"]
    for host in status["hosts"]:
        note = "" if host["can_switch_kernel"] else " (cannot switch kernels: reports are planned, not rerun)"
        running = ""
        if host["busy"]:
            running = f"  running <{host['running']}>" if host["running"] else "  (a rerun outside the daemon)"
            if host["awaiting_worker"]:
                running += " (its job waits for a `triage worker` serving this host)"
            elif host["worker_beat_seconds_ago"] is not None:
                running += f" (its worker last beat {host['worker_beat_seconds_ago']} s ago)"
        lines.append(f"  {host['name']:16} {host['reach']:5} {'busy' if host['busy'] else 'idle'}{note}{running}")
        for item in host["next"]:
            lines.append(f"      next: <{item['message_id']}> waited "
                         f"{describe_wait(timedelta(seconds=item['waited_seconds']))}"
                         + (" (past the cap: the most similar free host)" if item["past_cap"] else "")
                         + "; starts at the daemon's next step")
        for item in host["queue"]:
            lines.append(f"      {item['place']:>3}. <{item['message_id']}> waiting "
                         f"{describe_wait(timedelta(seconds=item['waited_seconds']))}")
    if status["unrunnable"]:
        lines.append(f"  {len(status['unrunnable'])} planned report(s) wait for a host that can switch kernels "
                     "(describe the lab in hosts.toml)")
    lines += ["", f"sources ({status['polls']}):"]
    if not status["sources"]:
        lines.append("  none (rules/sources.toml lists none)")
    for source in status["sources"]:
        lines.append(f"  {source['source']} (every {source['every_minutes']:g} min): {source['text']}")
    if status["trees"]:
        lines += ["", "trees:"]
    for tree in status["trees"]:
        if not tree["fetched_at"]:
            seen = "never fetched"
        elif tree["outcome"] == "error":
            seen = f"last fetch {tree['fetched_at']}: FAILED: {tree['error']}"
        else:
            seen = f"last fetch {tree['fetched_at']}: {tree['outcome'] or 'started'}"
        lines.append(f"  {tree['tree']} ({tree['branch']}, every {tree['every_minutes']:g} min): {seen}")
    outbox = status["outbox"]
    lines += ["", "outbox: " + (", ".join(f"{count} {name}" for name, count in sorted(outbox.items())) or "empty")]
    for row in status["held"]:
        lines.append(f"  held: {row['kind']} of <{row['message_id']}> to {row['channel']}: {row['error']}")
    if status["held"]:
        lines.append("  (fix the token or channel, then restart the daemon: held notifications are tried again)")
    count = status["quarantined"]
    lines += ["", f"quarantined: {count} message{'' if count == 1 else 's'} the parser could not read"
                  + (" (triage list --failed shows them; triage reparse retries them)" if count else "")]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    database = database_path(args)
    if not database_location(args).exists():
        print(f"triage status: {database_location(args)}: no database yet (start `triage daemon` or `triage ingest`)",
              file=sys.stderr)
        return 1
    with open_store(args) as store:
        status = gather(store, database, settings_for(args.rules))
    status["database"] = str(database_location(args))  # the URL, for a PostgreSQL store
    # a source URL's password may sit in its stored poll outcome (an older store) or its key: the
    # status passes through the logs' one redaction, as every line the daemon writes does
    print(redact(json.dumps(status, ensure_ascii=False) if args.json else render(status)))
    return 0
