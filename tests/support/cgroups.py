"""Local executors making pids cgroups at once: threads of one process, and several processes.

`run_at_once` runs one command per executor, each executor on a thread of its own (as the lab's
hosts of one daemon or worker do), with a process limit, so each command gets a pids cgroup.
Every command marks that it started and waits (at most `WAIT_SECONDS`) until every command of
the group has started, so all their cgroups exist at one moment; then it prints the cgroup it
runs in, read from its own /proc/self/cgroup. Spawned processes (multiprocessing) call it too.
"""
from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from triagebot.reproduce.executors.local import LocalExecutor
from triagebot.reproduce.executors.protocol import ExecutorError, Limits

WAIT_SECONDS = 60  # a command's wait for the others; the assertions hold whatever it ends with
# marks its start, waits for `count` marks in the folder, prints its pids cgroup (v1 `pids`, or v2)
WAITER = ("import os, sys, time, json\n"
          "folder, count, index = sys.argv[1], int(sys.argv[2]), sys.argv[3]\n"
          "open(os.path.join(folder, 'started-' + index), 'w').close()\n"
          f"deadline = time.monotonic() + {WAIT_SECONDS}\n"
          "while time.monotonic() < deadline and "
          "len([n for n in os.listdir(folder) if n.startswith('started-')]) < count:\n"
          "    time.sleep(0.02)\n"
          "lines = open('/proc/self/cgroup').read().splitlines()\n"
          "v1 = [line.split(':', 2)[2] for line in lines if 'pids' in line.split(':')[1].split(',')]\n"
          "v2 = [line.split(':', 2)[2] for line in lines if line.startswith('0::')]\n"
          "print(json.dumps({'index': index, 'cgroup': (v1 or v2)[0], 'pid': os.getpid()}))")


def run_at_once(scratch_root: str, folder: str, count: int, indices: list[int]) -> list[dict]:
    """Each index's command on its own executor and thread; what each printed, or its error."""
    results: list[dict] = []
    lock = threading.Lock()

    def one(index: int) -> None:
        with LocalExecutor(f"{scratch_root}/host-{index}", name=f"lab-host-{index}") as executor:
            try:
                done = executor.run([sys.executable, "-c", WAITER, folder, str(count), str(index)], timeout=300,
                                    limits=Limits(processes=32))
                outcome = json.loads(done.stdout) if done.ok else {"index": str(index), "error": done.stderr.decode()}
            except ExecutorError as error:
                outcome = {"index": str(index), "error": str(error)}
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=one, args=(index,)) for index in indices]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(results, key=lambda item: int(item["index"]))


def cgroup_path(parent: Path, shown: str) -> Path:
    """Where a cgroup a command showed (its path in its hierarchy) lies in the tree."""
    return parent / Path(shown).name


if __name__ == "__main__":  # run_at_once in a process of its own: python -m tests.support.cgroups ROOT FOLDER N I...
    print(json.dumps(run_at_once(sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(i) for i in sys.argv[4:]])))
