"""triage rerun end to end on a test lab on this machine: real sysbench, a slow commit.

The lab's switch hook records the "running kernel"; the lab's sysbench (real sysbench behind a
shim, tests/support/lab.py) reports events per CPU-second, a fixed factor lower on the slow
commit, so the slow commit is slower whatever else loads the machine. The regressing pair must
be confirmed; the A/A pair must never be.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.lab import lab_path, write_lab_rules

LAB_REPORT = FIXTURES / "lab" / "sysbench-cpu-regression.eml"  # our own report, for the test lab
MESSAGE_ID = "20240415071244.lab1@tberg-ws"
SLOW = "c0ffee1234ab"

pytestmark = pytest.mark.skipif(not (shutil.which("sysbench") and shutil.which("stress-ng")),
                                reason="the lab needs sysbench and stress-ng (apt-get install sysbench stress-ng)")


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=900)


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    rules, state = write_lab_rules(tmp_path, PROJECT)
    monkeypatch.setenv("PATH", lab_path(tmp_path))  # the lab's sysbench for the triage processes
    hook = [sys.executable, str(PROJECT / "tests" / "support" / "lab.py")]
    database = tmp_path / "lab.db"
    assert triage("ingest", "--db", str(database), str(LAB_REPORT)).returncode == 0
    yield rules, database
    subprocess.run([*hook, "stop", str(state)], check=False)


def test_regressing_pair_is_confirmed(lab) -> None:
    rules, database = lab
    result = triage("rerun", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--base", "v6.8",
                    "--budget", "10", "--json")
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["verdict"]["outcome"] == "confirmed", run["verdict"]["reason"]
    samples = run["samples"]
    # interleaved A B A B, each on the commit asked for, as the running-kernel hook said
    assert [sample["role"] for sample in samples[:4]] == ["base", "suspect", "base", "suspect"]
    assert all(sample["running_kernel"] == sample["commit"] for sample in samples)
    base = [sample["value"] for sample in samples if sample["role"] == "base"]
    suspect = [sample["value"] for sample in samples if sample["role"] == "suspect"]
    assert sorted(suspect)[len(suspect) // 2] < 0.97 * sorted(base)[len(base) // 2]  # the load slows it
    assert all("events per second" in sample["stdout"] for sample in samples)
    shown = triage("show", "--db", str(database), MESSAGE_ID)
    assert f"verdict:  confirmed: {run['verdict']['reason']}" in shown.stdout
    plot = next(line for line in shown.stdout.splitlines() if line.startswith("  suspect:"))
    assert len([char for char in plot if char in "▁▂▃▄▅▆▇█"]) == len(suspect)  # one bar a sample
    # recomputed from the stored samples by the same procedure: the same verdict
    again = json.loads(triage("verdict", "--db", str(database), MESSAGE_ID, "--json").stdout)
    assert again["outcome"] == "confirmed" and again["measured_change_percent"] == \
        run["verdict"]["measured_change_percent"]


@pytest.mark.parametrize("attempt", [1, 2])
def test_a_a_pair_is_never_confirmed(lab, attempt: int) -> None:
    rules, database = lab
    result = triage("rerun", MESSAGE_ID, "--db", str(database), "--rules", str(rules),
                    "--base", "v6.8", "--suspect", "v6.8", "--budget", "6", "--json")
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)["verdict"]["outcome"]
    assert outcome in ("not-reproduced", "inconclusive")


def test_unknown_report_and_unplannable_report(lab, tmp_path: Path) -> None:
    rules, database = lab
    missing = triage("rerun", "nobody@example.invalid", "--db", str(database), "--rules", str(rules))
    assert missing.returncode == 1 and "no such message" in missing.stderr
    other = FIXTURES / "mail" / "lkp" / "functional-warning.eml"
    assert triage("ingest", "--db", str(database), str(other)).returncode == 0
    refused = triage("rerun", "202404091133.e71c4a20-lkp@intel.com", "--db", str(database), "--rules", str(rules))
    assert refused.returncode == 1 and "not planned: testcase xfstests has no template" in refused.stderr


class TracingExecutor:
    """A LocalExecutor that records every argv it is asked to start."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.started: list[tuple[str, ...]] = []

    def run(self, argv, **options):
        self.started.append(tuple(argv))
        return self.inner.run(argv, **options)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def test_only_the_plan_and_the_hosts_hooks_are_ever_started(tmp_path: Path) -> None:
    from triagebot.reproduce.executors.local import LocalExecutor
    from triagebot.reproduce.plan import Plan, plan_command
    from triagebot.reproduce.runner import rerun
    from triagebot.rules.hosts import Host
    from triagebot.rules.templates import load_templates
    from triagebot.verdict.sequential import LookSchedule

    state = tmp_path / "state"
    hook = (sys.executable, str(PROJECT / "tests" / "support" / "lab.py"))
    host = Host(name="lab", reach="local", cpu_model="test lab", threads=2, sockets=1, memory_gb=24, disk="ssd",
                scratch_dir=str(tmp_path / "scratch"), switch_kernel=(*hook, "switch", "{commit}", str(state)),
                running_kernel=(*hook, "running", str(state)))
    templates = load_templates(PROJECT / "rules")
    plan = plan_command("sysbench cpu --threads=1 --time=1 run", templates)
    assert isinstance(plan, Plan)
    executor = TracingExecutor(LocalExecutor(host.scratch_dir))
    record = rerun(plan, host, executor, "v6.8", "v6.9", rounds=LookSchedule(rounds=(6,)))
    assert record.status == "done"
    programs = {argv[0] for argv in executor.started}
    assert programs == {sys.executable, "sysbench"}
    hooks = {argv for argv in executor.started if argv[0] == sys.executable}
    assert {argv[2] for argv in hooks} == {"switch", "running"} and all(argv[1] == hook[1] for argv in hooks)
    measured = [argv for argv in executor.started if argv[0] == "sysbench"]
    assert len(measured) == len(record.samples) == 12
    assert all(argv == plan.argv for argv in measured)  # exactly the template's argv, nothing added


def test_one_rerun_per_host_at_a_time(lab, tmp_path: Path) -> None:
    import fcntl

    rules, database = lab
    with open(database.with_name(f"{database.name}.host-lab-local.lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another rerun holds the host
        busy = triage("rerun", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--base", "v6.8")
    assert busy.returncode == 1 and "host lab-local is busy with another rerun" in busy.stderr


def test_a_plan_that_collects_a_result_file(tmp_path: Path) -> None:
    """stress-ng writes its metrics to a YAML file in scratch: the runner reads it for the parser."""
    from triagebot.reproduce.executors.local import LocalExecutor
    from triagebot.reproduce.plan import Plan, plan_command
    from triagebot.reproduce.runner import rerun
    from triagebot.rules.hosts import Host
    from triagebot.rules.templates import load_templates
    from triagebot.verdict.sequential import LookSchedule

    host = Host(name="plain", reach="local", cpu_model="test", threads=2, sockets=1, memory_gb=24, disk="ssd",
                scratch_dir=str(tmp_path / "scratch"))  # cannot switch kernels: an A/A run
    plan = plan_command("stress-ng --cpu 1 --timeout 1s", load_templates(PROJECT / "rules"))
    assert isinstance(plan, Plan) and plan.collect
    record = rerun(plan, host, LocalExecutor(host.scratch_dir), "v6.8", "v6.8", rounds=LookSchedule(rounds=(6,)))
    assert record.status == "done", record.error
    assert len(record.samples) == 12 and all(sample.value > 0 for sample in record.samples)
    assert record.verdict["outcome"] != "confirmed"
