"""Executors: the local one and the SSH one (against a real sshd on 127.0.0.1), no mocks.

Each test checks what the operating system saw: which files exist, which processes live.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sshd import TestSshd
from triagebot.reproduce.executors import private_tmp
from triagebot.reproduce.executors.choose import executor_for
from triagebot.reproduce.executors.local import LocalExecutor
from triagebot.reproduce.executors.pids_cgroup import PidsCgroups
from triagebot.reproduce.executors.protocol import (
    ConnectionLost,
    ExecutorError,
    Limits,
)
from triagebot.reproduce.executors.ssh import SshExecutor, remote_command
from triagebot.rules.hosts import Host

PYTHON = sys.executable
# Arguments a shell would act on; each must arrive as one literal argument and do nothing.
HOSTILE = ["; rm -rf x", "&& touch marker-and", "$(touch marker-subst)", "`touch marker-tick`",
           "> marker-redirect", "| tee marker-pipe", "'", '"', "\\", "*", "~", "$HOME", "\n touch marker-newline",
           "", " leading and trailing spaces "]
ECHO_ARGV = "import json, sys; print(json.dumps(sys.argv[1:]))"
# A parent that starts a grandchild (in its process group), records its pid, and waits.
GRANDCHILD = ("import subprocess, sys, time; "
              "child = subprocess.Popen(['sleep', '30']); "
              "open(sys.argv[1], 'w').write(str(child.pid)); "
              "time.sleep(float(sys.argv[2]))")
# Prints the rlimits it runs under, then how many of 200 files it could open.
SHOW_LIMITS = ("import json, resource, tempfile; "
               "names = ['AS', 'NOFILE', 'CORE', 'FSIZE', 'NPROC']; "
               "limits = {name: list(resource.getrlimit(getattr(resource, 'RLIMIT_' + name))) for name in names}; "
               "opened = []\n"
               "try:\n"
               "    for _ in range(200): opened.append(tempfile.TemporaryFile())\n"
               "except OSError: pass\n"
               "print(json.dumps([limits, len(opened)]))")
LIMITS = Limits(address_space_bytes=4 << 30, open_files=64, core_file_bytes=0, file_size_bytes=1 << 30,
                processes=500)
# Starts up to 100 processes that wait, and prints how many it could start.
FORKER = ("import os, time\n"
          "started = 0\n"
          "for _ in range(100):\n"
          "    try:\n"
          "        if os.fork() == 0:\n"
          "            time.sleep(30); os._exit(0)\n"
          "        started += 1\n"
          "    except OSError:\n"
          "        break\n"
          "print(started)")
# Prints the pids cgroup the command runs in (cgroup v1's pids hierarchy, else v2's).
SHOW_CGROUP = ("\nlines = open('/proc/self/cgroup').read().splitlines()\n"
               "v1 = [line.split(':', 2)[2] for line in lines if 'pids' in line.split(':')[1].split(',')]\n"
               "print((v1 or [line[3:] for line in lines if line.startswith('0::')])[0])")


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for a reaper counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def wait_dead(pid: int, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def wait_for_file(path: Path, seconds: float = 5.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalExecutor]:
    with LocalExecutor(str(tmp_path / "scratch"), name="test-local") as executor:
        yield executor


# --- local ------------------------------------------------------------------------------------

def test_local_runs_the_argv_exactly_and_nothing_else(local: LocalExecutor) -> None:
    scratch = local.make_scratch()
    (Path(scratch) / "x").mkdir()  # what "; rm -rf x" would remove were it run by a shell
    completed = local.run([PYTHON, "-c", ECHO_ARGV, *HOSTILE], timeout=20, cwd=scratch)
    assert completed.ok, completed.stderr
    assert json.loads(completed.stdout) == HOSTILE
    assert sorted(os.listdir(scratch)) == ["x"]  # no marker file: no shell ever saw the words


def test_local_refuses_a_string_for_argv(local: LocalExecutor) -> None:
    with pytest.raises(ValueError, match="not a string"):
        local.run("echo hi; touch marker", timeout=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        local.run([], timeout=5)


def test_local_timeout_kills_the_whole_process_group(local: LocalExecutor, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    completed = local.run([PYTHON, "-c", GRANDCHILD, str(pid_file), "30"], timeout=1.0)
    assert completed.timed_out and not completed.ok
    assert completed.returncode == -9
    assert time.monotonic() - started < 5
    assert wait_dead(int(pid_file.read_text())), "the grandchild outlived the timeout"


def test_local_leaves_nothing_of_its_group_running(local: LocalExecutor, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    # the parent exits at once, leaving `sleep 30` behind, holding stdout
    completed = local.run([PYTHON, "-c", GRANDCHILD, str(pid_file), "0"], timeout=20)
    assert completed.ok and not completed.timed_out
    assert completed.seconds < 5
    assert wait_dead(int(pid_file.read_text()))


def test_local_timeout_holds_when_the_command_closes_its_output(local: LocalExecutor) -> None:
    quiet = "import os, time; os.close(1); os.close(2); time.sleep(30)"
    completed = local.run([PYTHON, "-c", quiet], timeout=1.0)
    assert completed.timed_out and completed.returncode == -9 and completed.seconds < 5


def test_local_resource_limits_apply(local: LocalExecutor) -> None:
    scratch = local.make_scratch()
    write = "open('big', 'wb').write(b'x' * (4 << 20))"
    limited = local.run([PYTHON, "-c", write], timeout=20, cwd=scratch,
                        limits=Limits(file_size_bytes=1 << 20))
    assert limited.returncode != 0  # SIGXFSZ, or EFBIG where the signal is ignored
    assert os.path.getsize(Path(scratch) / "big") <= 1 << 20
    assert local.run([PYTHON, "-c", write], timeout=20, cwd=scratch).ok

    allocate = "b = bytearray(1 << 30)"
    memory = local.run([PYTHON, "-c", allocate], timeout=20, limits=Limits(address_space_bytes=512 << 20))
    assert memory.returncode == 1 and b"MemoryError" in memory.stderr

    spin = local.run([PYTHON, "-c", "while True: pass"], timeout=20, limits=Limits(cpu_seconds=1))
    assert not spin.timed_out and spin.returncode in (-24, -9)  # SIGXCPU at the soft limit
    assert spin.seconds < 10


def test_local_process_limit(local: LocalExecutor) -> None:
    if os.geteuid() == 0:
        pytest.skip("RLIMIT_NPROC is not enforced for root (CAP_SYS_RESOURCE)")
    # this user already runs more than one process, so a limit of 1 leaves no room for a fork
    completed = local.run([PYTHON, "-c", "import os; os.fork()"], timeout=20, limits=Limits(processes=1))
    assert completed.returncode == 1 and b"BlockingIOError" in completed.stderr


def test_local_rlimits_apply_nofile_core_as_fsize(local: LocalExecutor) -> None:
    completed = local.run([PYTHON, "-c", SHOW_LIMITS], timeout=20, limits=LIMITS)
    assert completed.ok, completed.stderr
    limits, opened = json.loads(completed.stdout)
    assert limits["AS"] == [4 << 30] * 2 and limits["NOFILE"] == [64, 64] and limits["CORE"] == [0, 0]
    assert limits["FSIZE"] == [1 << 30] * 2 and limits["NPROC"] == [500, 500]
    assert opened < 64  # stdin, stdout, stderr and the interpreter's own files count too


def test_local_process_limit_holds_for_root_through_a_pids_cgroup(local: LocalExecutor) -> None:
    """RLIMIT_NPROC does not bind root; the pids cgroup does, and is gone after the command,
    its forked children (killed with it) included. The cgroup tree is shared with whatever else
    runs here, so the test looks at the command's own cgroup, as the command saw it."""
    cgroups = PidsCgroups()
    if not cgroups.available():
        pytest.skip(f"no writable pids cgroup here: {cgroups.problem}")
    completed = local.run([PYTHON, "-c", FORKER + SHOW_CGROUP], timeout=60, limits=Limits(processes=16))
    assert completed.ok, completed.stderr
    started, shown = completed.stdout.decode().split()
    assert int(started) < 16  # the interpreter itself is one of the 16
    assert local.limit_notes == ()
    assert Path(shown).name.endswith("-test-local")  # the host's own cgroup, named for it
    assert not (cgroups.parent / Path(shown).name).exists()  # removed once its processes were gone
    unlimited = local.run([PYTHON, "-c", FORKER], timeout=60)
    assert int(unlimited.stdout) == 100


def test_a_cgroup_left_by_a_killed_triagebot_is_removed() -> None:
    cgroups = PidsCgroups()
    if not cgroups.available():
        pytest.skip(f"no writable pids cgroup here: {cgroups.problem}")
    dead = next(pid for pid in range(4_000_000, 4_100_000) if not Path(f"/proc/{pid}").exists())
    left = cgroups.parent / f"triagebot-{dead}-7"
    left.mkdir()
    PidsCgroups()
    assert not left.exists()


def test_local_says_when_it_cannot_bound_the_process_count(tmp_path: Path) -> None:
    (tmp_path / "cgroup").mkdir()  # no controllers, no v1 hierarchy: nothing to make a cgroup in
    executor = LocalExecutor(str(tmp_path / "scratch"), name="plain", cgroups=PidsCgroups(tmp_path / "cgroup"))
    [note] = executor.limit_notes
    assert note.startswith("plain: no pids cgroup (") and "RLIMIT_NPROC" in note
    assert executor.run([PYTHON, "-c", "print(1)"], timeout=20, limits=Limits(processes=64)).ok


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A scratch root that is not below /tmp (where pytest's tmp_path is)."""
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="triagebot-test-", dir="/var/tmp"))
    if private_tmp.under_tmp(str(root)):
        pytest.skip("/var/tmp is /tmp here")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_command_in_scratch_sees_scratch_as_its_tmp(outside_tmp: Path) -> None:
    """stress-ng --open names "/tmp" itself: a plan's command finds its scratch directory there."""
    executor = LocalExecutor(str(outside_tmp / "scratch"), name="private")
    if private_tmp.possible() is False:
        assert any("the host's /tmp" in note for note in executor.limit_notes)
        pytest.skip("not root: commands see the host's /tmp")
    scratch = executor.make_scratch()
    marker = f"marker-{os.getpid()}-{time.monotonic_ns()}"
    write = f"open('/tmp/{marker}', 'w').write('x'); import os; print(os.environ['TMPDIR'])"
    completed = executor.run([PYTHON, "-c", write], timeout=20, cwd=scratch)
    assert completed.ok, completed.stderr
    assert completed.stdout.decode().strip() == scratch
    assert not Path("/tmp", marker).exists() and Path(scratch, marker).read_text() == "x"
    assert executor.limit_notes == ()
    # a hook (not run in a scratch directory) sees the host's /tmp
    hook = executor.run([PYTHON, "-c", f"import os; print(os.path.exists('/tmp/{marker}'))"], timeout=20)
    assert hook.stdout.strip() == b"False"
    executor.close()


def test_a_program_kept_under_the_hosts_tmp_still_runs_in_scratch(outside_tmp: Path) -> None:
    """A virtualenv (or any program) made in the host's /tmp is not hidden by the scratch /tmp:
    its entry of /tmp is bound read-only in the command's /tmp; nothing else of the host's is seen."""
    if private_tmp.possible() is False:
        pytest.skip("not root: commands see the host's /tmp, so nothing there is hidden")
    executor = LocalExecutor(str(outside_tmp / "scratch"), name="private")
    tools = Path(tempfile.mkdtemp(prefix="triagebot-tools-", dir="/tmp"))
    other = Path(tempfile.mkdtemp(prefix="triagebot-other-", dir="/tmp"))
    try:
        (tools / "bin").mkdir()
        program = tools / "bin" / "tool"
        marker = f"marker-{os.getpid()}-{time.monotonic_ns()}"
        program.write_text(f"#!/bin/sh\necho run > /tmp/{marker}\nls /tmp\n"
                           f"touch {tools}/written 2>/dev/null && echo wrote || echo read-only\n")
        program.chmod(0o755)
        scratch = executor.make_scratch()
        for argv, env in (([str(program)], None), (["tool"], {"PATH": f"{tools / 'bin'}:/usr/bin:/bin"})):
            completed = executor.run(argv, timeout=20, cwd=scratch, env=env)
            assert completed.ok, completed.stderr
            seen = completed.stdout.decode().split()
            assert tools.name in seen and other.name not in seen  # its own entry only
            assert seen[-1] == "read-only" and not (tools / "written").exists()
            assert Path(scratch, marker).read_text() == "run\n" and not Path("/tmp", marker).exists()
        # the plan's own programs from /usr, on a PATH with no folder under /tmp: no entry of the
        # host's /tmp at all (a PATH folder under /tmp, such as a virtualenv's bin, is kept)
        listing = executor.run(["ls", "-A", "/tmp"], timeout=20, cwd=executor.make_scratch(),
                               env={"PATH": "/usr/bin:/bin"})
        assert listing.ok and listing.stdout == b""
        assert private_tmp.programs_under_tmp("ls", "/usr/bin:/bin") == ()
        assert private_tmp.programs_under_tmp("tool", f"{tools / 'bin'}:/usr/bin") == (tools.name,)
    finally:
        executor.close()
        shutil.rmtree(tools, ignore_errors=True)
        shutil.rmtree(other, ignore_errors=True)


def test_local_environment_is_small_and_fixed(local: LocalExecutor, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_SLACK_TOKEN", "secret")  # triagebot's own environment
    scratch = local.make_scratch()
    show = "import json, os; print(json.dumps(dict(os.environ)))"
    completed = local.run([PYTHON, "-c", show], timeout=20, cwd=scratch, env={"FIO_SIZE": "8M"})
    environment = json.loads(completed.stdout)
    assert "TRIAGE_SLACK_TOKEN" not in environment
    assert environment["LC_ALL"] == "C" and environment["FIO_SIZE"] == "8M"
    assert environment["TMPDIR"] == scratch
    with pytest.raises(ValueError):
        local.run(["true"], timeout=5, env={"A=B": "x"})


def test_local_reports_a_missing_command_as_127(local: LocalExecutor) -> None:
    completed = local.run(["no-such-command-here"], timeout=5)
    assert completed.returncode == 127 and b"not found" in completed.stderr


def test_local_scratch_is_made_and_cleaned(tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    executor = LocalExecutor(str(root))
    first, second = executor.make_scratch(), executor.make_scratch()
    assert first != second and Path(first).parent == root
    locked = Path(first) / "locked"
    locked.mkdir()
    (locked / "file").write_text("x")
    locked.chmod(0o500)  # benchmarks leave such things
    executor.remove_scratch(first)
    assert not Path(first).exists()
    for outside in (str(root), str(tmp_path), "/", f"{root}/../x", first + "/.."):
        with pytest.raises(ExecutorError, match="not a scratch directory"):
            executor.remove_scratch(outside)
    executor.put_file(f"{second}/job.fio", b"[global]\n", mode=0o600)
    assert executor.read_file(f"{second}/job.fio") == b"[global]\n"
    assert (Path(second) / "job.fio").stat().st_mode & 0o777 == 0o600
    executor.close()
    assert not Path(second).exists() and os.listdir(root) == []


def test_executor_for_the_packaged_host_is_local(tmp_path: Path) -> None:
    host = Host(name="h", reach="local", cpu_model="x", threads=1, sockets=1, memory_gb=1, disk="ssd",
                scratch_dir=str(tmp_path))
    executor = executor_for(host)
    assert isinstance(executor, LocalExecutor) and executor.name == "h"
    assert executor.run(["uname", "-r"], timeout=10).stdout.strip() == os.uname().release.encode()


# --- ssh --------------------------------------------------------------------------------------

@pytest.fixture
def remote(sshd: TestSshd, tmp_path: Path) -> Iterator[SshExecutor]:
    if sshd.process is None:
        sshd.start()  # a test that failed while it was down
    with SshExecutor(sshd.access(), str(tmp_path / "remote-scratch"), name="test-ssh",
                     reboot_timeout=20) as executor:
        yield executor


def test_remote_command_quotes_every_word() -> None:
    command = remote_command(["echo", "a b", "$(x)"], timeout=5, cwd="/tmp/it's", env=None, limits=None)
    assert command == ("cd -- '/tmp/it'\"'\"'s' && exec env LC_ALL=C LANG=C timeout -k 2 5.000s "
                       "echo 'a b' '$(x)'")
    with pytest.raises(ValueError):
        remote_command(["-oProxyCommand=x"], timeout=5, cwd=None, env=None, limits=None)


def test_ssh_runs_the_argv_exactly_and_nothing_else(remote: SshExecutor) -> None:
    scratch = remote.make_scratch()
    Path(scratch, "x").mkdir()
    completed = remote.run([PYTHON, "-c", ECHO_ARGV, *HOSTILE], timeout=20, cwd=scratch)
    assert completed.ok, completed.stderr
    assert json.loads(completed.stdout) == HOSTILE
    assert sorted(os.listdir(scratch)) == ["x"]
    remote.remove_scratch(scratch)
    assert not Path(scratch).exists()


def test_ssh_env_cwd_and_exit_status(remote: SshExecutor) -> None:
    scratch = remote.make_scratch()
    show = "import json, os; print(json.dumps([os.getcwd(), os.environ['LC_ALL'], os.environ['RUN']])); exit(3)"
    completed = remote.run([PYTHON, "-c", show], timeout=20, cwd=scratch, env={"RUN": "a b;c"})
    assert completed.returncode == 3 and not completed.timed_out
    assert json.loads(completed.stdout) == [scratch, "C", "a b;c"]
    assert remote.run(["no-such-command-here"], timeout=10).returncode == 127
    # a command's own exit status 255 is not taken for ssh's "connection failed"
    assert remote.run([PYTHON, "-c", "exit(255)"], timeout=10).returncode == 255


def test_ssh_put_and_read_a_file(remote: SshExecutor) -> None:
    scratch = remote.make_scratch()
    path = f"{scratch}/job file's $(name).fio"
    data = bytes(range(256)) * 64
    remote.put_file(path, data, mode=0o600)
    assert Path(path).read_bytes() == data and Path(path).stat().st_mode & 0o777 == 0o600
    assert remote.read_file(path) == data
    assert remote.read_file(path, max_bytes=10) == data[:10]
    with pytest.raises(ExecutorError, match="cannot read"):
        remote.read_file(f"{scratch}/absent")


def test_ssh_timeout_ends_the_remote_process_group(remote: SshExecutor, tmp_path: Path) -> None:
    pid_file = tmp_path / "remote-grandchild.pid"
    started = time.monotonic()
    completed = remote.run([PYTHON, "-c", GRANDCHILD, str(pid_file), "30"], timeout=1.0)
    assert completed.timed_out and not completed.ok
    assert time.monotonic() - started < 8
    assert wait_dead(int(pid_file.read_text())), "the remote grandchild outlived the timeout"


def test_remote_command_wraps_the_argv_in_prlimit() -> None:
    command = remote_command(["fio", "--name=x"], timeout=5, cwd=None, env={"TMPDIR": "/s/run-1"},
                             limits=Limits(address_space_bytes=1 << 30, open_files=8192, core_file_bytes=0))
    assert command == ("exec env LC_ALL=C LANG=C TMPDIR=/s/run-1 timeout -k 2 5.000s prlimit "
                       "--as=1073741824:1073741824 --nofile=8192:8192 --core=0:0 -- fio --name=x")


def test_ssh_rlimits_apply_nofile_core_as_fsize(remote: SshExecutor) -> None:
    completed = remote.run([PYTHON, "-c", SHOW_LIMITS], timeout=20, limits=LIMITS)
    assert completed.ok, completed.stderr
    limits, opened = json.loads(completed.stdout)
    assert limits["AS"] == [4 << 30] * 2 and limits["NOFILE"] == [64, 64] and limits["CORE"] == [0, 0]
    assert limits["FSIZE"] == [1 << 30] * 2 and limits["NPROC"] == [500, 500]
    assert opened < 64
    # no pids cgroup over SSH: for root, whom RLIMIT_NPROC does not bind, the run says so
    assert bool(remote.limit_notes) == (remote.access.user == "root")


def test_ssh_resource_limits_apply(remote: SshExecutor) -> None:
    scratch = remote.make_scratch()
    write = "open('big', 'wb').write(b'x' * (4 << 20))"
    limited = remote.run([PYTHON, "-c", write], timeout=20, cwd=scratch, limits=Limits(file_size_bytes=1 << 20))
    assert limited.returncode != 0
    assert os.path.getsize(Path(scratch) / "big") <= 1 << 20


def test_executor_for_an_ssh_host(sshd: TestSshd, tmp_path: Path) -> None:
    host = Host(name="lab-1", reach="ssh", cpu_model="x", threads=1, sockets=1, memory_gb=1, disk="ssd",
                scratch_dir=str(tmp_path / "s"), ssh=sshd.access())
    executor = executor_for(host)
    assert isinstance(executor, SshExecutor) and executor.name == "lab-1"
    assert executor.run(["uname", "-r"], timeout=10).stdout.strip() == os.uname().release.encode()


def test_ssh_checks_the_host_key(sshd: TestSshd, tmp_path: Path) -> None:
    other = tmp_path / "known_hosts"
    other.write_text(f"[127.0.0.1]:{sshd.port} ssh-ed25519 "
                     "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
    executor = SshExecutor(sshd.access(known_hosts_file=str(other)), str(tmp_path / "s"))
    with pytest.raises(ExecutorError, match="ssh refused") as caught:
        executor.run(["true"], timeout=10)
    assert not isinstance(caught.value, ConnectionLost)  # reconnecting would not fix this


@pytest.mark.parametrize("control_master", [False, True])
def test_ssh_survives_a_dropped_connection(sshd: TestSshd, tmp_path: Path, control_master: bool) -> None:
    if sshd.process is None:
        sshd.start()
    executor = SshExecutor(sshd.access(control_master=control_master), str(tmp_path / "s"),
                           reboot_timeout=20, max_backoff=1.0)
    try:
        assert executor.run(["true"], timeout=10).ok
        outcome: dict[str, BaseException | object] = {}

        def long_run() -> None:
            try:
                outcome["result"] = executor.run(["sleep", "20"], timeout=30)
            except BaseException as error:  # noqa: BLE001 - handed to the test thread
                outcome["result"] = error
        worker = threading.Thread(target=long_run)
        worker.start()
        time.sleep(1.0)
        sshd.stop()  # the "reboot": the server and every session die at once
        worker.join(20)
        assert isinstance(outcome["result"], ConnectionLost), outcome
        with pytest.raises(ConnectionLost):
            executor.run(["true"], timeout=5)  # still down
        restart = threading.Timer(1.5, sshd.start)
        restart.start()
        waited = executor.reconnect()
        restart.join()
        assert waited >= 1.0
        completed = executor.run(["uname", "-r"], timeout=10)
        assert completed.ok and completed.stdout.strip() == os.uname().release.encode()
    finally:
        executor.close()
        if sshd.process is None:
            sshd.start()


def test_ssh_reconnect_gives_up_within_its_bound(sshd: TestSshd, tmp_path: Path) -> None:
    executor = SshExecutor(sshd.access(port=_closed_port()), str(tmp_path / "s"), max_backoff=0.5)
    started = time.monotonic()
    with pytest.raises(ConnectionLost, match="no SSH answer within 2s"):
        executor.reconnect(timeout=2)
    assert time.monotonic() - started < 4


def _closed_port() -> int:
    from tests.support.sshd import free_port

    return free_port()
