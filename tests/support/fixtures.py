"""The tests' real servers as pytest fixtures, one per server, registered for every test by
conftest.py (`pytest_plugins`): take one as a parameter instead of starting it by hand.

    smtp          an SMTP server (aiosmtpd) on 127.0.0.1, for the reply upstream
    fake_slack    the local Slack look-alike, with the daemon tests' token and #perf-triage
    sshd          a real sshd on 127.0.0.1 (one a module: starting one takes a second)
    lab_world     a factory of lab worlds (tests/support/world.py), each torn down for the test
    public_inbox  a factory of real public-inbox servers (tests/support/public_inbox.py)
    postgres_server, stores   a real PostgreSQL server for the session (conftest.py)
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.support.daemon_run import CHANNEL_ID, SLACK_TOKEN
from tests.support.fake_slack import FakeSlack
from tests.support.public_inbox import public_inbox  # noqa: F401 - registered here with the others
from tests.support.smtp_server import SmtpServer
from tests.support.sshd import TestSshd
from tests.support.world import World
from tests.support.world import lab_world as make_world


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    with FakeSlack(token=SLACK_TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
        yield slack


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestSshd]:
    with TestSshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture
def lab_world(tmp_path: Path) -> Iterator[Callable[..., World]]:
    """`lab_world(messages, **options)`: a World in the test's tmp_path, closed after the test."""
    with ExitStack() as stack:
        yield lambda messages, **options: stack.enter_context(make_world(tmp_path, messages, **options))
