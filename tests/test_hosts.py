"""Hosts: rules/hosts.toml validation, host scoring and choice, and `triage hosts`."""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from tests.conftest import CORPUS, PROJECT
from triagebot.cli import hosts as hosts_cli
from triagebot.errors import RulesError
from triagebot.parse.lkp import parse_machine
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_from_json, report_to_json
from triagebot.reproduce.hosts import choose_host, disk_from_parameters, microarch_of, score_host
from triagebot.rules.hosts import Host, load_hosts, parse_hosts
from triagebot.store.sqlite import SqliteStore

CASCADE_LAKE_96 = ("96 threads 2 sockets Intel(R) Xeon(R) Platinum 8260L CPU @ 2.40GHz "
                   "(Cascade Lake) with 128G memory")
ICE_LAKE_64 = "64 threads 2 sockets Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz (Ice Lake) with 256G memory"

LOCAL = """
[[host]]
name = "this-machine"
reach = "local"
cpu_model = "Intel(R) Xeon(R) Processor"
microarch = "Sapphire Rapids"
threads = 2
sockets = 1
memory_gb = 23
disk = "ssd"
scratch_dir = "/var/tmp/triage"
"""

CASCADE = """
[[host]]
name = "clx-2s-96t"
reach = "ssh"
cpu_model = "Intel(R) Xeon(R) Platinum 8260L CPU @ 2.40GHz"
microarch = "Cascade Lake"
threads = 96
sockets = 2
memory_gb = 128
disk = "hdd"
scratch_dir = "/srv/scratch"
scratch_devices = ["/dev/sdb"]
labels = ["lab"]
switch_kernel = ["sudo", "/usr/local/sbin/boot-kernel", "{commit}"]
running_kernel = ["cat", "/etc/kernel-commit"]
[host.ssh]
host = "clx.lab.example"
user = "triage"
identity_file = "/etc/triage/id_ed25519"
known_hosts_file = "/etc/triage/known_hosts"
"""

SKYLAKE_SMALL = """
[[host]]
name = "skl-4t"
reach = "local"
cpu_model = "Intel(R) Xeon(R) CPU E3-1225 v5 @ 3.30GHz"
threads = 4
sockets = 1
memory_gb = 16
disk = "ssd"
scratch_dir = "/tmp/s"
"""


def hosts(text: str) -> tuple[Host, ...]:
    return parse_hosts(text, Path("rules/hosts.toml"))


def test_the_packaged_inventory_describes_this_machine_honestly() -> None:
    (host,) = load_hosts(PROJECT / "rules")
    assert host.reach == "local" and host.name == "this-machine"
    assert host.running_kernel == ("uname", "-r")
    # the embedded default cannot switch kernels: its runs are A/A runs on the running kernel
    assert host.switch_kernel == () and not host.can_switch_kernel
    with pytest.raises(ValueError, match="cannot switch"):
        host.switch_kernel_argv("abc1234")


def test_a_full_ssh_entry_loads() -> None:
    (host,) = hosts(CASCADE)
    assert host.ssh is not None and host.ssh.port == 22 and host.ssh.user == "triage"
    assert host.scratch_devices == ("/dev/sdb",) and host.labels == ("lab",)
    assert host.switch_kernel_argv("0123abcd") == ("sudo", "/usr/local/sbin/boot-kernel", "0123abcd")


@pytest.mark.parametrize("commit", [
    "-rf",  # would read as an option
    "a b",  # two words
    "v1..v2",  # a range, not one commit
    "$(reboot)",  # shell syntax (never run by a shell anyway)
    "",
])
def test_switch_kernel_refuses_what_is_no_commit(commit: str) -> None:
    (host,) = hosts(CASCADE)
    with pytest.raises(ValueError):
        host.switch_kernel_argv(commit)


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


@pytest.mark.parametrize(("text", "problem"), [
    # a hook written as a shell string is refused, not split
    (_edit(LOCAL, 'scratch_dir = "/var/tmp/triage"',
           'scratch_dir = "/var/tmp/triage"\nrunning_kernel = "uname -r; reboot"'), "never run through a shell"),
    # a switch hook that cannot know which kernel to boot
    (_edit(CASCADE, '"{commit}"]', '"latest"]'), "must mention {commit}"),
    # placeholders other than {commit}
    (_edit(CASCADE, '"{commit}"]', '"{commit}", "{host}"]'), "unknown placeholder {host}"),
    (_edit(LOCAL, 'disk = "ssd"', 'disk = "floppy"'), "disk must be one of nvme, ssd, hdd"),
    (_edit(LOCAL, "threads = 2", "threads = 0"), "threads must be a whole number"),
    # a process budget too small for any benchmark, or not a number
    (_edit(LOCAL, "threads = 2", "threads = 2\nmax_processes = 1"), "max_processes must be a whole number from 16"),
    (_edit(LOCAL, "threads = 2", "threads = 2\nscratch_gb = '20G'"), "scratch_gb must be a whole number"),
    (_edit(LOCAL, "threads = 2", 'threads = "2"'), "threads must be a whole number"),
    (_edit(LOCAL, 'reach = "local"', 'reach = "telnet"'), "reach must be one of local, ssh"),
    (_edit(LOCAL, '"/var/tmp/triage"', '"scratch"'), "scratch_dir must be an absolute path"),
    (_edit(LOCAL, '"/var/tmp/triage"', '"/tmp/../etc"'), "without '..'"),
    (_edit(LOCAL, "sockets = 1", "sockets = 1\ncolour = 'blue'"), "unknown key(s) colour"),
    (_edit(CASCADE, '"/dev/sdb"', '"/home/x"'), "is not a /dev/ path"),
    (_edit(CASCADE, "[host.ssh]", "[host.sshx]"), "unknown key(s) sshx"),
    (_edit(CASCADE, 'user = "triage"', 'user = "triage; rm"'), "user must be a login name"),
    (_edit(CASCADE, 'host = "clx.lab.example"', 'host = "-oProxyCommand=x"'), "host must be a host name"),
    (_edit(CASCADE, 'user = "triage"\n', ""), "user must be a non-empty string"),
    (_edit(CASCADE, 'host = "clx.lab.example"', 'host = "clx.lab.example"\nport = 0'), "port must be"),
    (LOCAL.replace("\nreach", "\nssh = {}\nreach"), "a local host takes no [host.ssh] table"),
    (LOCAL + LOCAL, "used by an earlier entry"),
    # tools: a table of names and absolute paths
    (_edit(LOCAL, "threads = 2", 'threads = 2\ntools = ["lkp"]'), "tools must be a table"),
    (_edit(LOCAL, "threads = 2", 'threads = 2\ntools = { lkp-tests = "lkp" }'), 
     "tools.lkp-tests must be an absolute path"),
    (_edit(LOCAL, "threads = 2", 'threads = 2\ntools = { "a b" = "/opt/x" }'), "is not a tool name"),
    # untrusted_code: a boolean, never a string that reads like one
    (_edit(LOCAL, "threads = 2", 'threads = 2\nuntrusted_code = "yes"'), "untrusted_code must be true or false"),
    ("[[hosts]]\nname = 'x'\n", "rules/hosts.toml:1: unknown key(s) hosts (expected host, max_wait_minutes)"),
    ("[[host]\n", "not valid TOML"),
])
def test_validation_names_file_line_and_entry(text: str, problem: str) -> None:
    with pytest.raises(RulesError) as caught:
        hosts(text)
    message = str(caught.value)
    assert message.startswith("rules/hosts.toml")
    assert problem in message
    if "TOML" not in problem and "key(s) hosts" not in problem:
        assert "[[host]] entry" in message


def test_the_process_budget_is_64_a_thread_at_least_256_unless_given() -> None:
    (small,) = hosts(LOCAL)
    assert small.process_budget == 256 and small.scratch_gb is None
    (large,) = hosts(_edit(LOCAL, "threads = 2", "threads = 224"))
    assert large.process_budget == 224 * 64
    (given,) = hosts(_edit(LOCAL, "threads = 2", "threads = 224\nmax_processes = 2000\nscratch_gb = 100"))
    assert given.process_budget == 2000 and given.scratch_gb == 100


def test_a_host_names_the_tools_the_lab_installed_and_the_planner_sees_them() -> None:
    from triagebot.reproduce.limits import host_shape
    (host,) = hosts(_edit(LOCAL, "threads = 2",
                          'threads = 2\ntools = { "lkp-tests" = "/opt/lkp-tests/", will-it-scale = "/opt/wis" }'))
    assert host.tool("lkp-tests") == "/opt/lkp-tests" and host.tool("fxmark") is None
    shape = host_shape(host)
    assert shape.tool("will-it-scale") == "/opt/wis"
    (plain,) = hosts(LOCAL)
    assert plain.tools == () and host_shape(plain).tool("lkp-tests") is None


def test_errors_point_at_the_entry_that_is_wrong() -> None:
    text = LOCAL + _edit(SKYLAKE_SMALL, "memory_gb = 16", "memory_gb = -1")
    with pytest.raises(RulesError) as caught:
        hosts(text)
    header_line = text.splitlines().index("[[host]]", 3) + 1
    assert str(caught.value).startswith(f"rules/hosts.toml:{header_line}: [[host]] entry 2 (skl-4t): memory_gb")


def test_a_missing_inventory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="hosts.toml: no host inventory"):
        load_hosts(tmp_path)


def test_scoring_prefers_the_closer_machine_and_lists_the_differences() -> None:
    machine = parse_machine(CASCADE_LAKE_96)
    local, cascade = hosts(LOCAL + CASCADE)
    far = score_host(local, machine, disk="hdd")
    near = score_host(cascade, machine, disk="hdd")
    assert near.score == 1.0 and near.differences == ()
    assert 0 <= far.score < 0.5
    assert far.differences == (
        "microarchitecture: host Sapphire Rapids, test machine Cascade Lake",
        "threads: host 2, test machine 96",
        "sockets: host 1, test machine 2",
        "memory: host 23G, test machine 128G",
        "disk: host ssd, test ran on hdd",
    )
    assert choose_host((local, cascade), machine, busy=set()).host is cascade  # type: ignore[union-attr]
    # one run per host at a time: the busy host is passed over, even when it fits best
    assert choose_host((local, cascade), machine, busy={"clx-2s-96t"}).host is local  # type: ignore[union-attr]
    assert choose_host((local, cascade), machine, busy={"clx-2s-96t", "this-machine"}) is None


def test_same_core_family_scores_above_a_different_generation() -> None:
    local, skylake = hosts(LOCAL + SKYLAKE_SMALL)
    cascade = parse_machine(CASCADE_LAKE_96)
    # the E3-1225 v5's model number says Skylake, the core family Cascade Lake shares
    assert microarch_of(None, skylake.cpu_model).name == "Skylake"  # type: ignore[union-attr]
    match = score_host(skylake, cascade)
    assert "microarchitecture: host Skylake, test machine Cascade Lake (same core family)" in match.differences
    assert match.score > score_host(local, cascade).score
    ice_lake = parse_machine(ICE_LAKE_64)
    assert score_host(local, ice_lake).score < score_host(local, parse_machine(
        "4 threads Intel(R) Xeon(R) CPU E3-1225 v5 @ 3.30GHz (Skylake) with 16G memory")).score


def test_unknown_facts_are_not_counted_and_are_said() -> None:
    (local,) = hosts(LOCAL)
    assert score_host(local, None).differences == ("the report names no test machine",)
    qemu = parse_machine("qemu-system-x86_64 -enable-kvm -cpu SandyBridge -smp 2 -m 16G")
    match = score_host(local, qemu)
    # threads and memory come from the qemu command line; 2 == 2
    assert "memory: host 23G, test machine 16G" in match.differences
    assert not any(item.startswith("threads") for item in match.differences)
    bare = score_host(local, parse_machine("some box"))
    assert bare.score == 0.0 and "no comparable facts" in bare.differences[0]


@pytest.mark.parametrize(("value", "disk"), [
    ("1HDD", "hdd"), ("4HDD", "hdd"), ("1SSD", "ssd"), ("NVMe", "nvme"),
    ("1BRD", None),  # a ram disk: any host can make one
    ("2pmem", None),
])
def test_disk_type_from_lkp_parameters(value: str, disk: str | None) -> None:
    assert disk_from_parameters((("fs", "xfs"), ("disk", value))) == disk


def _store_report(db: Path, message_id: str, description: str) -> None:
    raw = (f"Message-ID: <{message_id}>\nSubject: [linux-next:master] [xfs] abc: "
           f"-10.0% fio.write_iops\nFrom: kernel test robot <oliver.sang@intel.com>\n\nbody\n").encode()
    report = parse_message(raw, Source("eml"))
    data = report_to_json(report)
    data["test_machine"] = {"description": description, **{
        key: value for key, value in parse_machine(description).__dict__.items() if key != "description"}}
    data["parameters"] = {"disk": "1HDD"}
    with SqliteStore(db) as store:
        store.put_message(message_id, raw, "eml", None, "2024-01-01T00:00:00Z")
        store.put_record(message_id, report_from_json(data), "test")


def _run(*arguments: str) -> int:
    parser = argparse.ArgumentParser()
    hosts_cli.add_arguments(parser)
    return hosts_cli.run(parser.parse_args(list(arguments)))


def test_hosts_command_lists_and_matches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "hosts.toml").write_text(LOCAL + CASCADE)
    db = tmp_path / "triage.db"
    _store_report(db, "clx@example.org", CASCADE_LAKE_96)

    assert _run("--rules", str(rules)) == 0
    listing = capsys.readouterr().out
    assert "this-machine  [this machine]" in listing and "clx-2s-96t  [ssh triage@clx.lab.example:22]" in listing
    assert "switch kernel: sudo /usr/local/sbin/boot-kernel '{commit}'" in listing
    assert "untrusted code" not in listing  # no host is marked: the default
    (rules / "hosts.toml").write_text(_edit(LOCAL, "threads = 2", "threads = 2\nuntrusted_code = true") + CASCADE)
    assert _run("--rules", str(rules)) == 0
    marked = capsys.readouterr().out
    assert marked.count("  untrusted code: the daemon builds any sender's patch series here by itself") == 1
    assert marked.index("untrusted code") < marked.index("clx-2s-96t")  # this-machine's, listed first
    assert _run("--rules", str(rules), "--json") == 0
    assert [host["untrusted_code"] for host in json.loads(capsys.readouterr().out)["hosts"]] == [True, False]
    (rules / "hosts.toml").write_text(LOCAL + CASCADE)

    assert _run("--rules", str(rules), "--match", "<clx@example.org>", "--db", str(db)) == 0
    text = capsys.readouterr().out
    assert text.index("clx-2s-96t  score 1.00") < text.index("this-machine  score")
    assert "  - threads: host 2, test machine 96" in text

    assert _run("--rules", str(rules), "--match", "clx@example.org", "--db", str(db), "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert [match["host"] for match in data["matches"]] == ["clx-2s-96t", "this-machine"]
    assert data["matches"][1]["differences"][-1] == "disk: host ssd, test ran on hdd"

    assert _run("--rules", str(rules), "--match", "nobody@example.org", "--db", str(db)) == 1
    assert "no such message" in capsys.readouterr().err


def test_corpus_machines_all_score_within_bounds() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is absent: {CORPUS}")
    (local,) = load_hosts(PROJECT / "rules")
    seen = 0
    for path in sorted(CORPUS.glob("*.eml")):
        report = parse_message(path.read_bytes(), Source("eml"))
        if report.test_machine is None:
            continue
        seen += 1
        match = score_host(local, report.test_machine, disk_from_parameters(report.parameters))
        assert 0.0 <= match.score <= 1.0, path.name
        # this 2-thread machine differs from every lab box the corpus names
        assert match.differences, path.name
    assert seen >= 10


BISECTING = CASCADE.replace("[host.ssh]", '''
list_commits = ["git", "-C", "/src/linux", "rev-list", "--reverse", "--first-parent", "{good}..{bad}"]
build_patched = ["sudo", "/usr/local/sbin/build-patched", "{commit}", "{mbox}"]
[host.ssh]''')


def test_the_bisect_and_fix_hooks_load_and_substitute() -> None:
    (host,) = hosts(BISECTING)
    assert host.list_commits_argv("v6.8", "abc1234")[-1] == "v6.8..abc1234"
    assert host.build_patched_argv("abc1234", "/srv/scratch/x/fix.mbx") == (
        "sudo", "/usr/local/sbin/build-patched", "abc1234", "/srv/scratch/x/fix.mbx")
    with pytest.raises(ValueError, match="not a commit"):
        host.list_commits_argv("-rf", "abc1234")  # never an option to the hook
    (plain,) = hosts(CASCADE)
    with pytest.raises(ValueError, match="cannot bisect"):
        plain.list_commits_argv("v6.8", "abc1234")
    with pytest.raises(ValueError, match="cannot test fixes"):
        plain.build_patched_argv("abc1234", "/tmp/x")


@pytest.mark.parametrize("line, problem", [
    # a shell string
    ('list_commits = "git rev-list {good}..{bad}"', "must be an argv list"),
    # a placeholder this hook does not fill
    ('list_commits = ["git", "rev-list", "{good}..{commit}"]', "unknown placeholder {commit}"),
    # the mbox never named: the hook could not know what to apply
    ('build_patched = ["/usr/local/sbin/build", "{commit}"]', "build_patched must mention {mbox}"),
])
def test_bad_bisect_and_fix_hooks_are_refused_with_file_and_line(line: str, problem: str) -> None:
    with pytest.raises(RulesError, match=re.escape(problem)):
        hosts(CASCADE.replace("[host.ssh]", f"{line}\n[host.ssh]"))
