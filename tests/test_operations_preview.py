"""Issue 17, part 2: `triage preview MESSAGE-ID` prints the exact Block Kit payloads the daemon
posts for a stored report and their terminal rendering, and sends nothing."""
from __future__ import annotations

import json

from tests.conftest import PROJECT
from tests.test_operations_cli import _lkp
from triagebot.cli.main import main
from triagebot.notify import render
from triagebot.notify.terminal import payload_to_text
from triagebot.rules.settings import settings_for
from triagebot.store.sqlite import SqliteStore


def _stored(tmp_path):
    (tmp_path / "m.eml").write_bytes(_lkp(3))
    database = tmp_path / "t.db"
    assert main(["ingest", "--db", str(database), str(tmp_path / "m.eml")]) == 0
    return database


def test_preview_of_a_report_not_taken_on_is_the_parent_the_daemon_would_post(tmp_path, capsys):
    database = _stored(tmp_path)
    rules = str(PROJECT / "rules")
    capsys.readouterr()
    assert main(["preview", "--db", str(database), "--rules", rules, "--json", "<r3@example.org>"]) == 0
    [item] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    with SqliteStore(database) as store:
        record = store.get_record("r3@example.org")
        assert store.outbox(message_id="r3@example.org") == []  # nothing queued, nothing sent
    assert item["kind"] == "parent" and item["payload"] == render.parent_message(record, "new")
    assert item["channel"] == settings_for(rules).routing.channel_for(record, None)
    assert main(["preview", "--db", str(database), "--rules", rules, "r3@example.org"]) == 0
    out = capsys.readouterr().out
    assert json.dumps(item["payload"], ensure_ascii=False, indent=2) in out
    assert payload_to_text(item["payload"]) in out


def test_preview_of_a_report_taken_on_shows_its_queued_payloads_unsent(tmp_path, capsys):
    database = _stored(tmp_path)
    plan = {"kind": "refusal", "reason": "no host in rules/hosts.toml", "needs": ["a lab host"],
            "message_id": "r3@example.org"}
    with SqliteStore(database) as store:
        record = store.get_record("r3@example.org")
        store.start_triage("r3@example.org", "#perf-triage")
        store.enqueue("r3@example.org", "parent", "#perf-triage", render.parent_message(record, "new"))
        store.enqueue("r3@example.org", "plan", "#perf-triage", render.plan_reply(plan))
    capsys.readouterr()
    assert main(["preview", "--db", str(database), "--json", "r3@example.org"]) == 0
    items = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(item["kind"], item["status"]) for item in items] == [("parent", "pending"), ("plan", "pending")]
    assert items[1]["payload"] == render.plan_reply(plan)
    with SqliteStore(database) as store:
        assert [row.status for row in store.outbox(message_id="r3@example.org")] == ["pending", "pending"]


def test_preview_of_an_unknown_id_says_so(tmp_path, capsys):
    database = _stored(tmp_path)
    assert main(["preview", "--db", str(database), "nobody@example.org"]) == 1
    assert "no such message" in capsys.readouterr().err
