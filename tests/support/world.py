"""A lab world for the daemon's integration tests, set up once here rather than in each test file:
the test lab's rules (tests/support/lab.py), a real public-inbox serving the list, the local Slack
look-alike, the sources.toml and routing.toml that point the daemon at them, and the environments
of the daemon and of a lab worker.

    with lab_world(tmp_path, [report], repo=tmp_path / "linux") as world:
        daemon = world.start_daemon(tmp_path / "daemon.db", tmp_path / "daemon.log")
        ...

The `lab_world` pytest fixture (tests/support/fixtures.py) is the same as a factory torn down for
the test.
"""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.daemon_run import CHANNEL_ID, SLACK_TOKEN, daemon_env, start_daemon
from tests.support.fake_slack import FakeSlack
from tests.support.lab import lab_path, write_lab_rules
from tests.support.public_inbox import PublicInboxServer, require_public_inbox, start_public_inbox

PROJECT = Path(__file__).resolve().parents[2]
ROUTING = 'default_channel = "#perf-triage"\n'


def lore_sources(list_url: str, user_agent: str, poll_minutes: float = 0.1) -> str:
    """sources.toml for one lore list, polled every `poll_minutes`, retried briefly."""
    return f'''[http]
user_agent = "{user_agent}"
timeout_seconds = 5
attempts = 2
backoff_seconds = 0.1

[[lore]]
url = "{list_url}"
poll_minutes = {poll_minutes}
'''


@dataclass
class World:
    root: Path
    rules: Path
    state: Path  # the test lab's state directory
    server: PublicInboxServer
    slack: FakeSlack
    env: dict[str, str]  # the daemon's environment (the lab on its PATH unless asked otherwise)
    lab_env: dict[str, str]  # a lab worker's: the lab's shims first on the PATH

    def start_daemon(self, database: Path | str, log: Path, *extra: str) -> subprocess.Popen:
        """`triage daemon` on this world, its health port off, a budget of 10 runs a side."""
        return start_daemon(database, self.rules, self.env, log, "--health-port", "off", "--budget", "10", *extra)

    def start_worker(self, url: str, log: Path, *extra: str) -> subprocess.Popen:
        """`triage worker` for this world's lab hosts on the PostgreSQL store `url`."""
        with open(log, "ab") as output:
            return subprocess.Popen([sys.executable, "-m", "triagebot.cli", "worker", "--db", url, "--rules",
                                     str(self.rules), "--budget", "10", "--log-format", "json", *extra],
                                    cwd=PROJECT, env=self.lab_env, stdin=subprocess.DEVNULL, stdout=output,
                                    stderr=subprocess.STDOUT, start_new_session=True)


@contextmanager
def lab_world(root: Path, messages: Iterable[bytes], *, repo: Path | None = None,
              lab: tuple[Path, Path] | None = None, list_name: str = "linux-kernel",
              user_agent: str = "triagebot-test (lab world)", poll_minutes: float = 0.1,
              lab_on_daemon_path: bool = True) -> Iterator[World]:
    """The world: `lab` is (rules, state) when the test wrote the lab's rules itself, else they
    are written here (with the bisection repository `repo`, if any). With `lab_on_daemon_path`
    False the daemon cannot run the lab's benchmark: every lab run must be a worker's."""
    require_public_inbox()
    rules, state = lab if lab is not None else write_lab_rules(root, PROJECT, repo=repo)
    with start_public_inbox(root / "lore", list_name, list(messages)) as server, \
            FakeSlack(token=SLACK_TOKEN, channels={CHANNEL_ID: "perf-triage"}) as slack:
        (rules / "sources.toml").write_text(lore_sources(server.list_url, user_agent, poll_minutes))
        (rules / "routing.toml").write_text(ROUTING)
        env = daemon_env(root, slack.base_url)
        lab_env = env | {"PATH": lab_path(root, env["PATH"])}
        yield World(root, rules, state, server, slack, lab_env if lab_on_daemon_path else env, lab_env)
