"""A database that goes away is waited for (issue 34, finding 4): a real PostgreSQL stopped as a crash
would (`pg_ctl stop -m immediate`) in the middle of the daemon's work, then started again on the
same socket.

Before, the job queue's connection was used outside the step guard: `triage daemon` exited 1
(the connection is lost, then closed) and stayed down. Here the daemon, and a `triage worker`
beside it, stay up through the outage; /healthz says `degraded` (the database, with why) while
it lasts and `ok` after; mail posted to the list meanwhile is polled once the server is back; and
every message is stored once, every report taken on once, every notification posted once (one
Slack message per outbox key). The worker takes jobs again after the outage. Nothing here waits
a fixed time: each step waits for its condition, with generous guards.
"""
from __future__ import annotations

import collections
import json
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import PROJECT
from tests.support.daemon_run import (
    CHANNEL_ID,
    SLACK_TOKEN,
    daemon_env,
    free_port,
    log_events,
    start_daemon,
    stop_daemon,
    wait_for,
)
from tests.support.fake_slack import FakeSlack
from tests.support.lab import write_lab_rules
from tests.support.postgres import PostgresServer, start_server
from tests.support.public_inbox import require_public_inbox, start_public_inbox
from triagebot.daemon.dispatch.jobqueue import JobQueueDispatcher
from triagebot.daemon.dispatch.protocol import RunJob
from triagebot.store.postgres import PostgresStore

REPORTS, REPLIES = 6, 5  # 36 messages: half on the list at the start, half posted during the outage
GUARD = 300.0


def messages() -> list[tuple[str, bytes]]:
    """(Message-ID, raw) of REPORTS people's reports, each with REPLIES replies, in posting order."""
    found = []
    for number in range(REPORTS):
        report_id = f"2099{number:04d}.report@outage.example"
        found.append((report_id, (
            f"From: Reporter {number} <rep{number}@outage.example>\nTo: linux-kernel@vger.kernel.org\n"
            f"Subject: [REGRESSION] subsystem{number}: sysbench cpu events/s down 25% (case {number})\n"
            f"Date: Mon, 15 Apr 2099 00:{number:02d}:00 +0000\nMessage-ID: <{report_id}>\n\n"
            f"git bisect says the first bad commit is\n\n  c0ffee{number:02x}1234 (\"subsystem{number}: change "
            f"number {number} of the outage run\")\n\n  $ sysbench cpu --threads=2 --time=1 run\n\n"
            "v6.8 gives 2360 events/s, v6.9-rc1 about 1780 events/s (-24.6%).\n").encode()))
        for reply in range(REPLIES):
            reply_id = f"2099{number:04d}.reply{reply}@outage.example"
            found.append((reply_id, (
                f"From: Replier {reply} <r{reply}@outage.example>\nTo: linux-kernel@vger.kernel.org\n"
                f"Subject: Re: [REGRESSION] case {number}\nDate: Mon, 15 Apr 2099 00:{number:02d}:{10 + reply:02d} "
                f"+0000\nMessage-ID: <{reply_id}>\nIn-Reply-To: <{report_id}>\nReferences: <{report_id}>\n\n"
                f"I see it too on my box, about {20 + reply}% slower.\n").encode()))
    return found


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A server of this test's own (the session's is shared): durable, so a crash-stop keeps every commit."""
    server = start_server(durable=True)
    try:
        yield server
    finally:
        server.stop()


def healthz(port: int) -> dict:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=30) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return json.loads(error.read())
    except OSError:
        return {}


def rows(url: str, sql: str) -> list[tuple] | None:
    """Rows read through a connection of their own; None while the server is away."""
    try:
        with psycopg.connect(url, connect_timeout=5) as connection:
            return [tuple(row) for row in connection.execute(sql).fetchall()]
    except psycopg.Error:
        return None


def count(url: str, sql: str) -> int:
    found = rows(url, sql)
    return int(found[0][0]) if found else -1


def test_the_daemon_and_a_worker_wait_for_postgresql_and_lose_nothing(tmp_path: Path, own_server) -> None:
    require_public_inbox()
    url = own_server.url(own_server.new_schema())
    mail = messages()
    half = len(mail) // 2
    rules = tmp_path / "rules"
    shutil.copytree(PROJECT / "rules" / "reproducers", rules / "reproducers")
    (rules / "hosts.toml").write_text('[[host]]\nname = "lab-noswitch"\nreach = "local"\ncpu_model = "x"\n'
                                      f'threads = 2\nsockets = 1\nmemory_gb = 8\ndisk = "ssd"\n'
                                      f'scratch_dir = "{tmp_path / "scratch"}"\n')
    (rules / "routing.toml").write_text(f'default_channel = "{CHANNEL_ID}"\n')
    worker_root = tmp_path / "worker"
    worker_rules, _ = write_lab_rules(worker_root, PROJECT)  # a host that can switch kernels: the worker serves it
    port = free_port()
    log, worker_log = tmp_path / "daemon.log", tmp_path / "worker.log"
    with start_public_inbox(tmp_path / "lore", "linux-kernel", [raw for _, raw in mail[:1]],
                            feedmax=len(mail) + 10) as inbox, \
            FakeSlack(token=SLACK_TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
        inbox.bulk_add([raw for _, raw in mail[1:half]])
        (rules / "sources.toml").write_text(f'[http]\nuser_agent = "outage test"\ntimeout_seconds = 5\nattempts = 2\n'
                                            f'backoff_seconds = 0.1\n\n[[lore]]\nurl = "{inbox.list_url}"\n'
                                            'poll_minutes = 0.1\n')
        daemon = start_daemon(url, rules, daemon_env(tmp_path, slack.base_url), log, "--health-port", str(port),
                              "--admit-days", "36500")  # type: ignore[arg-type]
        with open(worker_log, "ab") as output:
            worker = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "worker", "--db", url, "--rules",
                                       str(worker_rules), "--stalled-after", "5"], cwd=PROJECT,
                                      env=daemon_env(worker_root, None), stdin=subprocess.DEVNULL, stdout=output,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for(lambda: count(url, "SELECT count(*) FROM messages") > 0, GUARD, "the first messages stored",
                     daemon, log)
            wait_for(lambda: any(item.get("event") == "worker.started" for item in log_events(worker_log)), GUARD,
                     "the worker to start", worker, worker_log)
            own_server.stop_now()  # mid-pass: polls, posts and the job queue's wait all lose the server
            inbox.bulk_add([raw for _, raw in mail[half:]])  # posted while the database is away
            down = wait_for(lambda: (answer := healthz(port)).get("database") == "unreachable" and answer,
                            GUARD, "/healthz to say the database is unreachable", daemon, log)
            assert down["status"] == "degraded" and any("the database cannot be reached" in reason
                                                        for reason in down["reasons"])
            wait_for(lambda: any(item.get("event") == "worker.database_lost" for item in log_events(worker_log)),
                     GUARD, "the worker to notice", worker, worker_log)
            assert daemon.poll() is None and worker.poll() is None
            own_server.start_again()
            wait_for(lambda: healthz(port).get("database") == "ok", GUARD, "the daemon to reconnect", daemon, log)
            wait_for(lambda: any(item.get("event") == "worker.database_back" for item in log_events(worker_log)),
                     GUARD, "the worker to reconnect", worker, worker_log)

            def done() -> bool:
                return (count(url, "SELECT count(*) FROM messages") == len(mail)
                        and count(url, "SELECT count(*) FROM triage") == REPORTS
                        and count(url, "SELECT count(*) FROM outbox WHERE status <> 'sent'") == 0)

            try:
                wait_for(done, GUARD * 2, "every message stored, every report taken on, the outbox sent", daemon, log)
            except AssertionError as error:  # say how far it got
                raise AssertionError(f"{error}\nmessages {count(url, 'SELECT count(*) FROM messages')} of {len(mail)}, "
                                     f"taken on {count(url, 'SELECT count(*) FROM triage')} of {REPORTS}, outbox "
                                     f"{rows(url, 'SELECT status, count(*) FROM outbox GROUP BY status')}") from None
            assert healthz(port)["status"] == "ok"
            # the worker takes jobs again: one deferred now (for no report: it ends at once) is run and deleted
            dispatcher = JobQueueDispatcher(url)
            try:
                with PostgresStore(url) as store, store.transaction():
                    dispatcher.enqueue(store, RunJob("no-such-report@outage.example", "lab-local"))
            finally:
                dispatcher.close()
            wait_for(lambda: count(url, "SELECT count(*) FROM procrastinate_jobs") == 0, GUARD,
                     "the job deferred after the outage to be run", worker, worker_log)
            assert daemon.poll() is None and worker.poll() is None
        finally:
            daemon_code = stop_daemon(daemon)
            worker.send_signal(signal.SIGTERM)
            worker_code = worker.wait(timeout=120)
        assert daemon_code == 0, log.read_text(errors="replace")[-3000:]
        assert worker_code == 0, worker_log.read_text(errors="replace")[-3000:]
        posted = slack.messages(CHANNEL_ID)
    stored = rows(url, "SELECT message_id FROM messages") or []
    assert sorted(message_id for (message_id,) in stored) == sorted(message_id for message_id, _ in mail)
    taken = rows(url, "SELECT message_id FROM triage") or []
    assert len(taken) == len(set(taken)) == REPORTS
    keys = collections.Counter(((message.get("metadata") or {}).get("event_payload") or {}).get("key")
                               for message in posted)
    # each outbox row a new message is posted once; the parent's edits (update-…) change that message
    posts = {f"{message_id}#{kind}" for message_id, kind in rows(url, "SELECT message_id, kind FROM outbox") or []
             if not kind.startswith("update-")}
    assert set(keys) == posts and len(posts) >= 2 * REPORTS, keys
    assert [key for key, times in keys.items() if times > 1] == [], "a notification was posted twice"
    events = [item.get("event") for item in log_events(log)]
    assert events.count("database.lost") >= 1 and events.count("database.back") == events.count("database.lost")
    assert "daemon.stopped" in events
