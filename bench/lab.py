"""Benchmark: throughput of N reports over H lab hosts, one at a time against in parallel, on both dispatchers.

    PYTHONPATH=. python3 bench/lab.py [--hosts 1 2 4 8] [--reports-per-host 2] [--dispatcher threads workers]
                                      [--switch-seconds 1] [--budget 6] [--json]

A lab of H hosts on this machine, each with the test lab's hooks (tests/support/lab.py) and its
own state, whose kernel switch takes `--switch-seconds` (a reboot does not load the machine), and
N = H x `--reports-per-host` copies of the lab's sysbench report, each bisected to a slow commit of
its own (`sysbench cpu --threads=2 --time=1`, a fixed second a sample whatever the load). Each
side starts from a store with the reports taken on and planned, and takes 2 x budget samples a
run, so both do the same work:

- one at a time: flow.run_planned, the daemon's order before dispatch, in this process;
- threads (SQLite): the daemon's ThreadDispatcher through flow.assign, one thread and store
  connection per busy host, the loop woken by each run's end as the daemon's is;
- workers (PostgreSQL, a real server started here): the daemon's JobQueueDispatcher through
  flow.assign in this process, and one real `triage worker` process per host running the jobs;
  the one-at-a-time side runs on a PostgreSQL store too.

The figure is the ratio of the wall times (target >= 0.8 x H) with every report decided and
none in error (exit 1 otherwise). The load average is read before and after each side: the
machine is shared. Verdicts are not the point here (real sysbench, no shim):
tests/test_lab_parallel.py checks them.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path

from tests.support.lab import HOOK, report_copies, write_slow
from triagebot.daemon import flow
from triagebot.daemon.dispatch.inprocess import ThreadDispatcher
from triagebot.daemon.dispatch.protocol import Dispatcher
from triagebot.records.states import TriageState
from triagebot.rules.routing import parse_routing
from triagebot.rules.settings import load_settings
from triagebot.store.protocol import Store
from triagebot.store.sqlite import SqliteStore

PROJECT = Path(__file__).resolve().parents[1]
VERDICTS = ("confirmed", "not-reproduced", "inconclusive")
OpenStore = Callable[[], AbstractContextManager[Store]]


def make_lab(root: Path, hosts: int, switch_seconds: float) -> Path:
    rules = root / "rules"
    shutil.copytree(PROJECT / "rules" / "reproducers", rules / "reproducers")
    text = ""
    for number in range(1, hosts + 1):
        state = root / f"state-{number}"
        write_slow(state, switch_seconds)
        text += f"""
[[host]]
name = "bench-{number}"
reach = "local"
cpu_model = "test lab"
threads = 2
sockets = 1
memory_gb = 24
disk = "ssd"
scratch_dir = "{root / f'scratch-{number}'}"
switch_kernel = {json.dumps([*HOOK, "switch", "{commit}", str(state)])}
running_kernel = {json.dumps([*HOOK, "running", str(state)])}
"""
    (rules / "hosts.toml").write_text(text)
    (rules / "routing.toml").write_text('default_channel = "#bench"\n')
    return rules


def context(rules: Path, database: Path, budget: int, deliver: Callable[[], object] = lambda: None
            ) -> flow.DaemonContext:
    settings = dataclasses.replace(load_settings(rules),
                                   routing=parse_routing('default_channel = "#bench"\n', "bench"))
    return flow.DaemonContext(settings=settings, database=database, deliver=deliver, budget=budget)


def plan_into(where: str, open_store: OpenStore, mail: Path, rules: Path, locks: Path, budget: int,
              ids: list[str]) -> None:
    """Ingest the copies into the store `where` (a file or a URL), take them on and plan them."""
    subprocess.run([sys.executable, "-m", "triagebot.cli", "ingest", "--db", where, "--quiet", str(mail)],
                   check=True, cwd=PROJECT, env=os.environ | {"HOME": str(locks.parent)}, stdout=subprocess.DEVNULL)
    lab = context(rules, locks, budget)
    with open_store() as store:
        flow.admit(store, lab, admit_days=14, now=datetime(2099, 4, 16, tzinfo=UTC))
        flow.plan_new(store, lab)
        planned = sorted(row.message_id for row in store.triage_in("planned"))
    assert planned == sorted(ids), f"every report planned: {planned}"


def outcome(open_store: OpenStore, ids: list[str]) -> dict:
    """Reports decided and in error (an error would make the times incomparable), and where a
    sample's time goes: its median wall time (kernel switch, hooks, scratch, benchmark) and the
    benchmark command's own, over every sample of every run."""
    walls, commands = [], []
    with open_store() as store:
        counts = store.triage_counts()
        for message_id in ids:
            for sample in (store.latest_run(message_id) or {}).get("samples", []):
                walls.append((datetime.fromisoformat(sample["finished_at"])
                              - datetime.fromisoformat(sample["started_at"])).total_seconds())
                commands.append(sample["seconds"])
    return {"decided": sum(counts.get(state, 0) for state in VERDICTS), "errors": counts.get("error", 0),
            "undecided": sum(count for state, count in counts.items() if state not in VERDICTS and state != "error"),
            "sample_seconds": round(statistics.median(walls), 2) if walls else None,
            "benchmark_seconds": round(statistics.median(commands), 2) if commands else None}


def one_at_a_time(open_store: OpenStore, lab: flow.DaemonContext) -> float:
    started = time.monotonic()
    with open_store() as store:
        flow.run_planned(store, lab)
    return time.monotonic() - started


def until_decided(store: Store, lab: flow.DaemonContext, dispatcher: Dispatcher) -> None:
    """The daemon's loop as far as runs go: give free hosts their reports, wait for a run to end
    (the dispatcher wakes it), again, until no report waits or runs."""
    while True:
        flow.assign(store, lab, dispatcher)
        dispatcher.finished()
        if not store.triage_in(TriageState.PLANNED, TriageState.RUNNING):
            return
        dispatcher.wait(1.0)


def threads(database: Path, lab: flow.DaemonContext) -> float:
    started = time.monotonic()
    dispatcher = ThreadDispatcher(lambda: SqliteStore(database),
                                  lambda own, job: flow.run_job(own, worker_lab, job))
    worker_lab = dataclasses.replace(lab, deliver=dispatcher.wake)
    with SqliteStore(database) as store:
        until_decided(store, lab, dispatcher)
    return time.monotonic() - started


@contextmanager
def workers(url: str, rules: Path, hosts: int, budget: int, root: Path, env: dict[str, str]) -> Iterator[None]:
    """One `triage worker` process per host, started and ready before the clock starts."""
    logs = [root / f"worker-{number}.log" for number in range(1, hosts + 1)]
    processes = []
    try:
        for number, log in enumerate(logs, start=1):
            with open(log, "wb") as output:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "triagebot.cli", "worker", "--db", url, "--rules", str(rules),
                     "--host", f"bench-{number}", "--budget", str(budget), "--log-format", "json"],
                    cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 300
        while not all('"worker.started"' in log.read_text() for log in logs):
            if time.monotonic() > deadline or any(process.poll() is not None for process in processes):
                raise RuntimeError("a worker did not start: " + " ".join(log.read_text()[-500:] for log in logs))
            time.sleep(0.2)
        yield
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=120)


def job_queue(url: str, lab: flow.DaemonContext) -> float:
    from triagebot.daemon.dispatch.jobqueue import JobQueueDispatcher
    from triagebot.store.postgres import PostgresStore

    dispatcher = JobQueueDispatcher(url)
    try:
        started = time.monotonic()
        with PostgresStore(url) as store:
            until_decided(store, lab, dispatcher)
        return time.monotonic() - started
    finally:
        dispatcher.close()


def load() -> float:
    return round(os.getloadavg()[0], 1)


def measure(hosts: int, reports: int, dispatcher: str, args: argparse.Namespace, server=None) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-lab-") as temporary:
        root = Path(temporary)
        rules = make_lab(root, hosts, args.switch_seconds)
        ids = report_copies(root / "mail", reports)
        env = os.environ | {"HOME": str(root), "PYTHONPATH": str(PROJECT)}
        figures: dict = {}
        for side in ("one_at_a_time", "parallel"):
            locks = root / f"{side}.db"  # SQLite: the store; PostgreSQL: where host locks go
            if server is None:
                where: str = str(locks)
                open_store: OpenStore = lambda where=where: SqliteStore(Path(where))  # noqa: E731
            else:
                from triagebot.store.postgres import PostgresStore

                where = server.url(server.new_schema())
                open_store = lambda where=where: PostgresStore(where)  # noqa: E731
            plan_into(where, open_store, root / "mail", rules, locks, args.budget, ids)
            lab = context(rules, locks, args.budget)
            before = load()
            cpu = os.times()
            if side == "one_at_a_time":
                seconds = one_at_a_time(open_store, lab)
            elif server is None:
                seconds = threads(locks, lab)
            else:
                with workers(where, rules, hosts, args.budget, root, env):
                    before = load()
                    seconds = job_queue(where, lab)
            spent = os.times()
            figures[side] = {"seconds": round(seconds, 1), **outcome(open_store, ids), "load": [before, load()],
                             # this process's own CPU (the loop, the dispatcher, the runs' threads; on
                             # PostgreSQL the loop only), and its children's (hooks, benchmarks)
                             "cpu_seconds": round(spent.user + spent.system - cpu.user - cpu.system, 1),
                             "children_cpu_seconds": round(spent.children_user + spent.children_system
                                                           - cpu.children_user - cpu.children_system, 1)}
    speedup = figures["one_at_a_time"]["seconds"] / figures["parallel"]["seconds"]
    return {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"), "hosts": hosts, "reports": reports,
            "dispatcher": "threads (SQLite)" if server is None else "workers (PostgreSQL)",
            "switch_seconds": args.switch_seconds, "samples_a_run": 2 * args.budget, **figures,
            "speedup": round(speedup, 2), "target": round(0.8 * hosts, 2),
            "errors": figures["one_at_a_time"]["errors"] + figures["parallel"]["errors"]}


def row(result: dict) -> str:
    """The figure as a row of bench/README.md's table."""
    one, parallel = result["one_at_a_time"], result["parallel"]
    met = "" if result["speedup"] >= result["target"] else " (under target)"
    return (f"| {result['date']} | {result['hosts']} | {result['dispatcher']} | {result['reports']} | "
            f"{one['seconds']:.1f} s | {parallel['seconds']:.1f} s | **{result['speedup']:.2f}×**{met} "
            f"(≥ {result['target']:.1f}) | {result['errors']} | {one['load'][0]}–{one['load'][1]} / "
            f"{parallel['load'][0]}–{parallel['load'][1]} | {one['sample_seconds']} / {one['benchmark_seconds']} → "
            f"{parallel['sample_seconds']} / {parallel['benchmark_seconds']} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[3])
    parser.add_argument("--reports-per-host", type=int, default=2, help="reports = hosts x this (default 2)")
    parser.add_argument("--dispatcher", nargs="+", choices=("threads", "workers"), default=["threads"])
    parser.add_argument("--switch-seconds", type=float, default=1.0)
    parser.add_argument("--budget", type=int, default=6, help="runs a side (6: one look, 12 samples a run)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not shutil.which("sysbench"):
        print("bench/lab.py: sysbench is not installed (apt-get install sysbench)", file=sys.stderr)
        return 1
    server = None
    if "workers" in args.dispatcher:
        from tests.support.postgres import PostgresServer, postgres_bin

        bin_dir = postgres_bin()
        if bin_dir is None:
            print("bench/lab.py: PostgreSQL is not installed (apt-get install postgresql)", file=sys.stderr)
            return 1
        server = PostgresServer(bin_dir)
        server.start()
    failed = False
    try:
        for dispatcher in args.dispatcher:
            for hosts in args.hosts:
                result = measure(hosts, hosts * args.reports_per_host, dispatcher, args,
                                 server if dispatcher == "workers" else None)
                print(json.dumps(result) if args.json else row(result), flush=True)
                failed |= result["errors"] > 0 or any(
                    result[side]["decided"] != result["reports"] for side in ("one_at_a_time", "parallel"))
    finally:
        if server is not None:
            server.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
