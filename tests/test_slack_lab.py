"""Slack both ways on the test lab: "Test fix" and "Bisect" clicked in Slack (signed, real-shaped
payloads from the test Slack server) are carried out by the daemon's step (triagebot/actions/carry_out.py)
through the same stage functions as `triage test-fix` and `triage bisect`: a real git repository
whose commit SLOW makes sysbench slower, a fix series posted in the thread as v1 and v2 (b4, real
git am in the lab's build_patched hook), and each result said in the report's thread."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.fake_slack import FakeSlack, send_signed
from tests.support.fix_thread import fix_thread
from tests.support.lab import HOOK, lab_path, make_bisect_repo, write_lab_rules
from tests.support.slack_world import CHANNEL, ROUTING, SECRET, TOKEN
from triagebot.actions import carry_out as asked
from triagebot.bisect.search import BisectBudget
from triagebot.notify import outbox
from triagebot.notify.slack import SlackNotifier
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore
from triagebot.web.app import build_app
from triagebot.web.server import WebServer
from triagebot.web.slack_app import SLACK_PATH, SlackSettings

MESSAGE_ID = "20240415071244.lab1@tberg-ws"
SLOW = 37  # the first slow commit among the repository's 40
NAMED = b"c0ffee1234ab"  # the culprit the lab report names: made the repository's slow commit here

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("git") and shutil.which("b4")),
                                reason="the lab needs sysbench, git and b4 (apt-get install sysbench git; "
                                       "pip install b4)")


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=1200)


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    repo = tmp_path / "linux"
    shas = make_bisect_repo(repo, 40, SLOW)
    v1, v2 = fix_thread(repo, shas[SLOW], MESSAGE_ID, v2_factor="1.0")
    rules, state = write_lab_rules(tmp_path, PROJECT, repo=repo)
    (rules / "routing.toml").write_text(ROUTING)
    monkeypatch.setenv("PATH", lab_path(tmp_path))
    mails = tmp_path / "mails"
    mails.mkdir()
    report = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes().replace(NAMED, shas[SLOW][:12].encode())
    for number, raw in enumerate([report, *v1, *v2]):
        (mails / f"{number:02}.eml").write_bytes(raw)
    database = tmp_path / "lab.db"
    assert triage("ingest", "--db", str(database), str(mails)).returncode == 0
    confirmed = triage("rerun", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--no-fetch",
                       "--base", shas[SLOW - 1], "--suspect", shas[SLOW], "--budget", "10", "--json")
    assert json.loads(confirmed.stdout)["verdict"]["outcome"] == "confirmed", confirmed.stderr
    with SqliteStore(database) as store:  # the daemon took the report on and confirmed it: its thread
        store.start_triage(MESSAGE_ID, CHANNEL)
        store.enqueue(MESSAGE_ID, "parent", CHANNEL, {"text": "parent", "blocks": []})
        for state_name in ("planned", "running", "confirmed"):
            store.set_triage(MESSAGE_ID, state_name)
    yield load_settings(rules), database, shas
    subprocess.run([*HOOK, "stop", str(state)], check=False)


def test_test_fix_and_bisect_clicked_in_slack_run_on_the_lab_and_answer_in_the_thread(lab) -> None:
    settings, database, shas = lab
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}) as slack, SqliteStore(database) as store:
        notifier = SlackNotifier(TOKEN, base_url=slack.base_url)
        server = WebServer(build_app(slack=SlackSettings(
            signing_secret=SECRET, token=TOKEN, open_store=lambda: SqliteStore(database),
            permissions=settings.routing.permissions, budget=10, api_url=slack.base_url))).start()
        try:
            for action in ("test-fix", "bisect"):
                body = slack.interaction(action_id=action, user_id="U0RUNNER", value=MESSAGE_ID, channel=CHANNEL)
                assert send_signed(server.url + SLACK_PATH, body, SECRET)[0] == 200
        finally:
            server.stop()
        assert [action.action for action in store.actions_of(MESSAGE_ID)] == ["test-fix", "bisect"]
        # the daemon's step: the lab's work, once each
        done = asked.carry_out(store, settings, database, 10, BisectBudget(rounds=(6,), attempts=1))
        assert len(done) == 2
        results = {action.action: action.detail for action in store.actions_of(MESSAGE_ID)[2:]}
        assert set(results) == {"test-fix:done", "bisect:done"}, results
        assert results["test-fix:done"].startswith("v2 on lab-local: the fix recovers ")
        # the lab host is not marked untrusted_code and no sender is trusted: built because a person asked
        [fix_test] = store.fix_tests(MESSAGE_ID)
        assert (fix_test.status, fix_test.result["asked_by"]) == ("done", "slack:U0RUNNER")
        [move] = store.moves_of(MESSAGE_ID)
        assert move.note.startswith("v2 on lab-local, asked by slack:U0RUNNER: the fix recovers ")
        assert shas[SLOW] in results["bisect:done"]
        [bisection] = store.bisects(MESSAGE_ID)
        assert bisection["status"] == "found" and bisection["first_bad"] == shas[SLOW]
        assert asked.carry_out(store, settings, database, 10) == []
        outbox.deliver(store, notifier)
        texts = [message["text"] for message in slack.messages(CHANNEL)]
    assert texts[1] == ("<@U0RUNNER> asked for a test of the fix posted in the thread: the lab runs it on the "
                        "daemon's next pass")
    assert texts[2] == "<@U0RUNNER> asked for a bisection: the lab runs it on the daemon's next pass"
    fix_reply = next(text for text in texts if text.startswith("Fix test (v2): the fix recovers "))
    shown = next(message for message in slack.messages(CHANNEL) if message["text"] == fix_reply)
    assert "Built asked by slack:U0RUNNER." in json.dumps(shown["blocks"])
    assert f"<@U0RUNNER> test-fix: {results['test-fix:done']}" in texts
    assert texts.index(fix_reply) < texts.index(f"<@U0RUNNER> test-fix: {results['test-fix:done']}")
    assert f"<@U0RUNNER> bisect: {results['bisect:done']}" in texts
