"""The kexec switcher against a real sshd on 127.0.0.1: install the built kernel and its modules
over SSH, load it, execute it, wait for the host to come back on it and check the running kernel.

The last step (`kexec -e`: booting into the kernel) is the one a test machine cannot take: a
stand-in (tests/support/kexec_standin.py) reads the image's real boot header, "boots" it by making
the host's running-kernel file name it, and cuts the SSH session as a reboot would. Everything
before it is real: the SSH executor, the files written on the host, tar, install, the reconnect.
The kernel here is an image file with a real x86 boot header (the build is
tests/test_kernels_real.py's); there the same switcher takes a kernel triagebot built.
"""
from __future__ import annotations

import io
import json
import shutil
import struct
import tarfile
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.kexec_standin import OLD_RELEASE, install
from tests.support.sshd import TestSshd
from triagebot.kernels.build import Artefact
from triagebot.reproduce.executors.guest import KernelSwitchError
from triagebot.reproduce.executors.kexec import KexecExecutor
from triagebot.reproduce.executors.ssh import SshExecutor
from triagebot.reproduce.plan import Plan, plan_command
from triagebot.reproduce.runner import rerun
from triagebot.rules.hosts import Host, parse_hosts
from triagebot.rules.templates import load_templates
from triagebot.rules.trees import KernelTree
from triagebot.verdict.sequential import LookSchedule

TREE = KernelTree("linux", "file:///srv/git/linux.git", "master")
RELEASE = "6.12.118-tb2d00eceef795+"


def boot_image(release: str) -> bytes:
    """Bytes with an x86 boot header whose kernel_version string names `release`."""
    image = bytearray(0x400)
    image[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", image, 0x20E, 0x100)
    version = f"{release} (triagebot@triagebot) #1 Thu Jan  1 00:00:00 UTC 2015".encode()
    image[0x300:0x300 + len(version)] = version
    return bytes(image)


class MadeKernels:
    """A builder whose kernels are made on the spot (the real one is KernelBuilder)."""

    def __init__(self, directory: Path, releases: dict[str, str]) -> None:
        self.directory = directory
        self.releases = releases
        self.asked: list[tuple[str, str]] = []

    def build(self, ref: str, arch: str, config, *, needed=(), announce=lambda line: None) -> Artefact:
        self.asked.append((ref, arch))
        release = self.releases[ref]
        where = self.directory / ref
        where.mkdir(parents=True, exist_ok=True)
        (where / "image").write_bytes(boot_image(release))
        (where / "config").write_text(config.fragment_text() if config.base == "allnoconfig" else config.dot_config())
        module = f"{release}/kernel/fs/fixture.ko".encode()
        with tarfile.open(where / "modules.tar", "w") as archive:
            info = tarfile.TarInfo(f"{release}/kernel/fs/fixture.ko")
            info.size = len(module)
            archive.addfile(info, io.BytesIO(module))
        (where / "meta.json").write_text(json.dumps({"release": release}))
        return Artefact(commit=ref * 4, ref=ref, arch=arch, key="0" * 64, release=release, directory=where,
                        how="cold", seconds=1.0, config_origin=config.describe())


def kexec_host(sshd: TestSshd, tmp_path: Path, state: Path, program: Path, *, timeout: int = 60) -> Host:
    text = f"""
[[host]]
name = "metal"
reach = "ssh"
cpu_model = "AMD EPYC"
threads = 2
sockets = 1
memory_gb = 24
disk = "ssd"
scratch_dir = "{tmp_path / 'scratch'}"
switcher = "kexec"
running_kernel = ["cat", "{state / 'running'}"]
reboot_timeout_s = {timeout}
[host.kexec]
config = "kernels/x86-min.config"
boot_dir = "{tmp_path / 'boot'}"
modules_dir = "{tmp_path / 'modules'}"
kexec = "{program}"
execute = ["{program}", "-e"]
[host.ssh]
host = "127.0.0.1"
port = {sshd.port}
user = "{sshd.user}"
identity_file = "{sshd.identity_file}"
known_hosts_file = "{sshd.known_hosts_file}"
"""
    (host,) = parse_hosts(text, PROJECT / "rules" / "hosts.toml", kernel_trees=(TREE,))
    return host


@pytest.fixture
def metal(sshd: TestSshd, tmp_path: Path):
    state = tmp_path / "state"
    program = install(state)
    host = kexec_host(sshd, tmp_path, state, program)
    assert host.ssh is not None
    ssh = SshExecutor(host.ssh, host.scratch_dir, name=host.name, reboot_timeout=30)
    kernels = MadeKernels(tmp_path / "built", {"abc": RELEASE, "def": "6.12.118-tbdef0123456+"})
    with KexecExecutor(host, ssh, builder=kernels) as executor:  # type: ignore[arg-type]
        yield executor, state, kernels, tmp_path


def test_a_switch_installs_loads_executes_and_comes_back_on_the_built_kernel(metal) -> None:
    executor, state, kernels, tmp_path = metal
    assert executor.running() == OLD_RELEASE
    said: list[str] = []
    assert executor.switch_kernel("abc", announce=said.append) == RELEASE
    assert kernels.asked == [("abc", "x86_64")]
    # installed on the host: the image, its config, its modules under their release
    assert (tmp_path / "boot" / f"vmlinuz-{RELEASE}").read_bytes() == boot_image(RELEASE)
    assert "x86-min.config" in (tmp_path / "boot" / f"config-{RELEASE}").read_text()
    assert (tmp_path / "modules" / RELEASE / "kernel" / "fs" / "fixture.ko").is_file()
    # loaded with the running command line, then executed; the session was cut and came back
    calls = (state / "calls").read_text().splitlines()
    assert calls == [f"-l {tmp_path / 'boot'}/vmlinuz-{RELEASE} --reuse-cmdline", "-e"]
    assert (state / "running").read_text().strip() == RELEASE == executor.running()
    assert said == [f"host metal: kexec into {RELEASE}"]
    assert executor.builds[0]["release"] == RELEASE
    # nothing of the staging is left in the scratch directory
    assert not list((tmp_path / "scratch").iterdir())


def test_a_host_already_on_the_kernel_is_not_rebooted_and_the_next_commit_is(metal) -> None:
    executor, state, _kernels, _tmp_path = metal
    executor.switch_kernel("abc")
    executor.switch_kernel("abc")
    assert (state / "calls").read_text().count("-e") == 1
    assert executor.switch_kernel("def") == "6.12.118-tbdef0123456+"
    assert (state / "calls").read_text().count("-e") == 2


def test_a_host_that_comes_back_on_another_kernel_is_an_error_naming_both(sshd: TestSshd, tmp_path: Path) -> None:
    state = tmp_path / "state"
    program = install(state)
    host = kexec_host(sshd, tmp_path, state, program, timeout=2)
    assert host.ssh is not None
    ssh = SshExecutor(host.ssh, host.scratch_dir, name=host.name, reboot_timeout=2)
    # the loaded image names one release, the build another: the host "boots" the image's
    kernels = MadeKernels(tmp_path / "built", {"abc": RELEASE})
    with KexecExecutor(host, ssh, builder=kernels, sleep=lambda seconds: None) as executor:  # type: ignore[arg-type]
        real_build = kernels.build

        def mislabelled(ref, arch, config, **kwargs):
            artefact = real_build(ref, arch, config, **kwargs)
            return Artefact(**{**artefact.__dict__, "release": "6.12.118-tbffffffffffff+"})
        kernels.build = mislabelled  # type: ignore[method-assign]
        with pytest.raises(KernelSwitchError, match=f"did not come back running 6.12.118-tbffffffffffff\\+ within 2 s.*"
                                                    f"it runs {RELEASE.replace('+', '.')}"):
            executor.switch_kernel("abc")


def test_a_failed_load_stops_the_switch_before_any_reboot(metal) -> None:
    executor, state, kernels, _tmp_path = metal
    real_build = kernels.build

    def not_a_kernel(ref, arch, config, **kwargs):
        artefact = real_build(ref, arch, config, **kwargs)
        artefact.image.write_bytes(b"MZ not a kernel")
        return artefact
    kernels.build = not_a_kernel
    with pytest.raises(KernelSwitchError, match="kexec load .* failed \\(exit 1\\): kexec: cannot load .*bzImage"):
        executor.switch_kernel("abc")
    assert "-e" not in (state / "calls").read_text().split()
    assert executor.running() == OLD_RELEASE


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="needs sysbench (apt-get install sysbench)")
def test_a_rerun_on_a_kexec_host_switches_before_each_sample_and_records_its_kernels(metal) -> None:
    executor, state, _kernels, _tmp_path = metal
    plan = plan_command("sysbench cpu --threads=1 --time=1 run", load_templates(PROJECT / "rules"))
    assert isinstance(plan, Plan)
    record = rerun(plan, executor.host, executor, "abc", "def", rounds=LookSchedule(rounds=(3,)))
    assert record.status == "done", record.error
    releases = {"abc": RELEASE, "def": "6.12.118-tbdef0123456+"}
    # A B A B: every sample on its own side's kernel, as the host's running-kernel hook said it
    assert [sample.role for sample in record.samples[:4]] == ["base", "suspect", "base", "suspect"]
    assert all(sample.running_kernel == releases[sample.commit] for sample in record.samples)
    assert (state / "calls").read_text().count("-e") == len(record.samples)  # one kexec a sample
    assert record.kernel_switch is not None and record.kernel_switch["switcher"] == "kexec"
    assert not record.kernel_switch["guest"] and record.verdict is not None
    assert record.verdict["kernel_switch"] == "on the host itself, kexec'd into each built kernel"
    assert [build["release"] for build in record.builds[:2]] == [RELEASE, releases["def"]]
