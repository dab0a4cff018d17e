"""Under strace, an lkp rerun starts only the plan's argv (`lkp run`, `lkp rm-path`) and the host's
hooks; every other program is lkp's own, started by those under the plan's argv, and none is
hidden: the trace follows every fork and names the command each program descends from."""
from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.test_lkp_run import _ruby_ready, install_lkp_tests

pytestmark = [pytest.mark.skipif(_ruby_ready() is not None or not shutil.which("strace")
                                or not shutil.which("stress-ng"),
                                reason=str(_ruby_ready() or "needs strace and stress-ng")),
              pytest.mark.xdist_group("lkp-result")]  # one /lkp/result: see test_lkp_run.py

TRACED = """
import dataclasses, json, sys
from pathlib import Path
from triagebot.parse.report import parse_message
from triagebot.records.report import Headline, MetricRow, Source
from triagebot.reproduce.executors.local import LocalExecutor
from triagebot.reproduce.limits import host_shape
from triagebot.reproduce.plan import plan_report
from triagebot.reproduce.runner import rerun
from triagebot.rules.hosts import Host
from triagebot.rules.templates import load_templates
from triagebot.verdict.sequential import LookSchedule
project, scratch, state, hook, lkp_tests = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
host = Host(name="lab", reach="local", cpu_model="test lab", threads=2, sockets=1, memory_gb=24, disk="ssd",
            scratch_dir=scratch, scratch_gb=4, switch_kernel=(sys.executable, hook, "switch", "{commit}", state),
            running_kernel=(sys.executable, hook, "running", state), tools=(("lkp-tests", lkp_tests),))
path = project / "fixtures" / "lab" / "lkp-fio-basic-regression.eml"
metric = "stress-ng.cpu.ops_per_sec"
report = dataclasses.replace(
    parse_message(path.read_bytes(), Source("eml", str(path))), testcase="stress-ng",
    headline=Headline(metric, -12.0, "regression"),
    parameters=(("nr_threads", "1"), ("testtime", "1s"), ("test", "cpu")),
    metrics=(MetricRow(metric, 100.0, None, -12.0, "percent", 88.0, None),))
plan = plan_report(report, load_templates(project / "rules"), host=host_shape(host))
record = rerun(plan, host, LocalExecutor(scratch), "v6.8", "v6.9", rounds=LookSchedule(rounds=(1,)))
print(json.dumps({"status": record.status, "error": record.error, "argv": list(plan.argv),
                  "cleanup": list(plan.cleanup_argv), "samples": len(record.samples)}))
"""

# strace pads a short line's "= result" out to a column ("<... execve resumed>)             = 0"):
# the result is read after any run of spaces
_EXECVE = re.compile(r'^(\d+)\s+execve\("(?:[^"\\]|\\.)*", \[(.*?)\], .*?(?:\)\s+= (-?\d+).*|<unfinished \.\.\.>)$')
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. execve resumed>.*\)\s+= (-?\d+)")
_FORK = re.compile(r"^(\d+)\s+(?:<\.\.\. )?(?:clone3?|v?fork)\b.*= (\d+)$")


def process_tree(trace: Path) -> tuple[dict[int, int], dict[int, list[list[str]]]]:
    """(parent of each traced process, the argv of each program each process executed)."""
    parents: dict[int, int] = {}
    programs: dict[int, list[list[str]]] = defaultdict(list)
    pending: dict[int, list[str]] = {}
    for line in trace.read_text().splitlines():
        if match := _EXECVE.match(line):
            pid, argv = int(match.group(1)), ast.literal_eval("[" + match.group(2) + "]")
            if match.group(3) is None:
                pending[pid] = argv
            elif match.group(3) == "0":
                programs[pid].append(argv)
        elif match := _RESUMED.match(line):
            argv = pending.pop(int(match.group(1)), None)
            if argv is not None and match.group(2) == "0":
                programs[int(match.group(1))].append(argv)
        elif (match := _FORK.match(line)) and int(match.group(2)) > 0:
            parents[int(match.group(2))] = int(match.group(1))
    return parents, programs


def test_lkps_own_processes_are_all_under_the_plans_argv(tmp_path: Path) -> None:
    lkp_tests = install_lkp_tests(tmp_path)
    lkp = str(lkp_tests / "bin" / "lkp")
    script, trace, scratch = tmp_path / "traced.py", tmp_path / "trace", tmp_path / "scratch"
    script.write_text(TRACED)
    hook = str(PROJECT / "tests" / "support" / "lab.py")
    completed = subprocess.run(
        ["strace", "-f", "-qq", "-s", "4096", "-e", "trace=execve,clone,clone3,fork,vfork", "-o", str(trace),
         sys.executable, str(script), str(PROJECT), str(scratch), str(tmp_path / "state"), hook, str(lkp_tests)],
        capture_output=True, text=True, timeout=900, cwd=PROJECT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PROJECT)})
    assert completed.returncode == 0, completed.stderr[-2000:]
    result = json.loads(completed.stdout)
    assert result["status"] == "done" and result["samples"] == 2, result["error"]
    parents, programs = process_tree(trace)
    root = next(pid for pid, argvs in programs.items() if argvs[0][:2] == [sys.executable, str(script)])

    def command_of(pid: int) -> tuple[int, list[str]] | None:
        """The process the runner started that `pid` descends from, and what it ran first."""
        while pid in parents and parents[pid] != root:
            pid = parents[pid]
        return (pid, programs[pid][0]) if parents.get(pid) == root and programs.get(pid) else None

    def planned(argv: list[str]) -> bool:
        """The plan's argv or cleanup argv with the sample's scratch dir filled in."""
        return any(len(argv) == len(words) and all(
            re.fullmatch(re.escape(word).replace(re.escape("{scratch}"), re.escape(str(scratch)) + r"/run-[^/]+"),
                         given) for word, given in zip(words, argv, strict=True))
            for words in (result["argv"], result["cleanup"]))

    started = {pid: command_of(pid) for pid in programs if pid != root}
    assert all(command is not None for command in started.values()), \
        [programs[pid] for pid, command in started.items() if command is None]  # nothing outside a command
    commands = {pid: argv for pid, argv in (command for command in started.values() if command)}
    hooks = [argv for argv in commands.values() if argv[:2] == [sys.executable, hook]]
    runs = [argv for argv in commands.values() if planned(argv)]
    assert len(hooks) + len(runs) == len(commands), [argv for argv in commands.values()
                                                     if argv not in hooks and not planned(argv)]
    assert sorted(argv[1] for argv in runs if argv[0] == lkp) == ["rm-path", "rm-path", "run", "run"]
    # lkp's own children, under `lkp run`: its Ruby driver, the job script, the benchmark itself
    below_run = {pid for pid, command in started.items() if command and command[1][1:2] == ["run"]}
    names = {Path(argv[0]).name for pid in below_run for argv in programs[pid]}
    assert {"ruby", "stress-ng"} <= names, names
    assert any(argv[:1] == [lkp] for argv in commands.values())
