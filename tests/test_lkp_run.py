"""A real `lkp run` through `triage rerun` on the test lab: lkp-tests installed from the shared
snapshot into a temporary directory, an LKP fio-basic report of our own (tiny sizes), Debian's fio.

The plan is the lkp template's: the job built from lkp-tests' jobs/fio-basic/*.yaml and the
report's parameters, written into each sample's scratch dir; lkp writes its result root under
/lkp/result and links ./result to it; the sample's value is stats.json's fio.write_iops (the
report's headline metric) and reaches the verdict; lkp's own `rm-path` removes each result root.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT, SHARED
from tests.support.lab import write_lab_rules

SNAPSHOT = SHARED / "tools" / "lkp-tests.tar.gz"
REPORT = FIXTURES / "lab" / "lkp-fio-basic-regression.eml"  # our own LKP-shaped report
MESSAGE_ID = "202404161005.lab2fio-lab.robot@example.org"
RESULTS = Path("/lkp/result/fio-basic")  # lkp-tests' RESULT_ROOT_DIR (lib/constant.rb) and testcase
# What `lkp run` loads at run time (found by tracing its Ruby processes' $LOADED_FEATURES):
# Debian's ruby-activesupport, ruby-git and ruby-tty-command.
GEMS = ("active_support", "git", "tty-command")


def _ruby_ready() -> str | None:
    """Why `lkp run` cannot work here, or None."""
    if not SNAPSHOT.exists():
        return f"{SNAPSHOT} is absent (the shared lkp-tests snapshot)"
    ruby = shutil.which("ruby")
    if ruby is None:
        return "no ruby (apt-get install ruby ruby-activesupport ruby-git ruby-tty-command)"
    probe = " ".join(f"require '{gem}';" for gem in GEMS) + " exit(Gem::Version.new(RUBY_VERSION) >= " \
        "Gem::Version.new('3.1') ? 0 : 3)"
    if subprocess.run([ruby, "-e", probe], capture_output=True, timeout=60).returncode != 0:
        return "ruby >= 3.1 with ruby-activesupport, ruby-git and ruby-tty-command is needed"
    if shutil.which("fio") is None:
        return "no fio (apt-get install fio)"
    if os.geteuid() != 0:
        return "lkp run writes its results under /lkp/result: run as root"
    return None


# lkp-tests writes every run's results under the one /lkp/result of this machine: the tests that
# run it share one xdist worker (`--dist loadgroup` in .ci/run), never two at once.
pytestmark = [pytest.mark.skipif(_ruby_ready() is not None, reason=str(_ruby_ready())),
              pytest.mark.xdist_group("lkp-result")]


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=1200)


def install_lkp_tests(root: Path) -> Path:
    with tarfile.open(SNAPSHOT) as archive:
        archive.extractall(root, filter="tar")  # the snapshot holds links to absolute paths
    return root / "lkp-tests"


def write_rules(root: Path, lkp_tests: Path) -> Path:
    rules, _ = write_lab_rules(root, PROJECT, f'scratch_gb = 4\ntools = {{ "lkp-tests" = "{lkp_tests}" }}\n')
    return rules


def stats_files() -> set[Path]:
    return set(RESULTS.rglob("stats.json")) if RESULTS.exists() else set()


def test_a_real_lkp_run_reaches_the_verdict(tmp_path: Path) -> None:
    lkp_tests = install_lkp_tests(tmp_path)
    rules = write_rules(tmp_path, lkp_tests)
    database = tmp_path / "lab.db"
    assert triage("ingest", "--db", str(database), str(REPORT)).returncode == 0
    planned = triage("plan", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--no-fetch",
                     "--host", "lab-local", "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["kind"] == "plan" and plan["template"] == "lkp" and plan["source"] == "lkp-tests"
    assert plan["argv"] == [str(lkp_tests / "bin" / "lkp"), "run", "{scratch}/job.yaml"]
    assert plan["metric"] == plan["output_metric"] == "fio.write_iops" and plan["better"] == "higher"
    (path, text), = plan["files"]
    assert path == "{scratch}/job.yaml"
    assert "mount_points: '{scratch}'" in text and "rw: write" in text and "ioengine: sync" in text
    before = stats_files()

    result = triage("rerun", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--base", "v6.8",
                    "--budget", "6", "--json")
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["status"] == "done", run["error"]
    samples = run["samples"]
    assert len(samples) == 12 and [sample["role"] for sample in samples[:2]] == ["base", "suspect"]
    for sample in samples:
        # the value compared is stats.json's fio.write_iops, as lkp's own fio parser wrote it
        assert sample["value"] == sample["metrics"]["fio.write_iops"] > 0
        assert "fio.write_bw_MBps" in sample["metrics"] and "fio.time.elapsed_time" in sample["metrics"]
        assert "fio --output-format=json" in sample["stdout"]  # lkp's fio program ran fio
    verdict = run["verdict"]
    assert verdict["runs_base"] == 6 and verdict["runs_suspect"] == 6
    assert verdict["outcome"] in ("confirmed", "not-reproduced", "inconclusive")
    shown = triage("show", "--db", str(database), MESSAGE_ID)
    assert "rerun:" in shown.stdout and "verdict:" in shown.stdout
    # each sample's result root was removed again by lkp's rm-path
    assert stats_files() == before


# Testcases whose benchmark Debian ships and lkp's program finds on PATH, each one small job:
# (testcase, program, headline metric, the report's parameters, another metric lkp's parser writes).
# fsmark and dbench need what `lkp install` builds (./fs_mark, dbench's loadfiles) and cannot run
# here; sysbench-fileio runs, but Debian's sysbench 1.0 prints no line for its write_operations/s.
OFFLINE_CASES = [
    ("stress-ng", "stress-ng", "stress-ng.cpu.ops_per_sec",
     (("nr_threads", "1"), ("testtime", "2s"), ("test", "cpu"), ("cpufreq_governor", "performance")),
     "stress-ng.cpu.ops"),
    ("perf-bench-sched-pipe", "perf", "perf-bench-sched-pipe.ops_per_sec",
     (("loops", "100000ops"), ("mode", "threads")), "perf-bench-sched-pipe.time.elapsed_time"),
    ("postmark", "postmark", "postmark.transactions",
     (("disk", "1HDD"), ("fs", "ext4"), ("number", "100n"), ("trans", "200s"), ("subdirs", "10d")),
     "postmark.files_created"),
]


@pytest.mark.parametrize("testcase, program, metric, parameters, other", OFFLINE_CASES,
                         ids=[case[0] for case in OFFLINE_CASES])
def test_a_real_lkp_run_of_another_testcase(tmp_path: Path, request: pytest.FixtureRequest, testcase: str,
                                            program: str, metric: str, parameters: tuple[tuple[str, str], ...],
                                            other: str) -> None:
    """One sample of each job through the runner: Debian's benchmark under lkp's own program,
    the value stats.json's headline metric."""
    import dataclasses

    from triagebot.parse.report import parse_message
    from triagebot.records.report import Headline, MetricRow, Source
    from triagebot.reproduce.executors.local import LocalExecutor
    from triagebot.reproduce.plan import HostShape, Plan, plan_report
    from triagebot.reproduce.runner import Runner, RunRecord
    from triagebot.rules.hosts import Host
    from triagebot.rules.templates import load_templates

    if shutil.which(program) is None:
        pytest.skip(f"no {program} here")
    lkp_tests = install_lkp_tests(tmp_path)
    fio_report = parse_message(REPORT.read_bytes(), Source("eml", str(REPORT)))
    report = dataclasses.replace(
        fio_report, testcase=testcase, headline=Headline(metric, -12.0, "regression"), parameters=parameters,
        metrics=(MetricRow(name=metric, base=100.0, base_stddev_percent=None, change=-12.0, change_unit="percent",
                           head=88.0, head_stddev_percent=None),))
    shape = HostShape(threads=2, memory_gb=24, scratch_gb=4, tools=(("lkp-tests", str(lkp_tests)),))
    plan = plan_report(report, load_templates(PROJECT / "rules"), host=shape)
    assert isinstance(plan, Plan) and plan.template == "lkp" and plan.output_metric == metric
    # a short scratch path: postmark overflows a fixed buffer on a location of about 100 characters
    # (segfault, exit 139), and pytest-xdist's temporary paths come close to that
    scratch = Path(tempfile.mkdtemp(prefix="lkp-scratch-"))
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    host = Host(name="lab", reach="local", cpu_model="test lab", threads=2, sockets=1, memory_gb=24, disk="ssd",
                scratch_dir=str(scratch), tools=(("lkp-tests", str(lkp_tests)),))
    results = Path("/lkp/result") / testcase
    before = set(results.rglob("stats.json")) if results.exists() else set()
    with LocalExecutor(host.scratch_dir) as executor:
        record = RunRecord(host="lab", base_commit="v6.8", suspect_commit="v6.8", plan=plan.to_json(),
                           started_at="")
        sample = Runner(plan, host, executor, retries=0).sample("base", "v6.8", 0, record)
    assert sample.value == sample.metrics[metric] > 0 and other in sample.metrics
    assert set(results.rglob("stats.json")) == before  # lkp's rm-path removed the result root


@pytest.fixture
def loop_device(tmp_path: Path):
    """A 600 MB loop device backed by a sparse file in tmp, detached afterwards."""
    for program in ("losetup", "mkfs.ext4", "mount", "umount"):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed (util-linux, e2fsprogs)")
    backing = tmp_path / "disk.img"
    with backing.open("wb") as file:
        file.truncate(600 << 20)
    made = subprocess.run(["losetup", "-f", "--show", str(backing)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"no loop device here: {made.stderr.strip()}")
    device = made.stdout.strip()
    try:
        yield device
    finally:
        for line in reversed(Path("/proc/mounts").read_text().splitlines()):
            if line.split()[0] == device:
                subprocess.run(["umount", line.split()[1]], check=False)
        subprocess.run(["losetup", "-d", device], check=False)


def test_lkp_makes_the_reports_filesystem_on_the_hosts_scratch_device(tmp_path: Path, loop_device: str) -> None:
    """The host lists a scratch device: the job's hdd_partitions is that device, and lkp's own
    disk and fs setup make the report's ext4 on it, mount it, run fio there and unmount it."""
    import dataclasses

    from triagebot.parse.report import parse_message
    from triagebot.records.report import Source
    from triagebot.reproduce.executors.local import LocalExecutor
    from triagebot.reproduce.limits import host_shape
    from triagebot.reproduce.plan import Plan, plan_report
    from triagebot.reproduce.runner import Runner, RunRecord
    from triagebot.rules.hosts import Host
    from triagebot.rules.templates import load_templates

    lkp_tests = install_lkp_tests(tmp_path)
    host = Host(name="lab", reach="local", cpu_model="test lab", threads=2, sockets=1, memory_gb=24, disk="ssd",
                scratch_dir=str(tmp_path / "scratch"), scratch_gb=4, scratch_devices=(loop_device,),
                tools=(("lkp-tests", str(lkp_tests)),))
    report = parse_message(REPORT.read_bytes(), Source("eml", str(REPORT)))
    report = dataclasses.replace(report, parameters=tuple(
        ("disk", "1HDD") if key == "disk" else (key, value) for key, value in report.parameters))
    plan = plan_report(report, load_templates(PROJECT / "rules"), host=host_shape(host))
    assert isinstance(plan, Plan) and plan.template == "lkp" and not plan.storage_differs
    (_, text), = plan.files
    assert f"hdd_partitions: {loop_device}" in text and "disk: 1HDD" in text and "fs: ext4" in text
    name = Path(loop_device).name
    with LocalExecutor(host.scratch_dir) as executor:
        record = RunRecord(host="lab", base_commit="v6.8", suspect_commit="v6.8", plan=plan.to_json(),
                           started_at="")
        runner = Runner(plan, host, executor, retries=0)
        samples = [runner.sample("base", "v6.8", index, record) for index in range(2)]  # mkfs each time
    for sample in samples:
        assert sample.value == sample.metrics["fio.write_iops"] > 0
        assert f"directory=/fs/{name}" in sample.stdout  # fio ran on lkp's mount of the device
    assert not any(line.split()[0] == loop_device for line in Path("/proc/mounts").read_text().splitlines())
    if shutil.which("blkid"):
        made = subprocess.run(["blkid", "-o", "value", "-s", "TYPE", loop_device], capture_output=True, text=True)
        assert made.stdout.strip() == "ext4"  # lkp's fs setup made the report's filesystem
