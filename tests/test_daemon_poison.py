"""Issue 13 acceptance: a real `triage daemon` polling a real public-inbox that serves poison messages
among good ones stores the good ones, quarantines the bad ones, and keeps polling; a source that
cannot be reached beside it is logged on every pass and stops nothing.

Before: the 8-bit Content-Disposition filename raised AttributeError out of the poll, the daemon
exited 1 on every start without writing a cursor (a crash loop under systemd), and the NUL-byte
message was skipped and lost.
"""
from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

from tests.support.daemon_run import PROJECT, daemon_env, free_port, log_events, start_daemon, stop_daemon, wait_for
from tests.support.lab import write_lab_rules
from tests.support.public_inbox import make_message, start_public_inbox
from tests.test_quarantine import cafe, poison
from triagebot.store.quarantine import quarantine_key


def rules_with(root: Path, *list_urls: str) -> Path:
    rules, _ = write_lab_rules(root, PROJECT)
    lists = "".join(f'\n[[lore]]\nurl = "{url}"\npoll_minutes = 0.1\n' for url in list_urls)
    (rules / "sources.toml").write_text('[http]\nuser_agent = "triagebot-test (poison daemon test)"\n'
                                        'timeout_seconds = 5\nattempts = 2\nbackoff_seconds = 0.1\n' + lists)
    return rules


def rows(database: Path, sql: str) -> set:
    if not database.exists():
        return set()
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as connection:
            return {row[0] for row in connection.execute(sql)}
    except sqlite3.OperationalError:  # not created yet
        return set()


def test_a_daemon_quarantines_poison_messages_stores_the_rest_and_keeps_polling(tmp_path: Path) -> None:
    good = [make_message(f"Re: [PATCH] ext4: tidy helper {index}", "Looks good.\n", msgid=f"good{index}@example.org")
            for index in range(2)]
    bad = [poison("poison@example.org"), cafe("cafe@example.org")]
    with start_public_inbox(tmp_path / "lore", "linux-ext4", [good[0], bad[0], bad[1], good[1]]) as server:
        dead_list = f"http://127.0.0.1:{free_port()}/gone/"  # nothing listens there
        rules = rules_with(tmp_path, dead_list, server.list_url)
        database, log = tmp_path / "daemon.db", tmp_path / "daemon.log"
        daemon = start_daemon(database, rules, daemon_env(tmp_path, None), log, "--health-port", "off")
        try:
            messages_sql, quarantine_sql = "SELECT message_id FROM messages", "SELECT quarantine_key FROM quarantine"
            wait_for(lambda: {"good0@example.org", "good1@example.org"} <= rows(database, messages_sql)
                     and "poison@example.org" in rows(database, quarantine_sql), 120,
                     "the first poll to store the good messages and quarantine the poison one", daemon, log)
            # nothing lost: the message the parser used to crash on is stored or quarantined, once
            cafe_key = quarantine_key(bad[1])
            assert (cafe_key in rows(database, messages_sql)) != (cafe_key in rows(database, quarantine_sql))
            # the next poll of the same process picks up what arrives next
            server.add_message(make_message("Re: [PATCH] ext4: later", "Thanks.\n", msgid="later@example.org"))
            wait_for(lambda: "later@example.org" in rows(database, messages_sql), 120,
                     "a second poll to store the later message", daemon, log)
            assert daemon.poll() is None, "the daemon exited"
        finally:
            code = stop_daemon(daemon, signal.SIGTERM)
    assert code == 0, log.read_text()[-4000:]
    quarantined = rows(database, "SELECT quarantine_key || ' ' || error FROM quarantine")
    assert "poison@example.org binary data, not a mail message, archive page or text" in quarantined
    assert len(quarantined) <= 2  # each poison message once, however often it was served
    events = log_events(log)
    failed = [item for item in events if item.get("event") == "poll.failed"]
    done = [item for item in events if item.get("event") == "poll.done" and item.get("source") == server.list_url]
    assert len(done) >= 2 and {item["source"] for item in failed} == {dead_list}
    assert len(failed) >= 2  # the unreachable source was tried on each pass, and stopped nothing
    assert any(item.get("event") == "poll.quarantined" and "poison@example.org" in item["keys"] for item in events)
    assert "Traceback" not in log.read_text()
    assert events[-1]["event"] == "daemon.stopped"
