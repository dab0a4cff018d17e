"""A test lab on this machine: kernel-switch hooks that fake two kernels with a real load.

`python3 -m tests.support.lab switch COMMIT STATE_DIR` records COMMIT as the "running kernel";
when COMMIT is the lab's slow commit (the one named in STATE_DIR/slow) it also starts a real
competing load (`stress-ng --cpu N`) in a session of its own, so benchmarks on that "kernel"
really are slower; switching to any other commit stops the load.
`python3 -m tests.support.lab running STATE_DIR` prints the commit last switched to.
The load runs in a session of its own, so with the scheduler's autogroups it takes about the
share of the CPUs a second group gets: a benchmark using every core loses about half.
`python3 -m tests.support.lab stop STATE_DIR` stops any load (test clean-up).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


SLOW_COMMIT = "c0ffee1234ab"  # the lab's regressing commit: its "kernel" runs under a load
HOOK = (sys.executable, str(Path(__file__).resolve()))


def write_lab_rules(root: Path, project: Path) -> tuple[Path, Path]:
    """A rules directory (the project's templates, one lab host) and the lab's state directory."""
    import json
    import shutil

    rules, state = root / "rules", root / "lab-state"
    shutil.copytree(project / "rules" / "reproducers", rules / "reproducers")
    state.mkdir(parents=True)
    (state / "slow").write_text(SLOW_COMMIT)
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
switch_kernel = {json.dumps([*HOOK, "switch", "{commit}", str(state)])}
running_kernel = {json.dumps([*HOOK, "running", str(state)])}
""")
    return rules, state


def _stop(state: Path) -> None:
    pid_file = state / "load.pid"
    if pid_file.exists():
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError, PermissionError):
            pass
        pid_file.unlink()


def main(argv: list[str]) -> int:
    command, *rest = argv
    state = Path(rest[-1])
    state.mkdir(parents=True, exist_ok=True)
    if command == "switch":
        commit = rest[0]
        _stop(state)
        slow = (state / "slow").read_text().strip() if (state / "slow").exists() else None
        if commit == slow:
            load = subprocess.Popen(["stress-ng", "--cpu", str(os.cpu_count() or 2), "--timeout", "900s", "--quiet"],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
            (state / "load.pid").write_text(str(load.pid))
            time.sleep(1.0)  # let its workers start, as a booted kernel is settled before samples
        (state / "running").write_text(commit)
        return 0
    if command == "running":
        print((state / "running").read_text() if (state / "running").exists() else "none")
        return 0
    if command == "stop":
        _stop(state)
        return 0
    print(f"unknown lab command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
