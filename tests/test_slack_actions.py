"""Slack both ways (triagebot/actions/act.py, triagebot/web/slack_app.py): the test Slack server
sends signed, real-shaped button clicks and `/triage` commands to the app served by uvicorn on
127.0.0.1; each action is checked, done as one state change with its thread reply, or refused
with a logged reason and nothing changed."""
from __future__ import annotations

import logging
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.fake_slack import FakeSlack, send_signed, sign
from tests.support.lab import lab_path, write_lab_rules
from tests.support.slack_world import (
    CHANNEL,
    REPORT,
    REPORT_ID,
    ROUTING,
    SECRET,
    TOKEN,
    World,
    decided_report,
    refusals,
)
from triagebot.daemon import flow
from triagebot.errors import RulesError
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.rules.routing import parse_routing
from triagebot.rules.settings import load_settings
from triagebot.web.app import build_app
from triagebot.web.server import WebServer
from triagebot.web.slack_app import SLACK_PATH


@pytest.fixture
def world(stores, tmp_path: Path):
    rules = tmp_path / "rules"
    shutil.copytree(PROJECT / "rules", rules)
    (rules / "routing.toml").write_text(ROUTING)
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}) as slack:
        slack.user_groups["S0LEADS"] = ["U0LEAD"]
        made = World(stores, slack, load_settings(rules))
        try:
            decided_report(made.store)
            made.deliver()
            yield made
        finally:
            made.close()


def test_mark_invalid_is_kept_with_who_and_when_and_said_in_the_thread(world: World) -> None:
    status, _ = world.send(world.click("U0MARKER", "mark-invalid", REPORT_ID))
    assert status == 200
    [action] = world.store.actions_of(REPORT_ID)
    assert (action.action, action.user_id, action.detail) == ("mark-invalid", "U0MARKER",
                                                              "marked invalid (was confirmed)")
    assert action.created_at.startswith("20")
    world.deliver()
    assert world.thread_texts()[-1] == "<@U0MARKER> marked invalid (was confirmed)"
    assert world.slack.messages(CHANNEL)[-1]["thread_ts"] == world.slack.messages(CHANNEL)[0]["ts"]
    # an invalid report is not rerun, by button or command
    status, answer = world.send(world.command("U0RUNNER", f"rerun <{REPORT_ID}>"))
    assert status == 200 and answer == "Not done: the report is marked invalid."
    assert world.store.get_triage(REPORT_ID).state == "confirmed"


def test_the_slash_command_shows_a_report_the_status_and_the_queue(world: World) -> None:
    def answer(text: str) -> str:
        status, body = world.send(world.command("U0NOBODY", text))
        assert status == 200
        return body

    shown = answer(f"show <mailto:{REPORT_ID}|{REPORT_ID}>")  # as Slack links an address-like id
    assert shown.startswith(f"*&lt;{REPORT_ID}&gt;*: confirmed") and "host lab-local" in shown
    assert answer("status") == "Reports: confirmed 1"
    assert answer("queue") == "The queue is empty."
    assert answer("show nosuch@example.org") == "No report &lt;nosuch@example.org&gt; is being triaged."
    # what a user types is shown as text: a Message-ID of `!channel` is not a channel-wide mention
    assert answer("show <!channel>") == "No report &lt;!channel&gt; is being triaged."
    assert answer("frobnicate").startswith("Usage: `/triage show &lt;message-id&gt;`")
    assert "Done: rerun asked with a budget of 10 runs a side" in \
        world.send(world.command("U0RUNNER", f"rerun {REPORT_ID}"))[1]
    assert answer("queue") == f"planned on lab-local: &lt;{REPORT_ID}&gt;"
    assert "<@U0RUNNER> rerun asked with a budget of 10" in answer(f"show {REPORT_ID}")


def test_a_member_of_an_allowed_user_group_may_rerun(world: World) -> None:
    assert world.send(world.click("U0LEAD", "rerun", REPORT_ID))[0] == 200
    assert world.store.get_triage(REPORT_ID).state == "planned"
    assert [action.user_id for action in world.store.actions_of(REPORT_ID)] == ["U0LEAD"]


@pytest.mark.parametrize("case", ["forged", "stale", "unsigned", "not allowed", "replayed", "unknown action",
                                  "wrong state", "double click"])
def test_each_refusal_is_logged_and_changes_nothing(world: World, case: str,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    click = world.click("U0RUNNER", "rerun", REPORT_ID)
    if case in ("replayed", "double click"):  # the first request acts; what follows it must not
        stamp = int(time.time())
        assert world.send(click, timestamp=stamp)[0] == 200
        if case == "double click":
            click = world.click("U0RUNNER", "rerun", REPORT_ID)  # a second click: a new request
    before = world.snapshot()
    if case == "forged":
        status, _ = world.send(click, signature=sign("not-the-secret", int(time.time()), click))
        expected, reason = 401, "a signature that does not match the signing secret"
    elif case == "stale":
        stamp = int(time.time()) - 3600
        status, _ = world.send(click, timestamp=stamp)
        expected, reason = 401, "a stale request"
    elif case == "unsigned":
        status, _ = world.send(click, signature=" ")
        expected, reason = 401, "unsigned request"
    elif case == "not allowed":
        status, _ = world.send(world.click("U0MARKER", "rerun", REPORT_ID))
        expected, reason = 200, "user U0MARKER may not rerun"
    elif case == "replayed":
        status, _ = world.send(click, timestamp=stamp)
        expected, reason = 200, "a replayed request"
    elif case == "unknown action":
        status, _ = world.send(world.click("U0RUNNER", "drop-table", REPORT_ID))
        expected, reason = 200, "unknown action 'drop-table'"
    elif case == "wrong state":
        world.store.set_triage(REPORT_ID, "planned", asked=True)
        before = world.snapshot()
        status, _ = world.send(click)
        expected, reason = 200, "the report is planned: only a decided report is rerun"
    else:
        status, _ = world.send(click)
        expected, reason = 200, "the report is planned"
    assert status == expected
    assert any(reason in logged for logged in refusals(caplog)), refusals(caplog)
    assert world.snapshot() == before
    if expected == 401:  # nothing is read from an unverified request: nobody to answer
        assert world.slack.ephemeral == []
    else:  # the clicking user alone is told why, in the channel they clicked in
        told = world.slack.ephemeral[-1]
        assert told["channel"] == CHANNEL and told["user"] in ("U0RUNNER", "U0MARKER")
        assert told["text"].startswith("Not done: ") and reason in told["text"]
        assert told["text"] not in world.thread_texts()


def test_who_may_act_is_validated_in_the_rules() -> None:
    with pytest.raises(RulesError, match=r"r.toml:2: \[slack\]: mark must be a list of Slack user IDs"):
        parse_routing('default_channel = "#a"\n[slack]\nmark = ["alice"]\n', "r.toml")
    with pytest.raises(RulesError, match="delete"):
        parse_routing('default_channel = "#a"\n[slack]\ndelete = ["U0AAA"]\n', "r.toml")
    assert parse_routing('default_channel = "#a"\n', "r.toml").permissions.run == ()  # nobody by default


@pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("stress-ng")),
                    reason="the lab needs sysbench and stress-ng (apt-get install sysbench stress-ng)")
def test_rerun_with_a_bigger_budget_runs_on_the_lab_through_the_daemons_flow(tmp_path: Path, monkeypatch,
                                                                              stores) -> None:
    if stores.backend != "sqlite":
        pytest.skip("the lab run is the same on both backends: run once, on SQLite (the refusals run on both)")
    rules, _state = write_lab_rules(tmp_path, PROJECT)
    (rules / "routing.toml").write_text(ROUTING)
    monkeypatch.setenv("PATH", lab_path(tmp_path))
    settings = load_settings(rules)
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}) as slack:
        world = World(stores, slack, settings, budget=6)
        try:
            store = world.store
            report = parse_message(REPORT, Source("eml"))
            store.put_message(REPORT_ID, REPORT, "test", None, "2026-12-01T00:00:00+00:00")
            store.put_record(REPORT_ID, report, "test")
            lab = flow.DaemonContext(settings=settings, database=tmp_path / "locks.db", deliver=world.deliver,
                                     budget=6)
            assert flow.admit(store, lab, admit_days=14, now=datetime(2024, 4, 20, tzinfo=UTC)) == [REPORT_ID]
            flow.plan_new(store, lab)
            assert flow.run_planned(store, lab) == [REPORT_ID]
            first = store.get_triage(REPORT_ID).state
            assert first != "error", store.get_triage(REPORT_ID).note
            assert first in ("confirmed", "not-reproduced", "inconclusive")
            verdict = next(m for m in slack.messages(CHANNEL) if m.get("thread_ts") not in (None, m["ts"]) and any(
                block["type"] == "actions" for block in m["blocks"]))
            buttons = [element["action_id"] for block in verdict["blocks"] if block["type"] == "actions"
                       for element in block["elements"]]
            assert buttons == ["rerun", "rerun-with", "test-fix", "bisect", "mark-invalid", "duplicate",
                               "send-upstream"]
            status, _ = world.send(world.click("U0RUNNER", "rerun", REPORT_ID, message_ts=verdict["ts"]))
            assert status == 200 and store.get_triage(REPORT_ID).state == "planned"
            [action] = store.actions_of(REPORT_ID)
            assert action.budget == 12
            assert flow.run_planned(store, lab) == [REPORT_ID]  # the daemon's own run step takes it up
            world.deliver()
            texts = world.thread_texts()
            asked = texts.index(f"<@U0RUNNER> rerun asked with a budget of 12 runs a side (was {first})")
            verdicts = [index for index, message in enumerate(slack.messages(CHANNEL))
                        if message.get("thread_ts") not in (None, message["ts"])
                        and any(block["type"] == "actions" for block in message.get("blocks") or [])]
            assert len(verdicts) == 2 and verdicts[1] > asked  # the second verdict, after the ask, in the thread
            parent = slack.messages(CHANNEL)[0]  # updated in place: its final form carries the buttons too
            assert parent.get("thread_ts") in (None, parent["ts"])
            assert parent["blocks"][-1]["block_id"] == "triage-actions"
            kinds = [row.kind for row in store.outbox()]
            assert "verdict@2" in kinds and "update-final@2" in kinds
            assert store.latest_run(REPORT_ID) is not None
        finally:
            world.close()


def test_the_daemon_serves_slack_only_when_it_can_verify_what_slack_sends(tmp_path: Path) -> None:
    from triagebot.daemon.loop import slack_settings

    settings = load_settings(PROJECT / "rules")
    assert slack_settings(settings, lambda: None, 20, environ={"SLACK_BOT_TOKEN": TOKEN}) is None  # no secret
    assert slack_settings(settings, lambda: None, 20, environ={"SLACK_SIGNING_SECRET": SECRET}) is None
    both = {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET}
    made = slack_settings(settings, lambda: None, 20, environ=both)
    assert made.signing_secret == SECRET and made.permissions == settings.routing.permissions
    server = WebServer(build_app()).start()  # without Slack set up, nothing is routed there
    try:
        assert send_signed(server.url + SLACK_PATH, b"payload=%7B%7D", SECRET)[0] == 404
    finally:
        server.stop()


def test_two_clicks_at_once_do_one_thing(world: World) -> None:
    # whichever request takes the store's write lock first moves the report; the other finds it planned
    from concurrent.futures import ThreadPoolExecutor

    clicks = [world.click("U0RUNNER", "rerun", REPORT_ID), world.click("U0LEAD", "rerun", REPORT_ID)]
    with ThreadPoolExecutor(2) as pool:
        statuses = [status for status, _ in pool.map(world.send, clicks)]
    assert statuses == [200, 200]
    assert len(world.store.actions_of(REPORT_ID)) == 1
    assert world.store.get_triage(REPORT_ID).state == "planned"
    assert len([row for row in world.store.outbox() if row.kind.startswith("action-")]) == 1


def test_only_a_decided_report_may_be_asked_back_to_planned() -> None:
    from triagebot.records.states import TriageState as S

    asked = {state for state in S if state.can_move_to(S.PLANNED, asked=True) and not state.can_move_to(S.PLANNED)}
    assert asked == {S.CONFIRMED, S.NOT_REPRODUCED, S.INCONCLUSIVE, S.A_A_ONLY, S.ERROR}  # a refusal stays refused
    assert S.CONFIRMED.final and not S.CONFIRMED.can_move_to(S.PLANNED)  # the daemon never does it by itself
