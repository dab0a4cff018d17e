"""Native templates for what Debian ships, planned from LKP reports and run for real.

Planning (pure): LKP's count suffixes (`1t`, `8t`, `1x`, `10000000ops`), fsmark's test_size
divided as lkp-tests' own programs/fsmark/run divides it, stress-ng stressors taken from the
host's `stress-ng --stressors`. Real runs: each template's plan runs through the local executor
in a scratch directory as the runner runs it, and its parser reads the real output; a test
skips, saying which Debian package to install, where the tool is missing.
"""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from triagebot.records.report import Headline, Report, Source
from triagebot.records.report import TestMachine as Machine
from triagebot.reproduce.executors.local import LocalExecutor
from triagebot.reproduce.outputs import OutputError, parse_output
from triagebot.reproduce.plan import HostShape, Plan, Refusal, plan_command, plan_report
from triagebot.rules.self_describe import stressors_from, stressors_output
from triagebot.rules.templates import load_templates

TEMPLATES = load_templates(PROJECT / "rules")
HOST = HostShape(threads=2, memory_gb=24, scratch_gb=40)


def lkp_report(testcase: str, parameters: dict[str, str], headline: Headline | None = None) -> Report:
    return Report(message_id="native@example", in_reply_to=None, subject="s", from_="f", date=None,
                  source=Source("text"), kind="lkp-regression", testcase=testcase,
                  parameters=tuple(parameters.items()), headline=headline)


def option(plan: Plan, flag: str) -> str:
    return plan.argv[plan.argv.index(flag) + 1]


# --- count suffixes ---------------------------------------------------------------------------

def test_lkp_thread_counts_with_a_t_suffix_are_counts() -> None:
    # fsmark `nr_threads: 1t` (a count, not a share of the host)
    one = plan_report(lkp_report("fsmark", {"nr_threads": "1t", "filesize": "4K", "test_size": "40M",
                                            "iterations": "1x", "sync_method": "fsyncBeforeClose"}), TEMPLATES,
                      host=HOST)
    assert isinstance(one, Plan), one
    assert (option(one, "-t"), option(one, "-n"), option(one, "-L"), option(one, "-S")) == ("1", "10240", "1", "1")
    # fsmark `32t` on a 2-thread host: fitted to the host, and said
    many = plan_report(lkp_report("fsmark", {"nr_threads": "32t", "filesize": "8K", "test_size": "400M"}),
                       TEMPLATES, host=HOST)
    assert isinstance(many, Plan) and option(many, "-t") == "2"
    assert any(item.startswith("threads 32 → 2") for item in many.scaled)
    # fio `nr_task: 8t`
    fio = plan_report(lkp_report("fio-basic", {"nr_task": "8t", "rw": "read", "bs": "2M", "ioengine": "sync",
                                               "test_size": "1G", "runtime": "30s"}), TEMPLATES, host=HOST)
    assert isinstance(fio, Plan) and "--numjobs=8" in fio.argv  # 8 jobs (the template allows 4 a thread)
    # a suffix that is not LKP's is still refused
    wrong = plan_report(lkp_report("fsmark", {"nr_threads": "2q", "test_size": "40M"}), TEMPLATES, host=HOST)
    assert isinstance(wrong, Refusal) and "nr_threads=2q is not a whole number" in wrong.reason


def test_perf_bench_loops_in_ops_and_the_threads_mode() -> None:
    plan = plan_report(lkp_report("perf-bench-sched-pipe", {"loops": "10000000ops", "mode": "threads"},
                                  Headline("perf-bench-sched-pipe.ops_per_sec", -4.5, "regression")),
                       TEMPLATES, host=HOST)
    assert isinstance(plan, Plan), plan
    assert plan.argv == ("perf", "bench", "sched", "pipe", "--loop", "10000000", "--threaded")
    assert plan.metric == "ops_per_sec" and plan.report_metric == "perf-bench-sched-pipe.ops_per_sec"


def test_fsmark_test_size_is_divided_as_lkp_divides_it() -> None:
    # 9-byte files count as 4K (LKP's floor); 16G / 4K / 1 thread / 4 iterations is above
    # fs_mark's limit of 1000000 files, which LKP caps at
    plan = plan_report(lkp_report("fsmark", {"nr_threads": "1t", "filesize": "9B", "test_size": "16G",
                                             "iterations": "4", "nr_directories": "16d",
                                             "nr_files_per_directory": "256fpd", "sync_method": "NoSync"}),
                       TEMPLATES, host=HOST)
    assert isinstance(plan, Plan), plan
    assert (option(plan, "-s"), option(plan, "-n"), option(plan, "-D"), option(plan, "-N")) == \
        ("9", "1000000", "16", "256")
    assert any("size counted as 4096, as LKP does" in note for note in plan.notes)
    assert any("→ 1000000, the most LKP's fsmark runs with" in note for note in plan.notes)
    # a total bigger than the host's scratch space is scaled down to it, and the plan says so
    small = plan_report(lkp_report("fsmark", {"nr_threads": "1t", "filesize": "4M", "test_size": "24G",
                                              "iterations": "1x"}), TEMPLATES,
                        host=HostShape(threads=2, memory_gb=24, scratch_gb=8))
    assert isinstance(small, Plan), small
    assert int(option(small, "-n")) * 4 << 20 <= 4 << 30
    assert any(item.startswith("num_files 6144 →") and "scratch space" in item for item in small.scaled)


# --- stress-ng stressors from the host --------------------------------------------------------

def test_stressors_are_the_hosts_own() -> None:
    report = lkp_report("stress-ng", {"test": "af-alg", "nr_threads": "1", "testtime": "60s"},
                        Headline("stress-ng.af-alg.ops_per_sec", -12.0, "regression"))
    offered = HostShape(threads=2, stressors=("af-alg", "fiemap", "getdent", "msg"))
    plan = plan_report(report, TEMPLATES, host=offered)
    assert isinstance(plan, Plan) and plan.argv[:3] == ("stress-ng", "--af-alg", "1")
    assert plan.output_metric == "stress-ng.af-alg.ops_per_sec"
    # a stressor this host's stress-ng lacks is refused by name
    lacking = plan_report(report, TEMPLATES, host=HostShape(threads=2, stressors=("fiemap", "msg")))
    assert isinstance(lacking, Refusal) and lacking.reason == (
        "LKP parameter test=af-alg: the host's stressors (2 of them, as its own tool lists them) have no af-alg")
    assert lacking.missing == ("a host whose stressors include af-alg",)
    # a host whose stress-ng list is unknown is planned the template's own list
    unknown = plan_report(report, TEMPLATES, host=HostShape(threads=2))
    assert isinstance(unknown, Refusal) and "test=af-alg is not one of the choices (fiemap," in unknown.reason
    # a pasted command is read against the host's list too
    assert isinstance(plan_command("stress-ng --af-alg 2 --timeout 5s", TEMPLATES, host=offered), Plan)
    assert isinstance(plan_command("stress-ng --getdents 2 --timeout 5s", TEMPLATES, host=offered), Refusal)


def test_stressors_output_is_read_strictly() -> None:
    assert stressors_from("access af-alg affinity getdent\n") == ("access", "af-alg", "affinity", "getdent")
    assert stressors_from("") is None and stressors_from(None) is None
    assert stressors_from("stress-ng: error: unrecognized option '--stressors'") is None


def test_this_hosts_stress_ng_lists_its_stressors() -> None:
    stress_ng = shutil.which("stress-ng")
    if stress_ng is None:
        pytest.skip("stress-ng is not installed (Debian package stress-ng)")
    names = stressors_from(stressors_output(stress_ng))
    assert names is not None and "getdent" in names and "getdents" not in names and "fiemap" in names


# --- real runs ----------------------------------------------------------------------------------

def need(tool: str, package: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (Debian package {package})")


def run_plan(plan: Plan, root: Path) -> dict[str, float]:
    """One sample of `plan` as the runner takes it: a fresh scratch dir (under a long path) as
    cwd and `{scratch}`, setup, the command, cleanup, the collected files to the parser."""
    with LocalExecutor(str(root / ("scratch-root-longer-than-most-benchmarks-like-" * 2))) as executor:
        scratch = executor.make_scratch()

        def filled(argv: tuple[str, ...]) -> list[str]:
            return [word.replace("{scratch}", scratch) for word in argv]
        for path, text in plan.files:
            executor.put_file(path.replace("{scratch}", scratch), text.encode())
        if plan.setup_argv:
            setup = executor.run(filled(plan.setup_argv), timeout=120, cwd=scratch)
            assert setup.ok, setup.stderr
        completed = executor.run(filled(plan.argv), timeout=300, cwd=scratch)
        assert completed.ok, completed.stderr
        if plan.cleanup_argv:
            executor.run(filled(plan.cleanup_argv), timeout=120, cwd=scratch)
        files = {path: executor.read_file(path) for path in filled(plan.collect)}
        metrics = parse_output(plan.parser, completed.stdout, files)
        assert metrics[plan.output_metric] > 0, metrics
        return metrics


def test_real_stress_ng_stressor_from_the_host(tmp_path: Path) -> None:
    need("stress-ng", "stress-ng")
    host = HostShape(threads=2, stressors=stressors_from(stressors_output(shutil.which("stress-ng"))))
    plan = plan_report(lkp_report("stress-ng", {"test": "getrandom", "nr_threads": "1", "testtime": "2s"},
                                  Headline("stress-ng.getrandom.ops_per_sec", -5.0, "regression")),
                       TEMPLATES, host=host)
    assert isinstance(plan, Plan), plan
    assert "stress-ng.getrandom.ops_per_sec" in run_plan(plan, tmp_path)


def test_real_fs_mark_from_an_lkp_report(tmp_path: Path) -> None:
    need("fs_mark", "fsmark")
    plan = plan_report(lkp_report("fsmark", {"nr_threads": "2t", "filesize": "4K", "test_size": "1600K",
                                             "iterations": "1x", "sync_method": "NoSync",
                                             "nr_files_per_directory": "1fpd"},
                                  Headline("fsmark.files_per_sec", -5.7, "regression")), TEMPLATES, host=HOST)
    assert isinstance(plan, Plan), plan
    # each thread its own directory, as LKP runs fs_mark; -D derived from -N as LKP derives it
    assert plan.argv[:5] == ("fs_mark", "-d", "fs-1", "-d", "fs-2")
    assert (option(plan, "-n"), option(plan, "-t"), option(plan, "-D"), option(plan, "-N")) == ("200", "2", "200", "1")
    assert plan.report_metric == "fsmark.files_per_sec"
    assert run_plan(plan, tmp_path)["fs_mark.files_per_sec"] > 0


def test_a_pasted_fs_mark_command_keeps_its_one_directory() -> None:
    plan = plan_command("fs_mark -d /mnt/x -t 2 -n 100 -s 4096", TEMPLATES, host=HOST)
    assert isinstance(plan, Plan) and plan.argv.count("-d") == 1 and option(plan, "-t") == "2"


def test_real_dbench(tmp_path: Path) -> None:
    need("dbench", "dbench")
    lkp = plan_report(lkp_report("dbench", {"nr_threads": "100%", "disk": "1HDD", "fs": "btrfs", "fs2": "nfs"},
                                 Headline("dbench.max_latency", -99.9, "improvement")), TEMPLATES, host=HOST)
    assert isinstance(lkp, Plan), lkp
    assert lkp.argv == ("dbench", "-t", "60", "-D", ".", "2")
    assert (lkp.metric, lkp.better, lkp.output_metric) == ("max_latency_ms", "lower", "dbench.max_latency")
    assert any("time 600 → 60" in item for item in lkp.scaled)
    assert any(note.startswith("LKP parameter fs2=nfs: ") for note in lkp.notes)
    short = plan_command("dbench -t 2", TEMPLATES, host=HOST)
    assert isinstance(short, Plan), short
    metrics = run_plan(short, tmp_path)
    assert metrics["dbench.max_latency"] > 0 and metrics["dbench.clients"] == 1


def test_real_postmark(tmp_path: Path) -> None:
    need("postmark", "postmark")
    plan = plan_report(lkp_report("postmark", {"number": "200n", "trans": "1000s", "subdirs": "10d",
                                               "disk": "1HDD", "fs": "ext4", "fs1": "nfsv4"},
                                  Headline("postmark.transactions", -15.2, "regression")), TEMPLATES, host=HOST)
    assert isinstance(plan, Plan), plan
    [(path, text)] = plan.files
    assert path == "{scratch}/postmark.conf" and plan.argv == ("postmark", "postmark.conf")
    assert "set number 200\nset transactions 1000\nset subdirectories 10\nset report terse\n" in text
    assert plan.report_metric == "postmark.transactions" and plan.reported_change_percent == -15.2
    assert any(note.startswith("postmark times in whole seconds") for note in plan.notes)
    metrics = run_plan(plan, tmp_path)
    assert metrics["postmark.transactions"] > 0 and metrics["postmark.data_written"] > 0


def test_real_sysbench_fileio_under_its_lkp_name(tmp_path: Path) -> None:
    need("sysbench", "sysbench")
    lkp = plan_report(lkp_report("sysbench-fileio", {"period": "600s", "nr_threads": "100%", "size": "64G",
                                                     "filenum": "1024f", "rwmode": "rndrw", "iomode": "sync"},
                                 Headline("sysbench-fileio.write_operations/s", -5.2, "regression")),
                      TEMPLATES, host=HOST)
    assert isinstance(lkp, Plan) and lkp.template == "sysbench-fileio", lkp
    assert lkp.report_metric == "sysbench-fileio.write_operations/s" and lkp.metric == "writes_per_sec"
    short = plan_command("sysbench fileio --file-test-mode=rndrw --file-num=4 --file-total-size=16M --time=2 run",
                         TEMPLATES, host=HOST)
    assert isinstance(short, Plan), short
    assert run_plan(short, tmp_path)["sysbench.fileio.writes_per_sec"] > 0


def test_real_perf_bench_sched_pipe_with_ops_loops(tmp_path: Path) -> None:
    need("perf", "linux-perf")
    plan = plan_report(lkp_report("perf-bench-sched-pipe", {"loops": "20000ops", "mode": "threads"},
                                  Headline("perf-bench-sched-pipe.ops_per_sec", -4.5, "regression")),
                       TEMPLATES, host=HOST)
    assert isinstance(plan, Plan) and plan.argv[-3:] == ("--loop", "20000", "--threaded"), plan
    probe = LocalExecutor(str(tmp_path / "probe"))
    with probe:
        check = probe.run(["perf", "bench", "sched", "pipe", "--loop", "10"], timeout=30, cwd=probe.make_scratch())
    if not check.ok:
        pytest.skip(f"perf bench cannot run here: {check.stderr.decode(errors='replace').strip()[-200:]}")
    assert run_plan(plan, tmp_path)["perf-bench.ops_per_sec"] > 0


def test_real_hackbench(tmp_path: Path) -> None:
    need("hackbench", "rt-tests")
    plan = plan_report(lkp_report("hackbench", {"nr_threads": "50%", "mode": "process", "ipc": "socket",
                                                "loops": "20", "fds": "10", "iterations": "4"}),
                       TEMPLATES, host=HOST)
    assert isinstance(plan, Plan), plan
    assert plan.argv == ("hackbench", "--groups", "1", "--loops", "20", "--fds", "10")
    assert any(note.startswith("LKP parameter iterations=4 has no counterpart") for note in plan.notes)
    assert run_plan(plan, tmp_path)["hackbench.time_s"] > 0


# --- captured output of the real tools (this machine's dbench 4.0, postmark 1.51) --------------

DBENCH = b"""dbench version 4.00 - Copyright Andrew Tridgell 1999-2004

Running for 3 seconds with load '/usr/share/dbench/client.txt' and minimum warmup 0 secs
   1      1064    83.17 MB/sec  execute   1 sec  latency 16.994 ms
   0  cleanup   3 sec

 Operation      Count    AvgLat    MaxLat
 ----------------------------------------
 NTCreateX       5005     0.138    10.005
 Flush            353     4.543    16.994

Throughput 55.605 MB/sec  1 clients  1 procs  max_latency=17.006 ms
"""

POSTMARK = b"""PostMark v1.51 : 8/14/01
Reading configuration from file 'postmark.conf'
Current configuration is:
The base number of files is 100
Transactions: 500
Report format is terse.
Creating subdirectories...Done
Creating files...Done
Performing transactions..........Done
Deleting files...Done
Deleting subdirectories...Done
1 1 500.00 337.00 100.00 237.00 235.00 265.00 337.00 74.00 263.00 3810646.00 5553920.00
pm>"""


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_dbench_and_postmark_parsers_on_real_output(crlf: bool) -> None:
    def shaped(data: bytes) -> bytes:
        return data.replace(b"\n", b"\r\n") if crlf else data
    dbench = parse_output("dbench-text", shaped(DBENCH))
    assert dbench["dbench.throughput_MB/s"] == 55.605 and dbench["dbench.max_latency"] == 17.006
    postmark = parse_output("postmark-text", shaped(POSTMARK))
    assert postmark["postmark.transactions"] == 500.0 and postmark["postmark.files_created"] == 337.0
    assert postmark["postmark.data_written"] == 5553920.0 and postmark["postmark.total_seconds"] == 1.0


def test_dbench_and_postmark_parsers_refuse_output_without_results() -> None:
    with pytest.raises(OutputError, match="no 'Throughput"):
        parse_output("dbench-text", DBENCH.rsplit(b"Throughput", 1)[0])
    with pytest.raises(OutputError, match="no terse report line"):
        parse_output("postmark-text", POSTMARK.replace(b"1 1 500.00", b"Time: 1 second"))


# --- older reports: the stressor only in the headline ----------------------------------------

def test_a_class_report_runs_the_stressor_its_headline_names() -> None:
    # 2020-21 reports give `class: filesystem` and no test; the headline names the stressor
    report = lkp_report("stress-ng", {"nr_threads": "10%", "disk": "1HDD", "testtime": "30s", "class": "filesystem",
                                      "fs": "btrfs"}, Headline("stress-ng.fallocate.ops_per_sec", 29.2, "improvement"))
    plan = plan_report(report, TEMPLATES, host=HostShape(threads=2, stressors=("fallocate", "splice")))
    assert isinstance(plan, Plan), plan
    assert plan.argv[:5] == ("stress-ng", "--fallocate", "1", "--timeout", "30s")
    # every LKP run passes --verify and --no-rand-seed (lkp-tests programs/stress-ng/run)
    assert "--verify" in plan.argv and "--no-rand-seed" in plan.argv
    assert any(note.startswith("the report's parameters name no test; its headline metric "
                               "stress-ng.fallocate.ops_per_sec names test=fallocate: LKP ran every stressor")
               for note in plan.notes)
    # a headline of another shape names nothing: still refused, saying what is missing
    other = plan_report(dataclasses.replace(report, headline=Headline("vmstat.cpu.id", 3.0, "regression")),
                        TEMPLATES, host=HostShape(threads=2, stressors=("fallocate",)))
    assert isinstance(other, Refusal) and "names no test" in other.reason


def test_fs_mark_threads_stop_at_its_limit_of_64_on_a_big_host() -> None:
    big = HostShape(threads=224, memory_gb=512, scratch_gb=2000)
    plan = plan_report(lkp_report("fsmark", {"nr_threads": "100%", "filesize": "4K", "test_size": "1G"}),
                       TEMPLATES, host=big)
    assert isinstance(plan, Plan), plan
    assert option(plan, "-t") == "64" and plan.argv.count("-d") == 64
    assert any(item.startswith("threads 224 → 64 (the template's maximum") for item in plan.scaled)


def test_a_share_of_threads_divides_test_size_by_the_reports_machine() -> None:
    # 10% of the report's 192 threads is 19: each fs_mark thread writes what each of LKP's did
    report = dataclasses.replace(
        lkp_report("fsmark", {"nr_threads": "10%", "filesize": "9B", "test_size": "16G", "iterations": "4"}),
        test_machine=Machine(description="192 threads 2 sockets", threads=192, sockets=2))
    plan = plan_report(report, TEMPLATES, host=HOST)
    assert isinstance(plan, Plan), plan
    assert option(plan, "-n") == str((16 << 30) // 4096 // 19 // 4) and option(plan, "-t") == "1"
    assert any("(the report's 9 × 19 × 4)" in note for note in plan.notes)
