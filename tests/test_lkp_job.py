"""Planning LKP reports for `lkp run` on a host with lkp-tests (triagebot.reproduce.lkp_job).

lkp-tests is unpacked from the shared snapshot; the reports are real ones of the LKP stream and
our own lab fixture. Each case says what the atomic job must hold, or why it is refused.
"""
from __future__ import annotations

import dataclasses
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURES, PROJECT, SHARED
from triagebot.parse.report import parse_message
from triagebot.records.report import Report, Reproducer, Source
from triagebot.reproduce.plan import HostShape, Plan, Refusal, plan_report
from triagebot.rules.templates import load_templates

SNAPSHOT = SHARED / "tools" / "lkp-tests.tar.gz"
STREAM = SHARED / "corpus" / "lkp-stream"
LAB_REPORT = FIXTURES / "lab" / "lkp-fio-basic-regression.eml"
IO_URING = "202506121643.6753f7b8-lkp@intel.com.eml"  # stress-ng io-uring, no disk
FSMARK = "202412271641.cfba5666-lkp@intel.com.eml"  # fsmark on 1HDD btrfs, 32t threads
AIM7 = "202403112002.cc4b1158-oliver.sang@intel.com.eml"  # aim7 from jobs/aim7-fs-1brd.yaml, a {{ }} load
NETPERF = "20210525064427.GC7744@xsang-OptiPlex-9020.eml"  # an attached job.yaml of a cs-localhost cluster
FALLOCATE = "202506101357.7ada85f6-lkp@intel.com.eml"  # stress-ng fallocate: no mode axis in the report


@pytest.fixture(scope="module")
def lkp_tests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SNAPSHOT.exists():
        pytest.skip(f"{SNAPSHOT} is absent (the shared lkp-tests snapshot)")
    root = tmp_path_factory.mktemp("lkp")
    with tarfile.open(SNAPSHOT) as archive:
        archive.extractall(root, filter="tar")
    return root / "lkp-tests"


@pytest.fixture(scope="module")
def templates():
    return load_templates(PROJECT / "rules")


def stream(name: str) -> Report:
    path = STREAM / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared LKP stream)")
    return parse_message(path.read_bytes(), Source("eml", str(path)))


def host(lkp_tests: Path | None, **facts) -> HostShape:
    tools = (("lkp-tests", str(lkp_tests)),) if lkp_tests else ()
    return HostShape(threads=2, memory_gb=24, scratch_gb=20, tools=tools, **facts)


def job_of(plan: Plan) -> dict:
    (path, text), = plan.files
    assert path == "{scratch}/job.yaml"
    return yaml.safe_load(text)


def test_a_stress_ng_report_runs_its_one_stressor(lkp_tests: Path, templates) -> None:
    plan = plan_report(stream(IO_URING), templates, host=host(lkp_tests))
    assert isinstance(plan, Plan) and plan.template == "lkp" and plan.source == "lkp-tests"
    assert plan.argv == (str(lkp_tests / "bin" / "lkp"), "run", "{scratch}/job.yaml")
    assert plan.cleanup_argv == (str(lkp_tests / "bin" / "lkp"), "rm-path", "-y", "{scratch}/result")
    assert plan.collect == ("{scratch}/result/stats.json",) and plan.parser == "lkp-json"
    # exactly the report's headline metric, better as a regression of -74% says
    assert plan.metric == plan.output_metric == "stress-ng.io-uring.ops_per_sec" and plan.better == "higher"
    job = job_of(plan)
    assert job["stress-ng"] == {"test": "io-uring"}  # the list of ~300 stressors narrowed to one
    assert job["nr_threads"] == "100%" and job["testtime"] == "60s" and job["testcase"] == "stress-ng"
    assert job["memory"] == "24G" and job["arch"] == "x86_64"  # from the host
    assert not any(isinstance(value, list) for value in job.values())  # atomic
    assert "perf-profile" not in job and "mount_points" not in job  # no monitors; no disk asked for


def test_storage_comes_from_the_host_never_from_the_mail(lkp_tests: Path, templates) -> None:
    report = stream(FSMARK)
    without = plan_report(report, templates, host=host(lkp_tests))
    assert isinstance(without, Plan)
    job = job_of(without)
    assert job["mount_points"] == "{scratch}" and "disk" not in job and "fs" not in job
    assert without.storage_differs and "disk=1HDD fs=btrfs" in without.storage_differs[0]
    assert job["fsmark"]["nr_directories"] == "16d" and job["nr_threads"] == "32t"  # lkp reads its counts
    with_disk = plan_report(report, templates, host=host(lkp_tests, scratch_devices=("/dev/vdb", "/dev/vdc")))
    assert isinstance(with_disk, Plan)
    job = job_of(with_disk)
    assert job["hdd_partitions"] == "/dev/vdb" and job["disk"] == "1HDD" and job["fs"] == "btrfs"
    assert "mount_points" not in job and not with_disk.storage_differs
    # partitions, rootfs or kconfig written in a mail are never used
    hostile = dataclasses.replace(report, parameters=report.parameters + (
        ("hdd_partitions", "/dev/sda"), ("rootfs", "evil"), ("kconfig", "evil")))
    plan = plan_report(hostile, templates, host=host(lkp_tests))
    assert isinstance(plan, Plan)
    job = job_of(plan)
    assert "hdd_partitions" not in job and "rootfs" not in job and "kconfig" not in job


@pytest.mark.parametrize("key, value, reason", [
    ("test", "io-uring;reboot", "holds characters an LKP value never has"),  # shell syntax
    ("test", "$(reboot)", "holds characters an LKP value never has"),
    ("test", "-rf", "holds characters an LKP value never has"),  # an option, not a value
    ("PATH", "/tmp/evil", "is not a plain LKP parameter name"),  # would be exported to lkp's programs
    ("test", "a" * 200, "holds characters an LKP value never has"),
])
def test_mail_values_outside_the_plain_charset_are_refused(lkp_tests: Path, templates, key: str, value: str,
                                                           reason: str) -> None:
    report = stream(IO_URING)
    hostile = dataclasses.replace(report, parameters=tuple(item for item in report.parameters if item[0] != key)
                                  + ((key, value),))
    refused = plan_report(hostile, templates, host=host(lkp_tests))
    assert isinstance(refused, Refusal) and reason in refused.reason


def test_an_expression_of_lkp_tests_takes_the_reports_value(lkp_tests: Path, templates) -> None:
    report = stream(AIM7)
    plan = plan_report(report, templates, host=host(lkp_tests))
    assert isinstance(plan, Plan)
    assert job_of(plan)["aim7"] == {"test": "disk_cp", "load": 1500}  # `load: {{ … }}` in lkp-tests
    without_load = dataclasses.replace(report, parameters=tuple(item for item in report.parameters
                                                                if item[0] != "load"))
    refused = plan_report(without_load, templates, host=host(lkp_tests))
    assert isinstance(refused, Refusal) and "computes LKP parameter load from an expression" in refused.reason


def test_an_axis_the_report_does_not_list_is_left_out(lkp_tests: Path, templates) -> None:
    plan = plan_report(stream(FALLOCATE), templates, host=host(lkp_tests))
    assert isinstance(plan, Plan)
    job = job_of(plan)
    assert job["stress-ng"]["test"] == "fallocate" and "mode" not in job["stress-ng"]
    assert any("the report lists no mode" in note for note in plan.notes)


def test_an_attached_job_yaml_keeps_only_what_lkp_run_needs(lkp_tests: Path, templates) -> None:
    report = stream(NETPERF)
    assert any(item.kind == "lkp-job" and item.content for item in report.reproducers)
    plan = plan_report(report, templates, host=host(lkp_tests))
    assert isinstance(plan, Plan) and plan.source == "job.yaml"
    job = job_of(plan)
    # the cs-localhost cluster's server and client roles on the one host
    assert job["netperf"] == {"test": "TCP_CRR"} and "netserver" in job and job["ip"] == "ipv4"
    assert "LKP_SERVER" not in job and "kernel" not in job and "vmstat" not in job and "testbox" not in job
    assert plan.metric == "netperf.Throughput_tps" and plan.better == "higher"


def test_a_job_yaml_with_a_shell_value_is_refused(lkp_tests: Path, templates) -> None:
    report = stream(IO_URING)
    job = "suite: stress-ng\ntestcase: stress-ng\nnr_threads: 100%\nstress-ng:\n  test: io-uring`reboot`\n"
    attached = dataclasses.replace(report, reproducers=(Reproducer(kind="lkp-job", command=None, content=job),))
    refused = plan_report(attached, templates, host=host(lkp_tests))
    assert isinstance(refused, Refusal) and "stress-ng.test is not an atomic plain value" in refused.reason


def test_without_lkp_tests_the_native_templates_plan(lkp_tests: Path, templates) -> None:
    plan = plan_report(stream(IO_URING), templates, host=host(None))
    assert isinstance(plan, Plan) and plan.template == "stress-ng"
    # a testcase lkp-tests has no job for falls back to the native templates too
    report = parse_message(LAB_REPORT.read_bytes(), Source("eml", str(LAB_REPORT)))
    unknown = dataclasses.replace(report, testcase="sysbench-nonesuch")
    assert not (isinstance(result := plan_report(unknown, templates, host=host(lkp_tests)), Plan)
                and result.template == "lkp")


def test_sizes_are_fitted_to_the_hosts_scratch_space(lkp_tests: Path, templates) -> None:
    report = parse_message(LAB_REPORT.read_bytes(), Source("eml", str(LAB_REPORT)))
    big = dataclasses.replace(report, parameters=tuple(("test_size", "200G") if key == "test_size" else (key, value)
                                                       for key, value in report.parameters))
    plan = plan_report(big, templates, host=host(lkp_tests))
    assert isinstance(plan, Plan)
    assert job_of(plan)["test_size"] == "10240M"
    assert plan.scaled == ("test_size 200G → 10240M (half of the host's 20 GB scratch space)",)


def test_lkp_on_a_local_hosts_path_is_lkp_tests_too(lkp_tests: Path, templates) -> None:
    # self-description lists `lkp` among the programs on PATH: its checkout is two levels up
    found = HostShape(threads=2, memory_gb=24, scratch_gb=20, tools=(("lkp", str(lkp_tests / "bin" / "lkp")),))
    plan = plan_report(stream(IO_URING), templates, host=found)
    assert isinstance(plan, Plan) and plan.template == "lkp"
    assert plan.argv[0] == str(lkp_tests / "bin" / "lkp")


def test_an_lkp_plan_is_stored_and_read_back_whole(lkp_tests: Path, templates) -> None:
    import json

    plan = plan_report(stream(FSMARK), templates, host=host(lkp_tests))
    assert isinstance(plan, Plan) and plan.files
    again = Plan.from_json(json.loads(json.dumps(plan.to_json())))
    assert again == plan and again.files == plan.files


def test_a_value_the_report_does_not_list_is_not_run(lkp_tests: Path, templates) -> None:
    # jobs/dbench.yaml sets monitor_delay: 10 today; the report's parameters list none
    plan = plan_report(stream("202504211304.eb2ca0c2-lkp@intel.com.eml"), templates, host=host(lkp_tests))
    assert isinstance(plan, Plan)
    job = job_of(plan)
    assert "monitor_delay" not in job and job["nr_threads"] == "100%" and "dbench" in job
    assert any("the report lists no monitor_delay" in note for note in plan.notes)
