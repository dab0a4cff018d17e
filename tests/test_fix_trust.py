"""Code from mail runs only where the team said it may (../shared/hostile/round3/fix-test-auto-runs-stranger-patch.md).

A stranger's `[PATCH v3]` (a Makefile and a script beside the fix) in a confirmed report's thread:
the daemon does not apply it on a host without `untrusted_code = true` (it waits for a person,
said once in the thread and in `triage show`); it does on a host marked so; it does for a sender
on rules/trust.toml; and it does anywhere when a person asks (`triage test-fix`), who asked kept
and shown. Real git format-patch, real b4, the lab's build_patched hook with real git am, real
sysbench. The decision itself, rules/trust.py's `may_run_mail_code`, is checked case by case.
"""
from __future__ import annotations

import getpass
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.lab import FACTOR_FILE, HOOK, git, lab_path, make_bisect_repo, write_lab_rules
from triagebot.errors import RulesError
from triagebot.fix_test import flow as fix_testing
from triagebot.lab.context import DaemonContext
from triagebot.rules.hosts import Host
from triagebot.rules.settings import settings_for
from triagebot.rules.trust import TrustList, may_run_mail_code, parse_trust
from triagebot.store.sqlite import SqliteStore
from triagebot.verdict.decide import decide

REPORT_ID = "20240415071244.lab1@tberg-ws"
STRANGER = "Mallory <m@evil.example>"

needs_lab = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("git") and shutil.which("b4")),
                               reason="the lab's plan needs sysbench; the fix, git and b4 (pip install b4)")


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          cwd=PROJECT, stdin=subprocess.DEVNULL, timeout=1200)


def series(repo: Path, suspect: str, sender: str, version: int = 3) -> list[bytes]:
    """A two-patch series (real git format-patch, with its cover letter) from `sender`: part 1 adds
    a Makefile whose build runs a script it adds, part 2 sets the slow commit's factor back."""
    git(repo, "checkout", "-q", "-B", f"series-v{version}", suspect)
    (repo / "Makefile").write_text("all:\n\t@sh scripts/pwn.sh\n")
    (repo / "scripts").mkdir(exist_ok=True)
    (repo / "scripts" / "pwn.sh").write_text("#!/bin/sh\ntouch /tmp/PWNED-BY-PATCH\n")
    git(repo, "add", "Makefile", "scripts/pwn.sh")
    git(repo, "commit", "-q", "-m", "sched: a build step")
    (repo / FACTOR_FILE).write_text("1.0\n")
    git(repo, "commit", "-q", "-am", f"sched: restore the wakeup granularity\n\nSigned-off-by: {sender}")
    text = git(repo, "format-patch", "--stdout", "--thread=shallow", f"--in-reply-to=<{REPORT_ID}>",
               f"-v{version}", "--cover-letter", "-2", "HEAD")
    git(repo, "checkout", "-q", "main")
    mails = [part.split("\n", 1)[1] for part in ("\n" + text).split("\nFrom ")[1:]]
    return [mail.replace("From: Lab <lab@example.org>", f"From: {sender}").replace("*** SUBJECT HERE ***", "sched: fix")
            .replace("*** BLURB HERE ***", "a fix").encode() for mail in mails]


@pytest.fixture
def confirmed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    """A report the daemon took on and confirmed on the lab host (its plan and run stored), a
    stranger's v3 in its thread. `request.param`: the host's extra lines and trust.toml's text."""
    host_lines, trust = getattr(request, "param", ("", None))
    repo = tmp_path / "linux"
    shas = make_bisect_repo(repo, 3, 2)
    rules, state = write_lab_rules(tmp_path, PROJECT, host_lines, repo=repo)
    if trust is not None:
        (rules / "trust.toml").write_text(trust)
    monkeypatch.setenv("PATH", lab_path(tmp_path))
    database, mails = tmp_path / "lab.db", tmp_path / "mails"
    mails.mkdir()
    report = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()
    for number, raw in enumerate([report, *series(repo, shas[2], STRANGER)]):
        (mails / f"{number}.eml").write_bytes(raw)
    assert triage("ingest", "--db", str(database), str(mails)).returncode == 0
    planned = triage("plan", REPORT_ID, "--db", str(database), "--rules", str(rules), "--host", "lab-local",
                     "--json", "--no-fetch")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    with SqliteStore(database) as store:
        store.start_triage(REPORT_ID, "#perf-triage")
        store.enqueue(REPORT_ID, "parent", "#perf-triage", {"text": "parent", "blocks": []})
        for state_name in ("planned", "running", "confirmed"):
            store.set_triage(REPORT_ID, state_name, plan=plan, host="lab-local")
        # the confirmed rerun as stored (its samples made up: the lab's slow commit does 60% of the work)
        base, suspect = [1000.0, 1004.0, 998.0, 1001.0, 999.5, 1002.0], [600.0, 602.5, 599.0, 601.0, 598.5, 600.5]
        verdict = decide(base, suspect, "higher", -40.0, 2.0).to_json()
        assert verdict["outcome"] == "confirmed"
        samples = [{"role": role, "commit": commit, "index": index, "value": value, "seconds": 1.0,
                    "running_kernel": commit, "attempts": 1, "stdout": "", "metrics": {}}
                   for index, (role, commit, value) in enumerate(
                       [("base", shas[1], value) for value in base]
                       + [("suspect", shas[2], value) for value in suspect])]
        store.save_run(REPORT_ID, plan, {"host": "lab-local", "status": "done", "base_commit": shas[1],
                                         "suspect_commit": shas[2], "plan": plan, "samples": samples, "error": None,
                                         "events": [], "verdict": verdict})
    yield rules, state, database, repo, shas
    subprocess.run([*HOOK, "stop", str(state)], check=False)


def lab_of(rules: Path, database: Path) -> DaemonContext:
    return DaemonContext(settings=settings_for(rules), database=database, deliver=lambda: None, budget=10)


def thread_notes(store: SqliteStore) -> list[tuple[str, str]]:
    return [(item.kind, item.payload["text"]) for item in store.outbox(message_id=REPORT_ID)
            if item.kind.startswith("test-fix-")]


@needs_lab
def test_a_strangers_series_waits_for_a_person_and_is_built_when_one_asks(confirmed) -> None:
    rules, state, database, repo, shas = confirmed
    lab = lab_of(rules, database)
    with SqliteStore(database) as store:
        [queued] = fix_testing.queue_fix_tests(store)
        assert fix_testing.run_queued_fix_tests(store, lab) == [queued]
        [row] = store.fix_tests(REPORT_ID)
        reason = ("waiting for a person: m@evil.example is not on the trust list (rules/trust.toml) and host "
                  "lab-local is not marked untrusted_code = true")
        assert (row.fix_test_id, row.status, row.result["reason"]) == (queued, "waiting", reason)
        assert thread_notes(store) == [(f"test-fix-waiting-{queued}", (
            f"Fix series v3 not built: {reason}. A person may test it: the Test fix button, or "
            f"`triage test-fix {REPORT_ID}`."))]
        # the next passes neither queue nor run it again, nor say it twice
        assert fix_testing.queue_fix_tests(store) == [] and fix_testing.run_queued_fix_tests(store, lab) == []
        assert len(thread_notes(store)) == 1
    assert not (state / "running").exists()  # no kernel switched to, no sample taken
    assert git(repo, "rev-list", "main").split() == list(reversed(shas))  # nothing applied
    shown = triage("show", REPORT_ID, "--db", str(database))
    assert shown.returncode == 0, shown.stderr
    shown = shown.stdout
    assert f"fix test {queued} (v3, waiting, " in shown and f": {reason}\n" in shown
    assert f"a person may test it: triage test-fix {REPORT_ID} (or Slack's Test fix)" in shown
    # a person asks: the series is built on that host, on the same row, and who asked is kept
    asked = triage("test-fix", REPORT_ID, "--db", str(database), "--rules", str(rules), "--budget", "10", "--json")
    assert asked.returncode == 0, asked.stderr
    result = json.loads(asked.stdout)
    who = f"cli:{getpass.getuser()}"
    assert (result["fix_test_id"], result["asked_by"], result["version"]) == (queued, who, 3)
    assert git(repo, "show", f"{result['patched']}:Makefile").startswith("all:")  # the stranger's code, built
    assert "\nTo: Mallory <m@evil.example>\n" in result["draft"]  # the drafted reply goes to the series' sender
    with SqliteStore(database) as store:
        [row] = store.fix_tests(REPORT_ID)
        assert (row.status, row.result["asked_by"]) == ("done", who)
        [move] = store.moves_of(REPORT_ID)
        assert move.note.startswith(f"v3 on lab-local, asked by {who}: the fix ")
    shown = triage("show", REPORT_ID, "--db", str(database)).stdout
    assert f"fix test {queued} (v3, done, " in shown and f"    built because {who} asked\n" in shown


@needs_lab
@pytest.mark.parametrize("confirmed", [("untrusted_code = true", None)], indirect=True)
def test_on_a_host_marked_untrusted_code_the_daemon_builds_it_by_itself(confirmed) -> None:
    rules, _state, database, repo, _shas = confirmed
    with SqliteStore(database) as store:
        [queued] = fix_testing.queue_fix_tests(store)
        assert fix_testing.run_queued_fix_tests(store, lab_of(rules, database)) == [queued]
        [row] = store.fix_tests(REPORT_ID)
        assert (row.status, row.result["asked_by"], row.result["allowed"]) == (
            "done", "", "host lab-local is marked untrusted_code = true")
        assert row.result["senders"] == ["m@evil.example"]
        assert git(repo, "show", f"{row.result['patched']}:scripts/pwn.sh").startswith("#!/bin/sh")
        [move] = store.moves_of(REPORT_ID)
        assert move.note.startswith("v3 on lab-local, by the daemon: host lab-local is marked untrusted_code = true: ")
    shown = triage("show", REPORT_ID, "--db", str(database)).stdout
    assert "    built by the daemon: host lab-local is marked untrusted_code = true\n" in shown


@needs_lab
@pytest.mark.parametrize("confirmed", [("", '[senders]\naddresses = ["M@Evil.example"]\n')], indirect=True)
def test_a_sender_on_the_trust_list_is_built_by_the_daemon(confirmed) -> None:
    rules, _state, database, _repo, _shas = confirmed
    with SqliteStore(database) as store:
        [queued] = fix_testing.queue_fix_tests(store)
        assert fix_testing.run_queued_fix_tests(store, lab_of(rules, database)) == [queued]
        [row] = store.fix_tests(REPORT_ID)
        assert (row.status, row.result["allowed"]) == (
            "done", "m@evil.example is on the trust list (rules/trust.toml)")


@needs_lab
@pytest.mark.parametrize("confirmed", [("", '[senders]\ndomains = ["evil.example"]\n')], indirect=True)
def test_a_strangers_part_in_a_trusted_series_makes_it_wait(confirmed, tmp_path: Path) -> None:
    # one more `[PATCH v3 2/2]`, from someone else, posted into the trusted sender's series
    rules, state, database, repo, shas = confirmed
    other = series(repo, shas[2], "Eve <eve@elsewhere.example>")[2].replace(b"Message-Id: <", b"Message-Id: <eve-")
    (tmp_path / "eve.eml").write_bytes(other)
    assert triage("ingest", "--db", str(database), str(tmp_path / "eve.eml")).returncode == 0
    with SqliteStore(database) as store:
        [queued] = fix_testing.queue_fix_tests(store)
        fix_testing.run_queued_fix_tests(store, lab_of(rules, database))
        [row] = store.fix_tests(REPORT_ID)
        assert row.status == "waiting" and row.result["reason"].startswith(
            "waiting for a person: eve@elsewhere.example is not on the trust list")
    assert not (state / "running").exists()


def host(untrusted_code: bool = False) -> Host:
    return Host(name="lab-1", reach="local", cpu_model="x", threads=2, sockets=1, memory_gb=4, disk="ssd",
                scratch_dir="/tmp/lab-1", untrusted_code=untrusted_code)


@pytest.mark.parametrize(("senders", "asked_by", "untrusted", "allowed", "reason"), [
    (["m@evil.example"], None, False, False, "waiting for a person: m@evil.example is not on the trust list"),
    (["m@evil.example"], "slack:U0RUNNER", False, True, "asked by slack:U0RUNNER"),
    (["m@evil.example"], None, True, True, "host lab-1 is marked untrusted_code = true"),
    (["ann@kernel.org", "Ann@Kernel.org"], None, False, True, "ann@kernel.org is on the trust list"),
    (["bob@team.example"], None, False, True, "bob@team.example is on the trust list"),
    (["bob@sub.team.example"], None, False, False, "waiting for a person: bob@sub.team.example"),  # exactly the domain
    (["ann@kernel.org", ""], None, False, False, "waiting for a person: (no From address) is not"),
    ([], None, False, True, "no code from mail: the lab's own tree"),
])
def test_the_one_decision_of_where_code_from_mail_runs(senders: list[str], asked_by: str | None, untrusted: bool,
                                                        allowed: bool, reason: str) -> None:
    trust = TrustList(frozenset({"ann@kernel.org"}), frozenset({"team.example"}))
    decision = may_run_mail_code(host(untrusted), senders, asked_by, trust)
    assert decision.allowed is allowed and decision.reason.startswith(reason)


@pytest.mark.parametrize(("text", "error"), [
    ('[senders]\naddresses = ["not an address"]\n', "trust.toml:1: [senders]: addresses must be a list of addresses"),
    ('\n[senders]\ndomains = ["*.example.org"]\n', "trust.toml:2: [senders]: domains must be a list of domains"),
    ('[senders]\nnames = ["x"]\n', "trust.toml:1: [senders]: unknown key(s) names"),
    ('everyone = true\n', "trust.toml:1: unknown key(s) everyone"),
])
def test_the_trust_list_is_validated_with_file_and_line(text: str, error: str) -> None:
    with pytest.raises(RulesError) as raised:
        parse_trust(text, "trust.toml")
    assert str(raised.value).startswith(error)


def test_the_packaged_trust_list_trusts_nobody_and_hosts_default_to_not_untrusted() -> None:
    settings = settings_for(PROJECT / "rules")
    assert settings.trust == TrustList()
    assert settings.hosts is not None and not any(item.untrusted_code for item in settings.hosts)
