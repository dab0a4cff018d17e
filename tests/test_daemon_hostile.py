"""Issue 21 acceptance: the daemon's polls with a poisoned source beside a good one.

The good list's messages arrive within one poll interval of their publication throughout,
counted in passes (each pass is one poll interval later on the daemon's injected clock), while
a source whose feed fails every poll and one that shows 1,000 new entries on every request
are polled beside it; /healthz names the failing source as degraded by its third failed poll.
Before: the endless feed kept its poll going for ever (the good list was never polled again),
and /healthz said ok as long as one source worked.
"""
from __future__ import annotations

from pathlib import Path

from tests.support.hostile_lore import Behaviour, HostileLore
from triagebot.daemon.health import FAILING_POLLS, DaemonMetrics, health_answer
from triagebot.daemon.loop import DaemonState, poll_due_sources
from triagebot.http_client.bounds import PollBounds
from triagebot.http_client.protocol import HttpPolicy
from triagebot.rules.settings import Settings, SourceSettings
from triagebot.store.sqlite import SqliteStore

POLICY = HttpPolicy(user_agent="triagebot-test (daemon, hostile)", timeout_seconds=5, deadline_seconds=2,
                    attempts=1, backoff_seconds=0)
POLL_MINUTES = 5.0


class Good(Behaviour):
    def __init__(self) -> None:
        self.published: list[str] = []

    def feed_entries(self, request):
        return [(message_id, None) for message_id in reversed(self.published)]


class FeedDown(Behaviour):
    def feed_answer(self, request):
        return 500, b"internal error"


class Endless(Behaviour):
    def feed_entries(self, request):
        return [(f"f{request}.{index}@endless", None) for index in range(1000)]


def test_a_good_list_keeps_its_pace_beside_poisoned_ones_and_healthz_names_the_bad_one(tmp_path: Path) -> None:
    good = Good()
    with HostileLore(FeedDown()) as down, HostileLore(Endless()) as endless, HostileLore(good) as fine, \
            SqliteStore(tmp_path / "d.db") as store:
        settings = Settings(rules_dir=tmp_path, http=POLICY, bounds=PollBounds(messages=60),
                            sources=tuple(SourceSettings("lore", server.list_url, POLL_MINUTES)
                                          for server in (down, endless, fine)))
        state, metrics = DaemonState(), DaemonMetrics()
        clock = [1000.0]
        for number in range(6):
            good.published.append(f"news{number}@good")  # published during the interval before this pass
            poll_due_sources(settings, store, state, metrics, now=lambda: clock[0], jobs=1)
            stored = {message.message_id for message in store.iter_raw() if message.message_id.endswith("@good")}
            assert stored == set(good.published), f"pass {number}"  # within one poll interval
            degraded = metrics.degraded_sources()
            status, body = health_answer(metrics, now=metrics.heartbeat_at)
            if number + 1 >= FAILING_POLLS:
                assert down.list_url in degraded and "HTTP 500" in degraded[down.list_url]
                assert status == 503 and body["status"] == "degraded"
                assert any(down.list_url in reason for reason in body["reasons"])
            else:
                assert status == 200 and degraded == {}
            assert fine.list_url not in degraded and endless.list_url not in degraded
            clock[0] += POLL_MINUTES * 60
        # the endless feed had its share of every pass, bounded, and no more
        endless_messages = sum(1 for message in store.iter_raw() if message.message_id.endswith("@endless"))
        assert 0 < endless_messages <= 6 * 60
        assert len(down.paths("new.atom")) == 6
