"""One backoff for every retry: HTTP fetches, the Slack outbox, SSH reconnects."""
from __future__ import annotations

import random

import pytest

from triagebot.backoff import Backoff
from triagebot.notify.outbox import MAX_RETRY_SECONDS, retry_wait
from triagebot.reproduce.executors.protocol import ConnectionLost
from triagebot.reproduce.executors.ssh import SshExecutor
from triagebot.rules.hosts import SshAccess


def test_waits_double_up_to_the_cap() -> None:
    assert [Backoff(0.25, 10.0).delay(n) for n in range(8)] == [0.25, 0.5, 1, 2, 4, 8, 10, 10]


def test_jitter_is_drawn_from_the_injected_random_source() -> None:
    backoff = Backoff(2.0, 60.0, 0.5)
    waits = [backoff.delay(n, random.Random(7)) for n in range(8)]
    draws = [random.Random(7).uniform(0.5, 1.5) * min(60.0, 2.0 * 2 ** n) for n in range(8)]
    assert waits == draws
    assert all(0.5 * min(60.0, 2.0 * 2 ** n) <= wait <= 1.5 * min(60.0, 2.0 * 2 ** n)
               for n, wait in enumerate(waits))


@pytest.mark.parametrize("options", [{"first": -1, "cap": 1},
                                     {"first": 1, "cap": 1, "jitter": 1.0}])
def test_nonsense_is_refused(options: dict) -> None:
    with pytest.raises(ValueError):
        Backoff(**options)


def test_the_outbox_schedule_is_unchanged() -> None:
    assert [retry_wait(attempts, 30.0) for attempts in (0, 1, 2, 3)] == [30.0, 30.0, 60.0, 120.0]
    assert retry_wait(30, 30.0) == MAX_RETRY_SECONDS


def test_ssh_reconnect_sleeps_through_the_injected_sleeper(monkeypatch) -> None:
    slept: list[float] = []
    access = SshAccess(host="203.0.113.9", user="lab", identity_file="/nonexistent/key",
                       known_hosts_file="/nonexistent/known_hosts")
    executor = SshExecutor(access, "/scratch",
                           max_backoff=1.0, sleep=slept.append, reboot_timeout=3600)
    answers = iter([ConnectionLost("down")] * 5 + [(0, b"", b"", False)])

    def ssh(command: str, timeout: float):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(executor, "_ssh", ssh)
    executor.reconnect()
    assert slept == [0.25, 0.5, 1.0, 1.0, 1.0]
