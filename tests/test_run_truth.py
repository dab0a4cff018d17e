"""A run says what its samples support (issue 36, finding 10).

- An A/A run (a host that cannot switch kernels) stops at its first round: its outcome is
  a-a-only whatever more samples of one kernel say.
- A run interrupted (Ctrl-C, SIGTERM, the daemon stopping) keeps the samples it took, stored as
  a run cut short and shown by `triage show`; the report's next run starts over.
- The A/A result line states the medians `triage show` prints beside it and their change, and
  names the other statistic it gives (the median of the pairwise ratios); the plot calls the two
  sides the same kernel; the web index lists the report as a-a-only, not as "not taken on".

Real sysbench behind the test lab's shim (tests/support/lab.py); `triage rerun` and `triage
show` as processes; the daemon's run stage in this process with its own stop.
"""
from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.lab import lab_path, write_lab_rules, write_shim
from tests.test_same_kernel import one_kernel_rules
from triagebot.daemon import flow
from triagebot.notify.plot import run_figure, svg_of
from triagebot.present.summary import render_run
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore
from triagebot.verdict.same_kernel import a_a_verdict
from triagebot.web.views import Filters, Site, index_view

LAB_REPORT = FIXTURES / "lab" / "sysbench-cpu-regression.eml"
MESSAGE_ID = "20240415071244.lab1@tberg-ws"
NEEDS_SYSBENCH = pytest.mark.skipif(not shutil.which("sysbench"), reason="the lab needs sysbench")


def triage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=900, cwd=PROJECT, env=env)


def lab_env(root: Path) -> dict[str, str]:
    return {"PATH": lab_path(root, "/usr/bin:/bin:/usr/sbin"), "HOME": str(root), "PYTHONUNBUFFERED": "1"}


def a_a_run_json(base: list[float], again: list[float]) -> dict:
    """A stored A/A run of these samples, its verdict made as the runner makes it."""
    from triagebot.verdict.decide import decide

    samples = [{"role": role, "value": value, "commit": commit}
               for pair in zip(base, again, strict=True)
               for role, value, commit in (("base", pair[0], "c0ffee1234ab^"), ("suspect", pair[1], "c0ffee1234ab"))]
    run = {"host": "this-machine", "base_commit": "c0ffee1234ab^", "suspect_commit": "c0ffee1234ab",
           "status": "done", "same_kernel": True, "samples": samples,
           "plan": {"metric": "sysbench.cpu.events_per_sec", "better": "higher", "reported_change_percent": -25.0}}
    verdict = decide(base, again, "higher", -25.0, 2.0).to_json() | {"host_can_switch_kernel": False}
    return run | {"verdict": a_a_verdict(verdict, run)}


# Two sides of one kernel whose medians are 23% apart while the median of the pairwise ratios
# is +2.6%: a bimodal benchmark, as in the issue (medians 128,318 and 158,342).
BIMODAL_BASE = [100.0, 101.0, 102.0, 128.318, 200.0, 201.0, 202.0]
BIMODAL_AGAIN = [99.0, 100.5, 103.0, 158.342, 199.0, 202.5, 203.0]


def test_the_a_a_result_line_states_the_medians_shown_and_names_each_statistic() -> None:
    run = a_a_run_json(BIMODAL_BASE, BIMODAL_AGAIN)
    shown = render_run(run)
    medians = [float(value) for value in re.findall(r"median (\S+) over", shown)]
    assert medians == [128.318, 158.342]
    reason = run["verdict"]["reason"]
    change = (medians[1] / medians[0] - 1) * 100
    # the first figure of the result line is the change of the two medians shown, and says so
    first = re.search(r"medians (\S+) \(A \(running kernel\)\) and (\S+) \(A again\): ([+−][\d.]+)%", reason)
    assert first is not None, reason
    assert [float(first.group(1)), float(first.group(2))] == medians
    assert float(first.group(3).replace("−", "-")) == pytest.approx(change, abs=0.05)
    # the statistics' own shift is named as what it is, with its interval
    shift = re.search(r"median of the pairwise ratios ([+−][\d.]+)%", reason)
    assert shift is not None and float(shift.group(1).replace("−", "-")) == pytest.approx(
        run["verdict"]["measured_change_percent"], abs=0.05)
    assert abs(float(shift.group(1).replace("−", "-")) - change) > 10  # two different figures, each named
    assert run["verdict"]["noise"]["median_change_percent"] == pytest.approx(change)


def test_the_plot_calls_the_two_sides_of_an_a_a_run_the_same_kernel() -> None:
    run = a_a_run_json(BIMODAL_BASE, BIMODAL_AGAIN)
    svg = svg_of(run_figure(run)).decode()
    assert "A (running kernel)" in svg and "A again" in svg
    assert "c0ffee1234ab" not in svg  # neither commit was booted: no strip is named after one
    assert "medians differ by +23.4%" in svg  # the title's figure is the one the median bars show


@NEEDS_SYSBENCH
def test_an_a_a_rerun_stops_at_its_first_round_and_the_index_lists_it_as_a_a_only(tmp_path: Path) -> None:
    rules = one_kernel_rules(tmp_path)
    (tmp_path / "state").mkdir()
    write_shim(tmp_path, tmp_path / "state")
    # noisy samples (the lab's seeded noise): the first look cannot rule the report out, so the
    # statistics alone would go on to 10, 15 and 20 a side, as the base of issue 36 did
    (tmp_path / "state" / "noise").write_text("0.5 7\n")
    env = lab_env(tmp_path)
    database = tmp_path / "a-a.db"
    assert triage("ingest", "--db", str(database), str(LAB_REPORT), env=env).returncode == 0
    result = triage("rerun", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--budget", "20", "--json",
                    env=env)
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["verdict"]["outcome"] == "a-a-only"
    roles = [sample["role"] for sample in run["samples"]]
    assert roles.count("base") == roles.count("suspect") == 6  # the first round of 20 a side, and no more
    assert any("one round of 6 a side" in line for line in run["events"])
    with SqliteStore(database) as store:
        sections = {section.state: section for section in index_view(store, Site(lambda: SqliteStore(database)),
                                                                      Filters())}
    [listed] = sections["a-a-only"].reports
    assert listed.key == MESSAGE_ID and listed.note and "rerun by hand" in listed.note
    assert sections["not-taken-on"].reports == []


def _interrupted(tmp_path: Path, sig: int) -> tuple[subprocess.CompletedProcess, str, Path, dict]:
    """`triage rerun` on the lab host, sent `sig` once it has taken three samples."""
    rules, _state = write_lab_rules(tmp_path, PROJECT)
    env = lab_env(tmp_path)
    database = tmp_path / "cut.db"
    assert triage("ingest", "--db", str(database), str(LAB_REPORT), env=env).returncode == 0
    process = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "rerun", MESSAGE_ID, "--db", str(database),
                                "--rules", str(rules), "--budget", "20", "--no-fetch"], cwd=PROJECT, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    seen = []
    for line in process.stderr:  # the progress lines, one a sample, as they come
        seen.append(line)
        if line.lstrip().startswith("sample") and sum(item.lstrip().startswith("sample") for item in seen) == 3:
            process.send_signal(sig)
            break
    rest_out, rest_err = process.communicate(timeout=600)
    stderr = "".join(seen) + rest_err
    return subprocess.CompletedProcess(process.args, process.returncode, rest_out, stderr), stderr, database, env


@NEEDS_SYSBENCH
@pytest.mark.parametrize(("sig", "code", "why"), [(signal.SIGINT, 130, "interrupted (Ctrl-C, SIGINT)"),
                                                  (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_an_interrupted_rerun_keeps_its_samples_as_a_run_cut_short(tmp_path: Path, sig: int, code: int,
                                                                   why: str) -> None:
    result, stderr, database, env = _interrupted(tmp_path, sig)
    assert result.returncode == code, stderr
    with SqliteStore(database) as store:
        kept = store.cut_short_run(MESSAGE_ID)
        assert store.latest_run(MESSAGE_ID) is None  # no run ran to its end: nothing reads as a verdict
    assert kept is not None and kept["status"] == "cut-short" and kept["verdict"] is None
    taken = len(kept["samples"])
    assert taken >= 3 and kept["error"] == f"cut short after {taken} samples: {why}"
    assert f"cut short after {taken} samples: {why}; the samples are kept as a run cut short" in stderr
    shown = triage("show", "--db", str(database), MESSAGE_ID, env=env)
    assert shown.returncode == 0, shown.stderr
    assert f"  cut short: cut short after {taken} samples: {why}; the samples below are kept" in shown.stdout
    counts = [int(value) for value in re.findall(r"median \S+ over (\d+) runs", shown.stdout)]
    assert sum(counts) == taken


@NEEDS_SYSBENCH
def test_a_run_the_daemon_stops_keeps_its_samples_and_its_report_waits_again(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    rules, _state = write_lab_rules(tmp_path, PROJECT)
    (rules / "routing.toml").write_text('default_channel = "#perf-triage"\n')
    monkeypatch.setenv("PATH", lab_path(tmp_path))
    database = tmp_path / "daemon.db"
    report = LAB_REPORT.read_bytes().replace(b"Date: Mon, 15 Apr 2024", b"Date: Mon, 15 Apr 2099")
    (tmp_path / "report.eml").write_bytes(report)
    assert triage("ingest", "--db", str(database), str(tmp_path / "report.eml"), env=lab_env(tmp_path)).returncode == 0
    beats = []
    lab = flow.DaemonContext(settings=load_settings(rules), database=database, deliver=lambda: None, budget=20,
                             heartbeat=lambda: beats.append(1), stop_requested=lambda: len(beats) >= 3)
    with SqliteStore(database) as store:
        flow.admit(store, lab, admit_days=14, now=datetime(2099, 4, 16, tzinfo=UTC))
        flow.plan_new(store, lab)
        row = store.get_triage(MESSAGE_ID)
        store.set_triage(MESSAGE_ID, "running", host="lab-local")
        host = lab.settings.need_hosts()[0]
        assert flow._run_one(store, lab, store.get_triage(MESSAGE_ID), host) is None  # stopped: nothing decided
        row = store.get_triage(MESSAGE_ID)
        kept = store.cut_short_run(MESSAGE_ID)
    assert row.state == "planned" and "after 3 samples (kept as cut short): it starts over" in (row.note or "")
    assert kept is not None and len(kept["samples"]) == 3
    assert kept["error"] == "cut short after 3 samples: the daemon was asked to stop"
