"""Output parsers: real fio, sysbench, stress-ng and perf bench runs, and captured samples.

Tools run through the local executor in a scratch directory, small and short. fs_mark and
hackbench run for real where installed (Debian packages fsmark and rt-tests); their captured
samples below are parsed either way. Text tables run again with CRLF line endings.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from triagebot.reproduce.executors.local import LocalExecutor
from triagebot.reproduce.outputs import PARSERS, OutputError, parse_output
from triagebot.reproduce.plan import Plan, plan_command
from triagebot.rules.templates import load_templates

TEMPLATES = load_templates(PROJECT / "rules")


def need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed (Debian package {package})")
    return path


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[tuple[LocalExecutor, str]]:
    with LocalExecutor(str(tmp_path / "scratch")) as executor:
        yield executor, executor.make_scratch()


def crlf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


# --- real runs --------------------------------------------------------------------------------

def test_real_fio_json(scratch: tuple[LocalExecutor, str]) -> None:
    executor, cwd = scratch
    fio = need("fio", "fio")
    completed = executor.run([fio, "--name=randrw", "--rw=randrw", "--bs=4k", "--ioengine=psync",
                              "--size=8M", "--runtime=2", "--time_based", f"--filename={cwd}/fio.data",
                              "--output-format=json"], timeout=60, cwd=cwd)
    assert completed.ok, completed.stderr
    metrics = parse_output("fio-json", completed.stdout)
    for direction in ("read", "write"):
        assert metrics[f"fio.{direction}_iops"] > 0
        assert metrics[f"fio.{direction}_bw_MBps"] > 0
        assert 0 < metrics[f"fio.{direction}_clat_mean_us"] <= metrics[f"fio.{direction}_clat_99%_us"] * 10
        assert metrics[f"fio.{direction}_clat_50%_us"] <= metrics[f"fio.{direction}_clat_99%_us"]
    # KiB/s over 1024: MB/s as LKP reports it; 4 KiB blocks make bw = iops * 4 / 1024
    assert metrics["fio.write_bw_MBps"] == pytest.approx(metrics["fio.write_iops"] * 4 / 1024, rel=0.05)
    assert sum(value for name, value in metrics.items() if name.startswith("fio.latency_")) == pytest.approx(100, abs=1)

    # the same document written to a file (--output=FILE) is read from the collected file
    from_file = parse_output("fio-json", b"", {"result.json": completed.stdout})
    assert from_file == metrics

    # two jobs in one document: throughput adds up, the mean latency stays
    data = json.loads(completed.stdout)
    data["jobs"] = data["jobs"] * 2
    doubled = parse_output("fio-json", json.dumps(data).encode())
    assert doubled["fio.read_iops"] == pytest.approx(2 * metrics["fio.read_iops"])
    assert doubled["fio.read_clat_mean_us"] == pytest.approx(metrics["fio.read_clat_mean_us"])

    # warnings printed before the JSON do not hide it
    noisy = b"fio: this platform does not support process shared mutexes\n" + completed.stdout
    assert parse_output("fio-json", noisy) == metrics

    # a read-only job yields no write metrics to compare
    for job in data["jobs"]:
        job["write"]["total_ios"] = 0
        job["write"]["iops"] = 0
    assert not any(name.startswith("fio.write_") for name in parse_output("fio-json", json.dumps(data).encode()))


def _sysbench(executor: LocalExecutor, cwd: str, *arguments: str) -> bytes:
    completed = executor.run([need("sysbench", "sysbench"), *arguments], timeout=60, cwd=cwd)
    assert completed.ok, completed.stdout + completed.stderr
    return completed.stdout


def test_real_sysbench_cpu_memory_threads(scratch: tuple[LocalExecutor, str]) -> None:
    executor, cwd = scratch
    cpu = parse_output("sysbench-text", _sysbench(executor, cwd, "cpu", "--time=1", "--threads=1", "run"))
    assert cpu["sysbench.cpu.events_per_sec"] > 0 and cpu["sysbench.cpu.latency_avg_ms"] > 0
    assert parse_output("sysbench-text", crlf(_sysbench(executor, cwd, "cpu", "--time=1", "run"))).keys() == cpu.keys()

    memory = parse_output("sysbench-text", _sysbench(executor, cwd, "memory", "--time=1",
                                                     "--memory-total-size=512M", "run"))
    assert memory["sysbench.memory.MiB_per_sec"] > 0 and memory["sysbench.memory.ops_per_sec"] > 0

    threads = parse_output("sysbench-text", _sysbench(executor, cwd, "threads", "--time=1", "run"))
    assert threads["sysbench.threads.total_events"] > 0 and threads["sysbench.threads.latency_avg_ms"] >= 0


def test_real_sysbench_fileio(scratch: tuple[LocalExecutor, str]) -> None:
    executor, cwd = scratch
    files = ("--file-num=2", "--file-total-size=8M")
    _sysbench(executor, cwd, "fileio", *files, "prepare")
    output = _sysbench(executor, cwd, "fileio", *files, "--file-test-mode=rndrw", "--time=1", "run")
    metrics = parse_output("sysbench-text", output)
    for name in ("reads_per_sec", "writes_per_sec", "fsyncs_per_sec", "read_MiBps", "written_MiBps"):
        assert metrics[f"sysbench.fileio.{name}"] > 0, name
    _sysbench(executor, cwd, "fileio", *files, "cleanup")
    # run without the prepared files: sysbench's FATAL line is the reason given
    failed = executor.run([need("sysbench", "sysbench"), "fileio", *files, "--time=1",
                           "--file-test-mode=rndrd", "run"], timeout=30, cwd=cwd)
    with pytest.raises(OutputError, match=r"sysbench-text: sysbench failed: FATAL: Cannot open file"):
        parse_output("sysbench-text", failed.stdout)


def test_real_stress_ng_yaml(scratch: tuple[LocalExecutor, str]) -> None:
    executor, cwd = scratch
    stress_ng = need("stress-ng", "stress-ng")
    completed = executor.run([stress_ng, "--cpu", "1", "--timeout", "2s", "--metrics-brief",
                              "--yaml", f"{cwd}/metrics.yaml"], timeout=60, cwd=cwd)
    assert completed.ok, completed.stderr
    document = executor.read_file(f"{cwd}/metrics.yaml")
    metrics = parse_output("stress-ng-yaml", completed.stdout, {"metrics.yaml": document})
    assert set(metrics) == {"stress-ng.cpu.ops", "stress-ng.cpu.ops_per_sec"}
    assert metrics["stress-ng.cpu.ops"] > 0 and metrics["stress-ng.cpu.ops_per_sec"] > 0
    # without the YAML, the metrc table stress-ng logged to stderr gives the same numbers
    table = parse_output("stress-ng-yaml", completed.stdout, {"stderr": completed.stderr})
    assert table["stress-ng.cpu.ops"] == metrics["stress-ng.cpu.ops"]
    assert table["stress-ng.cpu.ops_per_sec"] == pytest.approx(metrics["stress-ng.cpu.ops_per_sec"], rel=0.01)


def test_real_perf_bench(scratch: tuple[LocalExecutor, str]) -> None:
    executor, cwd = scratch
    perf = need("perf", "linux-perf")
    messaging = executor.run([perf, "bench", "sched", "messaging", "-g", "1", "-l", "50"], timeout=60, cwd=cwd)
    if not messaging.ok:
        pytest.skip(f"perf bench does not run here: {messaging.stderr[-200:]!r}")
    assert parse_output("perf-bench-text", messaging.stdout)["perf-bench.total_time_s"] > 0
    pipe = executor.run([perf, "bench", "sched", "pipe", "-l", "2000"], timeout=60, cwd=cwd)
    metrics = parse_output("perf-bench-text", pipe.stdout)
    assert metrics["perf-bench.ops_per_sec"] > 0 and metrics["perf-bench.usecs_per_op"] > 0


FS_MARK_PATH_LIMIT = 40  # fs_mark refuses a -d of this many bytes or more ("pathname too long")


def test_real_fs_mark(tmp_path: Path) -> None:
    """The fs_mark template's plan runs as the runner runs it (cwd = the sample's scratch dir,
    `{scratch}` filled in) on a scratch path far beyond fs_mark's -d limit."""
    need("fs_mark", "fsmark")
    deep = tmp_path / ("a-scratch-root-deeper-than-fs-mark-allows-" * 2)
    plan = plan_command("fs_mark -d /mnt/scratch/fsmark -n 200 -s 4096 -L 2 -S 0", TEMPLATES)
    assert isinstance(plan, Plan), plan
    with LocalExecutor(str(deep)) as executor:
        cwd = executor.make_scratch()
        assert len(f"{cwd}/fs") >= FS_MARK_PATH_LIMIT
        argv = [word.replace("{scratch}", cwd) for word in plan.argv]
        completed = executor.run(argv, timeout=60, cwd=cwd)
        assert completed.ok, completed.stderr
        assert parse_output(plan.parser, completed.stdout)[plan.output_metric] > 0
        assert any(Path(cwd).iterdir())  # it wrote inside the scratch dir, nowhere else


def test_fs_mark_dir_is_relative_to_the_scratch_dir() -> None:
    # a -d from the report and the template's default both become short relative paths
    given = plan_command("fs_mark -d /mnt/scratch/fsmark -n 10 -s 4096", TEMPLATES, scratch_dir="/var/tmp/x/run-1")
    default = plan_command("fs_mark -n 10 -s 4096", TEMPLATES)
    assert isinstance(given, Plan) and isinstance(default, Plan)
    assert given.argv[given.argv.index("-d") + 1] == "."
    assert default.argv[default.argv.index("-d") + 1] == "fs"


def test_real_hackbench(scratch: tuple[LocalExecutor, str]) -> None:
    executor, cwd = scratch
    hackbench = need("hackbench", "rt-tests")
    completed = executor.run([hackbench, "-g", "1", "-l", "50"], timeout=60, cwd=cwd)
    assert completed.ok, completed.stderr
    assert parse_output("hackbench-text", completed.stdout)["hackbench.time_s"] > 0


# --- captured samples -------------------------------------------------------------------------

# fs_mark 3.3, two loops (-L 2)
FS_MARK = b"""
#  fs_mark  -d  /fs/sdb1/1  -n  1000  -s  4096  -L  2  -S  0
#\tVersion 3.3, 1 thread(s) starting at Tue Jan 14 09:37:29 2020
#\tSync method: NO SYNC: Test does not issue sync() or fsync() calls.
#\tDirectories:  no subdirectories used
#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)
#\tFiles info: size 4096 bytes, written with an IO size of 16384 bytes per write
#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.

FSUse%        Count         Size    Files/sec     App Overhead
     2         1000         4096      57174.2             9391
     2         2000         4096      52825.8            10609
"""

FS_MARK_VERBOSE = b"""FSUse%        Count         Size    Files/sec     App Overhead        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)
     0        10000          512        512.3           147715       12       30     2188        3        5       63
"""  # noqa: E501 - fs_mark -v prints its header on one line

# rt-tests hackbench, two loops of the default run
HACKBENCH = b"""Running in process mode with 10 groups using 40 file descriptors each (== 400 tasks)
Each sender will pass 100 messages of 100 bytes
Time: 0.218
Running in process mode with 10 groups using 40 file descriptors each (== 400 tasks)
Each sender will pass 100 messages of 100 bytes
Time: 0.242
"""

PERF_MESSAGING = b"""# Running 'sched/messaging' benchmark:
# 20 sender and receiver processes per group
# 2 groups == 80 processes run

     Total time: 0.091 [sec]
"""

PERF_PIPE = b"""# Running 'sched/pipe' benchmark:
# Executed 10000 pipe operations between two processes

     Total time: 0.640 [sec]

      64.065800 usecs/op
          15608 ops/sec
"""

PERF_MEMCPY = b"""# Running 'mem/memcpy' benchmark:
# function 'default' (Default memcpy() provided by glibc)
# Copying 1MB bytes ...

      33.908420 GB/sec
# function 'x86-64-movsb' (movsb-based memcpy() in arch/x86/lib/memcpy_64.S)
# Copying 1MB bytes ...

      36.303439 GB/sec
"""

PERF_FUTEX = b"""# Running 'futex/hash' benchmark:
Run summary [PID 4242]: 2 threads, each operating on 1024 [private ] futexes for 1 secs.

[thread  0] futexes: 0x563cce0a43b0 ... 0x563cce0a53ac [ 5918720 ops/sec ]
[thread  1] futexes: 0x563cce0a5650 ... 0x563cce0a664c [ 5892096 ops/sec ]

Averaged 5905408 operations/sec (+- 0.23%), total secs = 1
"""

# an LKP stats.json: one value, or one per iteration
LKP_STATS = json.dumps({
    "fio.write_iops": [120000.5, 121000.5],
    "fio.write_clat_mean_us": 150.25,
    "fio.time.user_time": [10, 12, 14],
    "fio.workload": 1.2e7,
    "kernel": "6.8.0-rc1",  # text: not a metric
    "perf-profile.children.cycles-pp.xfs_file_write_iter": [],
}).encode()

STRESS_NG_YAML = b"""---
system-info:
      stress-ng-version: 0.15.06
      hostname: lkp
metrics:
    - stressor: fiemap
      bogo-ops: 12000
      bogo-ops-per-second-usr-sys-time: 4100.5
      bogo-ops-per-second-real-time: 3999.25
      wall-clock-time: 3.000819
    - stressor: metamix
      bogo-ops: 300
      bogo-ops-per-second-real-time: 100.0
...
"""


@pytest.mark.parametrize("line_ending", [lambda data: data, crlf], ids=["lf", "crlf"])
@pytest.mark.parametrize(("parser", "output", "files", "expected"), [
    # two loop rows: their mean
    ("fs_mark-text", FS_MARK, {}, {"fs_mark.files_per_sec": 55000.0, "fs_mark.app_overhead_us": 10000.0}),
    # -v: per-call timing columns follow the five that are read
    ("fs_mark-text", FS_MARK_VERBOSE, {}, {"fs_mark.files_per_sec": 512.3, "fs_mark.app_overhead_us": 147715.0}),
    # two Time: lines: their mean
    # 400 tasks × 100 messages × 100 bytes = 3906 KiB over the best time 0.218 s (lkp-tests' throughput)
    ("hackbench-text", HACKBENCH, {}, {"hackbench.time_s": 0.23, "hackbench.throughput": 3906 / 0.218}),
    ("perf-bench-text", PERF_MESSAGING, {}, {"perf-bench.total_time_s": 0.091}),
    ("perf-bench-text", PERF_PIPE, {}, {"perf-bench.total_time_s": 0.640, "perf-bench.usecs_per_op": 64.0658,
                                        "perf-bench.ops_per_sec": 15608.0}),
    # one GB/sec line per memcpy implementation
    ("perf-bench-text", PERF_MEMCPY, {}, {"perf-bench.default.GB_per_sec": 33.90842,
                                          "perf-bench.x86-64-movsb.GB_per_sec": 36.303439}),
    # the averaged line, not the per-thread ones
    ("perf-bench-text", PERF_FUTEX, {}, {"perf-bench.ops_per_sec": 5905408.0}),
    # lists are averaged, text and empty lists skipped
    ("lkp-json", LKP_STATS, {}, {"fio.write_iops": 120500.5, "fio.write_clat_mean_us": 150.25,
                                 "fio.time.user_time": 12.0, "fio.workload": 1.2e7}),
    ("lkp-json", b"", {"stats.json": LKP_STATS}, {"fio.write_iops": 120500.5, "fio.write_clat_mean_us": 150.25,
                                                  "fio.time.user_time": 12.0, "fio.workload": 1.2e7}),
    ("stress-ng-yaml", b"", {"stress.yaml": STRESS_NG_YAML},
     {"stress-ng.fiemap.ops": 12000.0, "stress-ng.fiemap.ops_per_sec": 3999.25,
      "stress-ng.metamix.ops": 300.0, "stress-ng.metamix.ops_per_sec": 100.0}),
])
def test_captured_samples(parser: str, output: bytes, files: dict[str, bytes], expected: dict[str, float],
                          line_ending) -> None:
    metrics = parse_output(parser, line_ending(output), {name: line_ending(data) for name, data in files.items()})
    assert metrics == pytest.approx(expected)


def test_unknown_parser_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown output parser 'fio-text'"):
        parse_output("fio-text", b"")
    # the parsers templates may name (rules/templates.py) are the ones implemented
    from triagebot.rules.templates import PARSERS as NAMED
    assert set(PARSERS) == set(NAMED) >= {"fio-json", "sysbench-text", "stress-ng-yaml", "fs_mark-text",
                                          "hackbench-text", "perf-bench-text", "lkp-json", "dbench-text",
                                          "postmark-text", "will-it-scale-csv"}


@pytest.mark.parametrize(("parser", "output", "files", "problem"), [
    ("fio-json", b"fio: pid=0, err=2/file:filesetup.c:80, func=open, error=No such file\n", {},
     "no JSON object in stdout (it ends: 'fio: pid=0"),
    ("fio-json", b'{"jobs": []}', {}, "no jobs"),
    ("fio-json", b'{"jobs": [{"jobname": "x", "error": 5}]}', {}, "job 'x' ended with error 5"),
    ("fio-json", b"", {"a.json": b"{}", "b.json": b"{}"}, "several result files to choose from: a.json, b.json"),
    ("sysbench-text", b"sysbench 1.0.20\n", {}, "no sysbench results"),
    ("sysbench-text", b"CPU speed:\n\nGeneral statistics:\n    total time: 1.0s\n", {},
     "sysbench cpu: no events_per_sec"),
    ("stress-ng-yaml", b"stress-ng: info: [1] dispatching hogs: 1 cpu\n", {}, "no stressor metrics in stdout"),
    ("stress-ng-yaml", b"", {"m.yaml": b"metrics:\n    - stressor: cpu\n      wall-clock-time: 2\n"}, "stressor cpu"),
    ("fs_mark-text", b"#  fs_mark  -d /x\nfs_mark: mkdir failed\n", {}, "no 'FSUse% Count Size Files/sec"),
    ("hackbench-text", b"Running in process mode\n", {}, "no 'Time: N' line"),
    ("perf-bench-text", b"# Running 'sched/messaging' benchmark:\n", {}, "no 'Total time: N [sec]'"),
    ("lkp-json", b'{"kernel": "6.8"}', {}, "no numeric stats"),
    ("lkp-json", b"", {}, "no JSON object in stdout (it is empty)"),
])
def test_output_without_the_metrics_is_an_output_error(parser: str, output: bytes, files: dict[str, bytes],
                                                       problem: str) -> None:
    with pytest.raises(OutputError) as caught:
        parse_output(parser, output, files)
    assert str(caught.value).startswith(f"{parser}: ")
    assert problem in str(caught.value)
