"""Hostile reproducers at run time (issue 13, findings 3, 5 and 8): plans that were accepted
but fail when run, plans that would start too many processes, benchmarks writing outside scratch.

Each failing plan runs for real (fio, stress-ng) through the real runner: it is retried twice,
then the run ends as an error with the command's own reason. In the daemon's flow, a report
whose planning or run fails in any way ends in state `error`, told to the team, and the pass
goes on with the other reports.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.lab import lab_path, write_lab_rules
from triagebot.daemon import flow
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_from_json, report_to_json
from triagebot.reproduce.executors.local import LocalExecutor
from triagebot.reproduce.limits import host_limits
from triagebot.reproduce.plan import HostShape, Plan, Refusal, plan_command
from triagebot.reproduce.runner import rerun
from triagebot.rules.hosts import Host
from triagebot.rules.routing import parse_routing
from triagebot.rules.settings import load_settings
from triagebot.rules.templates import load_templates
from triagebot.store.sqlite import SqliteStore
from triagebot.verdict.sequential import LookSchedule

TEMPLATES = load_templates(PROJECT / "rules")
LAB_REPORT = FIXTURES / "lab" / "sysbench-cpu-regression.eml"
needs = pytest.mark.skipif(not (shutil.which("fio") and shutil.which("stress-ng") and shutil.which("sysbench")),
                           reason="needs fio, stress-ng and sysbench (apt-get install fio stress-ng sysbench)")


class TracingExecutor:
    """A LocalExecutor that records every command it is asked to run, with its options."""

    def __init__(self, inner: LocalExecutor) -> None:
        self.inner = inner
        self.calls: list[tuple[tuple[str, ...], dict]] = []

    def run(self, argv, **options):
        self.calls.append((tuple(argv), options))
        return self.inner.run(argv, **options)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def plain_host(tmp_path: Path) -> Host:
    return Host(name="plain", reach="local", cpu_model="test", threads=2, sockets=1, memory_gb=24, disk="ssd",
                scratch_dir=str(tmp_path / "scratch"))  # cannot switch kernels: no hooks to run


def fio_on_a_directory() -> Plan:
    # `--filename=.` is a plain file name to the planner: it becomes {scratch}/., a directory
    plan = plan_command("fio --name=x --filename=. --rw=read --size=1M", TEMPLATES)
    assert isinstance(plan, Plan), plan
    return plan


def stress_ng_getdents() -> Plan:
    # The allowlist once had `getdents`; stress-ng's stressor is `getdent`. A plan stored then
    # (the daemon runs stored plans) still names it: stress-ng refuses the option at run time.
    plan = plan_command("stress-ng --getdent 1 --timeout 1s", TEMPLATES)
    assert isinstance(plan, Plan), plan
    return dataclasses.replace(plan, argv=tuple("--getdents" if word == "--getdent" else word
                                                for word in plan.argv))


@needs
@pytest.mark.parametrize("make_plan, reason", [
    (fio_on_a_directory, "Is a directory"),
    (stress_ng_getdents, "unrecognized option '--getdents'"),
], ids=["fio-filename-dot", "stress-ng-getdents"])
def test_a_benchmark_that_fails_is_retried_twice_then_the_run_is_an_error(tmp_path: Path, make_plan,
                                                                         reason: str) -> None:
    plan = make_plan()
    host = plain_host(tmp_path)
    executor = TracingExecutor(LocalExecutor(host.scratch_dir))
    record = rerun(plan, host, executor, "v6.8", "v6.8", rounds=LookSchedule(rounds=(6,)))
    assert record.status == "error" and record.verdict is None
    assert record.error.startswith("sample 0 (base v6.8) failed 3 times; last: ")
    assert reason in record.error
    measured = [argv for argv, _ in executor.calls if argv[0] == plan.argv[0]]
    assert len(measured) == 3  # the first attempt and two retries
    failures = [line for line in record.events if "attempt" in line]
    assert [line.split(" failed:")[0] for line in failures] == [
        f"sample 0 (base v6.8) attempt {attempt}" for attempt in (1, 2, 3)]
    assert not list((tmp_path / "scratch").iterdir())  # every attempt's scratch removed


def test_the_getdents_spelling_is_refused_when_planned() -> None:
    refused = plan_command("stress-ng --getdents 1 --timeout 10s", TEMPLATES)
    assert isinstance(refused, Refusal) and "--getdents" in refused.reason
    assert isinstance(plan_command("stress-ng --getdent 1 --timeout 10s", TEMPLATES), Plan)


@needs
def test_benchmarks_run_in_scratch_with_tmpdir_there_and_under_the_hosts_limits(tmp_path: Path) -> None:
    """stress-ng --open: its named files in scratch (cwd, TMPDIR, --temp-path), under limits."""
    plan = plan_command("stress-ng --open 1 --timeout 1s", TEMPLATES)
    assert isinstance(plan, Plan) and "--temp-path" in plan.argv
    host = plain_host(tmp_path)
    executor = TracingExecutor(LocalExecutor(host.scratch_dir))
    record = rerun(plan, host, executor, "v6.8", "v6.8", rounds=LookSchedule(rounds=(6,)))
    assert record.status == "done", record.error
    runs = [(argv, options) for argv, options in executor.calls if argv[0] == "stress-ng"]
    assert len(runs) == 12
    for argv, options in runs:
        scratch = options["cwd"]
        assert scratch.startswith(host.scratch_dir + "/")
        assert options["env"] == {"TMPDIR": scratch}
        assert argv[argv.index("--temp-path") + 1] == scratch
        assert options["limits"] == host_limits(host)
    assert any(event.startswith("limits: processes ") for event in record.events)


@needs
def test_a_failing_sample_still_gets_the_plans_cleanup(tmp_path: Path) -> None:
    """The cleanup (here `fio --version`, standing for `lkp rm-path` of lkp's result root) runs
    after every attempt that started, the failed ones too, and the run still says why it failed."""
    plan = dataclasses.replace(fio_on_a_directory(), cleanup_argv=("fio", "--version"))
    host = plain_host(tmp_path)
    executor = TracingExecutor(LocalExecutor(host.scratch_dir))
    record = rerun(plan, host, executor, "v6.8", "v6.8", rounds=LookSchedule(rounds=(6,)))
    assert record.status == "error" and "Is a directory" in (record.error or "")
    commands = [("cleanup" if argv == ("fio", "--version") else "sample") for argv, _ in executor.calls
                if argv[0] == "fio"]
    assert commands == ["sample", "cleanup"] * 3  # three attempts of the first sample, each cleaned up


def test_the_issues_hackbench_fits_a_224_thread_host() -> None:
    command = "hackbench -g 1000 -f 1000 -l 10000000 -s 1048576 -P"
    plan = plan_command(command, TEMPLATES, host=HostShape(threads=224, memory_gb=512))
    assert isinstance(plan, Plan)
    groups = int(plan.argv[plan.argv.index("--groups") + 1])
    fds = int(plan.argv[plan.argv.index("--fds") + 1])
    assert groups == 224 and groups * fds * 2 <= HostShape(threads=224).process_budget == 224 * 64
    assert any(line.startswith("fds 1000 → 32 (fds × groups × 2 would start 448000 processes")
               for line in plan.scaled)


# --- the daemon's flow: one report's failure is that report's error ------------------------------

def lab_record(message_id: str) -> dict:
    record = report_to_json(parse_message(LAB_REPORT.read_bytes(), Source("eml")))
    return record | {"message_id": message_id}


def taken_on(store: SqliteStore, record: dict, state: str = "new", plan: dict | None = None) -> None:
    store.put_message(record["message_id"], LAB_REPORT.read_bytes(), "test", None, "2026-12-01T00:00:00+00:00")
    store.put_record(record["message_id"], report_from_json(record), "test")
    store.start_triage(record["message_id"], "#perf-triage")
    if state != "new":
        store.set_triage(record["message_id"], state, plan=plan, host="lab-local")


def make_lab(tmp_path: Path) -> flow.DaemonContext:
    rules, _ = write_lab_rules(tmp_path, PROJECT)
    settings = dataclasses.replace(load_settings(rules), routing=parse_routing('default_channel = "#perf-triage"\n',
                                                                               "test"))
    return flow.DaemonContext(settings=settings, database=tmp_path / "t.db", deliver=lambda: None, budget=6)


def replies(store: SqliteStore, message_id: str) -> dict[str, dict]:
    return {row.kind: row.payload for row in store.outbox(message_id=message_id)}


def test_a_report_the_planner_cannot_read_is_an_error_and_the_others_are_planned(tmp_path: Path) -> None:
    lab = make_lab(tmp_path)
    with SqliteStore(lab.database) as store:
        # a record written by a newer triagebot (schema 99): the store cannot read it back
        taken_on(store, lab_record("newer@lab"))
        with sqlite3.connect(lab.database) as other:
            other.execute("UPDATE records SET record_json = ? WHERE message_id = ?",
                          (json.dumps(lab_record("newer@lab") | {"schema": 99}), "newer@lab"))
        taken_on(store, lab_record("good@lab"))
        assert flow.plan_new(store, lab) == ["newer@lab", "good@lab"]
        failed = store.get_triage("newer@lab")
        assert failed.state == "error"
        assert failed.note.startswith("planning failed: ")
        assert "the stored record of newer@lab cannot be read: ValueError: unsupported record schema 99" in failed.note
        sent = replies(store, "newer@lab")
        assert sent["verdict"]["text"].startswith("Run failed: planning failed: ")
        assert sent["update-final"]["text"].startswith("[error] ")
        assert store.get_triage("good@lab").state == "planned"


def test_an_unreadable_record_is_taken_on_and_ends_in_error_without_stopping_admission(tmp_path: Path) -> None:
    lab = make_lab(tmp_path)
    with SqliteStore(lab.database) as store:
        for message_id in ("newer@lab", "good@lab"):
            store.put_message(message_id, LAB_REPORT.read_bytes(), "test", None, "2026-12-01T00:00:00+00:00")
            store.put_record(message_id, report_from_json(lab_record(message_id)), "test")
        with sqlite3.connect(lab.database) as other:
            other.execute("UPDATE records SET record_json = ? WHERE message_id = ?",
                          (json.dumps(lab_record("newer@lab") | {"schema": 99}), "newer@lab"))
        now = datetime.fromisoformat(lab_record("good@lab")["date"]) + timedelta(days=1)
        assert sorted(flow.admit(store, lab, admit_days=14, now=now)) == ["good@lab", "newer@lab"]
        assert sorted(flow.plan_new(store, lab)) == ["good@lab", "newer@lab"]
        assert store.get_triage("newer@lab").state == "error"
        assert store.get_triage("good@lab").state == "planned"


@needs
def test_reports_whose_runs_fail_end_in_error_and_the_pass_goes_on(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", lab_path(tmp_path))  # the lab's sysbench
    lab = make_lab(tmp_path)
    good = plan_command("sysbench cpu --threads=2 --time=1 run", TEMPLATES)
    assert isinstance(good, Plan)
    with SqliteStore(lab.database) as store:
        taken_on(store, lab_record("fio-dot@lab"), "planned", fio_on_a_directory().to_json())
        taken_on(store, lab_record("getdents@lab"), "planned", stress_ng_getdents().to_json())
        # a stored plan this triagebot cannot read (a newer schema): ValueError at run time
        taken_on(store, lab_record("unreadable@lab"), "planned", good.to_json() | {"schema": 99})
        taken_on(store, lab_record("good@lab"), "planned", good.to_json())
        decided = flow.run_planned(store, lab)
        assert decided == ["fio-dot@lab", "getdents@lab", "unreadable@lab", "good@lab"]
        for message_id, reason in (("fio-dot@lab", "Is a directory"),
                                   ("getdents@lab", "unrecognized option '--getdents'"),
                                   ("unreadable@lab", "not a schema-1 plan")):
            row = store.get_triage(message_id)
            assert row.state == "error", message_id
            text = replies(store, message_id)["verdict"]["text"]
            assert text.startswith("Run failed: ") and reason in text
            assert replies(store, message_id)["update-final"]["text"].startswith("[error] ")
        # the good report ran to a verdict; which one is the statistics' business (a 6+6 look
        # with one overlapping pair is inconclusive), tested in tests/test_rerun_lab.py and
        # bench/verdict.py, not here
        assert store.get_triage("good@lab").state in ("confirmed", "not-reproduced", "inconclusive")
        assert store.latest_run("good@lab")["status"] == "done"
        assert store.latest_run("fio-dot@lab")["status"] == "error"
        # nothing is left to run: a failed report is not taken up again
        assert flow.run_planned(store, lab) == []


# --- the process trace: nothing starts but the plan's argv and the host's hooks ---------------

TRACED_RERUN = """
import json, sys
from pathlib import Path
from triagebot.reproduce.executors.local import LocalExecutor
from triagebot.rules.hosts import Host
from triagebot.reproduce.plan import plan_command
from triagebot.reproduce.runner import rerun
from triagebot.rules.templates import load_templates
from triagebot.verdict.sequential import LookSchedule
project, scratch, state, hook = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
host = Host(name="lab", reach="local", cpu_model="test lab", threads=2, sockets=1, memory_gb=24, disk="ssd",
            scratch_dir=scratch, switch_kernel=(sys.executable, hook, "switch", "{commit}", state),
            running_kernel=(sys.executable, hook, "running", state))
plan = plan_command("sysbench cpu --threads=1 --time=1 run", load_templates(project / "rules"))
record = rerun(plan, host, LocalExecutor(scratch), "v6.8", "v6.9", rounds=LookSchedule(rounds=(6,)))
print(json.dumps({"status": record.status, "error": record.error, "argv": list(plan.argv),
                  "samples": len(record.samples), "hooks": [list(host.switch_kernel), list(host.running_kernel)]}))
"""


def executed(trace: Path) -> list[list[str]]:
    """The argv of every program the traced process tree started (successful execve calls)."""
    import ast
    import re

    started = []
    for line in trace.read_text().splitlines():
        match = re.match(r'^\d+\s+execve\("(?:[^"\\]|\\.)*", \[(.*)\], .*\) = 0$', line)
        if match:
            started.append(ast.literal_eval("[" + match.group(1) + "]"))
    return started


@pytest.mark.skipif(not (shutil.which("strace") and shutil.which("sysbench")), reason="needs strace and sysbench")
def test_under_strace_only_the_plans_argv_and_the_hosts_hooks_are_started(tmp_path: Path) -> None:
    """Limits (rlimits, the pids cgroup, the private /tmp) are set in the child before exec:
    no wrapper program, no helper, nothing but the plan's exact argv and the hooks."""
    import json
    import subprocess

    script = tmp_path / "traced.py"
    script.write_text(TRACED_RERUN)
    trace = tmp_path / "trace"
    hook = str(PROJECT / "tests" / "support" / "lab.py")
    completed = subprocess.run(
        ["strace", "-f", "-qq", "-s", "4096", "-e", "trace=execve", "-o", str(trace), sys.executable, str(script),
         str(PROJECT), str(tmp_path / "scratch"), str(tmp_path / "state"), hook],
        capture_output=True, text=True, timeout=600, cwd=PROJECT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PROJECT)})
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert result["status"] == "done" and result["samples"] == 12, result["error"]
    first, *rest = executed(trace)
    assert first == [sys.executable, str(script), str(PROJECT), str(tmp_path / "scratch"), str(tmp_path / "state"),
                     hook]
    switch, running = result["hooks"]
    hooks = [argv for argv in rest if argv[:2] == [sys.executable, hook]]
    measured = [argv for argv in rest if argv == result["argv"]]
    assert len(measured) == 12
    assert len(hooks) + len(measured) == len(rest), [argv for argv in rest if argv not in hooks + measured]
    assert {argv[2] for argv in hooks} == {"switch", "running"}
    assert all(argv in ([*switch[:3], "v6.8", state], [*switch[:3], "v6.9", state], running)
               for argv, state in ((argv, switch[-1]) for argv in hooks))
