"""What a plan may start on a host, and the limits its commands run under (issue 13, finding 5).

Every template count that starts processes or threads (`tasks` in rules/reproducers/*.toml) is
fitted to the host's process budget together with the counts it multiplies with; the limits
every plan command runs under are scaled from the same host description.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tests.conftest import PROJECT
from triagebot.reproduce.executors.protocol import Limits
from triagebot.reproduce.limits import (
    GIB,
    OPEN_FILES,
    PROCESS_MARGIN,
    describe_limits,
    host_limits,
    host_shape,
)
from triagebot.reproduce.plan import HostShape, Plan, Refusal, plan_command
from triagebot.rules.hosts import Host
from triagebot.rules.templates import load_templates

TEMPLATES = load_templates(PROJECT / "rules")
BIG = HostShape(threads=224, memory_gb=512, scratch_gb=2000)


def lab_host(**facts) -> Host:
    values = dict(name="big", reach="ssh", cpu_model="x", threads=224, sockets=2, memory_gb=512, disk="nvme",
                  scratch_dir="/srv/scratch")
    return Host(**(values | facts))


def tasks_of(plan: Plan) -> int:
    """The processes and threads a plan starts, reckoned from the template's own tasks rules."""
    template = TEMPLATES.named(plan.template)
    values = dict(plan.parameters)
    total = 0
    for spec in template.params:
        if not spec.tasks:
            continue
        value = int(values[spec.name]) if spec.name in values else spec.assume
        others = [int(values[name]) if name in values else (template.param(name).assume or 1)
                  for name in spec.tasks_times]
        total = max(total, value * spec.tasks * math.prod(others))
    return total


# The largest counts each template's allowlist accepts: none may plan past the host's budget.
LARGEST = [
    "hackbench -g 1000 -f 1000 -l 10000000 -s 1048576 -P",
    "hackbench -g 1000 -l 100 -T",  # fds unset: hackbench's own 20 a group
    "perf bench sched messaging -g 1000 -l 10 -t",
    "fio --name=x --rw=randread --numjobs=1024 --size=1G",
    "sysbench threads --threads=4096 --time=10 run",
    "sysbench cpu --threads=4096 --time=10 run",
    "stress-ng --fork 4096 --timeout 10s",
    "fs_mark -t 1024 -n 10 -s 4096 -d /mnt/x",
]


@pytest.mark.parametrize("command", LARGEST)
@pytest.mark.parametrize("host", [HostShape(threads=2), BIG, HostShape(threads=224, processes=1000)],
                         ids=["2-threads", "224-threads", "224-threads-budget-1000"])
def test_no_plan_starts_more_than_the_hosts_process_budget(command: str, host: HostShape) -> None:
    plan = plan_command(command, TEMPLATES, host=host)
    assert isinstance(plan, Plan), plan
    assert 0 < tasks_of(plan) <= host.process_budget


def test_the_issues_hackbench_on_a_224_thread_host_through_the_command_line() -> None:
    result = subprocess.run([sys.executable, "-m", "triagebot.cli", "plan", "--command",
                             "hackbench -g 1000 -f 1000 -l 10000000 -s 1048576 -P", "--threads", "224", "--json"],
                            capture_output=True, text=True, cwd=PROJECT, timeout=120)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["parameters"]["groups"] == "224" and plan["parameters"]["fds"] == "32"  # 14,336 processes
    assert any("fds × groups × 2 would start 448000 processes or threads; the host's budget is 14336" in line
               for line in plan["scaled"])


def test_fio_buffers_in_flight_fit_the_hosts_memory() -> None:
    plan = plan_command("fio --name=x --rw=randread --bs=64M --iodepth=4096 --numjobs=16 --size=1G", TEMPLATES,
                        host=BIG)
    assert isinstance(plan, Plan)
    values = dict(plan.parameters)
    assert values["iodepth"] == "128"  # 128 × 64M × 16 = 128 GiB, a quarter of 512 GB
    assert any(line.startswith("iodepth 4096 → 128 (iodepth × bs × numjobs would need 4T") for line in plan.scaled)


def test_a_budget_no_count_fits_is_refused_with_the_reason() -> None:
    refused = plan_command("perf bench sched messaging -g 4 -l 10", TEMPLATES, host=HostShape(threads=4, processes=16))
    assert isinstance(refused, Refusal)
    assert "group: group × 40 would start 160 processes and even 1 would start 40; the host's budget is 16" \
        in refused.reason


def test_limits_scale_with_the_host() -> None:
    limits = host_limits(lab_host())
    assert limits == Limits(address_space_bytes=512 * GIB, processes=224 * 64 + PROCESS_MARGIN,
                            file_size_bytes=20 * GIB, open_files=OPEN_FILES, core_file_bytes=0)
    given = host_limits(lab_host(threads=8, memory_gb=16, max_processes=300, scratch_gb=50))
    assert (given.address_space_bytes, given.processes, given.file_size_bytes) == (16 * GIB, 364, 50 * GIB)
    assert host_shape(lab_host(max_processes=300, scratch_gb=50)) == HostShape(224, 512, 50, 300)
    assert describe_limits(given) == ("processes 364, address space 16 GiB a process, file size 50 GiB, "
                                      "open files 8192 a process, no core dumps")


def test_a_local_hosts_scratch_is_measured_where_it_will_be(tmp_path) -> None:
    host = lab_host(reach="local", scratch_dir=str(tmp_path / "not" / "made" / "yet"))
    assert host_shape(host).scratch_gb >= 1 and host_limits(host).file_size_bytes == host_shape(host).scratch_gb * GIB
