"""Slack both ways, the actions that take input or the lab's and the mail's time: "Rerun with…"
and "Duplicate of…" open a modal through views.open on the test Slack server, whose signed
submission is the action; test fix, bisect and send reply upstream are asked by a click and
carried out on the daemon's next pass (triagebot/actions/carry_out.py), once. Each refusal tells the
clicking user why (chat.postEphemeral) and changes nothing."""
from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.fake_slack import FakeSlack
from tests.support.lab import write_lab_rules
from tests.support.slack_world import CHANNEL, REPORT, REPORT_ID, ROUTING, TOKEN, World, decided_report, refusals
from tests.support.smtp_server import SmtpServer
from triagebot.actions import carry_out as asked
from triagebot.actions import upstream
from triagebot.bisect.lab import NO_BISECT_HOST
from triagebot.daemon import flow
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.reproduce.rounds import commits_of
from triagebot.rules.settings import load_settings
from triagebot.verdict.decide import decide

OTHER_ID = "20240416081500.lab2@tberg-ws"  # a second copy of the report, stored under its own id
SECOND_HOST = '''
[[host]]
name = "lab-other"
reach = "local"
cpu_model = "another test lab"
threads = 2
sockets = 1
memory_gb = 8
disk = "hdd"
'''


def mail_toml(port: int) -> str:
    return (f'[smtp]\nserver = "127.0.0.1"\nport = {port}\nsecurity = "none"\n'
            'from = "Perf Triage <perf-triage@example.org>"\n\n'
            '[lists]\nallowed = ["linux-kernel@vger.kernel.org"]\n\n'
            '[web]\nbase_url = "https://triage.example.org"\n')


@pytest.fixture
def world(stores, tmp_path: Path, smtp: SmtpServer):
    rules, _state = write_lab_rules(tmp_path, PROJECT)
    hosts = (rules / "hosts.toml").read_text()
    switch = next(line for line in hosts.splitlines() if line.startswith(("switch_kernel", "running_kernel")))
    running = next(line for line in hosts.splitlines() if line.startswith("running_kernel"))
    (rules / "hosts.toml").write_text(hosts + SECOND_HOST + f'scratch_dir = "{tmp_path / "scratch2"}"\n'
                                      + switch + "\n" + running + "\n")
    (rules / "routing.toml").write_text(ROUTING)
    (rules / "mail.toml").write_text(mail_toml(smtp.port))
    settings = load_settings(rules)
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}) as slack:
        slack.user_groups["S0LEADS"] = ["U0LEAD"]
        made = World(stores, slack, settings, hosts=("lab-local", "lab-other"),
                     plan_for_host=lambda store, message_id, host: flow.plan_for_host(store, settings, message_id,
                                                                                      host),
                     preview_reply=lambda store, message_id, **shown: upstream.preview_reply(store, settings,
                                                                                             message_id, **shown))
        try:
            decided_report(made.store)
            made.store.put_message(OTHER_ID, REPORT, "test", None, "2026-12-02T00:00:00+00:00")
            made.store.put_record(OTHER_ID, parse_message(REPORT, Source("eml")), "test")
            made.deliver()
            yield made
        finally:
            made.close()


def store_confirmed_run(store, shift: float = 0.0) -> None:
    """The report's finished rerun with its verdict, as the daemon stores one (figures made up;
    `shift` moves the suspect's: another run)."""
    base_samples = [1020.0, 1015.5, 1022.1, 1018.7, 1019.9, 1021.3]
    suspect_samples = [value + shift for value in (905.2, 910.8, 902.6, 907.4, 909.1, 904.0)]
    verdict = decide(base_samples, suspect_samples, "higher", -11.0, 2.0).to_json()
    base, suspect = commits_of(parse_message(REPORT, Source("eml")))
    plan = {"schema": 1, "kind": "plan", "template": "sysbench-cpu", "argv": ["sysbench", "cpu", "run"],
            "metric": "sysbench.events_per_second", "better": "higher"}
    samples = [{"role": role, "commit": commit, "index": index, "value": value, "seconds": 10.0,
                "running_kernel": commit, "attempts": 1, "stdout": "", "metrics": {}}
               for index, (role, commit, value) in enumerate(
                   [("base", base, value) for value in base_samples]
                   + [("suspect", suspect, value) for value in suspect_samples])]
    store.save_run(REPORT_ID, plan, {"host": "lab-local", "base_commit": base, "suspect_commit": suspect,
                                     "plan": plan, "started_at": "2026-12-01T02:00:00+00:00",
                                     "finished_at": "2026-12-01T02:30:00+00:00", "samples": samples,
                                     "status": "done", "error": None, "verdict": verdict, "events": []})


def open_modal(world: World, user_id: str, button: str) -> dict:
    status, _ = world.send(world.click(user_id, button, REPORT_ID))
    assert status == 200
    [call] = world.slack.calls_to("views.open")
    assert call.params["trigger_id"].endswith(".trigger")  # the click's own trigger, as Slack requires
    [(view_id, view)] = world.slack.views.items()
    metadata = json.loads(view["private_metadata"])
    assert (metadata["message_id"], metadata["channel"]) == (REPORT_ID, CHANNEL)
    return view | {"id": view_id}


def told(world: World, user_id: str) -> list[str]:
    return [item["text"] for item in world.slack.ephemeral if item["user"] == user_id and item["channel"] == CHANNEL]


def test_rerun_with_a_budget_on_another_host_runs_only_there(world: World, tmp_path: Path) -> None:
    view = open_modal(world, "U0RUNNER", "rerun-with")
    inputs = {block["block_id"]: block["element"] for block in view["blocks"] if block["type"] == "input"}
    assert inputs["budget"]["initial_value"] == "10"  # the daemon's 5 runs a side, doubled
    assert [option["value"] for option in inputs["host"]["options"]] == ["lab-local", "lab-other"]
    status, body = world.send(world.slack.submit_view(view["id"], "U0RUNNER", {"budget": "7", "host": "lab-other"}))
    assert (status, body) == (200, "")  # the modal closes
    row = world.store.get_triage(REPORT_ID)
    assert (row.state, row.host) == ("planned", "lab-other")
    assert row.plan["kind"] == "plan" and row.plan != {"kind": "plan", "metric": "sysbench.events_per_second"}
    [action] = world.store.actions_of(REPORT_ID)
    assert (action.action, action.budget, action.user_id) == ("rerun-on-host", 7, "U0RUNNER")
    world.deliver()
    assert world.thread_texts()[-1] == "<@U0RUNNER> rerun asked on lab-other with a budget of 7 runs a side " \
                                       "(was confirmed)"
    # both hosts are free and lab-local is as like the report's machine: only the asked host runs it
    lab = flow.DaemonContext(settings=world.settings, database=tmp_path / "locks.db", deliver=world.deliver, budget=5)
    view_now = flow.lab_now(world.store, lab)
    assert view_now.schedule.assigned(REPORT_ID).host == "lab-other"
    assert flow.rerun_asked(world.store, REPORT_ID, 5) == (7, "@2")
    assert told(world, "U0RUNNER") == []


@pytest.mark.parametrize("case", ["not a number", "too big", "not allowed"])
def test_a_rerun_modal_refused_changes_nothing(world: World, case: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    before = world.snapshot()
    if case == "not allowed":  # the modal never opens for a user who may not rerun
        status, _ = world.send(world.click("U0MARKER", "rerun-with", REPORT_ID))
        assert status == 200 and world.slack.views == {}
        assert told(world, "U0MARKER") == ["Not done: user U0MARKER may not rerun (rules/routing.toml [slack] run)."]
        assert any("may not rerun" in reason for reason in refusals(caplog))
    else:
        view = open_modal(world, "U0RUNNER", "rerun-with")
        budget = "lots" if case == "not a number" else "201"
        status, body = world.send(world.slack.submit_view(view["id"], "U0RUNNER", {"budget": budget}))
        assert status == 200
        assert json.loads(body) == {"response_action": "errors",
                                    "errors": {"budget": "a whole number of runs a side, from 1 to 200"}}
    assert world.snapshot() == before


def test_duplicate_of_links_the_report_and_closes_it(world: World, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    view = open_modal(world, "U0MARKER", "duplicate")
    before = world.snapshot()
    for other, reason in (("nosuch@example.org", "no report &lt;nosuch@example.org&gt; is stored"),
                          ("!here", "no report &lt;!here&gt; is stored"),  # told as text, not a mention
                          (f"<{REPORT_ID}>", "a report is not a duplicate of itself")):
        assert world.send(world.slack.submit_view(view["id"], "U0MARKER", {"other": other}))[0] == 200
        assert told(world, "U0MARKER")[-1] == f"Not done: {reason}."
        assert world.snapshot() == before
    assert world.send(world.slack.submit_view(view["id"], "U0MARKER", {"other": f"<{OTHER_ID}>"}))[0] == 200
    [link] = world.store.links_of(OTHER_ID)
    assert (link.joined_id, link.relation, link.rule) == (REPORT_ID, "duplicate", "marked from Slack by U0MARKER")
    world.deliver()
    assert world.thread_texts()[-1] == f"<@U0MARKER> marked a duplicate of &lt;{OTHER_ID}&gt; (was confirmed)"
    # a duplicate is closed: nothing more is done to it
    after = world.snapshot()
    assert world.send(world.click("U0RUNNER", "rerun", REPORT_ID))[0] == 200
    assert told(world, "U0RUNNER") == [f"Not done: the report is marked a duplicate of &lt;{OTHER_ID}&gt;."]
    assert world.snapshot() == after


def test_send_upstream_shows_the_reply_and_its_recipients_and_the_daemon_sends_what_was_shown_once(
        world: World, smtp: SmtpServer, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    store_confirmed_run(world.store)
    # who may not send is refused, and nothing is shown or asked
    before = world.snapshot()
    assert world.send(world.click("U0RUNNER", "send-upstream", REPORT_ID))[0] == 200
    assert told(world, "U0RUNNER") == ["Not done: user U0RUNNER may not send-upstream "
                                       "(rules/routing.toml [slack] send)."]
    assert world.snapshot() == before and world.slack.views == {}
    # the click opens the reply and who it goes to; nothing is asked, kept or sent yet
    view = open_modal(world, "U0SENDER", "send-upstream")
    shown = json.dumps(view["blocks"], ensure_ascii=False)
    assert "goes to these 2 addresses when you press Send" in shown
    assert "• tomas.berg@example.org" in shown and "• linux-kernel@vger.kernel.org" in shown
    assert "To: Tomas Berg &lt;tomas.berg@example.org&gt;" in shown and "Cc: linux-kernel@vger.kernel.org" in shown
    assert "We reran this report in our lab and see the regression too." in shown
    assert world.snapshot() == before and world.store.mail_of(REPORT_ID) is None and smtp.received == []
    shown_id = json.loads(view["private_metadata"])["reply"]
    assert f"Message-ID: &lt;{shown_id}&gt;" in shown
    # Send: the ask, with the message shown kept in the mail outbox; still nothing sent
    stamp = time.time()
    submission = world.slack.submit_view(view["id"], "U0SENDER", {})
    assert world.send(submission, timestamp=int(stamp)) == (200, "")
    [ask] = world.store.actions_of(REPORT_ID)
    assert ask.action == "send-upstream" and smtp.received == []  # asked, not sent: the daemon sends
    kept = world.store.mail_of(REPORT_ID)
    assert (kept.status, kept.reply_message_id, kept.requested_by) == ("pending", shown_id, "slack:U0SENDER")
    assert hashlib.sha256(kept.raw).hexdigest() == json.loads(view["private_metadata"])["digest"]
    assert world.send(world.click("U0SENDER", "send-upstream", REPORT_ID))[0] == 200  # a double click
    assert told(world, "U0SENDER")[-1] == "Not done: a send-upstream is asked already and not done yet."
    assert asked.carry_out(world.store, world.settings, tmp_path / "locks.db", 5) == [ask.action_id]
    [envelope] = smtp.received
    assert envelope.rcpt_tos == ["tomas.berg@example.org", "linux-kernel@vger.kernel.org"]
    assert envelope.content.replace(b"\r\n", b"\n") == kept.raw.replace(b"\r\n", b"\n")  # the bytes shown
    sent = world.store.mail_of(REPORT_ID)
    assert sent.status == "sent" and sent.reply_message_id == shown_id
    result = world.store.actions_of(REPORT_ID)[-1]
    assert (result.action, result.request_key) == ("send-upstream:done", f"result:{ask.action_id}")
    world.deliver()
    texts = world.thread_texts()
    assert texts[-2] == ("<@U0SENDER> asked to send the reply upstream they were shown (to 2 recipients): the "
                         "daemon sends it once, on its next pass")
    assert texts[-1] == f"<@U0SENDER> send-upstream: reply &lt;{shown_id}&gt; sent"
    # the next pass, a replayed submission and a new click send nothing more
    assert asked.carry_out(world.store, world.settings, tmp_path / "locks.db", 5) == []
    after = world.snapshot()
    assert world.send(submission, timestamp=int(stamp))[0] == 200
    assert world.send(world.click("U0SENDER", "send-upstream", REPORT_ID))[0] == 200
    assert told(world, "U0SENDER")[-2:] == ["Not done: this request was acted on already (a replayed request).",
                                            "Not done: the reply upstream was sent already: it is sent once."]
    assert world.snapshot() == after and len(smtp.received) == 1


def test_a_reply_that_changed_after_it_was_shown_is_not_asked(world: World, smtp: SmtpServer) -> None:
    store_confirmed_run(world.store)
    view = open_modal(world, "U0SENDER", "send-upstream")
    before = world.snapshot()
    store_confirmed_run(world.store, shift=1.0)  # a new rerun lands while the modal is open
    assert world.send(world.slack.submit_view(view["id"], "U0SENDER", {})) == (200, "")
    assert told(world, "U0SENDER") == ["Not done: the reply is no longer the one you were shown (the report moved "
                                       "on since): press Send reply upstream again to see it."]
    assert world.snapshot() == before and world.store.mail_of(REPORT_ID) is None and smtp.received == []


def test_a_send_is_asked_only_with_the_reply_shown(world: World) -> None:
    # a request for send-upstream without the modal's reply (a forged block action) asks nothing
    from triagebot.actions.act import Context, Request, act

    store_confirmed_run(world.store)
    outcome = act(world.store, Request("forged-1", "send-upstream", REPORT_ID, "U0SENDER"),
                  Context(world.settings.routing.permissions, lambda user: (), 5))
    assert not outcome.done and "open Send reply upstream to see the draft" in outcome.text
    assert world.store.actions_of(REPORT_ID) == [] and world.store.mail_of(REPORT_ID) is None


@pytest.mark.parametrize("action", ["test-fix", "bisect"])
def test_test_fix_and_bisect_are_asked_of_a_confirmed_report_and_their_result_said(
        world: World, action: str, tmp_path: Path) -> None:
    world.store.set_triage(REPORT_ID, "planned", asked=True)
    world.store.set_triage(REPORT_ID, "running")
    world.store.set_triage(REPORT_ID, "not-reproduced")
    before = world.snapshot()
    assert world.send(world.click("U0RUNNER", action, REPORT_ID))[0] == 200
    verb = "fix-tested" if action == "test-fix" else "bisected"
    assert told(world, "U0RUNNER") == [f"Not done: the report is not-reproduced: only a confirmed regression is "
                                       f"{verb}."]
    assert world.snapshot() == before
    world.store.set_triage(REPORT_ID, "planned", asked=True)
    world.store.set_triage(REPORT_ID, "running")
    world.store.set_triage(REPORT_ID, "confirmed")
    assert world.send(world.click("U0RUNNER", action, REPORT_ID))[0] == 200
    [ask] = world.store.actions_of(REPORT_ID)
    assert ask.action == action
    # this report has no stored rerun (test fix) and names commits the lab's hosts cannot list (bisect)
    assert asked.carry_out(world.store, world.settings, tmp_path / "locks.db", 5) == [ask.action_id]
    result = world.store.actions_of(REPORT_ID)[-1]
    assert result.action == f"{action}:failed"
    expected = (f"{REPORT_ID}: no confirmed rerun to test a fix against (triage rerun first)"
                if action == "test-fix" else
                NO_BISECT_HOST)
    assert result.detail == expected
    world.deliver()
    assert world.thread_texts()[-1] == f"<@U0RUNNER> {action}: {expected}"
    assert asked.carry_out(world.store, world.settings, tmp_path / "locks.db", 5) == []  # done once
