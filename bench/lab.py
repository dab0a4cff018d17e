"""Benchmark: wall time of N reports over H lab hosts, one at a time against in parallel.

    PYTHONPATH=. python3 bench/lab.py [--reports 6] [--hosts 3] [--switch-seconds 1] [--budget 6] [--json]

A lab of H hosts on this machine, each with the test lab's hooks (tests/support/lab.py) and its
own state, whose kernel switch takes `--switch-seconds` (a reboot does not load the machine), and
N copies of the lab's sysbench report (`sysbench cpu --threads=2 --time=1`, a fixed second a
sample whatever the load). Both sides start from the same store, the reports taken on and
planned: the baseline runs them one at a time (flow.run_planned, the daemon's order before
dispatch), the subject through the daemon's ThreadDispatcher (flow.assign, one thread per busy
host). Each run takes 2 x budget samples, so both sides do the same work; the figure is the
ratio of wall times (target >= 0.8 x H for H = 3). Verdicts are not the point here (real
sysbench, no shim): tests/test_lab_parallel.py checks them.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from tests.support.lab import HOOK, report_copies, write_slow
from triagebot.daemon import flow
from triagebot.daemon.dispatch.inprocess import ThreadDispatcher
from triagebot.rules.routing import parse_routing
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore

PROJECT = Path(__file__).resolve().parents[1]


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


def planned_store(root: Path, rules: Path, reports: int, budget: int) -> Path:
    """A store with `reports` reports taken on and planned."""
    database = root / "planned.db"
    ids = report_copies(root / "mail", reports)
    subprocess.run([sys.executable, "-m", "triagebot.cli", "ingest", "--db", str(database), "--quiet",
                    str(root / "mail")], check=True, cwd=PROJECT)
    lab = context(rules, database, budget)
    with SqliteStore(database) as store:
        flow.admit(store, lab, admit_days=14, now=datetime(2099, 4, 16, tzinfo=UTC))
        flow.plan_new(store, lab)
        assert [row.message_id for row in store.triage_in("planned")] == ids, "every report planned"
    return database


def context(rules: Path, database: Path, budget: int) -> flow.DaemonContext:
    settings = dataclasses.replace(load_settings(rules),
                                   routing=parse_routing('default_channel = "#bench"\n', "bench"))
    return flow.DaemonContext(settings=settings, database=database, deliver=lambda: None, budget=budget)


def one_at_a_time(database: Path, lab: flow.DaemonContext) -> float:
    started = time.monotonic()
    with SqliteStore(database) as store:
        flow.run_planned(store, lab)
    return time.monotonic() - started


def in_parallel(database: Path, lab: flow.DaemonContext) -> float:
    started = time.monotonic()
    dispatcher = ThreadDispatcher(lambda: SqliteStore(database), lambda own, job: flow.run_job(own, lab, job))
    with SqliteStore(database) as store:
        while True:
            flow.assign(store, lab, dispatcher)
            if not dispatcher.running():
                break
            dispatcher.wait(1.0)
    return time.monotonic() - started


VERDICTS = ("confirmed", "not-reproduced", "inconclusive")


def decided(database: Path) -> int:
    """Reports that ended with a verdict (an error would make the times incomparable)."""
    with SqliteStore(database) as store:
        return sum(count for state, count in store.triage_counts().items() if state in VERDICTS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=6)
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--switch-seconds", type=float, default=1.0)
    parser.add_argument("--budget", type=int, default=6, help="runs a side (6: one look, 12 samples a run)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not shutil.which("sysbench"):
        print("bench/lab.py: sysbench is not installed (apt-get install sysbench)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-lab-") as temporary:
        root = Path(temporary)
        rules = make_lab(root, args.hosts, args.switch_seconds)
        planned = planned_store(root, rules, args.reports, args.budget)
        figures = {}
        for name, run in (("one_at_a_time", one_at_a_time), ("parallel", in_parallel)):
            database = root / f"{name}.db"
            shutil.copy(planned, database)
            seconds = run(database, context(rules, database, args.budget))
            figures[name] = {"seconds": round(seconds, 1), "decided": decided(database)}
    ratio = figures["one_at_a_time"]["seconds"] / figures["parallel"]["seconds"]
    result = {"reports": args.reports, "hosts": args.hosts, "switch_seconds": args.switch_seconds,
              "samples_a_run": 2 * args.budget, **figures, "speedup": round(ratio, 2),
              "target": round(0.8 * args.hosts, 2)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{args.reports} reports over {args.hosts} hosts ({2 * args.budget} samples a run, "
              f"{args.switch_seconds:g} s a kernel switch)")
        print(f"  one at a time: {figures['one_at_a_time']['seconds']:7.1f} s, "
              f"{figures['one_at_a_time']['decided']} decided")
        print(f"  parallel:      {figures['parallel']['seconds']:7.1f} s, {figures['parallel']['decided']} decided")
        print(f"  speedup:       {ratio:.2f}x (target >= {0.8 * args.hosts:.2f}x)")
    return 0 if figures["one_at_a_time"]["decided"] == figures["parallel"]["decided"] == args.reports else 1


if __name__ == "__main__":
    sys.exit(main())
