"""A world for the Slack tests: a store, the test Slack server, the app served by uvicorn on
127.0.0.1 (triagebot/web/slack_app.py), and a report the daemon took on and decided."""
from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.support.fake_slack import FakeSlack, send_signed
from triagebot.notify import outbox
from triagebot.notify.slack import SlackNotifier
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.web.app import build_app
from triagebot.web.server import WebServer
from triagebot.web.slack_app import SLACK_PATH, SlackSettings

TOKEN = "xoxb-slack-actions"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0PERFTRIAGE"
ROUTING = f'''default_channel = "{CHANNEL}"
[slack]
run = ["U0RUNNER", "S0LEADS"]
mark = ["U0MARKER"]
send = ["U0SENDER"]
'''
REPORT = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()
REPORT_ID = "20240415071244.lab1@tberg-ws"
PLAN = {"kind": "plan", "metric": "sysbench.events_per_second"}


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.__dict__["fields"]["reason"] for record in caplog.records
            if record.__dict__.get("fields", {}).get("event") in ("action.refused", "slack.refused")]


class World:
    """A store, the fake Slack, the app on uvicorn, and a way to deliver the outbox."""

    def __init__(self, stores, slack: FakeSlack, settings, budget: int = 5, **options) -> None:
        self.stores, self.slack, self.settings = stores, slack, settings
        self.store = stores.open()
        self.notifier = SlackNotifier(TOKEN, base_url=slack.base_url)
        self.slack_settings = SlackSettings(
            signing_secret=SECRET, token=TOKEN, open_store=stores.open, permissions=settings.routing.permissions,
            budget=budget, api_url=slack.base_url, **options)
        self.server = WebServer(build_app(slack=self.slack_settings)).start()
        self.url = self.server.url + SLACK_PATH

    def send(self, body: bytes, **options) -> tuple[int, str]:
        return send_signed(self.url, body, SECRET, **options)

    def click(self, user_id: str, action_id: str, value: str, **options) -> bytes:
        return self.slack.interaction(user_id, action_id, value, channel=CHANNEL, **options)

    def command(self, user_id: str, text: str) -> bytes:
        return self.slack.slash_command(user_id, text, channel=CHANNEL)

    def deliver(self) -> None:
        outbox.deliver(self.store, self.notifier)

    def thread_texts(self) -> list[str]:
        return [message["text"] for message in self.slack.messages(CHANNEL)]

    def snapshot(self) -> tuple:
        return (self.store.get_triage(REPORT_ID), self.store.actions_of(REPORT_ID),
                [(row.kind, row.status) for row in self.store.outbox()])

    def close(self) -> None:
        self.server.stop()
        self.store.close()


def decided_report(store, state: str = "confirmed") -> None:
    """A report the daemon took on and decided, its parent posted (no lab needed)."""
    report = parse_message(REPORT, Source("eml"))
    store.put_message(REPORT_ID, REPORT, "test", None, "2026-12-01T00:00:00+00:00")
    store.put_record(REPORT_ID, report, "test")
    store.start_triage(REPORT_ID, CHANNEL)
    store.enqueue(REPORT_ID, "parent", CHANNEL, {"text": "[new] the report"})
    store.set_triage(REPORT_ID, "planned", plan=PLAN, host="lab-local")
    if state != "planned":
        store.set_triage(REPORT_ID, "running")
        store.set_triage(REPORT_ID, state)


