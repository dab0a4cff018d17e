"""Faithful plans: a report that ran on a filesystem is rerun on that filesystem, made on a scratch
device (here a loop device), and a host that cannot make it says so in the plan, the verdict
reply and the thread, and scores lower."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from triagebot.notify import render
from triagebot.notify.terminal import payload_to_text
from triagebot.records.report import Headline, Report, Source
from triagebot.records.report import TestMachine as Machine
from triagebot.reproduce.executors.local import LocalExecutor
from triagebot.reproduce.filesystem import FILESYSTEMS, MOUNT_OPTIONS, place, storage_wanted
from triagebot.reproduce.hosts import score_host
from triagebot.reproduce.limits import host_shape
from triagebot.reproduce.plan import Plan, plan_report
from triagebot.reproduce.runner import RunError, Runner, RunRecord
from triagebot.rules.hosts import Host
from triagebot.rules.templates import load_templates

TEMPLATES = load_templates(PROJECT / "rules")
MKFS = {"mkfs.btrfs", "mkfs.ext4", "mkfs.xfs"}
BTRFS_ON_HDD = (("bs", "4k"), ("disk", "1HDD"), ("fs", "btrfs"), ("ioengine", "sync"), ("nr_task", "1"),
                ("runtime", "2s"), ("rw", "write"), ("test_size", "32M"), ("time_based", "tb"))
MACHINE = Machine(description="2 threads Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz (Ice Lake) with 16G memory",
                      cpu_model="Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz", microarch="Ice Lake",
                      threads=2, memory_gb=16)


def lkp_report(parameters: tuple[tuple[str, str], ...]) -> Report:
    return Report(message_id="fs-test@example.org", in_reply_to=None,
                  subject="[btrfs] abc1234: fio.write_bw_MBps -20.0% regression", from_="lkp@example.org",
                  date=None, source=Source("eml"), kind="lkp-regression", testcase="fio-basic",
                  parameters=parameters, test_machine=MACHINE,
                  headline=Headline(metric="fio.write_bw_MBps", change_percent=-20.0, direction="regression"))


def lab_host(scratch: Path, devices: tuple[str, ...] = (), programs: tuple[str, ...] = tuple(MKFS),
             kernel: tuple[str, ...] | None = ("btrfs", "ext4", "xfs")) -> Host:
    found = tuple((name, shutil.which(name) or f"/usr/sbin/{name}") for name in sorted(programs))
    return Host(name="fs-lab", reach="local", cpu_model="Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz",
                microarch="Ice Lake", threads=2, sockets=1, memory_gb=16, disk="hdd",
                scratch_dir=str(scratch), scratch_devices=devices, programs=found, kernel_filesystems=kernel,
                scratch_gb=1)


# --- pure: what is made, what is said -----------------------------------------------------------

def test_a_btrfs_report_plans_mkfs_and_mount_on_the_first_scratch_device(tmp_path: Path) -> None:
    host = lab_host(tmp_path, ("/dev/loop7", "/dev/loop6"))
    plan = plan_report(lkp_report(BTRFS_ON_HDD), TEMPLATES, host=host_shape(host))
    assert isinstance(plan, Plan), plan
    assert plan.prepare_steps == (("mkfs.btrfs", "-f", "/dev/loop7"),
                                  ("mount", "-t", "btrfs", "/dev/loop7", "{scratch}"))
    assert plan.release_steps == (("umount", "{scratch}"),)
    assert plan.runs_on.startswith("btrfs made on scratch device /dev/loop7") and plan.storage_differs == ()
    assert "--directory={scratch}" in plan.argv  # the benchmark's files go where the mount is
    # the plan survives the store: steps read back as the same tuples
    assert Plan.from_json(plan.to_json()) == plan


def test_lkp_options_per_filesystem_and_allowlisted_mount_options() -> None:
    xfs = place(storage_wanted([("fs", "xfs"), ("mount_option", "noatime")]), ["/dev/sdb"], MKFS)
    assert xfs.prepare == (("mkfs.xfs", "-f", "-m", "reflink=0", "/dev/sdb"),
                           ("mount", "-t", "xfs", "-o", "inode64,noatime", "/dev/sdb", "{scratch}"))
    dax = place(storage_wanted([("fs", "ext4"), ("mount_option", "dax"), ("disk", "2pmem")]), ["/dev/sdb"], MKFS)
    assert ("mount", "-t", "ext4", "/dev/sdb", "{scratch}") in dax.prepare
    assert any("mounted without dax" in line for line in dax.differs)
    assert any("2 pmem disks" in line for line in dax.differs) and dax.score < 1
    on_pmem = place(storage_wanted([("fs", "ext4"), ("mount_option", "dax")]), ["/dev/pmem0"], MKFS)
    assert ("mount", "-t", "ext4", "-o", "dax", "/dev/pmem0", "{scratch}") in on_pmem.prepare


@pytest.mark.parametrize("parameters, said", [
    ([("fs", "btrfs")], "lists no scratch device"),
    ([("fs", "f2fs")], "no mkfs.f2fs"),
    ([("fs", "tmpfs")], "a tmpfs"),
    ([("fs", "ocfs2")], "OCFS2"),
])
def test_what_the_host_cannot_make_is_said_and_scores_zero(parameters, said) -> None:
    devices = [] if said == "lists no scratch device" else ["/dev/sdb"]
    placement = place(storage_wanted(parameters), devices, MKFS)
    assert placement.prepare == () and placement.score == 0.0
    assert len(placement.differs) == 1 and said in placement.differs[0]
    assert "the plan runs on the filesystem of the host's scratch directory" in placement.differs[0]


def test_a_filesystem_the_kernel_does_not_mount_is_not_attempted() -> None:
    placement = place(storage_wanted([("fs", "xfs")]), ["/dev/sdb"], MKFS, kernel_filesystems=("ext4",))
    assert placement.prepare == () and "does not mount xfs" in placement.differs[0]


def test_nfs_over_the_filesystem_is_made_without_the_nfs_layer_and_said() -> None:
    placement = place(storage_wanted([("fs", "btrfs"), ("fs2", "nfsv4"), ("disk", "1BRD_48G")]), ["/dev/sdb"], MKFS)
    assert placement.made
    assert any("NFSv4" in line and "runs on the btrfs directly" in line for line in placement.differs)
    assert any("ram disk (brd)" in line for line in placement.differs)


def test_no_fs_parameter_means_nothing_to_make() -> None:
    assert storage_wanted([("disk", "1HDD"), ("rw", "write")]) is None
    assert place(None, ["/dev/sdb"], MKFS).prepare == ()


HOSTILE = ["btrfs; rm -rf /", "$(reboot)", "-o", "/dev/sda", "btrfs\n", "../../x", "ext4 -O ^has_journal",
           "noatime,exec=/bin/sh", "dax,,user_xattr", "--bind", "remount,rw", "x" * 5000, "nfsv4 `id`"]


def test_nothing_from_a_mail_reaches_mkfs_or_mount_but_allowlisted_words() -> None:
    allowed = {word for fs in FILESYSTEMS.values() for word in (fs.name, fs.mkfs_program, *fs.mkfs_options)}
    allowed |= {"mount", "-t", "-o", "/dev/sdb", "{scratch}"}
    options = set(MOUNT_OPTIONS) | {option for fs in FILESYSTEMS.values() for option in fs.mount_options}
    rng = random.Random(15)
    for _ in range(2000):
        parameters = [(key, rng.choice(HOSTILE + list(FILESYSTEMS) + list(MOUNT_OPTIONS)))
                      for key in ("fs", "fs2", "mount_option", "disk", "md") if rng.random() < 0.7]
        placement = place(storage_wanted(parameters), ["/dev/sdb"], MKFS)
        for step in placement.prepare:
            for index, word in enumerate(step):
                if index and step[index - 1] == "-o":
                    assert set(word.split(",")) <= options, (parameters, step)
                else:
                    assert word in allowed, (parameters, step)


def test_the_host_score_counts_the_storage(tmp_path: Path) -> None:
    able = score_host(lab_host(tmp_path, ("/dev/sdb",)), MACHINE, parameters=BTRFS_ON_HDD)
    unable = score_host(lab_host(tmp_path), MACHINE, parameters=BTRFS_ON_HDD)
    assert able.score == 1.0 and able.differences == ()
    assert unable.score < able.score
    assert any("lists no scratch device" in line for line in unable.differences)
    # a report with no filesystem is not scored on storage
    plain = score_host(lab_host(tmp_path), MACHINE, parameters=(("rw", "write"),))
    assert plain.score == 1.0


def test_the_plan_the_verdict_and_the_thread_say_what_differs(tmp_path: Path) -> None:
    plan = plan_report(lkp_report(BTRFS_ON_HDD + (("fs2", "nfsv4"),)), TEMPLATES,
                       host=host_shape(lab_host(tmp_path)))
    assert isinstance(plan, Plan) and plan.prepare_steps == ()
    (line,) = plan.storage_differs
    assert "btrfs on 1HDD over nfsv4" in line and "lists no scratch device" in line
    plan_text = payload_to_text(render.plan_reply(plan.to_json()))
    assert "Differs from the report" in plan_text and "lists no scratch device" in plan_text
    verdict = {"outcome": "not-reproduced", "reason": "no change beyond the floor", "measured_change_percent": 0.4,
               "ci_low": -1.0, "ci_high": 1.5, "confidence": 0.95, "runs_base": 6, "runs_suspect": 6}
    run_json = {"host": "fs-lab", "status": "done", "plan": plan.to_json(), "verdict": verdict, "samples": []}
    reply = render.verdict_reply(None, run_json)
    assert "Differs from the report: filesystem: the report ran on btrfs on 1HDD over nfsv4" in reply["text"]
    assert "lists no scratch device" in payload_to_text(reply)
    made = plan_report(lkp_report(BTRFS_ON_HDD), TEMPLATES, host=host_shape(lab_host(tmp_path, ("/dev/sdb",))))
    made_reply = render.verdict_reply(None, {**run_json, "plan": made.to_json()})
    assert "Ran on btrfs made on scratch device /dev/sdb" in made_reply["text"]
    assert "Differs from the report" not in made_reply["text"]


# --- for real: btrfs made on a loop device ------------------------------------------------------

def _mounts() -> list[list[str]]:
    return [line.split() for line in Path("/proc/mounts").read_text().splitlines()]


@pytest.fixture
def loop_device(tmp_path: Path):
    """A 400 MB loop device backed by a sparse file in tmp, detached afterwards."""
    if os.geteuid() != 0:
        pytest.skip("loop devices and mounts need root")
    for program in ("losetup", "mkfs.btrfs", "mount", "umount", "fio"):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed (btrfs-progs, util-linux, fio)")
    if "btrfs" not in Path("/proc/filesystems").read_text():
        subprocess.run(["modprobe", "btrfs"], capture_output=True, check=False)
        if "btrfs" not in Path("/proc/filesystems").read_text():
            pytest.skip("this kernel does not mount btrfs")
    backing = tmp_path / "disk.img"
    with backing.open("wb") as file:
        file.truncate(400 << 20)
    made = subprocess.run(["losetup", "-f", "--show", str(backing)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"no loop device here: {made.stderr.strip()}")
    device = made.stdout.strip()
    try:
        yield device
    finally:
        for fields in reversed(_mounts()):
            if fields[0] == device:
                subprocess.run(["umount", fields[1]], check=False)
        subprocess.run(["losetup", "-d", device], check=False)


class WatchingExecutor(LocalExecutor):
    """A local executor that, right after the benchmark, notes where its files are."""

    def __init__(self, scratch_root: str, benchmark: str) -> None:
        super().__init__(scratch_root)
        self.benchmark = benchmark
        self.seen: list[dict] = []

    def run(self, argv, **kwargs):
        completed = super().run(argv, **kwargs)
        if argv[0] == self.benchmark:
            scratch = kwargs["cwd"]
            mount = next((fields for fields in _mounts() if fields[1] == scratch), None)
            files = [path for path in Path(scratch).rglob("*") if path.is_file()]
            self.seen.append({"mount": mount, "files": files,
                              "devices": {os.stat(path).st_dev for path in files},
                              "scratch_device": os.stat(scratch).st_dev})
        return completed


def test_a_btrfs_report_is_rerun_on_btrfs_made_on_a_loop_device(tmp_path: Path, loop_device: str) -> None:
    scratch_root = tmp_path / "scratch"
    host = lab_host(scratch_root, (loop_device,))
    plan = plan_report(lkp_report(BTRFS_ON_HDD), TEMPLATES, host=host_shape(host))
    assert isinstance(plan, Plan) and plan.prepare_steps, plan
    executor = WatchingExecutor(str(scratch_root), "fio")
    runner = Runner(plan, host, executor, retries=0)
    record = RunRecord(host=host.name, base_commit="a", suspect_commit="b", plan=plan.to_json(), started_at="now")
    for index in range(2):
        sample = runner.sample("base", "a", index, record)
        assert sample.value > 0
    assert len(executor.seen) == 2
    for seen in executor.seen:
        # during the run the scratch dir was a btrfs mount of the loop device, and fio's files were on it
        assert seen["mount"] is not None and seen["mount"][0] == loop_device and seen["mount"][2] == "btrfs"
        assert seen["files"] and seen["devices"] == {seen["scratch_device"]}
    # after each sample: unmounted, the scratch dir gone
    assert not any(fields[0] == loop_device for fields in _mounts())
    assert list(scratch_root.iterdir()) == []


def test_the_filesystem_is_unmounted_even_when_the_benchmark_fails(tmp_path: Path, loop_device: str) -> None:
    scratch_root = tmp_path / "scratch"
    host = lab_host(scratch_root, (loop_device,))
    plan = plan_report(lkp_report(BTRFS_ON_HDD), TEMPLATES, host=host_shape(host))
    assert isinstance(plan, Plan)
    broken = Plan.from_json({**plan.to_json(), "argv": ["fio", "--no-such-option"]})
    executor = WatchingExecutor(str(scratch_root), "fio")
    runner = Runner(broken, host, executor, retries=1)
    record = RunRecord(host=host.name, base_commit="a", suspect_commit="b", plan=broken.to_json(), started_at="now")
    with pytest.raises(RunError, match="failed 2 times"):
        runner.sample("base", "a", 0, record)
    # both attempts ran on the btrfs, and each left it unmounted
    assert [seen["mount"][2] for seen in executor.seen] == ["btrfs", "btrfs"]
    assert not any(fields[0] == loop_device for fields in _mounts())
    assert list(scratch_root.iterdir()) == []


# --- the daemon: plan reply, run and verdict reply in the thread ---------------------------------

def _daemon_lab(tmp_path: Path, devices: tuple[str, ...]):
    import dataclasses
    import json

    from tests.support.lab import write_lab_rules
    from triagebot.daemon import flow
    from triagebot.rules.routing import parse_routing
    from triagebot.rules.settings import load_settings

    rules, _ = write_lab_rules(tmp_path, PROJECT)
    hosts = rules / "hosts.toml"
    hosts.write_text(hosts.read_text() + f"scratch_devices = {json.dumps(list(devices))}\n")
    settings = dataclasses.replace(load_settings(rules),
                                   routing=parse_routing('default_channel = "#perf-triage"\n', "test"))
    return flow.DaemonContext(settings=settings, database=tmp_path / "t.db", deliver=lambda: None, budget=6)


def _taken_on(store, report: Report) -> None:
    import dataclasses

    from triagebot.records.report import Commit

    report = dataclasses.replace(report, commits=(Commit("c0ffee1234ab", role="culprit"),))
    store.put_message(report.message_id, b"Subject: s\n\nbody\n", "test", None, "2026-12-01T00:00:00+00:00")
    store.put_record(report.message_id, report, "test")
    store.start_triage(report.message_id, "#perf-triage")


def _thread(store, message_id: str) -> dict[str, str]:
    return {row.kind: payload_to_text(row.payload) for row in store.outbox(message_id=message_id)}


def test_the_daemon_reruns_a_btrfs_report_on_btrfs_and_says_so_in_the_thread(tmp_path: Path,
                                                                               loop_device: str) -> None:
    from triagebot.daemon import flow
    from triagebot.store.sqlite import SqliteStore

    lab = _daemon_lab(tmp_path, (loop_device,))
    with SqliteStore(lab.database) as store:
        _taken_on(store, lkp_report(BTRFS_ON_HDD))
        assert flow.plan_new(store, lab) == ["fs-test@example.org"]
        assert store.get_triage("fs-test@example.org").state == "planned"
        plan_text = _thread(store, "fs-test@example.org")["plan"]
        assert f"Runs on: btrfs made on scratch device {loop_device}" in plan_text
        assert flow.run_planned(store, lab) == ["fs-test@example.org"]
        thread = _thread(store, "fs-test@example.org")
    assert f"Ran on btrfs made on scratch device {loop_device}" in thread["verdict"], thread["verdict"]
    assert "Differs from the report" not in thread["verdict"]
    assert not any(fields[0] == loop_device for fields in _mounts())


def test_the_daemon_says_what_it_cannot_match_in_the_plan_reply(tmp_path: Path) -> None:
    from triagebot.daemon import flow
    from triagebot.store.sqlite import SqliteStore

    lab = _daemon_lab(tmp_path, ())
    with SqliteStore(lab.database) as store:
        _taken_on(store, lkp_report(BTRFS_ON_HDD))
        assert flow.plan_new(store, lab) == ["fs-test@example.org"]
        plan_text = _thread(store, "fs-test@example.org")["plan"]
    assert "Differs from the report" in plan_text
    assert "the report ran on btrfs on 1HDD; the host lists no scratch device" in plan_text
    # the host line: the match counts it (score below 1) and names it
    assert "filesystem: the report ran on btrfs on 1HDD" in plan_text.split("Host:", 1)[1]


# --- triage plan --host -------------------------------------------------------------------------

def test_triage_plan_for_a_named_host_shows_the_filesystem_steps(tmp_path: Path, capsys) -> None:
    from triagebot.cli.main import main
    from triagebot.rules.self_describe import probe_this_machine
    from triagebot.store.sqlite import SqliteStore

    if "btrfs" not in (probe_this_machine(str(tmp_path)).kernel_filesystems or ()):
        pytest.skip("this machine's kernel does not mount btrfs: the plan would (rightly) not make it")
    rules = tmp_path / "rules"
    shutil.copytree(PROJECT / "rules" / "reproducers", rules / "reproducers")
    (rules / "hosts.toml").write_text(f"""
[[host]]
name = "disk-lab"
reach = "local"
describe = "auto"
scratch_dir = "{tmp_path / 'scratch'}"
scratch_devices = ["/dev/disk/by-id/scratch-1"]
tools = {{ "mkfs.btrfs" = "/usr/sbin/mkfs.btrfs" }}
""")
    database = tmp_path / "t.db"
    with SqliteStore(database) as store:
        report = lkp_report(BTRFS_ON_HDD)
        store.put_message(report.message_id, b"Subject: s\n\nbody\n", "test", None, "2026-12-01T00:00:00+00:00")
        store.put_record(report.message_id, report, "test")
    common = ["plan", "fs-test@example.org", "--db", str(database), "--rules", str(rules), "--no-fetch"]
    assert main([*common, "--host", "disk-lab"]) == 0
    shown = capsys.readouterr().out
    assert "  prepare: mkfs.btrfs -f /dev/disk/by-id/scratch-1\n" in shown
    assert "  prepare: mount -t btrfs /dev/disk/by-id/scratch-1 '{scratch}'\n" in shown
    assert "  release: umount '{scratch}' (after each sample, always)\n" in shown
    assert "  storage: btrfs made on scratch device /dev/disk/by-id/scratch-1" in shown
    assert main([*common, "--threads", "2"]) == 0  # a made-up shape has no scratch device: said
    assert "  differs: filesystem: the report ran on btrfs on 1HDD; the host lists no scratch device" in \
        capsys.readouterr().out
    assert main(common) == 0  # without --host: the daemon's host, the only one
    planned = capsys.readouterr()
    assert "  storage: btrfs made on scratch device /dev/disk/by-id/scratch-1" in planned.out
    assert "triage plan: for host disk-lab, the daemon's: the most similar host (match " in planned.err
    assert main([*common, "--host", "nowhere"]) == 1
    assert "--host 'nowhere': no such host in" in capsys.readouterr().err
