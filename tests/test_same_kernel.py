"""A rerun on a host that cannot switch kernels is an A/A run: its own outcome, `a-a-only`, everywhere.

Real sysbench (the test lab's shim, tests/support/lab.py) on a host with no switch hook: base and
suspect both run on this machine's kernel. The run must never be stored, shown, listed or posted
as confirmed or not-reproduced; it says so before it starts and gives the noise it measured.
Through the CLI (rerun, show, verdict, verdict --json, list) and through the daemon's run stage
(flow.py) to Slack (the real slack-sdk against a local Slack server) and to the terminal.
"""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.fake_slack import FakeSlack
from tests.support.lab import lab_path, write_shim

LAB_REPORT = FIXTURES / "lab" / "sysbench-cpu-regression.eml"
MESSAGE_ID = "20240415071244.lab1@tberg-ws"
VERDICTS = ("confirmed", "not-reproduced", "inconclusive")

pytestmark = pytest.mark.skipif(not shutil.which("sysbench"),
                                reason="the A/A run needs sysbench (apt-get install sysbench)")


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=900)


def one_kernel_rules(root: Path) -> Path:
    """Rules with one local host whose switch hook is empty: it cannot switch kernels."""
    rules = root / "rules"
    shutil.copytree(PROJECT / "rules" / "reproducers", rules / "reproducers")
    (rules / "hosts.toml").write_text(f"""
[[host]]
name = "one-kernel"
reach = "local"
cpu_model = "test lab"
threads = 2
sockets = 1
memory_gb = 24
disk = "ssd"
scratch_dir = "{root / 'scratch'}"
switch_kernel = []
""")
    return rules


@pytest.fixture(scope="module")
def a_a_run(tmp_path_factory) -> dict:
    """One A/A rerun through `triage rerun`, shared by the CLI checks below."""
    root = tmp_path_factory.mktemp("a-a")
    rules = one_kernel_rules(root)
    (root / "state").mkdir()
    write_shim(root, root / "state")  # never "slow": no kernel is ever switched to
    patch = pytest.MonkeyPatch()
    patch.setenv("PATH", lab_path(root))
    database = root / "t.db"
    assert triage("ingest", "--db", str(database), str(LAB_REPORT)).returncode == 0
    plot = root / "samples.png"
    result = triage("rerun", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--budget", "6",
                    "--json", "--plot", str(plot))
    yield {"root": root, "rules": rules, "database": database, "result": result, "plot": plot}
    patch.undo()


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_the_rerun_says_so_before_it_starts_and_ends_a_a_only(a_a_run: dict) -> None:
    result = a_a_run["result"]
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    verdict = run["verdict"]
    assert verdict["outcome"] == "a-a-only" and run["same_kernel"] is True
    assert "an A/A run measures noise, not the commit" in verdict["reason"]
    assert "run-to-run spread ±" in verdict["reason"] and "over 6+6 runs" in verdict["reason"]
    noise = verdict["noise"]
    assert noise["spread_percent"] is not None and noise["spread_percent"] >= 0
    assert noise["change_percent"] == verdict["measured_change_percent"]
    lines = result.stderr.splitlines()
    warned = next(index for index, line in enumerate(lines) if "cannot switch kernels" in line)
    first_sample = next(index for index, line in enumerate(lines) if line.lstrip().startswith("sample"))
    assert warned < first_sample, result.stderr
    assert "ends as a-a-only, never a verdict on c0ffee1234ab" in lines[warned]
    # the samples plot the team sees, written where asked
    assert png_size(a_a_run["plot"]) == (800, 450)


def test_show_verdict_and_list_say_a_a_only_never_a_verdict(a_a_run: dict) -> None:
    database = str(a_a_run["database"])
    shown = triage("show", "--db", database, MESSAGE_ID)
    assert shown.returncode == 0, shown.stderr
    run_lines = shown.stdout[shown.stdout.index("  rerun:"):].splitlines()[:2]
    assert "A/A: base and suspect both on its running kernel" in run_lines[0]
    assert run_lines[1].startswith("  outcome:  a-a-only (no verdict on the commit): ")
    assert not any(word in "\n".join(run_lines) for word in VERDICTS)

    replayed = triage("verdict", "--db", database, MESSAGE_ID)
    assert replayed.returncode == 0 and replayed.stdout.startswith("a-a-only: "), replayed.stdout
    assert "stored verdict was" not in replayed.stdout
    as_json = json.loads(triage("verdict", "--db", database, MESSAGE_ID, "--json").stdout)
    assert as_json["outcome"] == "a-a-only" and as_json["noise"]["spread_percent"] is not None

    listed = triage("list", "--db", database, "--verdict", "a-a-only")
    assert MESSAGE_ID in listed.stdout
    for verdict in (*VERDICTS, "none"):
        other = triage("list", "--db", database, "--verdict", verdict)
        assert other.returncode == 0 and MESSAGE_ID not in other.stdout
        assert f"(no records match --verdict {verdict})" in other.stdout


def test_verdict_writes_the_plot_too(a_a_run: dict, tmp_path: Path) -> None:
    target = tmp_path / "again.png"
    result = triage("verdict", "--db", str(a_a_run["database"]), MESSAGE_ID, "--plot", str(target))
    assert result.returncode == 0, result.stderr
    assert png_size(target) == (800, 450)
    # a folder that does not exist is refused before anything is read, and nothing is written
    missing = triage("verdict", "--db", str(a_a_run["database"]), MESSAGE_ID, "--plot",
                     str(tmp_path / "no" / "such" / "p.png"))
    assert missing.returncode == 1
    assert missing.stderr.strip() == (f"triage verdict: --plot {tmp_path / 'no' / 'such' / 'p.png'}: "
                                      f"the folder {tmp_path / 'no' / 'such'} does not exist")


def test_a_run_stored_before_a_a_only_existed_reads_as_a_a_only(a_a_run: dict, tmp_path: Path) -> None:
    """A database written by an older triagebot: the statistics' outcome kept, the host flag set."""
    from triagebot.store.sqlite import SqliteStore

    database = tmp_path / "old.db"
    assert triage("ingest", "--db", str(database), str(LAB_REPORT)).returncode == 0
    run = json.loads(a_a_run["result"].stdout)
    old = {key: value for key, value in run.items() if key != "same_kernel"}
    old["verdict"] = {"outcome": "not-reproduced", "reason": "the CI rules out −21.1%",
                      "host_can_switch_kernel": False,
                      **{key: run["verdict"][key] for key in ("measured_change_percent", "ci_low", "ci_high")}}
    with SqliteStore(database) as store:
        store.save_run(MESSAGE_ID, old["plan"], old)
    shown = triage("show", "--db", str(database), MESSAGE_ID).stdout
    assert "a-a-only" in shown and "not-reproduced" not in shown
    assert MESSAGE_ID in triage("list", "--db", str(database), "--verdict", "a-a-only").stdout
    assert MESSAGE_ID not in triage("list", "--db", str(database), "--verdict", "not-reproduced").stdout


def test_through_the_daemon_to_slack_and_the_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon plans the report for the one-kernel host and never reruns it there; its run
    stage, given such a host, ends the report in a-a-only and posts that, never a verdict."""
    from triagebot.daemon import flow
    from triagebot.notify.outbox import deliver
    from triagebot.notify.slack import SlackNotifier
    from triagebot.notify.terminal import payload_to_text
    from triagebot.rules.settings import load_settings
    from triagebot.store.sqlite import SqliteStore

    rules = one_kernel_rules(tmp_path)
    (tmp_path / "state").mkdir()
    write_shim(tmp_path, tmp_path / "state")
    monkeypatch.setenv("PATH", lab_path(tmp_path))
    database = tmp_path / "t.db"
    assert triage("ingest", "--db", str(database), str(LAB_REPORT)).returncode == 0
    settings = load_settings(rules)
    lab = flow.DaemonContext(settings=settings, database=database, deliver=lambda: None, budget=6)
    with SqliteStore(database) as store:
        assert flow.admit(store, lab, admit_days=14, now=datetime(2024, 4, 16, tzinfo=UTC)) == [MESSAGE_ID]
        flow.plan_new(store, lab)
        assert store.get_triage(MESSAGE_ID).state == "planned"
        assert flow.run_planned(store, lab) == []  # the daemon never reruns on a one-kernel host
        assert store.get_triage(MESSAGE_ID).state == "planned"
        host = settings.need_hosts()[0]
        assert flow._run_one(store, lab, store.get_triage(MESSAGE_ID), host) == "a-a-only"
        assert store.get_triage(MESSAGE_ID).state == "a-a-only"
        assert store.latest_run(MESSAGE_ID)["verdict"]["outcome"] == "a-a-only"
        # what the terminal prints for each of the report's notifications (no SLACK_BOT_TOKEN)
        printed = "\n".join(payload_to_text(row.payload) for row in store.outbox(message_id=MESSAGE_ID))
        with FakeSlack(token="xoxb-test", channels={"C0TRIAGE": "perf-triage"}) as slack:
            sent = deliver(store, SlackNotifier("xoxb-test", base_url=slack.base_url, timeout_seconds=5))
            posted = slack.messages("C0TRIAGE")
        assert sent.held == 0 and sent.waiting == 0 and sent.sent >= 5
        slack_text = json.dumps([message.get("text") for message in posted] +
                                [message.get("blocks") for message in posted], ensure_ascii=False)
        for verdict in VERDICTS:
            assert f"Verdict: {verdict}" not in slack_text and f"[{verdict}]" not in slack_text
        assert "A/A run only (a-a-only), no verdict on the commit" in slack_text
        updates = [call.params for call in slack.calls_to("chat.update")]
        assert updates and updates[-1]["text"].startswith("[a-a-only] ")
        assert slack.calls_to("files.completeUploadExternal")  # the samples plot
    assert "A/A run only: no verdict on the commit" in printed and "a-a-only" in printed, printed
    assert not any(f"Verdict: {verdict}" in printed for verdict in VERDICTS)
