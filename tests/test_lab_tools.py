"""Templates of benchmarks a lab installs itself (rules/reproducers/<tool>.toml with `tool`).

Their parsers are checked against real output: the sample outputs in lkp-tests' spec/fixtures/stats
(read from ../shared/tools/lkp-tests.tar.gz at test time, never copied into the project) must give
the metric names and values lkp-tests' own programs/<tool>/parse gives, as its expected .yaml files
say and, where ruby is installed, as the parse script prints when run. Their plans come from LKP
reports of the stream (../shared/corpus/lkp-stream) and plan only on a host that lists the tool.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.conftest import PROJECT, SHARED
from triagebot.parse.report import parse_message
from triagebot.records.report import Report, Source
from triagebot.reproduce.outputs import OutputError, parse_output
from triagebot.reproduce.plan import HostShape, Plan, Refusal, plan_report
from triagebot.rules.templates import load_templates

SNAPSHOT = SHARED / "tools" / "lkp-tests.tar.gz"
STREAM = SHARED / "corpus" / "lkp-stream"
TEMPLATES = load_templates(PROJECT / "rules")
# tool (the name a host lists it by, LKP's testcase and metric prefix) -> the template's parser
PARSED = {"will-it-scale": "will-it-scale-csv", "filebench": "filebench-text", "fxmark": "fxmark-text",
          "unixbench": "unixbench-text"}
# LKP's own marks of a run that passed or failed, not the benchmark's figures
STATUS = ("test.pass", "test.fail", "Assertion")
# tools whose sample output lkp-tests keeps only as the example heading its parse script
EXAMPLE_ONLY = ("filebench",)


@pytest.fixture(scope="module")
def lkp_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SNAPSHOT.exists():
        pytest.skip(f"{SNAPSHOT} is absent: lkp-tests' parse scripts and sample outputs come from it")
    folder = tmp_path_factory.mktemp("lkp-tests")
    with tarfile.open(SNAPSHOT) as archive:
        members = [member for member in archive.getmembers()
                   if member.name.startswith(("lkp-tests/spec/fixtures/stats/", "lkp-tests/programs/",
                                              "lkp-tests/lib/"))]
        archive.extractall(folder, members=members, filter="tar")
    return folder / "lkp-tests"


def samples(lkp_src: Path, tool: str) -> list[Path]:
    if tool in EXAMPLE_ONLY:
        return [example_output(lkp_src, tool)]
    found = sorted(path.with_suffix("") for path in (lkp_src / "spec/fixtures/stats" / tool).glob("*.yaml"))
    assert found, f"lkp-tests has no sample output of {tool}"
    return found


def example_output(lkp_src: Path, tool: str) -> Path:
    """The real output quoted at the head of programs/<tool>/parse (`# Input example:` and the
    comment lines after it), written out as a file the parsers read."""
    lines = (lkp_src / "programs" / tool / "parse").read_text().splitlines()
    start = lines.index("# Input example:") + 1
    quoted = []
    for line in lines[start:]:
        if not line.startswith("# "):
            break
        quoted.append(line[2:])
    assert quoted, f"programs/{tool}/parse quotes no example"
    path = lkp_src / f"{tool}.example"
    path.write_text("\n".join(quoted) + "\n")
    return path


def stats(text: str) -> dict[str, float]:
    """`name: value` lines of LKP stats, numbers only."""
    found = {}
    for line in text.splitlines():
        name, _, value = line.rpartition(": ")
        try:
            found[name] = float(value)
        except ValueError:
            continue
    return found


def expected(tool: str, sample: Path) -> dict[str, float]:
    return {f"{tool}.{name}": value for name, value in stats(sample.with_suffix(".yaml").read_text()).items()}


@pytest.mark.parametrize("tool", sorted(set(PARSED) - set(EXAMPLE_ONLY)))
def test_the_parser_gives_what_lkp_tests_expects_of_its_sample_outputs(lkp_src: Path, tool: str) -> None:
    parsed_any = False
    for sample in samples(lkp_src, tool):
        want = expected(tool, sample)
        numeric = {name: value for name, value in want.items() if not name.split(".", 1)[1].startswith(STATUS)}
        if not numeric:
            # a run whose every task failed (its stats are the assertion messages): no metric
            with pytest.raises(OutputError):
                parse_output(PARSED[tool], sample.read_bytes())
            continue
        got = parse_output(PARSED[tool], sample.read_bytes())
        assert got == pytest.approx(numeric), sample.name
        parsed_any = True
    assert parsed_any


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby is not installed: lkp-tests' parse scripts are ruby")
@pytest.mark.parametrize("tool", sorted(PARSED))
def test_the_parser_agrees_with_lkp_tests_own_parse_script(lkp_src: Path, tool: str) -> None:
    script = lkp_src / "programs" / tool / "parse"
    for sample in samples(lkp_src, tool):
        printed = subprocess.run([str(script)], stdin=sample.open("rb"), capture_output=True, check=True,
                                 env={**os.environ, "LKP_SRC": str(lkp_src)}, timeout=60).stdout.decode()
        theirs = {f"{tool}.{name}": value for name, value in stats(printed).items() if not name.startswith(STATUS)}
        if theirs:
            assert parse_output(PARSED[tool], sample.read_bytes()) == pytest.approx(theirs), sample.name
        else:
            with pytest.raises(OutputError):
                parse_output(PARSED[tool], sample.read_bytes())


def test_filebench_reads_the_summary_lkp_tests_quotes(lkp_src: Path) -> None:
    # without ruby, the figures the example's IO Summary line states
    got = parse_output("filebench-text", example_output(lkp_src, "filebench").read_bytes())
    assert got == {"filebench.sum_operations": 6002.0, "filebench.sum_operations/s": 3000.256,
                   "filebench.sum_reads/s": 500.0, "filebench.sum_writes/s": 500.0,
                   "filebench.sum_bytes_mb/s": 15.6, "filebench.sum_time_ms/op": 0.181}


# --- planning ---------------------------------------------------------------------------------

@functools.cache
def _stream() -> tuple[Report, ...]:
    return tuple(parse_message(path.read_bytes(), Source("eml", str(path))) for path in sorted(STREAM.glob("*.eml")))


def stream_reports(testcase: str) -> list[Report]:
    if not (STREAM / "INDEX.tsv").exists():
        pytest.skip(f"the LKP stream is absent: {STREAM} not found")
    found = [report for report in _stream() if report.testcase == testcase]
    assert found, f"the stream has no {testcase} report"
    return found


def host(**tools: str) -> HostShape:
    return HostShape(threads=8, tools=tuple(sorted(tools.items())))


def test_a_will_it_scale_report_plans_only_on_a_host_listing_will_it_scale() -> None:
    for report in stream_reports("will-it-scale"):
        refused = plan_report(report, TEMPLATES, host=host())
        assert isinstance(refused, Refusal) and "needs will-it-scale" in refused.reason
        assert any('"will-it-scale"' in item for item in refused.missing)
        plan = plan_report(report, TEMPLATES, host=host(**{"will-it-scale": "/opt/will-it-scale"}))
        assert isinstance(plan, Plan), plan
        parameters = dict(report.parameters)
        # runtest.py <test> <duration> <mode> <no_affinity> <smt> <tasks>, run where the tool is
        assert plan.argv == ("env", "-C", "/opt/will-it-scale", "python3", "./runtest.py", parameters["test"],
                             "60", parameters["mode"], "0", "0", "8")
        assert plan.metric == "per_process_ops" and plan.output_metric == "will-it-scale.per_process_ops"
        assert report.headline is not None and plan.report_metric == report.headline.metric


def test_fxmark_reads_its_binarys_own_report_as_run_fxmark_logs_it(lkp_src: Path) -> None:
    # run-fxmark.py logs bin/fxmark's output under its `## media:fs:test:ncpu:dio` line: without
    # that line (the binary run directly) the same columns are fxmark.<column>
    sample = samples(lkp_src, "fxmark")[0].read_text()
    heading, rest = sample.split("\n", 1)
    assert heading.startswith("## ")
    block = rest.split("\n## ", 1)[0]
    named = {name.replace(f"fxmark.{heading[3:].replace(':', '_')}.", "fxmark."): value
             for name, value in parse_output("fxmark-text", sample.encode()).items()
             if name.startswith(f"fxmark.{heading[3:].replace(':', '_')}.")}
    assert named and parse_output("fxmark-text", block.encode()) == named


def test_fxmark_reports_plan_at_the_core_count_their_headline_names() -> None:
    planned = 0
    for report in stream_reports("fxmark"):
        refused = plan_report(report, TEMPLATES, host=host())
        assert isinstance(refused, Refusal) and "needs fxmark" in refused.reason
        result = plan_report(report, TEMPLATES, host=HostShape(threads=128, tools=(("fxmark", "/opt/fxmark"),)),
                             scratch_dir="/lab/s")
        test = dict(report.parameters)["test"]
        if test.startswith(("dbench_", "filebench_")):  # other programs of fxmark's: not run
            assert isinstance(result, Refusal) and f"test={test} is not one of the choices" in result.reason
            continue
        assert isinstance(result, Plan), result
        assert report.headline is not None
        cores = report.headline.metric.rsplit("_", 2)[-2]
        directio = "1" if dict(report.parameters)["directio"] == "directio" else "0"
        assert result.argv == ("/opt/fxmark/bin/fxmark", "--type", test, "--ncore", cores, "--nbg", "0",
                               "--duration", "50", "--directio", directio, "--root", "/lab/s")
        assert result.report_metric == report.headline.metric and result.output_metric == "fxmark.works/sec"
        assert result.reported_change_percent is not None
        planned += 1
    assert planned


def test_a_parameter_named_only_in_the_headline_metric_is_read_from_it() -> None:
    # older stress-ng reports name the stressor only in the headline (stress-ng.splice.ops_per_sec):
    # the same reading as fxmark's core count, checked against the stressor choices
    older = [report for report in stream_reports("stress-ng") if "test" not in dict(report.parameters)]
    assert older
    for report in older:
        assert report.headline is not None
        stressor = report.headline.metric.split(".")[1]
        plan = plan_report(report, TEMPLATES, host=host())
        assert isinstance(plan, Plan), plan
        assert plan.argv[1] == f"--{stressor}" and plan.report_metric == report.headline.metric
        assert any(report.headline.metric in note for note in plan.notes)  # the plan says where it came from
        hostile = dataclasses.replace(report, headline=dataclasses.replace(
            report.headline, metric="stress-ng.rm-rf.ops_per_sec"))
        refused = plan_report(hostile, TEMPLATES, host=host())
        assert isinstance(refused, Refusal) and "rm-rf is not one of the choices" in refused.reason


def corpus_report(name: str) -> Report:
    path = SHARED / "corpus" / "messages" / name
    if not path.exists():
        pytest.skip(f"the shared corpus is absent: {path} not found")
    return parse_message(path.read_bytes(), Source("eml", str(path)))


def test_a_unixbench_report_runs_its_test_in_the_labs_unixbench_dir() -> None:
    report = corpus_report("lkp-perf_fsnotify-unixbench-3.3pct.eml")
    refused = plan_report(report, TEMPLATES, host=host())
    assert isinstance(refused, Refusal) and "needs unixbench" in refused.reason
    plan = plan_report(report, TEMPLATES, host=host(unixbench="/opt/ub"), scratch_dir="/lab/s")
    assert isinstance(plan, Plan), plan
    assert plan.argv == ("env", "-C", "/opt/ub", "LANG=C", "UB_TMPDIR=/lab/s", "UB_RESULTDIR=/lab/s",
                         "UB_TESTDIR=/lab/s", "./Run", "pipe", "-c", "1", "-i", "6")
    assert plan.report_metric == "unixbench.score" == plan.output_metric and plan.reported_change_percent == -3.3


def test_a_filebench_report_runs_its_workload_copied_onto_the_scratch_dir() -> None:
    for report in stream_reports("filebench"):
        assert isinstance(plan_report(report, TEMPLATES, host=host()), Refusal)
        plan = plan_report(report, TEMPLATES, host=host(filebench="/opt/filebench"), scratch_dir="/lab/s")
        assert isinstance(plan, Plan), plan
        test = dict(report.parameters)["test"]
        assert plan.argv == ("setarch", "-R", "/opt/filebench/bin/filebench", "-f", f"/lab/s/{test}")
        assert plan.setup_argv[0] == "sed" and plan.setup_argv[-1] == f"/opt/filebench/share/filebench/workloads/{test}"
        assert plan.output_metric == "filebench.sum_operations/s" == plan.report_metric
        assert plan.storage_differs  # the report's btrfs/ext4 on a disk: said, not silently dropped


@pytest.mark.skipif(shutil.which("sed") is None, reason="sed is not installed")
def test_the_filebench_setup_points_the_workloads_dir_at_the_scratch_dir(tmp_path: Path) -> None:
    (report, *_) = stream_reports("filebench")
    test = dict(report.parameters)["test"]
    tool = tmp_path / "filebench"
    (tool / "share/filebench/workloads").mkdir(parents=True)
    # a workload in filebench's shape, our own: its $dir line and a line naming $dir
    workload = "set $dir=/tmp\nset $nfiles=10\ndefine fileset name=bigfileset,path=$dir,entries=$nfiles\nrun 60\n"
    (tool / "share/filebench/workloads" / test).write_text(workload)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    plan = plan_report(report, TEMPLATES, host=host(filebench=str(tool)), scratch_dir=str(scratch))
    assert isinstance(plan, Plan)
    subprocess.run(list(plan.setup_argv), check=True, capture_output=True, timeout=60)
    copy = (scratch / test).read_text()
    assert copy == workload.replace("set $dir=/tmp", f"set $dir={scratch}")
    assert (tool / "share/filebench/workloads" / test).read_text() == workload  # the lab's own is untouched


def test_mail_values_outside_the_templates_choices_are_refused_not_run() -> None:
    (report, *_) = stream_reports("will-it-scale")
    wis = host(**{"will-it-scale": "/opt/will-it-scale"})
    for key, value in (("test", "open2; rm -rf /"), ("test", "../../bin/sh"), ("mode", "process $(id)"),
                       ("nr_task", "8 9")):
        hostile = dataclasses.replace(report, parameters=tuple(
            (name, value if name == key else old) for name, old in report.parameters) + (
            ((key, value),) if key not in dict(report.parameters) else ()))
        result = plan_report(hostile, TEMPLATES, host=wis)
        assert isinstance(result, Refusal), (key, value)
        assert key in result.reason


def test_the_tool_path_comes_from_the_host_and_threads_from_its_threads() -> None:
    (report, *_) = stream_reports("will-it-scale")
    plan = plan_report(report, TEMPLATES, host=HostShape(threads=2, tools=(("will-it-scale", "/srv/wis"),)))
    assert isinstance(plan, Plan)
    assert plan.argv[2] == "/srv/wis" and plan.argv[-1] == "2"
    assert any("nr_task 2 from nr_task 100%" in item for item in plan.scaled)


# --- the `tool` key -----------------------------------------------------------------------------

_TOOL_TEMPLATE = """
program = "runtest.py"
tool = "will-it-scale"
parser = "will-it-scale-csv"
argv = ["env", "-C", "{tool}", "python3", "./runtest.py"]
primary_metric = "ops"
[[metrics]]
name = "ops"
better = "higher"
"""


@pytest.mark.parametrize(("text", "problem"), [
    (_TOOL_TEMPLATE.replace('"./runtest.py"', '"./other.py"'), "must run the program 'runtest.py'"),
    (_TOOL_TEMPLATE.replace('tool = "will-it-scale"\n', ""), "must start with the program"),
    (_TOOL_TEMPLATE.replace('tool = "will-it-scale"', 'tool = "a b"'), "tool must be the name"),
    (_TOOL_TEMPLATE.replace("[[metrics]]", 'setup_argv = ["rm", "-rf", "{tool}"]\n[[metrics]]'),
     "setup_argv must run the program"),
])
def test_a_tool_template_must_run_its_program(text: str, problem: str) -> None:
    from triagebot.errors import RulesError
    from triagebot.rules.loader import parse_text
    from triagebot.rules.templates import template_from
    assert template_from("t", parse_text(_TOOL_TEMPLATE, "t.toml")).tool == "will-it-scale"
    with pytest.raises(RulesError, match=re.escape(problem)):
        template_from("t", parse_text(text, "t.toml"))


# --- real runs, where the lab's tool is installed -------------------------------------------------

def _installed(tool: str, marker: str) -> Path:
    """The directory of a tool the lab built: TRIAGEBOT_<TOOL> (will-it-scale: TRIAGEBOT_WILL_IT_SCALE),
    else /opt/<tool>; skipped when `marker` is not in it."""
    variable = "TRIAGEBOT_" + tool.upper().replace("-", "_")
    folder = Path(os.environ.get(variable, f"/opt/{tool}"))
    if not (folder / marker).exists():
        pytest.skip(f"no {tool} built at {folder} (no {marker}): a lab installs it itself; set {variable} "
                    "to its directory to run this test")
    return folder


def _real_rerun(tool: str, folder: Path, report: Report, tmp_path: Path, runs: int = 3):
    from triagebot.reproduce.executors.local import LocalExecutor
    from triagebot.reproduce.limits import host_shape
    from triagebot.reproduce.runner import rerun
    from triagebot.rules.hosts import Host
    from triagebot.verdict.sequential import LookSchedule

    lab = Host(name="lab", reach="local", cpu_model="test", threads=2, sockets=1, memory_gb=24, disk="ssd",
               scratch_dir=str(tmp_path / "scratch"), tools=((tool, str(folder)),))
    plan = plan_report(report, TEMPLATES, host=host_shape(lab))
    assert isinstance(plan, Plan), plan
    record = rerun(plan, lab, LocalExecutor(lab.scratch_dir), "v6.8", "v6.8", rounds=LookSchedule(rounds=(runs,)))
    assert record.status == "done", record.error
    assert len(record.samples) == 2 * runs and all(sample.value > 0 for sample in record.samples)
    return plan, record


def _from_its_parameters(report: Report, **more: str) -> Report:
    """The report planned from its parameters (not its job file), with `more` of them."""
    return dataclasses.replace(report, reproducers=(), parameters=report.parameters + tuple(more.items()))


def test_a_real_will_it_scale_run_through_the_runner(tmp_path: Path) -> None:
    folder = _installed("will-it-scale", "open2_processes")
    if "<duration>" not in (folder / "runtest.py").read_text():
        pytest.skip(f"{folder}/runtest.py is will-it-scale's own, without lkp-tests' will-it-scale.patch")
    (report, *_) = [item for item in stream_reports("will-it-scale") if dict(item.parameters)["test"] == "open2"]
    _, record = _real_rerun("will-it-scale", folder, _from_its_parameters(report, runtime="3s"), tmp_path)
    first = record.samples[0].metrics
    # per task: the operations of the two tasks together, halved (runtest.py's CSV row)
    assert first["will-it-scale.per_process_ops"] == int(first["will-it-scale.2.processes"] / 2)


def test_a_real_fxmark_run_through_the_runner(tmp_path: Path) -> None:
    folder = _installed("fxmark", "bin/fxmark")
    (report, *_) = [item for item in stream_reports("fxmark") if dict(item.parameters)["test"] == "MWCL"]
    plan, record = _real_rerun("fxmark", folder, _from_its_parameters(report, duration="2s"), tmp_path)
    assert plan.argv[plan.argv.index("--ncore") + 1] == "2"  # the headline's core count, fitted to the host
    first = record.samples[0].metrics
    assert first["fxmark.ncpu"] == 2 and first["fxmark.works/sec"] == pytest.approx(
        first["fxmark.works"] / first["fxmark.secs"], rel=1e-3)


def test_a_real_filebench_run_through_the_runner(tmp_path: Path) -> None:
    folder = _installed("filebench", "bin/filebench")
    if not (folder / "share/filebench/workloads/randomwrite.f").exists():
        pytest.skip(f"{folder} has no share/filebench/workloads/randomwrite.f")
    (report, *_) = [item for item in stream_reports("filebench") if dict(item.parameters)["test"] == "randomwrite.f"]
    # each sample is the workload's own `run 60`: one a side
    _, record = _real_rerun("filebench", folder, report, tmp_path, runs=1)
    first = record.samples[0].metrics
    assert first["filebench.sum_writes/s"] > 0 and first["filebench.sum_reads/s"] == 0  # random writes only
    assert record.samples[0].stdout.count("IO Summary:") == 1


def test_a_real_unixbench_run_through_the_runner(tmp_path: Path) -> None:
    folder = _installed("unixbench", "pgms/pipe")
    report = corpus_report("lkp-perf_fsnotify-unixbench-3.3pct.eml")
    # each sample is six UnixBench iterations of about ten seconds: one a side
    plan, record = _real_rerun("unixbench", folder, report, tmp_path, runs=1)
    assert plan.output_metric == "unixbench.score"
    first = record.samples[0].metrics
    assert first["unixbench.score"] > 0 and first["unixbench.throughput"] > first["unixbench.score"]
