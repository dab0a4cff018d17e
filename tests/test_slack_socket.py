"""Socket Mode, for a team without a public endpoint: slack-bolt's Socket Mode handler (slack_sdk's
built-in WebSocket client) opens its connection through `apps.connections.open` with the
app-level token, and the test Slack server sends real-shaped envelopes over a WebSocket on
127.0.0.1 (tests/support/slack_socket.py) and checks each ack. The same checks and actions as
over HTTP: a redelivered envelope is a replay, refused, nothing changed."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_slack import FakeSlack
from tests.support.slack_world import CHANNEL, REPORT_ID, TOKEN, decided_report, refusals
from triagebot.rules.routing import parse_routing
from triagebot.web.slack_app import SlackSettings, socket_mode

APP_TOKEN = "xapp-1-A0TRIAGEBOT-1-socketmodetest"
PERMISSIONS = parse_routing(f'default_channel = "{CHANNEL}"\n[slack]\nrun = ["U0RUNNER"]\n', "r.toml").permissions


@pytest.fixture
def connected(stores):
    store = stores.open()
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}, app_token=APP_TOKEN) as slack:
        decided_report(store)
        handler = socket_mode(SlackSettings(signing_secret="", token=TOKEN, open_store=stores.open,
                                            permissions=PERMISSIONS, budget=5, api_url=slack.base_url,
                                            app_token=APP_TOKEN))
        try:
            assert slack.socket.connected()
            yield slack, store
        finally:
            handler.close()
            store.close()


def snapshot(store) -> tuple:
    return (store.get_triage(REPORT_ID), store.actions_of(REPORT_ID), [row.kind for row in store.outbox()])


def test_a_click_and_a_command_over_the_socket_are_acted_on_and_acked(connected,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    slack, store = connected
    [opened] = slack.calls_to("apps.connections.open")
    assert opened.headers["authorization"] == f"Bearer {APP_TOKEN}"  # the app-level token, not the bot's
    assert slack.socket.handshakes[0].startswith("/link/?ticket=")
    click = slack.interaction_payload("U0RUNNER", "rerun", REPORT_ID, channel=CHANNEL)
    ack = slack.socket.send("interactive", click, envelope_id="e-click-1")
    assert ack == {"envelope_id": "e-click-1"}  # a click's ack carries no payload
    assert store.get_triage(REPORT_ID).state == "planned"
    [action] = store.actions_of(REPORT_ID)
    assert (action.action, action.user_id, action.budget) == ("rerun", "U0RUNNER", 10)
    # Slack redelivers an envelope it saw no ack for: the same payload, a retry: a replay, refused
    before = snapshot(store)
    assert slack.socket.send("interactive", click, envelope_id="e-click-1-again", retry_attempt=1)["envelope_id"] \
        == "e-click-1-again"
    assert snapshot(store) == before
    assert any("a replayed request" in reason for reason in refusals(caplog))
    assert slack.ephemeral[-1] == {"channel": CHANNEL, "user": "U0RUNNER",
                                   "text": "Not done: this request was acted on already (a replayed request)."}
    # a slash command's answer comes back in its ack, as Slack shows it to the user alone
    ack = slack.socket.send("slash_commands", slack.slash_command_payload("U0NOBODY", "queue", channel=CHANNEL),
                            envelope_id="e-command-1")
    assert ack == {"envelope_id": "e-command-1", "payload": {"text": f"planned on lab-local: &lt;{REPORT_ID}&gt;"}}
    # a user not allowed, over the socket too
    ack = slack.socket.send("interactive", slack.interaction_payload("U0NOBODY", "mark-invalid", REPORT_ID,
                                                                     channel=CHANNEL))
    assert snapshot(store) == before
    assert slack.ephemeral[-1]["text"] == "Not done: user U0NOBODY may not mark-invalid (rules/routing.toml " \
                                          "[slack] mark)."
    assert slack.socket.bad_acks == [] and len(slack.socket.acks) == 4


def test_a_socket_url_is_used_once(connected) -> None:
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    slack, _store = connected
    used = slack.socket.handshakes[0]
    with connect(f"ws://127.0.0.1:{slack.socket.port}{used}") as stranger:
        with pytest.raises(ConnectionClosed) as closed:
            stranger.recv(timeout=60)
    assert closed.value.rcvd.code == 1008


def test_the_daemon_starts_socket_mode_when_an_app_token_is_set(tmp_path: Path) -> None:
    from triagebot.daemon.loop import slack_settings
    from triagebot.rules.settings import load_settings

    settings = load_settings(Path(__file__).resolve().parent.parent / "rules")
    made = slack_settings(settings, lambda: None, 20, environ={"SLACK_BOT_TOKEN": TOKEN, "SLACK_APP_TOKEN": APP_TOKEN})
    assert made.app_token == APP_TOKEN and made.signing_secret == ""  # Socket Mode only: no HTTP endpoint
    assert slack_settings(settings, lambda: None, 20, environ={"SLACK_APP_TOKEN": APP_TOKEN}) is None  # no bot token
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "sources.toml").write_text('[[lore]]\nurl = "http://127.0.0.1:9/list/"\n')
    with FakeSlack(token=TOKEN, app_token=APP_TOKEN) as slack:
        result = subprocess.run(
            [sys.executable, "-m", "triagebot.cli", "daemon", "--once", "--db", str(tmp_path / "d.db"), "--rules",
             str(rules), "--health-port", "off"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
            timeout=600, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SLACK_BOT_TOKEN": TOKEN,
                              "SLACK_APP_TOKEN": APP_TOKEN, "SLACK_API_URL": slack.base_url,
                              "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
        assert result.returncode == 0, result.stderr
        assert [call.headers["authorization"] for call in slack.calls_to("apps.connections.open")] == \
            [f"Bearer {APP_TOKEN}"]
        assert len(slack.socket.handshakes) == 1
    assert "slack socket mode connected" in result.stderr
    # an app-level token Slack refuses stops the daemon at start, saying so in one line
    with FakeSlack(token=TOKEN, app_token=APP_TOKEN) as slack:
        refused = subprocess.run(
            [sys.executable, "-m", "triagebot.cli", "daemon", "--once", "--db", str(tmp_path / "d.db"), "--rules",
             str(rules), "--health-port", "off"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
            timeout=600, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SLACK_BOT_TOKEN": TOKEN,
                              "SLACK_APP_TOKEN": "xapp-1-revoked", "SLACK_API_URL": slack.base_url,
                              "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
        assert slack.socket.handshakes == []
    assert refused.returncode == 1
    assert ("triage daemon: SLACK_APP_TOKEN does not work: slack apps.connections.open failed: invalid_auth"
            in refused.stderr.splitlines())
