"""A regression measured against a series under review, end to end (issue 38's first acceptance):
`triage daemon` as a real process, a real public-inbox server serving the list, the test lab over a
real git repository, b4 and the local Slack look-alike.

A series (real git format-patch, a cover letter and two patches with b4's `base-commit:` line; the
second patch makes the lab's benchmark slower) is posted for review, and a tester replies to it
that sysbench drops about 40% with the series, with the command. No command is typed: the daemon
reads the reply as a `patch-regression`, takes it on, plans it as the series' base against
base+series via b4, and, on a host allowed to build code from mail (its build_patched hook) for a
sender the team trusts (rules/trust.toml), applies the series with the hook's real git am and
reruns real sysbench: confirmed. On a host that builds no code from mail, or for a sender nobody
trusts and nobody asked for, the same report is planned and refused, saying why, and nothing is built.
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.daemon_run import CHANNEL_ID, final_state, kind_of, stop_daemon, wait_for
from tests.support.fix_thread import AUTHOR, MEASURER, measured_reply, message_id_of, series_under_review
from tests.support.lab import FACTOR_FILE, HOOK, git, make_bisect_repo, write_lab_rules
from tests.support.public_inbox import require_public_inbox
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.reply.draft import draft_reply
from triagebot.store.sqlite import SqliteStore

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("git") and shutil.which("b4")),
                                reason="the lab needs sysbench, git and b4 (apt-get install sysbench git; "
                                       "pip install b4)")

REPLY_ID = "measured@example.org"
MEASURED = """Hi Carl,

I ran the series on my build box: with this series sysbench cpu drops from 2360 to 1420
events/s, about 40% slower, every run.

  $ sysbench cpu --threads=2 --time=1 run

Mira
"""


def the_series(root: Path) -> tuple[Path, str, list[bytes]]:
    repo = root / "linux"
    shas = make_bisect_repo(repo, 3, first_slow=3)  # three commits, none slow: the base is the last
    mails = series_under_review(repo, shas[-1], "0.60")
    reply = measured_reply(mails[2], MEASURED, REPLY_ID)  # to patch 2/2
    return repo, shas[-1], [*mails, reply]


def slack_kinds(slack) -> list[str]:
    return [kind_of(message) for message in slack.messages(CHANNEL_ID)]


def test_a_reply_measuring_a_slowdown_of_a_series_is_rerun_as_base_against_base_plus_series(
        tmp_path: Path, lab_world) -> None:
    require_public_inbox()
    repo, base, mails = the_series(tmp_path)
    record = parse_message(mails[-1], Source("eml"))
    assert record.kind == "patch-regression"  # what the daemon will read
    database, log = tmp_path / "daemon.db", tmp_path / "daemon.log"
    rules, state = write_lab_rules(tmp_path, PROJECT, repo=repo)
    (rules / "trust.toml").write_text('[senders]\naddresses = ["carl@example.org"]\n')  # the series' sender
    world = lab_world(mails, lab=(rules, state), user_agent="triagebot-test (patch regression)")
    daemon = world.start_daemon(database, log)
    try:
        wait_for(lambda: final_state(world.slack.messages(CHANNEL_ID)) in ("confirmed", "refused", "error"), 900,
                 "the verdict", daemon, log)
        assert stop_daemon(daemon) == 0
    finally:
        if daemon.poll() is None:
            stop_daemon(daemon, signal.SIGKILL)
        subprocess.run([*HOOK, "stop", str(world.state)], check=False)
    messages = world.slack.messages(CHANNEL_ID)
    assert final_state(messages) == "confirmed", [message["text"] for message in messages]
    # planned as base against base+series via b4, said in the plan reply
    [plan_reply] = [message for message in messages if kind_of(message) == "plan"]
    assert f"base {base} against base + v2 of the series, via b4" in plan_reply["text"]
    with SqliteStore(database) as store:
        row = store.get_triage(REPLY_ID)
        assert row is not None and row.state == "confirmed"
        series = row.plan["series"]
        assert (series["base"], series["base_from"], series["version"], series["parts"]) == (base, "base-commit", 2, 2)
        assert series["author"] == AUTHOR and series["message_id"] == message_id_of(mails[2])
        assert series["senders"] == ["carl@example.org"]  # whose code it is, for the trust decision
        run = store.latest_run(REPLY_ID)
        raw = store.get_raw(REPLY_ID)
        report = store.get_record(REPLY_ID)
    # the rerun: the base against the patched kernel the host's hook built from b4's mbox
    assert run["base_commit"] == base and run["verdict"]["outcome"] == "confirmed"
    patched = run["suspect_commit"]
    assert git(repo, "rev-parse", f"{patched}~2").strip() == base
    assert git(repo, "show", f"{patched}:{FACTOR_FILE}").strip() == "0.60"
    assert "sched: batch the wakeups of small machines" in git(repo, "log", "--format=%s", f"{base}..{patched}")
    assert run["verdict"]["measured_change_percent"] < -20  # the series' slowdown, measured
    # the verdict goes to the reporter and the series' author
    from datetime import UTC, datetime

    reply = draft_reply(raw, report, "confirmed", run, from_="Triage Lab <lab@example.org>",
                        base_url="https://triage.example.org", reply_message_id="<draft@example.org>",
                        date=datetime(2099, 4, 17, tzinfo=UTC))
    assert MEASURER in reply["To"] and AUTHOR in reply["Cc"]
    assert "#regzbot" not in reply.get_content()  # a series not merged is nothing for regzbot


def test_on_a_host_that_builds_no_code_from_mail_the_series_is_not_applied(tmp_path: Path, lab_world) -> None:
    require_public_inbox()
    _repo, _base, mails = the_series(tmp_path)
    rules, state = write_lab_rules(tmp_path, PROJECT)  # no repository: no build_patched hook
    database, log = tmp_path / "daemon.db", tmp_path / "daemon.log"
    world = lab_world(mails, lab=(rules, state), user_agent="triagebot-test (patch regression, no build)")
    daemon = world.start_daemon(database, log)
    try:
        wait_for(lambda: final_state(world.slack.messages(CHANNEL_ID)) == "refused", 300, "the refusal", daemon, log)
        assert stop_daemon(daemon) == 0
    finally:
        if daemon.poll() is None:
            stop_daemon(daemon, signal.SIGKILL)
    [plan_reply] = [message for message in world.slack.messages(CHANNEL_ID) if kind_of(message) == "plan"]
    assert "host lab-local builds no code from mail" in plan_reply["text"]
    assert "a host allowed to build code from mail" in json.dumps(plan_reply["blocks"])
    assert not (state / "running").exists()  # no kernel was switched to, nothing was built
    with SqliteStore(database) as store:
        assert store.latest_run(REPLY_ID) is None


def test_triage_rerun_measures_a_patch_regression_as_base_against_base_plus_series(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from tests.support.lab import lab_path

    repo, base, mails = the_series(tmp_path)
    rules, state = write_lab_rules(tmp_path, PROJECT, repo=repo)
    monkeypatch.setenv("PATH", lab_path(tmp_path))  # the lab's sysbench for the triage processes
    folder = tmp_path / "mail"
    folder.mkdir()
    for number, raw in enumerate(mails):
        (folder / f"{number}.eml").write_bytes(raw)
    database = tmp_path / "t.db"

    def triage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=900, cwd=PROJECT)

    try:
        assert triage("ingest", "--db", str(database), str(folder)).returncode == 0
        result = triage("rerun", REPLY_ID, "--db", str(database), "--rules", str(rules), "--budget", "8", "--json")
    finally:
        subprocess.run([*HOOK, "stop", str(state)], check=False)
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["base_commit"] == base and run["series"]["base_from"] == "base-commit"
    assert git(repo, "rev-parse", f"{run['suspect_commit']}~2").strip() == base
    assert run["verdict"]["outcome"] == "confirmed"


def test_a_series_from_a_sender_nobody_trusts_waits_for_a_person(tmp_path: Path, lab_world) -> None:
    require_public_inbox()
    repo, _base, mails = the_series(tmp_path)  # a host with a build hook, and no trust.toml: nobody is trusted
    database, log = tmp_path / "daemon.db", tmp_path / "daemon.log"
    world = lab_world(mails, repo=repo, user_agent="triagebot-test (patch regression, a stranger's)")
    daemon = world.start_daemon(database, log)
    try:
        wait_for(lambda: final_state(world.slack.messages(CHANNEL_ID)) == "refused", 300, "the refusal", daemon, log)
        assert stop_daemon(daemon) == 0
    finally:
        if daemon.poll() is None:
            stop_daemon(daemon, signal.SIGKILL)
        subprocess.run([*HOOK, "stop", str(world.state)], check=False)
    [plan_reply] = [message for message in world.slack.messages(CHANNEL_ID) if kind_of(message) == "plan"]
    assert "waiting for a person: carl@example.org is not on the trust list" in plan_reply["text"]
    with SqliteStore(database) as store:
        assert store.latest_run(REPLY_ID) is None  # nothing was applied, built or run
