"""No value from mail reaches a program as an option (../shared/hostile/round3/b4-msgid-option-injection.md):
each program triagebot starts with a mail value in its argv — b4, git, ssh, lkp, a lab host's
hook — is fed `-o…`, `--upload-pack=…` and `-n…` as that value, through the one helper that
builds those argvs (triagebot/untrusted/argv.py). b4, git and ssh are the real programs."""
from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.fix_thread import fix_thread, message_id
from tests.support.lab import make_bisect_repo
from triagebot.fix_test.series import FixRefused, b4_program, prepare_fix
from triagebot.lifecycle.git_tree import GitTree
from triagebot.lifecycle.tree_protocol import TreeError
from triagebot.reproduce.executors.ssh import ssh_argv
from triagebot.rules.hosts import parse_hosts
from triagebot.rules.self_describe import MachineFacts
from triagebot.rules.templates import load_templates
from triagebot.rules.trees import WatchedTree
from triagebot.untrusted.argv import OptionLike, after_options, operand, substituted


def hostile(target: Path) -> list[str]:
    """The three shapes of an option a value may take, each aimed at `target`."""
    return [f"-o{target}", f"--upload-pack=touch {target}", f"-n{target}.txt"]


def test_the_helper_ends_options_or_refuses_a_leading_dash() -> None:
    assert after_options(["b4", "am"], ["-oX"]) == ["b4", "am", "--", "-oX"]
    for value in ("-oX", "--upload-pack=X", "-nX", ""):
        with pytest.raises(OptionLike):
            operand(value, "a Message-ID")
    assert substituted(["boot", "{commit}", "x{mbox}"], {"{commit}": "v6.9", "{mbox}": "/s/f.mbx"}) == (
        "boot", "v6.9", "x/s/f.mbx")
    # one pass: a value naming another placeholder is not filled in again
    assert substituted(["{a}", "{b}"], {"{a}": "{b}", "{b}": "b"}) == ("{b}", "b")
    with pytest.raises(OptionLike, match="starts with '-'"):
        substituted(["hook", "{commit}"], {"{commit}": "--upload-pack=X"})


@pytest.mark.skipif(not shutil.which("git") or not Path(b4_program()).exists() and not shutil.which("b4"),
                    reason="needs git and b4")
@pytest.mark.parametrize("shape", [0, 1, 2])
def test_b4_reads_a_hostile_message_id_as_an_id(tmp_path: Path, shape: int) -> None:
    repo = tmp_path / "linux"
    shas = make_bisect_repo(repo, 40, 37)
    _v1, v2 = fix_thread(repo, shas[37], "root@x")
    target = tmp_path / "pwned"
    evil = hostile(target)[shape]
    old = message_id(v2[0]).encode()
    thread = [mail.replace(old, evil.encode()) for mail in v2[:3]]  # the cover's id, and the parts' references
    try:
        fix = prepare_fix(thread, tmp_path / "work", "http://127.0.0.1/x/")
        assert fix.mbox == tmp_path / "work" / "am" / "fix.mbx" and fix.message_id == evil
    except FixRefused as refused:  # b4 looked the id up as an id: found or not, never an option
        assert "b4" in str(refused)
    assert not target.exists() and not Path(f"{target}.mbx").exists() and not Path(f"{target}.txt.mbx").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["linux", "work"]


@pytest.mark.skipif(not shutil.which("git"), reason="needs git")
@pytest.mark.parametrize("shape", [0, 1, 2])
@pytest.mark.parametrize("where", ["url", "branch"])
def test_git_fetch_reads_a_hostile_url_or_branch_as_data(tmp_path: Path, shape: int, where: str) -> None:
    target = tmp_path / "pwned"
    served = tmp_path / "served.git"
    subprocess.run(["git", "init", "-q", "--bare", str(served)], check=True)
    value = hostile(target)[shape]
    url, branch = (value, "master") if where == "url" else (f"file://{served}", value)
    tree = GitTree(WatchedTree("hostile", url, branch), tmp_path / "state")
    with pytest.raises(TreeError, match="git fetch"):
        tree.fetch(datetime(2024, 1, 1, tzinfo=UTC))
    assert not target.exists() and not Path(f"{target}.txt").exists()


@pytest.mark.skipif(not shutil.which("ssh"), reason="needs the OpenSSH client")
@pytest.mark.parametrize("command", ["-oUser=evil", "--upload-pack=x", "-nUser=evil"])
def test_ssh_reads_a_command_word_after_the_destination_as_the_command(command: str) -> None:
    # `ssh -G` prints the configuration it would connect with: a word read as an option changes it
    argv = ssh_argv("ssh", ["-G", "-F", "none", "-o", "User=triage"], "lab.example.org", command)
    assert argv[-3:] == ["--", "lab.example.org", command]
    shown = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert shown.returncode == 0, shown.stderr
    assert "user triage" in shown.stdout.splitlines() and "user evil" not in shown.stdout


HOST = '''
[[host]]
name = "lab-1"
reach = "local"
cpu_model = "x"
threads = 2
sockets = 1
memory_gb = 4
disk = "ssd"
scratch_dir = "/tmp/lab-1"
switch_kernel = ["boot-kernel", "{commit}"]
list_commits = ["git", "rev-list", "{good}..{bad}"]
build_patched = ["apply-and-build", "{commit}", "{mbox}"]
'''


@pytest.mark.parametrize("value", ["-oX", "--upload-pack=X", "-nX"])
def test_a_hosts_hooks_refuse_a_commit_or_file_that_is_an_option(tmp_path: Path, value: str) -> None:
    [host] = parse_hosts(HOST, tmp_path / "hosts.toml", probe=lambda _: MachineFacts())
    with pytest.raises(ValueError):
        host.switch_kernel_argv(value)
    with pytest.raises(ValueError):
        host.list_commits_argv(value, "v6.9")
    with pytest.raises(ValueError):
        host.list_commits_argv("v6.8", value)
    with pytest.raises(ValueError):
        host.build_patched_argv(value, "/tmp/lab-1/fix.mbx")
    with pytest.raises(OptionLike):
        host.build_patched_argv("v6.9", value)
    assert host.build_patched_argv("v6.9", "/tmp/lab-1/fix.mbx") == ("apply-and-build", "v6.9", "/tmp/lab-1/fix.mbx")


@pytest.mark.parametrize("value", ["-oX", "--upload-pack=X", "-nX"])
def test_lkps_argv_refuses_a_job_file_that_is_an_option(value: str) -> None:
    lkp = load_templates(PROJECT / "rules").named("lkp")
    assert lkp is not None and "{job}" in lkp.argv
    assert substituted(lkp.argv, {"{job}": "/scratch/job.yaml"}) == ("lkp", "run", "/scratch/job.yaml")
    with pytest.raises(OptionLike):
        substituted(lkp.argv, {"{job}": value}, "the LKP job file")
