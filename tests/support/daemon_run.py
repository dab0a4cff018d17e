"""Running `triage daemon` as a real process in tests: the lab, a public-inbox, a local Slack."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.lab import write_lab_rules

PROJECT = Path(__file__).resolve().parents[2]
SLACK_TOKEN = "xoxb-daemon-test-token"
CHANNEL_ID = "C0TRIAGE1"


def lab_rules(root: Path, list_url: str, poll_minutes: float = 0.1) -> Path:
    """The lab's rules with one lore source polled every `poll_minutes`."""
    rules, _ = write_lab_rules(root, PROJECT)
    (rules / "sources.toml").write_text(f'''
[http]
user_agent = "triagebot-test (daemon tests)"
timeout_seconds = 5
attempts = 2
backoff_seconds = 0.1

[[lore]]
url = "{list_url}"
poll_minutes = {poll_minutes}
''')
    return rules


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def daemon_env(home: Path, slack_url: str | None) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin:/usr/sbin", "NO_PROXY": "*", "HOME": str(home), "PYTHONUNBUFFERED": "1"}
    if slack_url:
        env |= {"SLACK_BOT_TOKEN": SLACK_TOKEN, "SLACK_API_URL": slack_url}
    return env


def start_daemon(database: Path | str, rules: Path, env: dict[str, str], log: Path, *extra: str) -> subprocess.Popen:
    """`triage daemon` in the background; its stdout and stderr appended to `log`."""
    with open(log, "ab") as output:
        return subprocess.Popen([sys.executable, "-m", "triagebot.cli", "daemon", "--db", str(database),
                                 "--rules", str(rules), "--tick", "0.3", "--notify-retry-seconds", "0.5",
                                 *extra], cwd=PROJECT, env=env, stdin=subprocess.DEVNULL,
                                stdout=output, stderr=subprocess.STDOUT, start_new_session=True)


def stop_daemon(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 120) -> int:
    if process.poll() is None:
        os.killpg(process.pid, sig) if sig == signal.SIGKILL else process.send_signal(sig)
    return process.wait(timeout=timeout)


def wait_for(condition: Callable[[], object], timeout: float, what: str, process: subprocess.Popen | None = None,
             log: Path | None = None) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if process is not None and process.poll() is not None:
            break
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-4000:] if log and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def kind_of(message: dict) -> str:
    """Which notification a Slack message is: the outbox kind in its metadata, or the plot file."""
    key = ((message.get("metadata") or {}).get("event_payload") or {}).get("key")
    if key:
        return key.rsplit("#", 1)[1]
    if message.get("files"):
        return "plot"
    return "unknown: " + message.get("text", "")[:60]


def thread_shape(messages: list[dict]) -> list[tuple[str, str | None]]:
    """(kind, kind of its parent) per message, in posting order: what a clean run must equal."""
    by_ts = {message["ts"]: message for message in messages}
    shape = []
    for message in messages:
        parent = message.get("thread_ts")
        shape.append((kind_of(message), kind_of(by_ts[parent]) if parent and parent != message["ts"] else None))
    return shape


def final_state(messages: list[dict]) -> str | None:
    """The state the parent shows now ("[confirmed] …" is its text after the last update)."""
    parents = [message for message in messages if kind_of(message) == "parent"]
    if len(parents) != 1:
        return None
    return parents[0]["text"].split("]", 1)[0].lstrip("[")


def log_events(log: Path) -> list[dict]:
    events = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return events
