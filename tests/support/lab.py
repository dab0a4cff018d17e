"""A test lab on this machine: kernel-switch hooks that fake two kernels, slow by construction.

`python3 -m tests.support.lab switch COMMIT STATE_DIR` records COMMIT as the "running kernel";
`python3 -m tests.support.lab running STATE_DIR` prints the commit last switched to;
`python3 -m tests.support.lab stop STATE_DIR` is the tests' clean-up (nothing runs between samples).

A lab of several hosts (`write_together`) switches kernels in step at first, as hosts of one lab
rebooting together would: each host's k-th switch (k <= `switches`) waits until every host of
the lab has made k-1 switches (at most `timeout_s`). Runs that start together therefore
overlap by construction, however the machine's load spreads their start: host X's sample k+1
starts after every other host finished its switch k, so after its first sample ended; a run
of more than `switches` samples on each host overlaps every other one. A one-at-a-time lab
would not overlap: each host's first switches would wait out the timeout and its run would end
before the next host's began.

The lab's benchmark is real sysbench behind a shim, `LAB_BIN/sysbench`, that `write_lab_rules`
puts first on the PATH the tests give triagebot (`lab_path`). The shim runs the real sysbench
with the same arguments and rewrites its "events per second" to events per CPU-second of
sysbench itself, times SLOW_FACTOR when the running "kernel" is a slow commit (SLOW_COMMIT or
a report copy's culprit, SLOW_COMMITS). Events per
CPU-second do not depend on how busy the machine is (a competing load takes CPU time, not
work per event), so the slow commit is slower by a fixed factor whatever else runs beside the
tests: the regressing pair is confirmed and an A/A pair is not, on an idle machine or a loaded one.

For bisection the lab has a real git repository (`make_bisect_repo`): each commit carries a file
`lab-factor` whose number is the share of the work per event its "kernel" gets done, 1.0 up to a
known commit and SLOW_FACTOR from it on. `switch COMMIT STATE REPO` reads that file of COMMIT
with git (`git show COMMIT:lab-factor`) into the state directory, and the shim applies it: the
slowdown follows the commit's content, not its name. `noise STATE SIGMA SEED` raises the noise:
each sample is then also multiplied by a log-normal factor of that sigma, drawn from a seeded
sequence by the sample's number, so a noisy run is the same run every time.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

SLOW_COMMIT = "c0ffee1234ab"  # the lab's regressing commit: its "kernel" does each event's work slower
SLOW_FACTOR = 0.6  # the slow kernel's events per CPU-second, as a share of the others'
# the culprits of report_copies, one regression each (issue 26 joins reports of one culprit):
# (sha, subject), every sha and subject its own
COPY_CULPRITS = (
    ("c0ffee1234ab", "sched: retune the wakeup granularity for small machines"),
    ("c0ffee2345bc", "sched/fair: scale the migration cost by the LLC size"),
    ("c0ffee3456cd", "mm: batch the per-cpu page list refills"),
    ("c0ffee4567de", "x86/entry: clear the branch history on every syscall"),
    ("c0ffee5678ef", "timers: keep the idle tick running on busy cores"),
    ("c0ffee6789f0", "sched/topology: rebuild the domains after a hotplug"),
    ("c0ffee789a01", "rcu: expedite grace periods while the system boots"),
    ("c0ffee89ab12", "locking/mutex: spin less when the owner sleeps"),
    ("c0ffee9abc23", "mm/vmscan: age the anonymous lists less eagerly"),
    ("c0ffeeabcd34", "block: plug requests across the whole submission"),
    ("c0ffeebcde45", "ext4: prefetch the block bitmaps at mount"),
    ("c0ffeecdef56", "net: defer the socket wakeups to the softirq"),
    ("c0ffeedef067", "sched/core: check the idle sibling before the wakee's"),
    ("c0ffeeef0178", "mm/slub: keep one more slab per cpu partial list"),
    ("c0ffeef01289", "x86/mm: flush the whole TLB past 33 pages"),
    ("c0ffee01239a", "printk: take the console lock once per record batch"),
)
SLOW_COMMITS = tuple(sha for sha, _ in COPY_CULPRITS)  # the lab's slow "kernels": SLOW_COMMIT is the first
HOOK = (sys.executable, str(Path(__file__).resolve()))
LAB_BIN = "lab-bin"  # below the lab's root: the sysbench shim

_SHIM = '''#!{python}
"""The test lab's sysbench (tests/support/lab.py): real sysbench, events per CPU-second."""
import math, random, re, resource, subprocess, sys
STATE, REAL, SLOW, FACTOR = {state!r}, {real!r}, {slow!r}, {factor!r}
completed = subprocess.run([REAL, *sys.argv[1:]], stdout=subprocess.PIPE)
used = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = used.ru_utime + used.ru_stime
text = completed.stdout.decode("utf-8", "replace")
events = re.search(r"total number of events:\\s*(\\d+)", text)
def read(name):
    try:
        return open(STATE + "/" + name).read().strip()
    except OSError:
        return ""
running = read("running")
factor = float(read("factor") or (FACTOR if running in SLOW else 1.0))
noise = read("noise").split()
if noise:  # sigma, seed: the n-th sample's log-normal factor of a seeded sequence
    count = int(read("count") or 0)
    open(STATE + "/count", "w").write(str(count + 1))
    factor *= math.exp(random.Random(int(noise[1]) * 1000003 + count).gauss(0.0, float(noise[0])))
if events and cpu > 0:
    rate = int(events.group(1)) / cpu * factor
    text = re.sub(r"(events per second:\\s*)[0-9.]+", lambda m: m.group(1) + "%.2f" % rate, text)
sys.stdout.write(text)
sys.exit(completed.returncode)
'''


def write_shim(root: Path, state: Path) -> Path:
    """The lab's sysbench shim in `root/lab-bin`; its path."""
    real = shutil.which("sysbench", path=os.environ.get("PATH", "/usr/bin:/bin"))
    if real is None:
        raise FileNotFoundError("sysbench is not installed")
    shim = root / LAB_BIN / "sysbench"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text(_SHIM.format(python=sys.executable, state=str(state), real=real, slow=SLOW_COMMITS,
                                 factor=SLOW_FACTOR))
    shim.chmod(0o755)
    return shim


def lab_path(root: Path, path: str | None = None) -> str:
    """A PATH with the lab's shims first (for the environment of the triagebot under test)."""
    return f"{root / LAB_BIN}:{path if path is not None else os.environ.get('PATH', '/usr/bin:/bin')}"


def write_lab_rules(root: Path, project: Path, host_lines: str = "", repo: Path | None = None) -> tuple[Path, Path]:
    """A rules directory (the project's templates, one lab host), the lab's state directory and
    its sysbench shim (run triagebot with PATH=lab_path(root)); `host_lines` are more TOML lines
    of the host (`tools = {…}`, `scratch_gb = 4`). With a bisection `repo` the switch hook reads
    each commit's lab-factor from it and the host lists commits with git (`list_commits`)."""
    rules, state = root / "rules", root / "lab-state"
    shutil.copytree(project / "rules" / "reproducers", rules / "reproducers")
    state.mkdir(parents=True)
    (state / "slow").write_text(SLOW_COMMIT)
    write_shim(root, state)
    (rules / "hosts.toml").write_text(f"""
[[host]]
name = "lab-local"
reach = "local"
cpu_model = "test lab"
threads = 2
sockets = 1
memory_gb = 24
disk = "ssd"
scratch_dir = "{root / 'scratch'}"
switch_kernel = {json.dumps([*HOOK, "switch", "{commit}", str(state), *([str(repo)] if repo else [])])}
running_kernel = {json.dumps([*HOOK, "running", str(state)])}
{f"list_commits = {json.dumps(list_commits_hook(repo))}" if repo else ""}
{f"build_patched = {json.dumps([*HOOK, 'build-patched', '{commit}', '{mbox}', str(state), str(repo)])}" if repo else ""}
{host_lines}""")
    return rules, state


SWITCH_SECONDS = "switch_seconds"  # in a host's state directory: how long its kernel switch takes
REPORT = Path(__file__).resolve().parents[2] / "fixtures" / "lab" / "sysbench-cpu-regression.eml"
TOGETHER = "together.json"  # in a host's state directory: the lab it switches in step with
SWITCHES = "switches"  # in a host's state directory: how many switches it made


def write_together(states: list[Path], switches: int = 4, timeout_s: float = 600) -> None:
    """Make the hosts of these state directories switch in step for their first `switches` switches."""
    for state in states:
        state.mkdir(parents=True, exist_ok=True)
        (state / TOGETHER).write_text(json.dumps({"peers": [str(peer) for peer in states], "switches": switches,
                                                  "timeout_s": timeout_s}))


def write_slow(state: Path, seconds: float) -> None:
    """Make the host of this state directory take `seconds` for each kernel switch (a reboot)."""
    state.mkdir(parents=True, exist_ok=True)
    (state / SWITCH_SECONDS).write_text(str(seconds))


def report_copies(folder: Path, count: int) -> list[str]:
    """`count` copies of the lab's report, each its own Message-ID, dated a minute apart (in 2099:
    within any admission window) and bisected to its own slow commit (COPY_CULPRITS: distinct
    regressions, each taken on); their Message-IDs, oldest first."""
    if count > len(COPY_CULPRITS):
        raise ValueError(f"report_copies: at most {len(COPY_CULPRITS)} copies of distinct culprits, not {count}")
    original = REPORT.read_bytes()
    culprit = f'{SLOW_COMMIT} ("{COPY_CULPRITS[0][1]}")'.encode()
    folder.mkdir(parents=True, exist_ok=True)
    ids = []
    for number in range(1, count + 1):
        message_id = f"20990415071244.lab{number}@tberg-ws"
        hour, minute = divmod(number, 60)
        sha, subject = COPY_CULPRITS[number - 1]
        text = original.replace(b"20240415071244.lab1@tberg-ws", message_id.encode()).replace(
            b"Date: Mon, 15 Apr 2024 09:12:44", f"Date: Wed, 15 Apr 2099 {9 + hour:02}:{minute:02}:44".encode())
        if message_id.encode() not in text or b"2099" not in text or culprit not in text:
            raise ValueError(f"{REPORT}: its Message-ID, Date or culprit is not the one report_copies rewrites")
        text = text.replace(culprit, f'{sha} ("{subject}")'.encode())
        (folder / f"report-{number}.eml").write_bytes(text)
        ids.append(message_id)
    return ids


def _switches(state: Path) -> int:
    try:
        return int((state / SWITCHES).read_text() or 0)
    except (OSError, ValueError):
        return 0


def _wait_for_peers(state: Path, count: int) -> None:
    """The k-th switch of a lab in step waits for every host's (k-1)-th."""
    import time

    if not (state / TOGETHER).exists():
        return
    together = json.loads((state / TOGETHER).read_text())
    if count > together["switches"]:
        return
    deadline = time.monotonic() + together["timeout_s"]
    while time.monotonic() < deadline:
        if all(_switches(Path(peer)) >= count - 1 for peer in together["peers"]):
            return
        time.sleep(0.05)

FACTOR_FILE = "lab-factor"  # in each commit of the bisection repository: its kernel's speed


def git(repo: Path, *args: str) -> str:
    """Real git in `repo`, isolated from the user's configuration; its stdout."""
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo),
                   "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "Lab", "GIT_AUTHOR_EMAIL": "lab@example.org",
                   "GIT_COMMITTER_NAME": "Lab", "GIT_COMMITTER_EMAIL": "lab@example.org",
                   "GIT_AUTHOR_DATE": "2024-04-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-04-01T00:00:00Z"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=environment).stdout


def make_bisect_repo(repo: Path, commits: int, first_slow: int, slow_factor: float = SLOW_FACTOR) -> list[str]:
    """A real git repository of `commits` commits in a line; those from number `first_slow`
    (0-based) on have a `lab-factor` of `slow_factor` (SLOW_FACTOR), the ones before 1.0. Their
    shas, oldest first."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    shas = []
    for number in range(commits):
        (repo / FACTOR_FILE).write_text(f"{slow_factor if number >= first_slow else 1.0}\n")
        (repo / "history.txt").open("a").write(f"change {number}\n")
        git(repo, "add", FACTOR_FILE, "history.txt")
        git(repo, "commit", "-q", "-m", f"lab change {number}")
        shas.append(git(repo, "rev-parse", "HEAD").strip())
    return shas


def list_commits_hook(repo: Path) -> list[str]:
    """The lab host's `list_commits` hook: real git's first-parent line from good to bad."""
    return ["git", "-C", str(repo), "rev-list", "--reverse", "--first-parent", "{good}..{bad}"]


def main(argv: list[str]) -> int:
    command, *rest = argv
    if command == "noise":  # noise STATE SIGMA SEED
        state, sigma, seed = Path(rest[0]), rest[1], rest[2]
        (state / "noise").write_text(f"{float(sigma)} {int(seed)}\n")
        return 0
    if command == "build-patched":  # build-patched COMMIT MBOX STATE REPO: git am on COMMIT, print the result
        commit, mbox, repo = rest[0], Path(rest[1]), Path(rest[3])
        try:
            git(repo, "checkout", "-q", "--detach", commit)
            git(repo, "am", "-q", str(mbox))
            print(git(repo, "rev-parse", "HEAD").strip())
        except subprocess.CalledProcessError as error:
            print(f"lab: git am of {mbox} on {commit} failed: {error.stderr}", file=sys.stderr)
            subprocess.run(["git", "-C", str(repo), "am", "--abort"], capture_output=True)
            return 1
        finally:
            subprocess.run(["git", "-C", str(repo), "checkout", "-q", "main"], capture_output=True)
        return 0
    state = Path(rest[1] if command == "switch" else rest[-1])
    state.mkdir(parents=True, exist_ok=True)
    if command == "switch":
        count = _switches(state) + 1
        _wait_for_peers(state, count)
        if (state / SWITCH_SECONDS).exists():  # the host takes this long to boot a kernel
            import time

            time.sleep(float((state / SWITCH_SECONDS).read_text()))
        (state / "running").write_text(rest[0])
        (state / SWITCHES).write_text(str(count))

        if len(rest) > 2:  # a bisection repository: the commit's own lab-factor
            shown = subprocess.run(["git", "-C", rest[2], "show", f"{rest[0]}:{FACTOR_FILE}"],
                                   capture_output=True, text=True)
            if shown.returncode != 0:
                print(f"lab: no commit {rest[0]} in {rest[2]}: {shown.stderr.strip()}", file=sys.stderr)
                return 1
            (state / "factor").write_text(shown.stdout.strip())
        return 0
    if command == "running":
        print((state / "running").read_text() if (state / "running").exists() else "none")
        return 0
    if command == "stop":
        return 0  # nothing of the lab runs between samples
    print(f"unknown lab command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
